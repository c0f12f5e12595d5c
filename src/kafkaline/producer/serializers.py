"""Turning keys and values into bytes.

A serializer is either a :class:`Serializer` object (``serialize(topic, data, headers)``, as
Java's, so it can depend on the topic and headers) or a plain callable ``fn(value) -> bytes``;
:func:`as_serializer` makes one of the other. Built-ins: :class:`StringSerializer` (UTF-8),
:class:`JsonSerializer` and :class:`BytesSerializer`.

``None`` stays ``None`` (a Kafka null: a record without key, or a tombstone) with every
built-in and with plain callables, which are not called for it. Serializer objects are called
with ``None``, as in Java, and decide themselves.

Without a serializer only bytes-like data can be sent (:func:`bytes_or_none`)::

    >>> bytes_or_none(42, "value")
    Traceback (most recent call last):
    ...
    TypeError: value of type int cannot be sent without a value_serializer; pass bytes or set \
value_serializer
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable, Sequence
from typing import Any, Final, Literal, Protocol, TypeAlias, TypeVar, runtime_checkable

__all__ = [
    "BytesSerializer",
    "CallableSerializer",
    "JsonSerializer",
    "NumberSerializer",
    "Serializer",
    "SerializerLike",
    "StringSerializer",
    "UUIDSerializer",
    "as_serializer",
    "bytes_or_none",
    "serialized_bytes",
    "serializer_for_name",
]

T_contra = TypeVar("T_contra", contravariant=True)

#: Record headers as serializers see them (read-only: add headers with an interceptor).
Headers = Sequence[tuple[str, bytes | None]]


@runtime_checkable
class Serializer(Protocol[T_contra]):
    """Turns data for ``topic`` into bytes (or ``None`` for a Kafka null).

    A ``close()`` method, if the object has one, is called when the producer closes.
    """

    def serialize(self, topic: str, data: T_contra, headers: Headers | None) -> bytes | None: ...


#: What the ``key_serializer``/``value_serializer`` settings accept.
SerializerLike: TypeAlias = Serializer[Any] | Callable[[Any], bytes | None]


def bytes_or_none(data: object, role: Literal["key", "value"]) -> bytes | None:
    """``data`` as bytes when no serializer is set: bytes as they are, bytearray and
    memoryview copied, ``None`` kept; anything else is a TypeError naming its type."""
    if data is None or type(data) is bytes:
        return data
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(data)
    raise TypeError(
        f"{role} of type {type(data).__name__} cannot be sent without a {role}_serializer; "
        f"pass bytes or set {role}_serializer"
    )


def serialized_bytes(data: object, role: str, serializer: object) -> bytes:
    """A serializer's output as bytes: bytearray and memoryview copied, others refused."""
    if isinstance(data, (bytearray, memoryview)):
        return bytes(data)
    raise TypeError(
        f"{role}_serializer {serializer!r} returned {type(data).__name__}; it must return bytes "
        "or None"
    )


class BytesSerializer:
    """Bytes-like data as bytes: bytes unchanged, bytearray and memoryview copied.

    >>> BytesSerializer().serialize("t", bytearray(b"ab"), None)
    b'ab'
    """

    __slots__ = ()

    def serialize(
        self, topic: str, data: bytes | bytearray | memoryview | None, headers: Headers | None
    ) -> bytes | None:
        if data is None or type(data) is bytes:
            return data
        if isinstance(data, (bytes, bytearray, memoryview)):
            return bytes(data)
        raise TypeError(
            f"BytesSerializer cannot serialize {type(data).__name__}; pass bytes, bytearray or "
            "memoryview"
        )


class StringSerializer:
    """``str`` encoded (UTF-8 by default), like Java's ``StringSerializer``.

    >>> StringSerializer().serialize("t", "héllo", None)
    b'h\\xc3\\xa9llo'
    """

    __slots__ = ("encoding", "errors")

    def __init__(self, encoding: str = "utf-8", errors: str = "strict") -> None:
        self.encoding = encoding
        self.errors = errors

    def serialize(self, topic: str, data: str | None, headers: Headers | None) -> bytes | None:
        if data is None:
            return None
        if not isinstance(data, str):
            raise TypeError(f"StringSerializer cannot serialize {type(data).__name__}; pass str")
        return data.encode(self.encoding, self.errors)


