"""send_batch() and send_arrow() against the real broker: records read back bit-exact by
confluent-kafka, keyed records in the partitions send() chooses, headers, null values, keyless
records spread over batches, and the errors that name a column or index."""

from __future__ import annotations

import itertools
import os
import threading
import time
import uuid
from collections.abc import Callable

import pytest
from confluent_kafka import TIMESTAMP_CREATE_TIME, Consumer
from confluent_kafka import TopicPartition as ConfluentTopicPartition

from kafkaline import Producer, RecordMetadata
from kafkaline.errors import InvalidPartitionError
from kafkaline.producer.partitioner import partition_for_key
from kafkaline.testing import LocalBroker

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

TopicFactory = Callable[..., str]
Header = tuple[str, bytes | None]
#: (partition, offset) -> (key, value, headers)
Stored = dict[tuple[int, int], tuple[bytes | None, bytes | None, tuple[Header, ...]]]
StoredTimed = dict[tuple[int, int], tuple[bytes | None, bytes | None, tuple[Header, ...], int]]


def read_back(broker: LocalBroker, topic: str, partitions: int, count: int) -> Stored:
    return {
        place: record[:3]
        for place, record in read_back_timed(broker, topic, partitions, count).items()
    }


def read_back_timed(broker: LocalBroker, topic: str, partitions: int, count: int) -> StoredTimed:
    """As read_back, with each record's (create-time) timestamp last."""
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": f"check-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 50,
        }
    )
    stored: StoredTimed = {}
    try:
        consumer.assign([ConfluentTopicPartition(topic, p, 0) for p in range(partitions)])
        for _ in range(300):
            if len(stored) >= count:
                break
            for message in consumer.consume(num_messages=count, timeout=0.2):
                assert message.error() is None, message.error()
                partition, offset = message.partition(), message.offset()
                assert partition is not None and offset is not None
                headers = tuple(as_header(item) for item in message.headers() or [])
                timestamp_type, timestamp = message.timestamp()
                assert timestamp_type == TIMESTAMP_CREATE_TIME
                stored[(partition, offset)] = (message.key(), message.value(), headers, timestamp)
    finally:
        consumer.close()
    return stored


def as_header(item: object) -> Header:
    assert isinstance(item, tuple) and len(item) == 2
    name, value = item
    assert isinstance(name, str) and (value is None or isinstance(value, bytes))
    return name, value


@pytest.fixture(params=["records"])
def send_batch_path(request: pytest.FixtureRequest) -> str:
    """send_batch() over Python lists: one path, the records encoder (the compiled core's
    loop, or the record builder in the pure-Python build)."""
    path: str = request.param
    return path


def producer_for(broker: LocalBroker, **settings: object) -> Producer:
    defaults: dict[str, object] = {"linger_ms": 5, "max_block_ms": 5000}
    return Producer(bootstrap_servers=broker.bootstrap_servers, **{**defaults, **settings})


def test_send_batch_keyed_reads_back_bit_exact_in_send_partitions(
    broker: LocalBroker, make_topic: TopicFactory, send_batch_path: str
) -> None:
    topic = make_topic(6)
    count = 5000
    keys = [b"key-%d" % (i % 300) for i in range(count)]
    values = [os.urandom(i % 200) for i in range(count)]
    with producer_for(broker, batch_size=4096) as producer:  # many batches per partition
        result = producer.send_batch(topic, values, keys=keys)
        metadata = result.get(timeout=30)
        assert result.done() and result.exceptions() == {}
    assert len(metadata) == count
    stored = read_back(broker, topic, 6, count)
    assert len(stored) == count
    last_offset: dict[int, int] = {}
    for index, meta in enumerate(metadata):
        assert meta.topic == topic
        assert meta.partition == partition_for_key(keys[index], 6)  # where send() puts it
        assert stored[(meta.partition, meta.offset)] == (keys[index], values[index], ())
        assert meta.serialized_key_size == len(keys[index])
        assert meta.serialized_value_size == len(values[index])
        # input order is kept within a partition
        assert meta.offset > last_offset.get(meta.partition, -1)
        last_offset[meta.partition] = meta.offset


