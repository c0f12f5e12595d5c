"""RecordAccumulator decisions with a fake clock (``now`` in ms), plus its threads and memory.

The cluster is the network layer's real ClusterMetadata snapshot: assigning it to an
``AccumulatorCluster`` variable below also checks, under mypy, that it has what the
accumulator needs.
"""

from __future__ import annotations

import doctest
import math
import random
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kafkaline.producer.accumulator as accumulator_module
from kafkaline.config import ExponentialBackoff, ProducerConfig
from kafkaline.errors import (
    BufferExhaustedError,
    DeliveryTimeoutError,
    KafkaTimeoutError,
    NotLeaderOrFollowerError,
    ProducerClosedError,
)
from kafkaline.net.cluster import (
    NO_LEADER,
    BrokerNode,
    ClusterMetadata,
    PartitionMetadata,
    TopicPartition,
)
from kafkaline.producer.accumulator import AccumulatorCluster, RecordAccumulator
from kafkaline.producer.accumulator_append import FIRST_BATCH_MEMORY
from kafkaline.producer.batch import ProducerBatch
from kafkaline.producer.buffer_pool import BufferPool
from kafkaline.producer.futures import FutureRecordMetadata
from kafkaline.producer.transactions.idempotence import IdempotenceManager
from kafkaline.record import CompressionType, read_record_batches

TS = 1_700_000_000_000
VALUE = b"v" * 100
NO_JITTER = ExponentialBackoff(100, 1000, jitter=0.0)


def make_cluster(leaders: dict[tuple[str, int], int | None]) -> ClusterMetadata:
    nodes = {leader for leader in leaders.values() if leader is not None}
    return ClusterMetadata(
        [BrokerNode(node, f"b{node}", 9092) for node in sorted(nodes)],
        [
            PartitionMetadata(topic, partition, leader=NO_LEADER if leader is None else leader)
            for (topic, partition), leader in leaders.items()
        ],
    )


CLUSTER: AccumulatorCluster = make_cluster({("t", 0): 1, ("t", 1): 1, ("t", 2): 2, ("u", 0): 2})
T0, T1, T2 = TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("t", 2)


def new_accumulator(
    *,
    batch_size: int = 1024,
    linger_ms: float = 5.0,
    buffer_memory: int = 1 << 20,
    delivery_timeout_ms: float = 120_000.0,
    compression: int = CompressionType.NONE,
    **kwargs: object,
) -> RecordAccumulator:
    return RecordAccumulator(
        batch_size=batch_size,
        linger_ms=linger_ms,
        buffer_pool=BufferPool(buffer_memory, batch_size),
        delivery_timeout_ms=delivery_timeout_ms,
        retry_backoff=NO_JITTER,
        compression=compression,
        rng=random.Random(1),
        **kwargs,  # type: ignore[arg-type]
    )


def append(
    accumulator: RecordAccumulator,
    tp: TopicPartition,
    now: float = 0.0,
    value: bytes = VALUE,
    key: bytes | None = b"key",
    max_block_ms: float = 0.0,
) -> FutureRecordMetadata:
    future, _, _ = accumulator.append(
        tp.topic, tp.partition, TS, key, value, None, max_block_ms, now
    )
    return future


def fill_batches(accumulator: RecordAccumulator, tp: TopicPartition, batches: int) -> None:
    """Append until ``batches`` full batches are queued (plus the one that overflowed)."""
    while accumulator.queue_sizes(tp.topic).get(tp.partition, 0) <= batches:
        append(accumulator, tp)


def drain_all(
    accumulator: RecordAccumulator, now: float, max_request_size: int = 1 << 20
) -> list[ProducerBatch]:
    ready = accumulator.ready(CLUSTER, now).ready_nodes
    drained = accumulator.drain(CLUSTER, ready, max_request_size, now)
    return [batch for batches in drained.values() for batch in batches]


def test_module_docstring_examples() -> None:
    results = doctest.testmod(accumulator_module)
    assert results.attempted > 0 and results.failed == 0


# --------------------------------------------------------------------------- appending


def test_appends_share_a_batch_until_it_is_full() -> None:
    accumulator = new_accumulator(batch_size=1024)
    first = accumulator.append("t", 0, TS, b"key", VALUE, None, 0.0, 0.0)
    second = accumulator.append("t", 0, TS, b"key", VALUE, None, 0.0, 0.0)
    assert first[1:] == (False, True)  # not full, new batch
    assert second[1:] == (False, False)
    assert (second[0].offset_delta, second[0].partition) == (1, 0)
    results = [accumulator.append("t", 0, TS, b"key", VALUE, None, 0.0, 0.0) for _ in range(8)]
    overflow = next(r for r in results if r[2])
    assert overflow[1] is True  # a second batch: the first is full, wake the Sender
    assert accumulator.queue_sizes("t") == {0: 2}


def test_memory_is_taken_per_batch_and_given_back_when_it_completes() -> None:
    accumulator = new_accumulator(batch_size=1024, buffer_memory=10_000)
    pool = accumulator.buffer_pool
    append(accumulator, T0)
    append(accumulator, T0)
    assert pool.available_memory == 10_000 - 1024
    big = append(accumulator, T1, value=b"x" * 3000)  # a record larger than batch_size
    assert pool.available_memory == 10_000 - 1024 - (61 + 36 + 3 + 3000)
    for batch in drain_all(accumulator, now=10.0):
        accumulator.complete_batch(batch, base_offset=0)
    assert pool.available_memory == 10_000 and not accumulator.has_incomplete()
    assert big.get(0).offset == 0


