"""Zigzag varints: known encodings, int32/int64 edges, truncated and overlong input."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafkaline.errors import CorruptRecordError
from kafkaline.record.record_encoder import _VARINTS, encode_record
from kafkaline.record.varint import (
    INT32_MAX,
    INT32_MIN,
    INT64_MAX,
    INT64_MIN,
    decode_varint,
    decode_varlong,
    encode_varint,
    encode_varlong,
    size_of_varint,
    zigzag_decode,
    zigzag_encode,
)


@pytest.mark.parametrize(
    ("value", "encoded"),
    [
        (0, b"\x00"),
        (-1, b"\x01"),
        (1, b"\x02"),
        (-64, b"\x7f"),
        (63, b"\x7e"),
        (64, b"\x80\x01"),
        (8191, b"\xfe\x7f"),
        (8192, b"\x80\x80\x01"),
        (300, b"\xd8\x04"),
        (INT32_MAX, b"\xfe\xff\xff\xff\x0f"),
        (INT32_MIN, b"\xff\xff\xff\xff\x0f"),
    ],
)
def test_varint_known_encodings(value: int, encoded: bytes) -> None:
    assert encode_varint(value) == encoded
    assert decode_varint(encoded, 0) == (value, len(encoded))
    assert size_of_varint(value) == len(encoded)


@pytest.mark.parametrize(
    ("value", "encoded"),
    [
        (INT64_MAX, b"\xfe\xff\xff\xff\xff\xff\xff\xff\xff\x01"),
        (INT64_MIN, b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"),
        (INT32_MAX + 1, b"\x80\x80\x80\x80\x10"),
        (-5000, b"\x8f\x4e"),
    ],
)
def test_varlong_known_encodings(value: int, encoded: bytes) -> None:
    assert encode_varlong(value) == encoded
    assert decode_varlong(encoded, 0) == (value, len(encoded))
    assert size_of_varint(value) == len(encoded)


@pytest.mark.parametrize("value", [INT32_MAX + 1, INT32_MIN - 1])
def test_encode_varint_refuses_values_outside_int32(value: int) -> None:
    with pytest.raises(ValueError, match="int32"):
        encode_varint(value)


@pytest.mark.parametrize("value", [INT64_MAX + 1, INT64_MIN - 1])
def test_encode_varlong_refuses_values_outside_int64(value: int) -> None:
    with pytest.raises(ValueError, match="int64"):
        encode_varlong(value)


def test_decode_varint_refuses_an_int32_overflow_in_five_bytes() -> None:
    with pytest.raises(CorruptRecordError, match="overflows int32"):
        decode_varint(b"\xfe\xff\xff\xff\x1f", 0)


def test_decode_varint_refuses_more_than_five_bytes() -> None:
    with pytest.raises(CorruptRecordError, match="longer than 5"):
        decode_varint(b"\x80\x80\x80\x80\x80\x00", 0)


def test_decode_varlong_refuses_more_than_ten_bytes() -> None:
    with pytest.raises(CorruptRecordError, match="longer than 10"):
        decode_varlong(b"\x80" * 10 + b"\x00", 0)


def test_decode_varlong_refuses_an_int64_overflow_in_ten_bytes() -> None:
    with pytest.raises(CorruptRecordError, match="overflows int64"):
        decode_varlong(b"\xff" * 9 + b"\x7f", 0)


@pytest.mark.parametrize("data", [b"", b"\x80", b"\xff\xff", b"\x80\x80\x80\x80"])
def test_decoding_truncated_input_raises_corrupt_record(data: bytes) -> None:
    with pytest.raises(CorruptRecordError, match="truncated"):
        decode_varint(data, 0)
    with pytest.raises(CorruptRecordError, match="truncated"):
        decode_varlong(data, 0)


def test_decode_starts_at_the_given_position() -> None:
    data = b"junk" + encode_varint(-300) + encode_varlong(7)
    value, pos = decode_varint(data, 4)
    assert value == -300
    assert decode_varlong(data, pos) == (7, len(data))


@given(st.integers(INT32_MIN, INT32_MAX))
def test_varint_round_trip(value: int) -> None:
    encoded = encode_varint(value)
    assert decode_varint(encoded + b"\xff", 0) == (value, len(encoded))
    assert len(encoded) == size_of_varint(value) <= 5


@given(st.integers(INT64_MIN, INT64_MAX))
def test_varlong_round_trip(value: int) -> None:
    encoded = encode_varlong(value)
    assert decode_varlong(encoded, 0) == (value, len(encoded))
    assert len(encoded) == size_of_varint(value) <= 10
    assert zigzag_decode(zigzag_encode(value)) == value
    assert zigzag_encode(value) >= 0


def _reference_unsigned(value: int) -> bytes:
    out = bytearray()
    while True:
        out.append((value & 0x7F) | (0x80 if value > 0x7F else 0))
        if value <= 0x7F:
            return bytes(out)
        value >>= 7


@pytest.mark.parametrize(
    "value",
    [
        *(0, 63, 64, -64, -65, 8191, 8192, -8192, -8193),
        *(1 << 20, (1 << 20) - 1, -(1 << 20), -(1 << 20) - 1, INT32_MAX, INT32_MIN),
    ],
)
def test_varints_at_each_length_boundary_match_the_byte_by_byte_encoding(value: int) -> None:
    # The encoder writes up to three bytes without its loop: the edges of each length.
    assert encode_varint(value) == _reference_unsigned(zigzag_encode(value))
    assert encode_varlong(value) == _reference_unsigned(zigzag_encode(value))


@given(st.integers(INT64_MIN, INT64_MAX))
def test_varlongs_match_the_byte_by_byte_encoding(value: int) -> None:
    assert encode_varlong(value) == _reference_unsigned(zigzag_encode(value))


def test_encode_record_varints_stay_right_past_the_cache_bound() -> None:
    """encode_record's varint caches are cleared when full: every length still encodes as
    encode_varint does, before and after a clear."""
    for size in (0, 1, 63, 64, 8191, 8192, 70_000, 1 << 20):
        value = bytes(size)
        record = encode_record(0, 0, None, value)
        body = b"\x00" + encode_varint(0) + encode_varint(0) + b"\x01"
        body += encode_varint(size) + value + b"\x00"
        assert record == encode_varint(len(body)) + body
    for length in range(40_000):  # more distinct lengths than the cache holds
        assert _VARINTS[length] == encode_varint(length)
    assert len(_VARINTS) <= 1 << 15