def test_send_batch_keyless_is_sticky_and_complete(
    broker: LocalBroker, make_topic: TopicFactory, send_batch_path: str
) -> None:
    topic = make_topic(3)
    count = 3000
    values = [b"v%05d" % i + bytes(90) for i in range(count)]
    with producer_for(broker, batch_size=16384) as producer:
        metadata = producer.send_batch(topic, values).get(timeout=30)
    stored = read_back(broker, topic, 3, count)
    assert sorted(v or b"" for _, v, _ in stored.values()) == sorted(values)
    for index, meta in enumerate(metadata):
        assert stored[(meta.partition, meta.offset)] == (None, values[index], ())
    # sticky: whole batches' worth go to one partition at a time, not record by record
    switches = sum(1 for a, b in itertools.pairwise(metadata) if a.partition != b.partition)
    assert switches < count // 50


def test_send_batch_headers_nulls_and_partition(
    broker: LocalBroker, make_topic: TopicFactory, send_batch_path: str
) -> None:
    topic = make_topic(3)
    values: list[bytes | None] = [b"a", None, b"c", b""]
    keys: list[bytes | None] = [b"k1", b"k2", None, b"k4"]
    headers: list[list[Header] | None] = [[("h", b"1"), ("n", None)], None, [], [("x", b"")]]
    with producer_for(broker) as producer:
        metadata = producer.send_batch(topic, values, keys=keys, headers=headers, partition=2)
        result = metadata.get(timeout=10)
        assert producer.send_batch(topic, []).get(timeout=1) == []
        assert producer.send_batch(topic, [], keys=[]).get(timeout=1) == []
    assert {meta.partition for meta in result} == {2}
    stored = read_back(broker, topic, 3, 4)
    assert [stored[(2, meta.offset)] for meta in result] == [
        (b"k1", b"a", (("h", b"1"), ("n", None))),
        (b"k2", None, ()),
        (None, b"c", ()),
        (b"k4", b"", (("x", b""),)),
    ]
    assert result[1].serialized_value_size == -1


def test_send_batch_of_one_shape_over_many_calls_reads_back_bit_exact(
    broker: LocalBroker, make_topic: TopicFactory, send_batch_path: str
) -> None:
    """Records of one size (the list path's encoder without a loop) over several calls,
    each continuing the batches the one before left open, with a later timestamp."""
    topic = make_topic(6)
    calls, per_call = 4, 1500
    keys = [b"key-%06d" % (i % 700) for i in range(calls * per_call)]
    values = [os.urandom(100) for _ in range(calls * per_call)]
    metadata: list[RecordMetadata] = []
    with producer_for(broker, batch_size=16384, linger_ms=200) as producer:
        results = []
        for call in range(calls):
            chunk = slice(call * per_call, (call + 1) * per_call)
            results.append(producer.send_batch(topic, values[chunk], keys=keys[chunk]))
            time.sleep(0.003)  # a new millisecond: the open batches' base timestamp is older
        for result in results:
            metadata += result.get(timeout=30)
    stored = read_back_timed(broker, topic, 6, len(values))
    assert len(stored) == len(values)
    for index, meta in enumerate(metadata):
        assert meta.partition == partition_for_key(keys[index], 6)
        key, value, headers, timestamp = stored[(meta.partition, meta.offset)]
        assert (key, value, headers) == (keys[index], values[index], ())
        assert timestamp == meta.timestamp
    assert len({meta.timestamp for meta in metadata}) >= 2


def test_send_batch_records_larger_than_a_batch_and_mixed_null_keys(
    broker: LocalBroker, make_topic: TopicFactory, send_batch_path: str
) -> None:
    topic = make_topic(3)
    values: list[bytes | None] = [os.urandom(size) for size in (30_000, 10, 70_000, 5, 40_000)]
    values += [None, b"", os.urandom(3000)]
    keys: list[bytes | None] = [b"a", None, b"b", None, b"a", b"c", None, b"c"]
    with producer_for(broker, batch_size=16384) as producer:  # some records exceed a batch
        metadata = producer.send_batch(topic, values, keys=keys).get(timeout=30)
    stored = read_back(broker, topic, 3, len(values))
    for index, meta in enumerate(metadata):
        key = keys[index]
        if key is not None:
            assert meta.partition == partition_for_key(key, 3)
        assert stored[(meta.partition, meta.offset)] == (key, values[index], ())


