"""The record package's boundaries and its docstring examples."""

from __future__ import annotations

import ast
import doctest
import importlib
import pkgutil
from pathlib import Path

import pytest

import kafkaline.record

MODULES = sorted(
    f"kafkaline.record.{info.name}" for info in pkgutil.iter_modules(kafkaline.record.__path__)
)


@pytest.mark.parametrize("module_name", MODULES)
def test_imports_nothing_from_kafkaline_but_errors(module_name: str) -> None:
    module = importlib.import_module(module_name)
    assert module.__file__ is not None
    tree = ast.parse(Path(module.__file__).read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            name = node.module
            if name == "kafkaline.core_choice":
                continue  # the leaf that loads the compiled core (it imports nothing of ours)
        elif isinstance(node, ast.Import):
            name = node.names[0].name
        else:
            continue
        if name.startswith("kafkaline"):
            assert name == "kafkaline.errors" or name.startswith("kafkaline.record"), name


@pytest.mark.parametrize("module_name", MODULES)
def test_docstring_examples(module_name: str) -> None:
    results = doctest.testmod(importlib.import_module(module_name))
    assert results.failed == 0


def test_public_names_are_exported() -> None:
    for name in kafkaline.record.__all__:
        assert getattr(kafkaline.record, name) is not None
