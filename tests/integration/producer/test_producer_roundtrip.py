"""The Producer against the real broker, read back by independent clients: confluent-kafka
(librdkafka) and kafka-python consumers with assign(), and our own Fetch
(kafkaline.testing.wire). Records must come back bit-exact: key, value, headers, timestamp,
partition, offset."""

from __future__ import annotations

import asyncio
import itertools
import os
import threading
import uuid
from collections import defaultdict
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer
from confluent_kafka import Producer as ConfluentProducer
from confluent_kafka import TopicPartition as ConfluentTopicPartition
from kafka import KafkaConsumer
from kafka import TopicPartition as KafkaPythonTopicPartition

from kafkaline import Producer, RecordMetadata
from kafkaline.producer.futures import FutureRecordMetadata
from kafkaline.record import CompressionType, RecordBatch
from kafkaline.record.record_encoder import RECORD_OVERHEAD_BOUND
from kafkaline.testing import LocalBroker, TopicFactory
from kafkaline.testing.wire import BlockingConnection, fetch_partition, negotiate_versions

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

TS = 1_700_000_000_000
Header = tuple[str, bytes | None]
# (partition, offset) -> (key, value, headers, timestamp)
Stored = dict[tuple[int, int], tuple[bytes | None, bytes | None, tuple[Header, ...], int]]


def producer_for(broker: LocalBroker, **settings: object) -> Producer:
    defaults: dict[str, object] = {"linger_ms": 5, "request_timeout_ms": 5000}
    return Producer(bootstrap_servers=broker.bootstrap_servers, **{**defaults, **settings})


def awkward_records(count: int) -> list[tuple[bytes | None, bytes | None, tuple[Header, ...]]]:
    """Null and empty keys and values, binary bytes, headers with null values and non-ASCII
    names."""
    records: list[tuple[bytes | None, bytes | None, tuple[Header, ...]]] = []
    for i in range(count):
        key = None if i % 7 == 0 else (b"" if i % 11 == 0 else b"key-%d" % i)
        value = None if i % 13 == 0 else bytes((i * j) % 256 for j in range(i % 300))
        headers: tuple[Header, ...] = (("n", b"%d" % i), ("émoji-🙂", None if i % 2 else b"\0"))[
            : i % 3
        ]
        records.append((key, value, headers))
    return records


def as_header(item: object) -> Header:
    assert isinstance(item, tuple) and len(item) == 2
    name, value = item
    assert isinstance(name, str) and (value is None or isinstance(value, bytes))
    return name, value


def read_with_confluent(broker: LocalBroker, topic: str, partitions: int, count: int) -> Stored:
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": f"check-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 50,
        }
    )
    stored: Stored = {}
    try:
        consumer.assign([ConfluentTopicPartition(topic, p, 0) for p in range(partitions)])
        for _ in range(300):
            if len(stored) >= count:
                break
            for message in consumer.consume(num_messages=count, timeout=0.2):
                error = message.error()
                assert error is None, f"confluent-kafka consumer error: {error}"
                headers = tuple(as_header(item) for item in message.headers() or [])
                partition, offset = message.partition(), message.offset()
                assert partition is not None and offset is not None
                stored[(partition, offset)] = (
                    message.key(),
                    message.value(),
                    headers,
                    message.timestamp()[1],
                )
    finally:
        consumer.close()
    return stored


def read_with_kafka_python(broker: LocalBroker, topic: str, partitions: int, count: int) -> Stored:
    consumer = KafkaConsumer(
        bootstrap_servers=broker.bootstrap_servers,
        enable_auto_commit=False,
        group_id=None,
        api_version=(2, 5),
        fetch_max_wait_ms=50,
    )
    stored: Stored = {}
    try:
        consumer.assign([KafkaPythonTopicPartition(topic, p) for p in range(partitions)])
        consumer.seek_to_beginning()
        for _ in range(300):
            if len(stored) >= count:
                break
            for records in consumer.poll(timeout_ms=200).values():
                for message in records:
                    stored[(message.partition, message.offset)] = (
                        message.key,
                        message.value,
                        tuple((name, value) for name, value in message.headers),
                        message.timestamp,
                    )
    finally:
        consumer.close()
    return stored


