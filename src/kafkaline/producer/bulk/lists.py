"""send_batch()'s checks and grouping over Python lists: bytes or None per record (errors
naming the index), the sizes that bound a call's records, and the input positions per
partition. The reference for the compiled core's ``lists_accepted`` and
``group_positions``, and the path for lists the core does not take whole."""

from __future__ import annotations

from collections.abc import Sequence, Sized
from operator import countOf
from typing import cast

__all__ = [
    "as_bytes_column",
    "check_lengths",
    "group_by_partition",
    "longest",
]

_BYTES_OR_NONE = frozenset({bytes, type(None)})


def group_by_partition(
    chosen: Sequence[int], partition_count: int
) -> list[tuple[int | None, list[int]]]:
    """The input positions per partition, in input order, for the partitions chosen per record
    (``-1``: no key, the sticky partitioner's; its group has partition ``None``). Partitions
    without records are left out.

    >>> group_by_partition([2, 0, 2, -1], 3)
    [(0, [1]), (2, [0, 2]), (None, [3])]
    """
    # One Python loop over the records: the cheapest grouping measured (docs/performance.md).
    buckets: list[list[int]] = [[] for _ in range(partition_count + 1)]  # [-1]: sticky
    appenders = [bucket.append for bucket in buckets]
    for position, partition in enumerate(chosen):
        appenders[partition](position)
    return [
        (None if partition == partition_count else partition, bucket)
        for partition, bucket in enumerate(buckets)
        if bucket
    ]


def as_bytes_column(items: Sequence[object], role: str) -> list[bytes | None]:
    """``items`` as bytes or None (bytearray and memoryview copied); a TypeError names the
    first bad index and its type."""
    # All bytes (the common case): the types counted (an identity test each), without
    # building a list or a set of them (docs/performance.md).
    if countOf(map(type, items), bytes) == len(items) or set(map(type, items)) <= _BYTES_OR_NONE:
        return cast("list[bytes | None]", items if isinstance(items, list) else list(items))
    converted: list[bytes | None] = []
    for index, item in enumerate(items):
        if item is None or type(item) is bytes:
            converted.append(item)
        elif isinstance(item, (bytes, bytearray, memoryview)):
            converted.append(bytes(item))
        else:
            raise TypeError(
                f"{role}[{index}] is of type {type(item).__name__}: it must be bytes or None "
                f"(or set {role.rstrip('s')}_serializer)"
            )
    return converted


def longest(items: Sequence[bytes | None]) -> int:
    """The largest size of ``items`` (0 if none; nulls count 0)."""
    return max(map(len, filter(None, items)), default=0)


def check_lengths(count: int, keys: Sized | None, headers: Sized | None) -> None:
    """ValueError unless ``keys`` and ``headers`` (if given) have one entry per value."""
    if keys is not None and len(keys) != count:
        raise ValueError(f"send_batch() got {len(keys)} keys for {count} values")
    if headers is not None and len(headers) != count:
        raise ValueError(f"send_batch() got {len(headers)} headers for {count} values")
