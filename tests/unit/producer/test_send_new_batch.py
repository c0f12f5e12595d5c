"""send() of a record that needs a new batch, in the compiled build: the core checks the record
and chooses its partition, then makes the new batch itself in the common case (a compiled
NewBatchStep), or hands the record to one Python step (Producer._send_to_new_batch,
RecordAccumulator.append_to_new_batch) instead of send()'s general path. Each test also runs
in the pure-Python build, where the general path takes every record: the outcomes must match.
"""

from __future__ import annotations

import gc
import random
import sys
import threading
import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkaline import Producer
from kafkaline.errors import BufferExhaustedError, ProducerClosedError
from kafkaline.net.cluster import BrokerNode, ClusterMetadata, PartitionMetadata
from kafkaline.producer.accumulator import BufferPool, RecordAccumulator
from kafkaline.producer.batch import ProducerBatch
from kafkaline.producer.futures import ProduceRequestResult
from kafkaline.record import CompressionType, core_build, read_record_batches

TS = 1_700_000_000_000
COMPILED = core_build() == "compiled"


def offline_producer(partitions: int, **settings: Any) -> Producer:
    """A producer that knows topic "t" and is open, without a broker or a thread (test-only
    hooks into its state, as in tests/unit/record/test_record_core.py)."""
    producer = Producer(bootstrap_servers="127.0.0.1:1", **settings)
    producer._accumulator._rng = random.Random(1)
    producer._topics.cluster = ClusterMetadata(
        [BrokerNode(1, "b1", 9092)],
        [PartitionMetadata("t", p, leader=1) for p in range(partitions)],
    )
    producer._topics.counts["t"] = partitions
    producer._set_gate(None)
    return producer


def python_step_only(producer: Producer) -> Producer:
    """The compiled send() with the Python new-batch step (the reference of the core's)."""
    if producer._core_send is not None:
        producer._core_send.new_batch = producer._send_to_new_batch
    return producer


def general_path_only(producer: Producer) -> Producer:
    producer._core_send = None
    producer.__dict__.pop("send", None)  # the compiled call bound as producer.send
    return producer


class Calls:
    """Counts the general path's append() and the new-batch step of an accumulator."""

    def __init__(self, accumulator: RecordAccumulator) -> None:
        self.append = self.new_batch = 0
        append, new_batch = accumulator.append, accumulator.append_to_new_batch

        def counted_append(*args: Any) -> Any:
            self.append += 1
            return append(*args)

        def counted_new_batch(*args: Any) -> Any:
            self.new_batch += 1
            return new_batch(*args)

        accumulator.append = counted_append  # type: ignore[method-assign, assignment]
        accumulator.append_to_new_batch = counted_new_batch  # type: ignore[method-assign, assignment]


def memory(producer: Producer) -> tuple[object, ...]:
    """The buffer memory each queued batch holds, the pool's free bytes and the count of
    incomplete batches."""
    accumulator = producer._accumulator
    held = {
        partition: [
            (batch.pooled_bytes, batch.builder.memory_cap, batch.is_closed)
            for batch in queue.batches
        ]
        for partition, queue in sorted(accumulator._queues.get("t", {}).items())
    }
    return held, accumulator.buffer_pool.available_memory, accumulator.incomplete_count()


def queued(producer: Producer) -> dict[int, list[bytes]]:
    """Each partition's batches, built."""
    out: dict[int, list[bytes]] = {}
    for partition, queue in sorted(producer._accumulator._queues.get("t", {}).items()):
        out[partition] = []
        for batch in queue.batches:
            batch.builder.set_producer_state(-1, -1, -1)
            out[partition].append(bytes(batch.builder.build()))
    return out


def outcome(producer: Producer, *args: Any, **kwargs: Any) -> tuple[object, ...]:
    future = producer.send("t", *args, **kwargs)
    return (future.batch_result.partition, future.offset_delta, future.timestamp)