def test_a_first_record_past_the_first_few_kib_takes_the_whole_batch_limit() -> None:
    accumulator = new_accumulator(batch_size=65_536, buffer_memory=1 << 20)
    pool = accumulator.buffer_pool
    append(accumulator, T0)  # a small record: the batch takes its first few KiB
    assert pool.available_memory == (1 << 20) - FIRST_BATCH_MEMORY
    append(accumulator, T1, value=b"x" * 10_000)  # a big one: the whole limit at once
    assert pool.available_memory == (1 << 20) - FIRST_BATCH_MEMORY - 65_536


def test_a_big_first_record_takes_only_its_size_when_the_limit_could_never_be_free() -> None:
    accumulator = new_accumulator(batch_size=65_536, buffer_memory=32_768)
    append(accumulator, T1, value=b"x" * 10_000)
    taken = 32_768 - accumulator.buffer_pool.available_memory
    assert 10_000 < taken < 10_200


def test_a_bad_record_type_is_refused_and_its_memory_given_back() -> None:
    accumulator = new_accumulator(buffer_memory=10_000)
    with pytest.raises(TypeError, match="str"):
        accumulator.append("t", 0, TS, None, "text", None, 0.0, 0.0)  # type: ignore[arg-type]
    assert accumulator.buffer_pool.available_memory == 10_000
    assert not accumulator.has_undrained()


# --------------------------------------------------------------------------- ready


def test_a_batch_is_ready_after_linger_ms() -> None:
    accumulator = new_accumulator(linger_ms=5)
    append(accumulator, T0, now=100.0)
    early = accumulator.ready(CLUSTER, 104.0)
    assert early.ready_nodes == set() and early.next_ready_check_delay_ms == pytest.approx(1.0)
    assert accumulator.ready(CLUSTER, 105.0).ready_nodes == {1}


def test_a_full_batch_is_ready_at_once() -> None:
    accumulator = new_accumulator(linger_ms=1000)
    fill_batches(accumulator, T2, 1)
    assert accumulator.ready(CLUSTER, 0.0).ready_nodes == {2}


def test_nothing_queued_means_no_deadline() -> None:
    result = new_accumulator().ready(CLUSTER, 0.0)
    assert result.ready_nodes == set() and result.next_ready_check_delay_ms == float("inf")


def test_a_partition_without_leader_reports_its_topic() -> None:
    accumulator = new_accumulator(linger_ms=0)
    cluster = make_cluster({("t", 0): None, ("t", 1): 1})
    append(accumulator, T0)
    result = accumulator.ready(cluster, 10.0)
    assert result.ready_nodes == set() and result.unknown_leader_topics == {"t"}
    assert accumulator.drain(cluster, {1}, 1 << 20, 10.0) == {1: []}


def test_exhausted_memory_makes_batches_ready_and_drain_frees_it() -> None:
    accumulator = new_accumulator(batch_size=1024, buffer_memory=2048, linger_ms=10_000)
    append(accumulator, T0)
    append(accumulator, T1)
    assert accumulator.ready(CLUSTER, 0.0).ready_nodes == set()
    outcome: list[object] = []
    blocked = threading.Thread(
        target=lambda: outcome.append(append(accumulator, T2, max_block_ms=10_000))
    )
    blocked.start()
    wait_until(lambda: accumulator.buffer_pool.queued == 1)
    assert accumulator.ready(CLUSTER, 1.0).ready_nodes == {1}  # long before linger
    for batch in accumulator.drain(CLUSTER, {1}, 1 << 20, 1.0)[1]:
        accumulator.complete_batch(batch, 0)
    blocked.join(5)
    assert isinstance(outcome[0], FutureRecordMetadata)


def test_append_gives_up_after_max_block_ms_naming_buffer_memory() -> None:
    accumulator = new_accumulator(batch_size=1024, buffer_memory=1024)
    append(accumulator, T0)
    start = time.monotonic()
    with pytest.raises(BufferExhaustedError, match="buffer_memory=1024"):
        append(accumulator, T1, max_block_ms=100)
    assert time.monotonic() - start >= 0.1
    assert accumulator.queue_sizes("t") == {0: 1, 1: 0}


def test_a_batch_waiting_after_a_blocked_append_is_dated_after_the_wait() -> None:
    accumulator = new_accumulator(batch_size=1024, buffer_memory=1024, linger_ms=5)
    append(accumulator, T0)
    # The timer starts before append() blocks, so the wait append() sees is the timer's delay
    # less the time to reach the wait: keep a wide margin between the two.
    threading.Timer(0.2, lambda: release_all(accumulator)).start()
    append(accumulator, T1, now=0.0, max_block_ms=10_000)
    # Created at now + the wait, not at now: linger counts from when the batch existed.
    (batch,) = [b for b in drain_all(accumulator, now=1e9) if b.partition == 1]
    assert batch.created_ms >= 100.0


def release_all(accumulator: RecordAccumulator) -> None:
    for batch in accumulator.drain(CLUSTER, {1, 2}, 1 << 20, 1e6)[1]:
        accumulator.complete_batch(batch, 0)


# --------------------------------------------------------------------------- drain


