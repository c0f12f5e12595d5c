"""Serializers: the built-ins, plain callables, and sending without a serializer."""

from __future__ import annotations

import pytest

from kafkaline.producer.serializers import (
    BytesSerializer,
    CallableSerializer,
    JsonSerializer,
    Serializer,
    StringSerializer,
    as_serializer,
    bytes_or_none,
    serializer_for_name,
)


def test_string_serializer_encodes_utf8_by_default() -> None:
    assert StringSerializer().serialize("t", "naïve ☃", None) == "naïve ☃".encode()
    assert StringSerializer("latin-1").serialize("t", "naïve", None) == "naïve".encode("latin-1")
    assert StringSerializer().serialize("t", None, None) is None


def test_string_serializer_refuses_other_types_by_name() -> None:
    with pytest.raises(TypeError, match="StringSerializer cannot serialize bytes; pass str"):
        StringSerializer().serialize("t", b"x", None)  # type: ignore[arg-type]


def test_json_serializer_writes_compact_utf8_json() -> None:
    serializer = JsonSerializer()
    assert serializer.serialize("t", {"a": [1, 2.5, None, True], "é": "☃"}, None) == (
        '{"a":[1,2.5,null,true],"é":"☃"}'.encode()
    )
    assert serializer.serialize("t", None, None) is None  # a Kafka null, not b"null"
    assert serializer.serialize("t", 0, None) == b"0"


def test_json_serializer_options_and_errors() -> None:
    serializer = JsonSerializer(default=lambda value: sorted(value), sort_keys=True)
    assert serializer.serialize("t", {"b": {3, 1}, "a": 0}, None) == b'{"a":0,"b":[1,3]}'
    with pytest.raises(TypeError, match="not JSON serializable"):
        JsonSerializer().serialize("t", object(), None)


def test_bytes_serializer_passes_bytes_through_and_copies_views() -> None:
    payload = b"payload"
    assert BytesSerializer().serialize("t", payload, None) is payload
    buffer = bytearray(b"abc")
    copied = BytesSerializer().serialize("t", buffer, None)
    buffer[0] = ord("z")
    assert copied == b"abc"
    assert BytesSerializer().serialize("t", memoryview(b"xyz")[1:], None) == b"yz"
    assert BytesSerializer().serialize("t", None, None) is None
    with pytest.raises(TypeError, match="BytesSerializer cannot serialize str"):
        BytesSerializer().serialize("t", "text", None)  # type: ignore[arg-type]


def test_plain_callables_work_as_serializers_and_are_not_called_for_none() -> None:
    calls: list[object] = []

    def encode(value: object) -> bytes:
        calls.append(value)
        return str(value).encode()

    serializer = as_serializer(encode)
    assert isinstance(serializer, CallableSerializer)
    assert serializer.serialize("t", 42, None) == b"42"
    assert serializer.serialize("t", None, None) is None
    assert calls == [42]


def test_callable_results_are_checked() -> None:
    widened = as_serializer(lambda value: bytearray(b"ab"))  # type: ignore[arg-type,return-value]
    assert widened.serialize("t", 1, None) == b"ab"
    assert as_serializer(lambda value: None).serialize("t", 1, None) is None
    with pytest.raises(TypeError, match="returned str; it must return bytes or None"):
        as_serializer(lambda value: "text").serialize("t", 1, None)  # type: ignore[arg-type,return-value]


def test_serializer_objects_are_used_as_they_are() -> None:
    class Upper:
        def serialize(self, topic: str, data: str, headers: object) -> bytes:
            return f"{topic}:{data.upper()}".encode()

    upper = Upper()
    assert as_serializer(upper) is upper
    assert isinstance(upper, Serializer)
    assert isinstance(StringSerializer(), Serializer)
    with pytest.raises(TypeError, match="is not a serializer"):
        as_serializer(5)  # type: ignore[arg-type]


def test_without_a_serializer_only_bytes_like_data_can_be_sent() -> None:
    payload = b"x"
    assert bytes_or_none(payload, "value") is payload
    assert bytes_or_none(bytearray(b"ab"), "value") == b"ab"
    assert bytes_or_none(memoryview(b"ab"), "key") == b"ab"
    assert bytes_or_none(None, "key") is None
    with pytest.raises(TypeError) as caught:
        bytes_or_none(42, "value")
    assert str(caught.value) == (
        "value of type int cannot be sent without a value_serializer; pass bytes or set "
        "value_serializer"
    )
    with pytest.raises(
        TypeError, match=r"^key of type str cannot be sent without a key_serializer"
    ):
        bytes_or_none("user-1", "key")


def test_serializer_names_from_properties() -> None:
    assert serializer_for_name("") is None
    assert isinstance(serializer_for_name("str"), StringSerializer)
    assert isinstance(
        serializer_for_name("org.apache.kafka.common.serialization.StringSerializer"),
        StringSerializer,
    )
    assert isinstance(
        serializer_for_name("org.apache.kafka.common.serialization.ByteArraySerializer"),
        BytesSerializer,
    )
    assert isinstance(serializer_for_name("json"), JsonSerializer)
    with pytest.raises(LookupError, match="unknown serializer; known names: 'str'"):
        serializer_for_name("avro")
