"""Producer metrics: cumulative counters the Sender bumps, rates computed when they are read.

Nothing here runs per record. The Sender updates :class:`SenderCounters` once per batch, per
request and per response, on its own thread (plain attribute writes, no lock: there is one
writer, and readers on other threads see each value whole). :meth:`ProducerMetrics.read`
turns the counters, the buffer pool's state and the accumulator's batch statistics into the
dictionary :meth:`Producer.metrics() <kafkaline.producer.producer.Producer.metrics>` returns,
with the Java producer's metric names.

Rates (``*-rate``, per second) are measured over a window of about ``window_ms`` (30 s by
default, like one of Java's two samples): each read keeps a snapshot of the totals, and a
rate is the growth of its total since the newest snapshot at least a window old (the
producer's start when there is none). So the first read gives the average since the start,
and a monitoring loop reading every few seconds sees the last ~30 s.

>>> counters = SenderCounters()
>>> metrics = ProducerMetrics(counters, start_ms=0.0)
>>> counters.record_request(records=500, size_bytes=60_000, queue_times_ms=[4.0, 6.0])
>>> counters.record_response(latency_ms=3.0, throttle_ms=0)
>>> values = metrics.read(now_ms=2_000.0)
>>> values["record-send-total"], values["record-send-rate"], values["request-latency-avg"]
(500.0, 250.0, 3.0)
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterable
from typing import Final, Protocol

__all__ = ["BatchStatsView", "BufferPoolView", "ProducerMetrics", "SenderCounters"]

#: The totals that have a ``-rate`` twin, in the order of :meth:`SenderCounters.totals`.
_RATED: Final = (
    "record-send",
    "record-error",
    "record-retry",
    "request",
    "response",
    "outgoing-byte",
    "batch-split",
)
_MIN_SNAPSHOT_GAP_MS: Final = 1_000.0


class SenderCounters:
    """Cumulative counts of what the Sender did. Written by the Sender's thread only."""

    __slots__ = (
        "batch_size_max",
        "batch_splits",
        "bytes_sent",
        "queue_time_max_ms",
        "queue_time_total_ms",
        "queued_batches",
        "records_errored",
        "records_retried",
        "records_sent",
        "request_latency_max_ms",
        "request_latency_total_ms",
        "requests",
        "requests_in_flight",
        "responses",
        "throttle_max_ms",
        "throttle_total_ms",
    )

    def __init__(self) -> None:
        #: Records put into produce requests (Java's ``record-send``; retries count again).
        self.records_sent = 0
        #: Records whose send failed for good.
        self.records_errored = 0
        #: Records re-enqueued after a retriable error.
        self.records_retried = 0
        #: Produce requests sent, and responses (or failures) received for them.
        self.requests = 0
        self.responses = 0
        #: Produce requests sent and not completed yet.
        self.requests_in_flight = 0
        #: Bytes of record batches sent.
        self.bytes_sent = 0
        self.request_latency_total_ms = 0.0
        self.request_latency_max_ms = 0.0
        self.throttle_total_ms = 0.0
        self.throttle_max_ms = 0.0
        #: Batches drained for sending, and how long they had waited since their creation.
        self.queued_batches = 0
        self.queue_time_total_ms = 0.0
        self.queue_time_max_ms = 0.0
        #: Largest batch sent (wire bytes).
        self.batch_size_max = 0
        #: Batches split after MESSAGE_TOO_LARGE.
        self.batch_splits = 0

    def record_request(
        self,
        *,
        records: int,
        size_bytes: int,
        queue_times_ms: Iterable[float],
        largest_batch_bytes: int = 0,
    ) -> None:
        """A produce request was sent with ``records`` records in ``size_bytes`` of batches,
        whose batches had waited ``queue_times_ms`` since they were created; the largest
        was ``largest_batch_bytes`` (:meth:`record_batch_size` in the same call: once per
        request on the I/O thread)."""
        if largest_batch_bytes > self.batch_size_max:
            self.batch_size_max = largest_batch_bytes
        self.requests += 1
        self.requests_in_flight += 1
        self.records_sent += records
        self.bytes_sent += size_bytes
        for waited in queue_times_ms:
            self.queued_batches += 1
            self.queue_time_total_ms += waited
            if waited > self.queue_time_max_ms:
                self.queue_time_max_ms = waited

    def record_response(self, *, latency_ms: float, throttle_ms: float) -> None:
        """A produce request completed (with a response, or with a connection error or
        timeout: then ``throttle_ms`` is 0)."""
        self.responses += 1
        self.requests_in_flight -= 1
        self.request_latency_total_ms += latency_ms
        if latency_ms > self.request_latency_max_ms:
            self.request_latency_max_ms = latency_ms
        self.throttle_total_ms += throttle_ms
        if throttle_ms > self.throttle_max_ms:
            self.throttle_max_ms = throttle_ms

    def record_batch_size(self, size_bytes: int) -> None:
        """A batch of ``size_bytes`` was sent (the Sender gives the largest of each
        request)."""
        if size_bytes > self.batch_size_max:
            self.batch_size_max = size_bytes

    def totals(self) -> tuple[float, ...]:
        """The totals that have rates, in the order of ``_RATED``."""
        return (
            float(self.records_sent),
            float(self.records_errored),
            float(self.records_retried),
            float(self.requests),
            float(self.responses),
            float(self.bytes_sent),
            float(self.batch_splits),
        )


