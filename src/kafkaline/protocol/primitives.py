"""Kafka wire primitives: fixed-width integers, varints, strings, bytes, arrays, tagged fields.

Decoding goes through :class:`Reader`, a cursor over a bytes-like object. Every read checks the
bytes that remain *before* it slices or allocates, so truncated, corrupt or hostile input raises
:class:`~kafkaline.errors.DecodeError` and nothing else: a lying length or array count can
neither allocate a huge buffer nor loop for long.

Encoding appends to a ``bytearray`` with the ``write_*`` functions; a value that does not fit
its wire type raises :class:`~kafkaline.errors.EncodeError`.

Wire layout (all integers big-endian):

    int8/16/32/64, uint16/32   fixed width, two's complement / unsigned
    float64                    IEEE 754 double
    bool                       int8, 0 = false, anything else = true
    uuid                       16 bytes
    unsigned varint            7 bits per byte, low group first, high bit = "more follows";
                               at most 5 bytes (32 bits)
    varint / varlong           zigzag ((n << 1) ^ (n >> 31|63)) then unsigned varint;
                               at most 5 / 10 bytes
    string                     int16 length N, N bytes of UTF-8       (nullable: N = -1 is null)
    compact string             uvarint N+1, N bytes of UTF-8          (nullable: 0 is null)
    bytes                      int32 length N, N bytes                (nullable: N = -1 is null)
    compact bytes              uvarint N+1, N bytes                   (nullable: 0 is null)
    array                      int32 count N, N items                 (nullable: N = -1 is null)
    compact array              uvarint N+1, N items                   (nullable: 0 is null)
    tagged fields              uvarint count, then per field: uvarint tag, uvarint size, data
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable, Sequence
from typing import Any, TypeAlias, TypeVar

from kafkaline.errors import DecodeError, EncodeError

#: Anything the decoder reads from and the encoder accepts for ``bytes`` fields.
Buffer: TypeAlias = bytes | bytearray | memoryview

T = TypeVar("T")

_INT8 = struct.Struct(">b")
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")
_UINT16 = struct.Struct(">H")
_UINT32 = struct.Struct(">I")
_FLOAT64 = struct.Struct(">d")

_MAX_UINT32 = 0xFFFF_FFFF
_MAX_UINT64 = 0xFFFF_FFFF_FFFF_FFFF
_MAX_INT16 = 0x7FFF
_MAX_INT32 = 0x7FFF_FFFF


def _as_byte_view(data: Buffer) -> Buffer:
    """A view the reader can index byte by byte (memoryviews of other formats are cast)."""
    if isinstance(data, memoryview) and (data.format != "B" or data.ndim != 1):
        return data.cast("B")
    return data


class Reader:
    """A bounds-checked cursor over ``data[start:end]``.

    Each method reads one primitive, advances the cursor and raises
    :class:`~kafkaline.errors.DecodeError` if the bytes are missing or malformed.

    >>> Reader(b"\\x00\\x03abc").string()
    'abc'
    """

    __slots__ = ("_data", "_end", "_pos")

    def __init__(self, data: Buffer, start: int = 0, end: int | None = None) -> None:
        self._data = _as_byte_view(data)
        size = len(self._data)
        self._end = size if end is None else min(end, size)
        self._pos = start

    # ----------------------------------------------------------------------- cursor

    @property
    def position(self) -> int:
        """Offset of the next byte to read, from the start of the underlying buffer."""
        return self._pos

    def remaining(self) -> int:
        """How many bytes are left before the end of this reader."""
        return self._end - self._pos

    def expect_end(self, what: str) -> None:
        """Raise DecodeError if bytes are left over after decoding ``what``."""
        if self._pos != self._end:
            raise DecodeError(
                f"{self._end - self._pos} unexpected trailing bytes after {what} "
                f"(at offset {self._pos})"
            )

    def _truncated(self, need: int, what: str) -> DecodeError:
        return DecodeError(
            f"truncated {what}: need {need} bytes at offset {self._pos}, "
            f"{self._end - self._pos} left"
        )

    def take(self, size: int, what: str = "bytes") -> Buffer:
        """The next ``size`` bytes, without copying when the buffer is a memoryview."""
        pos = self._pos
        if size < 0 or size > self._end - pos:
            raise self._truncated(size, what)
        self._pos = pos + size
        return self._data[pos : pos + size]

    def skip(self, size: int) -> None:
        """Advance past ``size`` bytes."""
        if size < 0 or size > self._end - self._pos:
            raise self._truncated(size, "skipped bytes")
        self._pos += size

    def sub_reader(self, size: int) -> Reader:
        """A reader over the next ``size`` bytes; this reader advances past them."""
        pos = self._pos
        if size < 0 or size > self._end - pos:
            raise self._truncated(size, "nested field")
        self._pos = pos + size
        return Reader(self._data, pos, pos + size)

    # ----------------------------------------------------------------------- fixed width

    def unpack(self, packer: struct.Struct) -> tuple[Any, ...]:
        """Read several fixed-width fields at once with a precompiled ``struct.Struct``."""
        pos = self._pos
        size = packer.size
        if pos + size > self._end:
            raise self._truncated(size, "fixed-width fields")
        self._pos = pos + size
        return packer.unpack_from(self._data, pos)

    def int8(self) -> int:
        """Read a signed 8-bit integer."""
        pos = self._pos
        if pos + 1 > self._end:
            raise self._truncated(1, "int8")
        self._pos = pos + 1
        value: int = _INT8.unpack_from(self._data, pos)[0]
        return value

    def int16(self) -> int:
        """Read a signed 16-bit integer."""
        pos = self._pos
        if pos + 2 > self._end:
            raise self._truncated(2, "int16")
        self._pos = pos + 2
        value: int = _INT16.unpack_from(self._data, pos)[0]
        return value

    def int32(self) -> int:
        """Read a signed 32-bit integer."""
        pos = self._pos
        if pos + 4 > self._end:
            raise self._truncated(4, "int32")
        self._pos = pos + 4
        value: int = _INT32.unpack_from(self._data, pos)[0]
        return value

    def int64(self) -> int:
        """Read a signed 64-bit integer."""
        pos = self._pos
        if pos + 8 > self._end:
            raise self._truncated(8, "int64")
        self._pos = pos + 8
        value: int = _INT64.unpack_from(self._data, pos)[0]
        return value

    def uint16(self) -> int:
        """Read an unsigned 16-bit integer."""
        pos = self._pos
        if pos + 2 > self._end:
            raise self._truncated(2, "uint16")
        self._pos = pos + 2
        value: int = _UINT16.unpack_from(self._data, pos)[0]
        return value

    def uint32(self) -> int:
        """Read an unsigned 32-bit integer."""
        pos = self._pos
        if pos + 4 > self._end:
            raise self._truncated(4, "uint32")
        self._pos = pos + 4
        value: int = _UINT32.unpack_from(self._data, pos)[0]
        return value

    def float64(self) -> float:
        """Read an IEEE 754 double."""
        pos = self._pos
        if pos + 8 > self._end:
            raise self._truncated(8, "float64")
        self._pos = pos + 8
        value: float = _FLOAT64.unpack_from(self._data, pos)[0]
        return value

    def boolean(self) -> bool:
        """Read a bool (one byte, non-zero is true)."""
        pos = self._pos
        if pos >= self._end:
            raise self._truncated(1, "bool")
        self._pos = pos + 1
        return self._data[pos] != 0

    def uuid(self) -> uuid.UUID:
        """Read a 16-byte UUID."""
        return uuid.UUID(bytes=bytes(self.take(16, "uuid")))

    # ----------------------------------------------------------------------- varints

    def unsigned_varint(self) -> int:
        """Read an unsigned varint of at most 32 bits (5 bytes)."""
        data = self._data
        pos = self._pos
        end = self._end
        # One byte is the usual case (array counts, string lengths, tagged-field counts): a
        # flexible ProduceResponse reads eight of them, so it skips the loop
        # (see docs/performance.md, Notes moved from the code).
        if pos < end and data[pos] < 0x80:
            self._pos = pos + 1
            return data[pos]
        result = 0
        shift = 0
        while True:
            if pos >= end:
                raise self._truncated(1, "varint")
            byte = data[pos]
            pos += 1
            result |= (byte & 0x7F) << shift
            if not byte & 0x80:
                break
            shift += 7
            if shift > 28:
                raise DecodeError(f"unsigned varint longer than 5 bytes at offset {self._pos}")
        if result > _MAX_UINT32:
            raise DecodeError(f"unsigned varint exceeds 32 bits at offset {self._pos}")
        self._pos = pos
        return result

    def _unsigned_varlong(self) -> int:
        data = self._data
        pos = self._pos
        end = self._end
        result = 0
        shift = 0
        while True:
            if pos >= end:
                raise self._truncated(1, "varlong")
            byte = data[pos]
            pos += 1
            result |= (byte & 0x7F) << shift
            if not byte & 0x80:
                break
            shift += 7
            if shift > 63:
                raise DecodeError(f"varlong longer than 10 bytes at offset {self._pos}")
        if result > _MAX_UINT64:
            raise DecodeError(f"varlong exceeds 64 bits at offset {self._pos}")
        self._pos = pos
        return result

    def varint(self) -> int:
        """Read a zigzag-encoded signed 32-bit varint."""
        raw = self.unsigned_varint()
        return (raw >> 1) ^ -(raw & 1)

    def varlong(self) -> int:
        """Read a zigzag-encoded signed 64-bit varint."""
        raw = self._unsigned_varlong()
        return (raw >> 1) ^ -(raw & 1)

    # ----------------------------------------------------------------------- strings

    def _utf8(self, size: int, what: str) -> str:
        raw = self.take(size, what)
        try:
            return str(raw, "utf-8")
        except UnicodeDecodeError as exc:
            raise DecodeError(f"{what} is not valid UTF-8: {exc.reason}") from None

    def string(self) -> str:
        """Read a string with an int16 length (null is an error)."""
        size = self.int16()
        if size < 0:
            raise DecodeError(f"non-nullable string is null (length {size})")
        return self._utf8(size, "string")

    def nullable_string(self) -> str | None:
        """Read a string with an int16 length; -1 means null."""
        size = self.int16()
        if size < 0:
            if size == -1:
                return None
            raise DecodeError(f"negative string length {size}")
        return self._utf8(size, "string")

    def compact_string(self) -> str:
        """Read a string with an unsigned varint length + 1 (null is an error)."""
        size = self.unsigned_varint() - 1
        if size < 0:
            raise DecodeError("non-nullable compact string is null")
        return self._utf8(size, "compact string")

    def compact_nullable_string(self) -> str | None:
        """Read a string with an unsigned varint length + 1; 0 means null."""
        size = self.unsigned_varint() - 1
        if size < 0:
            return None
        return self._utf8(size, "compact string")

    # ----------------------------------------------------------------------- bytes

    def bytes_(self) -> bytes:
        """Read bytes with an int32 length (null is an error)."""
        size = self.int32()
        if size < 0:
            raise DecodeError(f"non-nullable bytes are null (length {size})")
        return bytes(self.take(size, "bytes"))

    def nullable_bytes(self) -> bytes | None:
        """Read bytes with an int32 length; -1 means null."""
        size = self.int32()
        if size < 0:
            if size == -1:
                return None
            raise DecodeError(f"negative bytes length {size}")
        return bytes(self.take(size, "bytes"))

    def compact_bytes(self) -> bytes:
        """Read bytes with an unsigned varint length + 1 (null is an error)."""
        size = self.unsigned_varint() - 1
        if size < 0:
            raise DecodeError("non-nullable compact bytes are null")
        return bytes(self.take(size, "compact bytes"))

    def compact_nullable_bytes(self) -> bytes | None:
        """Read bytes with an unsigned varint length + 1; 0 means null."""
        size = self.unsigned_varint() - 1
        if size < 0:
            return None
        return bytes(self.take(size, "compact bytes"))

    # ----------------------------------------------------------------------- arrays

    def _check_count(self, count: int) -> None:
        # Every item of every Kafka array takes at least one byte, so a count larger than the
        # bytes left is a lie; refusing it bounds both memory and time.
        if count > self._end - self._pos:
            raise DecodeError(
                f"array count {count} exceeds the {self._end - self._pos} bytes left "
                f"at offset {self._pos}"
            )

    def array(self, read_item: Callable[[Reader], T]) -> list[T]:
        """Read an array with an int32 count (null is an error)."""
        count = self.int32()
        if count < 0:
            raise DecodeError(f"non-nullable array is null (count {count})")
        self._check_count(count)
        return [read_item(self) for _ in range(count)]

    def nullable_array(self, read_item: Callable[[Reader], T]) -> list[T] | None:
        """Read an array with an int32 count; -1 means null."""
        count = self.int32()
        if count < 0:
            if count == -1:
                return None
            raise DecodeError(f"negative array count {count}")
        self._check_count(count)
        return [read_item(self) for _ in range(count)]

    def compact_array(self, read_item: Callable[[Reader], T]) -> list[T]:
        """Read an array with an unsigned varint count + 1 (null is an error)."""
        count = self.unsigned_varint() - 1
        if count < 0:
            raise DecodeError("non-nullable compact array is null")
        self._check_count(count)
        return [read_item(self) for _ in range(count)]

    def compact_nullable_array(self, read_item: Callable[[Reader], T]) -> list[T] | None:
        """Read an array with an unsigned varint count + 1; 0 means null."""
        count = self.unsigned_varint() - 1
        if count < 0:
            return None
        self._check_count(count)
        return [read_item(self) for _ in range(count)]

    # ----------------------------------------------------------------------- tagged fields

    def tagged_field_count(self) -> int:
        """Read the number of tagged fields that follow (checked against the bytes left)."""
        count = self.unsigned_varint()
        # Each tagged field takes at least two bytes (tag and size).
        if count * 2 > self._end - self._pos:
            raise DecodeError(
                f"tagged field count {count} exceeds the {self._end - self._pos} bytes left"
            )
        return count

    def tagged_fields(self) -> dict[int, bytes]:
        """Read a whole tagged-field section as raw ``{tag: data}``."""
        fields: dict[int, bytes] = {}
        for _ in range(self.tagged_field_count()):
            tag = self.unsigned_varint()
            size = self.unsigned_varint()
            fields[tag] = bytes(self.take(size, "tagged field"))
        return fields


# --------------------------------------------------------------------------- writers


def _pack(packer: struct.Struct, what: str, out: bytearray, value: object) -> None:
    try:
        out += packer.pack(value)
    except struct.error as exc:
        raise EncodeError(f"{value!r} does not fit {what}: {exc}") from None


def write_int8(out: bytearray, value: int) -> None:
    """Append a signed 8-bit integer."""
    _pack(_INT8, "int8", out, value)


def write_int16(out: bytearray, value: int) -> None:
    """Append a signed 16-bit integer."""
    _pack(_INT16, "int16", out, value)


def write_int32(out: bytearray, value: int) -> None:
    """Append a signed 32-bit integer."""
    _pack(_INT32, "int32", out, value)


def write_int64(out: bytearray, value: int) -> None:
    """Append a signed 64-bit integer."""
    _pack(_INT64, "int64", out, value)


def write_uint16(out: bytearray, value: int) -> None:
    """Append an unsigned 16-bit integer."""
    _pack(_UINT16, "uint16", out, value)


def write_uint32(out: bytearray, value: int) -> None:
    """Append an unsigned 32-bit integer."""
    _pack(_UINT32, "uint32", out, value)


def write_float64(out: bytearray, value: float) -> None:
    """Append an IEEE 754 double."""
    _pack(_FLOAT64, "float64", out, value)


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
    if not 0 <= value <= _MAX_UINT32:
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
    if not -0x8000_0000 <= value <= _MAX_INT32:
        raise EncodeError(f"{value!r} does not fit a varint (32 bits)")
    _write_unsigned_varlong(out, ((value << 1) ^ (value >> 31)) & _MAX_UINT32)


def write_varlong(out: bytearray, value: int) -> None:
    """Append a zigzag-encoded signed 64-bit varint."""
    if not -0x8000_0000_0000_0000 <= value <= 0x7FFF_FFFF_FFFF_FFFF:
        raise EncodeError(f"{value!r} does not fit a varlong (64 bits)")
    _write_unsigned_varlong(out, ((value << 1) ^ (value >> 63)) & _MAX_UINT64)


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
    if len(raw) > _MAX_INT16:
        raise EncodeError(f"string of {len(raw)} bytes is longer than {_MAX_INT16}")
    out += _INT16.pack(len(raw))
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
    if len(raw) > _MAX_INT16:
        raise EncodeError(f"string of {len(raw)} bytes is longer than {_MAX_INT16}")
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
    if size > _MAX_INT32:
        raise EncodeError(f"{size} bytes are more than an int32 length allows")
    out += _INT32.pack(size)
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
    if size >= _MAX_UINT32:
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
    if size > _MAX_INT32:
        raise EncodeError(f"{size} bytes are more than an int32 length allows")
    out += _INT32.pack(size)
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
    if size >= _MAX_UINT32:
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
    out += _INT32.pack(len(items))
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
