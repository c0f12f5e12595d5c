"""The wire types of message fields (:class:`Kind`: ints, strings, bytes, records, arrays),
each with its reader and writer per (flexible, nullable), and version ranges
(:class:`Versions`). :mod:`kafkaline.protocol.schema` declares structs with them."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any, Generic, NamedTuple, TypeAlias, TypeVar

from kafkaline.protocol import primitives as p
from kafkaline.protocol.primitives import Buffer, Reader

__all__ = [
    "BOOL",
    "BYTES",
    "FLOAT64",
    "INT8",
    "INT16",
    "INT32",
    "INT64",
    "NO_VERSIONS",
    "RECORDS",
    "STRING",
    "UINT16",
    "UINT32",
    "UUID",
    "ArrayKind",
    "Codec",
    "Kind",
    "LengthPrefixedKind",
    "ReadFn",
    "Records",
    "ScalarKind",
    "Versions",
    "WriteFn",
]

T = TypeVar("T")

#: The type of ``records`` fields: a record batch (or several) as raw bytes. The record batch
#: format itself lives in :mod:`kafkaline.record`.
Records: TypeAlias = bytes | bytearray | memoryview

ReadFn: TypeAlias = Callable[[Reader], Any]
WriteFn: TypeAlias = Callable[[bytearray, Any], None]


# --------------------------------------------------------------------------- versions


class Versions(NamedTuple):
    """An inclusive version range as Kafka's schemas spell it: ``"3+"``, ``"0-2"``, ``"0"``,
    ``"none"``. ``high`` is None for an open range; an empty range has ``high < low``."""

    low: int
    high: int | None

    @classmethod
    def parse(cls, text: str) -> Versions:
        """Parse ``"3+"``, ``"0-2"``, ``"5"`` or ``"none"``."""
        text = text.strip()
        if text == "none":
            return cls(0, -1)
        if text.endswith("+"):
            return cls(int(text[:-1]), None)
        low, sep, high = text.partition("-")
        return cls(int(low), int(high) if sep else int(low))

    def __contains__(self, version: object) -> bool:
        if not isinstance(version, int):
            return False
        return self.low <= version and (self.high is None or version <= self.high)

    def is_empty(self) -> bool:
        """True for ``"none"``."""
        return self.high is not None and self.high < self.low

    def __str__(self) -> str:
        if self.is_empty():
            return "none"
        if self.high is None:
            return f"{self.low}+"
        if self.high == self.low:
            return str(self.low)
        return f"{self.low}-{self.high}"


NO_VERSIONS = Versions(0, -1)


# --------------------------------------------------------------------------- field kinds


class Codec(NamedTuple):
    """How one field is read and written at one (version, flexible, nullable) combination."""

    read: ReadFn
    write: WriteFn
    #: The ``struct`` module format of a fixed-width field; runs of such fields are read and
    #: written with one pack/unpack call.
    struct_format: str | None = None


class Kind(Generic[T]):
    """The wire type of a field. ``kafka_type`` is the type as Kafka's JSON schemas spell it
    (``"int32"``, ``"string"``, ``"[]int32"``, ``"[]TopicProduceData"``, ``"records"``)."""

    __slots__ = ()

    @property
    def kafka_type(self) -> str:
        raise NotImplementedError

    def new_default(self) -> T:
        """A fresh default value (0, "", empty list, a default struct, ...)."""
        raise NotImplementedError

    def codec(self, version: int, flexible: bool, nullable: bool) -> Codec:
        """The reader/writer for this kind at a version."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"Kind({self.kafka_type})"


class ScalarKind(Kind[T]):
    """A type whose encoding never depends on the version: ints, bool, float64, uuid."""

    __slots__ = ("_default", "_name", "_read", "_struct_format", "_write")

    def __init__(
        self, name: str, read: ReadFn, write: WriteFn, default: T, struct_format: str | None
    ) -> None:
        self._name = name
        self._read = read
        self._write = write
        self._default = default
        self._struct_format = struct_format

    @property
    def kafka_type(self) -> str:
        return self._name

    def new_default(self) -> T:
        return self._default

    def codec(self, version: int, flexible: bool, nullable: bool) -> Codec:
        if nullable:
            raise TypeError(f"{self._name} cannot be nullable")
        return Codec(self._read, self._write, self._struct_format)


