""":class:`RecordAccumulator`: per-partition queues of batches between send() and the Sender.

User threads :meth:`~RecordAccumulator.append` records: into the last batch of the
partition's queue, or into a new batch whose memory comes from the :class:`BufferPool`. The
Sender's thread asks :meth:`~RecordAccumulator.ready` which brokers have something to send,
takes batches with :meth:`~RecordAccumulator.drain`, and completes, re-enqueues, splits or
expires them. Every decision takes ``now`` (milliseconds of the producer's monotonic clock,
a float), so tests drive it with a fake clock.

Sender loop sketch::

    result = accumulator.ready(cluster, now)
    batches = accumulator.drain(cluster, result.ready_nodes, max_request_size, now)
    for batch in accumulator.expired_batches(now):
        accumulator.fail_batch(batch, batch.delivery_timeout_error(delivery_timeout_ms, now))
    ...  # one produce request per node; on its response, per batch:
    accumulator.complete_batch(batch, base_offset, log_append_time)   # success
    accumulator.reenqueue(batch, now)                                 # retriable error
    accumulator.split_and_reenqueue(batch)                            # MESSAGE_TOO_LARGE
    accumulator.fail_batch(batch, error)                              # other errors

Locking: one lock per partition queue, as in Java. With one accumulator lock the Sender's
pass over all partitions would hold it, and an appending thread would sleep until the pass ends
(see docs/performance.md, Notes moved from the code). The map of queues is copy-on-write (a
queue is made once per partition), so the hot path and the Sender read it without a lock.
"""

from __future__ import annotations

import logging
import math
import random
import threading
import time
from collections import deque
from collections.abc import Callable, Collection, Sequence
from itertools import chain
from typing import NamedTuple, Protocol

from kafkaline.config import ExponentialBackoff, ProducerConfig, UniformRandom
from kafkaline.errors import IllegalStateError, KafkaTimeoutError, ProducerClosedError
from kafkaline.net.cluster import TopicPartition
from kafkaline.producer.batch import ProducerBatch
from kafkaline.producer.buffer_pool import BufferPool
from kafkaline.producer.builtin_partitioner import (
    BuiltInPartitioner,
    PartitionQueueState,
    StickyPartition,
)
from kafkaline.producer.compression_ratio import CompressionRatioEstimator
from kafkaline.producer.futures import FutureRecordMetadata, ProduceRequestResult
from kafkaline.producer.partitioner import ClusterPartitions
from kafkaline.producer.pending_records import (
    BulkSegment,
    EncodedChunk,
    EncodedRecords,
    OneRecord,
    PendingRecords,
    RecordRun,
)
from kafkaline.producer.transactions.idempotence import IdempotenceManager
from kafkaline.record import CompressionType, Headers, RecordBatchBuilder
from kafkaline.record.batch_format import BATCH_HEADER_SIZE
from kafkaline.record.core import compiled_core
from kafkaline.record.record_encoder import RECORD_OVERHEAD_BOUND

# A global for _new_batch: on Python 3.11 CompressionType.NONE goes through
# EnumType.__getattr__'s hook (see docs/performance.md, Notes moved from the code).
_NO_COMPRESSION = CompressionType.NONE

__all__ = [
    "AccumulatorCluster",
    "BatchStats",
    "BulkSegment",
    "EncodedChunk",
    "EncodedRecordSource",
    "EncodedRun",
    "LeaderNode",
    "OpenBatch",
    "OpenBatchSender",
    "ReadyCheckResult",
    "RecordAccumulator",
    "RecordAppendResult",
]

_log = logging.getLogger(__name__)
# What RecordAccumulator._try_last reports besides the bytes to take from the pool first.
_APPENDED = 0
_FULL = -1
#: Buffer memory a new batch takes first (at most batch_size); it takes more as it fills.
FIRST_BATCH_MEMORY = 4096

#: What :meth:`RecordAccumulator.append` returns: ``(future, batch_is_full,
#: new_batch_created)``. A plain tuple, not a NamedTuple: one is built per record (see
#: docs/performance.md, Notes moved from the code). Unpack it::
#:
#:     future, batch_is_full, new_batch_created = accumulator.append(...)
#:     if batch_is_full or new_batch_created:
#:         sender.wakeup()
RecordAppendResult = tuple[FutureRecordMetadata, bool, bool]


class OpenBatch(NamedTuple):
    """A partition's last batch, still open, as records encoded for it must see it."""

    #: Bytes of encoded records it still takes.
    room: int
    #: The offset delta of the next record.
    first_offset_delta: int
    #: The timestamp the records' timestamp deltas count from.
    base_timestamp: int


