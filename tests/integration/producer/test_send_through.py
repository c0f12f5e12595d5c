"""Send-through (linger_ms=0): the sending thread writes the produce request itself when the
leader's connection is idle. Records sent that way from many threads read back bit-exact by
confluent-kafka, in each thread's order per partition, with idempotence, under an in-flight
limit, with a request the socket does not take whole, and with flush() and close() meanwhile.
"""

from __future__ import annotations

import contextlib
import threading
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as ConfluentTopicPartition

from kafkaline import Producer
from kafkaline.errors import ProducerClosedError
from kafkaline.net.client import NetworkClient
from kafkaline.producer.futures import FutureRecordMetadata
from kafkaline.producer.sender import Sender
from kafkaline.protocol.api import ProduceRequest
from kafkaline.testing import LocalBroker, TopicFactory

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

PARTITIONS = 3
# (partition, offset) -> (key, value)
Stored = dict[tuple[int, int], tuple[bytes | None, bytes | None]]


def read_with_confluent(broker: LocalBroker, topic: str, count: int) -> Stored:
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": f"check-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 50,
            "fetch.message.max.bytes": 8 * 1024 * 1024,
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
                stored[(partition, offset)] = (message.key(), message.value())
    finally:
        consumer.close()
    return stored


@pytest.fixture
def sent_through(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """How many caller's passes sent a request (one counter, in a list)."""
    count = [0]
    original = Sender._send_through_locked

    def counting(self: Sender) -> bool:
        done = original(self)
        if done:
            count[0] += 1
        return done

    monkeypatch.setattr(Sender, "_send_through_locked", counting)
    yield count


def value_of(thread: int, i: int, size: int = 0) -> bytes:
    return b"%d:%d:" % (thread, i) + bytes(range(256)) * size


def send_from_threads(
    producer: Producer,
    topic: str,
    threads: int,
    per_thread: int,
    sync_every: int = 1,
    first_thread: int = 0,
) -> dict[tuple[int, int], FutureRecordMetadata]:
    """Each thread sends to every partition in turn; every ``sync_every``-th record waits.
    Threads are numbered from ``first_thread`` (in the values and the result's keys)."""
    futures: dict[tuple[int, int], FutureRecordMetadata] = {}
    lock = threading.Lock()

    def run(thread: int) -> None:
        for i in range(per_thread):
            future = producer.send(
                topic, value_of(thread, i), key=b"k%d" % i, partition=i % PARTITIONS
            )
            with lock:
                futures[(thread, i)] = future
            if i % sync_every == 0:
                future.get(30)

    workers = [
        threading.Thread(target=run, args=(t,)) for t in range(first_thread, first_thread + threads)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return futures


def send_alone_then_from_threads(
    producer: Producer,
    topic: str,
    sent_through: list[int],
    threads: int,
    per_thread: int,
    sync_every: int,
) -> dict[tuple[int, int], FutureRecordMetadata]:
    """Records sent one at a time from one thread (these go through: checked), then from
    ``threads`` threads at once (thread numbers from 1)."""
    futures = send_from_threads(producer, topic, threads=1, per_thread=30)
    assert sent_through[0] > 0
    futures.update(
        send_from_threads(producer, topic, threads, per_thread, sync_every, first_thread=1)
    )
    return futures


def check_read_back(
    broker: LocalBroker,
    topic: str,
    futures: dict[tuple[int, int], FutureRecordMetadata],
) -> None:
    """Every record read back bit-exact at its future's offset; per partition, each thread's
    records in the order it sent them."""
    stored = read_with_confluent(broker, topic, len(futures))
    assert len(stored) == len(futures)
    last_offset: dict[tuple[int, int], int] = {}
    for (thread, i), future in sorted(futures.items()):
        metadata = future.get(30)
        assert stored[(metadata.partition, metadata.offset)] == (b"k%d" % i, value_of(thread, i))
        previous = last_offset.get((thread, metadata.partition), -1)
        assert metadata.offset > previous, f"thread {thread} record {i} out of order"
        last_offset[(thread, metadata.partition)] = metadata.offset


def test_many_threads_keep_their_order_per_partition(
    broker: LocalBroker, make_topic: TopicFactory, sent_through: list[int]
) -> None:
    topic = make_topic(partitions=PARTITIONS)
    with Producer(bootstrap_servers=broker.bootstrap_servers, linger_ms=0, acks=1) as producer:
        futures = send_alone_then_from_threads(producer, topic, sent_through, 6, 150, 3)
    check_read_back(broker, topic, futures)


def test_idempotent_sends_go_through_without_duplicates(
    broker: LocalBroker, make_topic: TopicFactory, sent_through: list[int]
) -> None:
    topic = make_topic(partitions=PARTITIONS)
    with Producer(
        bootstrap_servers=broker.bootstrap_servers,
        linger_ms=0,
        acks="all",
        enable_idempotence=True,
    ) as producer:
        futures = send_alone_then_from_threads(producer, topic, sent_through, 4, 120, 2)
    check_read_back(broker, topic, futures)


def test_the_in_flight_limit_holds(
    broker: LocalBroker,
    make_topic: TopicFactory,
    sent_through: list[int],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    topic = make_topic(partitions=PARTITIONS)
    in_flight_before_send: list[int] = []
    original: Callable[..., int] = NetworkClient.send

    def recording(self: NetworkClient, node_id: int, request: Any, *args: Any, **kw: Any) -> int:
        if isinstance(request, ProduceRequest):
            in_flight_before_send.append(self.in_flight_request_count(node_id))
        return original(self, node_id, request, *args, **kw)

    monkeypatch.setattr(NetworkClient, "send", recording)
    with Producer(
        bootstrap_servers=broker.bootstrap_servers,
        linger_ms=0,
        acks=1,
        max_in_flight_requests_per_connection=1,
    ) as producer:
        futures = send_alone_then_from_threads(producer, topic, sent_through, 4, 150, 10)
    check_read_back(broker, topic, futures)
    assert in_flight_before_send and max(in_flight_before_send) == 0


def test_a_request_the_socket_does_not_take_whole(
    broker: LocalBroker, make_topic: TopicFactory, sent_through: list[int]
) -> None:
    topic = make_topic(partitions=PARTITIONS)
    # A 4 KiB send buffer and ~1 MB records: the caller's write is always partial, and the
    # I/O thread writes the rest.
    futures: dict[tuple[int, int], FutureRecordMetadata] = {}
    with Producer(
        bootstrap_servers=broker.bootstrap_servers,
        linger_ms=0,
        acks=1,
        send_buffer_bytes=4096,
        max_request_size=2 * 1024 * 1024,
    ) as producer:
        for i in range(6):
            value = value_of(0, i, size=4000)
            futures[(0, i)] = producer.send(topic, value, key=b"k%d" % i, partition=i % 3)
            futures[(0, i)].get(30)
    stored = read_with_confluent(broker, topic, len(futures))
    for (thread, i), future in futures.items():
        metadata = future.get(0)
        assert stored[(metadata.partition, metadata.offset)] == (
            b"k%d" % i,
            value_of(thread, i, size=4000),
        )
    assert sent_through[0] == 0  # each pass left a partial write: the I/O thread was woken


def test_flush_and_close_while_sends_go_through(
    broker: LocalBroker, make_topic: TopicFactory, sent_through: list[int]
) -> None:
    topic = make_topic(partitions=PARTITIONS)
    producer = Producer(bootstrap_servers=broker.bootstrap_servers, linger_ms=0, acks=1)
    futures: list[tuple[bytes, FutureRecordMetadata]] = []
    refused = threading.Event()
    lock = threading.Lock()

    def run(thread: int) -> None:
        for i in range(100_000):
            value = value_of(thread, i)
            try:
                future = producer.send(topic, value, partition=i % PARTITIONS)
            except ProducerClosedError:
                refused.set()
                return
            with lock:
                futures.append((value, future))
            if i % 2 == 0:
                with contextlib.suppress(ProducerClosedError):
                    future.get(30)

    for i in range(20):  # alone: these go through
        value = value_of(9, i)
        futures.append((value, producer.send(topic, value, partition=i % PARTITIONS)))
        futures[-1][1].get(30)
    assert sent_through[0] > 0
    workers = [threading.Thread(target=run, args=(t,)) for t in range(4)]
    for worker in workers:
        worker.start()
    for _ in range(5):
        producer.flush(30)
    producer.close(30)
    for worker in workers:
        worker.join(30)
    assert refused.is_set()
    acknowledged = {}
    for value, future in futures:
        assert future.done()
        error = future.exception()
        if error is None:
            metadata = future.get(0)
            acknowledged[(metadata.partition, metadata.offset)] = value
        else:
            assert isinstance(error, ProducerClosedError)
    stored = read_with_confluent(broker, topic, len(acknowledged))
    assert {where: value for where, (_, value) in stored.items()} == acknowledged
