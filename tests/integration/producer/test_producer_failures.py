"""The Producer when things go wrong, against the real broker: buffer back-pressure, unknown
topics, an unreachable broker, delivery timeouts while the broker is down, retries across a
broker restart, flush and close semantics, the I/O thread dying, and a fork."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkaline import Producer
from kafkaline.errors import (
    BufferExhaustedError,
    DeliveryTimeoutError,
    KafkaTimeoutError,
    ProducerClosedError,
    ProducerForkedError,
    SenderFailedError,
)
from kafkaline.net import NetworkClient
from kafkaline.net.response import ClientResponse
from kafkaline.producer.futures import FutureRecordMetadata
from kafkaline.testing import LocalBroker
from kafkaline.testing.wire import BlockingConnection, fetch_partition, negotiate_versions

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def producer_for(broker: LocalBroker, **settings: object) -> Producer:
    defaults: dict[str, object] = {
        "linger_ms": 0,
        "request_timeout_ms": 500,
        "delivery_timeout_ms": 1500,
        "max_block_ms": 500,
        "retry_backoff_ms": 50,
    }
    return Producer(bootstrap_servers=broker.bootstrap_servers, **{**defaults, **settings})


def warmed_up(producer: Producer, topic: str) -> None:
    """One record delivered: the topic's metadata is cached and the connection is up."""
    producer.send(topic, b"warm-up", partition=0).get(10)


def closed_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd")) if Path("/proc/self/fd").exists() else 0


def sender_threads() -> int:
    return sum(1 for t in threading.enumerate() if t.name.startswith("kafkaline-producer"))


@pytest.fixture
def stopped_broker(broker: LocalBroker) -> Iterator[LocalBroker]:
    """The session broker, to be stopped by the test; started again afterwards."""
    yield broker
    broker.start()


# ---------------------------------------------------------------------- blocking send()


def test_buffer_memory_back_pressure_blocks_then_names_buffer_memory(
    stopped_broker: LocalBroker, topic: str
) -> None:
    producer = producer_for(
        stopped_broker,
        batch_size=1024,
        buffer_memory=4096,
        delivery_timeout_ms=30_000,
        max_block_ms=500,
    )
    try:
        warmed_up(producer, topic)
        stopped_broker.stop()
        futures = [producer.send(topic, b"x" * 900, partition=p % 3) for p in range(4)]
        started = time.monotonic()
        with pytest.raises(BufferExhaustedError, match="buffer_memory=4096"):
            producer.send(topic, b"x" * 900, partition=0)
        waited = time.monotonic() - started
        assert 0.4 <= waited < 3.0
        metrics = producer.metrics()
        assert metrics["buffer-available-bytes"] == 0
        assert metrics["bufferpool-wait-time-total"] >= 0.4e9
    finally:
        producer.close(0)
    for future in futures:
        assert isinstance(future.exception(1), ProducerClosedError)


def test_unknown_topic_fails_within_max_block_ms(broker: LocalBroker) -> None:
    with producer_for(broker, max_block_ms=500) as producer:
        started = time.monotonic()
        with pytest.raises(KafkaTimeoutError, match="'no-such-topic-here' not present"):
            producer.send("no-such-topic-here", b"v")
        assert time.monotonic() - started < 3.0


def test_broker_unreachable_at_start_fails_within_max_block_ms() -> None:
    before = sender_threads()
    producer = Producer(bootstrap_servers=f"127.0.0.1:{closed_port()}", max_block_ms=500)
    started = time.monotonic()
    with pytest.raises(KafkaTimeoutError, match="not present in metadata after 500 ms"):
        producer.send("events", b"v")
    assert time.monotonic() - started < 3.0
    producer.close()
    assert time.monotonic() - started < 5.0
    assert sender_threads() == before


# ---------------------------------------------------------------------- broker down, restarts