class EncodedRecordSource(Protocol):
    """One bulk call's records, in groups per partition, that encode themselves into whole
    batches' worth of records at once (``producer.columnar`` does it vectorised), for
    :meth:`RecordAccumulator.append_encoded`."""

    @property
    def groups(self) -> Sequence[tuple[int | None, int, int]]:
        """``(partition, start, stop)`` per group: its records are ``start..stop-1`` in the
        source's order; partition ``None`` means the sticky partitioner's."""
        ...

    def encode(
        self, requests: Sequence[tuple[int, OpenBatch | None]], fresh_room: int
    ) -> list[list[EncodedChunk]]:
        """For each ``(group index, open batch)``: the group's records as chunks in order: first
        those that fit the open batch (if any is given and any fit; ``continues_open``), then
        chunks for new batches of at most ``fresh_room`` bytes each (at least one record)."""
        ...


#: A run of records :meth:`RecordAccumulator.append_encoded` put in one batch: ``(batch
#: result, first offset delta, first record's index in the source's order, count)``.
EncodedRun = tuple[ProduceRequestResult, int, int, int]


class OpenBatchSender(Protocol):
    """The compiled record core's one-call send(), see
    :meth:`RecordAccumulator.open_batch_sender`."""

    #: Whether sends may go straight on (the producer's gate is open).
    open: bool
    #: The producer's topic -> partition count map.
    partition_counts: dict[str, int]
    #: What gets the calls the core declines (send()'s general path), or None.
    fallback: Callable[..., FutureRecordMetadata] | None

    def __call__(
        self,
        topic: str,
        value: object = None,
        key: object = None,
        headers: Headers | None = None,
        partition: int | None = None,
        timestamp_ms: int | None = None,
    ) -> FutureRecordMetadata | None: ...


class LeaderNode(Protocol):
    """A partition leader as the cluster metadata gives it (``BrokerNode`` is one)."""

    @property
    def node_id(self) -> int: ...


class AccumulatorCluster(ClusterPartitions, Protocol):
    """What the accumulator needs from a cluster metadata snapshot. The network layer's
    ``ClusterMetadata`` implements it; so can a small fake in tests."""

    def leader_for(self, tp: TopicPartition) -> LeaderNode | None:
        """The broker leading ``tp``, or ``None`` when unknown."""
        ...

    def partitions_for_node(self, node_id: int) -> Sequence[TopicPartition]:
        """The partitions ``node_id`` leads, in a stable order (drain rotates over it)."""
        ...


class ReadyCheckResult(NamedTuple):
    """What :meth:`RecordAccumulator.ready` found."""

    #: Node ids of leaders with at least one sendable batch.
    ready_nodes: set[int]
    #: How long until another partition may become sendable (``math.inf``: nothing queued).
    next_ready_check_delay_ms: float
    #: Topics with queued batches but a partition without known leader: refresh metadata.
    unknown_leader_topics: set[str]


class BatchStats:
    """Cumulative counts of the batches closed for sending, for the producer's metrics
    (``batch-size-avg``, ``records-per-batch-avg``, ``compression-rate-avg``). Updated by
    the Sender's thread only."""

    __slots__ = ("batches", "bytes", "records", "uncompressed_bytes")

    def __init__(self) -> None:
        self.batches = 0
        self.records = 0
        #: Wire bytes of the batches.
        self.bytes = 0
        #: Bytes of the batches' records before compression.
        self.uncompressed_bytes = 0

    def add(self, batch: ProducerBatch, wire_size: int | None = None) -> None:
        """Count a batch that was just closed (sealed); ``wire_size`` is its size if the
        caller read it already."""
        builder = batch.builder
        self.batches += 1
        self.records += len(builder)
        size = builder.estimated_size_in_bytes if wire_size is None else wire_size
        self.bytes += size
        self.uncompressed_bytes += (
            builder.uncompressed_records_size if builder.compression else size
        )

    @property
    def batch_size_avg(self) -> float:
        """Average wire size of a batch (0.0 before any)."""
        return self.bytes / self.batches if self.batches else 0.0

    @property
    def records_per_batch_avg(self) -> float:
        """Average records per batch (0.0 before any)."""
        return self.records / self.batches if self.batches else 0.0

    @property
    def compression_rate_avg(self) -> float:
        """Compressed / uncompressed bytes over all batches (1.0 before any)."""
        return self.bytes / self.uncompressed_bytes if self.uncompressed_bytes else 1.0


def _queue_lock_factory() -> Callable[[], threading.Lock]:
    # The compiled core's lock is a threading.Lock its send() takes without calling Python.
    core = compiled_core()
    if core is None:
        return threading.Lock
    factory: Callable[[], threading.Lock] = core.QueueLock
    return factory


_new_queue_lock = _queue_lock_factory()


class _PartitionQueue:
    """One partition's batches, oldest first, and the lock that guards them."""

    __slots__ = ("batches", "lock", "tp")

    def __init__(self, tp: TopicPartition) -> None:
        self.tp = tp
        self.batches: deque[ProducerBatch] = deque()
        self.lock = _new_queue_lock()