def test_send_batch_lists_taken_whole_and_checked_in_python_read_back_alike(
    broker: LocalBroker, make_topic: TopicFactory, send_batch_path: str
) -> None:
    """The same records as lists (checked, grouped and appended by the compiled core where
    it is built) and as tuples (the Python checks): the partitions send() chooses for keyed
    records, and every record bit-exact at the offset its metadata names."""
    topic = make_topic(5)
    count = 3000
    keys: list[bytes | None] = [None if i % 7 == 0 else b"key-%d" % (i % 211) for i in range(count)]
    values: list[bytes | None] = [
        None if i % 11 == 0 else os.urandom(i % 300) for i in range(count)
    ]
    with producer_for(broker, batch_size=8192) as producer:
        as_lists = producer.send_batch(topic, values, keys=keys).get(timeout=30)
        as_tuples = producer.send_batch(topic, tuple(values), keys=tuple(keys)).get(timeout=30)
    stored = read_back(broker, topic, 5, 2 * count)
    assert len(stored) == 2 * count
    for metadata in (as_lists, as_tuples):
        for index, meta in enumerate(metadata):
            key = keys[index]
            if key is not None:
                assert meta.partition == partition_for_key(key, 5)
            assert stored[(meta.partition, meta.offset)] == (key, values[index], ())


def test_send_batch_larger_than_a_slice_keeps_positions_and_order(
    broker: LocalBroker, make_topic: TopicFactory, send_batch_path: str
) -> None:
    """A call over lists is encoded and queued in slices (of records, and of value bytes):
    metadata still follows input positions, in order within each partition."""
    topic = make_topic(3)
    shaped_keys = [b"k%05d" % (i % 1000) for i in range(70_000)]  # 65,536 records a slice
    shaped_values = [b"%08d" % i for i in range(70_000)]
    big_values = [os.urandom(290_000 + 20_000 * (i % 2)) for i in range(60)]  # ~18 MB
    big_keys = [b"big-%d" % (i % 7) for i in range(60)]
    with producer_for(broker, buffer_memory=64 << 20) as producer:
        shaped = producer.send_batch(topic, shaped_values, keys=shaped_keys).get(timeout=60)
        big = producer.send_batch(topic, big_values, keys=big_keys).get(timeout=60)
    stored = read_back(broker, topic, 3, 70_060)
    for keys, values, metadata in (
        (shaped_keys, shaped_values, shaped),
        (big_keys, big_values, big),
    ):
        last: dict[int, int] = {}
        for index, meta in enumerate(metadata):
            assert meta.partition == partition_for_key(keys[index], 3)
            assert stored[(meta.partition, meta.offset)] == (keys[index], values[index], ())
            assert meta.offset > last.get(meta.partition, -1)
            last[meta.partition] = meta.offset


def test_send_arrow_table_reads_back_with_nulls_and_headers(
    broker: LocalBroker, make_topic: TopicFactory
) -> None:
    pa = pytest.importorskip("pyarrow")
    topic = make_topic(4)
    keys = [b"k%d" % (i % 50) for i in range(2000)]
    values: list[bytes | None] = [None if i % 7 == 0 else os.urandom(50) for i in range(2000)]
    header_type = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
    headers = [[{"key": "i", "value": b"%d" % i}] if i % 3 == 0 else None for i in range(2000)]
    first = pa.record_batch(
        [
            pa.array(keys[:1000], pa.binary()),
            pa.array(values[:1000], pa.large_binary()),
            pa.array(headers[:1000], header_type),
        ],
        names=["key", "value", "hdrs"],
    )
    second = pa.record_batch(
        [
            pa.array(keys[1000:], pa.binary()),
            pa.array(values[1000:], pa.large_binary()),
            pa.array(headers[1000:], header_type),
        ],
        names=["key", "value", "hdrs"],
    )
    table = pa.Table.from_batches([first, second])
    with producer_for(broker) as producer:
        metadata = producer.send_arrow(topic, table, headers="hdrs").get(timeout=30)
    stored = read_back(broker, topic, 4, 2000)
    assert len(stored) == 2000
    for index, meta in enumerate(metadata):
        assert meta.partition == partition_for_key(keys[index], 4)
        expected_headers = (("i", b"%d" % index),) if index % 3 == 0 else ()
        assert stored[(meta.partition, meta.offset)] == (
            keys[index],
            values[index],
            expected_headers,
        )


@pytest.mark.parametrize("compression", ["lz4", "zstd", "gzip", "snappy"])
def test_send_arrow_compressed_reads_back(
    broker: LocalBroker, make_topic: TopicFactory, compression: str
) -> None:
    pa = pytest.importorskip("pyarrow")
    topic = make_topic(3)
    keys = [b"k%d" % (i % 37) for i in range(3000)]
    values = [b"value %d " % i * (i % 5) for i in range(3000)]
    batch = pa.record_batch([pa.array(keys), pa.array(values)], names=["key", "value"])
    with producer_for(broker, compression_type=compression, batch_size=8192) as producer:
        metadata = producer.send_arrow(topic, batch).get(timeout=30)
    stored = read_back(broker, topic, 3, 3000)
    assert [stored[(m.partition, m.offset)][:2] for m in metadata] == list(
        zip(keys, values, strict=True)
    )


