"""The compiled record core against the pure-Python reference: the same records give the same
batches, byte for byte (a differential Hypothesis test), and its own checks and errors."""

from __future__ import annotations

import array
import functools
import inspect
import os
import pydoc
import random
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from kafkaline import Producer
from kafkaline.errors import IllegalStateError, ProducerClosedError
from kafkaline.net.cluster import BrokerNode, ClusterMetadata, PartitionMetadata
from kafkaline.producer.murmur2 import murmur2, to_positive
from kafkaline.record import CompressionType, core_build, read_record_batches
from kafkaline.record.batch_format import TimestampType
from kafkaline.record.builder import RecordBatchBuilder as PythonBuilder
from kafkaline.record.crc import crc32c
from kafkaline.record.record_encoder import encode_headers

try:
    from kafkaline import _record_core
except ImportError:  # pragma: no cover - an install without a C compiler
    _record_core = None  # type: ignore[assignment]

needs_core = pytest.mark.skipif(_record_core is None, reason="the C record core is not built")

BASE_TS = 1_700_000_000_000

Record = tuple[int, bytes | None, bytes | None, list[tuple[str, bytes | None]] | None]

records_strategy = st.lists(
    st.tuples(
        st.integers(BASE_TS - 10**6, BASE_TS + 10**9),
        st.none() | st.binary(max_size=40),
        st.none() | st.binary(max_size=300) | st.binary(min_size=2000, max_size=9000),
        st.none()
        | st.lists(st.tuples(st.text(max_size=8), st.none() | st.binary(max_size=20)), max_size=3),
    ),
    max_size=60,
)


def _batches(
    make: type[PythonBuilder],
    records: Sequence[Record],
    *,
    limit: int,
    compression: CompressionType,
    ratio: float,
    bulk: bool,
) -> list[bytes]:
    """The batches the records fill, one new builder whenever a record is refused."""
    out: list[bytes] = []
    position = 0
    while position < len(records):
        builder = make(limit, compression=compression, estimated_compression_ratio=ratio)
        if bulk:
            rest = records[position:]
            position += builder.append_many(
                [r[1] for r in rest],
                [r[2] for r in rest],
                [r[0] for r in rest],
                [r[3] for r in rest],
            )
        else:
            while position < len(records):
                timestamp, key, value, headers = records[position]
                if builder.append(timestamp, key, value, headers) is None:
                    break
                position += 1
        builder.set_producer_state(7, 1, position)
        out.append(bytes(builder.build()))
    return out


@needs_core
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    records=records_strategy,
    limit=st.sampled_from([62, 200, 1024, 16384, 65536]),
    compression=st.sampled_from(list(CompressionType)),
    ratio=st.sampled_from([1.0, 0.5, 0.25]),
    bulk=st.booleans(),
)
def test_compiled_and_python_builders_give_identical_batches(
    records: list[Record], limit: int, compression: CompressionType, ratio: float, bulk: bool
) -> None:
    kwargs = {"limit": limit, "compression": compression, "ratio": ratio, "bulk": bulk}
    expected = _batches(PythonBuilder, records, **kwargs)  # type: ignore[arg-type]
    got = _batches(_record_core.RecordBatchBuilder, records, **kwargs)  # type: ignore[arg-type]
    assert got == expected
    read = [r for b in got for batch in read_record_batches(b) for r in batch.records]
    assert [(r.timestamp, r.key, r.value) for r in read] == [(t, k, v) for t, k, v, _ in records]


@needs_core
@given(data=st.binary(max_size=200))
def test_murmur2_and_crc32c_match_the_python_ones(data: bytes) -> None:
    assert _record_core.murmur2(data) == murmur2(data)
    assert _record_core.partition_for_key(data, 7) == to_positive(murmur2(data)) % 7
    assert _record_core.crc32c(data) == crc32c(data)
    assert _record_core.crc32c(data[10:], _record_core.crc32c(data[:10])) == crc32c(data)