class _EncodedPlan:
    """append_encoded()'s view of one group before encoding: its queue, sticky partition,
    and the open batch (held while ``held``) with the state its records are encoded for."""

    __slots__ = ("group", "held", "open_batch", "queue", "state", "sticky")

    def __init__(
        self,
        group: int,
        queue: _PartitionQueue,
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


class _NodeLatency:
    """When a node last had data ready and when it was last drained (KIP-794)."""

    __slots__ = ("drain_ms", "ready_ms")

    def __init__(self, now: float) -> None:
        self.ready_ms = now
        self.drain_ms = now


class RecordAccumulator:
    """Batches records per topic-partition until the Sender takes them.

    ``batch_size`` is Kafka's ``batch.size`` (0: one record per batch); ``linger_ms`` how
    long a batch that is not full waits for more records; ``delivery_timeout_ms`` how long a
    batch may wait for an acknowledgement in total; ``retry_backoff`` the wait before a
    re-enqueued batch is retried (exponential with jitter; ``rng`` draws the jitter and the
    sticky partitions). Records without a partition go to the KIP-794 built-in sticky
    partitioner of their topic (``partitioner_adaptive``,
    ``partitioner_availability_timeout_ms``). ``on_batch_sealed`` is called on the Sender's
    thread for every batch closed for sending (metrics).

    >>> accumulator = RecordAccumulator(batch_size=1024, linger_ms=5)
    >>> future, batch_is_full, new_batch = accumulator.append(
    ...     "events", 0, 1_700_000_000_000, b"key", b"value", now=0.0)
    >>> new_batch, accumulator.has_undrained()
    (True, True)
    """

    def __init__(
        self,
        *,
        batch_size: int = 16384,
        linger_ms: float = 5.0,
        buffer_pool: BufferPool | None = None,
        compression: int = CompressionType.NONE,
        compression_level: int | None = None,
        delivery_timeout_ms: float = 120_000.0,
        retry_backoff: ExponentialBackoff | None = None,
        partitioner_adaptive: bool = True,
        partitioner_availability_timeout_ms: float = 0.0,
        rng: random.Random | None = None,
        on_batch_sealed: Callable[[ProducerBatch], None] | None = None,
        transaction_manager: IdempotenceManager | None = None,
    ) -> None:
        self._batch_size = batch_size
        self._first_batch_memory = max(min(batch_size, FIRST_BATCH_MEMORY), BATCH_HEADER_SIZE + 1)
        self._linger_ms = float(linger_ms)
        self._pool = (
            buffer_pool
            if buffer_pool is not None
            else BufferPool(32 * 1024 * 1024, max(batch_size, BATCH_HEADER_SIZE + 1))
        )
        self._compression = CompressionType(compression)
        self._compression_level = compression_level
        self._delivery_timeout_ms = float(delivery_timeout_ms)
        self._retry_backoff = (
            retry_backoff if retry_backoff is not None else ExponentialBackoff(100, 1000)
        )
        self._rng: random.Random = rng if rng is not None else random.Random()
        self._backoff_rng: UniformRandom = self._rng
        self._adaptive = partitioner_adaptive
        self._availability_timeout_ms = partitioner_availability_timeout_ms
        #: Whether update_node_latency_stats() does anything (the Sender skips the call when
        #: not: it would be once per node with a ready batch, per pass).
        self.tracks_node_latency = partitioner_availability_timeout_ms > 0
        self._on_batch_sealed = on_batch_sealed
        # Idempotence: holds back batches whose sequence must wait, numbers the drained ones.
        self._transaction_manager = transaction_manager
        # New batches that need no argument but their size (see _new_batch).
        self._plain_batches = (
            self._compression is _NO_COMPRESSION
            and compression_level is None
            and not (transaction_manager is not None and transaction_manager.is_transactional)
        )
        self._estimator = CompressionRatioEstimator()
        #: topic -> partition -> queue. Copy-on-write under _queues_lock: readers take the
        #: current dicts without a lock, and never see one change under them.
        self._queues: dict[str, dict[int, _PartitionQueue]] = {}
        self._queues_lock = threading.Lock()
        self._sticky: dict[str, BuiltInPartitioner] = {}
        self._incomplete: set[ProducerBatch] = set()
        self._incomplete_lock = threading.Lock()
        # The Sender's thread only: muting, drain rotation, node latency.
        self._muted: set[TopicPartition] = set()
        self._drain_index: dict[int, int] = {}
        # Node -> (its partitions, the queues map, their queues): see _node_queues.
        self._drain_queues: dict[
            int,
            tuple[
                Sequence[TopicPartition],
                dict[str, dict[int, _PartitionQueue]],
                list[_PartitionQueue | None],
            ],
        ] = {}
        # (cluster, queues, partitioners, the view ready() scans): see _ready_view.
        self._ready_cache: (
            tuple[
                AccumulatorCluster,
                dict[str, dict[int, _PartitionQueue]],
                dict[str, BuiltInPartitioner],
                list[
                    tuple[
                        str,
                        BuiltInPartitioner | None,
                        list[tuple[_PartitionQueue, int | None]],
                    ]
                ],
            ]
            | None
        ) = None
        self._node_latency: dict[int, _NodeLatency] = {}
        self._next_expiry_ms = math.inf
        self._flushes_in_progress = 0
        self._flush_lock = threading.Lock()
        self._closed = False
        #: Counts of the batches closed for sending, for metrics.
        self.batch_stats = BatchStats()

    @classmethod
    def from_config(
        cls,
        config: ProducerConfig,
        *,
        rng: random.Random | None = None,
        on_batch_sealed: Callable[[ProducerBatch], None] | None = None,
        on_buffer_wait: Callable[[float], None] | None = None,
        transaction_manager: IdempotenceManager | None = None,
    ) -> RecordAccumulator:
        """An accumulator (and its buffer pool) set up from a producer's configuration."""
        return cls(
            batch_size=config.batch_size,
            linger_ms=config.linger_ms,
            buffer_pool=BufferPool(
                config.buffer_memory,
                max(config.batch_size, BATCH_HEADER_SIZE + 1),
                on_wait=on_buffer_wait,
            ),
            compression=CompressionType[config.compression_type.upper()],
            compression_level=config.compression_level,
            delivery_timeout_ms=config.effective_delivery_timeout_ms,
            retry_backoff=config.retry_backoff,
            partitioner_adaptive=config.partitioner_adaptive_partitioning_enable,
            partitioner_availability_timeout_ms=config.partitioner_availability_timeout_ms,
            rng=rng,
            on_batch_sealed=on_batch_sealed,
            transaction_manager=transaction_manager,
        )

    # ------------------------------------------------------------------ appending

    def append(
        self,
        topic: str,
        partition: int | None,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        headers: Headers | None = None,
        max_time_to_block_ms: float = 0.0,
        now: float = 0.0,
        cluster: ClusterPartitions | None = None,
    ) -> RecordAppendResult:
        """Add a serialized record to its partition's last batch, or to a new batch; return
        ``(future, batch_is_full, new_batch_created)``. Wake the Sender when either flag is
        set: a batch is ready to go without waiting for ``linger_ms``.

        ``partition=None`` lets the topic's built-in sticky partitioner choose (``cluster``
        is then required). Blocks up to ``max_time_to_block_ms`` when ``buffer_memory`` is
        used up, then raises :class:`~kafkaline.errors.BufferExhaustedError`. Raises
        :class:`~kafkaline.errors.ProducerClosedError` when a new batch is needed after
        :meth:`close`, and what the record builder raises for a bad record.
        """
        record = OneRecord(timestamp, key, value, headers)
        sendable, created = self._append_records(
            topic, partition, record, max_time_to_block_ms, now, cluster
        )
        if record.future is None:  # pragma: no cover - _append_records appends or raises
            raise IllegalStateError("a record was not appended")
        return record.future, sendable, created

    def open_batch_sender(self, payload_limit: int) -> OpenBatchSender | None:
        """Producer.send()'s common case in one compiled call, when the compiled record core
        is in use (else ``None``): ``sender(topic, value, key, headers, partition,
        timestamp_ms)`` (send()'s signature) appends a record of bytes (or None) without
        headers, whose key and value take at most ``payload_limit`` bytes, to the open batch
        of the partition :meth:`append` would choose (the given one, murmur2 of the key, or
        the topic's sticky partition while no switch is due), and returns its future. Else,
        with nothing done, it returns what ``sender.fallback`` (send()'s general path, which
        takes :meth:`append`) returns for the same arguments, or ``None`` without fallback.
        The record core owns the open batch's buffer, so it takes the queue's lock and
        encodes into it itself.

        The caller sets ``sender.open`` while sends may go straight on and
        ``sender.partition_counts`` to its topic -> partition count map (a topic not in it
        is ``None``)."""
        core = compiled_core()
        if core is None:
            return None
        sender: OpenBatchSender = core.OpenBatchSender(
            self, FutureRecordMetadata, payload_limit, RECORD_OVERHEAD_BOUND
        )
        return sender

    def append_many(
        self,
        topic: str,
        partition: int | None,
        timestamp: int | Sequence[int],
        keys: Sequence[bytes | None],
        values: Sequence[bytes | None],
        headers: Sequence[Headers | None] | None = None,
        max_time_to_block_ms: float = 0.0,
        now: float = 0.0,
        cluster: ClusterPartitions | None = None,
        wakeup: Callable[[], None] | None = None,
        into: list[BulkSegment] | None = None,
    ) -> tuple[list[BulkSegment], bool]:
        """Bulk :meth:`append`: add the records of parallel sequences (serialized, types
        checked by the caller; ``timestamp`` one for all or one per record) in order, filling
        the partition's last batch and new ones as they fill; return ``(segments,
        wake_sender)``. Each segment is ``(batch result, first offset delta, count)`` for a
        run of consecutive records in one batch, in input order; ``wake_sender`` is set when
        a batch was made or filled.

        ``partition=None`` uses the topic's sticky partitioner (``cluster`` required),
        switching partitions between batches as :meth:`append` does. Memory comes from the
        pool per new batch, blocking up to ``max_time_to_block_ms`` in total. If it raises
        midway (buffer exhausted, closed), the records before stay queued: the error says
        how many. ``wakeup`` (the Sender's) is called whenever a new batch is queued behind
        another (which is then ready), so that the Sender sends full batches (and frees their
        memory) during a call larger than ``buffer_memory``. ``into``, if given, is the
        segments list (so that a caller sees what was queued when this raises).
        """
        segments: list[BulkSegment] = [] if into is None else into
        run = RecordRun(timestamp, keys, values, headers, segments)
        sendable, created = self._append_records(
            topic, partition, run, max_time_to_block_ms, now, cluster, wakeup
        )
        return segments, sendable or created

    def _append_records(
        self,
        topic: str,
        partition: int | None,
        records: PendingRecords,
        max_time_to_block_ms: float,
        now: float,
        cluster: ClusterPartitions | None,
        wakeup: Callable[[], None] | None = None,
    ) -> tuple[bool, bool]:
        """The one append protocol (Java's ``RecordAccumulator.append``): try the partition's
        last batch under its lock; else take memory from the pool with no lock held (it may
        block) and try the last batch again under the lock (another thread may have made one
        meanwhile) before queueing a new one. With the sticky partitioner, start over if
        another thread switched partitions. Repeats until every record is queued, calling
        ``wakeup`` when a new batch queues behind another. Returns ``(a batch became
        sendable, a batch was made)``."""
        partitioner: BuiltInPartitioner | None = None
        if partition is None:
            if cluster is None:
                raise ValueError("appending without a partition needs the cluster")
            partitioner = self._sticky_partitioner(topic)
        sendable = created = False
        pooled = 0  # taken from the pool, not yet held by a batch
        try:
            while not records.done:
                sticky, queue = self._choose_queue(topic, partition, partitioner, cluster)
                tried = _FULL
                if queue.batches:  # an empty queue has no last batch: no lock round for it
                    with queue.lock:
                        if sticky is not None and self._sticky_changed(partitioner, sticky):
                            continue
                        tried, pooled = self._try_last(queue, records, pooled, sticky, cluster)
                        if tried == _APPENDED:
                            sendable = sendable or len(queue.batches) > 1
                            if records.done:
                                break
                        sendable = sendable or tried <= 0  # its last batch is full: it can go
                # Bytes for the last batch to take, or for a new batch.
                want = tried if tried > 0 else self._first_reservation(topic, records)
                if pooled < want:
                    waited = self._pool.allocate(want - pooled, max_time_to_block_ms)
                    pooled, now = want, now + waited
                    max_time_to_block_ms = max(0.0, max_time_to_block_ms - waited)
                with queue.lock:
                    if sticky is not None and self._sticky_changed(partitioner, sticky):
                        continue
                    if self._closed:
                        raise records.closed_error()
                    if queue.batches:
                        tried, pooled = self._try_last(queue, records, pooled, sticky, cluster)
                    else:
                        tried = _FULL
                    if tried == _APPENDED:
                        sendable = sendable or len(queue.batches) > 1
                    if tried != _FULL or (
                        pooled < want and pooled < self._first_reservation(topic, records)
                    ):
                        continue  # appended, or more memory is needed first
                    batch = self._new_batch(queue.tp, now)
                    self._queue_new_batch(queue, batch, records, pooled, sticky, cluster)
                    pooled = 0  # the batch holds it now, until it is deallocated
                    behind = len(queue.batches) > 1
                    sendable = sendable or behind or batch.is_full
                    created = True
                if behind and wakeup is not None:
                    wakeup()
        finally:
            if pooled:
                self._pool.deallocate(pooled)
        return sendable, created

    def _choose_queue(
        self,
        topic: str,
        partition: int | None,
        partitioner: BuiltInPartitioner | None,
        cluster: ClusterPartitions | None,
    ) -> tuple[StickyPartition | None, _PartitionQueue]:
        """The queue to append to: ``partition``'s, or the sticky partitioner's current one."""
        if partitioner is None or cluster is None:
            return None, self._queue(topic, partition)
        sticky = partitioner.peek_current(cluster)
        return sticky, self._queue(topic, sticky.partition)

    def _try_last(
        self,
        queue: _PartitionQueue,
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
        if not queue.batches:
            return _FULL, pooled
        batch = queue.batches[-1]
        if batch.builder.is_full:
            return _FULL, pooled
        extra = self._memory_needed(batch, records)
        held = batch.pooled_bytes
        if extra:
            if extra > pooled:
                if not self._pool.try_allocate(extra - pooled):
                    return extra, pooled
                pooled = extra
            pooled -= extra
            _hold_memory(batch, held + extra)
        appended = records.append_to(batch)
        if appended is None:
            if extra:  # not needed after all: the caller's, for a new batch
                _hold_memory(batch, held)
                pooled += extra
            return _FULL, pooled
        if records.fills_batch and records.done:
            self._give_back_unused(batch)
        if sticky is not None:
            self._sticky_appended(queue, sticky, appended, cluster)
        return _APPENDED, pooled

    def _queue_new_batch(
        self,
        queue: _PartitionQueue,
        batch: ProducerBatch,
        records: PendingRecords,
        pooled: int,
        sticky: StickyPartition | None,
        cluster: ClusterPartitions | None,
    ) -> None:
        """Fill ``batch`` (holding ``pooled`` bytes of the pool) before it is queued, so the
        Sender never sees an empty batch; called under the queue's lock."""
        _hold_memory(batch, pooled)
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

    # ------------------------------------------------------------------ buffer memory

    def _first_reservation(self, topic: str, records: PendingRecords) -> int:
        """Buffer memory a new batch takes for ``records``: a few KiB (it takes more as it
        fills), or what a run of records may fill it with (the unused part is given back)."""
        bound = records.size_bound()
        if not records.fills_batch:
            return max(self._first_batch_memory, bound)
        limit = self._batch_size
        if self._compression is not _NO_COMPRESSION:
            ratio = self._estimator.estimate(topic)
            limit = BATCH_HEADER_SIZE + RecordBatchBuilder.records_room(limit, ratio)
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
        pool = self._pool
        limit = builder.appended_limit
        held = batch.pooled_bytes
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
        _hold_memory(batch, batch.pooled_bytes + extra)
        return True

    def _give_back_unused(self, batch: ProducerBatch) -> None:
        """A run of records ended in ``batch``: if not full, it gives back what its records
        do not use."""
        unused = batch.pooled_bytes - batch.builder.appended_size
        if unused > 0 and not batch.is_full and not batch.is_split_batch:
            _hold_memory(batch, batch.pooled_bytes - unused)
            self._pool.deallocate(unused)

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
        group: int, queue: _PartitionQueue, sticky: StickyPartition | None
    ) -> _EncodedPlan:
        """The group's plan: its queue's open batch (if any, with room) held, so the Sender
        leaves it queued while records are encoded for it (unheld, it was often drained
        meanwhile and the records encoded again, see docs/performance.md)."""
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
        measurable share of send_arrow(), see docs/performance.md)."""
        pool = self._pool

        def wake_if_short() -> None:
            if pool.available_memory < pool.total_memory // 2:
                wakeup()

        return wake_if_short

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

    def _queue(self, topic: str, partition: int | None) -> _PartitionQueue:
        """The partition's queue, created on first use (copy-on-write)."""
        if partition is None:  # pragma: no cover - callers resolve the partition first
            raise IllegalStateError("no partition chosen")
        partitions = self._queues.get(topic)
        if partitions is not None:
            queue = partitions.get(partition)
            if queue is not None:
                return queue
        with self._queues_lock:
            partitions = self._queues.get(topic, {})
            queue = partitions.get(partition)
            if queue is None:
                queue = _PartitionQueue(TopicPartition(topic, partition))
                queues = dict(self._queues)
                queues[topic] = {**partitions, partition: queue}
                self._queues = queues
            return queue

    def _existing_queue(self, tp: TopicPartition) -> _PartitionQueue | None:
        partitions = self._queues.get(tp.topic)
        return None if partitions is None else partitions.get(tp.partition)

    # ------------------------------------------------------------------ sticky partitioning

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
        queue: _PartitionQueue,
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

    # ------------------------------------------------------------------ the Sender's view

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
        linger = self._linger_ms
        muted = self._muted
        # Every first batch is sendable now, whatever it waited (read once a pass: a flush
        # or close begun during the pass wakes the Sender for another).
        eager = self._pool.queued > 0 or self._closed or self._flushes_in_progress > 0
        for topic, partitioner, queues in self._ready_view(cluster):
            queue_states: list[PartitionQueueState] | None = None if partitioner is None else []
            for queue, leader in queues:
                # No lock: a deque's len() and [0] are atomic, and what this reads is only a
                # hint (drain() decides under the lock). Appending threads then never wait for
                # this thread, which scans thousands of queues on a topic of that many
                # partitions (the lock per queue was most of this loop's cost there).
                batches = queue.batches
                if queue_states is None:
                    if not batches or (leader is not None and leader in ready_nodes):
                        continue  # nothing queued, or its node is sendable already
                    queue_size = len(batches)
                else:
                    queue_size = len(batches)
                    queue_states.append(
                        PartitionQueueState(
                            queue.tp.partition,
                            queue_size,
                            has_leader=leader is not None,
                            leader_stalled_ms=self._leader_stalled_ms(leader),
                        )
                    )
                    if not queue_size or (leader is not None and leader in ready_nodes):
                        continue
                try:
                    first = batches[0]
                except IndexError:  # drained or aborted since len()
                    continue
                if leader is None:
                    unknown_leader_topics.add(topic)
                    continue
                if first.held_by_appenders:
                    continue  # a bulk append fills it now, and wakes the Sender when done
                if muted and queue.tp in muted:
                    continue
                # A batch's times and attempts change only in reenqueue(), on the Sender's own
                # thread. Whether it is full is asked only when it waited less than linger_ms
                # (records sent one at a time with linger 0 then never ask it).
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
            if partitioner is not None and queue_states is not None:
                try:
                    partition_count = cluster.partition_count(topic)
                except KeyError:
                    # Not in this metadata snapshot (yet): keep the current weights.
                    continue
                partitioner.update_load_stats(queue_states, partition_count)
        return ReadyCheckResult(ready_nodes, next_delay, unknown_leader_topics)

    def _ready_view(
        self, cluster: AccumulatorCluster
    ) -> list[tuple[str, BuiltInPartitioner | None, list[tuple[_PartitionQueue, int | None]]]]:
        """Per topic: its adaptive partitioner (None when there are no statistics to keep)
        and its queues, each with its leader's node id (None: unknown). Made again only when
        the metadata, the set of queues or the set of partitioners changed (each is
        replaced, never changed in place), so ready() asks no leader per queue per pass."""
        queues = self._queues
        sticky = self._sticky
        cached = self._ready_cache
        if (
            cached is not None
            and cached[0] is cluster
            and cached[1] is queues
            and cached[2] is sticky
        ):
            return cached[3]
        view: list[
            tuple[str, BuiltInPartitioner | None, list[tuple[_PartitionQueue, int | None]]]
        ] = []
        for topic, partitions in queues.items():
            leaders: list[tuple[_PartitionQueue, int | None]] = []
            for queue in partitions.values():
                node = cluster.leader_for(queue.tp)
                leaders.append((queue, None if node is None else node.node_id))
            view.append((topic, sticky.get(topic) if self._adaptive else None, leaders))
        self._ready_cache = (cluster, queues, sticky, view)
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
        stats = self.batch_stats
        on_batch_sealed = self._on_batch_sealed
        node_queues = self._node_queues(node, parts)
        for index in chain(range(start, count), range(start)):
            queue = node_queues[index]
            if queue is None or not queue.batches:
                # Nothing queued: no lock, as in ready() (an append to an empty queue makes a
                # new batch, which wakes the Sender; see docs/performance.md, Notes moved
                # from the code).
                continue
            tp = queue.tp
            if muted and tp in muted:  # most producers mute nothing: no hash per partition
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
                builder = first.builder
                if ready and size + builder.estimated_size_in_bytes > max_request_size:
                    next_start = index  # it goes first next time
                    break
                batches.popleft()
                builder.close_for_appends()  # ProducerBatch.close_for_appends()
            # Encoding is the expensive part: done without holding the queue's lock.
            try:
                builder.seal()  # ProducerBatch.close()
            except Exception as error:
                # A record the builder cannot encode (e.g. a timestamp out of range): its
                # batch fails with the reason, the others go on.
                _log.warning("failed to encode a batch for %s: %s", tp, error)
                self.fail_batch(first, error)
                continue
            if transactions is not None:
                # After encoding: a batch that failed to encode must not take a sequence.
                transactions.assign_sequence(first)
            # The sealed size, read once: the counters take it too. (Python calls per batch
            # are most of the I/O thread's cost on the bulk paths and on topics of many
            # partitions.) What a sealed batch updates, written out here (its only caller)
            # rather than in methods of its own: BatchStats.add() too.
            wire_size = builder.estimated_size_in_bytes
            stats.batches += 1
            stats.records += len(builder)
            stats.bytes += wire_size
            if builder.compression:
                stats.uncompressed_bytes += builder.uncompressed_records_size
                self._estimator.update(first.topic, first.compression_ratio)
            else:
                stats.uncompressed_bytes += wire_size
            if on_batch_sealed is not None:
                on_batch_sealed(first)
            size += wire_size
            if now > first.drained_ms:  # ProducerBatch.drained()
                first.drained_ms = now
            ready.append(first)
        self._drain_index[node] = next_start
        return ready

    def _node_queues(
        self, node: int, parts: Sequence[TopicPartition]
    ) -> list[_PartitionQueue | None]:
        """The queues of ``parts`` (the partitions ``node`` leads), None where a partition
        has none yet. Made again only when the metadata or the set of queues changed (both
        are replaced, never changed in place): looking each partition's queue up by topic
        and partition was ~170 of the I/O thread's ~5,100 bytecodes per round trip for
        records sent one at a time to a topic of 6 partitions (sys.settrace opcode count)."""
        queues = self._queues
        cached = self._drain_queues.get(node)
        if cached is not None and cached[0] is parts and cached[1] is queues:
            return cached[2]
        node_queues: list[_PartitionQueue | None] = []
        for tp in parts:
            partitions = queues.get(tp.topic)
            node_queues.append(None if partitions is None else partitions.get(tp.partition))
        self._drain_queues[node] = (parts, queues, node_queues)
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
        pooled = 0
        incomplete = self._incomplete
        with self._incomplete_lock:
            for batch in batches:
                if batch in incomplete:
                    incomplete.remove(batch)
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
                _insert_in_sequence_order(queue.batches, batch)
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
        for partitions in self._queues.values():
            for queue in partitions.values():
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

    # ------------------------------------------------------------------ flush and close

    def begin_flush(self) -> None:
        """Make every batch sendable at once until :meth:`await_flush_completion`."""
        with self._flush_lock:
            self._flushes_in_progress += 1

    def flush_in_progress(self) -> bool:
        """Whether a flush is going on."""
        return self._flushes_in_progress > 0

    def await_flush_completion(self, timeout_ms: float | None = None) -> None:
        """Wait until every batch that existed when called has completed (also the batches
        a split moved its records to), then end the flush begun by :meth:`begin_flush`.

        Raises :class:`~kafkaline.errors.KafkaTimeoutError` if that takes longer than
        ``timeout_ms`` (``None``: wait for ever); the flush ends either way.
        """
        try:
            deadline = None if timeout_ms is None else time.monotonic() + timeout_ms / 1000.0
            with self._incomplete_lock:
                results = [batch.result for batch in self._incomplete]
            for result in results:
                if not result.wait_final(deadline):
                    with self._incomplete_lock:
                        left = len(self._incomplete)
                    raise KafkaTimeoutError(
                        f"flush did not complete within {timeout_ms:.0f} ms: "
                        f"{left} batch(es) still waiting for an acknowledgement"
                    )
        finally:
            with self._flush_lock:
                self._flushes_in_progress -= 1

    def close(self) -> None:
        """Start closing: every batch becomes sendable, no new batch can be created, and
        threads waiting for buffer memory fail with ProducerClosedError. Batches already
        queued are still sent (graceful close); :meth:`abort_incomplete_batches` drops them."""
        self._closed = True
        self._pool.close()

    @property
    def is_closed(self) -> bool:
        """Whether :meth:`close` (or an abort) happened."""
        return self._closed

    def abort_incomplete_batches(self, exception: Exception | None = None) -> int:
        """Forced close: fail every incomplete batch, queued or in flight, with
        ``exception`` (default: :class:`~kafkaline.errors.ProducerClosedError`), free their
        memory, and refuse new batches. A late response for an aborted in-flight batch is
        then ignored. Returns how many batches were aborted."""
        if exception is None:
            exception = ProducerClosedError(
                "the producer was closed forcefully before the record was acknowledged"
            )
        self.close()
        # Queued batches first, under their locks: an append that started before close()
        # has finished adding its batch by the time we hold the lock, and later appends
        # see the closed flag.
        aborted = self._take_queued_batches()
        with self._incomplete_lock:
            queued = set(aborted)
            aborted.extend(batch for batch in self._incomplete if batch not in queued)
        return self._abort_batches(aborted, exception)

    def abort_undrained_batches(self, exception: Exception) -> int:
        """Fail every queued (not yet drained) batch with ``exception`` and free its memory;
        in-flight batches keep going and appends go on (Java's ``abortUndrainedBatches``,
        used when a transaction aborts). Returns how many batches were aborted."""
        return self._abort_batches(self._take_queued_batches(), exception)

    def _take_queued_batches(self) -> list[ProducerBatch]:
        """Empty every partition queue (each under its lock), closing its batches for
        appends; return what was queued."""
        taken: list[ProducerBatch] = []
        for partitions in self._queues.values():
            for queue in partitions.values():
                with queue.lock:
                    for batch in queue.batches:
                        batch.close_for_appends()
                    taken.extend(queue.batches)
                    queue.batches.clear()
        return taken

    def _abort_batches(self, batches: list[ProducerBatch], exception: Exception) -> int:
        """Fail ``batches`` with ``exception`` and free their memory; how many were still
        incomplete."""
        count = 0
        for batch in batches:
            if batch.abort(exception):
                count += 1
            self.deallocate(batch)
        return count

    # ------------------------------------------------------------------ inspecting

    def has_undrained(self) -> bool:
        """Whether any batch is queued (not yet taken by drain)."""
        # Loops rather than any() over a generator: the Sender asks after every drain.
        for partitions in self._queues.values():
            for queue in partitions.values():
                if queue.batches:
                    return True
        return False

    def has_incomplete(self) -> bool:
        """Whether any batch is not completed yet (queued or in flight)."""
        return bool(self._incomplete)

    def incomplete_count(self) -> int:
        """How many batches are not completed yet (queued or in flight)."""
        return len(self._incomplete)

    def queue_sizes(self, topic: str) -> dict[int, int]:
        """Batches queued per partition of ``topic`` (partitions that had a queue)."""
        return {
            partition: len(queue.batches)
            for partition, queue in self._queues.get(topic, {}).items()
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

    @property
    def buffer_pool(self) -> BufferPool:
        """The pool bounding the memory of queued batches."""
        return self._pool

    @property
    def batch_size(self) -> int:
        """``batch_size`` new batches are made with."""
        return self._batch_size


def _hold_memory(batch: ProducerBatch, size: int) -> None:
    """Record that ``batch`` holds ``size`` bytes of buffer memory; the compiled core's
    open-batch appender keeps its appends within them."""
    batch.pooled_bytes = size
    batch.builder.memory_cap = size


def _insert_in_sequence_order(batches: deque[ProducerBatch], batch: ProducerBatch) -> None:
    # Java's insertInSequenceOrder: batches answered out of order come back out of order,
    # and a retry must not go after a higher sequence (the broker would refuse it).
    index = 0
    for queued in batches:
        if not queued.has_sequence or queued.base_sequence > batch.base_sequence:
            break
        index += 1
    batches.insert(index, batch)
