"""send_batch() runs that continue batches opened by send() and open new ones (the compiled
core's append rounds, the Python protocol in the pure-Python build), plain and compressed,
with buffer memory short enough that rounds are left to the protocol: every record read back
bit-exact by confluent-kafka, in input order within its partition."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable

import pytest
from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as ConfluentTopicPartition

from kafkaline import Producer
from kafkaline.testing import LocalBroker

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

Record = tuple[bytes | None, bytes | None]


def read_back(
    broker: LocalBroker, topic: str, partitions: int, count: int
) -> dict[int, list[Record]]:
    """Each partition's (key, value) pairs in offset order, read by confluent-kafka."""
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": f"check-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 50,
        }
    )
    stored: dict[tuple[int, int], Record] = {}
    try:
        consumer.assign([ConfluentTopicPartition(topic, p, 0) for p in range(partitions)])
        for _ in range(300):
            if len(stored) >= count:
                break
            for message in consumer.consume(num_messages=count, timeout=0.2):
                assert message.error() is None, message.error()
                partition, offset = message.partition(), message.offset()
                assert partition is not None and offset is not None
                stored[(partition, offset)] = (message.key(), message.value())
    finally:
        consumer.close()
    out: dict[int, list[Record]] = {}
    for (partition, _), record in sorted(stored.items()):
        out.setdefault(partition, []).append(record)
    return out


@pytest.mark.parametrize("compression", ["none", "lz4"])
def test_send_batch_after_send_reads_back_in_order(
    broker: LocalBroker, make_topic: Callable[..., str], compression: str
) -> None:
    topic = make_topic(3)
    sent: list[tuple[int, bytes | None, bytes]] = []  # (partition, key, value) in send order
    futures = []
    with Producer(
        bootstrap_servers=broker.bootstrap_servers,
        linger_ms=5,
        max_block_ms=5000,
        batch_size=8192,
        buffer_memory=96 << 10,
        compression_type=compression,
    ) as producer:
        for call in range(6):
            for i in range(7):  # a batch opened by send(), holding its first few KiB
                value = os.urandom(50 + i)
                futures.append(producer.send(topic, value, partition=call % 3))
                sent.append((call % 3, None, value))
            keys = [b"k%d-%d" % (call, i % 40) for i in range(600)]
            values = [os.urandom(i % 300) for i in range(600)]
            result = producer.send_batch(topic, values, keys=keys)
            for meta, key, value in zip(result.get(timeout=30), keys, values, strict=True):
                sent.append((meta.partition, key, value))
        for future in futures:
            future.get(timeout=30)
    expected: dict[int, list[Record]] = {}
    for partition, sent_key, sent_value in sent:
        expected.setdefault(partition, []).append((sent_key, sent_value))
    assert read_back(broker, topic, 3, len(sent)) == expected