def test_drain_takes_one_batch_per_partition_and_encodes_it() -> None:
    accumulator = new_accumulator(linger_ms=0)
    fill_batches(accumulator, T0, 2)
    append(accumulator, T1)
    append(accumulator, TopicPartition("u", 0))
    drained = accumulator.drain(CLUSTER, {1, 2}, 1 << 20, 0.0)
    assert [b.topic_partition for b in drained[1]] == [T0, T1]
    assert [b.topic_partition for b in drained[2]] == [TopicPartition("u", 0)]
    assert all(b.builder.is_sealed for b in drained[1] + drained[2])
    assert accumulator.queue_sizes("t") == {0: 2, 1: 0}


def test_drain_finds_a_partition_whose_queue_was_made_after_the_last_drain() -> None:
    # drain() keeps each node's queues until the metadata or the set of queues changes.
    accumulator = new_accumulator(linger_ms=0)
    append(accumulator, T0)
    assert [b.topic_partition for b in drain_all(accumulator, 0.0)] == [T0]
    append(accumulator, T1)  # T1's first queue
    assert [b.topic_partition for b in drain_all(accumulator, 0.0)] == [T1]
    moved = make_cluster({("t", 0): 2, ("t", 1): 1, ("t", 2): 1, ("u", 0): 2})
    append(accumulator, T2)  # node 1 leads it in the new metadata only
    drained = accumulator.drain(moved, {1}, 1 << 20, 0.0)
    assert [b.topic_partition for b in drained[1]] == [T2]


def test_a_new_partition_queue_joins_its_topics_map_in_place() -> None:
    # A copy of the topic's map per new queue made queue creation quadratic in partitions.
    accumulator = new_accumulator()
    append(accumulator, T0)
    queues = accumulator._queues["t"]
    for partition in range(1, 300):
        append(accumulator, TopicPartition("t", partition))
    assert accumulator._queues["t"] is queues and sorted(queues) == list(range(300))
    assert accumulator.queue_sizes("t") == dict.fromkeys(range(300), 1)


def test_readers_of_every_queue_go_on_while_other_threads_make_queues() -> None:
    # Queues go into their topic's map in place: whoever goes over all of them must not
    # meet "dictionary changed size during iteration".
    accumulator = new_accumulator(batch_size=64, buffer_memory=1 << 26)
    stop = threading.Event()

    def make_queues() -> None:
        for partition in range(5_000):
            if stop.is_set():
                return
            accumulator.append("many", partition, TS, None, b"v", now=0.0)

    maker = threading.Thread(target=make_queues)
    maker.start()
    try:
        while maker.is_alive():
            accumulator.ready(CLUSTER, 0.0)
            accumulator.expired_batches(0.0)
            accumulator.has_undrained()
            accumulator.queue_sizes("many")
    finally:
        stop.set()
        maker.join()
    assert len(accumulator.queue_sizes("many")) == 5_000


def test_ready_without_any_batch_reports_nothing_and_then_sees_a_new_one() -> None:
    accumulator = new_accumulator(linger_ms=0)
    empty = accumulator.ready(CLUSTER, 0.0)
    assert (empty.ready_nodes, empty.next_ready_check_delay_ms) == (set(), math.inf)
    append(accumulator, T2)
    assert accumulator.ready(CLUSTER, 0.0).ready_nodes == {2}
    (batch,) = drain_all(accumulator, 0.0)
    accumulator.complete_batch(batch, 0)
    assert accumulator.ready(CLUSTER, 0.0).ready_nodes == set()


class _CountingDeque(deque[ProducerBatch]):
    """A queue's deque counting how often its length is asked."""

    asked = 0

    def __len__(self) -> int:
        self.asked += 1
        return super().__len__()


def _count_queue_reads(
    accumulator: RecordAccumulator, topic: str, partitions: int
) -> dict[int, _CountingDeque]:
    """Swap each partition queue's deque for a counting one; the counters by partition."""
    counted = {}
    for p in range(partitions):
        queue = accumulator._queues[topic][p]
        queue.batches = counted[p] = _CountingDeque(queue.batches)
    return counted


def test_ready_looks_only_at_the_queues_of_incomplete_batches() -> None:
    # 40 partitions with a queue each; one record is waiting: the other queues are not read.
    cluster = make_cluster({("t", p): 1 + p % 2 for p in range(40)})
    accumulator = new_accumulator(linger_ms=10)
    for p in range(40):
        append(accumulator, TopicPartition("t", p))
    ready = accumulator.ready(cluster, 10.0).ready_nodes
    for batches in accumulator.drain(cluster, ready, 1 << 20, 10.0).values():
        for batch in batches:
            accumulator.complete_batch(batch, 0)
    counted = _count_queue_reads(accumulator, "t", 40)
    append(accumulator, TopicPartition("t", 7), now=20.0)
    early = accumulator.ready(cluster, 25.0)
    assert (early.ready_nodes, early.next_ready_check_delay_ms) == (set(), 5.0)
    assert accumulator.ready(cluster, 30.0).ready_nodes == {2}
    assert all(counted[p].asked == 0 for p in range(40) if p != 7)


