"""The built-in uniform sticky partitioner of KIP-794, as pure logic (one per topic).

Records without a key (or every record, with ``partitioner_ignore_keys``) stick to one
partition until ``batch_size`` bytes have been produced to it, then switch. Switching by bytes
produced, not by batch creation, is what makes it *uniform*: the older sticky partitioner of
KIP-480 switched whenever a batch was created, so slow brokers, whose batches are created more
often, received more data, which slowed them further.

The next partition is chosen at random:

* uniformly among partitions with a known leader (or among all, if none has one), or
* with adaptive partitioning (``partitioner_adaptive_partitioning_enable``), weighted by the
  inverse of each partition's queue length, so partitions on faster brokers get more records.
  A partition with queue length ``q`` gets weight ``max_q + 1 - q``. Partitions whose leader
  has had data ready but not taken it for more than ``partitioner_availability_timeout_ms``
  are left out (0 disables this).

How the record accumulator drives it (Java's ``RecordAccumulator.append`` protocol):

1. ``sticky = partitioner.peek_current(cluster)``; lock that partition's queue;
2. if ``partitioner.is_partition_changed(sticky)`` another thread switched: unlock, retry;
3. append the record, then ``partitioner.update_partition_info(sticky, appended_bytes,
   cluster, enable_switch=<all batches in the queue are full>)``, still under the lock.
   Holding the switch back while the last batch is not full avoids leaving small fractional
   batches behind; the switch happens anyway at twice ``batch_size``.

and, in ``ready()``, reports each partition's queue with :meth:`update_load_stats`.

Randomness comes from an injected ``rng`` (``random.Random`` by default, one per instance), so
tests can fix it.
"""

from __future__ import annotations

import bisect
import itertools
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from kafkaline.producer.partitioner import ClusterPartitions

__all__ = [
    "BuiltInPartitioner",
    "PartitionLoadStats",
    "PartitionQueueState",
    "RandomRange",
    "StickyPartition",
]


class RandomRange(Protocol):
    """A source of uniform random integers in ``[0, stop)``; ``random.Random`` is one."""

    def randrange(self, stop: int, /) -> int: ...


@dataclass(frozen=True, slots=True)
class PartitionQueueState:
    """What ``ready()`` observed of one partition's queue, for adaptive partitioning."""

    partition: int
    #: Batches queued for the partition.
    queue_size: int
    #: Whether the partition's leader is known; partitions without one are never chosen.
    has_leader: bool = True
    #: How long the leader's node has had data ready to send without taking any (Java's
    #: ``readyTimeMs - drainTimeMs``).
    leader_stalled_ms: int = 0


class StickyPartition:
    """The current sticky partition and the bytes produced to it since it was chosen."""

    __slots__ = ("partition", "produced_bytes")

    def __init__(self, partition: int) -> None:
        self.partition = partition
        self.produced_bytes = 0

    def __repr__(self) -> str:
        return f"StickyPartition(partition={self.partition}, produced_bytes={self.produced_bytes})"


@dataclass(frozen=True, slots=True)
class PartitionLoadStats:
    """Cumulative weights for adaptive choice: a random ``r`` in ``[0, cumulative[-1])`` picks
    ``partitions[i]`` for the first ``i`` with ``cumulative[i] > r``.

    Queue lengths ``0 3 1`` give weights ``4 1 3`` and cumulative ``4 5 8``: random numbers
    0-3 pick the first partition, 4 the second, 5-7 the third.
    """

    cumulative: tuple[int, ...]
    partitions: tuple[int, ...]


