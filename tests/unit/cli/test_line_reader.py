"""The line reader: lines to records as Java's LineMessageReader makes them, on raw bytes."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafkaline.cli.errors import InputLineError
from kafkaline.cli.exit_status import ExitStatus
from kafkaline.cli.line_reader import LineParser, LineRecord, ReaderOptions
from kafkaline.errors import ConfigError


def parse(line: bytes, line_number: int = 1, **options: Any) -> LineRecord:
    return LineParser(ReaderOptions(**options)).parse(line, line_number)


# --------------------------------------------------------------------------- values and keys


def test_by_default_the_whole_line_is_the_value_and_there_is_no_key() -> None:
    assert parse(b"k\tv:w,x") == LineRecord(key=None, value=b"k\tv:w,x", headers=[])


def test_an_empty_line_is_an_empty_value_not_a_null_one() -> None:
    assert parse(b"") == LineRecord(key=None, value=b"", headers=[])


def test_parse_key_splits_at_the_first_tab_by_default() -> None:
    assert parse(b"user-1\thello\tworld", parse_key=True) == LineRecord(
        key=b"user-1", value=b"hello\tworld", headers=[]
    )


def test_a_multi_character_key_separator() -> None:
    record = parse(b"k::v::w", parse_key=True, key_separator="::")
    assert (record.key, record.value) == (b"k", b"v::w")


def test_empty_key_and_empty_value_are_empty_bytes() -> None:
    record = parse(b":", parse_key=True, key_separator=":")
    assert (record.key, record.value) == (b"", b"")


def test_a_line_without_the_key_separator_is_an_error_naming_the_line_number() -> None:
    with pytest.raises(InputLineError, match=r"^line 7: no key separator '\\t' found in 'abc'$"):
        parse(b"abc", line_number=7, parse_key=True)
    assert InputLineError.exit_status is ExitStatus.BAD_INPUT


def test_a_long_bad_line_is_shortened_in_the_error() -> None:
    with pytest.raises(InputLineError) as caught:
        parse(b"x" * 1000, parse_key=True)
    assert len(str(caught.value)) < 150
    assert str(caught.value).endswith("...'")


def test_ignore_error_sends_a_line_without_separator_as_a_value_without_key() -> None:
    record = parse(b"abc", parse_key=True, ignore_error=True)
    assert record == LineRecord(key=None, value=b"abc", headers=[])


# --------------------------------------------------------------------------- null marker


def test_null_marker_makes_key_and_value_null() -> None:
    options: dict[str, Any] = {"parse_key": True, "key_separator": ":", "null_marker": "<null>"}
    assert parse(b"<null>:v", **options) == LineRecord(key=None, value=b"v", headers=[])
    assert parse(b"k:<null>", **options) == LineRecord(key=b"k", value=None, headers=[])
    # Only a whole field equal to the marker is null.
    assert parse(b"k:<null>x", **options).value == b"<null>x"


def test_null_marker_applies_to_the_value_without_parse_key() -> None:
    assert parse(b"NULL", null_marker="NULL").value is None


# --------------------------------------------------------------------------- headers


def test_headers_come_first_then_key_then_value() -> None:
    record = parse(b"h1:v1,h2:v2\tkey\tvalue", parse_headers=True, parse_key=True)
    assert record == LineRecord(key=b"key", value=b"value", headers=[("h1", b"v1"), ("h2", b"v2")])


def test_the_key_separator_is_searched_after_the_headers() -> None:
    # ':' is both the header key separator and the key separator's first char elsewhere: the
    # key is looked for only after the headers delimiter.
    record = parse(
        b"a=1|k:v", parse_headers=True, headers_delimiter="|", headers_key_separator="=",
        parse_key=True, key_separator=":",
    )  # fmt: skip
    assert (record.headers, record.key, record.value) == ([("a", b"1")], b"k", b"v")


def test_header_values_may_be_empty_or_null_and_keep_later_separators() -> None:
    record = parse(b"a:,b:NULL,c:x:y\tv", parse_headers=True, null_marker="NULL")
    assert record.headers == [("a", b""), ("b", None), ("c", b"x:y")]


def test_a_headers_field_equal_to_the_null_marker_means_no_headers() -> None:
    assert parse(b"NULL\tv", parse_headers=True, null_marker="NULL").headers == []


def test_a_header_key_equal_to_the_null_marker_is_an_error() -> None:
    with pytest.raises(InputLineError, match="line 3: a header key may not be the null marker"):
        parse(b"NULL:x\tv", line_number=3, parse_headers=True, null_marker="NULL")


def test_a_header_without_key_separator_is_an_error_unless_ignore_error() -> None:
    with pytest.raises(InputLineError, match=r"line 2: no header key separator ':' .* 'b'"):
        parse(b"a:1,b\tv", line_number=2, parse_headers=True)
    record = parse(b"a:1,b\tv", parse_headers=True, ignore_error=True)
    assert record.headers == [("a", b"1"), ("b", None)]


def test_a_line_without_the_headers_delimiter_is_an_error_unless_ignore_error() -> None:
    with pytest.raises(InputLineError, match="line 4: no headers delimiter"):
        parse(b"just a value", line_number=4, parse_headers=True)
    record = parse(b"just a value", parse_headers=True, ignore_error=True)
    assert record == LineRecord(key=None, value=b"just a value", headers=[])


def test_trailing_header_separators_are_dropped_as_java_split_drops_them() -> None:
    assert parse(b"a:1,,\tv", parse_headers=True).headers == [("a", b"1")]


def test_repeated_header_keys_are_kept_in_order() -> None:
    assert parse(b"a:1,a:2\tv", parse_headers=True).headers == [("a", b"1"), ("a", b"2")]


def test_a_header_key_must_be_utf8() -> None:
    with pytest.raises(InputLineError, match="not UTF-8"):
        parse(b"\xff:1\tv", parse_headers=True)


# --------------------------------------------------------------------------- bytes


def test_bytes_that_are_not_utf8_pass_through_unchanged() -> None:
    record = parse(b"\xff\xfe\t\x00\x80\xc3", parse_key=True)
    assert (record.key, record.value) == (b"\xff\xfe", b"\x00\x80\xc3")


def test_non_ascii_separators_are_matched_as_utf8() -> None:
    record = parse("clé→valeur→reste".encode(), parse_key=True, key_separator="→")
    assert (record.key, record.value) == ("clé".encode(), "valeur→reste".encode())


_TEXT = st.text(st.characters(blacklist_characters="\t,:\n\r", blacklist_categories=["Cs"]))


@given(
    key=_TEXT,
    value=st.text(st.characters(blacklist_characters="\n\r", blacklist_categories=["Cs"])),
    headers=st.lists(st.tuples(_TEXT, _TEXT), min_size=1, max_size=4),
)
def test_a_formatted_line_parses_back_to_its_parts(
    key: str, value: str, headers: list[tuple[str, str]]
) -> None:
    line = ",".join(f"{k}:{v}" for k, v in headers) + "\t" + key + "\t" + value
    record = parse(line.encode(), parse_headers=True, parse_key=True)
    assert record.key == key.encode()
    assert record.value == value.encode()
    expected = [(k, v.encode()) for k, v in headers]
    # Java's split drops trailing empty pieces; a header is never empty here (it has ':').
    assert record.headers == expected


# --------------------------------------------------------------------------- options


def test_properties_are_read_with_java_names_and_booleans_ignore_case() -> None:
    options = ReaderOptions.from_properties(
        {
            "parse.key": "TRUE",
            "key.separator": "|",
            "parse.headers": " true ",
            "headers.delimiter": "#",
            "headers.separator": ";",
            "headers.key.separator": "=",
            "null.marker": "~",
            "ignore.error": "yes",  # anything but "true" is false, as in Java
        }
    )
    assert options == ReaderOptions(
        parse_key=True,
        key_separator="|",
        parse_headers=True,
        headers_delimiter="#",
        headers_separator=";",
        headers_key_separator="=",
        null_marker="~",
        ignore_error=False,
    )


def test_an_unknown_property_is_refused_with_a_suggestion() -> None:
    with pytest.raises(ConfigError, match=r"'parse\.keys' is not a reader property; did you mean"):
        ReaderOptions.from_properties({"parse.keys": "true"})


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"headers_delimiter": ","}, "headers.delimiter and headers.separator may not be equal"),
        ({"headers_delimiter": ":"}, "headers.delimiter and headers.key.separator"),
        ({"headers_separator": ":"}, "headers.separator and headers.key.separator"),
        ({"null_marker": "\t"}, "null.marker and key.separator may not be equal"),
        ({"null_marker": ","}, "null.marker and headers.separator"),
        ({"null_marker": ":"}, "null.marker and headers.key.separator"),
        ({"key_separator": ""}, "key.separator must not be empty"),
        ({"null_marker": ""}, "null.marker must not be empty"),
    ],
)
def test_ambiguous_or_empty_separators_are_refused(options: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        ReaderOptions(**options)  # type: ignore[arg-type]


def test_key_separator_may_equal_the_headers_delimiter_as_in_java() -> None:
    record = parse(b"h:1\tk\tv", parse_headers=True, parse_key=True)
    assert (record.headers, record.key, record.value) == ([("h", b"1")], b"k", b"v")
