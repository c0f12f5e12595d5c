"""The Sender's side of the accumulator: which leaders have a sendable batch (ready), taking
batches for a produce request (drain), muting, and what happens to a batch after its answer
(complete, fail, re-enqueue, split, expire). Every decision takes ``now`` (milliseconds of the
producer's monotonic clock), so tests drive it with a fake clock."""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable, Collection, Iterable, Sequence
from itertools import chain

from kafkaline.config import ExponentialBackoff, UniformRandom
from kafkaline.net.cluster import TopicPartition
from kafkaline.producer.accumulator_types import (
    AccumulatorCluster,
    BatchStats,
    ReadyCheckResult,
)
from kafkaline.producer.batch import ProducerBatch
from kafkaline.producer.buffer_pool import BufferPool
from kafkaline.producer.builtin_partitioner import BuiltInPartitioner, PartitionQueueState
from kafkaline.producer.compression_ratio import CompressionRatioEstimator
from kafkaline.producer.partition_queues import (
    PartitionQueue,
    QueueMap,
    hold_memory,
    insert_in_sequence_order,
)
from kafkaline.producer.transactions.idempotence import IdempotenceManager
from kafkaline.record.batch_format import BATCH_HEADER_SIZE

__all__ = ["SenderSide"]

_log = logging.getLogger(__name__)

#: Per topic: its adaptive partitioner (None: no statistics to keep) and its queues, each
#: with its leader's node id (None: unknown).
ReadyView = list[tuple[str, BuiltInPartitioner | None, list[tuple[PartitionQueue, int | None]]]]


class _NodeLatency:
    """When a node last had data ready and when it was last drained (KIP-794)."""

    __slots__ = ("drain_ms", "ready_ms")

    def __init__(self, now: float) -> None:
        self.ready_ms = now
        self.drain_ms = now


