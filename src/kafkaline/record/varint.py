"""Zigzag varints, as record batch v2 uses them for every per-record length and delta.

Kafka writes signed integers as zigzag-encoded base-128 varints (protobuf's ``sint32`` /
``sint64``): ``zigzag(n) = (n << 1) ^ (n >> 63)`` maps 0, -1, 1, -2 ... to 0, 1, 2, 3 ...,
then each 7-bit group goes out low group first, with the high bit set on all bytes but the
last. A varint holds an int32 (at most 5 bytes), a varlong an int64 (at most 10 bytes).
"""

from __future__ import annotations

from kafkaline.errors import CorruptRecordError

INT32_MIN = -(1 << 31)
INT32_MAX = (1 << 31) - 1
INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1

_MAX_VARINT_BYTES = 5
_MAX_VARLONG_BYTES = 10


def zigzag_encode(value: int) -> int:
    """Map a signed int64 to an unsigned one so that small magnitudes stay small."""
    return (value << 1) ^ (value >> 63)


def zigzag_decode(value: int) -> int:
    """Inverse of :func:`zigzag_encode`."""
    return (value >> 1) ^ -(value & 1)


#: One-byte varints, made once: the most common encoding is a lookup.
_ONE_BYTE = tuple(bytes((n,)) for n in range(0x80))


def _encode_unsigned(value: int) -> bytes:
    # Up to three bytes (lengths below 1 MiB: the general encoder's usual fields) without the
    # loop: a 10 KB record's lengths all take this way.
    if value < 0x80:
        return _ONE_BYTE[value]
    if value < 0x4000:
        return bytes(((value & 0x7F) | 0x80, value >> 7))
    if value < 0x200000:
        return bytes(((value & 0x7F) | 0x80, ((value >> 7) & 0x7F) | 0x80, value >> 14))
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def encode_varint(value: int) -> bytes:
    """Encode a signed int32 as a zigzag varint.

    >>> encode_varint(-1), encode_varint(64)
    (b'\\x01', b'\\x80\\x01')
    """
    if not INT32_MIN <= value <= INT32_MAX:
        raise ValueError(f"varint value {value} is outside the int32 range")
    return _encode_unsigned(zigzag_encode(value))


def encode_varlong(value: int) -> bytes:
    """Encode a signed int64 as a zigzag varlong."""
    if not INT64_MIN <= value <= INT64_MAX:
        raise ValueError(f"varlong value {value} is outside the int64 range")
    return _encode_unsigned(zigzag_encode(value))


def size_of_varint(value: int) -> int:
    """Number of bytes :func:`encode_varint` / :func:`encode_varlong` writes for ``value``."""
    # Each byte carries 7 bits; zero still takes one byte.
    return max(1, (zigzag_encode(value).bit_length() + 6) // 7)


def _decode_unsigned(data: bytes, pos: int, max_bytes: int) -> tuple[int, int]:
    result = 0
    shift = 0
    end = len(data)
    for _ in range(max_bytes):
        if pos >= end:
            raise CorruptRecordError(f"varint truncated at byte {pos}")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7
    raise CorruptRecordError(f"varint longer than {max_bytes} bytes ending at byte {pos}")


def decode_varint(data: bytes, pos: int) -> tuple[int, int]:
    """Decode a zigzag varint (int32) at ``pos``; return ``(value, position after it)``.

    Raises :class:`CorruptRecordError` when the bytes run out, the varint is longer than five
    bytes, or its value does not fit an int32.
    """
    # One and two bytes inline: every length and delta of a record under 8 KiB.
    if pos + 1 < len(data):
        first = data[pos]
        if first < 0x80:
            return (first >> 1) ^ -(first & 1), pos + 1
        second = data[pos + 1]
        if second < 0x80:
            raw = (first & 0x7F) | (second << 7)
            return (raw >> 1) ^ -(raw & 1), pos + 2
    raw, pos = _decode_unsigned(data, pos, _MAX_VARINT_BYTES)
    if raw >> 32:
        raise CorruptRecordError(f"varint ending at byte {pos} overflows int32")
    return (raw >> 1) ^ -(raw & 1), pos


def decode_varlong(data: bytes, pos: int) -> tuple[int, int]:
    """Decode a zigzag varlong (int64) at ``pos``; return ``(value, position after it)``."""
    if pos + 1 < len(data):
        first = data[pos]
        if first < 0x80:
            return (first >> 1) ^ -(first & 1), pos + 1
        second = data[pos + 1]
        if second < 0x80:
            raw = (first & 0x7F) | (second << 7)
            return (raw >> 1) ^ -(raw & 1), pos + 2
    raw, pos = _decode_unsigned(data, pos, _MAX_VARLONG_BYTES)
    if raw >> 64:
        raise CorruptRecordError(f"varlong ending at byte {pos} overflows int64")
    return (raw >> 1) ^ -(raw & 1), pos
