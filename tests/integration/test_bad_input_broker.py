"""Bad input that needs a broker to be found out (the rest of the catalogue is
tests/unit/test_bad_input_catalogue.py): a partition the topic does not have, a topic that does
not exist, and calls made from inside a delivery callback, which runs on the producer's I/O
thread: flush() there would wait for itself, so it must raise a named error at once rather than
deadlock; a callback that raises must not stop the I/O thread."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import pyarrow as pa  # type: ignore[import-untyped]  # pyarrow ships no type information
import pytest

from kafkaline import FutureRecordMetadata, Producer, RecordMetadata
from kafkaline.errors import (
    BufferExhaustedError,
    IllegalStateError,
    InvalidPartitionError,
    InvalidRecordTimestampError,
    KafkaTimeoutError,
    ProducerClosedError,
)
from kafkaline.testing import LocalBroker, TopicFactory

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]


@dataclass(frozen=True)
class BrokerCase:
    id: str
    call: Callable[[Producer, str], object]  # (producer, a topic with 3 partitions)
    error: type[BaseException]
    says: tuple[str, ...]


BROKER_CASES = [
    BrokerCase(
        "partition-out-of-range",
        lambda p, topic: p.send(topic, b"v", partition=3),
        InvalidPartitionError,
        ("partition 3", "which has 3 partitions (0-2)"),
    ),
    BrokerCase(
        "partition-far-out-of-range",
        lambda p, topic: p.send(topic, b"v", partition=2**31),
        InvalidPartitionError,
        ("partition 2147483648", "3 partitions"),
    ),
    BrokerCase(
        "send-batch-partition-out-of-range",
        lambda p, topic: p.send_batch(topic, [b"a", b"b"], partition=7),
        InvalidPartitionError,
        ("7", "3 partitions"),
    ),
    BrokerCase(
        "send-arrow-negative-timestamp",
        lambda p, topic: p.send_arrow(
            topic, pa.record_batch({"value": [b"a", b"b"], "ts": [1, -1]}), key=None, timestamp="ts"
        ),
        InvalidRecordTimestampError,
        ("row 1 of column 'ts'", "-1 ms"),
    ),
    BrokerCase(
        "send-arrow-partition-out-of-range",
        lambda p, topic: p.send_arrow(
            topic,
            pa.record_batch({"value": [b"a"], "p": pa.array([5], pa.int32())}),
            key=None,
            partition="p",
        ),
        InvalidPartitionError,
        ("partition 5 given by row 0 of column 'p'", "3 partitions (0-2)"),
    ),
    BrokerCase(
        "topic-that-does-not-exist",
        lambda p, topic: p.send(f"{topic}-missing", b"v"),
        KafkaTimeoutError,
        ("-missing'", "not present in metadata after 500 ms"),
    ),
]


@pytest.mark.parametrize("case", BROKER_CASES, ids=[case.id for case in BROKER_CASES])
def test_bad_input_found_out_with_the_broker_is_refused_with_a_named_error(
    case: BrokerCase, broker: LocalBroker, topic: str
) -> None:
    with Producer(bootstrap_servers=broker.bootstrap_servers, max_block_ms=500) as producer:
        producer.send(topic, b"warm-up").get(10)  # metadata for the topic is known
        with pytest.raises(case.error) as raised:
            case.call(producer, topic)
        for fragment in case.says:
            assert fragment in str(raised.value), f"{fragment!r} not in {raised.value}"
        # Refused before anything was queued: the producer goes on.
        assert producer.send(topic, b"after").get(10).offset >= 0


def test_flush_from_a_delivery_callback_raises_at_once_instead_of_deadlocking(
    broker: LocalBroker, topic: str
) -> None:
    outcome: dict[str, object] = {}
    called = threading.Event()
    with Producer(bootstrap_servers=broker.bootstrap_servers) as producer:

        def flush_inside(_: RecordMetadata) -> None:
            started = time.monotonic()
            try:
                producer.flush(5)
            except Exception as error:  # what the user's callback would see
                outcome["error"] = error
            outcome["seconds"] = time.monotonic() - started
            outcome["thread"] = threading.current_thread().name
            called.set()

        producer.send(topic, b"v").add_callback(flush_inside)
        assert called.wait(10), "the callback never ran"
        producer.flush(10)  # from the user's thread: fine
        # The I/O thread is alive and well afterwards.
        assert producer.send(topic, b"next").get(10).offset >= 0
    error = outcome.get("error")
    assert isinstance(error, IllegalStateError), outcome
    assert "flush() was called from a callback on the producer's I/O thread" in str(error)
    assert "wait for itself" in str(error)
    assert isinstance(outcome["seconds"], float) and outcome["seconds"] < 0.1


def test_a_callback_that_raises_does_not_stop_the_producer(
    broker: LocalBroker, topic: str, caplog: pytest.LogCaptureFixture
) -> None:
    def explode(_: RecordMetadata) -> None:
        raise RuntimeError("callback exploded")

    with (
        caplog.at_level("ERROR", logger="kafkaline"),
        Producer(bootstrap_servers=broker.bootstrap_servers) as producer,
    ):
        first = producer.send(topic, b"v").add_callback(explode)
        first.get(10)
        time.sleep(0.1)
        futures = [producer.send(topic, b"%d" % i) for i in range(100)]
        producer.flush(10)
        assert all(future.get(0).offset >= 0 for future in futures)
    assert "callback exploded" in caplog.text


def test_send_and_close_from_a_delivery_callback_do_not_deadlock(
    broker: LocalBroker, topic: str
) -> None:
    # send() from a callback queues (Java allows it); close() there cannot wait for the I/O
    # thread it runs on, so it closes forcefully, and returns at once.
    results: dict[str, object] = {}
    done = threading.Event()
    producer = Producer(bootstrap_servers=broker.bootstrap_servers)

    def chain(_: RecordMetadata) -> None:
        results["chained"] = producer.send(topic, b"chained")
        started = time.monotonic()
        producer.close(5)
        results["close_seconds"] = time.monotonic() - started
        done.set()

    try:
        producer.send(topic, b"first").add_callback(chain)
        assert done.wait(10), "the callback never finished"
    finally:
        producer.close(0)
    assert isinstance(results["close_seconds"], float) and results["close_seconds"] < 1.0
    chained = results["chained"]
    assert hasattr(chained, "exception")
    # Forcefully closed before it was sent, or sent before the close: either way it is done.
    deadline = time.monotonic() + 5
    while not chained.done() and time.monotonic() < deadline:  # type: ignore[attr-defined]
        time.sleep(0.01)
    assert chained.done()  # type: ignore[attr-defined]


def test_catalogue_size(capsys: pytest.CaptureFixture[str]) -> None:
    # The parametrised cases plus the three callback tests above.
    with capsys.disabled():
        print(f"\n[bad input] {len(BROKER_CASES) + 3} cases against the broker")


def test_get_from_a_delivery_callback_on_a_pending_record_raises_at_once(
    broker: LocalBroker, topic: str
) -> None:
    # Issue 16, item 4: the record is sent by the thread the callback runs on, so get() there
    # would wait for ever (and close() after it too); it must fail at once with a named error.
    outcome: dict[str, object] = {}
    called = threading.Event()
    with Producer(bootstrap_servers=broker.bootstrap_servers) as producer:

        def get_inside(_: RecordMetadata) -> None:
            pending = producer.send(topic, b"sent from the callback")
            started = time.monotonic()
            for timeout in (None, 5.0):
                try:
                    pending.get(timeout)
                except Exception as error:  # what the user's callback would see
                    outcome[f"error-{timeout}"] = error
            outcome["seconds"] = time.monotonic() - started
            outcome["pending"] = pending
            called.set()

        producer.send(topic, b"v").add_callback(get_inside)
        assert called.wait(10), "the callback never ran"
        producer.flush(10)
        # The I/O thread is alive and well afterwards, and the record was sent.
        assert producer.send(topic, b"next").get(10).offset >= 0
        pending = outcome["pending"]
        assert isinstance(pending, FutureRecordMetadata)
        assert pending.get(10).offset >= 0
    for timeout in (None, 5.0):
        error = outcome.get(f"error-{timeout}")
        assert isinstance(error, IllegalStateError), outcome
        assert f"a record sent to {topic}-" in str(error)
        assert "from a callback on the producer's I/O thread" in str(error)
        assert "wait for itself" in str(error)
    assert isinstance(outcome["seconds"], float) and outcome["seconds"] < 0.1


def test_close_with_a_timeout_returns_while_a_callback_blocks(
    broker: LocalBroker, topic: str
) -> None:
    # Issue 16, item 4: close(timeout) aborts what is left when the timeout runs out and
    # returns soon after, even if a callback never returns (it used to join the I/O thread
    # without bound).
    release = threading.Event()
    blocking = threading.Event()
    producer = Producer(bootstrap_servers=broker.bootstrap_servers)

    def block(_: RecordMetadata) -> None:
        blocking.set()
        release.wait(30)

    closed_after: list[float] = []

    def close_in_thread() -> None:
        started = time.monotonic()
        producer.close(1)
        closed_after.append(time.monotonic() - started)

    try:
        producer.send(topic, b"v").add_callback(block)
        assert blocking.wait(10), "the callback never ran"
        later = producer.send(topic, b"stuck behind the callback")
        closer = threading.Thread(target=close_in_thread)
        closer.start()
        closer.join(5)
        assert not closer.is_alive(), "close(1) did not return within 5 s"
        assert closed_after and 0.9 <= closed_after[0] < 2.0, closed_after
    finally:
        release.set()
        producer.close(5)
    # The record queued behind the blocked callback completes once the thread goes on.
    assert isinstance(later.exception(10), ProducerClosedError)


def test_callbacks_needing_metadata_or_memory_fail_at_once(
    broker: LocalBroker, topic: str, make_topic: TopicFactory
) -> None:
    # Issue 16, item 5: a callback runs on the I/O thread, which is the thread that fetches
    # metadata and frees memory: send() to a topic not used yet, partitions_for() of one, and
    # send() with buffer_memory used up fail at once there, saying why (they used to stall
    # every delivery for max_block_ms, then blame a topic that exists).
    new_topic, other_new_topic = make_topic(), make_topic()
    outcome: dict[str, object] = {}
    called = threading.Event()

    def attempt(name: str, call: Callable[[], object]) -> None:
        started = time.monotonic()
        try:
            call()
        except Exception as error:  # what the user's callback would see
            outcome[name] = error
        outcome[f"{name}-seconds"] = time.monotonic() - started

    with Producer(
        bootstrap_servers=broker.bootstrap_servers,
        buffer_memory=64 * 1024,
        batch_size=16 * 1024,
        max_block_ms=30_000,
    ) as producer:

        def inside(_: RecordMetadata) -> None:
            attempt("send-new-topic", lambda: producer.send(new_topic, b"v"))
            attempt("partitions-for", lambda: producer.partitions_for(other_new_topic))

            def fill() -> None:
                for i in range(100):  # 1 MB into 64 KiB: nothing leaves while we are here
                    producer.send(topic, b"x" * 10_000, partition=i % 3)

            attempt("buffer-full", fill)
            called.set()

        producer.send(topic, b"v").add_callback(inside)
        assert called.wait(20), "the callback never ran"
        producer.flush(30)
        # Outside callbacks the same calls work: the topics exist.
        assert len(producer.partitions_for(other_new_topic)) == 3
        assert producer.send(new_topic, b"v").get(10).offset >= 0
    for name, kind, says in [
        ("send-new-topic", IllegalStateError, f"partitions of topic {new_topic!r}"),
        ("partitions-for", IllegalStateError, f"partitions of topic {other_new_topic!r}"),
        ("buffer-full", BufferExhaustedError, "buffer_memory=65536 bytes are used up"),
    ]:
        error = outcome.get(name)
        assert isinstance(error, kind), (name, outcome)
        assert says in str(error)
        assert "callback on the producer's I/O thread" in str(error)
        seconds = outcome[f"{name}-seconds"]
        assert isinstance(seconds, float) and seconds < 1.0, (name, seconds)
