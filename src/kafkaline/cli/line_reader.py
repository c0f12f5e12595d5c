"""Lines of text to records, as the Java console producer's ``LineMessageReader`` does it.

A line is ``[HEADERS<headers.delimiter>][KEY<key.separator>]VALUE``; headers are
``K1<headers.key.separator>V1<headers.separator>K2<headers.key.separator>V2...``. Reader
properties (``kafkaline produce --property KEY=VALUE``):

=======================  =========  ======================================================
property                 default    meaning
=======================  =========  ======================================================
``parse.key``            false      the line starts with a key, ended by key.separator
``key.separator``        TAB        what ends the key
``parse.headers``        false      the line starts with headers, ended by headers.delimiter
``headers.delimiter``    TAB        what ends the headers
``headers.separator``    ``,``      what separates two headers
``headers.key.separator`` ``:``     what separates a header's key from its value
``null.marker``          (none)     a key, value or header value equal to it is null
``ignore.error``         false      a line without a separator is not an error: no key
                                    (or no headers), the rest is the value; a header
                                    without a key separator gets a null value
=======================  =========  ======================================================

Parsing works on bytes: the separators are encoded as UTF-8 and searched for in the raw line,
so input in any encoding (or none) reaches the broker byte for byte. For UTF-8 input this
finds exactly what a search over characters finds, since no UTF-8 character's encoding
occurs inside another's.

Differences from Java: ``headers.separator`` is a literal string here, not a regular
expression (Java's default ``,`` means the same either way); an unknown reader property is an
error naming the closest known one, rather than being ignored, so that a typo such as
``parse.keys=true`` does not silently send every line without a key.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass

from kafkaline.cli.errors import InputLineError
from kafkaline.errors import ConfigError

_BOOLEAN_PROPERTIES = ("parse.key", "parse.headers", "ignore.error")
_STRING_PROPERTIES = (
    "key.separator",
    "headers.delimiter",
    "headers.separator",
    "headers.key.separator",
    "null.marker",
)
READER_PROPERTIES: tuple[str, ...] = _BOOLEAN_PROPERTIES + _STRING_PROPERTIES

Header = tuple[str, bytes | None]


@dataclass(frozen=True, slots=True)
class LineRecord:
    """What one line of input becomes: the record's key, value and headers."""

    key: bytes | None
    value: bytes | None
    headers: list[Header]


@dataclass(frozen=True, slots=True)
class ReaderOptions:
    """How lines are split into records; see the module docstring for each setting."""

    parse_key: bool = False
    key_separator: str = "\t"
    parse_headers: bool = False
    headers_delimiter: str = "\t"
    headers_separator: str = ","
    headers_key_separator: str = ":"
    null_marker: str | None = None
    ignore_error: bool = False

    def __post_init__(self) -> None:
        separators = {
            "key.separator": self.key_separator,
            "headers.delimiter": self.headers_delimiter,
            "headers.separator": self.headers_separator,
            "headers.key.separator": self.headers_key_separator,
        }
        for name, separator in separators.items():
            if not separator:
                raise ConfigError(f"{name} must not be empty")
        # Equal separators would make lines ambiguous; Java refuses the same pairs.
        pairs = [
            ("headers.delimiter", "headers.separator"),
            ("headers.delimiter", "headers.key.separator"),
            ("headers.separator", "headers.key.separator"),
        ]
        if self.null_marker is not None:
            if not self.null_marker:
                raise ConfigError("null.marker must not be empty")
            separators["null.marker"] = self.null_marker
            pairs += [("null.marker", name) for name in separators if name != "null.marker"]
        for first, second in pairs:
            if separators[first] == separators[second]:
                raise ConfigError(
                    f"{first} and {second} may not be equal (both {separators[first]!r})"
                )

    @classmethod
    def from_properties(cls, properties: Mapping[str, str]) -> ReaderOptions:
        """Build from ``--property`` strings; booleans are true when the value is ``true`` in
        any case (anything else is false, as in Java).

        >>> ReaderOptions.from_properties({"parse.key": "true", "key.separator": ":"})
        ... # doctest: +ELLIPSIS
        ReaderOptions(parse_key=True, key_separator=':', ...)
        """
        for name in properties:
            if name not in READER_PROPERTIES:
                close = difflib.get_close_matches(name, READER_PROPERTIES, n=1, cutoff=0.6)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                raise ConfigError(
                    f"{name!r} is not a reader property{hint} (known: "
                    f"{', '.join(READER_PROPERTIES)})"
                )
        values: dict[str, object] = {}
        for name in _BOOLEAN_PROPERTIES:
            if name in properties:
                values[name.replace(".", "_")] = properties[name].strip().lower() == "true"
        for name in _STRING_PROPERTIES:
            if name in properties:
                values[name.replace(".", "_")] = properties[name]
        return cls(**values)  # type: ignore[arg-type]


