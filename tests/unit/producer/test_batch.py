"""ProducerBatch: appends, completion exactly once, timeouts, retries, and splitting."""

from __future__ import annotations

import doctest
import logging

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kafkaline.producer.batch as batch_module
from kafkaline.errors import (
    DeliveryTimeoutError,
    IllegalStateError,
    KafkaTimeoutError,
    NotLeaderOrFollowerError,
    ProducerClosedError,
)
from kafkaline.net.cluster import TopicPartition
from kafkaline.producer.batch import ProducerBatch
from kafkaline.producer.futures import ABORTED, FAILED, SPLIT, SUCCEEDED, FutureRecordMetadata
from kafkaline.record import CompressionType, read_record_batches

TP = TopicPartition("events", 2)
TS = 1_700_000_000_000


def fill(batch: ProducerBatch, count: int, size: int = 100) -> list[FutureRecordMetadata]:
    futures = []
    for i in range(count):
        future = batch.try_append(TS + i, b"k%d" % i, bytes([i % 256]) * size)
        assert future is not None
        futures.append(future)
    return futures


def test_module_docstring_examples() -> None:
    results = doctest.testmod(batch_module)
    assert results.attempted > 0 and results.failed == 0


# --------------------------------------------------------------------------- appending


def test_appends_give_futures_with_consecutive_offset_deltas_and_sizes() -> None:
    batch = ProducerBatch(TP, created_ms=5.0)
    futures = fill(batch, 3)
    null_key = batch.try_append(TS, None, None, [("h", b"v")])
    assert null_key is not None
    assert [f.offset_delta for f in [*futures, null_key]] == [0, 1, 2, 3]
    assert (futures[0].serialized_key_size, futures[0].serialized_value_size) == (2, 100)
    assert (null_key.serialized_key_size, null_key.serialized_value_size) == (-1, -1)
    assert batch.record_count == 4 and (batch.topic, batch.partition) == ("events", 2)
    assert batch.final_state is None and not batch.in_retry


def test_a_full_batch_refuses_records() -> None:
    batch = ProducerBatch(TP, created_ms=0.0, batch_size=1024)
    count = 0
    while batch.try_append(TS, None, b"x" * 100) is not None:
        count += 1
    assert 5 <= count <= 10
    assert batch.estimated_size_in_bytes <= 1024
    batch.close_for_appends()
    assert batch.is_full


def test_a_closed_batch_refuses_records_and_batch_size_0_holds_one() -> None:
    batch = ProducerBatch(TP, created_ms=0.0)
    fill(batch, 1)
    batch.close_for_appends()
    assert batch.try_append(TS, None, b"x") is None and batch.is_closed
    single = ProducerBatch(TP, created_ms=0.0, batch_size=0)
    assert single.try_append(TS, None, b"x" * 1000) is not None
    assert single.try_append(TS, None, b"x") is None


def test_close_encodes_the_records_once() -> None:
    batch = ProducerBatch(TP, created_ms=0.0, compression=CompressionType.GZIP)
    fill(batch, 50)
    batch.close()
    batch.close()
    (decoded,) = read_record_batches(batch.build())
    assert len(decoded.records) == 50 and decoded.records[3].value == bytes([3]) * 100
    assert batch.compression_ratio < 0.5


# --------------------------------------------------------------------------- completing


def test_done_completes_every_future_with_offsets() -> None:
    batch = ProducerBatch(TP, created_ms=0.0)
    futures = fill(batch, 3)
    assert batch.done(base_offset=500, log_append_time=-1)
    assert [f.get(0).offset for f in futures] == [500, 501, 502]
    assert batch.final_state is SUCCEEDED


def test_done_with_an_exception_fails_every_record() -> None:
    batch = ProducerBatch(TP, created_ms=0.0)
    futures = fill(batch, 2)
    error = NotLeaderOrFollowerError()
    assert batch.done(-1, -1, error)
    assert all(f.exception(0) is error for f in futures)
    assert batch.final_state is FAILED


