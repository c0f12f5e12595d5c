"""The examples in the public docstrings run and show what they claim."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "kafkaline.config",
    "kafkaline.config.producer_config",
    "kafkaline.config.properties",
    "kafkaline.config.values",
    "kafkaline.producer.builtin_partitioner",
    "kafkaline.producer.interceptors",
    "kafkaline.producer.murmur2",
    "kafkaline.producer.partitioner",
    "kafkaline.producer.record",
    "kafkaline.producer.record_metadata",
    "kafkaline.producer.serializers",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    results = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert results.attempted > 0
    assert results.failed == 0
