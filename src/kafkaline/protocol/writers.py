"""The wire primitives' encoders: ``write_*`` functions appending to a ``bytearray`` (the layout
of each primitive is in :mod:`kafkaline.protocol.primitives`)."""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable, Sequence
from typing import TypeVar

from kafkaline.errors import EncodeError
from kafkaline.protocol.fixed_width import (
    FLOAT64,
    INT8,
    INT16,
    INT32,
    INT64,
    MAX_INT16,
    MAX_INT32,
    MAX_UINT32,
    MAX_UINT64,
    UINT16,
    UINT32,
    Buffer,
)

T = TypeVar("T")


# --------------------------------------------------------------------------- writers


def _pack(packer: struct.Struct, what: str, out: bytearray, value: object) -> None:
    try:
        out += packer.pack(value)
    except struct.error as exc:
        raise EncodeError(f"{value!r} does not fit {what}: {exc}") from None


def write_int8(out: bytearray, value: int) -> None:
    """Append a signed 8-bit integer."""
    _pack(INT8, "int8", out, value)


def write_int16(out: bytearray, value: int) -> None:
    """Append a signed 16-bit integer."""
    _pack(INT16, "int16", out, value)


def write_int32(out: bytearray, value: int) -> None:
    """Append a signed 32-bit integer."""
    _pack(INT32, "int32", out, value)


def write_int64(out: bytearray, value: int) -> None:
    """Append a signed 64-bit integer."""
    _pack(INT64, "int64", out, value)


def write_uint16(out: bytearray, value: int) -> None:
    """Append an unsigned 16-bit integer."""
    _pack(UINT16, "uint16", out, value)


def write_uint32(out: bytearray, value: int) -> None:
    """Append an unsigned 32-bit integer."""
    _pack(UINT32, "uint32", out, value)


def write_float64(out: bytearray, value: float) -> None:
    """Append an IEEE 754 double."""
    _pack(FLOAT64, "float64", out, value)


def write_bool(out: bytearray, value: bool) -> None:
    """Append a bool as one byte (1 or 0)."""
    out.append(1 if value else 0)


def write_uuid(out: bytearray, value: uuid.UUID) -> None:
    """Append a 16-byte UUID."""
    if not isinstance(value, uuid.UUID):
        raise EncodeError(f"{value!r} is not a uuid.UUID")
    out += value.bytes


def write_unsigned_varint(out: bytearray, value: int) -> None:
    """Append an unsigned varint (0 <= value < 2**32)."""
    if 0 <= value < 0x80:
        out.append(value)
        return
    if not 0 <= value <= MAX_UINT32:
        raise EncodeError(f"{value!r} does not fit an unsigned varint (32 bits)")
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def _write_unsigned_varlong(out: bytearray, value: int) -> None:
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def write_varint(out: bytearray, value: int) -> None:
    """Append a zigzag-encoded signed 32-bit varint."""
    if not -0x8000_0000 <= value <= MAX_INT32:
        raise EncodeError(f"{value!r} does not fit a varint (32 bits)")
    _write_unsigned_varlong(out, ((value << 1) ^ (value >> 31)) & MAX_UINT32)


def write_varlong(out: bytearray, value: int) -> None:
    """Append a zigzag-encoded signed 64-bit varint."""
    if not -0x8000_0000_0000_0000 <= value <= 0x7FFF_FFFF_FFFF_FFFF:
        raise EncodeError(f"{value!r} does not fit a varlong (64 bits)")
    _write_unsigned_varlong(out, ((value << 1) ^ (value >> 63)) & MAX_UINT64)


def _utf8(value: str) -> bytes:
    if not isinstance(value, str):
        raise EncodeError(f"{value!r} is not a str")
    try:
        return value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise EncodeError(f"string is not encodable as UTF-8: {exc.reason}") from None


def write_string(out: bytearray, value: str) -> None:
    """Append a string with an int16 length."""
    raw = _utf8(value)
    if len(raw) > MAX_INT16:
        raise EncodeError(f"string of {len(raw)} bytes is longer than {MAX_INT16}")
    out += INT16.pack(len(raw))
    out += raw


def write_nullable_string(out: bytearray, value: str | None) -> None:
    """Append a string with an int16 length, or -1 for null."""
    if value is None:
        out += b"\xff\xff"
    else:
        write_string(out, value)


def write_compact_string(out: bytearray, value: str) -> None:
    """Append a string with an unsigned varint length + 1."""
    raw = _utf8(value)
    if len(raw) > MAX_INT16:
        raise EncodeError(f"string of {len(raw)} bytes is longer than {MAX_INT16}")
    write_unsigned_varint(out, len(raw) + 1)
    out += raw


def write_compact_nullable_string(out: bytearray, value: str | None) -> None:
    """Append a string with an unsigned varint length + 1, or 0 for null."""
    if value is None:
        out.append(0)
    else:
        write_compact_string(out, value)


def _byte_length(value: Buffer) -> int:
    if isinstance(value, memoryview):
        return value.nbytes
    if not isinstance(value, (bytes, bytearray)):
        raise EncodeError(f"{type(value).__name__} is not bytes-like")
    return len(value)