class JsonSerializer:
    """Data as compact UTF-8 JSON; ``None`` is a Kafka null, not ``b"null"`` (as Java's
    Connect ``JsonSerializer``).

    >>> JsonSerializer().serialize("t", {"id": 1, "tags": ["a"]}, None)
    b'{"id":1,"tags":["a"]}'
    """

    __slots__ = ("_encoder",)

    def __init__(
        self, *, default: Callable[[Any], Any] | None = None, sort_keys: bool = False
    ) -> None:
        import json  # here: a producer without JSON values does not load it

        # One encoder for all calls: json.dumps builds a new one whenever options are given.
        self._encoder = json.JSONEncoder(
            separators=(",", ":"), ensure_ascii=False, default=default, sort_keys=sort_keys
        )

    def serialize(self, topic: str, data: object, headers: Headers | None) -> bytes | None:
        if data is None:
            return None
        return self._encoder.encode(data).encode("utf-8")


class NumberSerializer:
    """Numbers as Java's fixed-width big-endian serializers write them: ``NumberSerializer.INT``
    is ``IntegerSerializer`` (4 bytes), ``LONG``, ``SHORT``, ``DOUBLE``, ``FLOAT`` likewise.

    >>> NumberSerializer.INT.serialize("t", 258, None)
    b'\\x00\\x00\\x01\\x02'
    >>> NumberSerializer.DOUBLE.serialize("t", 1.5, None)
    b'?\\xf8\\x00\\x00\\x00\\x00\\x00\\x00'
    """

    __slots__ = ("_packer", "java_name")

    INT: NumberSerializer
    LONG: NumberSerializer
    SHORT: NumberSerializer
    DOUBLE: NumberSerializer
    FLOAT: NumberSerializer

    def __init__(self, struct_format: str, java_name: str) -> None:
        self._packer = struct.Struct(struct_format)
        self.java_name = java_name

    def serialize(self, topic: str, data: float | None, headers: Headers | None) -> bytes | None:
        if data is None:
            return None
        integral = self._packer.format[-1] in "hiq"
        if isinstance(data, bool) or not isinstance(data, int if integral else (int, float)):
            raise TypeError(f"{self.java_name} cannot serialize {type(data).__name__}")
        try:
            return self._packer.pack(data)
        except struct.error:
            raise ValueError(
                f"{self.java_name} cannot serialize {data!r}: out of range for "
                f"{self._packer.size} bytes"
            ) from None

    def __repr__(self) -> str:
        return f"NumberSerializer({self._packer.format!r}, {self.java_name!r})"


NumberSerializer.INT = NumberSerializer(">i", "IntegerSerializer")
NumberSerializer.LONG = NumberSerializer(">q", "LongSerializer")
NumberSerializer.SHORT = NumberSerializer(">h", "ShortSerializer")
NumberSerializer.DOUBLE = NumberSerializer(">d", "DoubleSerializer")
NumberSerializer.FLOAT = NumberSerializer(">f", "FloatSerializer")


class UUIDSerializer:
    """A UUID as its 36-character string in UTF-8, like Java's ``UUIDSerializer``.

    >>> UUIDSerializer().serialize("t", uuid.UUID(int=1), None)
    b'00000000-0000-0000-0000-000000000001'
    """

    __slots__ = ()

    def serialize(
        self, topic: str, data: uuid.UUID | str | None, headers: Headers | None
    ) -> bytes | None:
        if data is None:
            return None
        if isinstance(data, str):
            data = uuid.UUID(data)
        if not isinstance(data, uuid.UUID):
            raise TypeError(f"UUIDSerializer cannot serialize {type(data).__name__}")
        return str(data).encode("ascii")