def test_drain_visits_only_the_partitions_of_incomplete_batches_in_rotation_order() -> None:
    cluster = make_cluster({("t", p): 1 for p in range(40)})
    accumulator = new_accumulator(linger_ms=0)
    for p in range(40):  # a queue for every partition
        append(accumulator, TopicPartition("t", p))
    for batch in accumulator.drain(cluster, {1}, 1 << 20, 0.0)[1]:
        accumulator.complete_batch(batch, 0)
    counted = _count_queue_reads(accumulator, "t", 40)
    for p in (33, 5, 20):
        append(accumulator, TopicPartition("t", p))
    # Room for one batch per request: the rotation decides which goes first.
    order = [accumulator.drain(cluster, {1}, 1, 0.0)[1][0].partition for _ in range(3)]
    assert order == [5, 20, 33]
    assert all(counted[p].asked == 0 for p in range(40) if p not in (5, 20, 33))


def test_has_queued_batches_reads_only_the_queues_of_incomplete_batches() -> None:
    cluster = make_cluster({("t", p): 1 for p in range(40)})
    accumulator = new_accumulator(linger_ms=0)
    for p in range(40):  # a queue for every partition
        append(accumulator, TopicPartition("t", p))
    for batch in accumulator.drain(cluster, {1}, 1 << 20, 0.0)[1]:
        accumulator.complete_batch(batch, 0)
    assert not accumulator.has_queued_batches()
    counted = _count_queue_reads(accumulator, "t", 40)
    append(accumulator, TopicPartition("t", 9))
    assert accumulator.has_queued_batches()
    assert len(accumulator.drain(cluster, {1}, 1 << 20, 0.0)[1]) == 1
    assert not accumulator.has_queued_batches()  # drained, not yet answered
    assert all(counted[p].asked == 0 for p in range(40) if p != 9)


def test_drain_respects_max_request_size_but_always_sends_a_first_batch() -> None:
    accumulator = new_accumulator(batch_size=1024, linger_ms=0)
    fill_batches(accumulator, T0, 1)
    fill_batches(accumulator, T1, 1)
    (only,) = accumulator.drain(CLUSTER, {1}, 100, 0.0)[1]  # larger than the limit, alone
    assert only.estimated_size_in_bytes > 100
    both = accumulator.drain(CLUSTER, {1}, 5000, 0.0)[1]
    assert len(both) == 2


def test_drain_rotates_its_start_so_every_partition_gets_its_turn() -> None:
    accumulator = new_accumulator(batch_size=1024, linger_ms=0)
    cluster = make_cluster({("t", p): 1 for p in range(3)})
    for p in range(3):
        fill_batches(accumulator, TopicPartition("t", p), 3)
    order = []
    for _ in range(6):
        (batch,) = accumulator.drain(cluster, {1}, 1, 0.0)[1]  # room for one batch per request
        order.append(batch.partition)
    assert order == [0, 1, 2, 0, 1, 2]


def test_after_a_full_pass_the_next_drain_starts_one_partition_further() -> None:
    accumulator = new_accumulator(batch_size=1024, linger_ms=0)
    cluster = make_cluster({("t", p): 1 for p in range(3)})
    orders = []
    for _ in range(3):
        for p in range(3):
            append(accumulator, TopicPartition("t", p))
        orders.append([b.partition for b in accumulator.drain(cluster, {1}, 1 << 20, 0.0)[1]])
    assert orders == [[0, 1, 2], [1, 2, 0], [2, 0, 1]]


def test_drain_skips_muted_partitions_until_unmuted() -> None:
    accumulator = new_accumulator(linger_ms=0)
    append(accumulator, T0)
    append(accumulator, T1)
    accumulator.mute(T0)
    assert accumulator.is_muted(T0)
    assert [b.topic_partition for b in drain_all(accumulator, 0.0)] == [T1]
    append(accumulator, T1)
    accumulator.mute(T1)
    assert accumulator.ready(CLUSTER, 10.0).ready_nodes == set()
    accumulator.unmute(T0)
    assert [b.topic_partition for b in drain_all(accumulator, 10.0)] == [T0]


def test_a_batch_that_cannot_be_encoded_fails_alone() -> None:
    accumulator = new_accumulator(linger_ms=0, buffer_memory=10_000)
    accumulator.append("t", 0, 1 << 63, None, VALUE, None, 0.0, 0.0)  # timestamp beyond int64
    good = append(accumulator, T1)
    (batch,) = drain_all(accumulator, 0.0)
    assert batch.topic_partition == T1
    accumulator.complete_batch(batch, 0)
    assert good.get(0).offset == 0
    assert accumulator.buffer_pool.available_memory == 10_000
    assert not accumulator.has_incomplete()


def test_one_drain_counts_every_batch_it_sealed_and_none_that_failed_to_encode() -> None:
    accumulator = new_accumulator(linger_ms=0, buffer_memory=10_000)
    accumulator.append("t", 0, 1 << 63, None, VALUE, None, 0.0, 0.0)  # timestamp beyond int64
    for _ in range(3):
        append(accumulator, T1)
    append(accumulator, T2)
    batches = drain_all(accumulator, 2.0)
    assert sorted(b.topic_partition for b in batches) == [T1, T2]
    stats = accumulator.batch_stats
    sizes = [len(b.build()) for b in batches]
    assert (stats.batches, stats.records) == (2, 4)
    assert stats.bytes == stats.uncompressed_bytes == sum(sizes)
    assert all(b.drained_ms == 2.0 for b in batches)


# --------------------------------------------------------------------------- retries


