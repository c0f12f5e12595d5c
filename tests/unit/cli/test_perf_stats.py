"""Perf statistics: the Java tool's window and total lines, percentiles, sampling, throttle."""

from __future__ import annotations

import json
import re

import pytest

from kafkaline.cli.perf_stats import (
    MAX_LATENCY_SAMPLES,
    PerfStats,
    Throttle,
    metrics_table,
    percentiles,
    window_line,
)

# The Java tool's printf formats, as regular expressions over their output.
JAVA_WINDOW = re.compile(
    r"^\d+ records sent, \d+\.\d records/sec \(\d+\.\d\d MB/sec\), \d+\.\d ms avg latency, "
    r"\d+\.\d ms max latency\.$"
)
JAVA_TOTAL = re.compile(
    r"^\d+ records sent, \d+\.\d{6} records/sec \(\d+\.\d\d MB/sec\), \d+\.\d\d ms avg latency, "
    r"\d+\.\d\d ms max latency, \d+ ms 50th, \d+ ms 95th, \d+ ms 99th, \d+ ms 99\.9th\.$"
)


def test_no_window_line_before_five_seconds_then_one_with_the_window_figures() -> None:
    stats = PerfStats(expected_records=10, start_ms=1_000)
    assert stats.record(0, latency_ms=2, size=1024, now_ms=1_100) is None
    assert stats.record(1, latency_ms=4, size=1024, now_ms=5_999) is None
    line = stats.record(2, latency_ms=9, size=1024 * 1024 - 2048, now_ms=6_000)
    assert line == (
        "3 records sent, 0.6 records/sec (0.20 MB/sec), 5.0 ms avg latency, 9.0 ms max latency."
    )
    assert line is not None and JAVA_WINDOW.match(line)


def test_each_window_starts_afresh() -> None:
    stats = PerfStats(expected_records=10, start_ms=0)
    stats.record(0, latency_ms=100, size=10, now_ms=5_000)  # closes the first window
    assert stats.record(1, latency_ms=1, size=10, now_ms=6_000) is None
    line = stats.record(2, latency_ms=3, size=10, now_ms=10_000)
    assert line is not None
    assert line.startswith("2 records sent, 0.4 records/sec")
    assert "2.0 ms avg latency, 3.0 ms max latency." in line


def test_total_line_in_java_shape_with_exact_figures() -> None:
    stats = PerfStats(expected_records=1000, start_ms=0)
    for i in range(1000):
        stats.record(i, latency_ms=i + 1, size=100, now_ms=100)
    summary = stats.summary(now_ms=2_000)
    assert summary.java_line() == (
        "1000 records sent, 500.000000 records/sec (0.05 MB/sec), 500.50 ms avg latency, "
        "1000.00 ms max latency, 501 ms 50th, 951 ms 95th, 991 ms 99th, 1000 ms 99.9th."
    )
    assert JAVA_TOTAL.match(summary.java_line())


def test_json_summary_has_every_figure() -> None:
    stats = PerfStats(expected_records=2, start_ms=0)
    stats.record(0, latency_ms=3, size=10, now_ms=1)
    stats.record_failure()
    decoded = json.loads(json.dumps(stats.summary(now_ms=1_000).as_json_dict()))
    assert decoded == {
        "records": 1,
        "failed": 1,
        "elapsed_ms": 1000,
        "records_per_sec": 1.0,
        "mb_per_sec": 10 / 1024 / 1024,
        "avg_latency_ms": 3.0,
        "max_latency_ms": 3,
        "p50_ms": 3,
        "p95_ms": 3,
        "p99_ms": 3,
        "p999_ms": 3,
    }


def test_a_run_where_nothing_was_acknowledged_still_sums_up() -> None:
    summary = PerfStats(expected_records=5, start_ms=0).summary(now_ms=0)
    assert summary.records == 0
    assert JAVA_TOTAL.match(summary.java_line())


def test_percentiles_pick_java_indices() -> None:
    assert percentiles([5, 1, 3, 2, 4]) == [3, 5, 5, 5]  # int(0.5 * 5) = 2 of [1..5]
    assert percentiles([]) == [0, 0, 0, 0]
    assert percentiles([7]) == [7, 7, 7, 7]


def test_latency_samples_are_bounded_for_long_runs() -> None:
    expected = MAX_LATENCY_SAMPLES * 3
    stats = PerfStats(expected_records=expected, start_ms=0)
    for i in range(0, 30):
        stats.record(i, latency_ms=i, size=1, now_ms=0)
    summary = stats.summary(now_ms=1)
    # Every third record is sampled: 0, 3, ..., 27 -> ten samples, median index 5 -> 15.
    assert summary.p50_ms == 15
    assert summary.records == 30
    assert summary.max_latency_ms == 29


def test_window_line_for_an_empty_window_does_not_divide_by_zero() -> None:
    assert window_line(0, 0, 0, 0, 0).startswith("0 records sent, 0.0 records/sec")


@pytest.mark.parametrize(
    ("rate", "sent", "elapsed", "delay"),
    [(1000, 1000, 0.5, 0.5), (1000, 1000, 1.5, 0.0), (10, 1, 0.0, 0.1), (-1, 10**6, 0.0, 0.0)],
)
def test_throttle_delay(rate: float, sent: int, elapsed: float, delay: float) -> None:
    assert Throttle(rate).delay_s(sent, elapsed) == pytest.approx(delay)


def test_a_throttle_of_zero_is_refused() -> None:
    with pytest.raises(ValueError, match="never send"):
        Throttle(0)


def test_metrics_table_is_sorted_and_aligned() -> None:
    table = metrics_table({"b-long-name": 2.0, "a": 1.23456})
    assert table.splitlines() == [
        "",
        "Metric Name   Value",
        "a           : 1.235",
        "b-long-name : 2.000",
    ]
