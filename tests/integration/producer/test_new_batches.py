"""Records that each open a batch (batch_size 1, many partitions: the compiled send()'s
new-batch step makes nearly every batch), sent from several threads, read back bit-exact by
confluent-kafka, in each partition in each thread's order."""

from __future__ import annotations

import threading
import uuid

import pytest
from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as ConfluentTopicPartition

from kafkaline import Producer, RecordMetadata
from kafkaline.testing import LocalBroker, TopicFactory

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

TS = 1_700_000_000_000
PARTITIONS = 40
# (partition, offset) -> (key, value, timestamp)
Stored = dict[tuple[int, int], tuple[bytes | None, bytes | None, int]]


def read_with_confluent(broker: LocalBroker, topic: str, count: int) -> Stored:
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
        consumer.assign([ConfluentTopicPartition(topic, p, 0) for p in range(PARTITIONS)])
        for _ in range(300):
            if len(stored) >= count:
                break
            for message in consumer.consume(num_messages=count, timeout=0.2):
                assert message.error() is None, f"confluent-kafka: {message.error()}"
                partition, offset = message.partition(), message.offset()
                assert partition is not None and offset is not None
                stored[(partition, offset)] = (
                    message.key(),
                    message.value(),
                    message.timestamp()[1],
                )
    finally:
        consumer.close()
    return stored


def record(thread: int, i: int) -> tuple[bytes | None, bytes | None, int | None]:
    """Keyed, null-keyed with a partition, empty and null values, sizes up to ~2 KB."""
    key = None if i % 3 == 0 else (b"" if i % 7 == 0 else b"key-%d" % (i % 50))
    value = None if i % 11 == 0 else b"%d:%d:" % (thread, i) + bytes(range(256)) * (i % 9)
    partition = (thread + i) % PARTITIONS if key is None or i % 5 == 0 else None
    return key, value, partition


def test_records_opening_batches_from_threads_read_back_bit_exact(
    broker: LocalBroker, make_topic: TopicFactory
) -> None:
    topic = make_topic(partitions=PARTITIONS)
    per_thread, threads = 300, 4
    sent: list[list[tuple[RecordMetadata, bytes | None, bytes | None]]] = [
        [] for _ in range(threads)
    ]
    with Producer(
        bootstrap_servers=broker.bootstrap_servers,
        batch_size=1,
        linger_ms=5,
        request_timeout_ms=5000,
    ) as producer:
        # Every partition's first record, and the topic's metadata, before the threads.
        for p in range(PARTITIONS):
            producer.send(topic, b"first", partition=p, timestamp_ms=TS).get(20)

        def send_all(thread: int) -> None:
            futures = []
            for i in range(per_thread):
                key, value, partition = record(thread, i)
                future = producer.send(
                    topic, value, key=key, partition=partition, timestamp_ms=TS + i
                )
                futures.append((future, key, value))
            producer.flush()
            sent[thread] = [(future.get(20), key, value) for future, key, value in futures]

        workers = [threading.Thread(target=send_all, args=(n,)) for n in range(threads)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
    expected: Stored = {
        (meta.partition, meta.offset): (key, value, meta.timestamp)
        for thread_sent in sent
        for meta, key, value in thread_sent
    }
    assert len(expected) == per_thread * threads
    stored = read_with_confluent(broker, topic, len(expected) + PARTITIONS)
    assert {where: stored[where] for where in expected} == expected
    for thread_sent in sent:  # each thread's records in order within each partition
        last: dict[int, int] = {}
        for meta, _, _ in thread_sent:
            assert meta.offset > last.get(meta.partition, -1)
            last[meta.partition] = meta.offset
