"""Bulk append of records that encode themselves (``send_arrow()``'s path): each partition's
open batch is held while a source encodes the records of every partition in one vectorised
pass, then filled; the rest go into new batches through the one append protocol."""

from __future__ import annotations

from collections.abc import Callable

from kafkaline.errors import IllegalStateError
from kafkaline.producer.accumulator_append import AppendSide
from kafkaline.producer.accumulator_types import EncodedRecordSource, EncodedRun, OpenBatch
from kafkaline.producer.batch import ProducerBatch
from kafkaline.producer.builtin_partitioner import BuiltInPartitioner, StickyPartition
from kafkaline.producer.partition_queues import PartitionQueue
from kafkaline.producer.partitioner import ClusterPartitions
from kafkaline.producer.pending_records import EncodedChunk, EncodedRecords
from kafkaline.record import CompressionType, RecordBatchBuilder
from kafkaline.record.batch_format import BATCH_HEADER_SIZE

__all__ = ["EncodedAppendSide"]


class _EncodedPlan:
    """append_encoded()'s view of one group before encoding: its queue, sticky partition,
    and the open batch (held while ``held``) with the state its records are encoded for."""

    __slots__ = ("group", "held", "open_batch", "queue", "state", "sticky")

    def __init__(
        self,
        group: int,
        queue: PartitionQueue,
        sticky: StickyPartition | None,
        open_batch: ProducerBatch | None,
        state: OpenBatch | None,
    ) -> None:
        self.group = group
        self.queue = queue
        self.sticky = sticky
        self.open_batch = open_batch
        self.state = state
        self.held = open_batch is not None