def test_a_reenqueued_batch_backs_off_exponentially_at_the_head_of_its_queue() -> None:
    accumulator = new_accumulator(linger_ms=0)
    first = append(accumulator, T0)
    (batch,) = drain_all(accumulator, 0.0)
    append(accumulator, T0, now=500.0)  # a newer batch queues meanwhile
    accumulator.reenqueue(batch, now=1000.0)
    assert batch.attempts == 1
    waiting = accumulator.ready(CLUSTER, 1050.0)
    assert waiting.ready_nodes == set()
    assert waiting.next_ready_check_delay_ms == pytest.approx(50.0)
    assert accumulator.drain(CLUSTER, {1}, 1 << 20, 1050.0)[1] == []
    assert accumulator.ready(CLUSTER, 1100.0).ready_nodes == {1}
    (retried,) = accumulator.drain(CLUSTER, {1}, 1 << 20, 1100.0)[1]
    assert retried is batch  # first in line: order kept
    accumulator.reenqueue(batch, now=2000.0)
    assert accumulator.ready(CLUSTER, 2199.0).ready_nodes == set()  # 200 ms the second time
    assert accumulator.ready(CLUSTER, 2200.0).ready_nodes == {1}
    drain_all(accumulator, 2200.0)
    accumulator.complete_batch(batch, base_offset=7)
    assert first.get(0).offset == 7


def test_split_and_reenqueue_frees_the_big_batch_and_keeps_the_futures_right() -> None:
    accumulator = new_accumulator(batch_size=8192, linger_ms=0, buffer_memory=100_000)
    futures = [append(accumulator, T0, value=bytes([i]) * 500) for i in range(12)]
    (big,) = drain_all(accumulator, 0.0)
    assert accumulator.split_and_reenqueue(big) == 1
    (part,) = drain_all(accumulator, 1.0)
    assert part.is_split_batch and part.pooled_bytes == 0
    assert accumulator.buffer_pool.available_memory == 100_000  # the big batch's is back
    accumulator.complete_batch(part, 100)
    assert [f.get(0).offset for f in futures] == list(range(100, 112))
    assert not accumulator.has_incomplete()


def test_split_parts_go_back_in_order_ahead_of_newer_batches() -> None:
    # A batch grown past batch_size (as a too-optimistic compression estimate allows) is
    # split into batch_size parts, sent before the records queued after it.
    accumulator = new_accumulator(batch_size=1024, linger_ms=0)
    big = ProducerBatch(T0, created_ms=0.0, batch_size=64 * 1024)
    futures = [big.try_append(TS, None, bytes([i]) * 300) for i in range(10)]
    newer = append(accumulator, T0, value=b"newer")
    big.close()
    assert accumulator.split_and_reenqueue(big) == 4
    offset = 0
    while accumulator.has_undrained():
        (part,) = drain_all(accumulator, 0.0)
        accumulator.complete_batch(part, offset)
        offset += part.record_count
    assert [f.get(0).offset for f in futures if f is not None] == list(range(10))
    assert newer.get(0).offset == 10


# --------------------------------------------------------------------------- expiry


def test_expired_batches_fail_with_their_age_and_the_limit() -> None:
    accumulator = new_accumulator(delivery_timeout_ms=120_000, buffer_memory=10_000)
    futures = [append(accumulator, T0, now=1000.0) for _ in range(2)]
    assert accumulator.expired_batches(now=120_999.0) == []
    assert accumulator.next_expiry_time_ms == 121_000.0
    (expired,) = accumulator.expired_batches(now=121_003.0)
    assert expired.is_closed and not accumulator.has_undrained()
    accumulator.fail_batch(
        expired, expired.delivery_timeout_error(accumulator.delivery_timeout_ms, 121_003.0)
    )
    with pytest.raises(DeliveryTimeoutError) as raised:
        futures[1].get(0)
    assert str(raised.value) == (
        "Expiring 2 record(s) for t-0: 120003 ms has passed since batch creation "
        "(delivery_timeout_ms=120000)"
    )
    assert accumulator.buffer_pool.available_memory == 10_000
    assert accumulator.next_expiry_time_ms == float("inf")


# --------------------------------------------------------------------------- flush and close


def test_a_flush_makes_every_batch_ready_and_waits_for_completion() -> None:
    accumulator = new_accumulator(linger_ms=60_000)
    future = append(accumulator, T0)
    accumulator.begin_flush()
    assert accumulator.flush_in_progress()
    (batch,) = drain_all(accumulator, 0.0)
    threading.Timer(0.05, accumulator.complete_batch, args=(batch, 3)).start()
    accumulator.await_flush_completion(timeout_ms=10_000)
    assert future.done() and not accumulator.flush_in_progress()


def test_a_flush_that_times_out_says_so_and_ends() -> None:
    accumulator = new_accumulator()
    append(accumulator, T0)
    accumulator.begin_flush()
    start = time.monotonic()
    with pytest.raises(KafkaTimeoutError, match="1 batch"):
        accumulator.await_flush_completion(timeout_ms=50)
    assert time.monotonic() - start >= 0.05
    assert not accumulator.flush_in_progress()