@needs_core
@pytest.mark.parametrize("bulk", [False, True])
def test_records_of_every_length_varint_size_match_the_reference(bulk: bool) -> None:
    # Records whose length takes 1, 2, 3 and 4 bytes, keys around the 8 to 16 bytes copied
    # as two words, nulls, and timestamps before the first: the compiled encoder writes the
    # fields before it knows the length's size.
    sizes = [0, 5, 40, 60, 100, 8000, 8200, 9000, 1_100_000, 3, 70_000, 62, 63, 64]
    keys = [None, b"", b"1234567", b"12345678", b"123456789abc", b"0123456789abcdef"]
    keys += [b"0123456789abcdefg", b"k" * 40]
    records: list[Record] = [
        (BASE_TS + (i * 7919) % 3000 - 1000, keys[i % len(keys)], b"v" * size, None)
        for i, size in enumerate(sizes * 3)
    ]
    records.insert(5, (BASE_TS, b"key", None, None))
    kwargs = {"limit": 8 << 20, "compression": CompressionType.NONE, "ratio": 1.0, "bulk": bulk}
    expected = _batches(PythonBuilder, records, **kwargs)  # type: ignore[arg-type]
    got = _batches(_record_core.RecordBatchBuilder, records, **kwargs)  # type: ignore[arg-type]
    assert got == expected
    assert len(got) == 1


@needs_core
def test_rebuild_after_new_producer_state_leaves_the_returned_bytes_alone() -> None:
    builder = _record_core.RecordBatchBuilder(1024)
    builder.append(BASE_TS, b"k", b"value")
    first = builder.build_buffer()
    kept = bytes(first)
    builder.set_producer_state(5, 0, 10)
    second = builder.build_buffer()
    assert first == kept
    assert second != first
    (batch,) = read_record_batches(second)
    assert (batch.producer_id, batch.base_sequence) == (5, 10)


@needs_core
def test_a_batch_of_large_records_sizes_its_buffer_once() -> None:
    # Growing by doubling copied a batch of 10 KB records about once more on the way.
    batch_size = 64 * 1024
    builder = _record_core.RecordBatchBuilder(batch_size)
    values = [bytes([n]) * 10_000 for n in range(6)]
    builder.append(BASE_TS, b"k", values[0])
    assert _record_core.buffer_capacity(builder) == batch_size
    for value in values[1:]:
        builder.append(BASE_TS, b"k", value)
    assert _record_core.buffer_capacity(builder) == batch_size
    (batch,) = read_record_batches(builder.build_buffer())
    assert [r.value for r in batch.records] == values


@needs_core
def test_a_batch_buffer_stays_within_the_buffer_memory_its_batch_holds() -> None:
    # The accumulator lets a new batch hold what its first record needs (memory_cap); a
    # buffer of the whole batch_size would let many partitions outgrow buffer_memory.
    batch_size = 64 * 1024
    builder = _record_core.RecordBatchBuilder(batch_size)
    builder.memory_cap = 12_000
    builder.append(BASE_TS, b"k", bytes(10_000))
    assert builder.appended_size <= _record_core.buffer_capacity(builder) <= 12_000
    builder.memory_cap = batch_size  # took the whole limit from the pool: grows once to it
    builder.append(BASE_TS, b"k", bytes(10_000))
    assert _record_core.buffer_capacity(builder) == batch_size


@needs_core
def test_a_buffer_topped_up_record_by_record_still_grows_by_doubling() -> None:
    # A pool smaller than batch_size gives a batch only what each record needs; growing
    # the buffer to exactly that each time would copy the batch at every record.
    builder = _record_core.RecordBatchBuilder(1 << 20)
    capacities = []
    for _ in range(200):
        builder.memory_cap = builder.appended_size + 1_100
        builder.append(BASE_TS, b"k", bytes(1_000))
        capacities.append(_record_core.buffer_capacity(builder))
    assert len(set(capacities)) <= 12
    assert capacities[-1] >= builder.appended_size


@needs_core
def test_a_batch_of_small_records_grows_small_then_to_batch_size() -> None:
    batch_size = 64 * 1024
    builder = _record_core.RecordBatchBuilder(batch_size)
    builder.append(BASE_TS, b"k", b"v" * 100)
    assert _record_core.buffer_capacity(builder) == 512
    capacities = set()
    for _ in range(60):
        builder.append(BASE_TS, b"k", b"v" * 100)
        capacities.add(_record_core.buffer_capacity(builder))
    # A few KiB by doubling, then the whole batch at once (no copies at 8, 16, 32 KiB).
    assert capacities == {512, 1024, 2048, 4096, batch_size}


