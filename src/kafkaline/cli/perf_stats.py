"""Latency and throughput statistics for ``kafkaline perf``, printed in the shapes of Java's
``kafka-producer-perf-test.sh`` so scripts written against its output keep working:

    every 5 s:   N records sent, X records/sec (Y MB/sec), A ms avg latency, M ms max latency.
    at the end:  N records sent, X records/sec (Y MB/sec), A ms avg latency, M ms max latency,
                 P50 ms 50th, P95 ms 95th, P99 ms 99th, P999 ms 99.9th.   (on one line)

Pure: the caller passes the clock readings in, so the arithmetic is tested without sleeping.
Latencies are whole milliseconds from send() to the acknowledgement, as in Java.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Final

#: How often a window line is printed, as in the Java tool.
REPORTING_INTERVAL_MS: Final = 5_000
#: At most this many latencies are kept for the percentiles (every n-th record beyond that),
#: the Java tool's bound: memory stays flat however many records are sent.
MAX_LATENCY_SAMPLES: Final = 500_000
PERCENTILES: Final = (0.5, 0.95, 0.99, 0.999)

_MIB: Final = 1024.0 * 1024.0


@dataclass(frozen=True, slots=True)
class PerfSummary:
    """The final result of a perf run; ``--json`` prints it as an object with these keys."""

    records: int
    failed: int
    elapsed_ms: int
    records_per_sec: float
    mb_per_sec: float
    avg_latency_ms: float
    max_latency_ms: int
    p50_ms: int
    p95_ms: int
    p99_ms: int
    p999_ms: int

    def java_line(self) -> str:
        """The Java tool's final line."""
        return (
            f"{self.records} records sent, {self.records_per_sec:f} records/sec "
            f"({self.mb_per_sec:.2f} MB/sec), {self.avg_latency_ms:.2f} ms avg latency, "
            f"{float(self.max_latency_ms):.2f} ms max latency, {self.p50_ms} ms 50th, "
            f"{self.p95_ms} ms 95th, {self.p99_ms} ms 99th, {self.p999_ms} ms 99.9th."
        )

    def as_json_dict(self) -> dict[str, int | float]:
        """The summary as plain JSON values."""
        return asdict(self)


def window_line(records: int, total_bytes: int, elapsed_ms: int, latency_sum_ms: int,
                max_latency_ms: int) -> str:  # fmt: skip
    """One Java-shaped window line.

    >>> window_line(records=1000, total_bytes=1024 * 1024, elapsed_ms=500, latency_sum_ms=3000,
    ...             max_latency_ms=9)
    '1000 records sent, 2000.0 records/sec (2.00 MB/sec), 3.0 ms avg latency, 9.0 ms max latency.'
    """
    elapsed = max(elapsed_ms, 1)  # a window always spans at least the reporting interval
    return (
        f"{records} records sent, {1000.0 * records / elapsed:.1f} records/sec "
        f"({1000.0 * total_bytes / elapsed / _MIB:.2f} MB/sec), "
        f"{latency_sum_ms / records if records else 0.0:.1f} ms avg latency, "
        f"{float(max_latency_ms):.1f} ms max latency."
    )


def percentiles(latencies: list[int], wanted: tuple[float, ...] = PERCENTILES) -> list[int]:
    """The latencies at the ``wanted`` fractions, picked as Java picks them: index
    ``int(fraction * count)`` of the sorted samples (0 for no samples).

    >>> percentiles(list(range(1, 1001)))
    [501, 951, 991, 1000]
    """
    if not latencies:
        return [0 for _ in wanted]
    ordered = sorted(latencies)
    return [ordered[min(int(fraction * len(ordered)), len(ordered) - 1)] for fraction in wanted]


