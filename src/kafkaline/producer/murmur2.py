"""Kafka's murmur2 hash, bit for bit as Java's ``Utils.murmur2``.

This is the hash behind the default keyed partitioning of the Java client (and of librdkafka's
``murmur2_random``), so keyed records land in the same partition whichever of these clients
wrote them. It is MurmurHash2 (32-bit) with Kafka's seed ``0x9747b28c``, reading the input as
little-endian 32-bit words, and returns a *signed* 32-bit int like Java does::

    >>> murmur2(b"21")
    -973932308
    >>> to_positive(murmur2(b"")) % 1000  # an empty key is hashed too
    681

Pure Python costs microseconds per key (see ``partitioner.KeyPartitionCache`` for the cache
that keeps the keyed send path fast).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Final

__all__ = ["murmur2", "partitions_of_many", "to_positive"]

_SEED: Final = 0x9747B28C
_M: Final = 0x5BD1E995
_MASK: Final = 0xFFFFFFFF
_unpack_from = struct.unpack_from
# Precompiled little-endian word readers for keys up to 128 bytes: building the format and
# looking it up in struct's cache each call was a sixth of a short key's hash
# (docs/performance.md, "Notes moved from the code").
_WORD_READERS: Final = tuple(struct.Struct(f"<{n}I").unpack_from for n in range(33))


def murmur2(data: bytes | bytearray | memoryview) -> int:
    """The murmur2 hash of ``data`` as a signed 32-bit int (Java's ``Utils.murmur2``)."""
    length = len(data)
    h = (_SEED ^ length) & _MASK
    words = length >> 2
    if words:
        # One C-level unpack of every whole word rather than indexing byte by byte
        # (docs/performance.md, "Notes moved from the code"). Each step is Java's
        # k *= m; k ^= k >>> 24; k *= m; h *= m; h ^= k, masked to 32 bits.
        unpacked = _WORD_READERS[words](data) if words <= 32 else _unpack_from(f"<{words}I", data)
        for k in unpacked:
            k = k * _M & _MASK
            h = (h * _M ^ (k ^ k >> 24) * _M) & _MASK
    tail = length & 3
    if tail:
        i = words << 2
        if tail == 3:
            h ^= data[i + 2] << 16
        if tail >= 2:
            h ^= data[i + 1] << 8
        h = (h ^ data[i]) * _M & _MASK
    h ^= h >> 13
    h = h * _M & _MASK
    h ^= h >> 15
    return h - 0x100000000 if h & 0x80000000 else h


def to_positive(number: int) -> int:
    """Java's ``Utils.toPositive``: clear the sign bit (``& 0x7fffffff``), not ``abs()``."""
    return number & 0x7FFFFFFF


#: Fewer keys of one length than this are hashed one by one (the lanes' setup costs more).
_MANY_MIN_KEYS = 16
#: Partition counts up to this are taken out of the lanes as 16-bit numbers.
_MANY_MAX_PARTITIONS = 1 << 16
_LANE_BYTES = 8
_LANE_ONE = b"\x01" + bytes(_LANE_BYTES - 1)


def partitions_of_many(keys: Sequence[bytes], partition_count: int) -> list[int]:
    """``to_positive(murmur2(key)) % partition_count`` (Java's keyed partition) of every key
    (bytes), in order, for many keys at once.

    Keys of one length are hashed together, each key in a 64-bit lane of one big Python int,
    so that every step of the hash (32-bit arithmetic) is one C-level operation over all of
    them: a lane holds any product of two 32-bit values, and masking every lane after a
    shift drops what came in from the next lane. The modulo is a multiplication by a
    reciprocal (exact for 31-bit dividends), lane-parallel too: much cheaper per key than
    :func:`murmur2` and the modulo one key at a time (docs/performance.md, "Notes moved from
    the code", has the figures).

    >>> partitions_of_many([b"21", b"abc"] * 10, 1000)[:2] == [
    ...     to_positive(murmur2(b"21")) % 1000, 479470107 % 1000]
    True
    """
    count = len(keys)
    if partition_count > _MANY_MAX_PARTITIONS or count < _MANY_MIN_KEYS:
        return [(murmur2(key) & 0x7FFFFFFF) % partition_count for key in keys]
    lengths = set(map(len, keys))
    if len(lengths) == 1:
        return _partitions_in_lanes(keys, lengths.pop(), partition_count)
    by_length: dict[int, list[int]] = {}
    for index, key in enumerate(keys):
        by_length.setdefault(len(key), []).append(index)
    out = [0] * count
    for length, indexes in by_length.items():
        same = [keys[index] for index in indexes]
        if len(same) < _MANY_MIN_KEYS:
            found = [(murmur2(key) & 0x7FFFFFFF) % partition_count for key in same]
        else:
            found = _partitions_in_lanes(same, length, partition_count)
        for index, partition in zip(indexes, found, strict=True):
            out[index] = partition
    return out


def _partitions_in_lanes(keys: Sequence[bytes], length: int, partition_count: int) -> list[int]:
    """:func:`partitions_of_many` of keys all ``length`` bytes long, lane-parallel."""
    count = len(keys)
    joined = b"".join(keys)
    ones = int.from_bytes(_LANE_ONE * count, "little")  # 1 in every lane
    low = _MASK * ones  # the low 32 bits of every lane

    def lanes(offset: int, width: int) -> int:
        # Bytes offset..offset+width-1 of every key, as the low bytes of its lane.
        buffer = bytearray(_LANE_BYTES * count)
        for byte in range(width):
            buffer[byte::_LANE_BYTES] = joined[offset + byte :: length]
        return int.from_bytes(buffer, "little")

    # Java's murmur2 (see murmur2()), every lane at once.
    h = ((_SEED ^ length) & _MASK) * ones
    for word in range(length >> 2):
        k = lanes(word * 4, 4) * _M & low
        k ^= k >> 24 & low
        k = k * _M & low
        h = (h * _M & low) ^ k
    tail = length & 3
    if tail:
        h = (h ^ lanes(length - tail, tail)) * _M & low
    h ^= h >> 13 & low
    h = h * _M & low
    h ^= h >> 15 & low
    h &= 0x7FFFFFFF * ones  # to_positive: 31 bits
    remainders = _lane_remainders(h, ones, partition_count)
    # Partitions fit 16 bits: the low two bytes of every lane.
    lanes_bytes = remainders.to_bytes(_LANE_BYTES * count, "little")
    return memoryview(lanes_bytes).cast("H")[0 :: _LANE_BYTES // 2].tolist()


def _lane_remainders(h: int, ones: int, divisor: int) -> int:
    """Every 64-bit lane of ``h`` (each a 31-bit number) modulo ``divisor`` (at most
    2**16), lane-parallel: ``h - divisor * (h * m >> shift)``. With ``l`` bits for the
    divisor, ``shift = 31 + l`` and ``m = ceil(2**shift / divisor)`` (at most 2**32) the
    quotient is exact for every 31-bit dividend (Granlund and Montgomery, "Division by
    invariant integers using multiplication", 1994), ``h * m`` fits its lane (< 2**63), and
    the bits the shift brings in from the next lane land at bit ``33 - l`` or higher, above
    the quotient's ``32 - l`` bits. No lane borrows from the next: each result is its own
    lane's remainder."""
    bits = (divisor - 1).bit_length()
    shift = 31 + bits
    multiplier = -(-(1 << shift) // divisor)
    quotient = h * multiplier >> shift & ((1 << (33 - bits)) - 1) * ones
    return h - quotient * divisor