@needs_core
def test_a_compressed_batch_buffer_grows_past_batch_size_to_its_limit() -> None:
    builder = _record_core.RecordBatchBuilder(
        16_384, compression=CompressionType.GZIP, estimated_compression_ratio=0.25
    )
    limit = builder.appended_limit
    for n in range(6):
        builder.append(BASE_TS, None, bytes([n]) * 10_000)
    assert 16_384 < builder.appended_size <= _record_core.buffer_capacity(builder) <= limit
    with pytest.raises(TypeError, match="RecordBatchBuilder"):
        _record_core.buffer_capacity(object())  # type: ignore[arg-type]


@needs_core
def test_log_append_time_batch_matches_the_reference() -> None:
    batches = []
    for make in (PythonBuilder, _record_core.RecordBatchBuilder):
        builder = make(
            1024, timestamp_type=TimestampType.LOG_APPEND_TIME, log_append_time=BASE_TS + 99
        )
        builder.append(BASE_TS, None, b"v", [("h", None)])
        batches.append(builder.build())
    assert batches[0] == batches[1]


@needs_core
def test_append_encoded_matches_the_reference() -> None:
    from kafkaline.record.record_encoder import encode_records

    encoded = encode_records([b"a", None], [b"1", b"22"], [BASE_TS, BASE_TS + 5])
    batches = []
    for make in (PythonBuilder, _record_core.RecordBatchBuilder):
        builder = make(1024)
        builder.append_encoded([encoded[:3], encoded[3:]], 2, BASE_TS, BASE_TS + 5)
        assert builder.open_state() == (1024 - 61 - len(encoded), 2, BASE_TS)
        builder.append(BASE_TS + 1, b"b", b"333")
        batches.append(builder.build())
    assert batches[0] == batches[1]


@needs_core
@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda b: b.append(BASE_TS, "key", b"v"), TypeError, "key must be bytes, not str"),
        (lambda b: b.append(BASE_TS, None, 5), TypeError, "value must be bytes, not int"),
        (lambda b: b.append(1.5, None, b"v"), TypeError, "timestamp must be int milliseconds"),
        (lambda b: b.append(BASE_TS, None, b"v", [(1, b"")]), TypeError, "header key must be str"),
        (lambda b: b.append(BASE_TS, None, b"v", [("h", 1)]), TypeError, "header value must be"),
        (lambda b: b.seal(), IllegalStateError, "without records"),
        (lambda b: b.set_producer_state(1, 1 << 15, 0), ValueError, "producer_epoch"),
    ],
)
def test_bad_input_is_named_as_the_reference_names_it(
    call: object, error: type[Exception], message: str
) -> None:
    for make in (PythonBuilder, _record_core.RecordBatchBuilder):
        with pytest.raises(error, match=message):
            call(make(1024))  # type: ignore[operator]


@needs_core
def test_bad_constructor_arguments_raise_value_errors() -> None:
    with pytest.raises(ValueError, match="batch_size_limit"):
        _record_core.RecordBatchBuilder(61)
    with pytest.raises(ValueError, match="estimated_compression_ratio"):
        _record_core.RecordBatchBuilder(1024, estimated_compression_ratio=0.0)
    with pytest.raises(ValueError, match="base_offset"):
        _record_core.RecordBatchBuilder(1024, base_offset=1 << 63)


@needs_core
def test_closed_builder_refuses_encoded_records() -> None:
    builder = _record_core.RecordBatchBuilder(1024)
    builder.close_for_appends()
    assert builder.append(BASE_TS, None, b"v") is None
    with pytest.raises(IllegalStateError):
        builder.append_encoded([b"x"], 1, BASE_TS, BASE_TS)


@needs_core
def test_header_block_is_the_reference_encoding() -> None:
    headers: list[tuple[str, bytes | None]] = [("é", b"\x00"), ("n", None)]
    for make in (PythonBuilder, _record_core.RecordBatchBuilder):
        builder = make(1024)
        builder.append(BASE_TS, None, b"", headers)
        wire = builder.build()
        assert wire.endswith(encode_headers(headers))