class LengthPrefixedKind(Kind[T]):
    """string, bytes and records: length-prefixed, compact (uvarint) in flexible versions."""

    __slots__ = ("_codecs", "_default", "_name")

    def __init__(self, name: str, default: T, codecs: dict[tuple[bool, bool], Codec]) -> None:
        self._name = name
        self._default = default
        self._codecs = codecs

    @property
    def kafka_type(self) -> str:
        return self._name

    def new_default(self) -> T:
        return self._default

    def codec(self, version: int, flexible: bool, nullable: bool) -> Codec:
        return self._codecs[(flexible, nullable)]


def _bytes_codecs() -> dict[tuple[bool, bool], Codec]:
    return {
        (False, False): Codec(Reader.bytes_, p.write_bytes),
        (False, True): Codec(Reader.nullable_bytes, p.write_nullable_bytes),
        (True, False): Codec(Reader.compact_bytes, p.write_compact_bytes),
        (True, True): Codec(Reader.compact_nullable_bytes, p.write_compact_nullable_bytes),
    }


INT8: Kind[int] = ScalarKind("int8", Reader.int8, p.write_int8, 0, "b")
INT16: Kind[int] = ScalarKind("int16", Reader.int16, p.write_int16, 0, "h")
INT32: Kind[int] = ScalarKind("int32", Reader.int32, p.write_int32, 0, "i")
INT64: Kind[int] = ScalarKind("int64", Reader.int64, p.write_int64, 0, "q")
UINT16: Kind[int] = ScalarKind("uint16", Reader.uint16, p.write_uint16, 0, "H")
UINT32: Kind[int] = ScalarKind("uint32", Reader.uint32, p.write_uint32, 0, "I")
FLOAT64: Kind[float] = ScalarKind("float64", Reader.float64, p.write_float64, 0.0, "d")
# "?" unpacks any non-zero byte as True, as Kafka reads bools.
BOOL: Kind[bool] = ScalarKind("bool", Reader.boolean, p.write_bool, False, "?")
UUID: Kind[uuid.UUID] = ScalarKind("uuid", Reader.uuid, p.write_uuid, uuid.UUID(int=0), None)
STRING: Kind[str] = LengthPrefixedKind(
    "string",
    "",
    {
        (False, False): Codec(Reader.string, p.write_string),
        (False, True): Codec(Reader.nullable_string, p.write_nullable_string),
        (True, False): Codec(Reader.compact_string, p.write_compact_string),
        (True, True): Codec(Reader.compact_nullable_string, p.write_compact_nullable_string),
    },
)
BYTES: Kind[Buffer] = LengthPrefixedKind("bytes", b"", _bytes_codecs())
RECORDS: Kind[Records] = LengthPrefixedKind(
    "records",
    b"",
    {
        (False, False): Codec(Reader.bytes_, p.write_records),
        (False, True): Codec(Reader.nullable_bytes, p.write_nullable_records),
        (True, False): Codec(Reader.compact_bytes, p.write_compact_records),
        (True, True): Codec(Reader.compact_nullable_bytes, p.write_compact_nullable_records),
    },
)


class ArrayKind(Kind[list[T]]):
    """An array of ``item``: int32 count, or compact (uvarint count + 1) in flexible versions."""

    __slots__ = ("item",)

    def __init__(self, item: Kind[T]) -> None:
        self.item = item

    @property
    def kafka_type(self) -> str:
        return "[]" + self.item.kafka_type

    def new_default(self) -> list[T]:
        return []

    def codec(self, version: int, flexible: bool, nullable: bool) -> Codec:
        item = self.item.codec(version, flexible, nullable=False)
        read_item = item.read
        write_item = item.write
        read_array: Callable[[Reader, ReadFn], Any]
        write_array: Callable[[bytearray, Any, WriteFn], None]
        if flexible:
            read_array = Reader.compact_nullable_array if nullable else Reader.compact_array
            write_array = p.write_compact_nullable_array if nullable else p.write_compact_array
        else:
            read_array = Reader.nullable_array if nullable else Reader.array
            write_array = p.write_nullable_array if nullable else p.write_array

        def read(reader: Reader) -> list[Any] | None:
            return read_array(reader, read_item)

        def write(out: bytearray, items: Any) -> None:
            write_array(out, items, write_item)

        return Codec(read, write)