class CallableSerializer:
    """Adapts a plain ``fn(data) -> bytes`` to :class:`Serializer`.

    ``fn`` is not called for ``None`` (which stays a Kafka null); its result must be bytes,
    bytearray, memoryview or ``None``.

    >>> CallableSerializer(str.encode).serialize("t", "abc", None)
    b'abc'
    """

    __slots__ = ("function",)

    def __init__(self, function: Callable[[Any], bytes | None]) -> None:
        self.function = function

    def serialize(self, topic: str, data: object, headers: Headers | None) -> bytes | None:
        if data is None:
            return None
        result = self.function(data)
        if result is None or type(result) is bytes:
            return result
        if isinstance(result, (bytearray, memoryview)):
            return bytes(result)
        raise TypeError(
            f"serializer {self.function!r} returned {type(result).__name__}; it must return "
            "bytes or None"
        )

    def __repr__(self) -> str:
        return f"CallableSerializer({self.function!r})"


def as_serializer(spec: SerializerLike) -> Serializer[Any]:
    """A :class:`Serializer` from a Serializer object (returned as is) or a plain callable."""
    if callable(getattr(spec, "serialize", None)):
        return spec  # type: ignore[return-value]
    if callable(spec):
        return CallableSerializer(spec)
    raise TypeError(
        f"{spec!r} is not a serializer: pass an object with .serialize(topic, data, headers) "
        "or a callable data -> bytes"
    )


_STRING: Final = ("str", "string", "org.apache.kafka.common.serialization.StringSerializer")
_BYTES: Final = (
    "bytes",
    "org.apache.kafka.common.serialization.ByteArraySerializer",
    "org.apache.kafka.common.serialization.BytesSerializer",
    "org.apache.kafka.common.serialization.ByteBufferSerializer",
)
_JSON: Final = ("json",)
_JAVA_PACKAGE: Final = "org.apache.kafka.common.serialization."
# Java's other built-in serializers, by class name.
_JAVA_SERIALIZERS: Final[dict[str, Callable[[], Serializer[Any]]]] = {
    _JAVA_PACKAGE + "IntegerSerializer": lambda: NumberSerializer.INT,
    _JAVA_PACKAGE + "LongSerializer": lambda: NumberSerializer.LONG,
    _JAVA_PACKAGE + "ShortSerializer": lambda: NumberSerializer.SHORT,
    _JAVA_PACKAGE + "DoubleSerializer": lambda: NumberSerializer.DOUBLE,
    _JAVA_PACKAGE + "FloatSerializer": lambda: NumberSerializer.FLOAT,
    _JAVA_PACKAGE + "UUIDSerializer": UUIDSerializer,
}


def serializer_for_name(name: str) -> Serializer[Any] | None:
    """A built-in serializer from a ``key.serializer``/``value.serializer`` property value;
    ``""`` means none. Raises LookupError naming the known names otherwise."""
    if name == "":
        return None
    if name in _STRING:
        return StringSerializer()
    if name in _BYTES:
        return BytesSerializer()
    if name in _JSON:
        return JsonSerializer()
    if name in _JAVA_SERIALIZERS:
        return _JAVA_SERIALIZERS[name]()
    if name == _JAVA_PACKAGE + "VoidSerializer":
        return CallableSerializer(_always_null)
    names = (*_STRING, *_BYTES, *_JSON, *_JAVA_SERIALIZERS)
    import difflib  # only a mistyped name pays for it

    close = difflib.get_close_matches(name, names, n=1, cutoff=0.8)
    if close:
        raise LookupError(f"unknown serializer; did you mean {close[0]!r}?")
    known = ", ".join(repr(n) for n in names)
    raise LookupError(
        f"unknown serializer; known names: {known} (pass a Serializer object for others)"
    )


def _always_null(data: object) -> None:
    """Java's VoidSerializer: only null, which a CallableSerializer never passes in."""
    raise TypeError(f"VoidSerializer cannot serialize {type(data).__name__}: only None")