def test_a_second_answer_after_success_is_a_bug() -> None:
    batch = ProducerBatch(TP, created_ms=0.0)
    fill(batch, 1)
    batch.done(0)
    with pytest.raises(IllegalStateError, match="succeeded batch for events-2"):
        batch.done(5)
    with pytest.raises(IllegalStateError):
        batch.done(-1, -1, NotLeaderOrFollowerError())


def test_a_late_answer_after_an_abort_or_failure_is_ignored_and_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    batch = ProducerBatch(TP, created_ms=0.0)
    (future,) = fill(batch, 1)
    closed = ProducerClosedError("forced close")
    assert batch.abort(closed)
    with caplog.at_level(logging.DEBUG, logger="kafkaline.producer.batch"):
        assert not batch.done(base_offset=10)  # the in-flight request's response, too late
        assert not batch.done(-1, -1, NotLeaderOrFollowerError())
    assert "ignored completing a aborted batch" in caplog.text
    assert future.exception(0) is closed and batch.final_state is ABORTED


def test_abort_of_a_completed_batch_does_nothing() -> None:
    batch = ProducerBatch(TP, created_ms=0.0)
    (future,) = fill(batch, 1)
    batch.done(3)
    assert not batch.abort(ProducerClosedError())
    assert future.get(0).offset == 3


# --------------------------------------------------------------------------- timing


def test_delivery_timeout_counts_from_creation_and_the_error_says_how_old() -> None:
    batch = ProducerBatch(TP, created_ms=1000.0)
    fill(batch, 2)
    assert not batch.has_reached_delivery_timeout(120_000, now=120_999.0)
    assert batch.has_reached_delivery_timeout(120_000, now=121_000.0)
    error = batch.delivery_timeout_error(120_000, now=121_005.0)
    assert isinstance(error, DeliveryTimeoutError) and isinstance(error, KafkaTimeoutError)
    assert str(error) == (
        "Expiring 2 record(s) for events-2: 120005 ms has passed since batch creation "
        "(delivery_timeout_ms=120000)"
    )


def test_reenqueued_counts_attempts_and_backs_off_from_the_retry() -> None:
    batch = ProducerBatch(TP, created_ms=0.0)
    assert not batch.is_backing_off(0.0)
    batch.reenqueued(now=500.0, retry_backoff_ms=100.0)
    assert batch.attempts == 1 and batch.in_retry and batch.last_attempt_ms == 500.0
    assert batch.is_backing_off(599.0) and not batch.is_backing_off(600.0)
    assert batch.waited_ms(550.0) == 50.0
    batch.drained(700.0)
    batch.drained(650.0)
    assert batch.drained_ms == 700.0


# --------------------------------------------------------------------------- splitting


def test_split_keeps_order_and_the_original_futures_get_the_new_offsets() -> None:
    batch = ProducerBatch(TP, created_ms=42.0, batch_size=64 * 1024)
    futures = fill(batch, 20, size=200)
    futures.append(batch.try_append(TS, b"h", b"v", [("trace", b"1"), ("empty", None)]))  # type: ignore[arg-type]
    seen: list[int] = []
    futures[5].add_callback(lambda metadata: seen.append(metadata.offset))
    batch.close()
    parts = batch.split(1024)
    assert len(parts) > 3 and all(p.is_split_batch and p.created_ms == 42.0 for p in parts)
    assert all(p.attempts == 0 and p.pooled_bytes == 0 for p in parts)
    assert all(p.try_append(TS, None, b"late") is None for p in parts)  # closed for appends
    assert batch.final_state is SPLIT
    assert sum(p.record_count for p in parts) == 21
    # The new batches hold the same records, in order, headers and timestamps included.
    records = [r for p in parts for r in read_record_batches(p.build())[0].records]
    assert [r.value for r in records[:20]] == [bytes([i]) * 200 for i in range(20)]
    assert records[20].headers == (("trace", b"1"), ("empty", None))
    assert [r.timestamp for r in records[:3]] == [TS, TS + 1, TS + 2]
    base = 1000
    for part in parts:
        part.done(base)
        base += part.record_count
    assert [f.get(0).offset for f in futures] == list(range(1000, 1021))
    assert seen == [1005]
    assert futures[20].get(0).serialized_value_size == 1