class PerfStats:
    """Counts acknowledged records, prints a window line every 5 s, and sums up at the end.

    Not thread-safe: the caller serialises :meth:`record` (callbacks may run on the
    producer's I/O thread and on the sending thread).

    >>> stats = PerfStats(expected_records=3, start_ms=0)
    >>> stats.record(0, latency_ms=4, size=100, now_ms=10) is None
    True
    >>> stats.record(1, latency_ms=6, size=100, now_ms=5_000)
    '2 records sent, 0.4 records/sec (0.00 MB/sec), 5.0 ms avg latency, 6.0 ms max latency.'
    >>> stats.summary(now_ms=10_000).p50_ms
    6
    """

    def __init__(
        self,
        expected_records: int,
        start_ms: int,
        reporting_interval_ms: int = REPORTING_INTERVAL_MS,
    ) -> None:
        self._start_ms = start_ms
        self._reporting_interval_ms = reporting_interval_ms
        # Keep every n-th latency so that at most MAX_LATENCY_SAMPLES are kept.
        self._sampling = max(1, math.ceil(expected_records / MAX_LATENCY_SAMPLES))
        self._latencies: list[int] = []
        self.count = 0
        self.failed = 0
        self._bytes = 0
        self._latency_sum_ms = 0
        self._max_latency_ms = 0
        self._window_start_ms = start_ms
        self._window_count = 0
        self._window_bytes = 0
        self._window_latency_sum_ms = 0
        self._window_max_latency_ms = 0

    def record(self, iteration: int, latency_ms: int, size: int, now_ms: int) -> str | None:
        """Count one acknowledged record (``iteration`` is its number in the run); return a
        window line when the window is full, else None."""
        self.count += 1
        self._bytes += size
        self._latency_sum_ms += latency_ms
        self._max_latency_ms = max(self._max_latency_ms, latency_ms)
        self._window_count += 1
        self._window_bytes += size
        self._window_latency_sum_ms += latency_ms
        self._window_max_latency_ms = max(self._window_max_latency_ms, latency_ms)
        if iteration % self._sampling == 0:
            self._latencies.append(latency_ms)
        if now_ms - self._window_start_ms >= self._reporting_interval_ms:
            line = window_line(
                self._window_count,
                self._window_bytes,
                now_ms - self._window_start_ms,
                self._window_latency_sum_ms,
                self._window_max_latency_ms,
            )
            self._new_window(now_ms)
            return line
        return None

    def record_failure(self) -> None:
        """Count one record that was not delivered (it is not in the latency figures)."""
        self.failed += 1

    def summary(self, now_ms: int) -> PerfSummary:
        """The totals from the start until ``now_ms``."""
        elapsed_ms = max(now_ms - self._start_ms, 1)
        p50, p95, p99, p999 = percentiles(self._latencies)
        return PerfSummary(
            records=self.count,
            failed=self.failed,
            elapsed_ms=elapsed_ms,
            records_per_sec=1000.0 * self.count / elapsed_ms,
            mb_per_sec=1000.0 * self._bytes / elapsed_ms / _MIB,
            avg_latency_ms=self._latency_sum_ms / self.count if self.count else 0.0,
            max_latency_ms=self._max_latency_ms,
            p50_ms=p50,
            p95_ms=p95,
            p99_ms=p99,
            p999_ms=p999,
        )

    def _new_window(self, now_ms: int) -> None:
        self._window_start_ms = now_ms
        self._window_count = 0
        self._window_bytes = 0
        self._window_latency_sum_ms = 0
        self._window_max_latency_ms = 0


class Throttle:
    """Keeps a send loop at ``records_per_sec`` on average since the start (any negative
    value: unlimited), like the Java tool's ThroughputThrottler.

    >>> Throttle(records_per_sec=100).delay_s(sent=50, elapsed_s=0.2)  # 50 records take 0.5 s
    0.3
    >>> Throttle(records_per_sec=-1).delay_s(sent=10**9, elapsed_s=0.0)
    0.0
    """

    def __init__(self, records_per_sec: float) -> None:
        if records_per_sec == 0:
            raise ValueError("a throughput of 0 records/s would never send; use -1 for unlimited")
        self.records_per_sec = records_per_sec

    @property
    def unlimited(self) -> bool:
        """Whether there is no limit."""
        return self.records_per_sec < 0

    def delay_s(self, sent: int, elapsed_s: float) -> float:
        """How long to pause now, after ``sent`` records in ``elapsed_s`` seconds."""
        if self.unlimited:
            return 0.0
        return round(max(0.0, sent / self.records_per_sec - elapsed_s), 9)


def metrics_table(metrics: dict[str, float]) -> str:
    """``--print-metrics``: the producer's metrics sorted by name, in the Java tool's layout
    (name padded to the longest, `` : ``, the value with three decimals).

    >>> print(metrics_table({"record-send-rate": 812.5, "batch-size-avg": 16000.0}))
    <BLANKLINE>
    Metric Name        Value
    batch-size-avg   : 16000.000
    record-send-rate : 812.500
    """
    width = max((len(name) for name in metrics), default=len("Metric Name"))
    lines = ["", f"{'Metric Name':<{width}}   Value"]
    lines += [f"{name:<{width}} : {metrics[name]:.3f}" for name in sorted(metrics)]
    return "\n".join(lines)
