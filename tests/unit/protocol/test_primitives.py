"""Primitive codecs: known encodings, round trips, and refusal of bad input."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafkaline.errors import DecodeError, EncodeError
from kafkaline.protocol import primitives as p
from kafkaline.protocol.primitives import Reader


def encoded(write: Callable[[bytearray, Any], None], value: Any) -> bytes:
    out = bytearray()
    write(out, value)
    return bytes(out)


@pytest.mark.parametrize(
    ("value", "expected"),
    [(0, "00"), (-1, "01"), (1, "02"), (63, "7e"), (-64, "7f"), (64, "8001"), (300, "d804")],
)
def test_varint_zigzag_vectors(value: int, expected: str) -> None:
    assert encoded(p.write_varint, value).hex() == expected
    assert Reader(bytes.fromhex(expected)).varint() == value


def test_varint_extremes() -> None:
    assert encoded(p.write_varint, 2**31 - 1).hex() == "feffffff0f"
    assert encoded(p.write_varint, -(2**31)).hex() == "ffffffff0f"
    assert encoded(p.write_varlong, -(2**63)).hex() == "ffffffffffffffffff01"


@pytest.mark.parametrize(
    ("value", "expected"), [(0, "00"), (127, "7f"), (128, "8001"), (300, "ac02")]
)
def test_unsigned_varint_vectors(value: int, expected: str) -> None:
    assert encoded(p.write_unsigned_varint, value).hex() == expected
    assert Reader(bytes.fromhex(expected)).unsigned_varint() == value


@given(st.integers(-(2**31), 2**31 - 1))
def test_varint_round_trip(value: int) -> None:
    assert Reader(encoded(p.write_varint, value)).varint() == value


@given(st.integers(-(2**63), 2**63 - 1))
def test_varlong_round_trip(value: int) -> None:
    assert Reader(encoded(p.write_varlong, value)).varlong() == value


@given(st.integers(0, 2**32 - 1))
def test_unsigned_varint_round_trip(value: int) -> None:
    assert Reader(encoded(p.write_unsigned_varint, value)).unsigned_varint() == value


@pytest.mark.parametrize(
    "data",
    ["8080808080", "ffffffff7f", "8080808010"],
    ids=["six-bytes", "over-32-bits", "bit-32-set"],
)
def test_overlong_unsigned_varint_is_refused(data: str) -> None:
    with pytest.raises(DecodeError):
        Reader(bytes.fromhex(data + "00")).unsigned_varint()


def test_endless_varlong_is_refused() -> None:
    with pytest.raises(DecodeError, match="longer than 10"):
        Reader(b"\xff" * 1000).varlong()


@pytest.mark.parametrize(
    ("write", "read", "value"),
    [
        (p.write_int8, Reader.int8, -128),
        (p.write_int16, Reader.int16, -32768),
        (p.write_int32, Reader.int32, 2**31 - 1),
        (p.write_int64, Reader.int64, -(2**63)),
        (p.write_uint16, Reader.uint16, 65535),
        (p.write_uint32, Reader.uint32, 2**32 - 1),
        (p.write_float64, Reader.float64, -1.5),
        (p.write_bool, Reader.boolean, True),
        (p.write_uuid, Reader.uuid, uuid.UUID(int=2**128 - 1)),
        (p.write_string, Reader.string, "h\u00e9"),
        (p.write_nullable_string, Reader.nullable_string, None),
        (p.write_compact_string, Reader.compact_string, ""),
        (p.write_compact_nullable_string, Reader.compact_nullable_string, None),
        (p.write_bytes, Reader.bytes_, b"\x00\x01"),
        (p.write_nullable_bytes, Reader.nullable_bytes, None),
        (p.write_compact_bytes, Reader.compact_bytes, b"abc"),
        (p.write_compact_nullable_bytes, Reader.compact_nullable_bytes, None),
    ],
    ids=lambda item: getattr(item, "__name__", ""),
)
def test_round_trip_and_truncation(
    write: Callable[[bytearray, Any], None], read: Callable[[Reader], Any], value: Any
) -> None:
    data = encoded(write, value)
    reader = Reader(data)
    assert read(reader) == value
    assert reader.remaining() == 0
    for cut in range(len(data)):
        with pytest.raises(DecodeError):
            read(Reader(data[:cut]))


def test_string_layouts() -> None:
    assert encoded(p.write_string, "ab").hex() == "00026162"
    assert encoded(p.write_nullable_string, None).hex() == "ffff"
    assert encoded(p.write_compact_string, "ab").hex() == "036162"
    assert encoded(p.write_compact_nullable_string, None).hex() == "00"
    assert encoded(p.write_bytes, b"ab").hex() == "000000026162"
    assert encoded(p.write_compact_bytes, memoryview(b"ab")).hex() == "036162"


def test_arrays() -> None:
    out = bytearray()
    p.write_array(out, [1, 2], p.write_int16)
    p.write_compact_array(out, [3], p.write_int16)
    p.write_nullable_array(out, None, p.write_int16)
    p.write_compact_nullable_array(out, None, p.write_int16)
    assert out.hex() == "0000000200010002020003ffffffff00"
    reader = Reader(out)
    assert reader.array(Reader.int16) == [1, 2]
    assert reader.compact_array(Reader.int16) == [3]
    assert reader.nullable_array(Reader.int16) is None
    assert reader.compact_nullable_array(Reader.int16) is None
    reader.expect_end("test")


@pytest.mark.parametrize(
    ("data", "read"),
    [
        ("7fffffff", lambda reader: reader.array(Reader.int8)),
        ("fffffffe", lambda reader: reader.nullable_array(Reader.int8)),
        ("ffffffff", lambda reader: reader.array(Reader.int8)),
        ("ffffffff0f", lambda reader: reader.compact_array(Reader.int8)),
        ("00", lambda reader: reader.compact_array(Reader.int8)),
        ("7fffffff", Reader.bytes_),
        ("fffffffe", Reader.nullable_bytes),
        ("7fff", Reader.string),
        ("fffe", Reader.nullable_string),
        ("ffff", Reader.string),
        ("ffffffff0f", Reader.compact_bytes),
        ("00", Reader.compact_string),
        ("0002c328", Reader.string),  # invalid UTF-8
        ("ffffffff0f", Reader.tagged_fields),
    ],
)
def test_lying_or_invalid_lengths_raise_decode_error(
    data: str, read: Callable[[Reader], Any]
) -> None:
    with pytest.raises(DecodeError):
        read(Reader(bytes.fromhex(data)))


def test_tagged_fields_round_trip_in_tag_order() -> None:
    out = bytearray()
    p.write_tagged_fields(out, [(5, b"\x01"), (1, b"")])
    assert out.hex() == "020100050101"
    assert Reader(out).tagged_fields() == {1: b"", 5: b"\x01"}


@pytest.mark.parametrize(
    ("write", "value"),
    [
        (p.write_int8, 128),
        (p.write_int16, -32769),
        (p.write_int32, 2**31),
        (p.write_int64, "1"),
        (p.write_uint16, -1),
        (p.write_unsigned_varint, -1),
        (p.write_unsigned_varint, 2**32),
        (p.write_varint, 2**31),
        (p.write_varlong, 2**63),
        (p.write_string, "x" * 32768),
        (p.write_string, None),
        (p.write_string, "\ud800"),
        (p.write_compact_string, b"bytes"),
        (p.write_bytes, "text"),
        (p.write_uuid, "not-a-uuid"),
    ],
)
def test_values_that_do_not_fit_raise_encode_error(
    write: Callable[[bytearray, Any], None], value: Any
) -> None:
    with pytest.raises(EncodeError):
        write(bytearray(), value)


def test_reader_over_a_slice_stops_at_its_end() -> None:
    reader = Reader(b"\x00\x01\x00\x02", 0, 2)
    assert reader.int16() == 1
    with pytest.raises(DecodeError):
        reader.int16()


def test_sub_reader_bounds() -> None:
    reader = Reader(b"\x00\x01\x00\x02")
    sub = reader.sub_reader(2)
    assert sub.int16() == 1
    assert reader.int16() == 2
    with pytest.raises(DecodeError):
        reader.sub_reader(1)
