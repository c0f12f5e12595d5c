"""Choosing a record's partition, as Java's ``KafkaProducer.partition()`` does.

For each record, in this order (:class:`PartitionSelector`):

1. an explicit ``partition`` is used as given (checked against the partition count);
2. else a custom :class:`Partitioner` decides (its answer is checked too);
3. else a record with a key (``key_bytes is not None``; an empty key counts) goes to
   ``to_positive(murmur2(key_bytes)) % partition_count`` over *all* partitions, available or
   not, exactly like Java and librdkafka's ``murmur2_random``;
4. else (no key, or ``partitioner_ignore_keys``) the selector answers ``None``: the record
   accumulator picks the partition with the uniform sticky partitioner of KIP-794
   (:mod:`kafkaline.producer.builtin_partitioner`).

Also here: :class:`RoundRobinPartitioner` (Java's), the :class:`ClusterPartitions` view of
the cluster that partitioners read, and :class:`StaticCluster`, a fixed view for tests.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, Protocol, runtime_checkable

from kafkaline.errors import InvalidPartitionError
from kafkaline.producer.murmur2 import murmur2, to_positive

__all__ = [
    "ClusterPartitions",
    "InvalidPartitionError",
    "KeyPartitionCache",
    "PartitionSelector",
    "Partitioner",
    "RoundRobinPartitioner",
    "StaticCluster",
    "murmur2",
    "partition_for_key",
    "partitioner_for_name",
    "to_positive",
    "validate_partition",
]


class ClusterPartitions(Protocol):
    """What partitioners need to know about the cluster: a topic's partitions.

    The producer's cluster metadata implements this; :class:`StaticCluster` is a fixed one.
    """

    def partition_count(self, topic: str) -> int:
        """Number of partitions of ``topic`` (partitions are ``0 .. count - 1``)."""
        ...

    def available_partitions(self, topic: str) -> Sequence[int]:
        """Partitions of ``topic`` whose leader is known, in ascending order."""
        ...


@dataclass(frozen=True, slots=True)
class StaticCluster:
    """A fixed :class:`ClusterPartitions`: partition counts per topic, all available unless
    listed in ``unavailable``.

    >>> cluster = StaticCluster({"events": 3}, unavailable={"events": frozenset({1})})
    >>> cluster.partition_count("events"), list(cluster.available_partitions("events"))
    (3, [0, 2])
    """

    partition_counts: Mapping[str, int]
    unavailable: Mapping[str, frozenset[int]] = field(default_factory=dict)

    def partition_count(self, topic: str) -> int:
        return self.partition_counts[topic]

    def available_partitions(self, topic: str) -> Sequence[int]:
        down = self.unavailable.get(topic, frozenset())
        return [p for p in range(self.partition_counts[topic]) if p not in down]


@runtime_checkable
class Partitioner(Protocol):
    """A custom partitioner, like Java's ``org.apache.kafka.clients.producer.Partitioner``.

    ``partition()`` is called for every record without an explicit partition, with the
    serialized key and value (``None`` when absent), and must return a partition in
    ``[0, cluster.partition_count(topic))``. ``close()`` is called when the producer closes.
    It may be called from several threads at once.
    """

    def partition(
        self,
        topic: str,
        key_bytes: bytes | None,
        value_bytes: bytes | None,
        cluster: ClusterPartitions,
    ) -> int: ...

    def close(self) -> None: ...


def validate_partition(topic: str, partition: int, partition_count: int, source: str) -> int:
    """Return ``partition`` if it is in ``[0, partition_count)``, else raise
    :class:`InvalidPartitionError` saying where the number came from (``source``).

    >>> validate_partition("events", 3, 3, "the record")
    Traceback (most recent call last):
    ...
    kafkaline.errors.InvalidPartitionError: partition 3 given by the record is \
not a partition of topic 'events', which has 3 partitions (0-2)
    """
    if type(partition) is not int or not 0 <= partition < partition_count:
        span = f"0-{partition_count - 1}" if partition_count > 0 else "none yet"
        raise InvalidPartitionError(
            f"partition {partition!r} given by {source} is not a partition of topic {topic!r}, "
            f"which has {partition_count} partitions ({span})"
        )
    return partition


def partition_for_key(key_bytes: bytes | bytearray | memoryview, partition_count: int) -> int:
    """Java's default keyed partition: ``to_positive(murmur2(key)) % partition_count``."""
    return to_positive(murmur2(key_bytes)) % partition_count