def test_a_flush_waits_for_the_batches_a_split_made() -> None:
    accumulator = new_accumulator(batch_size=8192, linger_ms=0)
    future = append(accumulator, T0)
    (big,) = drain_all(accumulator, 0.0)  # in flight when the flush starts
    flushed = threading.Event()
    outcome: list[BaseException] = []

    def flush() -> None:
        try:
            accumulator.await_flush_completion(timeout_ms=10_000)
        except BaseException as error:  # reported to the test thread
            outcome.append(error)
        flushed.set()

    accumulator.begin_flush()
    waiter = threading.Thread(target=flush)
    waiter.start()
    time.sleep(0.05)  # the flush now waits for `big` only
    accumulator.split_and_reenqueue(big)  # MESSAGE_TOO_LARGE: its records move on
    assert not flushed.wait(0.05)  # their new batch is not done: still flushing
    (part,) = drain_all(accumulator, 1.0)
    accumulator.complete_batch(part, 0)
    waiter.join(10)
    assert flushed.is_set() and outcome == [] and future.get(0).offset == 0


def test_close_makes_batches_ready_and_refuses_new_batches() -> None:
    accumulator = new_accumulator(linger_ms=60_000)
    append(accumulator, T0)
    accumulator.close()
    assert accumulator.is_closed
    assert accumulator.ready(CLUSTER, 0.0).ready_nodes == {1}
    append(accumulator, T0)  # the existing batch still takes records
    with pytest.raises(ProducerClosedError):
        append(accumulator, T1)


def test_a_forced_close_fails_queued_and_in_flight_records_with_a_named_error() -> None:
    accumulator = new_accumulator(linger_ms=0, buffer_memory=10_000)
    in_flight = append(accumulator, T0)
    (sent,) = drain_all(accumulator, 0.0)
    queued = [append(accumulator, T1), append(accumulator, TopicPartition("u", 0))]
    assert accumulator.abort_incomplete_batches() == 3
    for future in [in_flight, *queued]:
        with pytest.raises(ProducerClosedError, match="forcefully"):
            future.get(0)
    assert not accumulator.complete_batch(sent, base_offset=5)  # the late response: ignored
    assert accumulator.buffer_pool.available_memory == 10_000
    assert not accumulator.has_undrained() and not accumulator.has_incomplete()
    with pytest.raises(ProducerClosedError):
        append(accumulator, T0)


def test_abort_uses_the_given_error() -> None:
    accumulator = new_accumulator()
    future = append(accumulator, T0)
    error = NotLeaderOrFollowerError("gone")
    accumulator.abort_incomplete_batches(error)
    assert future.exception(0) is error


# --------------------------------------------------------------------------- sticky partitioning


def test_records_without_partition_stick_to_one_and_switch_after_batch_size() -> None:
    accumulator = new_accumulator(batch_size=1024, linger_ms=0)
    cluster = make_cluster({("t", p): 1 for p in range(4)})
    partitions = []
    for _ in range(40):
        future, _, _ = accumulator.append("t", None, TS, None, VALUE, None, 0.0, 0.0, cluster)
        partitions.append(future.partition)
    runs = [p for i, p in enumerate(partitions) if i == 0 or partitions[i - 1] != p]
    assert len(runs) >= 3  # it switched
    assert all(partitions.count(p) >= 6 for p in runs)  # after (about) a batch each


def test_append_without_partition_needs_the_cluster() -> None:
    with pytest.raises(ValueError, match="cluster"):
        new_accumulator().append("t", None, TS, None, VALUE, None, 0.0, 0.0)


def test_ready_feeds_queue_sizes_to_the_adaptive_partitioner() -> None:
    accumulator = new_accumulator(batch_size=1024, linger_ms=60_000)
    cluster = make_cluster({("t", 0): 1, ("t", 1): 1})
    accumulator.append("t", None, TS, None, VALUE, None, 0.0, 0.0, cluster)
    partitioner = accumulator.sticky_partitioner("t")
    assert partitioner is not None
    fill_batches(accumulator, T0, 3)
    append(accumulator, T1)
    accumulator.ready(cluster, 0.0)
    stats = partitioner.load_stats
    assert stats is not None and stats.partitions == (0, 1)
    assert stats.cumulative[0] < stats.cumulative[1] - stats.cumulative[0]  # 1 gets more


def test_a_stalled_leader_is_left_out_by_the_adaptive_partitioner() -> None:
    accumulator = new_accumulator(
        batch_size=1024, linger_ms=0, partitioner_availability_timeout_ms=100
    )
    cluster = make_cluster({("t", 0): 1, ("t", 1): 2})
    accumulator.append("t", None, TS, None, VALUE, None, 0.0, 0.0, cluster)
    append(accumulator, T0)
    append(accumulator, T1)
    accumulator.update_node_latency_stats(1, now=0.0, can_drain=True)
    accumulator.update_node_latency_stats(1, now=500.0, can_drain=False)  # 500 ms not drained
    accumulator.update_node_latency_stats(2, now=500.0, can_drain=True)
    accumulator.ready(cluster, 500.0)
    partitioner = accumulator.sticky_partitioner("t")
    assert partitioner is not None and partitioner.load_stats is not None
    assert partitioner.load_stats.partitions == (1,)


# --------------------------------------------------------------------------- stats and config


def test_compression_stats_and_estimate_follow_the_sealed_batches() -> None:
    sealed: list[ProducerBatch] = []
    accumulator = new_accumulator(
        batch_size=4096,
        linger_ms=0,
        compression=CompressionType.GZIP,
        on_batch_sealed=sealed.append,
    )
    for _ in range(30):
        append(accumulator, T0)
    drain_all(accumulator, 0.0)
    stats = accumulator.batch_stats
    assert stats.batches == len(sealed) >= 1 and stats.records >= 1
    assert stats.compression_rate_avg < 0.5
    assert stats.batch_size_avg == stats.bytes / stats.batches
    assert stats.records_per_batch_avg >= 1


