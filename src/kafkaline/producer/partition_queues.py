"""The accumulator's map of partition queues and the topics' sticky partitioners.

Each partition has a :class:`PartitionQueue`: its batches, oldest first, and one lock, as in
Java (with one accumulator lock the Sender's pass over all partitions would hold it, and an
appending thread would sleep until the pass ends). A queue is made once per partition, under
one lock, and never removed: the hot path looks it up in ``_queues`` without a lock, and
readers that go over all queues iterate the append-only lists of ``_queue_lists`` (a list,
unlike a dict, may grow while it is iterated). The compiled record core reads ``_queues``,
``_sticky``, a queue's ``lock`` and ``batches`` directly: their names and types are part of
its interface.
"""

from __future__ import annotations

import random
import threading
from collections import deque

from kafkaline.errors import IllegalStateError
from kafkaline.net.cluster import TopicPartition
from kafkaline.producer.batch import ProducerBatch
from kafkaline.producer.buffer_pool import new_lock
from kafkaline.producer.builtin_partitioner import BuiltInPartitioner, StickyPartition
from kafkaline.producer.partitioner import ClusterPartitions

__all__ = ["PartitionQueue", "QueueMap", "hold_memory", "insert_in_sequence_order"]


class PartitionQueue:
    """One partition's batches, oldest first, and the lock that guards them."""

    __slots__ = ("batches", "lock", "tp")

    def __init__(self, tp: TopicPartition) -> None:
        self.tp = tp
        self.batches: deque[ProducerBatch] = deque()
        # The compiled core's QueueLock (where it is in use), which its send() takes without
        # calling Python.
        self.lock = new_lock()


class QueueMap:
    """The part of :class:`~kafkaline.producer.accumulator.RecordAccumulator` that finds and
    makes partition queues and sticky partitioners; the accumulator sets the fields."""

    #: topic -> partition -> queue, for lookups. A new topic replaces the outer dict; a new
    #: queue goes into its topic's dict in place, under _queues_lock.
    _queues: dict[str, dict[int, PartitionQueue]]
    #: topic -> its queues in the order made, for readers that go over all of them (a new
    #: topic replaces the dict; a new queue is appended to its list).
    _queue_lists: dict[str, list[PartitionQueue]]
    #: How many queues were made: views cached by the Sender are made again when it changed.
    _queues_made: int
    _queues_lock: threading.Lock
    #: topic -> its built-in sticky partitioner; replaced, never changed in place.
    _sticky: dict[str, BuiltInPartitioner]
    _batch_size: int
    _adaptive: bool
    _availability_timeout_ms: float
    _rng: random.Random

    def _queue(self, topic: str, partition: int | None) -> PartitionQueue:
        """The partition's queue, created on first use."""
        if partition is None:  # pragma: no cover - callers resolve the partition first
            raise IllegalStateError("no partition chosen")
        partitions = self._queues.get(topic)
        if partitions is not None:
            queue = partitions.get(partition)
            if queue is not None:
                return queue
        with self._queues_lock:
            partitions = self._queues.get(topic)
            if partitions is None:
                partitions = {}
                self._queue_lists = {**self._queue_lists, topic: []}
                self._queues = {**self._queues, topic: partitions}
            queue = partitions.get(partition)
            if queue is None:
                # In place: a copy of the topic's dict per new queue is quadratic in partitions.
                queue = PartitionQueue(TopicPartition(topic, partition))
                self._queue_lists[topic].append(queue)
                partitions[partition] = queue
                self._queues_made += 1
            return queue

    def _existing_queue(self, tp: TopicPartition) -> PartitionQueue | None:
        partitions = self._queues.get(tp.topic)
        return None if partitions is None else partitions.get(tp.partition)

    def _sticky_partitioner(self, topic: str) -> BuiltInPartitioner:
        partitioner = self._sticky.get(topic)
        if partitioner is None:
            with self._queues_lock:
                partitioner = self._sticky.get(topic)
                if partitioner is None:
                    partitioner = BuiltInPartitioner(
                        topic,
                        max(1, self._batch_size),
                        adaptive=self._adaptive,
                        availability_timeout_ms=int(self._availability_timeout_ms),
                        rng=self._rng,
                    )
                    self._sticky = {**self._sticky, topic: partitioner}
        return partitioner

    @staticmethod
    def _sticky_changed(
        partitioner: BuiltInPartitioner | None, sticky: StickyPartition | None
    ) -> bool:
        return (
            partitioner is not None
            and sticky is not None
            and partitioner.is_partition_changed(sticky)
        )

    def _sticky_appended(
        self,
        queue: PartitionQueue,
        sticky: StickyPartition | None,
        record_size: int,
        cluster: ClusterPartitions | None,
    ) -> None:
        # Under the queue's lock, as KIP-794 requires. Switching waits until the last batch
        # is full, so no small batch is left behind (it happens anyway at 2x batch_size).
        if sticky is not None and cluster is not None:
            partitioner = self._sticky.get(queue.tp.topic)
            if partitioner is not None:
                batches = queue.batches
                all_full = not batches or batches[-1].is_full
                partitioner.update_partition_info(
                    sticky, record_size, cluster, enable_switch=all_full
                )

    def _take_queued_batches(self) -> list[ProducerBatch]:
        """Empty every partition queue (each under its lock), closing its batches for
        appends; return what was queued."""
        taken: list[ProducerBatch] = []
        for queues in self._queue_lists.values():
            for queue in queues:
                with queue.lock:
                    for batch in queue.batches:
                        batch.close_for_appends()
                    taken.extend(queue.batches)
                    queue.batches.clear()
        return taken

    def has_undrained(self) -> bool:
        """Whether any batch is queued (not yet taken by drain)."""
        # Loops rather than any() over a generator: the Sender asks after every drain.
        for queues in self._queue_lists.values():
            for queue in queues:
                if queue.batches:
                    return True
        return False

    def queue_sizes(self, topic: str) -> dict[int, int]:
        """Batches queued per partition of ``topic`` (partitions that had a queue)."""
        return {
            queue.tp.partition: len(queue.batches) for queue in self._queue_lists.get(topic, ())
        }

    def queued_bytes(self, tp: TopicPartition) -> int:
        """Estimated bytes queued for ``tp``."""
        queue = self._existing_queue(tp)
        if queue is None:
            return 0
        with queue.lock:
            return sum(batch.estimated_size_in_bytes for batch in queue.batches)

    def sticky_partitioner(self, topic: str) -> BuiltInPartitioner | None:
        """The built-in sticky partitioner of ``topic``, once a record without partition
        was appended to it."""
        return self._sticky.get(topic)


def hold_memory(batch: ProducerBatch, size: int) -> None:
    """Record that ``batch`` holds ``size`` bytes of buffer memory; the compiled core's
    open-batch appender keeps its appends within them."""
    batch.pooled_bytes = size
    batch.builder.memory_cap = size


def insert_in_sequence_order(batches: deque[ProducerBatch], batch: ProducerBatch) -> None:
    # Java's insertInSequenceOrder: batches answered out of order come back out of order,
    # and a retry must not go after a higher sequence (the broker would refuse it).
    index = 0
    for queued in batches:
        if not queued.has_sequence or queued.base_sequence > batch.base_sequence:
            break
        index += 1
    batches.insert(index, batch)
