"""Producer metrics: Java names, averages and maxima from the counters, rates over a window."""

from __future__ import annotations

import doctest

import pytest

import kafkaline.producer.metrics
from kafkaline.producer.accumulator import BatchStats
from kafkaline.producer.buffer_pool import BufferPool
from kafkaline.producer.metrics import ProducerMetrics, SenderCounters


def test_docstring_examples() -> None:
    results = doctest.testmod(kafkaline.producer.metrics)
    assert results.attempted > 0 and results.failed == 0


def test_names_before_anything_happened() -> None:
    pool = BufferPool(1024, 256)
    metrics = ProducerMetrics(
        SenderCounters(), start_ms=0.0, buffer_pool=pool, batch_stats=BatchStats()
    )
    values = metrics.read(10.0)
    for name in (
        "record-send-rate",
        "record-send-total",
        "record-error-rate",
        "record-error-total",
        "record-retry-rate",
        "record-retry-total",
        "batch-size-avg",
        "batch-size-max",
        "compression-rate-avg",
        "request-latency-avg",
        "request-latency-max",
        "records-per-request-avg",
        "request-rate",
        "buffer-available-bytes",
        "buffer-total-bytes",
        "bufferpool-wait-time-total",
        "waiting-threads",
        "record-queue-time-avg",
        "requests-in-flight",
    ):
        assert name in values, name
    assert values["record-send-total"] == 0.0 and values["request-latency-avg"] == 0.0
    assert values["buffer-total-bytes"] == values["buffer-available-bytes"] == 1024.0
    assert values["compression-rate-avg"] == 1.0


def test_a_request_records_its_largest_batch_in_the_same_call() -> None:
    counters = SenderCounters()
    metrics = ProducerMetrics(counters, start_ms=0.0)
    counters.record_request(
        records=3, size_bytes=900, queue_times_ms=[1.0], largest_batch_bytes=600
    )
    counters.record_request(
        records=1, size_bytes=200, queue_times_ms=[1.0], largest_batch_bytes=200
    )
    values = metrics.read(1000.0)
    assert values["batch-size-max"] == 600.0
    assert values["request-total"] == 2.0


def test_averages_and_maxima() -> None:
    counters = SenderCounters()
    metrics = ProducerMetrics(counters, start_ms=0.0)
    counters.record_request(records=10, size_bytes=1000, queue_times_ms=[2.0, 8.0])
    counters.record_request(records=30, size_bytes=3000, queue_times_ms=[5.0])
    counters.record_response(latency_ms=4.0, throttle_ms=0.0)
    counters.record_response(latency_ms=10.0, throttle_ms=6.0)
    counters.record_batch_size(700)
    counters.record_batch_size(300)
    values = metrics.read(1000.0)
    assert values["records-per-request-avg"] == 20.0
    assert values["request-latency-avg"] == 7.0 and values["request-latency-max"] == 10.0
    assert values["produce-throttle-time-max"] == 6.0
    assert values["record-queue-time-avg"] == 5.0 and values["record-queue-time-max"] == 8.0
    assert values["batch-size-max"] == 700.0
    assert values["requests-in-flight"] == 0.0
    assert values["outgoing-byte-total"] == 4000.0


def test_rates_cover_about_the_last_window() -> None:
    counters = SenderCounters()
    metrics = ProducerMetrics(counters, start_ms=0.0, window_ms=10_000.0)
    counters.records_sent = 1000
    assert metrics.read(10_000.0)["record-send-rate"] == pytest.approx(100.0)
    counters.records_sent = 1000  # nothing more for 10 s
    assert metrics.read(20_000.0)["record-send-rate"] == pytest.approx(0.0)
    counters.records_sent = 1500
    assert metrics.read(25_000.0)["record-send-rate"] == pytest.approx(500 / 15.0)


def test_buffer_pool_wait_time_is_in_nanoseconds_as_in_java() -> None:
    pool = BufferPool(100, 100)
    pool.allocate(100, 0)
    with pytest.raises(TimeoutError):
        pool.allocate(100, 20)
    values = ProducerMetrics(SenderCounters(), start_ms=0.0, buffer_pool=pool).read(1.0)
    assert values["bufferpool-wait-time-total"] >= 15e6
    assert values["buffer-available-bytes"] == 0.0
