"""The README's configuration table is generated from kafkaline.config; keep them equal."""

from __future__ import annotations

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