class EncodedAppendSide(AppendSide):
    """The part of :class:`~kafkaline.producer.accumulator.RecordAccumulator` that appends
    encoded bulk records (:meth:`append_encoded`)."""

    def append_encoded(
        self,
        topic: str,
        source: EncodedRecordSource,
        max_time_to_block_ms: float = 0.0,
        now: float = 0.0,
        cluster: ClusterPartitions | None = None,
        wakeup: Callable[[], None] | None = None,
        into: list[EncodedRun] | None = None,
    ) -> tuple[list[EncodedRun], bool]:
        """Bulk append of records that encode themselves (``send_arrow()``'s path): fill each
        group's open batch, then queue new batches of whole encoded chunks; return ``(runs,
        wake_sender)``. Memory, blocking and sticky partitions are as in :meth:`append_many`;
        ``wakeup`` is called for a batch made sendable only once half of the buffer memory is
        in use (the caller wakes the Sender after the call).

        All groups are encoded in one call to the source (one vectorised pass), with the
        state of each partition's open batch read under its lock; that batch is held
        meanwhile (``ready()`` and ``drain()`` skip it) and let go as soon as it is filled,
        before any new batch waits for memory. Appending to it checks under the lock that
        nothing changed meanwhile, else (another thread appended) the group is encoded again
        for new batches only. ``into``, if given, is the runs list (so that a caller sees
        what was queued when this raises).
        """
        groups = source.groups
        sticky_partitioner: BuiltInPartitioner | None = None
        if any(partition is None for partition, _, _ in groups):
            if cluster is None:
                raise ValueError("append_encoded() without a partition needs the cluster")
            sticky_partitioner = self._sticky_partitioner(topic)
        plans: list[_EncodedPlan] = []  # each group as seen before encoding
        try:
            for index, (partition, _, _) in enumerate(groups):
                sticky: StickyPartition | None = None
                if partition is None and sticky_partitioner is not None and cluster is not None:
                    sticky = sticky_partitioner.peek_current(cluster)
                    partition = sticky.partition
                plans.append(self._hold_open_batch(index, self._queue(topic, partition), sticky))
            return self._append_encoded_plans(
                topic, source, plans, sticky_partitioner, cluster,
                max_time_to_block_ms, now, wakeup, [] if into is None else into,
            )  # fmt: skip
        finally:
            # Normally released already; here after an error (the records are not queued),
            # and then the Sender, which skipped these batches, is woken to look again.
            released = [self._release_hold(plan) for plan in plans]
            if any(released) and wakeup is not None:
                wakeup()

    @staticmethod
    def _hold_open_batch(
        group: int, queue: PartitionQueue, sticky: StickyPartition | None
    ) -> _EncodedPlan:
        """The group's plan: its queue's open batch (if any, with room) held, so the Sender
        leaves it queued while records are encoded for it (unheld, it was often drained
        meanwhile and the records encoded again: docs/performance.md, "Notes moved from the
        code")."""
        with queue.lock:
            if queue.batches:
                last = queue.batches[-1]
                found = last.builder.open_state()
                if found is not None and found[0] > 0:
                    last.held_by_appenders += 1
                    return _EncodedPlan(group, queue, sticky, last, OpenBatch(*found))
        return _EncodedPlan(group, queue, sticky, None, None)

    @staticmethod
    def _release_hold(plan: _EncodedPlan) -> bool:
        """Let the Sender take the plan's open batch again (once; under its queue's lock);
        return whether this call released it."""
        if plan.held:
            with plan.queue.lock:
                if plan.held and plan.open_batch is not None:
                    plan.open_batch.held_by_appenders -= 1
                    plan.held = False
                    return True
        return False

    def _append_encoded_plans(
        self,
        topic: str,
        source: EncodedRecordSource,
        plans: list[_EncodedPlan],
        sticky_partitioner: BuiltInPartitioner | None,
        cluster: ClusterPartitions | None,
        max_time_to_block_ms: float,
        now: float,
        wakeup: Callable[[], None] | None,
        runs: list[EncodedRun],
    ) -> tuple[list[EncodedRun], bool]:
        """:meth:`append_encoded` once the open batches are held: encode; fill the open
        batches and let the Sender have them (before any wait for memory, which only the
        Sender can free); then queue a new batch per chunk, each partition's after its open
        one, through the one append protocol."""
        groups = source.groups
        compressed = self._compression is not CompressionType.NONE
        fresh_room = RecordBatchBuilder.records_room(
            max(self._batch_size, BATCH_HEADER_SIZE + 1),
            self._estimator.estimate(topic) if compressed else 1.0,
        )
        encoded = source.encode([(plan.group, plan.state) for plan in plans], fresh_room)
        # A held batch the Sender skipped may be due now: the caller wakes the Sender.
        wake = any(plan.held for plan in plans)
        again: list[int] = []  # plans whose open batch changed: encoded again for new batches
        queued = 0
        for number, (plan, chunks) in enumerate(zip(plans, encoded, strict=True)):
            filled = self._fill_held_batch(plan, chunks, sticky_partitioner, cluster, runs)
            if filled is None:
                again.append(number)
            elif filled:
                encoded[number] = chunks[1:]
                queued += chunks[0].record_count
                wake = wake or (plan.open_batch is not None and plan.open_batch.is_full)
        if again:
            fresh = source.encode([(plans[number].group, None) for number in again], fresh_room)
            for number, chunks in zip(again, fresh, strict=True):
                encoded[number] = chunks
        total = sum(stop - start for _, start, stop in groups)
        wake_if_short = None if wakeup is None else self._wakeup_when_memory_short(wakeup)
        for plan, chunks in zip(plans, encoded, strict=True):
            partition = None if groups[plan.group][0] is None else plan.queue.tp.partition
            for chunk in chunks:
                records = EncodedRecords(chunk, (queued, total))
                self._append_records(
                    topic, partition, records, max_time_to_block_ms, now, cluster, wake_if_short
                )
                if records.result is None:  # pragma: no cover - appended or raised
                    raise IllegalStateError("an encoded chunk was not appended")
                runs.append((records.result, 0, chunk.start, chunk.record_count))
                queued += chunk.record_count
                wake = True
        return runs, wake

    def _fill_held_batch(
        self,
        plan: _EncodedPlan,
        chunks: list[EncodedChunk],
        sticky_partitioner: BuiltInPartitioner | None,
        cluster: ClusterPartitions | None,
        runs: list[EncodedRun],
    ) -> bool | None:
        """Append the chunk encoded for the plan's held open batch (if any), when nothing
        changed since (else ``None``: encode again); then release the hold."""
        open_batch, state, queue, sticky = plan.open_batch, plan.state, plan.queue, plan.sticky
        if not (
            chunks and chunks[0].continues_open and open_batch is not None and state is not None
        ):
            self._release_hold(plan)
            return False
        first = chunks[0]
        with queue.lock:
            unchanged = (
                queue.batches
                and queue.batches[-1] is open_batch
                and open_batch.builder.open_state() == tuple(state)
                and not (sticky is not None and self._sticky_changed(sticky_partitioner, sticky))
                and self._take_memory_now(open_batch, first.size)
            )
            if unchanged:
                open_batch.builder.append_encoded(
                    first.records, first.record_count, first.first_timestamp, first.max_timestamp
                )
                runs.append(
                    (open_batch.result, state.first_offset_delta, first.start, first.record_count)
                )
                self._sticky_appended(queue, sticky, first.size, cluster)
        self._release_hold(plan)
        return True if unchanged else None

    def _wakeup_when_memory_short(self, wakeup: Callable[[], None]) -> Callable[[], None]:
        """``wakeup`` called only while half of the buffer memory is in use: a bulk call then
        wakes the Sender for each batch it makes sendable, so that a call larger than
        ``buffer_memory`` does not wait for memory the Sender was not woken to free;
        otherwise the caller wakes it once, after the call (a wakeup per batch was a
        measurable share of send_arrow(): docs/performance.md, "Notes moved from the code")."""
        pool = self._pool

        def wake_if_short() -> None:
            if pool.available_memory < pool.total_memory // 2:
                wakeup()

        return wake_if_short
