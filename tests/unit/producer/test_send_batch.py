"""The bulk paths without a broker: RecordAccumulator.append_many (batches, memory, sticky
partitions, blocking), the grouping of records by partition, BatchSendResult, send_batch()'s
checks (errors naming the index) and send_arrow()'s column checks (naming the column)."""

from __future__ import annotations

import doctest
import socket
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkaline import Producer, ProducerConfig
from kafkaline.errors import (
    BufferExhaustedError,
    ConfigError,
    InvalidPartitionError,
    InvalidRecordTimestampError,
    KafkaTimeoutError,
    RecordTooLargeError,
)
from kafkaline.net.cluster import TopicPartition
from kafkaline.producer.accumulator import RecordAccumulator
from kafkaline.producer.buffer_pool import BufferPool
from kafkaline.producer.bulk import BatchSendResult
from kafkaline.producer.bulk.arrow import arrow_columns, arrow_partitions_and_timestamps
from kafkaline.producer.bulk.lists import (
    as_bytes_column,
    group_by_partition,
    longest,
)
from kafkaline.producer.futures import FAILED, SUCCEEDED, ProduceRequestResult
from kafkaline.producer.partitioner import StaticCluster, partition_for_key
from kafkaline.producer.record import ProducerRecord
from kafkaline.record import read_record_batches
from kafkaline.record.builder import RecordBatchBuilder as PythonBuilder

VALUE = b"v" * 100


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@pytest.fixture
def producer() -> Iterator[Producer]:
    """A producer whose bootstrap server refuses connections: checks fail before metadata."""
    with_nobody = Producer(
        bootstrap_servers=f"127.0.0.1:{closed_port()}", max_block_ms=200, max_request_size=2000
    )
    yield with_nobody
    with_nobody.close(0)


def accumulator_for(batch_size: int = 1024, buffer_memory: int = 1 << 20) -> RecordAccumulator:
    return RecordAccumulator(
        batch_size=batch_size, linger_ms=5, buffer_pool=BufferPool(buffer_memory, batch_size)
    )


def records_of(accumulator: RecordAccumulator, tp: TopicPartition) -> list[tuple[object, ...]]:
    """Every queued record of ``tp`` as (key, value), decoded from the built batches."""
    decoded: list[tuple[object, ...]] = []
    queue = accumulator._existing_queue(tp)
    assert queue is not None
    for batch in queue.batches:
        batch.close()
        for record_batch in read_record_batches(batch.builder.build()):
            decoded.extend((record.key, record.value) for record in record_batch.records)
    return decoded


# --------------------------------------------------------------------------- append_many


def test_append_many_fills_batches_in_order_and_reports_runs() -> None:
    accumulator = accumulator_for(batch_size=1024)
    keys = [b"k%d" % i for i in range(100)]
    values = [VALUE] * 100
    segments, wake = accumulator.append_many("t", 0, 1_700_000_000_000, keys, values)
    assert wake  # batches filled
    assert sum(count for _, _, count in segments) == 100
    assert [first for _, first, _ in segments] == [0] * len(segments)  # each run starts a batch
    assert len(segments) == accumulator.queue_sizes("t")[0] > 1
    assert records_of(accumulator, TopicPartition("t", 0)) == list(zip(keys, values, strict=True))
    # pooled memory: one batch_size per batch the run filled; its last batch, not full,
    # gives back what its records do not use
    pool = accumulator.buffer_pool
    held = pool.total_memory - pool.available_memory
    assert 1024 * (len(segments) - 1) < held < 1024 * len(segments)


def test_append_many_continues_the_last_batch_of_an_earlier_append() -> None:
    accumulator = accumulator_for(batch_size=4096)
    accumulator.append("t", 0, 1, b"first", VALUE)
    segments, wake = accumulator.append_many("t", 0, 1, [None, None], [b"a", b"b"])
    assert not wake  # one batch, not full: linger decides
    ((result, first, count),) = segments
    assert (result.partition, first, count) == (0, 1, 2)
    assert records_of(accumulator, TopicPartition("t", 0)) == [
        (b"first", VALUE),
        (None, b"a"),
        (None, b"b"),
    ]


