"""Broker crashes with durable storage (issue 8's "faults survived" 3). The broker keeps its log
on S3 (a local moto server, LocalBroker(storage="s3")), so records survive a SIGKILL; it is
killed and restarted three times while 100,000 keyed records are sent, then the log is read
back straight from the broker and compared with what every future said.

- Idempotence off (at-least-once): no acknowledged record may be missing; duplicates (a request
  the broker stored before it died, sent again) are counted and printed.
- Idempotence on: no duplicates, per-partition order kept, and every acknowledged record in the
  log, with one exception this broker causes: Tansu 0.6 stores a producer's sequence before
  the batch, so a batch cut off by the kill can be answered DUPLICATE_SEQUENCE_NUMBER on retry
  without being in the log (DESIGN.md). The producer takes that answer as "already written" (as
  Java does) and completes the record with offset -1. A missing record is excused only when
  (a) its future says offset -1, and (b) the broker, asked again on the wire with the record's
  producer id, epoch and sequence, answers DUPLICATE_SEQUENCE_NUMBER while a fetch still does not
  find it. Only then does the test xfail, naming the broker's defect and the count.
- Kills between bursts (every record flushed before the kill) lose nothing either way.
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from kafkaline import Producer
from kafkaline.errors import DuplicateSequenceNumberError, KafkaError
from kafkaline.producer.futures import FutureRecordMetadata
from kafkaline.record import RecordBatch, RecordBatchBuilder
from kafkaline.testing import LocalBroker
from kafkaline.testing.wire import (
    BlockingConnection,
    fetch_partition,
    negotiate_versions,
    produce_batch,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

PARTITIONS = 6
KEYS = 500
COUNT = 100_000
KILLS = 3


@pytest.fixture(scope="module")
def durable_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalBroker]:
    """A broker on S3 storage, for this module alone: it is killed on purpose."""
    with LocalBroker(storage="s3", log_dir=tmp_path_factory.mktemp("crash-broker")) as broker:
        yield broker


def key_of(index: int) -> bytes:
    return b"key-%03d" % (index % KEYS)


def value_of(index: int) -> bytes:
    return b"%07d" % index


# How long the broker may take to answer one fetch. On S3 storage under machine load it takes
# longer than a short wait to read a batch back, and answers empty at the wait's end, again and
# again: with a wait this long it answers as soon as the batch is read (min_bytes=1).
FETCH_MAX_WAIT_MS = 5000


def fetch_topic(broker: LocalBroker, topic: str) -> dict[int, list[RecordBatch]]:
    with BlockingConnection(broker.host, broker.port, timeout=30) as conn:
        version = negotiate_versions(conn)[1]
        return {
            partition: fetch_partition(
                conn, topic, partition, version, max_wait_ms=FETCH_MAX_WAIT_MS, timeout=60
            )
            for partition in range(PARTITIONS)
        }


@dataclass(frozen=True)
class Place:
    """Where a record is in the log, and the producer identity its batch carries."""

    partition: int
    offset: int
    producer_id: int
    epoch: int
    sequence: int  # -1 without idempotence


@dataclass
class Outcome:
    sent: int
    acked: dict[int, tuple[int, int]]  # index -> (partition, offset) from the future
    failed: dict[int, BaseException]
    places: dict[int, list[Place]]  # index -> where the log holds it (more than one: dup)
    sent_order: dict[int, list[int]]  # partition -> indices acknowledged there, in send order
    lost: list[int]
    duplicates: int
    reordered: int
    wrong_place: list[int]
    seconds: float


def tally(
    futures: list[FutureRecordMetadata], log: dict[int, list[RecordBatch]], seconds: float
) -> Outcome:
    places: dict[int, list[Place]] = collections.defaultdict(list)
    reordered = 0
    for partition, batches in log.items():
        previous = -1
        for batch in batches:
            for position, record in enumerate(batch.records):
                if record.value is None or not record.value.isdigit():
                    continue  # the warm-up record
                index = int(record.value)
                assert record.key == key_of(index), f"record {index} has key {record.key!r}"
                sequence = batch.base_sequence + position if batch.base_sequence >= 0 else -1
                first = index not in places
                places[index].append(
                    Place(
                        partition,
                        record.offset,
                        batch.producer_id,
                        batch.producer_epoch,
                        sequence,
                    )
                )
                if first:
                    reordered += index < previous  # one thread sent in index order
                    previous = max(previous, index)
    acked: dict[int, tuple[int, int]] = {}
    failed: dict[int, BaseException] = {}
    sent_order: dict[int, list[int]] = collections.defaultdict(list)
    for index, future in enumerate(futures):
        error = future.exception(0)
        if error is None:
            metadata = future.get(0)
            acked[index] = (metadata.partition, metadata.offset)
            sent_order[metadata.partition].append(index)
        else:
            failed[index] = error
    wrong_place = [
        index
        for index, (partition, offset) in acked.items()
        if index in places
        and offset >= 0  # -1: acknowledged by DUPLICATE_SEQUENCE_NUMBER, no offset given
        and (partition, offset) not in {(p.partition, p.offset) for p in places[index]}
    ]
    return Outcome(
        sent=len(futures),
        acked=acked,
        failed=failed,
        places=places,
        sent_order=sent_order,
        lost=sorted(index for index in acked if index not in places),
        duplicates=sum(len(p) - 1 for p in places.values()),
        reordered=reordered,
        wrong_place=wrong_place,
        seconds=seconds,
    )


def make_producer(broker: LocalBroker, idempotent: bool) -> Producer:
    return Producer(
        bootstrap_servers=broker.bootstrap_servers,
        linger_ms=5,
        request_timeout_ms=2000,
        delivery_timeout_ms=120_000,
        max_block_ms=60_000,
        retry_backoff_ms=50,
        enable_idempotence=idempotent,
    )


def send_through_crashes(broker: LocalBroker, topic: str, idempotent: bool) -> Outcome:
    """Send COUNT keyed records in paced chunks (~6 s) while the broker is SIGKILLed and
    restarted KILLS times; flush; read the topic back."""
    futures: list[FutureRecordMetadata] = []
    restarts: list[float] = []
    started = time.monotonic()

    def kill_and_restart() -> None:
        for kill in range(KILLS):
            time.sleep(1.2 if kill == 0 else 1.5)
            began = time.monotonic()
            broker.restart()  # SIGKILL, wait for the exit, start on the same port and S3
            restarts.append(time.monotonic() - began)

    with make_producer(broker, idempotent) as producer:
        producer.send(topic, b"warm-up", key=b"warm-up").get(10)
        killer = threading.Thread(target=kill_and_restart)
        killer.start()
        chunks = 100
        for chunk in range(chunks):
            for index in range(chunk * COUNT // chunks, (chunk + 1) * COUNT // chunks):
                futures.append(producer.send(topic, value_of(index), key=key_of(index)))
            time.sleep(0.06)
        killer.join()
        producer.flush(120)
        pending = [index for index, future in enumerate(futures) if not future.done()]
        assert pending == [], f"{len(pending)} futures still pending after flush()"
    assert len(restarts) == KILLS
    return tally(futures, fetch_topic(broker, topic), time.monotonic() - started)


def report(name: str, outcome: Outcome, capsys: pytest.CaptureFixture[str]) -> None:
    errors = collections.Counter(type(error).__name__ for error in outcome.failed.values())
    by_duplicate_answer = sum(1 for _, offset in outcome.acked.values() if offset == -1)
    with capsys.disabled():
        print(
            f"\n[{name}] sent {outcome.sent}, broker SIGKILLed and restarted {KILLS} times, "
            f"acknowledged {len(outcome.acked)} ({by_duplicate_answer} by "
            f"DUPLICATE_SEQUENCE_NUMBER), failed {len(outcome.failed)} {dict(errors)}, "
            f"lost {len(outcome.lost)}, duplicates {outcome.duplicates}, reordered "
            f"{outcome.reordered}, in {outcome.seconds:.1f} s"
        )


def new_topic(broker: LocalBroker, name: str) -> str:
    topic = f"{name}-{time.monotonic_ns()}"
    broker.create_topic(topic, partitions=PARTITIONS)
    return topic


# --------------------------------------------------------------------------- mid-stream kills


def test_without_idempotence_crashes_lose_no_acknowledged_record(
    durable_broker: LocalBroker, capsys: pytest.CaptureFixture[str]
) -> None:
    topic = new_topic(durable_broker, "crash-at-least-once")
    outcome = send_through_crashes(durable_broker, topic, idempotent=False)
    report("crashes, idempotence off", outcome, capsys)
    assert all(isinstance(error, KafkaError) for error in outcome.failed.values())
    assert outcome.lost == [], "at-least-once: an acknowledged record is missing"
    assert outcome.wrong_place == [], "a future reported an offset the record is not at"
    # Without idempotence no acknowledgement says -1.
    assert all(offset >= 0 for _, offset in outcome.acked.values())


def test_with_idempotence_crashes_write_each_acknowledged_record_once_or_the_broker_lies(
    durable_broker: LocalBroker, capsys: pytest.CaptureFixture[str]
) -> None:
    topic = new_topic(durable_broker, "crash-idempotent")
    outcome = send_through_crashes(durable_broker, topic, idempotent=True)
    report("crashes, idempotence on", outcome, capsys)
    assert all(isinstance(error, KafkaError) for error in outcome.failed.values())
    assert outcome.duplicates == 0, "idempotence on: no record may be written twice"
    assert outcome.reordered == 0, "idempotence on: per-partition order is the send order"
    assert outcome.wrong_place == [], "a future reported an offset the record is not at"
    if not outcome.lost:
        return
    # Our side, strictly: every missing acknowledged record was acknowledged by the broker's
    # DUPLICATE_SEQUENCE_NUMBER answer (offset -1); one acknowledged with an offset is ours.
    with_offset = [index for index in outcome.lost if outcome.acked[index][1] != -1]
    assert with_offset == [], f"acknowledged with an offset, yet not in the log: {with_offset}"
    proven = [
        prove_duplicate_answer(durable_broker, topic, outcome, index) for index in outcome.lost
    ]
    # The raw produce replays added nothing: the log still lacks every one of them.
    after = tally([], fetch_topic(durable_broker, topic), 0.0)
    assert not any(index in after.places for index in outcome.lost)
    with capsys.disabled():
        print(f"[crashes, idempotence on] the wire, first of {len(proven)}: {proven[0]}")
    pytest.xfail(
        f"Tansu 0.6 defect (DESIGN.md): after SIGKILL it answered DUPLICATE_SEQUENCE_NUMBER "
        f"for {len(outcome.lost)} of {len(outcome.acked)} acknowledged records it never "
        f"stored; each one produced again raw with its producer id, epoch and sequence got "
        f"DUPLICATE_SEQUENCE_NUMBER and is still not in the log. First: {proven[0]}"
    )


def prove_duplicate_answer(broker: LocalBroker, topic: str, outcome: Outcome, index: int) -> str:
    """Find the producer id, epoch and sequence record ``index`` was sent with, produce it
    again raw with them, and require DUPLICATE_SEQUENCE_NUMBER; return what was shown.

    Sequences within one producer id and epoch are consecutive per partition in send order,
    so a missing record's sequence follows from the nearest acknowledged records sent before
    and after it to the same partition that the log does hold: both must carry the same id
    and epoch, and their sequences must differ by exactly their distance in send order."""
    partition = outcome.acked[index][0]
    order = outcome.sent_order[partition]
    position = order.index(index)
    before = next(
        (i for i in reversed(order[:position]) if i in outcome.places), None
    )  # nearest earlier one in the log
    after = next((i for i in order[position + 1 :] if i in outcome.places), None)
    assert before is not None and after is not None, (
        f"record {index}: no logged neighbour on both sides in {topic}-{partition}; cannot "
        "tell its sequence, so the loss is unexplained"
    )
    first, last = outcome.places[before][0], outcome.places[after][0]
    assert (first.producer_id, first.epoch) == (last.producer_id, last.epoch), (
        f"record {index}: the producer changed id/epoch around it "
        f"({first.producer_id}/{first.epoch} -> {last.producer_id}/{last.epoch}); unexplained"
    )
    distance = order.index(after) - order.index(before)
    assert last.sequence - first.sequence == distance, (
        f"record {index}: sequences {first.sequence}..{last.sequence} over {distance} records"
    )
    sequence = first.sequence + (position - order.index(before))
    builder = RecordBatchBuilder(producer_id=first.producer_id, producer_epoch=first.epoch)
    builder.set_producer_state(first.producer_id, first.epoch, sequence)
    builder.append(int(time.time() * 1000), key_of(index), value_of(index))
    with BlockingConnection(broker.host, broker.port) as conn:
        version = negotiate_versions(conn)[0]
        with pytest.raises(DuplicateSequenceNumberError) as answer:
            produce_batch(conn, topic, partition, builder.build(), version)
    return (
        f"record {index} to {topic}-{partition} with producer id {first.producer_id}, epoch "
        f"{first.epoch}, sequence {sequence} -> {answer.value}"
    )


# --------------------------------------------------------------------------- kills between bursts


@pytest.mark.parametrize("idempotent", [False, True], ids=["idempotence-off", "idempotence-on"])
def test_kills_between_flushed_bursts_lose_nothing(
    durable_broker: LocalBroker, idempotent: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    topic = new_topic(durable_broker, "crash-between-bursts")
    bursts = KILLS + 1
    per_burst = 10_000
    futures: list[FutureRecordMetadata] = []
    started = time.monotonic()
    with make_producer(durable_broker, idempotent) as producer:
        for burst in range(bursts):
            for index in range(burst * per_burst, (burst + 1) * per_burst):
                futures.append(producer.send(topic, value_of(index), key=key_of(index)))
            producer.flush(60)
            if burst < bursts - 1:
                durable_broker.restart()  # SIGKILL with nothing in flight
    outcome = tally(futures, fetch_topic(durable_broker, topic), time.monotonic() - started)
    name = f"kills between bursts, idempotence {'on' if idempotent else 'off'}"
    report(name, outcome, capsys)
    assert outcome.failed == {}
    assert len(outcome.acked) == bursts * per_burst
    assert outcome.lost == []
    assert outcome.duplicates == 0
    assert outcome.reordered == 0
    assert outcome.wrong_place == []
