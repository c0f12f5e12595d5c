"""The records ``kafkaline perf`` sends: one random payload of ``--record-size`` bytes, or the
payloads of ``--payload-file`` split at ``--payload-delimiter`` (one picked at random per
record), as the Java perf test does."""

from __future__ import annotations

import random
import string

from kafkaline.cli.errors import UsageError

# Printable payloads (Java uses uppercase letters too), so a record read back is legible.
_LETTERS = string.ascii_uppercase.encode()
_DELIMITER_ESCAPES = {"\\n": "\n", "\\t": "\t", "\\r": "\r", "\\r\\n": "\r\n"}


def random_payload(record_size: int, rng: random.Random) -> bytes:
    """``record_size`` random uppercase letters.

    >>> len(random_payload(100, random.Random(0)))
    100
    """
    return bytes(rng.choices(_LETTERS, k=record_size))


def parse_delimiter(text: str) -> bytes:
    """The delimiter as typed on a command line, where a newline is written ``\\n``.

    >>> parse_delimiter("\\\\n"), parse_delimiter(",")
    (b'\\n', b',')
    """
    if not text:
        raise UsageError("--payload-delimiter must not be empty")
    return _DELIMITER_ESCAPES.get(text, text).encode()


def split_payloads(data: bytes, delimiter: bytes, source: str) -> list[bytes]:
    """The payloads in a payload file's content. Empty pieces at the end (a final newline)
    are dropped; a file with no payload at all is a usage error naming ``source``.

    >>> split_payloads(b"a\\nbb\\n\\n", b"\\n", "payloads.txt")
    [b'a', b'bb']
    """
    payloads = data.split(delimiter)
    while payloads and not payloads[-1]:
        payloads.pop()
    if not payloads:
        raise UsageError(f"{source} contains no payloads")
    return payloads


def load_payload_file(path: str, delimiter: bytes) -> list[bytes]:
    """Read and split a payload file (FileNotFoundError and friends when it cannot be read)."""
    with open(path, "rb") as file:
        return split_payloads(file.read(), delimiter, path)