def test_pure_python_switch_forces_the_python_core() -> None:
    code = "from kafkaline.record import core_build; print(core_build())"
    env = {**os.environ, "KAFKALINE_PURE_PYTHON": "1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.stdout.strip() == "python", out.stderr
    env["KAFKALINE_PURE_PYTHON"] = "0"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.stdout.strip() == ("python" if _record_core is None else "compiled"), out.stderr


def test_core_build_names_the_builder_in_use() -> None:
    from kafkaline.record import RecordBatchBuilder

    if core_build() == "compiled":
        assert RecordBatchBuilder is _record_core.RecordBatchBuilder
    else:
        assert RecordBatchBuilder is PythonBuilder


@needs_core
@given(
    keys=st.none() | st.lists(st.none() | st.binary(max_size=12), min_size=80, max_size=80),
    given=st.none() | st.lists(st.none() | st.integers(0, 39), min_size=80, max_size=80),
    count=st.integers(0, 80),
    partitions=st.integers(1, 40),
)
def test_records_grouped_per_partition_as_the_python_chooses_them(
    keys: list[bytes | None] | None,
    given: list[int | None] | None,
    count: int,
    partitions: int,
) -> None:
    from kafkaline.producer.bulk.lists import group_by_partition

    keys = None if keys is None else keys[:count]
    given = (
        None if given is None else [None if p is None else p % partitions for p in given[:count]]
    )
    chosen: list[int] = []
    for i in range(count):
        key = None if keys is None else keys[i]
        partition = None if given is None else given[i]
        if partition is not None:
            chosen.append(partition)
        else:
            chosen.append(-1 if key is None else to_positive(murmur2(key)) % partitions)
    groups = _record_core.group_positions(count, keys, given, partitions)
    assert [(p, positions.tolist()) for p, positions in groups] == group_by_partition(
        chosen, partitions
    )
    if keys is not None:
        assert [_record_core.partition_for_key(k, partitions) for k in keys if k is not None] == [
            to_positive(murmur2(k)) % partitions for k in keys if k is not None
        ]


@needs_core
def test_grouping_names_bad_input() -> None:
    with pytest.raises(ValueError, match="partition_count 0"):
        _record_core.group_positions(1, [b"k"], None, 0)
    with pytest.raises(TypeError, match="key must be bytes"):
        _record_core.group_positions(1, ["k"], None, 3)  # type: ignore[list-item]
    with pytest.raises(ValueError, match=r"partition 3 is outside 0\.\.2"):
        _record_core.group_positions(2, None, [0, 3], 3)
    with pytest.raises(ValueError, match="one item per record"):
        _record_core.group_positions(2, [b"k"], None, 3)


@needs_core
@pytest.mark.parametrize(
    ("values", "keys", "headers", "accepted"),
    [
        ([b"a", None, b""], None, None, True),
        ([b"a", None], [None, b"k"], None, True),
        ([], None, None, True),
        ([b"a" * 10], [b"k" * 10], None, True),  # 20 bytes: at the limit
        ([b"a" * 11], [b"k" * 10], None, False),  # over it: the Python check names it
        ((b"a",), None, None, False),  # a tuple
        ([b"a", "text"], None, None, False),
        ([bytearray(b"a")], None, None, False),
        ([b"a"], [b"k", b"l"], None, False),  # lengths differ
        ([b"a"], (b"k",), None, False),
        ([b"a"], [5], None, False),
        ([b"a", b"b", b"c"], None, [None, [], [("h", None)]], True),
        ([b"a"], None, [(("h", b"x"),)], True),
        ([b"a"], None, [[("h", b"x" * 4)]], False),  # 1 + 5 + 10 + 1 + 4 = 21 > 20
        ([b"a"], None, [[("h", b"x" * 3)]], True),  # 20: at the limit
        ([b"a"], None, [[("h", bytearray(b"x"))]], False),
        ([b"a"], None, [[["h", b"x"]]], False),  # a list, not a tuple
        ([b"a"], None, [[("h", b"x", b"y")]], False),
        ([b"a"], None, [[(b"h", b"x")]], False),
        ([b"a"], None, [[("\udc80", b"x")]], False),  # no UTF-8: the Python check names it
        ([b"a"], None, [{"h": b"x"}], False),
        ([b"a"], None, [None, None], False),
        ([b"a"], None, (None,), False),
    ],
)
def test_lists_accepted_takes_only_the_usual_lists(
    values: Any, keys: Any, headers: Any, accepted: bool
) -> None:
    assert _record_core.lists_accepted(values, keys, headers, 20) is accepted


@needs_core
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    records=records_strategy,
    data=st.data(),
    limit=st.sampled_from([62, 200, 1024, 16384]),
    compact=st.booleans(),
)
def test_append_many_over_positions_matches_the_reference(
    records: list[Record], data: st.DataObject, limit: int, compact: bool
) -> None:
    """Records taken by their input positions (as send_batch() takes a partition's records)
    give the same batches from both builders, and the same as those records in a list."""
    order = data.draw(st.lists(st.integers(0, max(len(records) - 1, 0)), max_size=len(records)))
    if not records:
        order = []
    positions: Any = order
    if compact:  # as group_positions() gives them
        raw = memoryview(array.array("q", order).tobytes())
        positions = raw.cast("n")  # type: ignore[call-overload]
    keys = [r[1] for r in records]
    values = [r[2] for r in records]
    timestamps = [r[0] for r in records]
    headers = [r[3] for r in records]
    for make in (PythonBuilder, _record_core.RecordBatchBuilder):
        got: list[bytes] = []
        start = 0
        while start < len(order):
            builder = make(limit)
            start += builder.append_many(
                keys, values, timestamps, headers, start=start, positions=positions
            )
            builder.set_producer_state(7, 1, start)
            got.append(bytes(builder.build()))
        expected = _batches(
            PythonBuilder,
            [records[i] for i in order],
            limit=limit,
            compression=CompressionType.NONE,
            ratio=1.0,
            bulk=True,
        )
        assert got == expected