class LineParser:
    """Turns lines (bytes, without their line ending) into :class:`LineRecord` values.

    >>> parser = LineParser(ReaderOptions(parse_key=True, key_separator=":", null_marker="-"))
    >>> parser.parse(b"user-1:hello", line_number=1)
    LineRecord(key=b'user-1', value=b'hello', headers=[])
    >>> parser.parse(b"user-2:-", line_number=2)
    LineRecord(key=b'user-2', value=None, headers=[])
    >>> parser.parse(b"no separator", line_number=3)
    Traceback (most recent call last):
    ...
    kafkaline.cli.errors.InputLineError: line 3: no key separator ':' found in 'no separator'
    """

    def __init__(self, options: ReaderOptions) -> None:
        self.options = options
        self._key_separator = options.key_separator.encode()
        self._headers_delimiter = options.headers_delimiter.encode()
        self._headers_separator = options.headers_separator.encode()
        self._headers_key_separator = options.headers_key_separator.encode()
        self._null_marker = options.null_marker.encode() if options.null_marker else None

    def parse(self, line: bytes, line_number: int) -> LineRecord:
        """Parse one line. Raises InputLineError naming ``line_number`` when a separator the
        options ask for is missing (unless ``ignore.error``) or a header key is the null
        marker."""
        options = self.options
        start = 0
        headers_field: bytes | None = None
        if options.parse_headers:
            headers_field = self._field_until(
                line, start, self._headers_delimiter, "headers delimiter", line_number
            )
            if headers_field is not None:
                start += len(headers_field) + len(self._headers_delimiter)
        key: bytes | None = None
        if options.parse_key:
            key = self._field_until(line, start, self._key_separator, "key separator", line_number)
            if key is not None:
                start += len(key) + len(self._key_separator)
        value = line[start:]
        headers: list[Header] = []
        if headers_field is not None and headers_field != self._null_marker:
            headers = self._split_headers(headers_field, line_number)
        return LineRecord(key=self._null_or(key), value=self._null_or(value), headers=headers)

    def _null_or(self, field: bytes | None) -> bytes | None:
        return None if field is None or field == self._null_marker else field

    def _field_until(
        self, line: bytes, start: int, separator: bytes, what: str, line_number: int
    ) -> bytes | None:
        end = line.find(separator, start)
        if end == -1:
            if self.options.ignore_error:
                return None
            raise InputLineError(
                f"line {line_number}: no {what} {separator.decode()!r} found in {_shorten(line)!r}"
            )
        return line[start:end]

    def _split_headers(self, headers_field: bytes, line_number: int) -> list[Header]:
        pairs = headers_field.split(self._headers_separator)
        # Java's String.split drops trailing empty pieces (but keeps a lone empty field).
        while len(pairs) > 1 and not pairs[-1]:
            pairs.pop()
        headers: list[Header] = []
        for pair in pairs:
            end = pair.find(self._headers_key_separator)
            if end == -1:
                if not self.options.ignore_error:
                    raise InputLineError(
                        f"line {line_number}: no header key separator "
                        f"{self.options.headers_key_separator!r} found in header "
                        f"{_shorten(pair)!r}"
                    )
                headers.append((_header_key(pair, line_number), None))
                continue
            raw_key = pair[:end]
            if raw_key == self._null_marker:
                raise InputLineError(
                    f"line {line_number}: a header key may not be the null marker "
                    f"{self.options.null_marker!r}: header keys cannot be null"
                )
            raw_value = pair[end + len(self._headers_key_separator) :]
            headers.append((_header_key(raw_key, line_number), self._null_or(raw_value)))
        return headers


def _header_key(raw_key: bytes, line_number: int) -> str:
    # Header keys are strings in Kafka's protocol; values stay bytes.
    try:
        return raw_key.decode("utf-8")
    except UnicodeDecodeError:
        raise InputLineError(
            f"line {line_number}: header key {_shorten(raw_key)!r} is not UTF-8"
        ) from None


_SHOWN_LINE_LENGTH = 80


def _shorten(data: bytes) -> str:
    """The line as the user would recognise it, cut to keep the error one readable line."""
    text = data.decode("utf-8", errors="replace")
    if len(text) > _SHOWN_LINE_LENGTH:
        return text[: _SHOWN_LINE_LENGTH - 3] + "..."
    return text