def test_delivery_timeout_while_the_broker_is_stopped(
    stopped_broker: LocalBroker, topic: str
) -> None:
    with producer_for(stopped_broker, delivery_timeout_ms=1500) as producer:
        warmed_up(producer, topic)
        stopped_broker.stop()
        started = time.monotonic()
        futures = [producer.send(topic, b"v%d" % i, partition=i % 3) for i in range(20)]
        errors = [future.exception(10) for future in futures]
        elapsed = time.monotonic() - started
        assert all(isinstance(error, DeliveryTimeoutError) for error in errors), errors
        assert "delivery_timeout_ms=1500" in str(errors[0])
        assert 1.3 <= elapsed < 5.0
        assert producer.metrics()["record-error-total"] == 20
    stopped_broker.start()


@pytest.fixture(scope="module")
def durable_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalBroker]:
    """A broker on S3 storage (a local moto server), so records survive a restart."""
    with LocalBroker(storage="s3", log_dir=tmp_path_factory.mktemp("s3-broker")) as durable:
        yield durable


def test_records_are_delivered_across_a_broker_restart(durable_broker: LocalBroker) -> None:
    topic = f"restart-{os.getpid()}-{time.monotonic_ns()}"
    durable_broker.create_topic(topic, partitions=2)
    futures: list[FutureRecordMetadata] = []
    sent_while_down: list[int] = []
    broker_down = threading.Event()
    stop = threading.Event()
    with producer_for(
        durable_broker,
        linger_ms=5,
        request_timeout_ms=2000,
        delivery_timeout_ms=30_000,
        max_block_ms=10_000,
        # At least once, without idempotence: every record gets its offset. The idempotent
        # producer across a restart is tested in test_idempotence.py.
        enable_idempotence=False,
    ) as producer:
        warmed_up(producer, topic)

        def keep_sending() -> None:
            i = 0
            while not stop.is_set():
                futures.append(producer.send(topic, b"r%d" % i, partition=i % 2))
                if broker_down.is_set():
                    sent_while_down.append(i)
                i += 1
                time.sleep(0.0005)

        sender = threading.Thread(target=keep_sending)
        sender.start()
        try:
            time.sleep(0.3)
            broker_down.set()
            durable_broker.restart()  # mid-stream: connections drop, requests in flight fail
            broker_down.clear()
            time.sleep(0.3)
        finally:
            stop.set()
            sender.join()
        producer.flush(30)
        offsets = [future.get(0).offset for future in futures]  # every one succeeded
    assert sent_while_down, "no record was sent while the broker restarted"
    assert all(offset >= 0 for offset in offsets)
    values: set[bytes | None] = set()
    with BlockingConnection(durable_broker.host, durable_broker.port) as conn:
        version = negotiate_versions(conn)[1]
        for partition in (0, 1):
            for batch in fetch_partition(conn, topic, partition, version, max_wait_ms=50):
                values.update(record.value for record in batch.records)
    # At least once: a request the broker stored before it died may be stored again on retry.
    assert {b"r%d" % i for i in range(len(futures))} <= values


# ---------------------------------------------------------------------- flush and close


def test_close_zero_aborts_buffered_records_with_a_named_error(
    stopped_broker: LocalBroker, topic: str
) -> None:
    producer = producer_for(stopped_broker, delivery_timeout_ms=30_000)
    warmed_up(producer, topic)
    stopped_broker.stop()
    futures = [producer.send(topic, b"v", partition=0) for _ in range(10)]
    started = time.monotonic()
    producer.close(0)
    assert time.monotonic() - started < 2.0
    for future in futures:
        with pytest.raises(ProducerClosedError, match="closed forcefully"):
            future.get(1)


def test_close_with_a_timeout_aborts_what_it_could_not_send(
    stopped_broker: LocalBroker, topic: str
) -> None:
    producer = producer_for(stopped_broker, delivery_timeout_ms=30_000)
    warmed_up(producer, topic)
    stopped_broker.stop()
    future = producer.send(topic, b"v", partition=0)
    started = time.monotonic()
    producer.close(timeout=0.5)
    assert 0.4 <= time.monotonic() - started < 3.0
    assert isinstance(future.exception(1), ProducerClosedError)


