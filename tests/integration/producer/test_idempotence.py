"""The idempotent producer against the real broker: batches carry the producer id, epoch and
consecutive base sequences, records read back exactly once and in order, idempotence off sends
no producer state, and a broker restart mid-stream (durable S3 storage).

Tansu 0.6's idempotence defect (see DESIGN.md): killed mid-stream, it can store a producer's
sequence without the batch, then answer DUPLICATE_SEQUENCE_NUMBER to the retry; the producer
takes that answer as "already written" (as Java does), so an acknowledged record is missing.
The restart test checks exactly-once strictly; when records are missing it shows the broker's
answer on the wire (the missing batch produced again, raw, with its producer id, epoch and
sequence: DUPLICATE_SEQUENCE_NUMBER, yet a fetch does not find it) and only then xfails."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator

import pytest

from kafkaline import Producer
from kafkaline.errors import DuplicateSequenceNumberError, ProducerFencedError
from kafkaline.producer.futures import FutureRecordMetadata
from kafkaline.record import RecordBatch, RecordBatchBuilder
from kafkaline.testing import LocalBroker, TopicFactory
from kafkaline.testing.wire import (
    BlockingConnection,
    fetch_partition,
    negotiate_versions,
    produce_batch,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def fetch_log(broker: LocalBroker, topic: str, partitions: int) -> dict[int, list[RecordBatch]]:
    with BlockingConnection(broker.host, broker.port) as conn:
        version = negotiate_versions(conn)[1]
        return {
            partition: fetch_partition(conn, topic, partition, version, max_wait_ms=50)
            for partition in range(partitions)
        }


def values_of(batches: list[RecordBatch]) -> list[bytes | None]:
    return [record.value for batch in batches for record in batch.records]


def test_batches_carry_the_producer_id_and_consecutive_sequences(
    broker: LocalBroker, make_topic: TopicFactory
) -> None:
    topic = make_topic(partitions=2)
    sent: dict[int, list[bytes]] = {0: [], 1: []}
    with Producer(
        bootstrap_servers=broker.bootstrap_servers, linger_ms=2, batch_size=512
    ) as producer:
        assert producer.config.idempotent
        futures = []
        for i in range(400):
            value = b"record-%04d" % i
            sent[i % 2].append(value)
            futures.append(producer.send(topic, value, partition=i % 2))
        producer.flush(30)
        assert all(future.get(0).offset >= 0 for future in futures)
    log = fetch_log(broker, topic, 2)
    producer_ids = set()
    for partition, batches in log.items():
        assert len(batches) > 3, "small batches: several per partition"
        expected_sequence = 0
        for batch in batches:
            producer_ids.add((batch.producer_id, batch.producer_epoch))
            assert batch.base_sequence == expected_sequence
            expected_sequence += len(batch.records)
        # Exactly once, in order.
        assert values_of(batches) == sent[partition]
    (identity,) = producer_ids
    assert identity[0] >= 0 and identity[1] >= 0


def test_without_idempotence_batches_carry_no_producer_state(
    broker: LocalBroker, make_topic: TopicFactory
) -> None:
    topic = make_topic(partitions=1)
    with Producer(
        bootstrap_servers=broker.bootstrap_servers, enable_idempotence=False, linger_ms=0
    ) as producer:
        assert not producer.config.idempotent
        for i in range(20):
            producer.send(topic, b"%d" % i, partition=0)
        producer.flush(30)
    batches = fetch_log(broker, topic, 1)[0]
    assert values_of(batches) == [b"%d" % i for i in range(20)]
    assert {(b.producer_id, b.producer_epoch, b.base_sequence) for b in batches} == {(-1, -1, -1)}


def test_after_a_fatal_error_send_raises_it(broker: LocalBroker, make_topic: TopicFactory) -> None:
    topic = make_topic(partitions=1)
    with Producer(bootstrap_servers=broker.bootstrap_servers, linger_ms=0) as producer:
        producer.send(topic, b"before", partition=0).get(10)
        transactions = producer._transactions  # what the Sender calls when fenced
        assert transactions is not None
        fenced = ProducerFencedError(f"producing to {topic}-0 (fatal: fenced)")
        transactions.transition_to_fatal(fenced)
        with pytest.raises(ProducerFencedError, match="fatal") as refused:
            producer.send(topic, b"after", partition=0)
        assert refused.value.__cause__ is fenced


def test_a_broker_that_lost_the_producer_state_gets_sequences_from_zero(
    broker: LocalBroker, make_topic: TopicFactory, caplog: pytest.LogCaptureFixture
) -> None:
    # A memory broker forgets everything on restart: the next batch (sequence 5) is answered
    # UNKNOWN_PRODUCER_ID, the producer asks for a new epoch (Tansu refuses the KIP-360 form
    # and a fresh id is taken), and the batch is renumbered from 0 and written once.
    topic = make_topic(partitions=1)
    with Producer(
        bootstrap_servers=broker.bootstrap_servers, linger_ms=0, retry_backoff_ms=50
    ) as producer:
        for i in range(5):
            producer.send(topic, b"before-%d" % i, partition=0).get(10)
        broker.restart()
        with caplog.at_level("INFO", logger="kafkaline.producer"):
            futures = [producer.send(topic, b"after-%d" % i, partition=0) for i in range(5)]
            producer.flush(30)
        assert all(future.get(0).offset >= 0 for future in futures)
    assert "UNKNOWN_PRODUCER_ID" in caplog.text
    batches = fetch_log(broker, topic, 1)[0]
    assert values_of(batches) == [b"after-%d" % i for i in range(5)]
    assert batches[0].base_sequence == 0
    expected_sequence = 0
    for batch in batches:
        assert batch.base_sequence == expected_sequence
        expected_sequence += len(batch.records)


@pytest.fixture(scope="module")
def durable_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalBroker]:
    """A broker on S3 storage (a local moto server), so records survive a restart."""
    with LocalBroker(storage="s3", log_dir=tmp_path_factory.mktemp("s3-broker")) as durable:
        yield durable


def test_exactly_once_in_order_across_a_broker_restart(durable_broker: LocalBroker) -> None:
    topic = f"idempotent-restart-{os.getpid()}-{time.monotonic_ns()}"
    durable_broker.create_topic(topic, partitions=2)
    sent: dict[int, list[bytes]] = {0: [], 1: []}
    futures: dict[bytes, FutureRecordMetadata] = {}
    stop = threading.Event()
    with Producer(
        bootstrap_servers=durable_broker.bootstrap_servers,
        linger_ms=5,
        request_timeout_ms=2000,
        delivery_timeout_ms=30_000,
        max_block_ms=10_000,
        retry_backoff_ms=50,
    ) as producer:
        producer.send(topic, b"warm-up", partition=0).get(10)
        sent[0].append(b"warm-up")

        def keep_sending() -> None:
            i = 0
            while not stop.is_set():
                value = b"r%d" % i
                sent[i % 2].append(value)
                futures[value] = producer.send(topic, value, partition=i % 2)
                i += 1
                time.sleep(0.0005)

        thread = threading.Thread(target=keep_sending)
        thread.start()
        try:
            time.sleep(0.3)
            durable_broker.restart()  # mid-stream: connections drop, requests in flight fail
            time.sleep(0.3)
        finally:
            stop.set()
            thread.join()
        producer.flush(30)
        # Every record acknowledged (-1: the broker answered DUPLICATE_SEQUENCE_NUMBER).
        offsets = {value: future.get(0).offset for value, future in futures.items()}
    log = fetch_log(durable_broker, topic, 2)
    missing: dict[int, list[bytes]] = {}
    for partition in (0, 1):
        logged = values_of(log[partition])
        assert len(logged) == len(set(logged)), f"duplicates in partition {partition}"
        missing[partition] = [v for v in sent[partition] if v not in set(logged)]
        # In order: the records that are there keep the order they were sent in.
        assert logged == [v for v in sent[partition] if v in set(logged)]
        identities = {(b.producer_id, b.producer_epoch) for b in log[partition]}
        assert all(pid >= 0 for pid, _ in identities)
    if not any(missing.values()):
        return
    # Records were lost: every one of them must have been answered DUPLICATE_SEQUENCE_NUMBER
    # (offset -1), or the loss is ours.
    lost = [value for values in missing.values() for value in values]
    assert all(offsets[value] == -1 for value in lost), "acknowledged with an offset, yet lost"
    evidence = _duplicate_answer_on_the_wire(durable_broker, topic, log, sent, missing)
    pytest.xfail(
        "Tansu 0.6 defect (DESIGN.md): after a restart mid-stream it answered "
        f"DUPLICATE_SEQUENCE_NUMBER for {len(lost)} record(s) it never stored; {evidence}"
    )


def _duplicate_answer_on_the_wire(
    broker: LocalBroker,
    topic: str,
    log: dict[int, list[RecordBatch]],
    sent: dict[int, list[bytes]],
    missing: dict[int, list[bytes]],
) -> str:
    """Produce the first missing record again, raw, as the producer sent it (same producer
    id, epoch and sequence: its index among the partition's records, as no epoch bump
    happened), and show the broker's answer and that a fetch still does not find it."""
    partition = next(p for p, values in missing.items() if values)
    value = missing[partition][0]
    identities = {(b.producer_id, b.producer_epoch) for b in log[partition]}
    assert len(identities) == 1, f"the producer changed id/epoch: {identities}"
    ((producer_id, epoch),) = identities
    sequence = sent[partition].index(value)
    # The log holds no batch with that sequence: the broker's "duplicate" has no original.
    assert not any(
        b.base_sequence <= sequence < b.base_sequence + len(b.records) for b in log[partition]
    )
    builder = RecordBatchBuilder(producer_id=producer_id, producer_epoch=epoch)
    builder.set_producer_state(producer_id, epoch, sequence)
    builder.append(int(time.time() * 1000), None, value)
    with BlockingConnection(broker.host, broker.port) as conn:
        version = negotiate_versions(conn)[0]
        with pytest.raises(DuplicateSequenceNumberError):
            produce_batch(conn, topic, partition, builder.build(), version)
    again = values_of(fetch_log(broker, topic, 2)[partition])
    assert value not in again
    return (
        f"a raw Produce of {value!r} to {topic}-{partition} with producer id {producer_id}, "
        f"epoch {epoch}, sequence {sequence} got DUPLICATE_SEQUENCE_NUMBER and a fetch of "
        f"{len(again)} records still does not find it"
    )
