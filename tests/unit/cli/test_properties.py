"""Java properties files and KEY=VALUE arguments, parsed as java.util.Properties.load does."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkaline.cli.properties import (
    load_properties_file,
    parse_key_value_arguments,
    parse_properties,
)
from kafkaline.errors import ConfigError


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a=1", {"a": "1"}),
        ("a:1", {"a": "1"}),
        ("a 1", {"a": "1"}),
        ("a\t1", {"a": "1"}),
        ("  a  =  1", {"a": "1"}),
        ("a = = 1", {"a": "= 1"}),  # only the first separator is skipped
        ("a=1 ", {"a": "1 "}),  # trailing blanks are part of the value
        ("a=", {"a": ""}),
        ("a", {"a": ""}),
        ("a=b=c:d", {"a": "b=c:d"}),
        ("a.b.c=x y z", {"a.b.c": "x y z"}),
    ],
)
def test_key_value_separators(text: str, expected: dict[str, str]) -> None:
    assert parse_properties(text) == expected


def test_comments_and_blank_lines_are_skipped() -> None:
    text = "# comment\n! also a comment\n\n   \n  # indented comment\na=1\n"
    assert parse_properties(text) == {"a": "1"}


def test_a_comment_line_ending_in_a_backslash_does_not_continue() -> None:
    assert parse_properties("# comment \\\na=1") == {"a": "1"}


def test_continuation_lines_join_and_lose_their_leading_blanks() -> None:
    text = "servers = a:1,\\\n          b:2,\\\n\tc:3\nnext=x"
    assert parse_properties(text) == {"servers": "a:1,b:2,c:3", "next": "x"}


def test_an_even_number_of_trailing_backslashes_is_an_escaped_backslash() -> None:
    assert parse_properties("path=C:\\\\dir\\\\\nnext=x") == {"path": "C:\\dir\\", "next": "x"}


def test_a_continued_line_may_look_like_a_comment() -> None:
    assert parse_properties("a=1\\\n#2") == {"a": "1#2"}


def test_escapes() -> None:
    text = "tab=a\\tb\nnl=a\\nb\nuni=\\u00e9t\\u00E9\nother=\\q\\=\\:\\ \\\\"
    assert parse_properties(text) == {
        "tab": "a\tb",
        "nl": "a\nb",
        "uni": "été",
        "other": "q=: \\",
    }


def test_escaped_separators_belong_to_the_key() -> None:
    assert parse_properties("a\\=b\\:c\\ d=v") == {"a=b:c d": "v"}


def test_line_endings_crlf_cr_and_lf() -> None:
    assert parse_properties("a=1\r\nb=2\rc=3\n") == {"a": "1", "b": "2", "c": "3"}


def test_the_last_of_a_repeated_key_wins() -> None:
    assert parse_properties("a=1\na=2") == {"a": "2"}


def test_a_malformed_unicode_escape_names_the_source_and_line() -> None:
    with pytest.raises(ConfigError, match=r"producer.properties, line 2: malformed \\uXXXX"):
        parse_properties("a=1\nb=\\u12x4", source="producer.properties")


def test_load_file_reads_utf8(tmp_path: Path) -> None:
    path = tmp_path / "producer.properties"
    path.write_text("# kafkaline\nbootstrap.servers=h:9092\nclient.id=café\n", encoding="utf-8")
    assert load_properties_file(path) == {"bootstrap.servers": "h:9092", "client.id": "café"}


def test_load_file_that_is_missing_raises_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        load_properties_file(tmp_path / "missing.properties")


def test_load_file_that_is_not_utf8_is_a_config_error_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "latin1.properties"
    path.write_bytes(b"client.id=caf\xe9\n")
    with pytest.raises(ConfigError, match=r"latin1\.properties: not UTF-8"):
        load_properties_file(path)


def test_key_value_arguments() -> None:
    pairs = parse_key_value_arguments([" linger.ms=5", "x=a=b", "empty="], "--producer-property")
    assert pairs == {"linger.ms": "5", "x": "a=b", "empty": ""}


@pytest.mark.parametrize("argument", ["linger.ms", "=5", " =5"])
def test_a_key_value_argument_without_key_or_equals_is_refused(argument: str) -> None:
    with pytest.raises(ConfigError, match=r"^--property expects KEY=VALUE, got"):
        parse_key_value_arguments([argument], "--property")
