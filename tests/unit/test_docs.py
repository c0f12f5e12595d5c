"""The documentation stays true to the code: the producer guide's configuration table is
generated from kafkaline.config, its examples catch errors kafkaline exports, and the README
links to every guide in docs/, and every relative link there leads to a file that exists."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kafkaline.config import config_reference_markdown

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
PRODUCER_GUIDE = ROOT / "docs" / "producer.md"
GUIDES = ("producer", "cli", "spark", "testing", "reliability", "performance", "architecture")


def test_the_config_table_matches_the_code() -> None:
    text = PRODUCER_GUIDE.read_text(encoding="utf-8")
    start = text.index("<!-- config-table:start -->\n") + len("<!-- config-table:start -->\n")
    end = text.index("<!-- config-table:end -->")
    assert text[start:end].strip() == config_reference_markdown().strip(), (
        "docs/producer.md config table is stale: paste config_reference_markdown() between "
        "the markers"
    )


def test_the_errors_the_guide_examples_catch_are_importable_from_kafkaline() -> None:
    import kafkaline

    text = PRODUCER_GUIDE.read_text(encoding="utf-8") + README.read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    caught = {name for block in blocks for name in re.findall(r"\b([A-Z]\w*Error)\b", block)}
    assert {"ProducerFencedError", "InvalidProducerEpochError"} <= caught
    missing = sorted(name for name in caught if not hasattr(kafkaline, name))
    assert not missing, f"the examples use errors kafkaline does not export: {missing}"
    assert set(caught) <= set(kafkaline.__all__)


@pytest.mark.parametrize("guide", GUIDES)
def test_the_readme_links_to_each_guide(guide: str) -> None:
    assert f"](docs/{guide}.md)" in README.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "page", [README, *sorted((ROOT / "docs").glob("*.md"))], ids=lambda page: page.name
)
def test_relative_links_lead_to_files_that_exist(page: Path) -> None:
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text(encoding="utf-8"))
    local = [
        target for target in targets if "://" not in target and not target.startswith("mailto:")
    ]
    broken = [target for target in local if not (page.parent / target).exists()]
    assert not broken, f"{page.name} links to missing files: {broken}"