def test_flush_timeout_raises_and_keeps_the_records(
    stopped_broker: LocalBroker, topic: str
) -> None:
    producer = producer_for(stopped_broker, delivery_timeout_ms=30_000)
    try:
        warmed_up(producer, topic)
        stopped_broker.stop()
        future = producer.send(topic, b"v", partition=0)
        with pytest.raises(KafkaTimeoutError, match="flush did not complete"):
            producer.flush(timeout=0.3)
        assert not future.done()
    finally:
        producer.close(0)


def test_graceful_close_sends_everything_buffered_and_frees_everything(
    broker: LocalBroker, topic: str
) -> None:
    threads_before = sender_threads()
    fds_before = open_fds()
    producer = producer_for(broker, linger_ms=10_000, delivery_timeout_ms=60_000)
    futures = [producer.send(topic, b"v%d" % i, partition=1) for i in range(100)]
    assert not futures[-1].done()  # lingering
    producer.close()
    assert [future.get(0).offset for future in futures] == list(range(100))
    producer.close()  # idempotent
    producer.flush()  # nothing to flush after close
    with pytest.raises(ProducerClosedError):
        producer.send(topic, b"late")
    assert sender_threads() == threads_before
    assert open_fds() == fds_before  # every socket closed


def test_context_manager_closes(broker: LocalBroker, topic: str) -> None:
    with producer_for(broker, linger_ms=5_000, delivery_timeout_ms=60_000) as producer:
        future = producer.send(topic, b"v", partition=2)
    assert future.get(0).offset == 0
    with pytest.raises(ProducerClosedError):
        producer.send(topic, b"v")


# ---------------------------------------------------------------------- the I/O thread dies


def test_a_dying_sender_fails_pending_records_and_later_sends(
    broker: LocalBroker, topic: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    boom = RuntimeError("injected failure in NetworkClient.poll")
    armed = threading.Event()
    real_poll = NetworkClient.poll

    def poll(
        self: NetworkClient, timeout_ms: float, now: float | None = None
    ) -> list[ClientResponse]:
        if armed.is_set():
            raise boom
        return real_poll(self, timeout_ms, now)

    monkeypatch.setattr(NetworkClient, "poll", poll)
    producer = producer_for(broker, linger_ms=50, delivery_timeout_ms=30_000)
    try:
        warmed_up(producer, topic)
        # Sent, then armed: linger_ms keeps them queued for 50 ms, so they are pending when
        # the I/O thread dies at its next poll. (Armed first, the first send's wakeup could
        # let it die before the others were taken: they would be refused, not failed.)
        futures = [producer.send(topic, b"v%d" % i, partition=0) for i in range(5)]
        armed.set()
        for future in futures:
            error = future.exception(5)
            assert isinstance(error, SenderFailedError)
            assert error.__cause__ is boom
        with pytest.raises(SenderFailedError) as raised:
            producer.send(topic, b"after")
        assert raised.value.__cause__ is boom
        with pytest.raises(SenderFailedError):
            producer.flush()
    finally:
        producer.close()


# ---------------------------------------------------------------------- fork


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_gets_a_named_error_and_the_parent_goes_on(
    broker: LocalBroker, topic: str
) -> None:
    producer = producer_for(broker)
    try:
        warmed_up(producer, topic)
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: report, never return into pytest
            outcome = b"no error"
            try:
                try:
                    producer.send(topic, b"from the child")
                except ProducerForkedError as error:
                    outcome = b"send:" + str(error).encode()
                try:
                    producer.flush()
                except ProducerForkedError:
                    outcome += b"|flush"
                producer.close()  # only marks the child's copy closed
                outcome += b"|closed"
            finally:
                os.write(write_end, outcome)
                os._exit(0)
        os.close(write_end)
        _, status = os.waitpid(pid, 0)
        with os.fdopen(read_end, "rb") as pipe:
            outcome = pipe.read()
        assert os.waitstatus_to_exitcode(status) == 0
        assert outcome.startswith(b"send:this producer was started in process")
        assert b"Create the producer in the child process" in outcome
        assert outcome.endswith(b"|flush|closed")
        # The parent's producer is untouched by the child's close().
        assert producer.send(topic, b"parent", partition=0).get(10).offset == 1
    finally:
        producer.close()