class SenderSide(QueueMap):
    """The part of :class:`~kafkaline.producer.accumulator.RecordAccumulator` the Sender's
    thread uses; the accumulator sets the shared fields, :meth:`_init_sender_side` the
    Sender's own."""

    _pool: BufferPool
    _linger_ms: float
    _delivery_timeout_ms: float
    _retry_backoff: ExponentialBackoff
    _backoff_rng: UniformRandom
    _estimator: CompressionRatioEstimator
    _transaction_manager: IdempotenceManager | None
    _on_batch_sealed: Callable[[ProducerBatch], None] | None
    _closed: bool
    _flushes_in_progress: int
    _incomplete: set[ProducerBatch]
    _incomplete_lock: threading.Lock
    batch_stats: BatchStats

    def _init_sender_side(self) -> None:
        """The state only the Sender's thread touches: muting, drain rotation, the cached
        views of the queues, node latency, the next expiry."""
        self._muted: set[TopicPartition] = set()
        self._drain_index: dict[int, int] = {}
        # Node -> (its partitions, queues made, their queues): see _node_queues.
        self._drain_queues: dict[
            int, tuple[Sequence[TopicPartition], int, list[PartitionQueue | None]]
        ] = {}
        # (cluster, queues made, partitioners, the view ready() scans): see _ready_view.
        self._ready_cache: (
            tuple[AccumulatorCluster, int, dict[str, BuiltInPartitioner], ReadyView] | None
        ) = None
        self._node_latency: dict[int, _NodeLatency] = {}
        self._next_expiry_ms = math.inf
        # Made with the ready view: each queue's place in it, the queue and its leader, and
        # how many queues it holds (see _queues_of_incomplete).
        self._ready_positions: dict[TopicPartition, tuple[int, PartitionQueue, int | None]] = {}
        self._ready_queue_count = 0
        # Node -> each of its partitions' place in its list (see _node_queues).
        self._drain_positions: dict[int, dict[TopicPartition, int]] = {}

    def ready(self, cluster: AccumulatorCluster, now: float) -> ReadyCheckResult:
        """The leaders with a sendable batch, when to check again, and topics whose leaders
        are unknown.

        A partition's first batch is sendable when it is not backing off after a failed try
        and: it is full (or more batches wait behind it), or it waited ``linger_ms`` (its
        retry backoff, when re-enqueued), or threads wait for buffer memory, or the
        accumulator is closing, or a flush is in progress. Muted partitions are skipped.
        Also refreshes the adaptive partitioners' queue statistics (KIP-794).
        """
        ready_nodes: set[int] = set()
        unknown_leader_topics: set[str] = set()
        next_delay = math.inf
        if not self._incomplete and not (self._adaptive and self._sticky):
            # No batch at all (every batch is in the set before its append returns, which
            # then wakes the Sender for a new one), and no partitioner statistics to keep:
            # nothing to scan. Records sent one at a time: every other pass finds nothing
            # (the one after the answer, before the caller's next send()).
            return ReadyCheckResult(ready_nodes, next_delay, unknown_leader_topics)
        # Every first batch is sendable now, whatever it waited (read once a pass: a flush
        # or close begun during the pass wakes the Sender for another).
        eager = self._pool.queued > 0 or self._closed or self._flushes_in_progress > 0
        view = self._ready_view(cluster)
        if len(self._incomplete) * 4 < self._ready_queue_count and not (
            self._adaptive and self._sticky
        ):
            # Few batches for many queues (records sent one at a time, or a topic of many
            # partitions): look only at the queues of the batches not yet completed, in the
            # order of the full scan, so the answer is the same.
            next_delay = self._ready_topic(
                "",
                None,
                self._queues_of_incomplete(),
                ready_nodes,
                unknown_leader_topics,
                eager,
                now,
            )[0]
            return ReadyCheckResult(ready_nodes, next_delay, unknown_leader_topics)
        for topic, partitioner, queues in view:
            delay, queue_states = self._ready_topic(
                topic, partitioner, queues, ready_nodes, unknown_leader_topics, eager, now
            )
            next_delay = min(next_delay, delay)
            if partitioner is not None and queue_states is not None:
                try:
                    partition_count = cluster.partition_count(topic)
                except KeyError:
                    # Not in this metadata snapshot (yet): keep the current weights.
                    continue
                partitioner.update_load_stats(queue_states, partition_count)
        return ReadyCheckResult(ready_nodes, next_delay, unknown_leader_topics)

    def has_queued_batches(self) -> bool:
        """Whether any batch is queued (not yet drained): :meth:`has_undrained`, which walks
        every queue, or, with fewer incomplete batches than queues, a look at the queues of
        those batches only (every queued batch is one of them). The Sender asks after each
        request it sends."""
        incomplete = self._incomplete
        if len(incomplete) >= self._queues_made:
            return self.has_undrained()
        queues = self._queues
        # list(): a snapshot taken in one step; appending threads add to the set meanwhile.
        for batch in list(incomplete):
            tp = batch.topic_partition
            partitions = queues.get(tp.topic)
            queue = None if partitions is None else partitions.get(tp.partition)
            if queue is not None and queue.batches:
                return True
        return False

    def _queues_of_incomplete(self) -> list[tuple[PartitionQueue, int | None]]:
        """The queues (with their leaders) of the batches not yet completed, in the order of
        the ready view (the last one :meth:`_ready_view` made)."""
        positions = self._ready_positions
        found: dict[int, tuple[PartitionQueue, int | None]] = {}
        # list(): a snapshot taken in one step; appending threads add to the set meanwhile.
        for batch in list(self._incomplete):
            entry = positions.get(batch.topic_partition)
            if entry is not None and entry[1].batches:
                found[entry[0]] = (entry[1], entry[2])
        if len(found) < 2:
            return list(found.values())
        return [found[position] for position in sorted(found)]

    def _ready_topic(
        self,
        topic: str,
        partitioner: BuiltInPartitioner | None,
        queues: list[tuple[PartitionQueue, int | None]],
        ready_nodes: set[int],
        unknown_leader_topics: set[str],
        eager: bool,
        now: float,
    ) -> tuple[float, list[PartitionQueueState] | None]:
        """:meth:`ready` for one topic's queues: adds to ``ready_nodes`` and
        ``unknown_leader_topics``; returns how long until another of its partitions may become
        sendable, and its queues' statistics for the adaptive partitioner (if any)."""
        linger = self._linger_ms
        muted = self._muted
        next_delay = math.inf
        queue_states: list[PartitionQueueState] | None = None if partitioner is None else []
        for queue, leader in queues:
            # No lock: a deque's len() and [0] are atomic, and what this reads is only a hint
            # (drain() decides under the lock), so appending threads never wait for this scan.
            batches = queue.batches
            queue_size = len(batches)
            if queue_states is not None:
                queue_states.append(
                    PartitionQueueState(
                        queue.tp.partition,
                        queue_size,
                        has_leader=leader is not None,
                        leader_stalled_ms=self._leader_stalled_ms(leader),
                    )
                )
            if not queue_size or (leader is not None and leader in ready_nodes):
                continue  # nothing queued, or its node is sendable already
            try:
                first = batches[0]
            except IndexError:  # drained or aborted since len()
                continue
            if leader is None:
                unknown_leader_topics.add(topic or queue.tp.topic)
                continue
            if first.held_by_appenders or (muted and queue.tp in muted):
                continue  # a bulk append fills it now (and wakes the Sender), or muted
            # A batch's times and attempts change only in reenqueue(), on this thread.
            waited = now - first.last_attempt_ms
            if first.attempts and waited < first.retry_backoff_ms:
                wait_left = first.retry_backoff_ms - waited  # backing off after a failure
            elif eager or waited >= linger or queue_size > 1 or first.is_full:
                ready_nodes.add(leader)
                continue
            else:
                wait_left = linger - waited
            if wait_left < next_delay:
                next_delay = wait_left if wait_left > 0.0 else 0.0
        return next_delay, queue_states

    def _ready_view(self, cluster: AccumulatorCluster) -> ReadyView:
        """Per topic: its adaptive partitioner (None when there are no statistics to keep)
        and its queues, each with its leader's node id (None: unknown). Made again only when
        the metadata (replaced, never changed in place), the set of partitioners (likewise)
        or the number of queues changed, so ready() asks no leader per queue per pass."""
        made = self._queues_made  # read first: a queue made meanwhile makes it again
        sticky = self._sticky
        cached = self._ready_cache
        if (
            cached is not None
            and cached[0] is cluster
            and cached[1] == made
            and cached[2] is sticky
        ):
            return cached[3]
        view: ReadyView = []
        positions: dict[TopicPartition, tuple[int, PartitionQueue, int | None]] = {}
        for topic, queues in self._queue_lists.items():
            leaders: list[tuple[PartitionQueue, int | None]] = []
            for queue in queues:
                node = cluster.leader_for(queue.tp)
                leader = None if node is None else node.node_id
                positions[queue.tp] = (len(positions), queue, leader)
                leaders.append((queue, leader))
            view.append((topic, sticky.get(topic) if self._adaptive else None, leaders))
        self._ready_cache = (cluster, made, sticky, view)
        self._ready_positions = positions
        self._ready_queue_count = len(positions)
        return view

    def _leader_stalled_ms(self, leader: int | None) -> int:
        latency = None if leader is None else self._node_latency.get(leader)
        return 0 if latency is None else int(latency.ready_ms - latency.drain_ms)

    def update_node_latency_stats(self, node_id: int, now: float, can_drain: bool) -> None:
        """Tell the adaptive partitioner whether a ready node could be drained at ``now``
        (the Sender calls it for every ready node): partitions whose leader has had data
        ready without being drained for ``partitioner_availability_timeout_ms`` are avoided.
        """
        if self._availability_timeout_ms <= 0:
            return
        latency = self._node_latency.get(node_id)
        if latency is None:
            latency = self._node_latency[node_id] = _NodeLatency(now)
        if can_drain:
            latency.drain_ms = now
        latency.ready_ms = now

    def drain(
        self,
        cluster: AccumulatorCluster,
        nodes: Collection[int],
        max_request_size: int,
        now: float,
    ) -> dict[int, list[ProducerBatch]]:
        """Take, for each node, at most one batch per partition it leads, up to
        ``max_request_size`` bytes per node (a first batch larger than that goes alone).

        Partitions are visited from a rotating start per node, so that the size limit does
        not always favour the same ones: the next drain starts at the partition that did not
        fit, or one further after a full pass. Muted partitions and batches backing off are
        skipped. Drained batches are closed and encoded here (outside the queue locks); a
        batch that cannot be encoded fails with its error instead of being returned.
        """
        drained: dict[int, list[ProducerBatch]] = {}
        for node in nodes:
            drained[node] = self._drain_node(cluster, node, max_request_size, now)
        return drained

    def _drain_node(
        self, cluster: AccumulatorCluster, node: int, max_request_size: int, now: float
    ) -> list[ProducerBatch]:
        ready: list[ProducerBatch] = []
        parts = cluster.partitions_for_node(node)
        count = len(parts)
        if not count:
            return ready
        start = self._drain_index.get(node, 0) % count
        next_start = (start + 1) % count
        size = 0
        muted = self._muted
        transactions = self._transaction_manager
        node_queues = self._node_queues(node, parts)
        for index in self._drain_order(node, start, count):
            queue = node_queues[index]
            if queue is None or not queue.batches:
                # Nothing queued: no lock, as in ready() (an append to an empty queue makes a
                # new batch, which wakes the Sender).
                continue
            if muted and queue.tp in muted:  # most producers mute nothing: no hash per queue
                continue
            with queue.lock:
                batches = queue.batches
                if not batches:
                    continue
                first = batches[0]
                # ProducerBatch.is_backing_off(), written out (a call per batch less).
                if first.held_by_appenders or (
                    first.attempts and now - first.last_attempt_ms < first.retry_backoff_ms
                ):
                    continue
                if transactions is not None and transactions.should_stop_drain(first):
                    continue
                if ready and size + first.builder.estimated_size_in_bytes > max_request_size:
                    next_start = index  # it goes first next time
                    break
                batches.popleft()
                first.builder.close_for_appends()  # ProducerBatch.close_for_appends()
            # Sealed here, outside the lock (encoding is the expensive part), and counted
            # once per drain below: on a topic of many partitions a batch holds a record or
            # two, and a call per batch was a visible part of the I/O thread's cost.
            try:
                first.builder.seal()  # ProducerBatch.close()
            except Exception as error:
                # A record the builder cannot encode (e.g. a timestamp out of range): it
                # fails with the reason, the others go on.
                _log.warning("failed to encode a batch for %s: %s", first.topic_partition, error)
                self.fail_batch(first, error)
                continue
            size += first.builder.estimated_size_in_bytes
            ready.append(first)
        self._drain_index[node] = next_start
        if ready:
            self._drained(ready, now)
        return ready

    def _drain_order(self, node: int, start: int, count: int) -> Iterable[int]:
        """The places in ``node``'s partition list to visit, in rotation order from
        ``start``: all, or with few batches for many partitions only those of incomplete
        batches (every queued batch is one), so the drain is the full pass's."""
        if len(self._incomplete) * 4 >= count:
            return chain(range(start, count), range(start))
        positions = self._drain_positions.get(node, {})
        found: set[int] = set()
        # list(): a snapshot taken in one step; appending threads add to the set meanwhile.
        for batch in list(self._incomplete):
            index = positions.get(batch.topic_partition)
            if index is not None:
                found.add(index)
        if len(found) < 2:
            return list(found)
        rotated = sorted([index if index >= start else index + count for index in found])
        return [index - count if index >= count else index for index in rotated]

    def _drained(self, batches: list[ProducerBatch], now: float) -> None:
        """What follows sealing, for a node's drained ``batches``: their sequences
        (idempotence; after encoding, so a batch that failed to encode takes none), the
        batch statistics, the compression estimate and the drain time."""
        if self._transaction_manager is not None:
            assign_sequence = self._transaction_manager.assign_sequence
            for batch in batches:
                assign_sequence(batch)
        records = 0
        wire_bytes = 0
        uncompressed = 0
        on_sealed = self._on_batch_sealed
        for batch in batches:
            builder = batch.builder
            wire_size = builder.estimated_size_in_bytes
            records += len(builder)
            wire_bytes += wire_size
            if builder.compression:
                uncompressed += builder.uncompressed_records_size
                self._estimator.update(batch.topic, batch.compression_ratio)
            else:
                uncompressed += wire_size
            if on_sealed is not None:
                on_sealed(batch)
            if now > batch.drained_ms:  # ProducerBatch.drained()
                batch.drained_ms = now
        self._release_unused(batches)
        stats = self.batch_stats
        stats.batches += len(batches)
        stats.records += records
        stats.bytes += wire_bytes
        stats.uncompressed_bytes += uncompressed

    def _release_unused(self, batches: list[ProducerBatch]) -> None:
        """Sealed batches take no more records: each gives back the buffer memory its wire
        bytes do not use (a batch took a few KiB when it was made), so that batches waiting
        for the broker hold what they hold (see "buffer_memory" in docs/producer.md)."""
        unused = 0
        # Under the lock of incomplete batches: deallocate() reads what a batch holds once
        # it left that set, so a batch finished meanwhile is not given back twice.
        with self._incomplete_lock:
            incomplete = self._incomplete
            for batch in batches:
                held = batch.pooled_bytes
                wire_size = batch.builder.estimated_size_in_bytes
                if held > wire_size and batch in incomplete:
                    unused += held - wire_size
                    hold_memory(batch, wire_size)
        if unused:
            self._pool.deallocate(unused)

    def _node_queues(
        self, node: int, parts: Sequence[TopicPartition]
    ) -> list[PartitionQueue | None]:
        """The queues of ``parts`` (the partitions ``node`` leads), None where a partition
        has none yet. Made again only when the metadata (replaced, never changed in place)
        or the number of queues changed, so a drain looks up no queue per partition."""
        made = self._queues_made  # read first: a queue made meanwhile makes it again
        queues = self._queues
        cached = self._drain_queues.get(node)
        if cached is not None and cached[0] is parts and cached[1] == made:
            return cached[2]
        node_queues: list[PartitionQueue | None] = []
        positions: dict[TopicPartition, int] = {}
        for tp in parts:
            partitions = queues.get(tp.topic)
            positions[tp] = len(node_queues)
            node_queues.append(None if partitions is None else partitions.get(tp.partition))
        self._drain_queues[node] = (parts, made, node_queues)
        self._drain_positions[node] = positions
        return node_queues

    # ------------------------------------------------------------------ muting

    def mute(self, tp: TopicPartition) -> None:
        """Hold ``tp`` back from ready() and drain() while a batch of it is in flight (the
        Sender does this with ``max_in_flight_requests_per_connection=1`` to keep order)."""
        self._muted.add(tp)

    def unmute(self, tp: TopicPartition) -> None:
        """Let ``tp`` be drained again."""
        self._muted.discard(tp)

    def is_muted(self, tp: TopicPartition) -> bool:
        """Whether ``tp`` is muted."""
        return tp in self._muted

    # ------------------------------------------------------------------ outcomes

    def complete_batch(
        self, batch: ProducerBatch, base_offset: int, log_append_time: int = -1
    ) -> bool:
        """Complete ``batch`` from a successful produce response and free its memory.
        Returns whether this call completed it (see :meth:`ProducerBatch.done`)."""
        try:
            return batch.done(base_offset, log_append_time)
        finally:
            self.deallocate(batch)

    def fail_batch(
        self,
        batch: ProducerBatch,
        exception: Exception,
        record_errors: dict[int, Exception] | None = None,
    ) -> bool:
        """Fail ``batch``'s records with ``exception`` (per-record errors in
        ``record_errors``) and free its memory. Returns whether this call completed it."""
        try:
            return batch.done(-1, -1, exception, record_errors)
        finally:
            self.deallocate(batch)

    def deallocate(self, batch: ProducerBatch) -> None:
        """Forget a finished batch and give its memory back to the pool. Idempotent."""
        with self._incomplete_lock:
            if batch not in self._incomplete:
                return
            self._incomplete.remove(batch)
        if batch.pooled_bytes:
            self._pool.deallocate(batch.pooled_bytes)

    def deallocate_batches(self, batches: Collection[ProducerBatch]) -> None:
        """:meth:`deallocate` for each of ``batches``, under one lock, their memory given
        back to the pool at once (the Sender, for the successes of one response)."""
        incomplete = self._incomplete
        # Set operations rather than a lookup and a removal per batch.
        with self._incomplete_lock:
            finished = incomplete.intersection(batches)
            incomplete.difference_update(finished)
        # A loop, not sum(map(attrgetter(...))): the loop reads a slot in a few bytecodes,
        # attrgetter goes through the generic getattr for each batch.
        pooled = 0
        for batch in finished:
            pooled += batch.pooled_bytes
        if pooled:
            self._pool.deallocate(pooled)

    def reenqueue(self, batch: ProducerBatch, now: float) -> None:
        """Put a batch that failed with a retriable error back at the head of its queue:
        one more attempt, and not retried before its backoff passed (``retry_backoff``,
        exponential with jitter in the number of attempts)."""
        backoff = self._retry_backoff.next_delay(batch.attempts, self._backoff_rng)
        batch.reenqueued(now, float(backoff))
        queue = self._queue(batch.topic, batch.partition)
        with queue.lock:
            if batch.has_sequence:
                insert_in_sequence_order(queue.batches, batch)
            else:
                queue.batches.appendleft(batch)

    def remove_queued(self, batch: ProducerBatch) -> bool:
        """Take a queued batch (e.g. one waiting for a retry) out of its queue, for the caller
        to fail; returns whether it was queued."""
        queue = self._queue(batch.topic, batch.partition)
        with queue.lock:
            try:
                queue.batches.remove(batch)
            except ValueError:
                return False
        return True

    def split_and_reenqueue(self, batch: ProducerBatch, split_size: int | None = None) -> int:
        """Split a batch the broker found too large (MESSAGE_TOO_LARGE) into batches of
        ``split_size`` bytes (default ``batch_size``), put them at the head of its queue in
        order, and free the big one's memory; its records' futures follow to the new batches.
        Returns how many batches it became. The topic's compression estimate is reset, so
        later batches are smaller. (The Sender passes about half the batch's size, so a
        broker whose limit is below ``batch_size`` still sees the batches shrink.)"""
        self._estimator.reset(batch.topic)
        size = self._batch_size if split_size is None else split_size
        parts = batch.split(max(size, BATCH_HEADER_SIZE + 1))
        with self._incomplete_lock:
            self._incomplete.update(parts)
        if self._transaction_manager is not None:
            self._transaction_manager.replace_split_batch(batch, parts)
        queue = self._queue(batch.topic, batch.partition)
        with queue.lock:
            queue.batches.extendleft(reversed(parts))
        self.deallocate(batch)
        return len(parts)

    def expired_batches(self, now: float) -> list[ProducerBatch]:
        """Remove and return the queued batches created ``delivery_timeout_ms`` or longer
        ago (oldest first per partition), closed for appends. Fail each with
        ``batch.delivery_timeout_error(delivery_timeout_ms, now)`` through
        :meth:`fail_batch`. Also updates :attr:`next_expiry_time_ms`."""
        expired: list[ProducerBatch] = []
        next_expiry = math.inf
        timeout = self._delivery_timeout_ms
        for queues in self._queue_lists.values():
            for queue in queues:
                with queue.lock:
                    batches = queue.batches
                    while batches:
                        first = batches[0]
                        if not first.has_reached_delivery_timeout(timeout, now):
                            next_expiry = min(next_expiry, first.created_ms + timeout)
                            break
                        batches.popleft()
                        first.close_for_appends()
                        expired.append(first)
        self._next_expiry_ms = next_expiry
        return expired

    @property
    def delivery_timeout_ms(self) -> float:
        """How long a batch may wait for its acknowledgement, from its creation."""
        return self._delivery_timeout_ms

    @property
    def next_expiry_time_ms(self) -> float:
        """When the oldest queued batch expires, as of the last :meth:`expired_batches`
        (``math.inf`` if none was queued): the Sender sleeps no longer than that."""
        return self._next_expiry_ms