class KeyPartitionCache:
    """Keyed partitioning with a bounded memo of each key's hash.

    Pure-Python murmur2 costs more than a whole send() may, and a memo hit a tenth of it
    (docs/performance.md, "Notes moved from the code"). Real key sets are often small (user
    ids, device ids), so the hash of keys up to ``max_key_size`` bytes is remembered, for up to
    ``max_entries`` keys. When full, the memo is cleared rather than evicted one by one:
    ``dict.clear()`` is atomic under the GIL, so threads may share the cache without a lock,
    and a key set larger than the cache gains nothing from finer eviction anyway.

    >>> cache = KeyPartitionCache()
    >>> cache.partition_for_key(b"user-1", 12) == partition_for_key(b"user-1", 12)
    True
    """

    __slots__ = ("_hashes", "max_entries", "max_key_size")

    def __init__(self, max_entries: int = 8192, max_key_size: int = 128) -> None:
        self.max_entries = max_entries
        self.max_key_size = max_key_size
        self._hashes: dict[bytes, int] = {}

    @property
    def memo(self) -> Mapping[bytes, int]:
        """The memo itself, key -> ``to_positive(murmur2(key))``, for a lookup without a
        call (the producer's hot path). Read it, never write it; it is cleared, never
        replaced, so a reference stays current."""
        return self._hashes

    def partition_for_key(
        self, key_bytes: bytes | bytearray | memoryview, partition_count: int
    ) -> int:
        """``to_positive(murmur2(key_bytes)) % partition_count``, memoized for short keys."""
        hashes = self._hashes
        positive = hashes.get(key_bytes) if type(key_bytes) is bytes else None
        if positive is None:
            positive = murmur2(key_bytes) & 0x7FFFFFFF
            if type(key_bytes) is bytes and len(key_bytes) <= self.max_key_size:
                if len(hashes) >= self.max_entries:
                    hashes.clear()
                hashes[key_bytes] = positive
        return positive % partition_count

    def __len__(self) -> int:
        return len(self._hashes)


class RoundRobinPartitioner:
    """Java's ``RoundRobinPartitioner``: each record of a topic to the next partition, keys
    ignored; cycles over the available partitions, or over all of them when none is
    available.

    As in Java, the counter is per topic and shared by available and unavailable cycling.
    Every call advances it, so it must be called once per record: Java's uneven spread
    (KAFKA-9965) came from calling partitioners a second time when a new batch was created.

    >>> rr = RoundRobinPartitioner()
    >>> cluster = StaticCluster({"t": 3})
    >>> [rr.partition("t", None, None, cluster) for _ in range(4)]
    [0, 1, 2, 0]
    """

    def __init__(self) -> None:
        # next() on itertools.count is atomic under the GIL: no lock needed across threads.
        self._counters: dict[str, itertools.count[int]] = {}

    def partition(
        self,
        topic: str,
        key_bytes: bytes | None,
        value_bytes: bytes | None,
        cluster: ClusterPartitions,
    ) -> int:
        counter = self._counters.get(topic)
        if counter is None:
            counter = self._counters.setdefault(topic, itertools.count())
        step = to_positive(next(counter))
        available = cluster.available_partitions(topic)
        if available:
            return available[step % len(available)]
        return step % cluster.partition_count(topic)

    def close(self) -> None:
        """Nothing to release."""

    def __getstate__(self) -> dict[str, object]:
        # Counters restart in a copy (e.g. one shipped to a Spark executor); itertools.count
        # itself is not picklable from Python 3.14 on.
        return {}

    def __setstate__(self, state: dict[str, object]) -> None:
        self._counters = {}


class PartitionSelector:
    """Decides each record's partition in Java's order (see the module docstring).

    ``select()`` returns the partition, or ``None`` when the record accumulator's sticky
    partitioner should choose (keyless records, or every record with ``ignore_keys``).

    >>> selector = PartitionSelector()
    >>> cluster = StaticCluster({"events": 12})
    >>> selector.select("events", None, b"user-1", b"v", cluster) == partition_for_key(
    ...     b"user-1", 12)
    True
    >>> selector.select("events", None, None, b"v", cluster) is None
    True
    """

    __slots__ = ("_keys", "custom", "ignore_keys")

    def __init__(
        self,
        custom: Partitioner | None = None,
        *,
        ignore_keys: bool = False,
        key_cache: KeyPartitionCache | None = None,
    ) -> None:
        self.custom = custom
        self.ignore_keys = ignore_keys
        self._keys = key_cache if key_cache is not None else KeyPartitionCache()

    def select(
        self,
        topic: str,
        partition: int | None,
        key_bytes: bytes | None,
        value_bytes: bytes | None,
        cluster: ClusterPartitions,
    ) -> int | None:
        """The partition for a record, or ``None`` to let the sticky partitioner choose."""
        if partition is not None:
            return validate_partition(
                topic, partition, cluster.partition_count(topic), "the record"
            )
        if self.custom is not None:
            chosen = self.custom.partition(topic, key_bytes, value_bytes, cluster)
            return validate_partition(
                topic, chosen, cluster.partition_count(topic), f"partitioner {self.custom!r}"
            )
        if key_bytes is not None and not self.ignore_keys:
            return self._keys.partition_for_key(key_bytes, cluster.partition_count(topic))
        return None


# Java class names and short names users may give for partitioner.class in properties.
_PARTITIONERS_BY_NAME: Final[dict[str, type[RoundRobinPartitioner]]] = {
    "org.apache.kafka.clients.producer.RoundRobinPartitioner": RoundRobinPartitioner,
    "RoundRobinPartitioner": RoundRobinPartitioner,
    "round_robin": RoundRobinPartitioner,
}


def partitioner_for_name(name: str) -> Partitioner | None:
    """A partitioner from a ``partitioner.class`` property value; ``""`` means the built-in.

    Raises LookupError naming the known names otherwise.
    """
    if name == "":
        return None
    try:
        return _PARTITIONERS_BY_NAME[name]()
    except KeyError:
        known = ", ".join(repr(n) for n in _PARTITIONERS_BY_NAME)
        raise LookupError(
            f"unknown partitioner; known names: {known} (pass a Partitioner object for others)"
        ) from None