def test_records_that_need_a_new_batch_skip_the_general_path() -> None:
    """One record per batch: after each partition's first record, keyed records and records
    with a partition go through the new-batch step, keyless ones the general path; the
    batches are those of the general path alone."""
    producers = [
        offline_producer(3, batch_size=1),
        general_path_only(offline_producer(3, batch_size=1)),
    ]
    calls = [Calls(p._accumulator) for p in producers]
    try:
        for producer in producers:
            for p in range(3):  # each partition's first record: the general path
                producer.send("t", b"first", partition=p, timestamp_ms=TS)
        compared = []
        for producer in producers:
            compared.append(
                [outcome(producer, b"v%d" % i, key=b"k%d" % i, timestamp_ms=TS) for i in range(30)]
                + [outcome(producer, b"p", partition=i % 3, timestamp_ms=TS) for i in range(30)]
            )
        assert compared[0] == compared[1]
        assert all(delta == 0 for _, delta, _ in compared[0])
        assert queued(producers[0]) == queued(producers[1])
        assert memory(producers[0]) == memory(producers[1])
        core, general = calls
        assert (general.append, general.new_batch) == (63, 0)
        # Compiled: the core's step made the 60 new batches, no Python step ran.
        assert (core.append, core.new_batch) == ((3, 0) if COMPILED else (63, 0))
        for producer in producers:
            producer.send("t", b"keyless", timestamp_ms=TS)
        assert core.append == (4 if COMPILED else 64)  # the sticky partitioner: general
    finally:
        for producer in producers:
            producer.close(0)


def test_a_batch_short_of_memory_but_not_of_room_takes_more_memory() -> None:
    """A batch holds a few KiB of buffer memory first: a record past them but within the
    batch's limit goes into the same batch (the general path, or in the compiled build the
    new-batch step, takes more memory for it), not into a new one. Records of ~1 KB into 16
    KiB batches, compared with the general path."""
    producers = [offline_producer(2), general_path_only(offline_producer(2))]
    core_calls = Calls(producers[0]._accumulator)
    try:
        results = [
            [outcome(p, bytes([i]) * 1000, key=b"k", timestamp_ms=TS + i) for i in range(40)]
            for p in producers
        ]
        assert results[0] == results[1]
        deltas = [delta for _, delta, _ in results[0]]
        assert deltas[:16] == list(range(16))  # past 4 KiB, into the same batch
        assert deltas.count(0) == 3  # two full batches, then a third
        assert queued(producers[0]) == queued(producers[1])
        assert memory(producers[0]) == memory(producers[1])
        if COMPILED:  # the first record: general; the rest: the core (past 4 KiB: its step)
            assert (core_calls.append, core_calls.new_batch) == (1, 0)
    finally:
        for producer in producers:
            producer.close(0)


@pytest.mark.parametrize("compression", ["none", "lz4"])
def test_a_batch_whose_memory_is_not_free_now_takes_the_general_path(compression: str) -> None:
    """Past its first few KiB, a batch whose further memory the pool has not free now leaves
    the record to the general path, which waits for it (here: max_block_ms 0, so it fails
    with BufferExhaustedError, as the general path alone does); with the memory free again
    the record goes into the same batch."""
    settings: dict[str, Any] = {"buffer_memory": 16384, "max_block_ms": 0}
    settings["compression_type"] = compression
    producers = [
        offline_producer(1, **settings),
        general_path_only(offline_producer(1, **settings)),
    ]
    calls = [Calls(p._accumulator) for p in producers]
    try:
        for producer, counted in zip(producers, calls, strict=True):
            pool = producer._accumulator.buffer_pool
            taken = pool.total_memory - 4096 - 2000  # leaves the first batch's 4 KiB and a bit
            pool.allocate(taken, 0)
            deltas = [
                outcome(producer, b"%d" % i * 1000, key=b"k", timestamp_ms=TS)[1] for i in range(3)
            ]
            assert deltas == [0, 1, 2]
            before = counted.append
            with pytest.raises(BufferExhaustedError):
                producer.send("t", b"x" * 1000, key=b"k", timestamp_ms=TS)
            assert counted.append == before + 1  # the general path decided
            pool.deallocate(taken)
            assert outcome(producer, b"x" * 1000, key=b"k", timestamp_ms=TS)[1] == 3
        assert queued(producers[0]) == queued(producers[1])
        assert memory(producers[0]) == memory(producers[1])
    finally:
        for producer in producers:
            producer.close(0)