def test_from_config() -> None:
    config = ProducerConfig.from_kwargs(
        bootstrap_servers="localhost:9092",
        batch_size=2048,
        linger_ms=7,
        buffer_memory=4096,
        compression_type="lz4",
    )
    accumulator = RecordAccumulator.from_config(config)
    assert accumulator.batch_size == 2048
    assert accumulator.buffer_pool.total_memory == 4096
    assert accumulator.delivery_timeout_ms == config.effective_delivery_timeout_ms
    future = append(accumulator, T0)
    assert future.batch_result.topic == "t"


def test_inspection_helpers() -> None:
    accumulator = new_accumulator()
    assert not accumulator.has_undrained() and accumulator.queued_bytes(T0) == 0
    append(accumulator, T0)
    assert accumulator.has_undrained() and accumulator.has_incomplete()
    assert accumulator.incomplete_count() == 1
    assert 61 < accumulator.queued_bytes(T0) <= 1024


# --------------------------------------------------------------------------- threads


def test_many_threads_appending_at_once_keep_each_threads_order_per_partition() -> None:
    accumulator = new_accumulator(batch_size=4096, linger_ms=0, buffer_memory=1 << 24)
    threads_count, per_thread, partitions = 8, 1500, 3
    futures: dict[tuple[int, int], FutureRecordMetadata] = {}
    completed: list[ProducerBatch] = []
    next_offset = dict.fromkeys(range(partitions), 0)
    stop = threading.Event()

    def sender() -> None:
        now = 0.0
        while True:
            finished = stop.is_set()
            now += 1.0
            for batch in drain_all(accumulator, now):
                accumulator.complete_batch(batch, next_offset[batch.partition])
                next_offset[batch.partition] += batch.record_count
                completed.append(batch)
            if finished and not accumulator.has_undrained():
                return

    def producer(thread_id: int) -> None:
        for seq in range(per_thread):
            value = b"%d:%d" % (thread_id, seq)
            futures[(thread_id, seq)] = append(
                accumulator, TopicPartition("t", seq % 3), 0.0, value
            )

    sending = threading.Thread(target=sender)
    sending.start()
    producing = [threading.Thread(target=producer, args=(i,)) for i in range(threads_count)]
    for thread in producing:
        thread.start()
    for thread in producing:
        thread.join()
    stop.set()
    sending.join(30)
    log: dict[int, list[bytes]] = {p: [] for p in range(partitions)}
    for batch in sorted(completed, key=lambda b: (b.partition, b.result.base_offset)):
        (decoded,) = read_record_batches(batch.build())
        log[batch.partition].extend(record.value or b"" for record in decoded.records)
    assert sum(map(len, log.values())) == threads_count * per_thread
    for partition, values in log.items():
        last: dict[bytes, int] = {}
        for offset, value in enumerate(values):
            thread_id, seq = value.split(b":")
            assert last.get(thread_id, -1) < int(seq)  # each thread's order kept
            last[thread_id] = int(seq)
            metadata = futures[(int(thread_id), int(seq))].get(0)
            assert (metadata.partition, metadata.offset) == (partition, offset)
    assert accumulator.buffer_pool.available_memory == 1 << 24