def fetch_batches(broker: LocalBroker, topic: str, partition: int, count: int) -> list[RecordBatch]:
    with BlockingConnection(broker.host, broker.port, client_id="check") as conn:
        version = negotiate_versions(conn)[1]
        return fetch_partition(conn, topic, partition, version, expected_records=count)


def expected_from(
    futures_and_records: list[
        tuple[RecordMetadata, bytes | None, bytes | None, tuple[Header, ...]]
    ],
) -> Stored:
    return {
        (meta.partition, meta.offset): (key, value, headers, meta.timestamp)
        for meta, key, value, headers in futures_and_records
    }


# ---------------------------------------------------------------------- bit-exact read-back


@pytest.fixture
def sent_awkward(broker: LocalBroker, make_topic: TopicFactory) -> Iterator[tuple[str, Stored]]:
    topic = make_topic(partitions=4)
    records = awkward_records(400)
    with producer_for(broker, acks="all") as producer:
        futures = [
            producer.send(topic, value, key=key, headers=list(headers), timestamp_ms=TS + i)
            for i, (key, value, headers) in enumerate(records)
        ]
        producer.flush()
        metadata = [future.get(10) for future in futures]
    assert {meta.partition for meta in metadata} == {0, 1, 2, 3}
    assert [meta.timestamp for meta in metadata] == [TS + i for i in range(len(records))]
    yield (
        topic,
        expected_from([(meta, k, v, h) for meta, (k, v, h) in zip(metadata, records, strict=True)]),
    )


def test_records_across_partitions_read_back_bit_exact_by_confluent_kafka(
    broker: LocalBroker, sent_awkward: tuple[str, Stored]
) -> None:
    topic, expected = sent_awkward
    assert read_with_confluent(broker, topic, 4, len(expected)) == expected


def test_records_across_partitions_read_back_bit_exact_by_kafka_python(
    broker: LocalBroker, sent_awkward: tuple[str, Stored]
) -> None:
    topic, expected = sent_awkward
    assert read_with_kafka_python(broker, topic, 4, len(expected)) == expected


def test_keyed_records_land_where_librdkafka_murmur2_puts_them(
    broker: LocalBroker, make_topic: TopicFactory
) -> None:
    partitions = 7
    ours, theirs = make_topic(partitions=partitions), make_topic(partitions=partitions)
    keys = [b"", b"a", b"user-1", os.urandom(3), os.urandom(36), *(b"k%d" % i for i in range(200))]
    with producer_for(broker) as producer:
        futures = [producer.send(ours, b"v", key=key) for key in keys]
        producer.flush()
        our_partitions = {
            key: future.get(10).partition for key, future in zip(keys, futures, strict=True)
        }
    confluent = ConfluentProducer(
        {"bootstrap.servers": broker.bootstrap_servers, "partitioner": "murmur2_random"}
    )
    their_partitions: dict[bytes, int] = {}

    def delivered(error: object, message: object) -> None:
        assert error is None, error
        their_partitions[message.key()] = message.partition()  # type: ignore[attr-defined]

    for key in keys:
        confluent.produce(theirs, b"v", key, on_delivery=delivered)
    assert confluent.flush(20) == 0
    assert our_partitions == their_partitions
    assert len(set(our_partitions.values())) == partitions


# ---------------------------------------------------------------------- timestamps, acks, codecs


def test_default_timestamp_is_the_send_time(broker: LocalBroker, topic: str) -> None:
    import time

    with producer_for(broker) as producer:
        before = time.time_ns() // 1_000_000
        future = producer.send(topic, b"now", partition=0)
        after = time.time_ns() // 1_000_000
        meta = future.get(10)
    assert before <= meta.timestamp <= after
    (batch,) = fetch_batches(broker, topic, 0, 1)
    assert batch.records[0].timestamp == meta.timestamp