def test_a_new_batch_blocks_up_to_max_block_ms_when_buffer_memory_is_used_up() -> None:
    """The new-batch step takes a new batch's memory as the general path does: it waits
    max_block_ms for it, then raises BufferExhaustedError naming buffer_memory, with nothing
    queued; once memory is given back, sends go on."""
    producer = offline_producer(2, batch_size=1, buffer_memory=1024, max_block_ms=150)
    value = b"v" * 300
    try:
        for p in range(2):  # each partition's first record (the general path)
            producer.send("t", value, partition=p)
        accumulator = producer._accumulator
        assert accumulator.buffer_pool.available_memory < 300
        calls = Calls(accumulator)
        batches_before = sum(len(batches) for batches in queued(producer).values())
        started = time.monotonic()
        with pytest.raises(BufferExhaustedError, match="buffer_memory"):
            producer.send("t", value, partition=0)
        waited = time.monotonic() - started
        assert 0.14 <= waited < 5.0
        assert sum(len(batches) for batches in queued(producer).values()) == batches_before
        assert (calls.append, calls.new_batch) == ((0, 1) if COMPILED else (1, 0))
        # Memory given back while a send waits: it goes on within max_block_ms.
        queue = accumulator._queues["t"][0]
        with queue.lock:
            batch = queue.batches.popleft()
        timer = threading.Timer(0.05, accumulator.deallocate, (batch,))
        timer.start()
        future = producer.send("t", value, partition=1)
        timer.join()
        assert future.offset_delta == 0 and future.batch_result.partition == 1
    finally:
        producer.close(0)


def test_a_full_batch_is_left_open_when_the_new_batch_gets_no_memory() -> None:
    """A last batch that refuses a record is closed for appends only once the new batch has
    its memory: when the memory does not come (BufferExhaustedError after max_block_ms), the
    batch stays as the Python step leaves it. 1 KB records into 16 KiB batches, memory for
    one batch and a little more."""
    settings: dict[str, Any] = {"buffer_memory": 16384 + 100, "max_block_ms": 50}
    producers = [offline_producer(1, **settings), python_step_only(offline_producer(1, **settings))]
    try:
        for producer in producers:
            for _ in range(16):
                producer.send("t", b"x" * 1000, partition=0, timestamp_ms=TS)
            with pytest.raises(BufferExhaustedError):
                producer.send("t", b"x" * 1000, partition=0, timestamp_ms=TS)
        assert memory(producers[0]) == memory(producers[1])
        # The general path (every record of the pure build) tries the last batch before
        # taking memory, and closes it then; the new-batch steps start at the memory.
        assert memory(producers[0])[0] == {0: [(16384, 16384, not COMPILED)]}
    finally:
        for producer in producers:
            producer.close(0)


def test_a_producer_closed_during_the_step_raises_producer_closed() -> None:
    producer = offline_producer(2, batch_size=1)
    try:
        producer.send("t", b"v", partition=0)
        producer._accumulator.close()  # the accumulator closes before the gate shuts
        with pytest.raises(ProducerClosedError):
            producer.send("t", b"v", partition=0)
    finally:
        producer.close(0)


