"""The examples in the net layer's docstrings run and show what they claim."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["kafkaline.net.cluster", "kafkaline.net.settings"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    results = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert results.attempted > 0
    assert results.failed == 0
