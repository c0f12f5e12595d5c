"""Java-style properties: ``.properties`` files (``--producer.config``) and ``KEY=VALUE``
arguments (``--producer-property``, ``--property``, ``--producer-props``).

The file syntax is ``java.util.Properties.load``'s, so a file written for the Java tools works
unchanged:

* ``#`` or ``!`` as the first non-blank character starts a comment line; blank lines are skipped;
* the key ends at the first unescaped ``=``, ``:`` or blank; blanks around the separator are
  skipped, and the rest of the line is the value (trailing blanks included, as in Java);
* a line ending in an odd number of backslashes continues on the next line, whose leading
  blanks are dropped;
* escapes: ``\\t``, ``\\n``, ``\\r``, ``\\f``, ``\\uXXXX``; a backslash before any other
  character stands for that character (``\\=``, ``\\:``, ``\\ ``, ``\\\\``).

One difference: files are read as UTF-8 (Java reads ISO-8859-1 and needs ``\\uXXXX`` for
anything else); UTF-8 is a superset of the ASCII such files are almost always written in.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator

from kafkaline.errors import ConfigError

_BLANKS = " \t\f"
_KEY_TERMINATORS = "=:" + _BLANKS
_SIMPLE_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def parse_properties(text: str, source: str = "<properties>") -> dict[str, str]:
    """Parse the text of a ``.properties`` file into key -> value (the last of a repeated key
    wins, as in Java). ``source`` names the text in errors.

    >>> parse_properties("# producer\\nlinger.ms = 5\\nacks:all\\nclient.id kafkaline\\n")
    {'linger.ms': '5', 'acks': 'all', 'client.id': 'kafkaline'}
    >>> parse_properties("bootstrap.servers=a:9092,\\\\\\n    b:9092")
    {'bootstrap.servers': 'a:9092,b:9092'}
    """
    properties: dict[str, str] = {}
    for line_number, logical_line in _logical_lines(text):
        key, value = _split_key_value(logical_line)
        properties[_unescape(key, source, line_number)] = _unescape(value, source, line_number)
    return properties


def load_properties_file(path: str | os.PathLike[str]) -> dict[str, str]:
    """Read and parse a ``.properties`` file. Raises FileNotFoundError (and the other
    OSErrors) when it cannot be read, ConfigError naming the file when it is malformed."""
    with open(path, "rb") as file:
        data = file.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ConfigError(
            f"{os.fspath(path)}: not UTF-8 text (byte {error.start}); write other characters "
            "as \\uXXXX escapes"
        ) from None
    return parse_properties(text, source=os.fspath(path))


def parse_key_value_arguments(arguments: Iterable[str], option: str) -> dict[str, str]:
    """Turn ``["linger.ms=5", "acks=all"]`` into a mapping: the key is everything before the
    first ``=``, the value everything after it (it may contain ``=`` and be empty). ``option``
    names the command-line option in errors.

    >>> parse_key_value_arguments(["linger.ms=5", "client.id=a=b", "x="], "--producer-property")
    {'linger.ms': '5', 'client.id': 'a=b', 'x': ''}
    """
    pairs: dict[str, str] = {}
    for argument in arguments:
        key, separator, value = argument.partition("=")
        if not separator or not key.strip():
            raise ConfigError(f"{option} expects KEY=VALUE, got {argument!r}")
        pairs[key.strip()] = value
    return pairs


def _natural_lines(text: str) -> Iterator[str]:
    # \r\n, \r and \n all end a line (str.splitlines also splits on \v, \x1c, ... which Java
    # keeps inside values).
    return iter(text.replace("\r\n", "\n").replace("\r", "\n").split("\n"))


def _ends_with_continuation(line: str) -> bool:
    trailing_backslashes = len(line) - len(line.rstrip("\\"))
    return trailing_backslashes % 2 == 1


def _logical_lines(text: str) -> Iterator[tuple[int, str]]:
    """(number of the first natural line, logical line) for every non-comment line."""
    lines = _natural_lines(text)
    line_number = 0
    for line in lines:
        line_number += 1
        stripped = line.lstrip(_BLANKS)
        if not stripped or stripped[0] in "#!":
            continue  # comment lines never continue, even when they end in a backslash
        first_line_number = line_number
        logical = stripped
        while _ends_with_continuation(logical):
            logical = logical[:-1]
            continuation = next(lines, None)
            if continuation is None:
                break
            line_number += 1
            logical += continuation.lstrip(_BLANKS)
        yield first_line_number, logical


def _split_key_value(line: str) -> tuple[str, str]:
    """Split a logical line (escapes still in place) at the first unescaped separator."""
    index = 0
    while index < len(line):
        char = line[index]
        if char == "\\":
            index += 2
            continue
        if char in _KEY_TERMINATORS:
            break
        index += 1
    key = line[:index]
    rest = line[index:].lstrip(_BLANKS)
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(_BLANKS)
    return key, rest


def _unescape(text: str, source: str, line_number: int) -> str:
    if "\\" not in text:
        return text
    out: list[str] = []
    index = 0
    while index < len(text):
        char = text[index]
        if char != "\\":
            out.append(char)
            index += 1
            continue
        escaped = text[index + 1 : index + 2]
        if escaped == "u":
            digits = text[index + 2 : index + 6]
            if len(digits) != 4 or any(d not in "0123456789abcdefABCDEF" for d in digits):
                escape = text[index : index + 6]
                raise ConfigError(
                    f"{source}, line {line_number}: malformed \\uXXXX escape {escape!r}"
                )
            out.append(chr(int(digits, 16)))
            index += 6
            continue
        # A lone backslash at the very end (only possible at end of input) stands for nothing.
        out.append(_SIMPLE_ESCAPES.get(escaped, escaped))
        index += 2
    return "".join(out)
