"""Producer without a broker: construction, argument checks with named errors (raised before
any network wait), lifecycle (no thread before the first send, close semantics), and the
docstring examples of the send path's modules. Against a real broker:
tests/integration/producer/."""

from __future__ import annotations

import doctest
import socket
import threading
import time
from collections.abc import Iterator

import pytest

import kafkaline.producer.validation
from kafkaline import Producer, ProducerConfig, StringSerializer
from kafkaline.errors import (
    ConfigError,
    InvalidPartitionError,
    InvalidRecordTimestampError,
    InvalidTopicNameError,
    KafkaTimeoutError,
    ProducerClosedError,
    RecordTooLargeError,
)


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@pytest.fixture
def producer() -> Iterator[Producer]:
    """A producer whose bootstrap server refuses connections."""
    with_nobody = Producer(bootstrap_servers=f"127.0.0.1:{closed_port()}", max_block_ms=300)
    yield with_nobody
    with_nobody.close(0)


def sender_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("kafkaline-producer")]


def test_docstring_examples() -> None:
    results = doctest.testmod(kafkaline.producer.validation)
    assert results.attempted > 0 and results.failed == 0


def test_config_as_keywords_object_or_properties() -> None:
    assert Producer(bootstrap_servers="h:1", linger_ms=7).config.linger_ms == 7
    config = ProducerConfig(bootstrap_servers=("h:1",))
    assert Producer(config).config is config
    assert Producer(config, linger_ms=9).config.linger_ms == 9
    from_properties = Producer.from_properties({"bootstrap.servers": "h:1", "linger.ms": "11"})
    assert from_properties.config.linger_ms == 11
    with pytest.raises(ConfigError, match="linger_ms"):
        Producer(bootstrap_servers="h:1", lingr_ms=5)
    with pytest.raises(TypeError, match="from_properties"):
        Producer({"bootstrap.servers": "h:1"})  # type: ignore[arg-type]


def test_nothing_runs_before_the_first_send() -> None:
    before = len(sender_threads())
    producer = Producer(bootstrap_servers="h:1")
    assert len(sender_threads()) == before
    assert "not started" in repr(producer)
    producer.flush()  # nothing buffered: returns at once
    producer.close()
    producer.close()  # idempotent
    with pytest.raises(ProducerClosedError):
        producer.send("t", b"v")
    with pytest.raises(ProducerClosedError):
        producer.start()
    assert len(sender_threads()) == before


def test_start_runs_the_thread_and_close_joins_it() -> None:
    before = len(sender_threads())
    producer = Producer(bootstrap_servers=f"127.0.0.1:{closed_port()}", client_id="unit")
    producer.start()
    producer.start()  # idempotent
    names = [t.name for t in sender_threads()]
    assert len(names) == before + 1
    assert "kafkaline-producer-network-thread | unit" in names
    producer.close()
    assert len(sender_threads()) == before


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"timestamp_ms": -1}, InvalidRecordTimestampError, "timestamp_ms=-1"),
        ({"timestamp_ms": 1.5}, InvalidRecordTimestampError, "1.5"),
        ({"timestamp_ms": 2**63}, InvalidRecordTimestampError, "timestamp_ms"),
        ({"headers": [("h", "text")]}, TypeError, "header"),
        ({"headers": [(1, b"v")]}, TypeError, "header"),
        ({"headers": "h=v"}, TypeError, "headers must be"),
        ({"value": 42}, TypeError, "value of type int"),
        ({"key": "text"}, TypeError, "key of type str"),
    ],
)
def test_bad_arguments_raise_named_errors_at_once(
    producer: Producer, kwargs: dict[str, object], error: type[Exception], match: str
) -> None:
    arguments: dict[str, object] = {"value": b"v", **kwargs}
    started = time.monotonic()
    with pytest.raises(error, match=match):
        producer.send("events", **arguments)  # type: ignore[arg-type]
    assert time.monotonic() - started < 0.2  # before any wait for metadata


@pytest.mark.parametrize("topic", ["", "has space", "x" * 250, "..", "ünïcode"])
def test_bad_topic_names(producer: Producer, topic: str) -> None:
    with pytest.raises(InvalidTopicNameError):
        producer.send(topic, b"v")


def test_record_larger_than_max_request_size_names_size_and_limit() -> None:
    producer = Producer(bootstrap_servers=f"127.0.0.1:{closed_port()}", max_request_size=1000)
    try:
        with pytest.raises(RecordTooLargeError, match=r"\d+ bytes .*max_request_size=1000"):
            producer.send("events", b"x" * 1000)
        with pytest.raises(RecordTooLargeError, match="max_request_size=1000"):
            producer.send("events", b"x" * 400, headers=[("h", b"y" * 600)])
    finally:
        producer.close(0)


def test_record_larger_than_buffer_memory() -> None:
    producer = Producer(
        bootstrap_servers=f"127.0.0.1:{closed_port()}", buffer_memory=2000, batch_size=1000
    )
    try:
        with pytest.raises(RecordTooLargeError, match="buffer_memory=2000"):
            producer.send("events", b"x" * 2000)
    finally:
        producer.close(0)


@pytest.mark.parametrize("partition", [-1, 1.0, "0"])
def test_a_partition_that_is_no_number_fails_before_metadata(
    producer: Producer, partition: object
) -> None:
    with pytest.raises(InvalidPartitionError, match="given by the record"):
        producer.send("events", b"v", partition=partition)  # type: ignore[arg-type]


def test_unreachable_bootstrap_server_fails_within_max_block_ms(producer: Producer) -> None:
    started = time.monotonic()
    with pytest.raises(KafkaTimeoutError, match="not present in metadata after 300 ms"):
        producer.send("events", b"v")
    assert time.monotonic() - started < 2.0


def test_serializers_are_used_and_their_output_checked() -> None:
    producer = Producer(
        bootstrap_servers=f"127.0.0.1:{closed_port()}",
        value_serializer=lambda value: 42,
        key_serializer=StringSerializer(),
        max_block_ms=100,
    )
    try:
        with pytest.raises(TypeError, match="returned int"):
            producer.send("events", "value", key="key")
    finally:
        producer.close(0)


def test_metrics_before_start() -> None:
    metrics = Producer(bootstrap_servers="h:1", buffer_memory=4096).metrics()
    assert metrics["buffer-total-bytes"] == 4096.0
    assert metrics["record-send-total"] == 0.0