def test_append_many_without_partition_is_sticky_per_batch() -> None:
    accumulator = accumulator_for(batch_size=1024)
    cluster = StaticCluster({"t": 4})
    segments, _ = accumulator.append_many(
        "t", None, 1, [None] * 200, [VALUE] * 200, cluster=cluster
    )
    assert sum(count for _, _, count in segments) == 200
    # a whole batch per partition before switching, not a record at a time
    assert all(count > 5 for _, _, count in segments[:-1])
    assert accumulator.sticky_partitioner("t") is not None


def test_append_many_blocks_then_fails_when_memory_is_used_up() -> None:
    accumulator = accumulator_for(batch_size=1024, buffer_memory=2048)
    with pytest.raises(BufferExhaustedError):
        accumulator.append_many("t", 0, 1, [None] * 100, [VALUE] * 100, max_time_to_block_ms=50)
    # the two batches that fitted stay queued; their memory is still held by them
    assert accumulator.queue_sizes("t")[0] == 2
    assert accumulator.buffer_pool.available_memory == 0


def test_append_many_with_headers() -> None:
    accumulator = accumulator_for()
    headers = [[("h", b"1")], None]
    accumulator.append_many("t", 1, 1, [b"a", b"b"], [b"x", None], headers)
    queue = accumulator._existing_queue(TopicPartition("t", 1))
    assert queue is not None
    (batch,) = queue.batches
    batch.close()
    (decoded,) = read_record_batches(batch.builder.build())
    assert [(r.key, r.value, r.headers) for r in decoded.records] == [
        (b"a", b"x", (("h", b"1"),)),
        (b"b", None, ()),
    ]


# --------------------------------------------------------------------------- grouping


def test_group_by_partition_keeps_input_order_and_puts_keyless_last() -> None:
    keys = [b"user-%d" % (i % 17) for i in range(200)]
    chosen = [partition_for_key(key, 6) for key in keys] + [-1, -1]
    groups = group_by_partition(chosen, 6)
    assert groups[-1] == (None, [200, 201])
    seen: list[int] = []
    for partition, positions in groups[:-1]:
        assert positions == sorted(positions)
        assert all(chosen[p] == partition for p in positions)
        seen += positions
    assert sorted(seen) == list(range(200))


# --------------------------------------------------------------------------- BatchSendResult


def test_batch_send_result_orders_metadata_by_input_and_reports_errors() -> None:
    ok = ProduceRequestResult("t", 0)
    bad = ProduceRequestResult("t", 1)
    keys = [b"a", None, b"ccc"]
    values: list[bytes | None] = [b"1", b"22", None]
    # positions 0 and 2 in partition 0 (deltas 5, 6), position 1 in partition 1
    result = BatchSendResult("t", 3, [(ok, 5, 2, [0, 2], 0), (bad, 0, 1, [1], 0)], keys, values, 7)
    assert not result.done()
    with pytest.raises(KafkaTimeoutError):
        result.get(timeout=0.01)
    ok.complete(SUCCEEDED, base_offset=100)
    assert not result.done()
    error = RuntimeError("broker said no")
    bad.complete(FAILED, error=error)
    assert result.done()
    assert result.exceptions(0) == {1: error}
    with pytest.raises(RuntimeError, match="broker said no"):
        result.get(0)
    futures = result.futures()
    assert futures[0].get(0).offset == 105
    assert futures[2].get(0)[2:] == (106, 7, 3, -1)  # offset, timestamp, key size, value size
    assert futures[1].exception(0) is error


def test_batch_send_result_consecutive_runs() -> None:
    first = ProduceRequestResult("t", 2)
    second = ProduceRequestResult("t", 2)
    result = BatchSendResult(
        "t", 3, [(first, 10, 2, None, 0), (second, 0, 1, None, 2)], [None] * 3, [b"x"] * 3, 1
    )
    first.complete(SUCCEEDED, base_offset=0)
    second.complete(SUCCEEDED, base_offset=50)
    assert [(m.partition, m.offset) for m in result.get(0)] == [(2, 10), (2, 11), (2, 50)]


# --------------------------------------------------------------------------- send_batch checks