def test_send_arrow_string_columns_are_utf8_bytes(
    broker: LocalBroker, make_topic: TopicFactory
) -> None:
    pa = pytest.importorskip("pyarrow")
    topic = make_topic(1)
    batch = pa.record_batch(
        [pa.array(["clé", "k2"], pa.string()), pa.array(["välue", None], pa.large_string())],
        names=["k", "v"],
    )
    with producer_for(broker) as producer:
        producer.send_arrow(topic, batch, key="k", value="v").get(timeout=10)
    stored = read_back(broker, topic, 1, 2)
    assert sorted(stored.values(), key=repr) == sorted(
        [("clé".encode(), "välue".encode(), ()), (b"k2", None, ())], key=repr
    )


def test_send_arrow_wrong_column_type_names_the_column(broker: LocalBroker, topic: str) -> None:
    pa = pytest.importorskip("pyarrow")
    batch = pa.record_batch([pa.array([1, 2]), pa.array([b"a", b"b"])], names=["key", "value"])
    with producer_for(broker) as producer:
        with pytest.raises(TypeError, match=r"column 'key' has type int64"):
            producer.send_arrow(topic, batch)
        with pytest.raises(ValueError, match=r"value column 'payload' is not in the data"):
            producer.send_arrow(topic, batch, value="payload")
        empty = producer.send_arrow(topic, batch.slice(0, 0), key=None, value="value")
        assert len(empty) == 0 and empty.get(timeout=1) == [] and empty.done()


@pytest.mark.parametrize("encoder", ["columnar", "records"])
def test_send_arrow_partition_and_timestamp_columns_read_back_bit_exact(
    broker: LocalBroker, make_topic: TopicFactory, encoder: str
) -> None:
    pa = pytest.importorskip("pyarrow")
    if encoder == "columnar":
        pytest.importorskip("numpy")
    topic = make_topic(4)
    count = 3000
    keys: list[bytes | None] = [None if i % 11 == 0 else b"key-%d" % (i % 97) for i in range(count)]
    values = [os.urandom(i % 120) for i in range(count)]
    # every third row names its partition, the others leave it to the partitioner
    partitions = [i % 4 if i % 3 == 0 else None for i in range(count)]
    base_us = 1_700_000_000_000_000
    # microseconds (Spark's unit) out of order and with nulls: sent as ms, rounded down
    micros = [
        None if i % 5 == 0 else base_us + ((i * 7919) % 100_000) * 1000 + 999 for i in range(count)
    ]
    header_type = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
    headers = [[{"key": "row", "value": b"%d" % i}] if i % 2 else None for i in range(count)]
    table = pa.Table.from_batches(
        [
            pa.record_batch(
                [
                    pa.array(keys[start : start + 1000], pa.binary()),
                    pa.array(values[start : start + 1000], pa.binary()),
                    pa.array(partitions[start : start + 1000], pa.int32()),
                    pa.array(micros[start : start + 1000], pa.timestamp("us", tz="UTC")),
                    pa.array(headers[start : start + 1000], header_type),
                ],
                names=["key", "value", "partition", "timestamp", "headers"],
            )
            for start in range(0, count, 1000)
        ]
    )
    before_ms = time.time_ns() // 1_000_000
    with producer_for(broker, batch_size=8192, bulk_encoder=encoder) as producer:
        result = producer.send_arrow(
            topic, table, headers="headers", partition="partition", timestamp="timestamp"
        )
        assert result.encoder == encoder
        metadata = result.get(timeout=30)
        futures = result.futures()
    after_ms = time.time_ns() // 1_000_000
    stored = read_back_timed(broker, topic, 4, count)
    assert len(stored) == count
    for index, meta in enumerate(metadata):
        key = keys[index]
        if partitions[index] is not None:
            assert meta.partition == partitions[index]
        elif key is not None:
            assert meta.partition == partition_for_key(key, 4)
        expected_headers = (("row", b"%d" % index),) if index % 2 else ()
        stored_key, stored_value, stored_headers, stored_ts = stored[(meta.partition, meta.offset)]
        assert (stored_key, stored_value, stored_headers) == (key, values[index], expected_headers)
        given = micros[index]
        if given is None:
            assert before_ms <= stored_ts <= after_ms
        else:
            assert stored_ts == given // 1000
        assert meta.timestamp == stored_ts
        assert futures[index].get(0).timestamp == stored_ts