def write_bytes(out: bytearray, value: Buffer) -> None:
    """Append bytes with an int32 length (the bytes are copied once, into ``out``)."""
    size = _byte_length(value)
    if size > MAX_INT32:
        raise EncodeError(f"{size} bytes are more than an int32 length allows")
    out += INT32.pack(size)
    out += value


def write_nullable_bytes(out: bytearray, value: Buffer | None) -> None:
    """Append bytes with an int32 length, or -1 for null."""
    if value is None:
        out += b"\xff\xff\xff\xff"
    else:
        write_bytes(out, value)


def write_compact_bytes(out: bytearray, value: Buffer) -> None:
    """Append bytes with an unsigned varint length + 1."""
    size = _byte_length(value)
    if size >= MAX_UINT32:
        raise EncodeError(f"{size} bytes are more than a compact length allows")
    write_unsigned_varint(out, size + 1)
    out += value


def write_compact_nullable_bytes(out: bytearray, value: Buffer | None) -> None:
    """Append bytes with an unsigned varint length + 1, or 0 for null."""
    if value is None:
        out.append(0)
    else:
        write_compact_bytes(out, value)


# ---------------------------------------------------------------- records, maybe by reference

#: Record sets at least this large are referenced by a :class:`ScatterFrame`, not copied:
#: below it, one more buffer per write costs more than the copy saves.
SCATTER_MIN_BYTES = 4096


class ScatterFrame(bytearray):
    """A frame being encoded that takes large record sets by reference: their bytes are not
    appended, only remembered in :attr:`deferred` as ``(position, buffer)``, to be written
    after ``self[:position]`` (see ``ClientProtocol.send_buffers``). Written as one list of
    buffers (``socket.sendmsg``), a produce request's batches then go from the records
    builder to the kernel without being copied into the request first."""

    __slots__ = ("deferred",)

    def __init__(self, initial: bytes = b"") -> None:
        super().__init__(initial)
        self.deferred: list[tuple[int, Buffer]] = []


def _append_records(out: bytearray, value: Buffer, size: int) -> None:
    if size >= SCATTER_MIN_BYTES and type(out) is ScatterFrame:
        out.deferred.append((len(out), value))
    else:
        out += value


def write_records(out: bytearray, value: Buffer) -> None:
    """:func:`write_bytes` for record sets (referenced, not copied, by a ScatterFrame)."""
    size = _byte_length(value)
    if size > MAX_INT32:
        raise EncodeError(f"{size} bytes are more than an int32 length allows")
    out += INT32.pack(size)
    _append_records(out, value, size)


def write_nullable_records(out: bytearray, value: Buffer | None) -> None:
    """:func:`write_nullable_bytes` for record sets."""
    if value is None:
        out += b"\xff\xff\xff\xff"
    else:
        write_records(out, value)


def write_compact_records(out: bytearray, value: Buffer) -> None:
    """:func:`write_compact_bytes` for record sets."""
    size = _byte_length(value)
    if size >= MAX_UINT32:
        raise EncodeError(f"{size} bytes are more than a compact length allows")
    write_unsigned_varint(out, size + 1)
    _append_records(out, value, size)


def write_compact_nullable_records(out: bytearray, value: Buffer | None) -> None:
    """:func:`write_compact_nullable_bytes` for record sets."""
    if value is None:
        out.append(0)
    else:
        write_compact_records(out, value)


def _items(value: Sequence[T]) -> Sequence[T]:
    if not isinstance(value, (list, tuple)):
        raise EncodeError(f"{type(value).__name__} is not a list")
    return value


def write_array(
    out: bytearray, items: Sequence[T], write_item: Callable[[bytearray, T], None]
) -> None:
    """Append an array with an int32 count."""
    items = _items(items)
    out += INT32.pack(len(items))
    for item in items:
        write_item(out, item)


def write_nullable_array(
    out: bytearray, items: Sequence[T] | None, write_item: Callable[[bytearray, T], None]
) -> None:
    """Append an array with an int32 count, or -1 for null."""
    if items is None:
        out += b"\xff\xff\xff\xff"
    else:
        write_array(out, items, write_item)


def write_compact_array(
    out: bytearray, items: Sequence[T], write_item: Callable[[bytearray, T], None]
) -> None:
    """Append an array with an unsigned varint count + 1."""
    items = _items(items)
    write_unsigned_varint(out, len(items) + 1)
    for item in items:
        write_item(out, item)


def write_compact_nullable_array(
    out: bytearray, items: Sequence[T] | None, write_item: Callable[[bytearray, T], None]
) -> None:
    """Append an array with an unsigned varint count + 1, or 0 for null."""
    if items is None:
        out.append(0)
    else:
        write_compact_array(out, items, write_item)


def write_tagged_fields(out: bytearray, fields: Sequence[tuple[int, Buffer]]) -> None:
    """Append a tagged-field section from raw ``(tag, data)`` pairs, in ascending tag order."""
    ordered = sorted(fields, key=lambda field: field[0])
    write_unsigned_varint(out, len(ordered))
    for tag, data in ordered:
        write_unsigned_varint(out, tag)
        write_unsigned_varint(out, _byte_length(data))
        out += data