@needs_core
def test_append_many_names_bad_positions() -> None:
    for make in (PythonBuilder, _record_core.RecordBatchBuilder):
        with pytest.raises(IndexError, match=r"position 2 is outside 0\.\.1"):
            make(1024).append_many([None, None], [b"a", b"b"], 0, positions=[0, 2])
        with pytest.raises(ValueError, match=r"start 3 is outside 0\.\.1"):
            make(1024).append_many([None, None], [b"a", b"b"], 0, start=3, positions=[1])
    with pytest.raises(TypeError, match="positions must be"):
        _record_core.RecordBatchBuilder(1024).append_many(
            [None], [b"a"], 0, positions=memoryview(b"\0")
        )


# ------------------------------------------------------------------ Producer.send()'s core call


def _offline_producer(partitions: int, seed: int, **settings: object) -> Producer:
    """A producer that knows topic "t" (``partitions`` partitions, one leader) and is open,
    without a broker or a thread: test-only hooks into its state, so that send() is all that
    runs. Sticky choices come from a random generator seeded with ``seed``."""
    producer = Producer(bootstrap_servers="127.0.0.1:1", **settings)
    producer._accumulator._rng = random.Random(seed)
    producer._topics.cluster = ClusterMetadata(
        [BrokerNode(1, "b1", 9092)],
        [PartitionMetadata("t", p, leader=1) for p in range(partitions)],
    )
    producer._topics.counts["t"] = partitions
    producer._set_gate(None)
    return producer


def _general_path_only(producer: Producer) -> Producer:
    producer._core_send = None
    producer.__dict__.pop("send", None)  # the compiled call bound as producer.send
    return producer


def _queued_batches(producer: Producer) -> dict[int, list[bytes]]:
    """Each partition's batches, built (which closes them)."""
    out: dict[int, list[bytes]] = {}
    for partition, queue in sorted(producer._accumulator._queues.get("t", {}).items()):
        built = []
        for batch in queue.batches:
            batch.builder.set_producer_state(-1, -1, -1)
            built.append(bytes(batch.builder.build()))
        out[partition] = built
    return out


def _sticky_state(producer: Producer) -> tuple[int, int] | None:
    """Topic "t"'s sticky partition and the bytes counted to it."""
    partitioner = producer._accumulator.sticky_partitioner("t")
    current = None if partitioner is None else partitioner.current
    return None if current is None else (current.partition, current.produced_bytes)


def _outcome(producer: Producer, record: dict[str, Any]) -> tuple[object, ...]:
    """What send() gives for the record: the future's partition, offset delta, sizes and
    timestamp, or the error's type and message."""
    try:
        future = producer.send("t", **record)
    except Exception as error:
        return (type(error), str(error))
    result = future.batch_result
    return (
        result.partition,
        future.offset_delta,
        future.serialized_key_size,
        future.serialized_value_size,
        future.timestamp,
    )


send_records = st.lists(
    st.fixed_dictionaries(
        {},
        optional={
            "value": st.none() | st.binary(max_size=120) | st.binary(min_size=900, max_size=1100),
            "key": st.none() | st.sampled_from([b"", b"a", b"key-1", b"key-22", b"\xff" * 9]),
            "partition": st.none() | st.integers(-1, 4),
            # (None, now, is compared below: the two sends would read different clocks)
            "timestamp_ms": st.integers(-1, BASE_TS + 10**6) | st.sampled_from([True, 2**63]),
            "headers": st.none() | st.just([("h", b"v")]),
        },
    ).map(lambda record: {**record, "timestamp_ms": record.get("timestamp_ms", BASE_TS)}),
    max_size=120,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records=send_records, seed=st.integers(0, 1000))