def test_send_batch_names_the_index_of_a_bad_value_or_key(producer: Producer) -> None:
    with pytest.raises(TypeError, match=r"values\[2\] is of type str"):
        producer.send_batch("t", [b"a", None, "text"])
    with pytest.raises(TypeError, match=r"keys\[1\] is of type int"):
        producer.send_batch("t", [b"a", b"b"], keys=[b"k", 5])
    with pytest.raises(TypeError, match=r"headers\[1\]"):
        producer.send_batch("t", [b"a", b"b"], headers=[None, [("h", 1)]])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="got 1 keys for 2 values"):
        producer.send_batch("t", [b"a", b"b"], keys=[b"k"])
    with pytest.raises(TypeError, match="values must be a sequence"):
        producer.send_batch("t", b"abc")


def test_send_batch_names_a_record_too_large(producer: Producer) -> None:
    with pytest.raises(RecordTooLargeError, match="record 1"):
        producer.send_batch("t", [b"a", bytes(5000)])


def test_send_batch_applies_serializers_before_checking() -> None:
    with_nobody = Producer(
        bootstrap_servers=f"127.0.0.1:{closed_port()}",
        max_block_ms=100,
        value_serializer=lambda value: value.encode(),
    )
    try:
        # str values pass through the serializer: the check passes, then metadata times out
        with pytest.raises(KafkaTimeoutError):
            with_nobody.send_batch("t", ["a", "b"])
    finally:
        with_nobody.close(0)


# --------------------------------------------------------------------------- Arrow columns


def test_arrow_columns_binary_string_large_and_nulls() -> None:
    pa = pytest.importorskip("pyarrow")
    batch = pa.record_batch(
        [
            pa.array([b"k1", None], pa.large_binary()),
            pa.array(["é", None], pa.string()),
            pa.array(
                [[{"key": "h", "value": b"1"}], None],
                pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())])),
            ),
        ],
        names=["key", "value", "headers"],
    )
    keys, values, headers = arrow_columns(batch, "key", "value", "headers")
    assert keys == [b"k1", None]
    assert values == ["é".encode(), None]
    assert headers == [[("h", b"1")], None]
    sliced = pa.Table.from_batches([batch, batch.slice(1, 1)])
    assert arrow_columns(sliced, None, "value", None) == (None, [b"\xc3\xa9", None, None], None)


