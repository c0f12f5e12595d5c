"""CRC-32C (Castagnoli), the checksum of record batch v2.

Backed by the ``crc32c`` package (a C extension using SSE4.2/ARMv8 CRC instructions when the
CPU has them, a table-driven C loop otherwise): as fast as ``google-crc32c``
(docs/performance.md, "Notes moved from the code"), and it takes a ``memoryview`` or
``bytearray`` without a copy (``google-crc32c`` accepts only ``bytes``), which the reader relies
on to check a batch in place.

The checksum keeps the GIL (the package's ``gil_release_mode`` 0; by default it gives the GIL
up for buffers of 32 KiB and more): a batch's checksum takes microseconds (64 KiB: ~3 us),
while a thread that gives the GIL up when another wants it then waits to get it back, longer
than the checksum took (docs/performance.md, "purezstd").
"""

from __future__ import annotations

import functools
from collections.abc import Callable

#: ``gil_release_mode``: never give the GIL up (see the module's docstring).
_KEEP_GIL = 0


@functools.cache
def _implementation() -> Callable[[bytes | bytearray | memoryview, int, int], int]:
    # Imported on first use: the crc32c package's __init__ reads its own version through
    # importlib.metadata, a large share of what importing kafkaline cost.
    from crc32c import crc32c as implementation

    return implementation


def crc32c(data: bytes | bytearray | memoryview, crc: int = 0) -> int:
    """CRC-32C of ``data``, continuing from ``crc`` (the value for the bytes before it).

    >>> hex(crc32c(b"123456789"))
    '0xe3069283'
    """
    return _implementation()(data, crc, _KEEP_GIL)
