"""The perf test's payloads."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from kafkaline.cli.errors import UsageError
from kafkaline.cli.perf_payloads import (
    load_payload_file,
    parse_delimiter,
    random_payload,
    split_payloads,
)


def test_random_payload_is_uppercase_letters_of_the_size_and_repeatable() -> None:
    payload = random_payload(1000, random.Random(0))
    assert len(payload) == 1000
    assert payload.isalpha() and payload.isupper()
    assert payload == random_payload(1000, random.Random(0))
    assert random_payload(0, random.Random(0)) == b""


@pytest.mark.parametrize(
    ("typed", "delimiter"), [("\\n", b"\n"), ("\\t", b"\t"), ("\\r\\n", b"\r\n"), ("||", b"||")]
)
def test_delimiter_escapes(typed: str, delimiter: bytes) -> None:
    assert parse_delimiter(typed) == delimiter


def test_an_empty_delimiter_is_refused() -> None:
    with pytest.raises(UsageError):
        parse_delimiter("")


def test_split_keeps_inner_empty_payloads_and_drops_trailing_ones() -> None:
    assert split_payloads(b"a||b||||c||||", b"||", "f") == [b"a", b"b", b"", b"c"]


def test_a_file_without_payloads_is_a_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "empty.txt"
    path.write_bytes(b"\n\n")
    with pytest.raises(UsageError, match=r"empty\.txt contains no payloads"):
        load_payload_file(str(path), b"\n")


def test_payload_file_bytes_are_kept_exactly(tmp_path: Path) -> None:
    path = tmp_path / "payloads.bin"
    path.write_bytes(b"\xff\x00\nzwei\n")
    assert load_payload_file(str(path), b"\n") == [b"\xff\x00", b"zwei"]