def test_send_arrow_without_pyarrow_names_the_extra(
    producer: Producer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kafkaline.producer.bulk.encoder import columnar_module

    def forget_what_was_found() -> None:
        # The producer remembers whether numpy and pyarrow are there (a cached lookup).
        columnar_module.cache_clear()

    forget_what_was_found()
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # as if it were not installed
    try:
        with pytest.raises(ModuleNotFoundError, match=r"needs pyarrow.*pip install '\.\[spark\]'"):
            producer.send_arrow("events", object())
    finally:
        monkeypatch.undo()
        forget_what_was_found()


def test_arrow_columns_name_the_bad_column() -> None:
    pa = pytest.importorskip("pyarrow")
    batch = pa.record_batch(
        [pa.array([1]), pa.array([b"v"]), pa.array([["x"]])], names=["key", "value", "h"]
    )
    with pytest.raises(TypeError, match=r"column 'key' has type int64"):
        arrow_columns(batch, "key", "value", None)
    with pytest.raises(ValueError, match=r"key column 'id' is not in the data"):
        arrow_columns(batch, "id", "value", None)
    with pytest.raises(TypeError, match=r"column 'h' has type list<item: string>"):
        arrow_columns(batch, None, "value", "h")
    with pytest.raises(TypeError, match="RecordBatch or Table, not list"):
        arrow_columns([b"v"], None, "value", None)


def test_arrow_partitions_and_timestamps_convert_units_and_keep_nulls() -> None:
    pa = pytest.importorskip("pyarrow")
    base_ms = 1_700_000_000_123
    rows = [base_ms, None, base_ms + 1]
    micros = [None if t is None else t * 1000 + 999 for t in rows]  # rounds down to ms
    batch = pa.record_batch(
        [
            pa.array([2, None, 0], pa.int32()),
            pa.array([None if t is None else t // 1000 for t in rows], pa.timestamp("s")),
            pa.array(rows, pa.timestamp("ms")),
            pa.array(micros, pa.timestamp("us", tz="UTC")),
            pa.array([None if t is None else t * 1_000_000 for t in rows], pa.timestamp("ns")),
            pa.array(rows, pa.int64()),
        ],
        names=["p", "s", "ms", "us", "ns", "int"],
    )
    partitions, timestamps = arrow_partitions_and_timestamps(batch, "p", "ms")
    assert partitions == [2, None, 0]
    assert timestamps == rows
    for name in ("ms", "us", "ns", "int"):
        assert arrow_partitions_and_timestamps(batch, None, name) == (None, rows), name
    seconds = [base_ms // 1000 * 1000, None, (base_ms + 1) // 1000 * 1000]
    assert arrow_partitions_and_timestamps(batch, None, "s") == (None, seconds)
    table = pa.Table.from_batches([batch, batch.slice(2, 1)])
    assert arrow_partitions_and_timestamps(table, "p", "int") == ([2, None, 0, 0], [*rows, rows[2]])
    assert arrow_partitions_and_timestamps(table, None, None) == (None, None)


def test_arrow_partitions_and_timestamps_name_the_bad_column() -> None:
    pa = pytest.importorskip("pyarrow")
    batch = pa.record_batch(
        [
            pa.array([1.0]),
            pa.array(["2024-01-01"]),
            pa.array([-5], pa.timestamp("ms")),
            pa.array([1], pa.int32()),
        ],
        names=["f", "text", "early", "i32"],
    )
    with pytest.raises(TypeError, match=r"column 'f' has type double: the partition column"):
        arrow_partitions_and_timestamps(batch, "f", None)
    with pytest.raises(TypeError, match=r"column 'text' has type string: the timestamp column"):
        arrow_partitions_and_timestamps(batch, None, "text")
    with pytest.raises(TypeError, match=r"column 'i32' has type int32: the timestamp column"):
        arrow_partitions_and_timestamps(batch, None, "i32")
    with pytest.raises(ValueError, match=r"partition column 'part' is not in the data"):
        arrow_partitions_and_timestamps(batch, "part", None)
    with pytest.raises(ValueError, match=r"timestamp column 'ts' is not in the data"):
        arrow_partitions_and_timestamps(batch, None, "ts")
    with pytest.raises(InvalidRecordTimestampError, match=r"row 0 of column 'early'.* -5 ms"):
        arrow_partitions_and_timestamps(batch, None, "early")


def test_send_arrow_checks_partitions_against_the_topic(monkeypatch: pytest.MonkeyPatch) -> None:
    pa = pytest.importorskip("pyarrow")
    with_nobody = Producer(bootstrap_servers=f"127.0.0.1:{closed_port()}")
    # as if the metadata said the topic has 3 partitions
    monkeypatch.setattr(with_nobody._topics, "wait", lambda topic: (3, 1000.0))
    try:
        batch = pa.record_batch(
            [pa.array([b"v0", b"v1"]), pa.array([1, 3], pa.int64())], names=["value", "part"]
        )
        with pytest.raises(
            InvalidPartitionError,
            match=r"partition 3 given by row 1 of column 'part' is not a partition of topic 't'",
        ):
            with_nobody.send_arrow("t", batch, key=None, partition="part")
        assert with_nobody._accumulator.queue_sizes("t") == {}  # nothing queued
    finally:
        with_nobody.close(0)


def test_bulk_docstring_examples() -> None:
    import kafkaline.producer.bulk.lists

    results = doctest.testmod(kafkaline.producer.bulk.lists, optionflags=doctest.ELLIPSIS)
    assert results.failed == 0 and results.attempted > 0


def test_bulk_key_partitions_match_send_and_remember_only_short_keys() -> None:
    with_nobody = Producer(bootstrap_servers=f"127.0.0.1:{closed_port()}")
    long_key = b"x" * 200
    keys: list[bytes | None] = [b"a", None, long_key, b"a", b"b"]
    expected = [partition_for_key(b"a", 7), -1, partition_for_key(long_key, 7)]
    expected += [partition_for_key(b"a", 7), partition_for_key(b"b", 7)]
    assert with_nobody._bulk.records.key_partitions(keys, 7) == expected
    assert with_nobody._bulk.records.key_partitions(keys, 7) == expected  # from the memo
    assert set(with_nobody._bulk.records._partition_memo[7]) == {b"a", b"b"}
    assert with_nobody._bulk.records.key_partitions([b"a"], 3) == [partition_for_key(b"a", 3)]
    # Every key known (one pass over the memo), then known keys with a new one and a None.
    known: list[bytes | None] = [b"b", b"a", b"b"]
    assert with_nobody._bulk.records.key_partitions(known, 7) == [
        expected[4],
        expected[0],
        expected[4],
    ]
    mixed: list[bytes | None] = [b"b", b"c", None, b"a"]
    assert with_nobody._bulk.records.key_partitions(mixed, 7) == [
        expected[4],
        partition_for_key(b"c", 7),
        -1,
        expected[0],
    ]
    with_nobody.close()


@pytest.mark.parametrize(
    ("items", "found"),
    [
        ([], 0),
        ([b"abc"] * 40, 3),
        ([b"abc"] * 20 + [b"abcd"], 4),
        ([b"abc"] * 20 + [None], 3),
        ([None, b"ab", b""], 2),
        ([None], 0),
    ],
)
def test_longest(items: list[bytes | None], found: int) -> None:
    assert longest(items) == found


def test_as_bytes_column_keeps_bytes_and_none_and_copies_other_buffers() -> None:
    only_bytes = [b"a", b"bc"]
    assert as_bytes_column(only_bytes, "values") is only_bytes
    assert as_bytes_column((b"a", None), "values") == [b"a", None]
    converted = as_bytes_column([b"a", bytearray(b"b"), memoryview(b"c")], "keys")
    assert converted == [b"a", b"b", b"c"]
    assert all(type(item) is bytes for item in converted)
    with pytest.raises(TypeError, match=r"keys\[1\] is of type str"):
        as_bytes_column([b"a", "b"], "keys")


def test_append_many_of_nothing_queues_nothing() -> None:
    accumulator = accumulator_for()
    assert accumulator.append_many("t", 0, 1, [], []) == ([], False)
    assert accumulator.queue_sizes("t") == {}


def test_append_many_wakes_the_sender_whenever_a_batch_becomes_sendable() -> None:
    accumulator = accumulator_for(batch_size=1024)
    wakeups: list[int] = []

    def wakeup() -> None:
        wakeups.append(accumulator.queue_sizes("t")[0])

    accumulator.append_many("t", 0, 1, [None] * 50, [VALUE] * 50, wakeup=wakeup)
    batches = accumulator.queue_sizes("t")[0]
    assert batches > 2
    # once per batch made behind another, each time with that batch already queued
    assert wakeups == list(range(2, batches + 1))


def keyed_arrow_batch(pa: Any, count: int) -> Any:
    return pa.record_batch(
        [pa.array([b"k%d" % i for i in range(count)]), pa.array([VALUE] * count)],
        names=["key", "value"],
    )


@pytest.mark.parametrize(
    ("setting", "encoder"), [("auto", "columnar"), ("columnar", "columnar"), ("records", "records")]
)
def test_send_arrow_encodes_as_the_bulk_encoder_setting_says(
    monkeypatch: pytest.MonkeyPatch, setting: str, encoder: str
) -> None:
    pytest.importorskip("numpy")
    pa = pytest.importorskip("pyarrow")
    with_nobody = Producer(bootstrap_servers=f"127.0.0.1:{closed_port()}", bulk_encoder=setting)
    # as if the metadata said the topic has 3 partitions
    monkeypatch.setattr(with_nobody._topics, "wait", lambda topic: (3, 1000.0))
    try:
        result = with_nobody.send_arrow("t", keyed_arrow_batch(pa, 300))
        assert result.encoder == encoder
        assert len(result) == 300
        queued = with_nobody._accumulator.queue_sizes("t")
        assert set(queued) == {partition_for_key(b"k%d" % i, 3) for i in range(300)}
    finally:
        with_nobody.close(0)


@pytest.mark.parametrize("setting", ["auto", "columnar", "records"])
@pytest.mark.parametrize(
    ("values", "keys", "headers"),
    [
        ([VALUE] * 300, [b"k%03d" % i for i in range(300)], None),  # one shape
        ([b"v" * (i % 7) for i in range(300)], None, None),  # sizes differ
        ([VALUE] * 300, None, [[("h", b"x")]] * 300),  # headers
    ],
)
def test_send_batch_over_lists_takes_the_records_encoder_whatever_the_shape(
    monkeypatch: pytest.MonkeyPatch,
    setting: str,
    values: list[bytes],
    keys: list[bytes] | None,
    headers: list[list[tuple[str, bytes]]] | None,
) -> None:
    with_nobody = Producer(
        bootstrap_servers=f"127.0.0.1:{closed_port()}", bulk_encoder=setting, linger_ms=60_000
    )
    monkeypatch.setattr(with_nobody._topics, "wait", lambda topic: (3, 1000.0))
    try:
        result = with_nobody.send_batch("t", values, keys=keys, headers=headers, partition=1)
        assert result.encoder == "records"
        assert set(with_nobody._accumulator.queue_sizes("t")) == {1}  # all queued there
    finally:
        with_nobody.close(0)


def test_bulk_calls_with_interceptors_go_record_by_record(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[bytes | None] = []

    class Seeing:
        def on_send(self, record: ProducerRecord[Any, Any]) -> ProducerRecord[Any, Any]:
            seen.append(record.value)
            return record

        def on_acknowledgement(self, metadata: object, error: Exception | None) -> None:
            pass

        def close(self) -> None:
            pass

    with_nobody = Producer(bootstrap_servers=f"127.0.0.1:{closed_port()}", interceptors=[Seeing()])
    monkeypatch.setattr(with_nobody._topics, "wait", lambda topic: (3, 1000.0))
    try:
        result = with_nobody.send_batch("t", [b"a", b"b"], partition=0)
        assert result.encoder == "per-record" and seen == [b"a", b"b"]
    finally:
        with_nobody.close(0)


class SeeingInterceptor:
    def on_send(self, record: ProducerRecord[Any, Any]) -> ProducerRecord[Any, Any]:
        return record

    def on_acknowledgement(self, metadata: object, error: Exception | None) -> None:
        pass

    def close(self) -> None:
        pass


class LastPartition:
    def partition(self, topic: str, key: bytes | None, value: bytes | None, cluster: object) -> int:
        return 2

    def close(self) -> None:
        pass


@pytest.mark.parametrize(
    ("changes", "named"),
    [
        ({"partitioner": LastPartition()}, r"a custom partitioner \(partitioner=\.\.\.\)"),
        ({"interceptors": [SeeingInterceptor()]}, r"interceptors \(interceptors=\.\.\.\)"),
        (
            {"partitioner": LastPartition(), "interceptors": [SeeingInterceptor()]},
            r"partitioner=\.\.\.\) and interceptors",
        ),
    ],
)
def test_columnar_bulk_encoder_with_what_it_cannot_honour_is_a_config_error(
    changes: dict[str, Any], named: str
) -> None:
    # Asked for explicitly, "columnar" is not swapped for another encoder at the call.
    conflict = rf"bulk_encoder='columnar' cannot be used with .*{named}"
    with pytest.raises(ConfigError, match=conflict):
        Producer(bootstrap_servers="127.0.0.1:1", bulk_encoder="columnar", **changes)
    with pytest.raises(ConfigError, match=r"bulk_encoder='columnar' cannot be used with"):
        config = ProducerConfig.from_kwargs(bootstrap_servers="h:1", **changes)
        config.with_changes(bulk_encoder="columnar")


def test_auto_bulk_encoder_with_a_custom_partitioner_takes_records(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("numpy")
    pa = pytest.importorskip("pyarrow")
    with_nobody = Producer(
        bootstrap_servers=f"127.0.0.1:{closed_port()}", partitioner=LastPartition()
    )
    monkeypatch.setattr(with_nobody._topics, "wait", lambda topic: (3, 1000.0))
    try:
        result = with_nobody.send_arrow("t", keyed_arrow_batch(pa, 30))
        assert result.encoder == "records"
        assert with_nobody._accumulator.queue_sizes("t") == {2: 1}
    finally:
        with_nobody.close(0)


def test_columnar_bulk_encoder_without_numpy_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pa = pytest.importorskip("pyarrow")
    from kafkaline.producer.bulk.encoder import columnar_module

    with_nobody = Producer(bootstrap_servers=f"127.0.0.1:{closed_port()}", bulk_encoder="columnar")
    monkeypatch.setattr(with_nobody._topics, "wait", lambda topic: (3, 1000.0))
    columnar_module.cache_clear()
    monkeypatch.setitem(sys.modules, "numpy", None)  # as if it were not installed
    try:
        with pytest.raises(ModuleNotFoundError, match=r"bulk_encoder='columnar' needs numpy"):
            with_nobody.send_arrow("t", keyed_arrow_batch(pa, 3))
        assert with_nobody._accumulator.queue_sizes("t") == {}
    finally:
        monkeypatch.undo()
        columnar_module.cache_clear()
        with_nobody.close(0)


# --------------------------------------------------------------------------- lists taken whole


HeaderList = list[tuple[str, bytes | None]]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    records=st.lists(
        st.tuples(
            st.binary(max_size=12),
            st.none() | st.binary(max_size=700),
            st.none()
            | st.lists(
                st.tuples(st.text(max_size=5), st.none() | st.binary(max_size=10)), max_size=2
            ),
        ),
        max_size=60,
    ),
    partitions=st.integers(1, 7),
    as_tuple=st.booleans(),
    with_headers=st.booleans(),
)
def test_send_batch_queues_the_reference_bytes_where_send_would(
    records: list[tuple[bytes, bytes | None, HeaderList | None]],
    partitions: int,
    as_tuple: bool,
    with_headers: bool,
) -> None:
    """Lists the core takes whole (and a tuple, which the Python checks take) give, per
    partition murmur2 chooses, the batches the pure-Python builder makes of the records."""
    with_nobody = Producer(
        bootstrap_servers=f"127.0.0.1:{closed_port()}", linger_ms=60_000, batch_size=1024
    )
    with_nobody._topics.wait = lambda topic: (partitions, 1000.0)  # type: ignore[method-assign]
    if not with_headers:
        records = [(k, v, None) for k, v, _ in records]
    try:
        keys: list[bytes | None] = [k for k, _, _ in records]
        values = [v for _, v, _ in records]
        headers = [h for _, _, h in records] if with_headers else None
        result = with_nobody.send_batch(
            "t", tuple(values) if as_tuple else values, keys=keys, headers=headers
        )
        timestamps = {f.timestamp for f in result.futures()}
        assert len(timestamps) <= 1
        for partition in range(partitions):
            mine = [r for r in records if partition_for_key(r[0], partitions) == partition]
            expected: list[bytes] = []
            while mine:
                builder = PythonBuilder(1024)
                taken = builder.append_many(
                    [r[0] for r in mine],
                    [r[1] for r in mine],
                    next(iter(timestamps)),
                    [r[2] for r in mine],
                )
                expected.append(bytes(builder.build()))
                mine = mine[taken:]
            queue = with_nobody._accumulator._existing_queue(TopicPartition("t", partition))
            got = []
            for batch in [] if queue is None else queue.batches:
                batch.close()
                got.append(bytes(batch.builder.build()))
            assert got == expected
    finally:
        with_nobody.close(0)


def test_send_batch_over_plain_lists_names_the_bad_index_as_before(producer: Producer) -> None:
    """Lists the core does not take whole (not bytes, too large) go to the Python checks,
    which name the record."""
    with pytest.raises(TypeError, match=r"values\[2\] is of type int"):
        producer.send_batch("t", [b"a", bytearray(b"b"), 3])
    with pytest.raises(RecordTooLargeError, match="record 2"):
        producer.send_batch("t", [b"a", b"b", b"c"], keys=[b"k", b"k", bytes(5000)])