@pytest.mark.parametrize("acks", [0, 1, "all"])
def test_every_acks_setting_delivers(broker: LocalBroker, topic: str, acks: object) -> None:
    with producer_for(broker, acks=acks) as producer:
        futures = [producer.send(topic, b"v%d" % i, partition=1) for i in range(50)]
        producer.flush()
        offsets = [future.get(10).offset for future in futures]
    if acks == 0:
        assert offsets == [-1] * 50  # the broker's answer (Tansu sends one anyway) is dropped
    else:
        assert offsets == list(range(50))
    batches = fetch_batches(broker, topic, 1, 50)
    assert [r.value for b in batches for r in b.records] == [b"v%d" % i for i in range(50)]


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_every_codec_reads_back_bit_exact(
    broker: LocalBroker, make_topic: TopicFactory, codec: str
) -> None:
    topic = make_topic(partitions=2)
    records = awkward_records(150)
    with producer_for(broker, compression_type=codec, linger_ms=50) as producer:
        futures = [
            producer.send(topic, value, key=key, headers=list(headers), timestamp_ms=TS + i)
            for i, (key, value, headers) in enumerate(records)
        ]
        producer.flush()
        metadata = [future.get(10) for future in futures]
        metrics = producer.metrics()
    expected = expected_from(
        [(meta, k, v, h) for meta, (k, v, h) in zip(metadata, records, strict=True)]
    )
    assert read_with_confluent(broker, topic, 2, len(expected)) == expected
    batches = fetch_batches(broker, topic, 0, sum(1 for m in metadata if m.partition == 0))
    assert {batch.compression for batch in batches} == {CompressionType[codec.upper()]}
    if codec != "none":
        assert metrics["compression-rate-avg"] < 1.0


def test_lz4_batches_of_several_blocks_read_back_bit_exact(
    broker: LocalBroker, make_topic: TopicFactory
) -> None:
    # Batches of 256 KiB of records: several 64 KiB lz4 blocks each, compressed ones from
    # text and raw ones from runs of random values (140 KB: at least one whole block) that
    # do not shrink.
    topic = make_topic(partitions=1)
    text = b"".join(b"record %d of many, the quick brown fox; " % i for i in range(100))
    values = [
        os.urandom(2000) if i % 140 < 70 else text[i % 50 : i % 50 + 2000] for i in range(400)
    ]
    with producer_for(
        broker, compression_type="lz4", batch_size=256 * 1024, linger_ms=200
    ) as producer:
        futures = [
            producer.send(topic, value, key=b"k%d" % i, timestamp_ms=TS + i)
            for i, value in enumerate(values)
        ]
        producer.flush()
        metadata = [future.get(10) for future in futures]
    expected = expected_from([(meta, b"k%d" % i, values[i], ()) for i, meta in enumerate(metadata)])
    batches = fetch_batches(broker, topic, 0, len(values))
    assert {batch.compression for batch in batches} == {CompressionType.LZ4}
    assert max(sum(len(r.value or b"") for r in b.records) for b in batches) > 3 * 64 * 1024
    assert read_with_confluent(broker, topic, 1, len(expected)) == expected
    assert read_with_kafka_python(broker, topic, 1, len(expected)) == expected


@pytest.mark.parametrize("level", [1, 9])
def test_lz4_fast_and_hc_levels_read_back_bit_exact(
    broker: LocalBroker, make_topic: TopicFactory, level: int
) -> None:
    # Level 1's frame is written by the seal itself (in C in the compiled build); level 9 goes
    # through cramjam's frame compressor. Both through send() and send_batch().
    topic = make_topic(partitions=3)
    records = awkward_records(300)
    with producer_for(
        broker, compression_type="lz4", compression_level=level, linger_ms=50
    ) as producer:
        futures = [
            producer.send(topic, value, key=key, headers=list(headers), timestamp_ms=TS + i)
            for i, (key, value, headers) in enumerate(records)
        ]
        values = [b"bulk %d " % i * (i % 40) for i in range(2000)]
        keys = [b"key-%d" % (i % 97) for i in range(2000)]
        bulk = producer.send_batch(topic, values, keys=keys)
        producer.flush()
        metadata = [future.get(10) for future in futures]
        bulk_metadata = bulk.get(10)
    expected = expected_from(
        [(meta, k, v, h) for meta, (k, v, h) in zip(metadata, records, strict=True)]
        + [(meta, k, v, ()) for meta, k, v in zip(bulk_metadata, keys, values, strict=True)]
    )
    assert read_with_confluent(broker, topic, 3, len(expected)) == expected
    assert read_with_kafka_python(broker, topic, 3, len(expected)) == expected


# ---------------------------------------------------------------------- batching


def test_records_sent_within_linger_go_in_one_batch(broker: LocalBroker, topic: str) -> None:
    with producer_for(broker, linger_ms=300, batch_size=65536) as producer:
        futures = [producer.send(topic, b"r%d" % i, partition=2) for i in range(100)]
        producer.flush()
        assert {future.get(10).offset for future in futures} == set(range(100))
    batches = fetch_batches(broker, topic, 2, 100)
    assert [len(batch.records) for batch in batches] == [100]