def test_threads_opening_batches_keep_each_partitions_order() -> None:
    """Several threads whose every record needs a new batch (one record per batch): each
    partition's records keep each thread's order, every record once."""
    producer = offline_producer(3, batch_size=1, buffer_memory=1 << 26)
    per_thread = 600
    try:
        for p in range(3):
            producer.send("t", b"9:%06d" % 0, partition=p)

        def send_all(thread: int) -> None:
            for i in range(per_thread):
                value = b"%d:%06d" % (thread, i)
                if i % 2:
                    producer.send("t", value, key=b"k%d" % (i % 5))
                else:
                    producer.send("t", value, partition=i % 3)

        threads = [threading.Thread(target=send_all, args=(n,)) for n in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        seen: dict[int, list[int]] = {}
        for batches in queued(producer).values():
            last: dict[int, int] = {}
            for batch in batches:
                for record_batch in read_record_batches(batch):
                    assert len(record_batch.records) == 1
                    for record in record_batch.records:
                        assert record.value is not None
                        sender_text, number_text = record.value.split(b":")
                        sender, number = int(sender_text), int(number_text)
                        if sender == 9:
                            continue
                        assert number > last.get(sender, -1)
                        last[sender] = number
                        seen.setdefault(sender, []).append(number)
        assert all(sorted(numbers) == list(range(per_thread)) for numbers in seen.values())
        assert len(seen) == 4
    finally:
        producer.close(0)


@pytest.mark.skipif(not COMPILED, reason="the compiled record core is not in use")
def test_the_core_hands_new_batch_the_checked_record() -> None:
    """new_batch gets (topic, partition, timestamp_ms, key, value) with the partition and
    timestamp the core chose; what it returns is send()'s result, and with None (or no
    new_batch) the call goes to the fallback."""
    accumulator = RecordAccumulator(batch_size=1)
    sender = accumulator.open_batch_sender(1000)
    assert sender is not None
    sender.partition_counts = {"t": 4}
    sender.open = True
    accumulator.append("t", 2, TS, None, b"first")  # the partition's queue, its batch full
    handed: list[tuple[object, ...]] = []
    marker = object()

    def new_batch(*args: object) -> object:
        handed.append(args)
        return marker if args[4] != b"decline" else None

    sender.new_batch = new_batch  # type: ignore[assignment]
    assert sender.new_batch is new_batch
    assert sender("t", b"v", None, None, 2, TS + 1) is marker
    assert handed == [("t", 2, TS + 1, None, b"v")]
    before = time.time_ns() // 1_000_000
    assert sender("t", b"w", partition=2) is marker
    assert before <= handed[-1][2] <= time.time_ns() // 1_000_000  # type: ignore[operator]
    assert sender("t", b"decline", None, None, 2, TS) is None  # no fallback: None
    assert sender("t", b"v", None, None, 3, TS) is None  # no queue yet: the general path
    assert sender("t", b"v", None, None, None, TS) is None  # keyless: the general path
    assert len(handed) == 3
    with pytest.raises(TypeError, match="callable"):
        sender.new_batch = 1  # type: ignore[assignment]
    sender.new_batch = None
    assert sender("t", b"v", None, None, 2, TS) is None
    assert len(handed) == 3


@pytest.mark.skipif(not COMPILED, reason="the compiled record core is not in use")
def test_the_core_step_makes_the_batch_or_hands_the_record_to_its_fallback() -> None:
    """The compiled new-batch step, called as new_batch is: a new batch holding its first
    memory, queued, counted incomplete, the Sender woken once; with room left in the last
    batch (the protocol would try it), or the pool short of memory, the fallback gets the
    record with nothing done."""
    # A batch of one record takes what it may need: 61 + 36 + its key and value (its first
    # 4 KiB are capped at batch_size); 102 + 99 bytes for the two records below.
    accumulator = RecordAccumulator(batch_size=1, buffer_pool=BufferPool(201, 1))
    handed: list[tuple[object, ...]] = []
    woken: list[int] = []
    marker = object()

    def fallback(*args: Any) -> Any:
        handed.append(args)
        return marker

    step = accumulator.new_batch_step(fallback, lambda: woken.append(1))
    assert step is not fallback
    accumulator.append("t", 0, TS, None, b"first")  # the queue, its batch full
    future = step("t", 0, TS + 1, b"k", b"v")
    assert future is not marker and handed == [] and woken == [1]
    queue = accumulator._queues["t"][0]
    assert [batch.record_count for batch in queue.batches] == [1, 1]
    assert future.batch_result is queue.batches[-1].result and future.offset_delta == 0
    assert queue.batches[-1].pooled_bytes == 99 == queue.batches[-1].builder.memory_cap
    assert accumulator.buffer_pool.available_memory == 0
    assert accumulator.incomplete_count() == 2
    assert step("t", 0, TS + 2, None, b"v") is marker  # no memory free now: the fallback
    assert handed == [("t", 0, TS + 2, None, b"v")] and woken == [1]
    assert step("t", 1, TS, None, b"v") is marker  # no queue yet
    assert len(handed) == 2
    roomy = RecordAccumulator(batch_size=16384)
    roomy_step = roomy.new_batch_step(fallback, lambda: woken.append(1))
    roomy.append("t", 0, TS, None, b"first")  # its batch has room: the protocol tries it
    assert roomy_step("t", 0, TS, None, b"v") is marker
    assert len(handed) == 3 and woken == [1]
    assert [batch.record_count for batch in roomy._queues["t"][0].batches] == [1]


def test_only_transactional_batches_keep_the_python_step() -> None:
    """Transactions keep the Python step for every new batch; plain and compressed batches
    get the compiled one (in the compiled build)."""

    def fallback(*args: Any) -> Any:
        return None

    transactional = offline_producer(1, transactional_id="tx")
    try:
        step = transactional._accumulator.new_batch_step(fallback, lambda: None)
        assert step is fallback
    finally:
        transactional.close(0)
    compressed = RecordAccumulator(batch_size=1, compression=CompressionType.GZIP)
    plain = RecordAccumulator(batch_size=1)
    for accumulator in (compressed, plain):
        step = accumulator.new_batch_step(fallback, lambda: None)
        assert (step is fallback) == (not COMPILED)


_RECORDS = st.lists(
    st.tuples(
        st.one_of(st.none(), st.binary(max_size=40)),  # key
        st.one_of(st.none(), st.binary(max_size=3000)),  # value
        st.one_of(st.none(), st.integers(0, 2)),  # partition (None: the key's, or 0)
    ),
    min_size=1,
    max_size=25,
)


def _batch_fields(producer: Producer) -> list[dict[str, object]]:
    """Every slot of every queued batch, as comparable values (times by their relation)."""
    out = []
    for queue in producer._accumulator._queue_lists.get("t", []):
        for batch in queue.batches:
            fields: dict[str, object] = {}
            for name in ProducerBatch.__slots__:
                value = getattr(batch, name)
                if name == "builder":
                    value = (
                        value.appended_limit,
                        value.memory_cap,
                        value.compression,
                        value.size_limit,
                        value.estimated_size_in_bytes,  # scaled by the ratio estimate
                        value.is_full,
                        len(value),
                    )
                elif name == "result":
                    value = (type(value), value.topic, value.partition, value.state)
                elif name in ("created_ms", "drained_ms", "last_attempt_ms"):
                    value = (type(value), value == batch.created_ms)
                else:
                    value = (type(value), value)
                fields[name] = value
            out.append(fields)
    return out


# Codecs with a level (or their default: None), and the topic's compression ratio estimate
# (None: no batch observed yet, 1.0).
_CODECS = st.sampled_from(
    [
        ("none", None),
        ("lz4", None),
        ("lz4", 9),
        ("zstd", None),
        ("zstd", 3),
        ("snappy", None),
        ("gzip", None),
        ("gzip", 1),
        ("gzip", 9),
    ]
)
_RATIOS = st.sampled_from([None, 1.0, 0.5, 0.3, 0.01])


@settings(max_examples=60, deadline=None)
@given(
    batch_size=st.sampled_from([0, 1, 100, 1000, 5000, 16384]),
    records=_RECORDS,
    codec=_CODECS,
    ratio=_RATIOS,
)
def test_the_core_step_leaves_the_batches_the_python_protocol_leaves(
    batch_size: int,
    records: list[tuple[bytes | None, bytes | None, int | None]],
    codec: tuple[str, int | None],
    ratio: float | None,
) -> None:
    """Whatever the batch size, codec, ratio estimate and records, a producer whose compiled
    send() opens batches itself leaves the same batches (every field, the bytes, the memory
    they hold) and gives the same futures as one whose compiled send() hands them to the
    Python step, and the same as the general path alone (which may also close a full batch
    for appends, trying it)."""
    settings = {
        "batch_size": batch_size,
        "buffer_memory": 1 << 20,
        "compression_type": codec[0],
        "compression_level": codec[1],
    }
    producers = [
        offline_producer(3, **settings),
        python_step_only(offline_producer(3, **settings)),
        general_path_only(offline_producer(3, **settings)),
    ]
    if ratio is not None:
        for producer in producers:  # test-only: as if the Sender had observed batches
            producer._accumulator._estimator.reset("t", ratio)
    calls = [Calls(producer._accumulator) for producer in producers]
    try:
        outcomes = []
        for producer in producers:
            outcomes.append(
                [
                    outcome(
                        producer,
                        value,
                        key=key,
                        partition=0 if partition is None and key is None else partition,
                        timestamp_ms=TS + i,
                    )
                    for i, (key, value, partition) in enumerate(records)
                ]
            )
        assert outcomes[0] == outcomes[1] == outcomes[2]
        assert calls[0].new_batch == 0  # compiled: the core's step made what [1]'s Python did
        assert _batch_fields(producers[0]) == _batch_fields(producers[1])
        assert memory(producers[0]) == memory(producers[1])
        assert queued(producers[0]) == queued(producers[1]) == queued(producers[2])
        if codec[0] == "none":
            # Bytes free, batches. (A compressed batch may take a record into the memory it
            # holds in the compiled send(), where the general path's bound first takes more:
            # batch_size 0 and a ratio estimate of 0.01 show it, on main too.)
            assert memory(producers[2])[1:] == memory(producers[0])[1:]
        assert memory(producers[2])[2] == memory(producers[0])[2]  # incomplete batches
    finally:
        for producer in producers:
            producer.close(0)


@pytest.mark.skipif(not COMPILED, reason="the compiled record core is not in use")
def test_batches_made_by_the_core_step_are_freed() -> None:
    """Batches the step made, once drained and dropped with their futures, leave nothing
    behind: no result, no reference to their partition."""
    accumulator = RecordAccumulator(batch_size=1)

    def fallback(*args: Any) -> Any:
        raise AssertionError("the core's step declined")

    step = accumulator.new_batch_step(fallback, lambda: None)
    accumulator.append("t", 0, TS, None, b"first")
    queue = accumulator._queues["t"][0]
    tp = queue.tp
    gc.collect()
    results_before = sum(type(o) is ProduceRequestResult for o in gc.get_objects())
    references = sys.getrefcount(tp)
    futures = [step("t", 0, TS, b"k", b"v%d" % i) for i in range(100)]
    assert len(queue.batches) == 101 and all(f.offset_delta == 0 for f in futures)
    with queue.lock:
        made = [queue.batches.pop() for _ in range(100)]
    for batch in made:
        accumulator.deallocate(batch)
    del made, futures, batch
    gc.collect()
    assert sys.getrefcount(tp) == references
    assert sum(type(o) is ProduceRequestResult for o in gc.get_objects()) == results_before
