"""CRC-32C (Castagnoli), the checksum of record batch v2.

Backed by the ``crc32c`` package (a C extension using SSE4.2/ARMv8 CRC instructions when the
CPU has them, a table-driven C loop otherwise): as fast as ``google-crc32c``
(docs/performance.md, "Notes moved from the code"), and it takes a ``memoryview`` or
``bytearray`` without a copy (``google-crc32c`` accepts only ``bytes``), which the reader relies
on to check a batch in place; it releases the GIL for buffers of 32 KiB and more.
"""

from __future__ import annotations

import functools
from collections.abc import Callable


@functools.cache
def _implementation() -> Callable[[bytes | bytearray | memoryview, int], int]:
    # Imported on first use: the crc32c package's __init__ reads its own version through
    # importlib.metadata, a large share of what importing kafkaline cost.
    from crc32c import crc32c as implementation

    return implementation


def crc32c(data: bytes | bytearray | memoryview, crc: int = 0) -> int:
    """CRC-32C of ``data``, continuing from ``crc`` (the value for the bytes before it).

    >>> hex(crc32c(b"123456789"))
    '0xe3069283'
    """
    return _implementation()(data, crc)
