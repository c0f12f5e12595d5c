"""The append side of the accumulator: one append protocol, shaped like Java's
``RecordAccumulator.append``, for a record, a run of records or an encoded chunk.

Try the partition's last batch under its lock; else take buffer memory from the pool with no
lock held (it may block) and, under the lock again, try the last batch once more (another
thread may have made one meanwhile) before queueing a new batch. A batch takes a few KiB of
buffer memory first and more as it fills, so the pool bounds the bytes batches hold.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from kafkaline.errors import IllegalStateError
from kafkaline.net.cluster import TopicPartition
from kafkaline.producer.accumulator_types import RecordAppendResult
from kafkaline.producer.batch import ProducerBatch
from kafkaline.producer.buffer_pool import BufferPool
from kafkaline.producer.builtin_partitioner import BuiltInPartitioner, StickyPartition
from kafkaline.producer.compression_ratio import CompressionRatioEstimator
from kafkaline.producer.partition_queues import PartitionQueue, QueueMap, hold_memory
from kafkaline.producer.partitioner import ClusterPartitions
from kafkaline.producer.pending_records import PendingRecords
from kafkaline.producer.transactions.idempotence import IdempotenceManager
from kafkaline.record import CompressionType, Headers, RecordBatchBuilder
from kafkaline.record.batch_format import BATCH_HEADER_SIZE

__all__ = ["FIRST_BATCH_MEMORY", "AppendSide"]

# A global for _new_batch: on Python 3.11 CompressionType.NONE goes through
# EnumType.__getattr__'s hook (see docs/performance.md, Notes moved from the code).
_NO_COMPRESSION = CompressionType.NONE
# What AppendSide._try_last reports besides the bytes to take from the pool first.
_APPENDED = 0
_FULL = -1
#: Buffer memory a new batch takes first (at most batch_size); it takes more as it fills.
FIRST_BATCH_MEMORY = 4096


class AppendSide(QueueMap):
    """The part of :class:`~kafkaline.producer.accumulator.RecordAccumulator` that appends
    records to batches; the accumulator sets the fields."""

    _pool: BufferPool
    _compression: CompressionType
    _compression_level: int | None
    _estimator: CompressionRatioEstimator
    _transaction_manager: IdempotenceManager | None
    _first_batch_memory: int
    # New batches that need no argument but their size (see _new_batch).
    _plain_batches: bool
    _closed: bool
    _incomplete: set[ProducerBatch]
    _incomplete_lock: threading.Lock

    def _append_records(
        self,
        topic: str,
        partition: int | None,
        records: PendingRecords,
        max_time_to_block_ms: float,
        now: float,
        cluster: ClusterPartitions | None,
        wakeup: Callable[[], None] | None = None,
        last_batch_full: bool = False,
    ) -> tuple[bool, bool]:
        """The one append protocol: try the partition's last batch; else take memory from
        the pool and try it again before queueing a new batch. With the sticky partitioner,
        start over if another thread switched partitions. Repeats until every record is
        queued, calling ``wakeup`` when a new batch queues behind another. Returns ``(a
        batch became sendable, a batch was made)``. ``last_batch_full``: the caller just
        found that the partition's last batch (if any) cannot take the records, so the
        first round starts at taking memory for a new batch."""
        partitioner: BuiltInPartitioner | None = None
        if partition is None:
            if cluster is None:
                raise ValueError("appending without a partition needs the cluster")
            partitioner = self._sticky_partitioner(topic)
        sendable = created = False
        pooled = 0  # taken from the pool, not yet held by a batch
        try:
            while not records.done:
                queue, sticky = self._round_queue(topic, partition, partitioner, cluster)
                tried = _FULL  # an empty queue has no last batch: no lock round
                if last_batch_full:
                    last_batch_full = False
                elif queue.batches:
                    with queue.lock:
                        if sticky is not None and self._sticky_changed(partitioner, sticky):
                            continue  # start over on the new sticky partition
                        tried, pooled = self._try_last(queue, records, pooled, sticky, cluster)
                        if tried <= 0 and (not records.done or len(queue.batches) > 1):
                            sendable = True  # the last batch filled, or has batches before it
                if records.done:
                    continue
                # Bytes for the last batch to take, or for a new batch: taken with no lock
                # held, as it may block until the Sender frees memory.
                want = tried if tried > 0 else self._first_reservation(topic, records)
                if pooled < want:
                    waited = self._pool.allocate(want - pooled, max_time_to_block_ms)
                    pooled, now = want, now + waited
                    max_time_to_block_ms = max(0.0, max_time_to_block_ms - waited)
                pooled, ready, made, behind = self._append_or_new_batch(
                    topic, queue, records, pooled, want, now, partitioner, sticky, cluster
                )
                sendable = sendable or ready
                created = created or made
                if behind and wakeup is not None:
                    wakeup()
        finally:
            if pooled:
                self._pool.deallocate(pooled)
        return sendable, created

    def _try_append_to_last(
        self,
        topic: str,
        partition: int,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        headers: Headers | None,
    ) -> RecordAppendResult | None:
        """The protocol's first step for one record with its partition, as Java's append
        begins (``tryAppend`` on the last batch): the partition's last batch takes the
        record if it already holds the buffer memory of its whole limit, as it does past
        its first few KiB. ``None`` for anything else (no batch, a full one, one that must
        take memory first), which :meth:`_append_records` then handles whole."""
        queue = self._queue(topic, partition)
        if not queue.batches:
            return None
        with queue.lock:
            batches = queue.batches
            if not batches:  # (the Sender may have drained it since)
                return None
            batch = batches[-1]
            if batch.pooled_bytes < batch.builder.appended_limit:
                return None
            future = batch.try_append(timestamp, key, value, headers)
            if future is None:
                return None
            # Batches before the last are ready to send: the caller wakes the Sender.
            return future, len(batches) > 1, False

    def _round_queue(
        self,
        topic: str,
        partition: int | None,
        partitioner: BuiltInPartitioner | None,
        cluster: ClusterPartitions | None,
    ) -> tuple[PartitionQueue, StickyPartition | None]:
        """The queue an append round works on: the record's partition's, or (with the sticky
        partitioner) its current partition's, with that choice to check under the lock."""
        if partitioner is None or cluster is None:
            return self._queue(topic, partition), None
        sticky = partitioner.peek_current(cluster)
        return self._queue(topic, sticky.partition), sticky

    def _append_or_new_batch(
        self,
        topic: str,
        queue: PartitionQueue,
        records: PendingRecords,
        pooled: int,
        want: int,
        now: float,
        partitioner: BuiltInPartitioner | None,
        sticky: StickyPartition | None,
        cluster: ClusterPartitions | None,
    ) -> tuple[int, bool, bool, bool]:
        """The protocol's second step, ``pooled`` bytes in hand, under the queue's lock: the
        last batch again (another thread may have made one), else a new batch. Returns
        ``(pooled left, a batch became sendable, a batch was made, it queued behind another)``
        (a batch behind another makes that one ready: the caller may wake the Sender)."""
        with queue.lock:
            if sticky is not None and self._sticky_changed(partitioner, sticky):
                return pooled, False, False, False
            if self._closed:
                raise records.closed_error()
            # An empty queue has no last batch to try, a full one (what sent the records
            # here, often) takes nothing.
            tried = _FULL
            if queue.batches and not queue.batches[-1].builder.is_full:
                tried, pooled = self._try_last(queue, records, pooled, sticky, cluster)
            if tried != _FULL or (
                pooled < want and pooled < self._first_reservation(topic, records)
            ):
                # Appended, or more memory is needed first.
                return pooled, tried == _APPENDED and len(queue.batches) > 1, False, False
            # A new batch, filled before it is queued so the Sender never sees it empty.
            batch = self._new_batch(queue.tp, now)
            hold_memory(batch, pooled)
            appended = records.append_to(batch)
            if appended is None:  # pragma: no cover - an empty batch takes a record
                raise IllegalStateError("a record did not fit an empty batch")
            if records.fills_batch and records.done:
                self._give_back_unused(batch)
            queue.batches.append(batch)
            with self._incomplete_lock:
                self._incomplete.add(batch)
            if sticky is not None:
                self._sticky_appended(queue, sticky, appended, cluster)
            behind = len(queue.batches) > 1
            # The batch holds the memory now, until it is deallocated.
            return 0, behind or batch.is_full, True, behind

    def _try_last(
        self,
        queue: PartitionQueue,
        records: PendingRecords,
        pooled: int,
        sticky: StickyPartition | None,
        cluster: ClusterPartitions | None,
    ) -> tuple[int, int]:
        """Java's ``tryAppend``, under the queue's lock: as many records as fit into the
        queue's last batch, which first takes the buffer memory they need (from ``pooled``,
        the caller's, or from the pool if free now). Returns ``(_APPENDED, pooled left)``;
        ``(_FULL, pooled)`` when there is no last batch or it took nothing; or ``(bytes,
        pooled)``: take that much from the pool first, then try again."""
        if not queue.batches:  # (the Sender may have drained it since the caller looked)
            return _FULL, pooled
        batch = queue.batches[-1]
        held = batch.pooled_bytes
        # Past its first few KiB a batch holds its whole limit: most records need no more.
        extra = 0 if held >= batch.builder.appended_limit else self._memory_needed(batch, records)
        if extra:
            if batch.builder.is_full:  # no memory for a batch that takes nothing more
                return _FULL, pooled
            if extra > pooled:
                if not self._pool.try_allocate(extra - pooled):
                    return extra, pooled
                pooled = extra
            pooled -= extra
            hold_memory(batch, held + extra)
        appended = records.append_to(batch)
        if appended is None:
            if extra:  # not needed after all: the caller's, for a new batch
                hold_memory(batch, held)
                pooled += extra
            return _FULL, pooled
        if records.fills_batch and records.done:
            self._give_back_unused(batch)
        if sticky is not None:
            self._sticky_appended(queue, sticky, appended, cluster)
        return _APPENDED, pooled

    # ------------------------------------------------------------------ buffer memory

    def _first_reservation(self, topic: str, records: PendingRecords) -> int:
        """Buffer memory a new batch takes for ``records``: a few KiB (it takes more as it
        fills), or its whole limit when a run of records may fill it (the unused part is
        given back) or the records outgrow the few KiB, as :meth:`_memory_needed` has a
        batch do when it outgrows them (Java takes the whole batch size for every batch)."""
        bound = records.size_bound()
        if not records.fills_batch and bound <= self._first_batch_memory:
            return self._first_batch_memory
        limit = self._batch_size
        if self._compression is not _NO_COMPRESSION:
            ratio = self._estimator.estimate(topic)
            limit = BATCH_HEADER_SIZE + RecordBatchBuilder.records_room(limit, ratio)
        if not records.fills_batch and limit > self._pool.total_memory:
            return bound  # the whole limit could never be free: what the records need
        return max(limit, bound)

    def _memory_needed(self, batch: ProducerBatch, records: PendingRecords) -> int:
        """Bytes of buffer memory ``batch`` must take more before ``records`` go into it. A
        batch that outgrows its first few KiB takes its whole limit at once: a batch with
        more records than that is likely to fill, and every trip to the pool is a call of
        the compiled appender that ends in append() (see docs/performance.md). Split batches
        are outside the pool, as in Java."""
        if batch.is_split_batch:
            return 0
        builder = batch.builder
        limit = builder.appended_limit
        held = batch.pooled_bytes
        pool = self._pool
        if records.fills_batch:
            need = limit
        else:
            need = min(builder.appended_size + records.size_bound() - BATCH_HEADER_SIZE, limit)
        if need <= held:
            return 0
        if limit - held > pool.total_memory:
            return need - held  # the whole limit could never be free: what the records need
        return max(need, limit) - held

    def _take_memory_now(self, batch: ProducerBatch, size: int) -> bool:
        """Let ``batch`` hold the memory for ``size`` bytes more if the pool has it free now
        (no wait under a queue's lock); whether it does."""
        extra = batch.builder.appended_size + size - batch.pooled_bytes
        if batch.is_split_batch or extra <= 0:
            return True
        if not self._pool.try_allocate(extra):
            return False
        hold_memory(batch, batch.pooled_bytes + extra)
        return True

    def _give_back_unused(self, batch: ProducerBatch) -> None:
        """A run of records ended in ``batch``: if not full, it gives back what its records
        do not use."""
        unused = batch.pooled_bytes - batch.builder.appended_size
        if unused > 0 and not batch.is_full and not batch.is_split_batch:
            hold_memory(batch, batch.pooled_bytes - unused)
            self._pool.deallocate(unused)

    def _new_batch(self, tp: TopicPartition, now: float) -> ProducerBatch:
        if self._plain_batches:
            # Positional, the rest left to the defaults: no keyword dict to build and unpack.
            return ProducerBatch(tp, now, self._batch_size)
        compressed = self._compression is not _NO_COMPRESSION
        return ProducerBatch(
            tp,
            created_ms=now,
            batch_size=self._batch_size,
            compression=self._compression,
            compression_level=self._compression_level,
            estimated_compression_ratio=self._estimator.estimate(tp.topic) if compressed else 1.0,
            is_transactional=(
                self._transaction_manager is not None and self._transaction_manager.is_transactional
            ),
        )
