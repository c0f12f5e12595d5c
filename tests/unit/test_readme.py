"""The README's configuration table is generated from kafkaline.config; keep them equal."""

from __future__ import annotations

import re
from pathlib import Path

from kafkaline.config import config_reference_markdown

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_config_table_matches_the_code() -> None:
    text = README.read_text(encoding="utf-8")
    start = text.index("<!-- config-table:start -->\n") + len("<!-- config-table:start -->\n")
    end = text.index("<!-- config-table:end -->")
    assert text[start:end].strip() == config_reference_markdown().strip(), (
        "README config table is stale: paste config_reference_markdown() between the markers"
    )


def test_the_errors_the_readme_examples_catch_are_importable_from_kafkaline() -> None:
    import kafkaline

    text = README.read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    caught = {name for block in blocks for name in re.findall(r"\b([A-Z]\w*Error)\b", block)}
    assert {"ProducerFencedError", "InvalidProducerEpochError"} <= caught
    missing = sorted(name for name in caught if not hasattr(kafkaline, name))
    assert not missing, f"README examples use errors kafkaline does not export: {missing}"
    assert set(caught) <= set(kafkaline.__all__)
