"""What the wire primitives' reader and writers share: the ``struct`` packers of Kafka's
fixed-width types (big-endian) and their limits (see :mod:`kafkaline.protocol.primitives`)."""

from __future__ import annotations

import struct
from typing import TypeAlias

__all__ = [
    "FLOAT64",
    "INT8",
    "INT16",
    "INT32",
    "INT64",
    "MAX_INT16",
    "MAX_INT32",
    "MAX_UINT32",
    "MAX_UINT64",
    "UINT16",
    "UINT32",
    "Buffer",
]

#: Anything the decoder reads from and the encoder accepts for ``bytes`` fields.
Buffer: TypeAlias = bytes | bytearray | memoryview

INT8 = struct.Struct(">b")
INT16 = struct.Struct(">h")
INT32 = struct.Struct(">i")
INT64 = struct.Struct(">q")
UINT16 = struct.Struct(">H")
UINT32 = struct.Struct(">I")
FLOAT64 = struct.Struct(">d")

MAX_UINT32 = 0xFFFF_FFFF
MAX_UINT64 = 0xFFFF_FFFF_FFFF_FFFF
MAX_INT16 = 0x7FFF
MAX_INT32 = 0x7FFF_FFFF
