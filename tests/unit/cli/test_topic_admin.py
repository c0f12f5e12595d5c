"""The pure parts of topic administration: names and bootstrap server lists."""

from __future__ import annotations

import pytest

from kafkaline.cli.errors import UsageError
from kafkaline.cli.topic_admin import parse_bootstrap_servers, validate_topic_name


@pytest.mark.parametrize("name", ["events", "a.b_c-D9", "x" * 249])
def test_legal_topic_names(name: str) -> None:
    validate_topic_name(name)


@pytest.mark.parametrize("name", ["", ".", "..", "x" * 250, "a b", "é", "a/b"])
def test_illegal_topic_names(name: str) -> None:
    with pytest.raises(UsageError, match="not a legal topic name"):
        validate_topic_name(name)


def test_bootstrap_servers() -> None:
    assert parse_bootstrap_servers("a:1,b:2") == [("a", 1), ("b", 2)]
    assert parse_bootstrap_servers("[::1]:9092") == [("::1", 9092)]


@pytest.mark.parametrize("text", ["a", "a:", ":1", "a:x", "a:0", "a:65536", "a:1,"])
def test_bad_bootstrap_servers(text: str) -> None:
    with pytest.raises(UsageError, match="not HOST:PORT"):
        parse_bootstrap_servers(text)
