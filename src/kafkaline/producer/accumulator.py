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

The class is put together from one module per job: ``partition_queues`` (the queues and the
sticky partitioners, one lock per partition queue), ``accumulator_append`` (the one append
protocol), ``accumulator_encoded`` (bulk appends of encoded records), ``accumulator_drain``
(the Sender's side) and ``accumulator_types`` (what it takes and returns). This module holds
its state, its public entry points for appending, flush and close.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Sequence
from typing import Protocol, cast

from kafkaline.config import ExponentialBackoff, ProducerConfig
from kafkaline.errors import IllegalStateError, KafkaTimeoutError, ProducerClosedError
from kafkaline.producer.accumulator_append import FIRST_BATCH_MEMORY
from kafkaline.producer.accumulator_drain import SenderSide
from kafkaline.producer.accumulator_encoded import EncodedAppendSide
from kafkaline.producer.accumulator_types import (
    AccumulatorCluster,
    BatchStats,
    EncodedRecordSource,
    EncodedRun,
    LeaderNode,
    OpenBatch,
    OpenBatchSender,
    ReadyCheckResult,
    RecordAppendResult,
)
from kafkaline.producer.batch import ProducerBatch
from kafkaline.producer.buffer_pool import BufferPool, new_lock
from kafkaline.producer.builtin_partitioner import BuiltInPartitioner
from kafkaline.producer.compression_ratio import CompressionRatioEstimator
from kafkaline.producer.futures import FutureRecordMetadata, ProduceRequestResult
from kafkaline.producer.partition_queues import PartitionQueue
from kafkaline.producer.partitioner import ClusterPartitions
from kafkaline.producer.pending_records import (
    BulkSegment,
    EncodedChunk,
    OneRecord,
    RecordRun,
)
from kafkaline.producer.transactions.idempotence import IdempotenceManager
from kafkaline.record import CompressionType, Headers
from kafkaline.record.batch_format import BATCH_HEADER_SIZE
from kafkaline.record.core import compiled_core
from kafkaline.record.record_encoder import RECORD_OVERHEAD_BOUND

__all__ = [
    "FIRST_BATCH_MEMORY",
    "AccumulatorCluster",
    "BatchStats",
    "BufferPool",
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


class RunStep(Protocol):
    """The compiled core's rounds of the append protocol for a run of records (its
    ``NewBatchStep.append_run``): ``(records appended, a batch made or filled)``."""

    def append_run(
        self,
        queue: PartitionQueue,
        keys: Sequence[bytes | None],
        values: Sequence[bytes | None],
        timestamp: int,
        positions: Sequence[int] | None,
        start: int,
        segments: list[BulkSegment],
        wakeup: Callable[[], None] | None,
        now: float,
    ) -> tuple[int, bool]: ...


def _not_a_step(
    topic: str, partition: int, timestamp: int, key: bytes | None, value: bytes | None
) -> FutureRecordMetadata:
    # The run step is never called as send()'s new-batch step.
    raise IllegalStateError("the run step is not send()'s new-batch step")


def _no_wakeup() -> None:
    pass


class RecordAccumulator(EncodedAppendSide, SenderSide):
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
        self._backoff_rng = self._rng
        self._adaptive = partitioner_adaptive
        self._availability_timeout_ms = partitioner_availability_timeout_ms
        #: Whether update_node_latency_stats() does anything (the Sender skips the call when
        #: not: it would be once per node with a ready batch, per pass).
        self.tracks_node_latency = partitioner_availability_timeout_ms > 0
        self._on_batch_sealed = on_batch_sealed
        # Idempotence: holds back batches whose sequence must wait, numbers the drained ones.
        self._transaction_manager = transaction_manager
        self._plain_batches = (
            self._compression is CompressionType.NONE
            and compression_level is None
            and not (transaction_manager is not None and transaction_manager.is_transactional)
        )
        self._estimator = CompressionRatioEstimator()
        self._queues: dict[str, dict[int, PartitionQueue]] = {}
        self._queue_lists: dict[str, list[PartitionQueue]] = {}
        self._queues_made = 0
        self._queues_lock = threading.Lock()
        self._sticky: dict[str, BuiltInPartitioner] = {}
        self._incomplete: set[ProducerBatch] = set()
        self._incomplete_lock = new_lock()
        self._flushes_in_progress = 0
        self._flush_lock = threading.Lock()
        self._closed = False
        #: Counts of the batches closed for sending, for metrics.
        self.batch_stats = BatchStats()
        self._init_sender_side()
        self._run_step = self._compiled_run_step()

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
        if partition is not None:
            appended = self._try_append_to_last(topic, partition, timestamp, key, value, headers)
            if appended is not None:
                return appended
        record = OneRecord(timestamp, key, value, headers)
        sendable, created = self._append_records(
            topic, partition, record, max_time_to_block_ms, now, cluster
        )
        if record.future is None:  # pragma: no cover - _append_records appends or raises
            raise IllegalStateError("a record was not appended")
        return record.future, sendable, created

    def append_to_new_batch(
        self,
        topic: str,
        partition: int,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        max_time_to_block_ms: float,
        now: float,
    ) -> RecordAppendResult:
        """:meth:`append` for a record (bytes or None, no headers) whose partition's last
        batch was just found unable to take it, or missing: by the compiled send() (see
        :meth:`open_batch_sender`), which checked the record and chose its partition. The
        append protocol starts at its second step: memory for a new batch from the pool
        (with no lock held, blocking up to ``max_time_to_block_ms``), then under the queue's
        lock a new batch with the record, unless another thread made one meanwhile that
        takes it. Same result and errors as :meth:`append`."""
        record = OneRecord(timestamp, key, value, None)
        sendable, created = self._append_records(
            topic, partition, record, max_time_to_block_ms, now, None, last_batch_full=True
        )
        if record.future is None:  # pragma: no cover - _append_records appends or raises
            raise IllegalStateError("a record was not appended")
        return record.future, sendable, created

    def open_batch_sender(self, payload_limit: int) -> OpenBatchSender | None:
        """Producer.send()'s common case in one compiled call, when the compiled record core
        is in use (else ``None``): ``sender(topic, value, key, headers, partition,
        timestamp_ms)`` appends a record of bytes (or None) without headers, whose key and
        value take at most ``payload_limit`` bytes, to the open batch of the partition
        :meth:`append` would choose (the given one, murmur2 of the key, or the topic's sticky
        partition while no switch is due), and returns its future. Else, with nothing done,
        it returns what ``sender.fallback`` (send()'s general path, which takes
        :meth:`append`) returns for the same arguments, or ``None`` without fallback. The
        record core owns the open batch's buffer, so it takes the queue's lock and encodes
        into it itself. A keyed record or one with its partition, whose partition's queue
        has no batch that could take it, goes to ``sender.new_batch`` instead (if set):
        the producer's step into :meth:`append_to_new_batch`.

        The caller sets ``sender.open`` while sends may go straight on and
        ``sender.partition_counts`` to its topic -> partition count map (a topic not in it
        is ``None``), set again whenever a count changes: the sender keeps each topic's
        count until then, and the queues and sticky partitioners it found for good."""
        core = compiled_core()
        if core is None:
            return None
        sender: OpenBatchSender = core.OpenBatchSender(
            self, FutureRecordMetadata, payload_limit, RECORD_OVERHEAD_BOUND
        )
        return sender

    def new_batch_step(
        self,
        fallback: Callable[[str, int, int, bytes | None, bytes | None], FutureRecordMetadata],
        wakeup: Callable[[], None],
    ) -> Callable[[str, int, int, bytes | None, bytes | None], FutureRecordMetadata]:
        """What :meth:`open_batch_sender`'s ``new_batch`` is set to: ``fallback`` (the
        producer's step into :meth:`append_to_new_batch`), or with the compiled core and
        batches that are not transactional (plain or compressed) a compiled step that makes
        the new batch itself when the append protocol would do nothing else (the pool has the
        memory free now and nobody waits, the accumulator is open, the queue's last batch
        takes nothing more without more memory) and calls ``wakeup`` after, as the producer
        does for a new batch; every other record goes to ``fallback``. A compressed batch is
        made with the topic's estimated compression ratio, as :meth:`_new_batch` makes it."""
        core = compiled_core()
        manager = self._transaction_manager
        if core is None or (manager is not None and manager.is_transactional):
            return fallback
        compressed = self._compression is not CompressionType.NONE
        if not compressed and self._compression_level is not None:
            return fallback  # a level without a codec: rare, left to the protocol
        step: Callable[[str, int, int, bytes | None, bytes | None], FutureRecordMetadata] = (
            core.NewBatchStep(
                self,
                self._pool,
                self._incomplete,
                self._incomplete_lock,
                ProducerBatch,
                ProduceRequestResult,
                FutureRecordMetadata,
                self._batch_size,
                self._first_batch_memory,
                RECORD_OVERHEAD_BOUND,
                fallback,
                wakeup,
                compression=self._compression,
                compression_level=self._compression_level,
                estimate=self._estimator.estimate,
            )
        )
        return step

    def _compiled_run_step(self) -> RunStep | None:
        """The compiled core's rounds of the append protocol for :meth:`append_many`'s runs
        (see :meth:`new_batch_step`: the same step, the same cases), or ``None``."""
        step = self.new_batch_step(_not_a_step, _no_wakeup)
        return None if step is _not_a_step else cast("RunStep", step)

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
        positions: Sequence[int] | None = None,
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
        ``positions``, if given, are the input indexes of the records to append, in order
        (one partition's records of a larger call); the segments count in them.
        """
        segments: list[BulkSegment] = [] if into is None else into
        run = RecordRun(timestamp, keys, values, headers, segments, positions)
        made = False
        step = self._run_step
        if (
            step is not None
            and partition is not None
            and headers is None
            and type(timestamp) is int
            and not run.done
        ):
            # The protocol's common rounds in the compiled core; it stops where a round needs
            # anything else, and the protocol below goes on from there.
            queue = self._queue(topic, partition)
            appended, made = step.append_run(
                queue, keys, values, timestamp, positions, 0, segments, wakeup, float(now)
            )
            run.advance(appended)
        if run.done:
            return segments, made
        sendable, created = self._append_records(
            topic, partition, run, max_time_to_block_ms, now, cluster, wakeup
        )
        return segments, sendable or created or made

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

    def has_incomplete(self) -> bool:
        """Whether any batch is not completed yet (queued or in flight)."""
        return bool(self._incomplete)

    def incomplete_count(self) -> int:
        """How many batches are not completed yet (queued or in flight)."""
        return len(self._incomplete)

    @property
    def buffer_pool(self) -> BufferPool:
        """The pool bounding the memory of queued batches."""
        return self._pool

    @property
    def batch_size(self) -> int:
        """``batch_size`` new batches are made with."""
        return self._batch_size
