"""The wire primitives' decoder: :class:`Reader`, a bounds-checked cursor (the layout of each
primitive is in :mod:`kafkaline.protocol.primitives`)."""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable
from typing import Any, TypeVar

from kafkaline.errors import DecodeError
from kafkaline.protocol.fixed_width import (
    FLOAT64,
    INT8,
    INT16,
    INT32,
    INT64,
    MAX_UINT32,
    MAX_UINT64,
    UINT16,
    UINT32,
    Buffer,
)

__all__ = ["Reader"]

T = TypeVar("T")


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

    def unpack(self, packer: struct.Struct, what: str = "fixed-width fields") -> tuple[Any, ...]:
        """Read one or several fixed-width fields at once with a precompiled ``struct.Struct``."""
        pos = self._pos
        size = packer.size
        if pos + size > self._end:
            raise self._truncated(size, what)
        self._pos = pos + size
        return packer.unpack_from(self._data, pos)

    def int8(self) -> int:
        """Read a signed 8-bit integer."""
        value: int = self.unpack(INT8, "int8")[0]
        return value

    def int16(self) -> int:
        """Read a signed 16-bit integer."""
        value: int = self.unpack(INT16, "int16")[0]
        return value

    def int32(self) -> int:
        """Read a signed 32-bit integer."""
        value: int = self.unpack(INT32, "int32")[0]
        return value

    def int64(self) -> int:
        """Read a signed 64-bit integer."""
        value: int = self.unpack(INT64, "int64")[0]
        return value

    def uint16(self) -> int:
        """Read an unsigned 16-bit integer."""
        value: int = self.unpack(UINT16, "uint16")[0]
        return value

    def uint32(self) -> int:
        """Read an unsigned 32-bit integer."""
        value: int = self.unpack(UINT32, "uint32")[0]
        return value

    def float64(self) -> float:
        """Read an IEEE 754 double."""
        value: float = self.unpack(FLOAT64, "float64")[0]
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
        return self._unsigned_var("unsigned varint", "varint", 5, MAX_UINT32)

    def _unsigned_var(self, name: str, short: str, max_bytes: int, limit: int) -> int:
        """The loop of both unsigned varint widths: 7 bits a byte, low bits first."""
        data = self._data
        pos = self._pos
        end = self._end
        result = 0
        shift = 0
        while True:
            if pos >= end:
                raise self._truncated(1, short)
            byte = data[pos]
            pos += 1
            result |= (byte & 0x7F) << shift
            if not byte & 0x80:
                break
            shift += 7
            if shift >= 7 * max_bytes:
                raise DecodeError(f"{name} longer than {max_bytes} bytes at offset {self._pos}")
        if result > limit:
            raise DecodeError(f"{name} exceeds {limit.bit_length()} bits at offset {self._pos}")
        self._pos = pos
        return result

    def varint(self) -> int:
        """Read a zigzag-encoded signed 32-bit varint."""
        raw = self.unsigned_varint()
        return (raw >> 1) ^ -(raw & 1)

    def varlong(self) -> int:
        """Read a zigzag-encoded signed 64-bit varint."""
        raw = self._unsigned_var("varlong", "varlong", 10, MAX_UINT64)
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
