"""append()'s first step for a record with its partition (Java's tryAppend): the last batch
takes the record when it already holds the memory of its whole limit; everything else takes
the append protocol. The flags and the memory held are the protocol's either way."""

from __future__ import annotations

from kafkaline.producer.accumulator import FIRST_BATCH_MEMORY, RecordAccumulator
from kafkaline.producer.buffer_pool import BufferPool

TS = 1_700_000_000_000
VALUE = b"v" * 100
BATCH = 16 * 1024


def accumulator_with(buffer_memory: int = 1 << 20) -> RecordAccumulator:
    return RecordAccumulator(batch_size=BATCH, buffer_pool=BufferPool(buffer_memory, BATCH))


def used(accumulator: RecordAccumulator) -> int:
    pool = accumulator.buffer_pool
    return pool.total_memory - pool.available_memory


def test_flags_while_one_batch_fills_then_a_second_one_opens() -> None:
    accumulator = accumulator_with()
    flags = []
    while accumulator.queue_sizes("t").get(0, 0) < 2:
        _, batch_is_full, new_batch = accumulator.append("t", 0, TS, b"key", VALUE)
        flags.append((batch_is_full, new_batch))
    assert flags[0] == (False, True)
    assert set(flags[1:-1]) == {(False, False)}
    # The record that opened the second batch made the first one ready.
    assert flags[-1] == (True, True)
    # Records into the second batch say so too: a batch before it is ready.
    _, batch_is_full, new_batch = accumulator.append("t", 0, TS, b"key", VALUE)
    assert (batch_is_full, new_batch) == (True, False)


def test_a_batch_past_its_first_memory_holds_its_limit_and_takes_records_in_order() -> None:
    accumulator = accumulator_with()
    futures = [accumulator.append("t", 3, TS, b"key", VALUE)[0] for _ in range(60)]
    assert accumulator.queue_sizes("t") == {3: 1}
    # Past its first few KiB the batch took its whole limit, and kept it.
    assert 60 * len(VALUE) > FIRST_BATCH_MEMORY
    assert used(accumulator) == BATCH
    assert [future.offset_delta for future in futures] == list(range(60))


def test_records_of_other_partitions_and_sticky_ones_still_take_the_protocol() -> None:
    accumulator = accumulator_with()
    for partition in range(3):
        for _ in range(50):
            accumulator.append("t", partition, TS, None, VALUE)
    assert accumulator.queue_sizes("t") == {0: 1, 1: 1, 2: 1}
    assert used(accumulator) == 3 * BATCH
