"""RecordAccumulator.append_many() in the compiled build: the core's rounds of the append
protocol (NewBatchStep.append_run: the last batch, then new batches made in C) take a run of
records as far as the common path goes, and the Python protocol goes on from there. Each test
compares an accumulator that takes the core's rounds with one that takes the Python protocol
alone (the reference); in the pure-Python build both take the protocol, and must agree too.
"""

from __future__ import annotations

import array
import threading
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkaline.errors import BufferExhaustedError, ProducerClosedError
from kafkaline.producer.accumulator import BufferPool, BulkSegment, RecordAccumulator
from kafkaline.producer.batch import ProducerBatch
from kafkaline.record import CompressionType, core_build, read_record_batches

TS = 1_700_000_000_000
COMPILED = core_build() == "compiled"


def accumulators(
    batch_size: int, codec: CompressionType = CompressionType.NONE, memory: int = 1 << 22
) -> tuple[RecordAccumulator, RecordAccumulator]:
    """(with the core's rounds where built, with the Python protocol alone)."""
    pair = []
    for _ in range(2):
        pool = BufferPool(memory, max(batch_size, 62))
        pair.append(RecordAccumulator(batch_size=batch_size, compression=codec, buffer_pool=pool))
    pair[1]._run_step = None
    return pair[0], pair[1]


def state(accumulator: RecordAccumulator) -> tuple[object, ...]:
    """Each partition's batches (every slot but the builder and result, then the builder's
    sizes and its built bytes), the pool's free bytes and the incomplete batches."""
    batches = []
    for partition, queue in sorted(accumulator._queues.get("t", {}).items()):
        for batch in queue.batches:
            fields = [
                (name, getattr(batch, name))
                for name in ProducerBatch.__slots__
                if name not in ("builder", "result")
            ]
            builder = batch.builder
            sizes = (builder.appended_limit, builder.memory_cap, builder.is_full, len(builder))
            batches.append((partition, fields, sizes))
    return batches, accumulator.buffer_pool.available_memory, accumulator.incomplete_count()


def built(accumulator: RecordAccumulator) -> list[bytes]:
    out = []
    for _, queue in sorted(accumulator._queues.get("t", {}).items()):
        for batch in queue.batches:
            batch.builder.set_producer_state(-1, -1, -1)
            out.append(bytes(batch.builder.build()))
    return out


def segments_seen(accumulator: RecordAccumulator, segments: list[BulkSegment]) -> list[Any]:
    """Segments as (partition, index of the batch in its queue, first delta, count)."""
    out = []
    for result, first, count in segments:
        queue = accumulator._queues["t"][result.partition]
        index = [b.result for b in queue.batches].index(result)
        out.append((result.partition, index, first, count))
    return out


_CALLS = st.lists(
    st.tuples(
        st.integers(0, 1),  # partition
        st.lists(
            st.tuples(
                st.one_of(st.none(), st.binary(max_size=20)),
                st.one_of(st.none(), st.binary(max_size=700)),
            ),
            max_size=60,
        ),
        st.sampled_from(["all", "list", "buffer", "one"]),  # positions; "one": append()
    ),
    min_size=1,
    max_size=6,
)


@settings(max_examples=80, deadline=None)
@given(
    batch_size=st.sampled_from([0, 1, 100, 1000, 5000, 16384]),
    calls=_CALLS,
    codec=st.sampled_from([CompressionType.NONE, CompressionType.GZIP, CompressionType.LZ4]),
    ratio=st.sampled_from([None, 1.0, 0.4]),
)
def test_the_core_rounds_leave_what_the_python_protocol_leaves(
    batch_size: int,
    calls: list[tuple[int, list[tuple[bytes | None, bytes | None]], str]],
    codec: CompressionType,
    ratio: float | None,
) -> None:
    """Whatever the batch size, codec, ratio estimate, calls (with positions or not, mixed
    with single appends that leave a batch holding its first few KiB only): the same
    segments, batches (every field, the memory they hold, the bytes) and free memory."""
    pair = accumulators(batch_size, codec)
    if ratio is not None:
        for accumulator in pair:
            accumulator._estimator.reset("t", ratio)
    seen: list[list[Any]] = [[], []]
    for now, (partition, records, how) in enumerate(calls):
        keys = [key for key, _ in records] + [b"pad"]
        values = [value for _, value in records] + [b"pad"]
        order = list(range(len(records) - 1, -1, -2))
        for side, accumulator in enumerate(pair):
            if how == "one":
                for key, value in records:
                    accumulator.append("t", partition, TS, key, value, now=float(now))
                continue
            positions: Any = None
            if how == "list":
                positions = order
            elif how == "buffer":
                # as group_positions() gives them
                compact = memoryview(array.array("q", order).tobytes())
                positions = compact.cast("n")  # type: ignore[call-overload]
            segments, wake = accumulator.append_many(
                "t", partition, TS + now, keys if how != "all" else keys[:-1],
                values if how != "all" else values[:-1], None, 0.0, float(now),
                positions=positions,
            )  # fmt: skip
            seen[side].append((segments_seen(accumulator, segments), wake))
    assert seen[0] == seen[1]
    assert state(pair[0]) == state(pair[1])
    assert built(pair[0]) == built(pair[1])


