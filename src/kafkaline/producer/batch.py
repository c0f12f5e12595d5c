""":class:`ProducerBatch`: the records of one topic-partition sent together, and their fate.

A batch wraps a :class:`~kafkaline.record.RecordBatchBuilder` (records are encoded as they are
appended; the batch is compressed when it is closed for sending, on the Sender's thread) and one
:class:`~kafkaline.producer.futures.ProduceRequestResult` that completes every record's
future at once. It also keeps what the accumulator decides with: when it was created, when it
was last tried, how often, how long it must back off before the next try.

Completion happens exactly once. A batch that already failed or was aborted may still get a
late answer: a forced close (or a delivery timeout) fails a batch that is in flight, then the
broker's response arrives. That race is expected, so the second completion is ignored and
logged at debug level, as Java's ``ProducerBatch.done`` does. A second answer for a batch
that *succeeded* (or was split) cannot come from that race: :meth:`ProducerBatch.done` then
raises :class:`~kafkaline.errors.IllegalStateError`, it is a bug. :meth:`ProducerBatch.abort`
never raises: a forced close sweeps over batches that may complete under it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from kafkaline.errors import DeliveryTimeoutError, IllegalStateError
from kafkaline.net.cluster import TopicPartition
from kafkaline.producer.futures import (
    ABORTED,
    FAILED,
    SPLIT,
    SUCCEEDED,
    BatchState,
    FutureRecordMetadata,
    ProduceRequestResult,
)
from kafkaline.producer.record_metadata import NO_TIMESTAMP, UNKNOWN_OFFSET
from kafkaline.record import CompressionType, Headers, RecordBatchBuilder
from kafkaline.record.batch_format import BATCH_HEADER_SIZE, NO_SEQUENCE

__all__ = ["ProducerBatch"]

_log = logging.getLogger(__name__)
# A global: on Python 3.11 CompressionType.NONE goes through EnumType.__getattr__'s hook.
_NO_COMPRESSION = CompressionType.NONE


class ProducerBatch:
    """Records for one topic-partition, appended by user threads, sent by the Sender.

    Times are milliseconds of the producer's monotonic clock (floats). Not thread-safe by
    itself: the accumulator appends under its partition's lock, and once drained a batch
    belongs to the Sender; :meth:`done` and :meth:`abort` may race and are safe.

    >>> from kafkaline.net.cluster import TopicPartition
    >>> batch = ProducerBatch(TopicPartition("events", 0), created_ms=0.0)
    >>> future = batch.try_append(1_700_000_000_000, b"key", b"value")
    >>> batch.close()
    >>> batch.done(base_offset=100, log_append_time=-1)
    True
    >>> future.get(0).offset
    100
    """

    __slots__ = (
        "attempts",
        "builder",
        "compression_level",
        "created_ms",
        "drained_ms",
        "held_by_appenders",
        "is_split_batch",
        "is_transactional",
        "last_attempt_ms",
        "pooled_bytes",
        "result",
        "retry_backoff_ms",
        "topic_partition",
    )

    def __init__(
        self,
        topic_partition: TopicPartition,
        created_ms: float,
        batch_size: int = 16384,
        *,
        compression: int = CompressionType.NONE,
        compression_level: int | None = None,
        estimated_compression_ratio: float = 1.0,
        is_transactional: bool = False,
        pooled_bytes: int = 0,
        is_split_batch: bool = False,
    ) -> None:
        # The compiled core's new-batch step makes the batches of non-transactional producers
        # (plain or compressed) without this call, giving every slot the value it gets here; a
        # Hypothesis test holds the two alike (tests/unit/producer/test_send_new_batch.py).
        self.topic_partition = topic_partition
        # batch_size 0 means "no batching" in Kafka: one record per batch. The builder always
        # takes a first record, whatever its limit.
        limit = batch_size if batch_size > BATCH_HEADER_SIZE else BATCH_HEADER_SIZE + 1
        #: The batch's records (under the partition's lock until drained).
        if (
            compression is _NO_COMPRESSION
            and compression_level is None
            and estimated_compression_ratio == 1.0
            and not is_transactional
        ):
            # The usual batch: keywords make the compiled builder's call dearer, and with many
            # partitions a batch is made per record or two (docs/performance.md, newbatch2).
            self.builder = RecordBatchBuilder(limit)
        else:
            self.builder = RecordBatchBuilder(
                limit,
                compression=compression,
                compression_level=compression_level,
                estimated_compression_ratio=estimated_compression_ratio,
                is_transactional=is_transactional,
            )
        self.is_transactional = is_transactional
        self.compression_level = compression_level
        #: Completes every record's future.
        self.result = ProduceRequestResult(topic_partition.topic, topic_partition.partition)
        self.created_ms = created_ms
        #: When the batch was created or last re-enqueued: linger and backoff count from it.
        self.last_attempt_ms = created_ms
        #: When the batch was last drained for sending.
        self.drained_ms = created_ms
        #: How often it was re-enqueued after a failed try.
        self.attempts = 0
        #: How long to wait after ``last_attempt_ms`` before trying again (set on re-enqueue).
        self.retry_backoff_ms = 0.0
        #: Bytes of ``buffer_memory`` this batch holds, returned when it is deallocated.
        self.pooled_bytes = pooled_bytes
        #: Made by :meth:`split` (outside the buffer pool, as in Java).
        self.is_split_batch = is_split_batch
        #: Bulk appends (``send_arrow()``) encoding records for this open batch right now:
        #: while above 0 the Sender leaves the batch queued (see
        #: ``RecordAccumulator.append_encoded``). Changed under the partition's lock.
        self.held_by_appenders = 0

    # ------------------------------------------------------------------ appending

    def try_append(
        self,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        headers: Headers | None = None,
    ) -> FutureRecordMetadata | None:
        """Add a record; return its future, or ``None`` if the batch is full or closed.

        Raises what :meth:`RecordBatchBuilder.append
        <kafkaline.record.RecordBatchBuilder.append>` raises for a bad record.
        """
        offset_delta = self.builder.append(timestamp, key, value, headers)
        if offset_delta is None:
            return None
        return FutureRecordMetadata(
            self.result,
            offset_delta,
            -1 if key is None else len(key),
            -1 if value is None else len(value),
            timestamp,
        )

    # ------------------------------------------------------------------ inspecting

    @property
    def topic(self) -> str:
        """The batch's topic."""
        return self.topic_partition.topic

    @property
    def partition(self) -> int:
        """The batch's partition."""
        return self.topic_partition.partition

    @property
    def record_count(self) -> int:
        """Records in the batch."""
        return len(self.builder)

    @property
    def estimated_size_in_bytes(self) -> int:
        """Size on the wire: exact once closed, an upper bound before."""
        return self.builder.estimated_size_in_bytes

    @property
    def is_full(self) -> bool:
        """Whether no more records fit (or the batch is closed for appends)."""
        return self.builder.is_full

    @property
    def is_closed(self) -> bool:
        """Whether appends are refused."""
        return self.builder.is_closed

    @property
    def in_retry(self) -> bool:
        """Whether the batch was tried before and re-enqueued."""
        return self.attempts > 0

    @property
    def final_state(self) -> BatchState | None:
        """How the batch ended, ``None`` while pending."""
        return self.result.state

    @property
    def compression_ratio(self) -> float:
        """Compressed / uncompressed size of the records, once closed (1.0 before, and
        without compression)."""
        uncompressed = self.builder.uncompressed_records_size
        if not uncompressed or not self.builder.compression:
            return 1.0
        return (self.builder.estimated_size_in_bytes - BATCH_HEADER_SIZE) / uncompressed

    def waited_ms(self, now: float) -> float:
        """Time since creation or the last re-enqueue."""
        return max(0.0, now - self.last_attempt_ms)

    def is_backing_off(self, now: float) -> bool:
        """Whether the batch is re-enqueued and its retry backoff has not passed yet."""
        return self.attempts > 0 and now - self.last_attempt_ms < self.retry_backoff_ms

    def has_reached_delivery_timeout(self, delivery_timeout_ms: float, now: float) -> bool:
        """Whether ``delivery_timeout_ms`` passed since the batch was created."""
        return now - self.created_ms >= delivery_timeout_ms

    def delivery_timeout_error(
        self, delivery_timeout_ms: float, now: float
    ) -> DeliveryTimeoutError:
        """The error expired records fail with: how many, where, how old, and the limit."""
        return DeliveryTimeoutError(
            f"Expiring {self.record_count} record(s) for {self.topic}-{self.partition}: "
            f"{now - self.created_ms:.0f} ms has passed since batch creation "
            f"(delivery_timeout_ms={delivery_timeout_ms:.0f})"
        )

    # ------------------------------------------------------------------ sending

    def close_for_appends(self) -> None:
        """Refuse further appends; cheap (nothing is encoded). Java's abortRecordAppends."""
        self.builder.close_for_appends()

    def close(self) -> None:
        """Close for appends and encode (and compress) the records once: done by the
        Sender's thread at drain time. Idempotent."""
        self.builder.seal()

    def set_producer_state(self, producer_id: int, producer_epoch: int, base_sequence: int) -> None:
        """Set the idempotence fields (at drain time; also after :meth:`close`)."""
        self.builder.set_producer_state(producer_id, producer_epoch, base_sequence)

    @property
    def has_sequence(self) -> bool:
        """Whether the batch was given a sequence (idempotence, at its first drain)."""
        return self.builder.base_sequence != NO_SEQUENCE

    @property
    def base_sequence(self) -> int:
        """The sequence of its first record (-1 without idempotence)."""
        return self.builder.base_sequence

    @property
    def producer_id_and_epoch(self) -> tuple[int, int]:
        """The producer id and epoch it carries (``(-1, -1)`` without idempotence)."""
        return (self.builder.producer_id, self.builder.producer_epoch)

    def build(self) -> bytes | bytearray:
        """The batch's wire bytes (closing it first if needed; see
        :meth:`RecordBatchBuilder.build_buffer
        <kafkaline.record.RecordBatchBuilder.build_buffer>`: uncompressed, a bytearray)."""
        return self.builder.build_buffer()

    def drained(self, now: float) -> None:
        """Note that the Sender took the batch at ``now``."""
        self.drained_ms = max(self.drained_ms, now)

    def reenqueued(self, now: float, retry_backoff_ms: float) -> None:
        """Note a failed try: one more attempt, and no new try before ``retry_backoff_ms``
        after ``now``."""
        self.attempts += 1
        self.last_attempt_ms = max(self.last_attempt_ms, now)
        self.retry_backoff_ms = retry_backoff_ms

    def skip_retry_backoff(self) -> None:
        """Let a re-enqueued batch go again at once: its partition has a new leader, which
        a broker named (KIP-951), so there is nothing to wait for."""
        self.retry_backoff_ms = 0.0

    # ------------------------------------------------------------------ completing

    def done(
        self,
        base_offset: int,
        log_append_time: int = NO_TIMESTAMP,
        exception: Exception | None = None,
        record_errors: Mapping[int, Exception] | None = None,
    ) -> bool:
        """Complete the batch from a produce response: the records' offsets are
        ``base_offset + offset delta`` (-1 with acks=0), their timestamps the log-append
        time when the topic uses it (else -1 here). With ``exception`` every record fails
        with it, except those in ``record_errors`` (offset delta -> the broker's
        per-record error, KIP-467).

        Returns ``True`` if this call completed the batch, ``False`` if it had already
        failed or been aborted (the late-response race; logged at debug level). Raises
        :class:`IllegalStateError` if it had already succeeded or been split.
        """
        if exception is None:
            state = SUCCEEDED
            previous = self.result.complete(state, base_offset, log_append_time)
        else:
            state = FAILED
            previous = self.result.complete(
                state, UNKNOWN_OFFSET, NO_TIMESTAMP, exception, record_errors
            )
        return previous is None or self._completed_before(previous, state)

    def abort(self, exception: Exception) -> bool:
        """Fail the records with ``exception`` without an answer from the broker (forced
        close). Returns ``False``, changing nothing, if the batch had already completed in
        any way: an abort sweeps over batches that may complete meanwhile."""
        self.close_for_appends()
        previous = self.result.complete(ABORTED, UNKNOWN_OFFSET, NO_TIMESTAMP, exception)
        if previous is not None:
            _log.debug(
                "not aborting a %s batch for %s-%d", previous.value, self.topic, self.partition
            )
        return previous is None

    def _completed_before(self, previous: BatchState, state: BatchState) -> bool:
        """An attempt to complete as ``state`` a batch that was ``previous`` already: raise
        if that is a bug, else log it and return False."""
        if previous is SUCCEEDED or previous is SPLIT:
            raise IllegalStateError(
                f"a {previous.value} batch for {self.topic}-{self.partition} must not be "
                f"completed again as {state.value}"
            )
        _log.debug(
            "ignored completing a %s batch for %s-%d as %s (a late answer after a forced "
            "abort or a delivery timeout)",
            previous.value,
            self.topic,
            self.partition,
            state.value,
        )
        return False

    # ------------------------------------------------------------------ splitting

    def split(self, split_size: int) -> list[ProducerBatch]:
        """Re-batch the records into batches of at most ``split_size`` bytes (KIP-126, after
        a MESSAGE_TOO_LARGE answer), in order, and redirect this batch's futures to them: the
        handles users hold complete with the new batches' offsets. A record larger than
        ``split_size`` gets a batch of its own.

        The new batches are closed for appends, keep this batch's creation time (the delivery
        timeout still counts from the first append), start with no attempts, are not counted
        in the buffer pool, and get consecutive sequences if this batch had one. The Sender
        splits only batches with more than one record; a single record too large fails.
        """
        from kafkaline.record.reader import read_record_batches  # rare: not at start-up

        (decoded,) = read_record_batches(self.build())
        codec = self.builder.compression
        new_batches: list[ProducerBatch] = []
        targets: list[tuple[ProduceRequestResult, int]] = []
        current: ProducerBatch | None = None
        for record in decoded.records:
            batch = current
            offset_delta = (
                None
                if batch is None
                else batch.builder.append(
                    record.timestamp, record.key, record.value, record.headers
                )
            )
            if batch is None or offset_delta is None:
                batch = current = ProducerBatch(
                    self.topic_partition,
                    created_ms=self.created_ms,
                    batch_size=split_size,
                    compression=codec,
                    compression_level=self.compression_level,
                    is_transactional=self.is_transactional,
                    is_split_batch=True,
                )
                new_batches.append(batch)
                offset_delta = batch.builder.append(
                    record.timestamp, record.key, record.value, record.headers
                )
                if offset_delta is None:  # pragma: no cover - a first record always fits
                    raise IllegalStateError("a record did not fit an empty batch")
            targets.append((batch.result, offset_delta))
        for batch in new_batches:
            # Their records are all there: a split part at the tail of an empty queue must
            # not take new records (they would jump ahead of a retried sequence).
            batch.close_for_appends()
        if decoded.base_sequence != NO_SEQUENCE:
            sequence = decoded.base_sequence
            for batch in new_batches:
                batch.set_producer_state(decoded.producer_id, decoded.producer_epoch, sequence)
                sequence += batch.record_count
        previous = self.result.redirect(targets)
        if previous is not None:
            raise IllegalStateError(
                f"cannot split a {previous.value} batch for {self.topic}-{self.partition}"
            )
        return new_batches

    def __repr__(self) -> str:
        state = "pending" if self.result.state is None else self.result.state.value
        return (
            f"<ProducerBatch {self.topic}-{self.partition} records={self.record_count} "
            f"attempts={self.attempts} {state}>"
        )