# Always: keys of different partitions into open batches, and keyless records enough to
# switch sticky partitions several times.
@example(
    records=[{"value": b"v", "key": k, "timestamp_ms": BASE_TS} for k in [b"key-1", b"key-22"] * 9],
    seed=0,
)
@example(records=[{"value": b"x" * 100, "timestamp_ms": BASE_TS + i} for i in range(60)], seed=3)
def test_core_send_and_the_general_path_give_the_same_batches(
    records: list[dict[str, Any]], seed: int
) -> None:
    """The same records through send() with the compiled one-call path and through the
    general path alone: the same futures (partition, offset delta, sizes, timestamp), the
    same errors, the same sticky partitions and the same batch bytes. Records of 4 partitions,
    small batches (so batches fill and sticky partitions switch), a payload limit the largest
    values pass (the named error of the general path)."""
    settings_ = {"batch_size": 600, "max_request_size": 1100, "linger_ms": 5}
    core = _offline_producer(4, seed, **settings_)
    general = _general_path_only(_offline_producer(4, seed, **settings_))
    try:
        for record in records:
            assert _outcome(core, record) == _outcome(general, record), record
        assert _sticky_state(core) == _sticky_state(general)
        assert _queued_batches(core) == _queued_batches(general)
    finally:
        core.close(0)
        general.close(0)


def test_core_send_takes_the_common_case_in_one_call() -> None:
    """In the compiled build a record into an open batch does not reach the accumulator's
    append() (the general path); with KAFKALINE_PURE_PYTHON=1 there is no core call and
    everything goes the general way."""
    producer = _offline_producer(3, 1, batch_size=1 << 16)
    calls = 0
    append = producer._accumulator.append

    def counted(*args: Any) -> Any:
        nonlocal calls
        calls += 1
        return append(*args)

    producer._accumulator.append = counted  # type: ignore[method-assign, assignment]
    try:
        for i in range(300):
            producer.send("t", b"v", key=b"k%d" % (i % 30))
            producer.send("t", b"v")
            producer.send("t", None, key=b"k", partition=2, timestamp_ms=BASE_TS)
        if core_build() == "compiled":
            assert producer._core_send is not None
            assert calls <= 3 + 1  # a batch per partition, the sticky partition's included
        else:
            assert producer._core_send is None
            assert calls == 900
    finally:
        producer.close(0)


def test_core_send_timestamp_is_now_in_epoch_milliseconds() -> None:
    producer = _offline_producer(2, 1)
    try:
        producer.send("t", b"first", key=b"k")  # makes the batch
        before = time.time_ns() // 1_000_000
        future = producer.send("t", b"v", key=b"k")
        after = time.time_ns() // 1_000_000
        assert before <= future.timestamp <= after
        assert future.offset_delta == 1
    finally:
        producer.close(0)


def test_core_send_leaves_closed_producers_and_unknown_topics_to_the_general_path() -> None:
    producer = _offline_producer(2, 1, max_block_ms=50)
    producer.send("t", b"v", key=b"k")
    # No client: the general path's wait for an unknown topic's metadata fails at once.
    with pytest.raises(IllegalStateError, match="the producer is not started"):
        producer.send("other", b"v", key=b"k")
    producer.close(0)
    with pytest.raises(ProducerClosedError):
        producer.send("t", b"v", key=b"k")


@pytest.mark.skipif(core_build() != "compiled", reason="the C record core is not in use")
def test_core_send_checks_its_arguments_itself() -> None:
    producer = _offline_producer(2, 1)
    try:
        core_send = producer._core_send
        assert core_send is not None
        with pytest.raises(TypeError, match="dict"):
            core_send.partition_counts = [("t", 2)]  # type: ignore[assignment]
        assert core_send.open
        with pytest.raises(TypeError, match="callable"):
            core_send.fallback = 1  # type: ignore[assignment]
        producer.send("t", b"v", key=b"k")
        # Without fallback: a count that is no int, a bool partition or timestamp, a str
        # subclass topic: nothing done; a call it cannot read is a TypeError.
        core_send.fallback = None
        with pytest.raises(TypeError, match="takes topic"):
            core_send(value=b"v")  # type: ignore[call-arg]
        assert core_send("t", b"v", b"k", None, True, None) is None
        assert core_send("t", b"v", b"k", None, None, True) is None
        assert core_send(type("Topic", (str,), {})("t"), b"v", b"k", None, None, None) is None
        # A new map, as a metadata update sets it (the producer never changes a count in
        # place: the core keeps a topic's count until the map is replaced).
        core_send.partition_counts = {"t": 2.0}  # type: ignore[dict-item]
        assert core_send("t", b"v", b"k", None, None, None) is None
    finally:
        producer.close(0)