class BufferPoolView(Protocol):
    """What the metrics read from the buffer pool."""

    @property
    def total_memory(self) -> int: ...

    @property
    def available_memory(self) -> int: ...

    @property
    def queued(self) -> int: ...

    @property
    def wait_time_total_ms(self) -> float: ...


class BatchStatsView(Protocol):
    """What the metrics read from the accumulator's batch statistics."""

    @property
    def batch_size_avg(self) -> float: ...

    @property
    def records_per_batch_avg(self) -> float: ...

    @property
    def compression_rate_avg(self) -> float: ...


class ProducerMetrics:
    """Reads :class:`SenderCounters` (and the pool and batch statistics, when given) into a
    dictionary of Java-named metrics. Safe from any thread."""

    def __init__(
        self,
        counters: SenderCounters,
        *,
        start_ms: float,
        window_ms: float = 30_000.0,
        buffer_pool: BufferPoolView | None = None,
        batch_stats: BatchStatsView | None = None,
    ) -> None:
        self._counters = counters
        self._window_ms = window_ms
        self._buffer_pool = buffer_pool
        self._batch_stats = batch_stats
        self._lock = threading.Lock()
        self._snapshots: deque[tuple[float, tuple[float, ...]]] = deque(
            [(start_ms, (0.0,) * len(_RATED))]
        )

    def _rates(self, now_ms: float, totals: tuple[float, ...]) -> tuple[float, ...]:
        with self._lock:
            snapshots = self._snapshots
            # Drop snapshots while the next one is old enough to be the baseline itself.
            while len(snapshots) > 1 and snapshots[1][0] <= now_ms - self._window_ms:
                snapshots.popleft()
            base_ms, base = snapshots[0]
            # Reads in a tight loop add at most one snapshot a second: the deque stays small.
            if now_ms - snapshots[-1][0] >= _MIN_SNAPSHOT_GAP_MS:
                snapshots.append((now_ms, totals))
        elapsed_s = max(now_ms - base_ms, 1.0) / 1000.0
        return tuple((total - start) / elapsed_s for total, start in zip(totals, base, strict=True))

    def read(self, now_ms: float) -> dict[str, float]:
        """Every metric at ``now_ms`` (monotonic milliseconds)."""
        counters = self._counters
        totals = counters.totals()
        values: dict[str, float] = {}
        for name, total, rate in zip(_RATED, totals, self._rates(now_ms, totals), strict=True):
            values[f"{name}-total"] = total
            values[f"{name}-rate"] = rate
        requests = counters.requests
        responses = counters.responses
        batches = counters.queued_batches
        values["records-per-request-avg"] = counters.records_sent / requests if requests else 0.0
        values["request-latency-avg"] = (
            counters.request_latency_total_ms / responses if responses else 0.0
        )
        values["request-latency-max"] = counters.request_latency_max_ms
        values["produce-throttle-time-avg"] = (
            counters.throttle_total_ms / responses if responses else 0.0
        )
        values["produce-throttle-time-max"] = counters.throttle_max_ms
        values["requests-in-flight"] = float(max(counters.requests_in_flight, 0))
        values["record-queue-time-avg"] = counters.queue_time_total_ms / batches if batches else 0.0
        values["record-queue-time-max"] = counters.queue_time_max_ms
        values["batch-size-max"] = float(counters.batch_size_max)
        stats = self._batch_stats
        if stats is not None:
            values["batch-size-avg"] = stats.batch_size_avg
            values["records-per-batch-avg"] = stats.records_per_batch_avg
            values["compression-rate-avg"] = stats.compression_rate_avg
        pool = self._buffer_pool
        if pool is not None:
            values["buffer-total-bytes"] = float(pool.total_memory)
            values["buffer-available-bytes"] = float(pool.available_memory)
            # Java reports this total in nanoseconds (also under the -ns- name).
            wait_ns = pool.wait_time_total_ms * 1e6
            values["bufferpool-wait-time-total"] = wait_ns
            values["bufferpool-wait-time-ns-total"] = wait_ns
            values["waiting-threads"] = float(pool.queued)
        return values