def test_batch_size_cuts_batches(broker: LocalBroker, topic: str) -> None:
    value = b"x" * 100
    with producer_for(broker, linger_ms=1000, batch_size=2048) as producer:
        futures = [producer.send(topic, value, partition=0) for _ in range(200)]
        producer.flush()
        for future in futures:
            future.get(10)
        batch_size_max = producer.metrics()["batch-size-max"]
    batches = fetch_batches(broker, topic, 0, 200)
    assert sum(len(batch.records) for batch in batches) == 200
    assert len(batches) >= 200 * 100 // 2048
    assert all(batch.size_in_bytes <= 2048 for batch in batches)
    assert 0 < batch_size_max <= 2048


def test_linger_zero_sends_at_once(broker: LocalBroker, topic: str) -> None:
    with producer_for(broker, linger_ms=0) as producer:
        first = producer.send(topic, b"a", partition=0).get(10)
        second = producer.send(topic, b"b", partition=0).get(10)
    assert (first.offset, second.offset) == (0, 1)
    assert [len(batch.records) for batch in fetch_batches(broker, topic, 0, 2)] == [1, 1]


# ---------------------------------------------------------------------- threads, asyncio


def test_eight_threads_at_once_keep_per_key_order(
    broker: LocalBroker, make_topic: TopicFactory
) -> None:
    topic = make_topic(partitions=6)
    per_thread = 500
    keys_per_thread = 4
    errors: list[BaseException] = []
    with producer_for(broker, linger_ms=2, batch_size=4096) as producer:
        barrier = threading.Barrier(8)

        def work(thread: int) -> None:
            try:
                barrier.wait()
                for i in range(per_thread):
                    key = b"t%d-k%d" % (thread, i % keys_per_thread)
                    producer.send(topic, b"%d:%d" % (thread, i), key=key)
            except BaseException as error:  # pragma: no cover - reported below
                errors.append(error)

        threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        producer.flush()
        assert producer.metrics()["record-error-total"] == 0
    assert errors == []
    stored = read_with_confluent(broker, topic, 6, 8 * per_thread)
    assert len(stored) == 8 * per_thread
    sequence_by_key: dict[bytes, list[int]] = defaultdict(list)
    for _position, (key, value, _, _) in sorted(stored.items()):
        assert key is not None and value is not None
        sequence_by_key[key].append(int(value.split(b":")[1]))
    assert len(sequence_by_key) == 8 * keys_per_thread
    for key, sequence in sequence_by_key.items():
        assert sequence == sorted(sequence), key
        assert len(sequence) == per_thread // keys_per_thread