def test_send_arrow_partition_column_all_given_and_int64_timestamps(
    broker: LocalBroker, make_topic: TopicFactory
) -> None:
    pa = pytest.importorskip("pyarrow")
    topic = make_topic(3)
    batch = pa.record_batch(
        [
            pa.array([b"a", b"b", b"c", b"d"]),
            pa.array([2, 0, 2, 1], pa.int64()),
            pa.array([5, 1_600_000_000_000, 3, 0], pa.int64()),
        ],
        names=["value", "p", "t"],
    )
    with producer_for(broker) as producer:
        metadata = producer.send_arrow(topic, batch, key=None, partition="p", timestamp="t").get(
            timeout=10
        )
        with pytest.raises(InvalidPartitionError, match=r"row 1 of column 'p'"):
            producer.send_arrow(
                topic,
                pa.record_batch([pa.array([b"x", b"y"]), pa.array([0, 3])], names=["value", "p"]),
                key=None,
                partition="p",
            )
        with pytest.raises(TypeError, match=r"column 'p' has type int64: send_arrow\(\) needs"):
            producer.send_arrow(topic, batch, key=None, value="p", partition="p")
        with pytest.raises(TypeError, match=r"column 'value' has type binary: the partition"):
            producer.send_arrow(topic, batch, key=None, partition="value")
    assert [m.partition for m in metadata] == [2, 0, 2, 1]
    stored = read_back_timed(broker, topic, 3, 4)
    assert len(stored) == 4
    assert [stored[(m.partition, m.offset)][1:] for m in metadata] == [
        (b"a", (), 5),
        (b"b", (), 1_600_000_000_000),
        (b"c", (), 3),
        (b"d", (), 0),
    ]


def test_send_batch_larger_than_buffer_memory_wakes_the_sender(
    broker: LocalBroker, make_topic: TopicFactory, send_batch_path: str
) -> None:
    topic = make_topic(6)
    values = [os.urandom(10_000) for _ in range(1000)]  # 10 MB through 2 MiB of buffer memory
    keys = [b"k%d" % (i % 100) for i in range(1000)]
    with producer_for(
        broker, batch_size=65536, buffer_memory=2 << 20, max_block_ms=5000, linger_ms=5
    ) as producer:
        producer.partitions_for(topic)
        time.sleep(0.5)  # the Sender goes idle: nothing queued, it polls without a deadline
        # Without waking the Sender as batches fill, this call waited out max_block_ms and
        # raised BufferExhaustedError (measured with 32 MiB and 100 MB in one call).
        metadata = producer.send_batch(topic, values, keys=keys).get(timeout=30)
    stored = read_back(broker, topic, 6, 1000)
    assert [stored[(m.partition, m.offset)][1] for m in metadata] == values


def test_send_arrow_larger_than_buffer_memory_wakes_the_sender(
    broker: LocalBroker, make_topic: TopicFactory
) -> None:
    pa = pytest.importorskip("pyarrow")
    topic = make_topic(6)
    values = [os.urandom(10_000) for _ in range(1000)]  # 10 MB through 2 MiB of buffer memory
    keys = [b"k%d" % (i % 100) for i in range(1000)]
    batch = pa.record_batch([pa.array(keys), pa.array(values)], names=["key", "value"])
    with producer_for(
        broker, batch_size=65536, buffer_memory=2 << 20, max_block_ms=5000, linger_ms=5
    ) as producer:
        producer.partitions_for(topic)
        time.sleep(0.5)  # the Sender goes idle: nothing queued, it polls without a deadline
        metadata = producer.send_arrow(topic, batch).get(timeout=30)
    stored = read_back(broker, topic, 6, 1000)
    assert [stored[(m.partition, m.offset)][1] for m in metadata] == values


def expected_counts(metadata: list[RecordMetadata]) -> dict[int, tuple[int, int, int]]:
    """{partition: (records, lowest offset, highest offset)} worked out from every record."""
    counts: dict[int, tuple[int, int, int]] = {}
    for partition in {m.partition for m in metadata}:
        offsets = [m.offset for m in metadata if m.partition == partition]
        counts[partition] = (len(offsets), min(offsets), max(offsets))
    return counts


