"""Large produce requests queued behind each other on one connection (the large workload's
shape: 10 KB values, 64 KiB batches, several requests in flight): the socket takes a part of
them per write, the rest is offered again, and every record must arrive once, in order, bit
exact, read back by confluent-kafka."""

from __future__ import annotations

import os
import uuid

import pytest
from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as ConfluentTopicPartition

from kafkaline import Producer
from kafkaline.testing import LocalBroker, TopicFactory

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

_PARTITIONS = 6
_RECORDS = 3_000


def _read_back(broker: LocalBroker, topic: str, count: int) -> dict[tuple[int, int], bytes]:
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": f"check-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 50,
        }
    )
    stored: dict[tuple[int, int], bytes] = {}
    try:
        consumer.assign([ConfluentTopicPartition(topic, p, 0) for p in range(_PARTITIONS)])
        for _ in range(600):
            if len(stored) >= count:
                break
            for message in consumer.consume(num_messages=500, timeout=0.2):
                error = message.error()
                assert error is None, f"confluent-kafka consumer error: {error}"
                partition, offset, value = message.partition(), message.offset(), message.value()
                assert partition is not None and offset is not None and value is not None
                stored[(partition, offset)] = value
    finally:
        consumer.close()
    return stored


def test_queued_requests_of_large_batches_read_back_once_in_order(
    broker: LocalBroker, make_topic: TopicFactory
) -> None:
    topic = make_topic(partitions=_PARTITIONS)
    pool = [os.urandom(10_000) for _ in range(50)]
    producer = Producer(
        bootstrap_servers=broker.bootstrap_servers,
        linger_ms=5,
        batch_size=64 * 1024,
        acks=1,
        max_in_flight_requests_per_connection=5,
        request_timeout_ms=30_000,
    )
    with producer:
        futures = [
            producer.send(topic, pool[i % len(pool)] + i.to_bytes(4, "big"), key=b"%d" % i)
            for i in range(_RECORDS)
        ]
        producer.flush()
        metadata = [future.get(30) for future in futures]
    expected = {
        (meta.partition, meta.offset): pool[i % len(pool)] + i.to_bytes(4, "big")
        for i, meta in enumerate(metadata)
    }
    assert len(expected) == _RECORDS  # no two records at one offset
    assert _read_back(broker, topic, _RECORDS) == expected