@pytest.mark.skipif(not COMPILED, reason="the compiled record core is not in use")
def test_a_run_takes_no_python_round_when_memory_is_free() -> None:
    accumulator, _ = accumulators(1000)
    rounds = []
    protocol = accumulator._append_records

    def counted(*args: Any, **kwargs: Any) -> Any:
        rounds.append(args)
        return protocol(*args, **kwargs)

    accumulator._append_records = counted  # type: ignore[method-assign]
    values = [b"v" * 100] * 50
    segments, wake = accumulator.append_many("t", 0, TS, [None] * 50, values, now=5.0)
    assert rounds == [] and wake
    assert sum(count for _, _, count in segments) == 50 and len(segments) > 1
    assert all(b.created_ms == 5.0 for b in accumulator._queues["t"][0].batches)


def test_a_run_past_buffer_memory_raises_after_queueing_what_fit() -> None:
    """Memory not free now: the core stops, the protocol waits (here: not at all) and
    raises, naming how many records were queued; both sides queue the same."""
    pair = accumulators(1000, memory=3000)
    outcomes = []
    for accumulator in pair:
        segments: list[BulkSegment] = []
        with pytest.raises(BufferExhaustedError):
            accumulator.append_many("t", 0, TS, [None] * 100, [b"v" * 100] * 100, into=segments)
        outcomes.append((segments_seen(accumulator, segments), state(accumulator)))
    assert outcomes[0] == outcomes[1]
    assert outcomes[0][0]  # some were queued


def test_a_closed_accumulator_refuses_the_run_as_the_protocol_does() -> None:
    messages = []
    for accumulator in accumulators(1000):
        accumulator.close()
        with pytest.raises(ProducerClosedError) as raised:
            accumulator.append_many("t", 0, TS, [None] * 3, [b"v"] * 3)
        messages.append(str(raised.value))
        assert accumulator.incomplete_count() == 0
    assert messages[0] == messages[1]


def test_threads_appending_runs_keep_each_partitions_order_and_the_memory() -> None:
    """Runs of several threads into the same partitions, some by append() between: each
    thread's records stay in order within a partition, and once every batch is given back
    the pool holds all its memory again."""
    accumulator, _ = accumulators(2000, memory=1 << 21)
    total = accumulator.buffer_pool.available_memory

    def work(sender: int) -> None:
        for call in range(30):
            values = [b"%d:%d:%d" % (sender, call, i) for i in range(23)]
            accumulator.append_many("t", call % 2, TS, [None] * 23, values, now=0.0)
            accumulator.append("t", call % 2, TS, None, b"%d:%d:23" % (sender, call), now=0.0)

    threads = [threading.Thread(target=work, args=(sender,)) for sender in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for queue in accumulator._queues["t"].values():
        seen: dict[int, list[tuple[int, int]]] = {}
        with queue.lock:
            batches = list(queue.batches)
            queue.batches.clear()
        for batch in batches:
            batch.builder.set_producer_state(-1, -1, -1)
            for record_batch in read_record_batches(bytes(batch.builder.build())):
                for record in record_batch.records:
                    assert record.value is not None
                    sender, call, number = map(int, record.value.split(b":"))
                    seen.setdefault(sender, []).append((call, number))
            accumulator.deallocate(batch)
        for order in seen.values():
            assert order == sorted(order) and len(order) == 15 * 24
    assert accumulator.buffer_pool.available_memory == total
    assert accumulator.incomplete_count() == 0
