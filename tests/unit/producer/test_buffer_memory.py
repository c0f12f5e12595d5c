"""Buffer memory accounted by the bytes batches hold (issue 17): an open batch takes a few KiB
and more as it fills, not a whole batch_size. Fake clocks for the waits."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from kafkaline.errors import BufferExhaustedError, RecordTooLargeError
from kafkaline.net.cluster import BrokerNode, ClusterMetadata, PartitionMetadata, TopicPartition
from kafkaline.producer.accumulator import FIRST_BATCH_MEMORY, RecordAccumulator
from kafkaline.producer.buffer_pool import BufferPool
from kafkaline.producer.murmur2 import murmur2, to_positive
from kafkaline.record import core_build

TS = 1_700_000_000_000
VALUE = b"v" * 100
BATCH = 64 * 1024


def fake_clock(step_s: float = 0.0) -> Callable[[], float]:
    """A monotonic clock that moves ``step_s`` seconds each time it is read."""
    now = [100.0]

    def clock() -> float:
        now[0] += step_s
        return now[0]

    return clock


def accumulator_with(
    buffer_memory: int, clock: Callable[[], float] | None = None
) -> RecordAccumulator:
    pool = BufferPool(buffer_memory, BATCH, clock=clock or fake_clock())
    return RecordAccumulator(batch_size=BATCH, linger_ms=5.0, buffer_pool=pool)


def used(accumulator: RecordAccumulator) -> int:
    pool = accumulator.buffer_pool
    return pool.total_memory - pool.available_memory


def test_600_partitions_with_a_record_each_fit_32_mib() -> None:
    # 600 open batches would need 37.5 MiB at a whole batch_size each: the 513th append
    # failed at once (max_block 0). By bytes held, each takes its first few KiB.
    accumulator = accumulator_with(32 * 1024 * 1024)
    for partition in range(600):
        accumulator.append("t", partition, TS, b"key", VALUE, max_time_to_block_ms=0.0)
    assert used(accumulator) == 600 * FIRST_BATCH_MEMORY
    assert sum(accumulator.queue_sizes("t").values()) == 600


def test_a_batch_takes_more_memory_as_it_fills_and_gives_all_back() -> None:
    accumulator = accumulator_with(1 << 20)
    seen = []
    while accumulator.queue_sizes("t").get(0, 0) < 2:
        accumulator.append("t", 0, TS, b"key", VALUE)
        seen.append(used(accumulator))
    first = seen[0]
    assert first == FIRST_BATCH_MEMORY
    # past its first few KiB it takes its whole batch_size, then the next batch starts small
    assert sorted(set(seen)) == [FIRST_BATCH_MEMORY, BATCH, BATCH + FIRST_BATCH_MEMORY]
    assert seen[-1] == BATCH + FIRST_BATCH_MEMORY
    cluster = ClusterMetadata([BrokerNode(1, "b", 9092)], [PartitionMetadata("t", 0, leader=1)])
    for batch in accumulator.drain(cluster, {1}, 1 << 30, 0.0)[1]:
        accumulator.complete_batch(batch, 0)
    (rest,) = accumulator.drain(cluster, {1}, 1 << 30, 10.0)[1]
    accumulator.complete_batch(rest, 0)
    assert used(accumulator) == 0


def test_a_drained_batch_holds_only_its_wire_bytes_until_it_completes() -> None:
    # Thousands of partitions: a record or two per batch, and every batch waiting for the
    # broker held its first few KiB, so 32 MiB ran out with ~7k small batches in flight and
    # send() waited for acknowledgements (3,000 partitions: 66k records/s, see
    # docs/performance.md). Sealed, a batch takes no more records: it keeps its wire bytes.
    accumulator = accumulator_with(1 << 20)
    for partition in range(3):
        accumulator.append("t", partition, TS, b"key", VALUE)
    assert used(accumulator) == 3 * FIRST_BATCH_MEMORY
    cluster = ClusterMetadata(
        [BrokerNode(1, "b", 9092)], [PartitionMetadata("t", p, leader=1) for p in range(3)]
    )
    drained = accumulator.drain(cluster, {1}, 1 << 30, 10.0)[1]
    wire = [batch.builder.estimated_size_in_bytes for batch in drained]
    assert len(drained) == 3 and all(size < FIRST_BATCH_MEMORY for size in wire)
    assert [batch.pooled_bytes for batch in drained] == wire
    assert used(accumulator) == sum(wire)
    accumulator.complete_batch(drained[0], 0)
    accumulator.fail_batch(drained[1], RuntimeError("lost"))
    assert used(accumulator) == wire[2]
    accumulator.deallocate_batches(drained)  # the last one, and the others not twice
    assert used(accumulator) == 0


def test_a_record_larger_than_buffer_memory_is_refused_at_once() -> None:
    def no_waiting() -> float:
        raise AssertionError("the pool waited")

    accumulator = accumulator_with(8192, clock=no_waiting)
    with pytest.raises(RecordTooLargeError, match="buffer_memory=8192"):
        accumulator.append("t", 0, TS, None, b"x" * 9000, max_time_to_block_ms=60_000.0)
    assert used(accumulator) == 0


def test_growing_blocks_up_to_max_block_ms_then_buffer_exhausted() -> None:
    # Two open batches take all 8 KiB; the first one's growth must wait, and the fake clock
    # runs out its max_block_ms.
    accumulator = accumulator_with(2 * FIRST_BATCH_MEMORY, clock=fake_clock(step_s=0.2))
    accumulator.append("t", 0, TS, None, VALUE)
    accumulator.append("t", 1, TS, None, VALUE)
    with pytest.raises(BufferExhaustedError, match="within 500 ms"):
        for _ in range(100):  # until partition 0's batch needs more than its first 4 KiB
            accumulator.append("t", 0, TS, None, VALUE, max_time_to_block_ms=500.0)
    assert used(accumulator) == 2 * FIRST_BATCH_MEMORY
    assert accumulator.queued_bytes(TopicPartition("t", 0)) <= FIRST_BATCH_MEMORY


def test_a_bulk_run_keeps_only_what_its_last_batch_holds() -> None:
    accumulator = accumulator_with(1 << 20)
    segments, _ = accumulator.append_many("t", 0, TS, [None] * 650, [VALUE] * 650)
    # the batch it filled holds its batch_size; the last one only what its records take
    (_, _, filled_count), (_, _, last_count) = segments
    assert filled_count + last_count == 650 and last_count < 100
    assert BATCH < used(accumulator) < BATCH + last_count * (len(VALUE) + 40)


@pytest.mark.skipif(core_build() != "compiled", reason="the compiled core's appender")
def test_the_compiled_appender_stays_within_the_memory_a_batch_holds() -> None:
    accumulator = accumulator_with(1 << 20)
    appender = accumulator.open_batch_sender(1 << 20)
    assert appender is not None
    appender.partition_counts = {"t": 4}
    appender.open = True
    key = b"key-1"
    partition = to_positive(murmur2(key)) % 4
    accumulator.append("t", partition, TS, key, VALUE)
    taken = 1
    while appender("t", VALUE, key, None, None, TS) is not None:
        taken += 1
    # it stopped where the batch's first memory ends, not at batch_size
    assert used(accumulator) == FIRST_BATCH_MEMORY
    assert accumulator.queued_bytes(TopicPartition("t", partition)) <= FIRST_BATCH_MEMORY
    assert taken < FIRST_BATCH_MEMORY // len(VALUE)
    # append() takes more memory for the batch, and the appender goes on within it
    _, _, created = accumulator.append("t", partition, TS, key, VALUE)
    assert not created and used(accumulator) == BATCH
    assert appender("t", VALUE, key, None, None, TS) is not None