class BuiltInPartitioner:
    """Sticky partition choice for one topic (Java's ``BuiltInPartitioner``).

    ``sticky_batch_size`` is how many bytes go to a partition before switching: the producer
    passes ``max(1, batch_size)``.

    >>> from kafkaline.producer.partitioner import StaticCluster
    >>> cluster = StaticCluster({"t": 4})
    >>> sticky_partitioner = BuiltInPartitioner("t", 100, rng=random.Random(7))
    >>> first = sticky_partitioner.peek_current(cluster)
    >>> sticky_partitioner.update_partition_info(first, 60, cluster)
    >>> sticky_partitioner.peek_current(cluster) is first  # 60 < 100 bytes: stays
    True
    >>> sticky_partitioner.update_partition_info(first, 60, cluster)
    >>> sticky_partitioner.is_partition_changed(first)  # 120 >= 100 bytes: switched
    True
    """

    __slots__ = (
        "_current",
        "_load_stats",
        "_rng",
        "adaptive",
        "availability_timeout_ms",
        "sticky_batch_size",
        "topic",
    )

    def __init__(
        self,
        topic: str,
        sticky_batch_size: int,
        *,
        adaptive: bool = True,
        availability_timeout_ms: int = 0,
        rng: RandomRange | None = None,
    ) -> None:
        if sticky_batch_size < 1:
            raise ValueError(f"sticky_batch_size must be >= 1, got {sticky_batch_size}")
        self.topic = topic
        self.sticky_batch_size = sticky_batch_size
        self.adaptive = adaptive
        self.availability_timeout_ms = availability_timeout_ms
        self._rng: RandomRange = rng if rng is not None else random.Random()
        self._current: StickyPartition | None = None
        self._load_stats: PartitionLoadStats | None = None

    @property
    def load_stats(self) -> PartitionLoadStats | None:
        """The weights in use, or ``None`` when choosing uniformly."""
        return self._load_stats

    # ----------------------------------------------------------------- sticky choice

    def peek_current(self, cluster: ClusterPartitions) -> StickyPartition:
        """The current sticky partition, choosing the first one if needed."""
        current = self._current
        if current is None:
            # Two threads may race here; the loser sees is_partition_changed() and retries.
            current = self._current = StickyPartition(self._next_partition(cluster))
        return current

    @property
    def current(self) -> StickyPartition | None:
        """The current sticky partition, or ``None`` before the first choice (see
        :meth:`peek_current`)."""
        return self._current

    def switch_due(self, sticky: StickyPartition, appended_bytes: int) -> bool:
        """Whether :meth:`update_partition_info` would switch partitions after
        ``appended_bytes`` more went to ``sticky`` in a batch that is not full afterwards
        (``enable_switch=False``: at twice ``sticky_batch_size``), or ``sticky`` is no longer
        current. When not, the caller may count the bytes into ``sticky.produced_bytes``
        itself, under the lock of ``sticky.partition``'s queue, instead of calling
        :meth:`update_partition_info` (which needs the cluster only to switch)."""
        return (
            sticky is not self._current
            or sticky.produced_bytes + appended_bytes >= 2 * self.sticky_batch_size
        )

    def is_partition_changed(self, sticky: StickyPartition) -> bool:
        """Whether ``sticky`` is no longer current (another append switched partitions)."""
        return self._current is not sticky

    def update_partition_info(
        self,
        sticky: StickyPartition,
        appended_bytes: int,
        cluster: ClusterPartitions,
        *,
        enable_switch: bool = True,
    ) -> None:
        """Count ``appended_bytes`` produced to ``sticky`` and switch partitions when due.

        Switches once ``sticky_batch_size`` bytes are produced if ``enable_switch``, and at
        twice that regardless. A ``sticky`` that is no longer current is ignored. Call under
        the lock of ``sticky.partition``'s queue.
        """
        if sticky is not self._current:
            return
        sticky.produced_bytes += appended_bytes
        produced = sticky.produced_bytes
        limit = self.sticky_batch_size
        if (produced >= limit and enable_switch) or produced >= 2 * limit:
            self._current = StickyPartition(self._next_partition(cluster))

    def _next_partition(self, cluster: ClusterPartitions) -> int:
        stats = self._load_stats
        if stats is None:
            available = cluster.available_partitions(self.topic)
            if available:
                return available[self._rng.randrange(len(available))]
            count = cluster.partition_count(self.topic)
            if count < 1:
                raise ValueError(f"topic {self.topic!r} has no partitions to choose from")
            return self._rng.randrange(count)
        weighted = self._rng.randrange(stats.cumulative[-1])
        return stats.partitions[bisect.bisect_right(stats.cumulative, weighted)]

    # ----------------------------------------------------------------- adaptive weights

    def update_load_stats(
        self, queues: Sequence[PartitionQueueState], partition_count: int
    ) -> None:
        """Recompute the adaptive weights from the queues ``ready()`` saw for this topic.

        ``queues`` has one entry per partition that has a queue (with a leader or not).
        Choice stays uniform (weights cleared) when adaptive partitioning is off, when not
        every partition has a queue yet (one without a queue could never be chosen), with
        fewer than two partitions, or when every queue is equally long and none is excluded.
        """
        if not self.adaptive or len(queues) < partition_count or len(queues) < 2:
            self._load_stats = None
            return
        timeout = self.availability_timeout_ms
        usable = [
            queue
            for queue in queues
            if queue.has_leader and not (timeout > 0 and queue.leader_stalled_ms > timeout)
        ]
        if not usable:
            self._load_stats = None
            return
        sizes = [queue.queue_size for queue in usable]
        longest = max(sizes)
        if len(usable) == len(queues) and min(sizes) == longest:
            self._load_stats = None
            return
        self._load_stats = PartitionLoadStats(
            cumulative=tuple(itertools.accumulate(longest + 1 - size for size in sizes)),
            partitions=tuple(queue.partition for queue in usable),
        )