def test_records_that_each_open_a_batch_on_many_partitions_read_back_in_order(
    broker: LocalBroker, make_topic: TopicFactory
) -> None:
    """batch_size 1, so every record needs a new batch (after each partition's first record,
    the compiled send() hands keyed records and records with a partition to its new-batch
    step): 4 threads over 300 partitions read back bit-exact by confluent-kafka, each thread's
    records in order within each partition."""
    partitions, threads, per_thread = 300, 4, 600
    topic = make_topic(partitions=partitions)
    sent: list[list[tuple[FutureRecordMetadata, bytes | None, bytes]]] = [
        [] for _ in range(threads)
    ]
    with producer_for(broker, batch_size=1) as producer:
        for p in range(partitions):
            producer.send(topic, b"first", partition=p, timestamp_ms=TS)

        def work(thread: int) -> None:
            for i in range(per_thread):
                value = b"%d:%d" % (thread, i)
                key = b"k%d" % (i % 97) if i % 2 else None
                partition = None if i % 2 else (i * 7 + thread) % partitions
                future = producer.send(
                    topic, value, key=key, partition=partition, timestamp_ms=TS + i
                )
                sent[thread].append((future, key, value))

        workers = [threading.Thread(target=work, args=(n,)) for n in range(threads)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        producer.flush()
        expected = expected_from(
            [(future.get(10), key, value, ()) for records in sent for future, key, value in records]
        )
    count = partitions + threads * per_thread
    stored = read_with_confluent(broker, topic, partitions, count)
    assert len(stored) == count
    assert {k: v for k, v in stored.items() if v[1] != b"first"} == expected
    last: dict[tuple[int, int], int] = {}
    for (partition, _offset), (_, value, _, _) in sorted(stored.items()):
        assert value is not None
        if value != b"first":
            thread, number = (int(part) for part in value.split(b":"))
            assert number > last.get((partition, thread), -1)
            last[(partition, thread)] = number


def test_futures_can_be_awaited(broker: LocalBroker, topic: str) -> None:
    async def main() -> list[RecordMetadata]:
        with producer_for(broker) as producer:
            return list(
                await asyncio.gather(
                    *(producer.send(topic, b"a%d" % i, partition=0) for i in range(5))
                )
            )

    metadata = asyncio.run(main())
    assert [meta.offset for meta in metadata] == list(range(5))


def test_callbacks_partitions_for_and_metrics(broker: LocalBroker, topic: str) -> None:
    acknowledged: list[RecordMetadata] = []
    with producer_for(broker, acks=1, linger_ms=1) as producer:
        assert [p.partition for p in producer.partitions_for(topic)] == [0, 1, 2]
        for i in range(300):
            producer.send(topic, b"m%d" % i, key=b"k%d" % (i % 30)).add_callback(
                acknowledged.append
            )
        producer.flush()
        metrics = producer.metrics()
    assert len(acknowledged) == 300
    assert metrics["record-send-total"] == 300
    assert metrics["record-error-total"] == 0 and metrics["record-retry-total"] == 0
    assert metrics["record-send-rate"] > 0 and metrics["request-rate"] > 0
    assert metrics["request-latency-avg"] > 0
    assert metrics["request-latency-max"] >= metrics["request-latency-avg"]
    assert 1 <= metrics["records-per-request-avg"] <= 300
    assert 0 < metrics["batch-size-avg"] <= metrics["batch-size-max"]
    assert metrics["buffer-available-bytes"] == metrics["buffer-total-bytes"]
    assert metrics["requests-in-flight"] == 0 and metrics["waiting-threads"] == 0
    assert metrics["record-queue-time-avg"] >= 0


# ---------------------------------------------------------------------- send()'s hot path


def test_repeated_keys_take_the_hot_path_and_read_back_bit_exact(
    broker: LocalBroker, make_topic: TopicFactory
) -> None:
    """Keyed records of bytes with their key's hash known go through send()'s hot path (the
    second record of each key onwards): same partitions, offsets, sizes and timestamps as the
    general path, read back bit-exact by librdkafka."""
    import time

    from kafkaline.producer.partitioner import partition_for_key

    topic = make_topic(partitions=5)
    keys = [b"", b"a", *(b"key-%d" % i for i in range(40))]
    sent: list[tuple[bytes, bytes]] = [
        (keys[i % len(keys)], os.urandom(i % 250)) for i in range(6000)
    ]
    with producer_for(broker, batch_size=16384) as producer:
        before = time.time_ns() // 1_000_000
        futures = [producer.send(topic, value, key) for key, value in sent]
        producer.flush()
        after = time.time_ns() // 1_000_000
        metadata = [future.get(10) for future in futures]
    for meta, (key, value) in zip(metadata, sent, strict=True):
        assert meta.partition == partition_for_key(key, 5)
        assert (meta.serialized_key_size, meta.serialized_value_size) == (len(key), len(value))
        assert before <= meta.timestamp <= after
    expected = expected_from(
        [(meta, key, value, ()) for meta, (key, value) in zip(metadata, sent, strict=True)]
    )
    assert len(expected) == len(sent)  # no two records at one offset
    assert read_with_confluent(broker, topic, 5, len(sent)) == expected


def test_sends_alternating_between_topics_land_in_each_topics_partitions(
    broker: LocalBroker, make_topic: TopicFactory
) -> None:
    """The compiled send() keeps the last topic's partition count and queues: records that
    alternate between two topics of different partition counts (keyed and keyless, one topic
    also named by an equal str of its own) land where each topic's own count puts them, read
    back bit-exact by librdkafka."""
    from kafkaline.producer.partitioner import partition_for_key

    counts = {make_topic(partitions=3): 3, make_topic(partitions=7): 7}
    first, second = counts
    twin = "".join(list(second))  # equal to second, another str object
    order = [first, second, twin, second, first, first]
    sent: list[tuple[str, bytes | None, bytes]] = [
        (order[i % len(order)], None if i % 5 == 0 else b"k%d" % (i % 50), os.urandom(i % 90))
        for i in range(3000)
    ]
    with producer_for(broker) as producer:
        futures = [producer.send(topic, value, key) for topic, key, value in sent]
        producer.flush()
        metadata = [future.get(10) for future in futures]
    for meta, (topic, key, _) in zip(metadata, sent, strict=True):
        assert meta.topic == topic
        if key is not None:
            assert meta.partition == partition_for_key(key, counts[topic])
    for topic, count in counts.items():
        mine: list[tuple[RecordMetadata, bytes | None, bytes | None, tuple[Header, ...]]] = [
            (m, k, v, ()) for m, (t, k, v) in zip(metadata, sent, strict=True) if t == topic
        ]
        expected = expected_from(mine)
        assert read_with_confluent(broker, topic, count, len(mine)) == expected


def test_the_hot_path_keeps_every_check_for_known_keys(broker: LocalBroker, topic: str) -> None:
    from kafkaline.errors import ProducerClosedError, RecordTooLargeError

    producer = producer_for(broker, max_request_size=10_000)
    producer.send(topic, b"warm", b"k").get(10)  # the key's hash and the metadata are known
    with pytest.raises(RecordTooLargeError):
        producer.send(topic, bytes(20_000), b"k")
    with pytest.raises(TypeError, match="value"):
        producer.send(topic, "text", b"k")
    assert producer.send(topic, b"v", b"k", partition=2).get(10).partition == 2
    assert producer.send(topic, b"v", b"k", timestamp_ms=TS).get(10).timestamp == TS
    producer.close()
    with pytest.raises(ProducerClosedError):
        producer.send(topic, b"v", b"k")


def test_interceptors_and_serializers_see_every_record_with_known_keys(
    broker: LocalBroker, topic: str
) -> None:
    from kafkaline.producer.record import ProducerRecord

    seen: list[bytes | None] = []

    class Counting:
        def on_send(self, record: ProducerRecord[bytes, bytes]) -> ProducerRecord[bytes, bytes]:
            seen.append(record.key)
            return record

        def on_acknowledgement(self, metadata: object, exception: object) -> None:
            pass

        def close(self) -> None:
            pass

    with producer_for(broker, interceptors=[Counting()]) as producer:
        for _ in range(5):
            producer.send(topic, b"v", b"same-key")
        producer.flush()
    assert seen == [b"same-key"] * 5
    serialized: list[object] = []

    def upper(value: bytes) -> bytes:
        serialized.append(value)
        return value.upper()

    with producer_for(broker, value_serializer=upper) as producer:
        futures = [producer.send(topic, b"v", b"same-key") for _ in range(5)]
        producer.flush()
        assert [future.get(10).serialized_value_size for future in futures] == [1] * 5
    assert serialized == [b"v"] * 5


def test_records_without_key_stick_to_a_partition_per_batch_and_read_back(
    broker: LocalBroker, make_topic: TopicFactory
) -> None:
    """Keyless records of bytes take send()'s hot path into the sticky partition's open batch
    until a switch is due (batch_size bytes): the partitions change only between batches, all
    partitions get records, and librdkafka reads them back bit-exact."""
    topic = make_topic(partitions=3)
    sent = [os.urandom(100 + i % 50) for i in range(3000)]
    with producer_for(broker, batch_size=8192, linger_ms=50) as producer:
        futures = [producer.send(topic, value) for value in sent]
        producer.flush()
        metadata = [future.get(10) for future in futures]
    partitions = [meta.partition for meta in metadata]
    runs = [len(list(run)) for _, run in itertools.groupby(partitions)]
    # A switch is due once batch_size bytes (values + each record's overhead bound) went to
    # the partition, never before; the next partition may be the same one (runs merge).
    fewest = 8192 // (149 + RECORD_OVERHEAD_BOUND)
    assert min(runs[:-1]) >= fewest, runs
    assert len(runs) <= len(sent) // fewest + 1
    assert set(partitions) == {0, 1, 2}
    assert all(meta.serialized_key_size == -1 for meta in metadata)
    expected = expected_from(
        [(meta, None, value, ()) for meta, value in zip(metadata, sent, strict=True)]
    )
    assert read_with_confluent(broker, topic, 3, len(sent)) == expected