def test_threads_sending_through_the_core_keep_each_partitions_order() -> None:
    """send() from several threads: every record once, and each thread's records in the
    order it sent them within each partition (the partition's lock orders the appends)."""
    producer = _offline_producer(3, 1, batch_size=4096)
    per_thread = 3000

    def send_all(thread: int) -> None:
        for i in range(per_thread):
            key = None if i % 5 == 0 else b"k%d" % (i % 7)
            producer.send("t", b"%d:%06d" % (thread, i), key=key)

    threads = [threading.Thread(target=send_all, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    try:
        seen: dict[int, list[int]] = {}
        total = 0
        for batches in _queued_batches(producer).values():
            last: dict[int, int] = {}
            for batch in batches:
                for record_batch in read_record_batches(batch):
                    for record in record_batch.records:
                        assert record.value is not None
                        sender_text, number_text = record.value.split(b":")
                        sender, number = int(sender_text), int(number_text)
                        assert number > last.get(sender, -1)
                        last[sender] = number
                        seen.setdefault(sender, []).append(number)
                        total += 1
        assert total == 4 * per_thread
        assert all(sorted(numbers) == list(range(per_thread)) for numbers in seen.values())
    finally:
        producer.close(0)


@needs_core
def test_queue_lock_behaves_as_threading_lock() -> None:
    lock = _record_core.QueueLock()
    assert lock.acquire() and lock.locked()
    assert not lock.acquire(blocking=False)
    started = time.monotonic()
    assert not lock.acquire(timeout=0.05)
    assert time.monotonic() - started >= 0.04
    with pytest.raises(ValueError, match="non-blocking"):
        lock.acquire(False, 1)
    taken = threading.Event()

    def take() -> None:
        with lock:
            taken.set()

    waiter = threading.Thread(target=take)
    waiter.start()
    assert not taken.wait(0.05)
    lock.release()
    waiter.join(5)
    assert taken.is_set() and not lock.locked()
    with pytest.raises(RuntimeError, match="release unlocked lock"):
        lock.release()
    with pytest.raises(TypeError):
        _record_core.QueueLock(1)  # type: ignore[call-arg]


@needs_core
def test_queue_lock_excludes_threads_that_wait_for_it() -> None:
    """Threads giving up the GIL inside the lock (so that others find it held and wait):
    never two inside, no update lost, every waiter woken, timeouts included."""
    lock = _record_core.QueueLock()
    inside = 0
    total = 0
    overlaps = 0

    def work() -> None:
        nonlocal inside, total, overlaps
        for i in range(300):
            if i % 7 == 0:
                if not lock.acquire(timeout=0.001):
                    continue
            else:
                lock.acquire()
            try:
                inside += 1
                overlaps += inside > 1
                before = total
                time.sleep(0)
                total = before + 1
                inside -= 1
            finally:
                lock.release()

    threads = [threading.Thread(target=work) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert not any(thread.is_alive() for thread in threads)
    assert overlaps == 0 and not lock.locked()
    assert 6 * 300 * 6 // 7 <= total <= 6 * 300


@pytest.mark.skipif(core_build() != "compiled", reason="the C record core is not in use")
def test_core_send_waits_for_the_partition_lock_held_by_python() -> None:
    """The partition queues' locks are the core's, and its send() waits (GIL released) while
    another thread holds one through Python's `with`, then appends after it."""
    producer = _offline_producer(1, 1)
    try:
        producer.send("t", b"first", key=b"k")
        queue = producer._accumulator._queues["t"][0]
        assert isinstance(queue.lock, _record_core.QueueLock)
        done = threading.Event()
        sender = threading.Thread(
            target=lambda: (producer.send("t", b"second", key=b"k"), done.set())
        )
        with queue.lock:
            sender.start()
            assert not done.wait(0.1)
            assert len(queue.batches[-1].builder) == 1
        sender.join(5)
        assert done.is_set() and len(queue.batches[-1].builder) == 2
    finally:
        producer.close(0)


@pytest.mark.skipif(core_build() != "compiled", reason="the C record core is not in use")
def test_producer_send_is_the_compiled_call_with_the_general_path_behind() -> None:
    """producer.send is the core's callable itself (no Python frame first) with send()'s
    signature: positional and keyword arguments both take the core; what it declines, and
    calls it cannot read, get the general path's result or its error."""
    producer = _offline_producer(2, 1)
    try:
        assert producer.__dict__["send"] is producer._core_send
        producer.send("t", b"first", key=b"k")  # makes the batch
        calls = 0
        append = producer._accumulator.append

        def counted(*args: Any) -> Any:
            nonlocal calls
            calls += 1
            return append(*args)

        producer._accumulator.append = counted  # type: ignore[method-assign, assignment]
        futures = [
            producer.send("t", b"v", b"k", None, None, BASE_TS),
            producer.send("t", key=b"k", value=b"v", timestamp_ms=BASE_TS),
            producer.send(topic="t", value=b"v", key=b"k"),
            producer.send("t", b"v", partition=1),
        ]
        assert calls == 1  # a new batch for partition 1, made by the general path
        assert [f.offset_delta for f in futures] == [1, 2, 3, 0]
        assert futures[1].serialized_key_size == 1 and futures[1].timestamp == BASE_TS
        # Declined by the core: headers, a bad key type; the general path's result or error.
        assert producer.send("t", b"v", key=b"k", headers=[("h", b"1")]).offset_delta == 4
        assert calls == 2
        with pytest.raises(TypeError, match="key"):
            producer.send("t", b"v", key="text")
        with pytest.raises(TypeError, match="unexpected keyword argument 'nope'"):
            producer.send("t", b"v", nope=1)  # type: ignore[call-arg]
        with pytest.raises(TypeError, match="multiple values for argument 'value'"):
            producer.send("t", b"v", value=b"w")  # type: ignore[misc]
        with pytest.raises(TypeError, match="missing 1 required positional argument"):
            producer.send()  # type: ignore[call-arg]
        with pytest.raises(TypeError, match="positional arguments"):
            producer.send("t", b"v", b"k", None, None, None, None)  # type: ignore[call-arg]
        # It reads as send() for help(), inspect and __doc__.
        assert producer.send.__doc__ == Producer.send.__doc__
        assert producer.send.__name__ == "send"
        assert str(inspect.signature(producer.send)) == str(
            inspect.signature(functools.partial(Producer.send, producer))
        )
        assert "Queue a record for ``topic``" in pydoc.render_doc(producer.send)
    finally:
        producer.close(0)


def test_a_subclass_send_is_kept() -> None:
    class Counting(Producer):
        sent = 0

        def send(self, *args: Any, **kwargs: Any) -> Any:
            Counting.sent += 1
            return super().send(*args, **kwargs)

    producer = Counting(bootstrap_servers="127.0.0.1:1")
    try:
        producer._topics.counts["t"] = 1
        producer._set_gate(None)
        with pytest.raises(TypeError, match="key"):
            producer.send("t", b"v", key="text")
        assert Counting.sent == 1
    finally:
        producer.close(0)


class _ChangingPair:
    """A header pair (a custom sequence) whose value is ``before`` for the first two reads of
    item 1 (the core's check and size pass) and ``after`` from then on (its write pass)."""

    def __init__(self, before: bytes | None, after: bytes | None) -> None:
        self.reads = 0
        self.before = before
        self.after = after

    def __len__(self) -> int:
        return 2

    def __getitem__(self, index: int) -> object:
        if index >= 2:
            raise IndexError(index)
        if index == 0:
            return "k"
        self.reads += 1
        return self.before if self.reads <= 2 else self.after


@needs_core
@pytest.mark.parametrize(
    ("before", "after"),
    [(b"x", b"y" * 100_000), (b"x" * 100, b"y"), (b"x", None), (None, b"yy")],
)
def test_a_header_pair_that_changes_size_between_reads_raises(
    before: bytes | None, after: bytes | None
) -> None:
    """The header block is sized in one pass and written in a second: a pair that reads back
    with another size is refused, never written past (or short of) the block."""
    builder = _record_core.RecordBatchBuilder(batch_size_limit=1 << 20)
    with pytest.raises(ValueError, match="header pair changed"):
        builder.append(1, None, b"v", [_ChangingPair(before, after)])  # type: ignore[list-item]
    assert len(builder) == 0