def test_splitting_twice_still_reaches_the_records() -> None:
    batch = ProducerBatch(TP, created_ms=0.0, batch_size=64 * 1024)
    futures = fill(batch, 8, size=300)
    (half, *rest) = batch.split(2000)
    quarters = half.split(700)
    for offset, part in enumerate([*quarters, *rest]):
        part.done(offset * 100)
    assert futures[0].get(0).offset == 0
    assert futures[-1].done()


def test_split_gives_consecutive_sequences_to_an_idempotent_batch() -> None:
    batch = ProducerBatch(TP, created_ms=0.0, batch_size=64 * 1024)
    fill(batch, 10, size=300)
    batch.set_producer_state(producer_id=7, producer_epoch=2, base_sequence=40)
    parts = batch.split(1000)
    sequences = [p.builder.base_sequence for p in parts]
    counts = [p.record_count for p in parts]
    assert sequences[0] == 40
    assert all(b == a + n for a, b, n in zip(sequences, sequences[1:], counts, strict=False))
    assert {p.builder.producer_id for p in parts} == {7}


def test_split_of_a_completed_batch_is_refused() -> None:
    batch = ProducerBatch(TP, created_ms=0.0)
    fill(batch, 2)
    batch.done(0)
    with pytest.raises(IllegalStateError, match="cannot split"):
        batch.split(100)


@settings(max_examples=40, deadline=None)
@given(
    sizes=st.lists(st.integers(min_value=0, max_value=3000), min_size=1, max_size=40),
    split_size=st.integers(min_value=100, max_value=5000),
    codec=st.sampled_from([CompressionType.NONE, CompressionType.LZ4]),
)
def test_split_property_every_record_once_in_order(
    sizes: list[int], split_size: int, codec: CompressionType
) -> None:
    batch = ProducerBatch(TP, created_ms=0.0, batch_size=1 << 20, compression=codec)
    futures = []
    for i, size in enumerate(sizes):
        future = batch.try_append(TS, None, i.to_bytes(2, "big") * (size // 2 + 1))
        assert future is not None
        futures.append(future)
    parts = batch.split(split_size)
    base = 0
    for part in parts:
        if part.record_count > 1:
            assert part.estimated_size_in_bytes <= max(split_size, 61 + 36 + 3002) + 64
        part.done(base)
        base += part.record_count
    assert [f.get(0).offset for f in futures] == list(range(len(sizes)))


def test_created_ms_and_batch_size_may_be_passed_by_position() -> None:
    # The accumulator's new batch passes them so (no keyword dict): the same batch.
    by_position = ProducerBatch(TopicPartition("t", 0), 5.0, 2048)
    by_keyword = ProducerBatch(TopicPartition("t", 0), created_ms=5.0, batch_size=2048)
    for batch in (by_position, by_keyword):
        assert (batch.created_ms, batch.builder.size_limit) == (5.0, 2048)
        assert batch.builder.compression == CompressionType.NONE


def test_a_batch_with_the_default_settings_spelled_out_builds_the_same_bytes() -> None:
    # The usual batch makes its builder with the limit alone; spelled out (compression as a
    # plain int) it takes the keywords: the same batch either way.
    built = []
    for batch in (
        ProducerBatch(TopicPartition("t", 0), 0.0, 1024),
        ProducerBatch(
            TopicPartition("t", 0),
            0.0,
            1024,
            compression=0,
            compression_level=None,
            estimated_compression_ratio=1.0,
            is_transactional=False,
        ),
    ):
        batch.try_append(1_700_000_000_000, b"k", b"v" * 600)
        assert batch.try_append(1_700_000_000_000, b"k", b"v" * 600) is None  # over 1024
        built.append(bytes(batch.build()))
    assert built[0] == built[1]