@settings(max_examples=30, deadline=None)
@given(
    operations=st.lists(
        st.one_of(
            st.tuples(st.just("append"), st.integers(0, 2), st.integers(0, 900)),
            st.tuples(st.just("drain"), st.integers(1, 4000), st.just(0)),
            st.tuples(st.just("retry"), st.just(0), st.just(0)),
        ),
        max_size=80,
    )
)
def test_every_record_is_drained_once_in_order(
    operations: list[tuple[str, int, int]],
) -> None:
    accumulator = new_accumulator(batch_size=1024, linger_ms=3, buffer_memory=1 << 24)
    appended: dict[int, list[bytes]] = {0: [], 1: [], 2: []}
    sent: dict[int, list[bytes]] = {0: [], 1: [], 2: []}
    retry: list[ProducerBatch] = []
    now = 0.0
    counter = 0

    def complete(batches: Iterable[ProducerBatch]) -> None:
        for batch in batches:
            (decoded,) = read_record_batches(batch.build())
            sent[batch.partition].extend(r.value or b"" for r in decoded.records)
            accumulator.complete_batch(batch, 0)

    for kind, a, b in operations:
        now += 1.0
        if kind == "append":
            value = counter.to_bytes(4, "big") * (b // 4 + 1)
            counter += 1
            appended[a].append(value)
            append(accumulator, TopicPartition("t", a), now, value)
        elif kind == "drain":
            drained = drain_all(accumulator, now, max_request_size=a)
            if retry or not drained:
                complete(drained)
            else:  # the first batch of this drain fails once and is retried
                retry.append(drained[0])
                accumulator.reenqueue(drained[0], now)
                complete(drained[1:])
        elif retry:
            retry.clear()
    for _ in range(10_000):
        if not accumulator.has_undrained():
            break
        now += 1000.0
        complete(drain_all(accumulator, now))
    # A retried batch goes back to the head: per partition, order is kept.
    assert sent == appended
    assert not accumulator.has_incomplete()


def wait_until(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(0.002)


class _TransactionalStub(IdempotenceManager):
    is_transactional = True


@pytest.mark.parametrize(
    ("kwargs", "compression", "level", "transactional"),
    [
        ({}, CompressionType.NONE, None, False),
        ({"compression": CompressionType.GZIP}, CompressionType.GZIP, None, False),
        (
            {"compression": CompressionType.GZIP, "compression_level": 3},
            CompressionType.GZIP,
            3,
            False,
        ),
        ({"transaction_manager": IdempotenceManager()}, CompressionType.NONE, None, False),
        ({"transaction_manager": _TransactionalStub()}, CompressionType.NONE, None, True),
    ],
)
def test_a_new_batch_carries_the_accumulators_settings(
    kwargs: dict[str, Any], compression: int, level: int | None, transactional: bool
) -> None:
    # A plain accumulator makes its batches by a shorter call (_new_batch): same batches.
    accumulator = new_accumulator(batch_size=2048, **kwargs)
    append(accumulator, T0, now=7.0)
    queue = accumulator._existing_queue(T0)
    assert queue is not None
    (batch,) = queue.batches
    assert batch.builder.compression == compression
    assert batch.compression_level == level
    assert batch.is_transactional is transactional
    assert batch.builder.size_limit == 2048
    assert (batch.created_ms, batch.last_attempt_ms, batch.record_count) == (7.0, 7.0, 1)


def test_a_flush_returns_only_after_the_batchs_callbacks_ran() -> None:
    # As Java: after flush() every callback of every record sent before it has run.
    accumulator = new_accumulator(linger_ms=60_000)
    futures = [append(accumulator, T0) for _ in range(2)]
    entered, release = threading.Event(), threading.Event()
    ran: list[int] = []

    def block(_: object) -> None:
        entered.set()
        release.wait(10)

    futures[0].add_callback(block)
    futures[1].add_callback(lambda metadata: ran.append(metadata.offset))
    accumulator.begin_flush()
    (batch,) = drain_all(accumulator, 0.0)
    completer = threading.Thread(target=accumulator.complete_batch, args=(batch, 3), daemon=True)
    completer.start()
    assert entered.wait(10)
    flusher = threading.Thread(target=accumulator.await_flush_completion, daemon=True)
    flusher.start()
    flusher.join(0.05)
    assert flusher.is_alive() and not ran
    release.set()
    flusher.join(10)
    completer.join(10)
    assert not flusher.is_alive() and ran == [4]


def test_ready_does_not_wait_for_a_thread_holding_a_queue_lock() -> None:
    # ready() scans every queue on every pass (thousands on a topic of that many
    # partitions): it must not make an appending thread, or itself, wait on their locks.
    accumulator = new_accumulator()
    append(accumulator, T0)
    append(accumulator, T2)
    held = threading.Event()
    release = threading.Event()

    def hold_lock() -> None:
        with accumulator._queue(T0.topic, T0.partition).lock:
            held.set()
            release.wait(10)

    holder = threading.Thread(target=hold_lock)
    holder.start()
    try:
        assert held.wait(10)
        result: list[set[int]] = []
        checker = threading.Thread(
            target=lambda: result.append(accumulator.ready(CLUSTER, 5.0).ready_nodes)
        )
        checker.start()
        checker.join(2)
        assert result == [{1, 2}], "ready() waited for the queue's lock"
    finally:
        release.set()
        holder.join()


def test_ready_follows_leaders_and_new_queues_across_metadata_snapshots() -> None:
    # ready() keeps the leaders it found per snapshot: a new snapshot, or a queue made
    # since, must be seen at once.
    accumulator = new_accumulator(linger_ms=0)
    append(accumulator, T0)
    assert accumulator.ready(CLUSTER, 0.0).ready_nodes == {1}
    moved = make_cluster({("t", 0): 2, ("t", 1): 1, ("t", 2): 2})
    assert accumulator.ready(moved, 0.0).ready_nodes == {2}
    unknown = make_cluster({("t", 0): None, ("t", 1): 1})
    result = accumulator.ready(unknown, 0.0)
    assert result.ready_nodes == set() and result.unknown_leader_topics == {"t"}
    append(accumulator, TopicPartition("u", 0))
    assert accumulator.ready(CLUSTER, 0.0).ready_nodes == {1, 2}


def test_the_new_batch_step_appends_to_a_last_batch_with_room() -> None:
    # Another thread may have made a batch since the compiled send() found none with room.
    accumulator = new_accumulator()
    first = append(accumulator, T0)
    future, _, created = accumulator.append_to_new_batch("t", 0, TS, b"k", VALUE, 0.0, 0.0)
    (batch,) = list(accumulator._queues["t"][0].batches)
    assert not created and batch.record_count == 2
    assert future.batch_result is first.batch_result and future.offset_delta == 1


def test_the_new_batch_step_makes_a_batch_behind_a_full_one() -> None:
    accumulator = new_accumulator(batch_size=100)  # one record fills a batch
    append(accumulator, T0)
    (full,) = list(accumulator._queues["t"][0].batches)
    assert full.is_full
    future, sendable, created = accumulator.append_to_new_batch("t", 0, TS, b"k", VALUE, 0.0, 0.0)
    first, second = list(accumulator._queues["t"][0].batches)
    assert first is full and full.record_count == 1
    assert created and sendable and second.record_count == 1
    assert future.batch_result is second.result and future.offset_delta == 0