def test_partition_counts_summarise_send_batch_and_send_arrow(
    broker: LocalBroker, make_topic: TopicFactory, send_batch_path: str
) -> None:
    pa = pytest.importorskip("pyarrow")
    topic = make_topic(6)
    keys = [b"key-%d" % (i % 37) for i in range(3000)]
    values = [b"value-%d" % i for i in range(3000)]
    table = pa.table({"key": keys, "value": values})
    with producer_for(broker, batch_size=4096) as producer:  # many batches per partition
        batch_result = producer.send_batch(topic, values, keys=keys)
        arrow_result = producer.send_arrow(topic, table)
        batch_counts = batch_result.partition_counts(timeout=30)
        arrow_counts = arrow_result.partition_counts(timeout=30)
        assert batch_counts == expected_counts(batch_result.get(timeout=0))
        assert arrow_counts == expected_counts(arrow_result.get(timeout=0))
    assert len(batch_counts) == 6
    assert sum(records for records, _, _ in batch_counts.values()) == 3000
    assert sum(records for records, _, _ in arrow_counts.values()) == 3000
    stored = read_back(broker, topic, 6, 6000)
    for partition, (records, first, last) in arrow_counts.items():
        # The call's records are contiguous per partition here (one producer, one call at a
        # time per partition is not promised, so check they are all there and in range).
        in_range = [o for (p, o) in stored if p == partition and first <= o <= last]
        assert len(in_range) >= records


def test_partition_counts_with_acks_0_have_unknown_offsets(
    broker: LocalBroker, make_topic: TopicFactory
) -> None:
    topic = make_topic(2)
    with producer_for(broker, acks=0, enable_idempotence=False) as producer:
        result = producer.send_batch(topic, [b"a", b"b", b"c"], partition=1)
        assert result.partition_counts(timeout=30) == {1: (3, -1, -1)}


@pytest.mark.parametrize("one_shape", [False, True])
def test_send_arrow_calls_in_a_row_and_send_from_another_thread_keep_every_record_in_order(
    broker: LocalBroker, make_topic: TopicFactory, one_shape: bool
) -> None:
    # Each send_arrow() call fills the partitions' open batches, held from the Sender while
    # it encodes; linger 1 ms makes the Sender want them meanwhile, and send() from another
    # thread appends to the same batches. Every record must arrive once, bit-exact, and each
    # stream's records in order within their partition. ``one_shape``: keys of one length,
    # values of one length (the columnar encoder's scatters, its tables of sizes).
    pa = pytest.importorskip("pyarrow")
    topic = make_topic(3)
    calls, rows = 20, 1500
    arrow_values = [
        [os.urandom(60) if one_shape else b"a%d-%d" % (c, i) + os.urandom(40) for i in range(rows)]
        for c in range(calls)
    ]
    key_format = b"k%03d" if one_shape else b"k%d"
    arrow_keys = [[key_format % (i % 97) for i in range(rows)] for _ in range(calls)]
    single = [(b"k%d" % (i % 97), b"s%d" % i + os.urandom(30)) for i in range(3000)]
    single_meta: list[RecordMetadata] = []
    with producer_for(broker, linger_ms=1) as producer:

        def sender_thread() -> None:
            futures = [producer.send(topic, value, key) for key, value in single]
            single_meta.extend(future.get(timeout=30) for future in futures)

        thread = threading.Thread(target=sender_thread)
        thread.start()
        results = [
            producer.send_arrow(
                topic,
                pa.record_batch(
                    [pa.array(arrow_keys[c], pa.binary()), pa.array(arrow_values[c], pa.binary())],
                    names=["key", "value"],
                ),
            )
            for c in range(calls)
        ]
        arrow_meta = [meta for result in results for meta in result.get(timeout=30)]
        thread.join(timeout=60)
    total = calls * rows + len(single)
    stored = read_back(broker, topic, 3, total)
    assert len(stored) == total
    expected = [
        (k, v) for c in range(calls) for k, v in zip(arrow_keys[c], arrow_values[c], strict=True)
    ]
    for stream, metas in ((expected, arrow_meta), (single, single_meta)):
        last: dict[int, int] = {}
        for (key, value), meta in zip(stream, metas, strict=True):
            assert stored[(meta.partition, meta.offset)] == (key, value, ())
            assert meta.partition == partition_for_key(key, 3)
            assert meta.offset > last.get(meta.partition, -1)  # in order per partition
            last[meta.partition] = meta.offset
