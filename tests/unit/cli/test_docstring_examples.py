"""The examples in the command line's docstrings run and show what they claim."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "kafkaline.cli.console_consumer",
    "kafkaline.cli.delivery_report",
    "kafkaline.cli.error_report",
    "kafkaline.cli.input_lines",
    "kafkaline.cli.line_reader",
    "kafkaline.cli.perf_payloads",
    "kafkaline.cli.perf_stats",
    "kafkaline.cli.producer_options",
    "kafkaline.cli.progress",
    "kafkaline.cli.properties",
    "kafkaline.cli.topic_admin",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    results = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert results.attempted > 0
    assert results.failed == 0
