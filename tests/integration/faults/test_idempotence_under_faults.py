"""Connection faults between producer and broker (issue 4's "idempotence under connection
faults", issue 8's "faults survived" 1): a FaultProxy sits in front of the broker, which
advertises the proxy's port, so every producer connection goes through it. While keyed records
are sent, the proxy cuts connections mid-request and before the response, delays responses past
request_timeout_ms and stalls reads. Afterwards every future is done, and the log, read back
with our Fetch straight from the broker, is checked record by record.

Idempotence on: every acknowledged record is in the log exactly once, in send order per
partition (so per key), at the offset its future reported. Tansu 0.6's defect (DESIGN.md:
DUPLICATE_SEQUENCE_NUMBER for a batch it never stored) would show up as acknowledged records
missing; the test then proves it on the wire, as tests/integration/producer/test_idempotence.py
does, and only then xfails naming the broker's defect.

Idempotence off (at-least-once): no acknowledged record is lost; duplicates and reorderings are
counted and printed.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from kafkaline import Producer
from kafkaline.errors import DuplicateSequenceNumberError, KafkaError
from kafkaline.producer.futures import FutureRecordMetadata
from kafkaline.record import RecordBatch, RecordBatchBuilder
from kafkaline.testing import LocalBroker
from kafkaline.testing._ports import find_free_port
from kafkaline.testing.fault_proxy import (
    Corruption,
    CorruptResponse,
    Cut,
    CutPoint,
    DelayResponse,
    Fault,
    FaultProxy,
    Stall,
)
from kafkaline.testing.wire import (
    BlockingConnection,
    fetch_partition,
    negotiate_versions,
    produce_batch,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

PARTITIONS = 6
KEYS = 500
REQUEST_TIMEOUT_MS = 1000
# Past request_timeout_ms, so the producer gives up on the request and closes the connection.
LATE = 1.5


@dataclass
class Proxied:
    broker: LocalBroker
    proxy: FaultProxy


@pytest.fixture
def proxied(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proxied]:
    """A broker of the test's own that advertises the port of a FaultProxy in front of it."""
    broker_port = find_free_port()
    with (
        FaultProxy(upstream_port=broker_port) as proxy,
        LocalBroker(
            port=broker_port,
            advertised_port=proxy.port,
            log_dir=tmp_path_factory.mktemp("proxied-broker"),
        ) as broker,
    ):
        yield Proxied(broker, proxy)


@dataclass
class Outcome:
    """What the producer said about each record (by its index) and what the log holds."""

    sent: int
    acked: dict[int, tuple[int, int]]  # index -> (partition, offset) from the future
    failed: dict[int, BaseException]
    log: dict[int, list[tuple[int, int, bytes]]]  # partition -> [(index, offset, key)]
    batches: dict[int, list[RecordBatch]]
    seconds: float
    faults: dict[str, int]


def key_of(index: int) -> bytes:
    return b"key-%03d" % (index % KEYS)


def send_through_faults(
    proxied: Proxied, topic: str, count: int, schedule: list[tuple[float, Fault]], **config: int
) -> Outcome:
    """Send ``count`` keyed records in paced chunks while ``schedule`` runs, flush, then read
    the whole topic back straight from the broker."""
    futures: list[FutureRecordMetadata] = []
    started = time.monotonic()
    with Producer(
        bootstrap_servers=proxied.broker.advertised_bootstrap_servers,
        linger_ms=5,
        request_timeout_ms=REQUEST_TIMEOUT_MS,
        delivery_timeout_ms=60_000,
        max_block_ms=30_000,
        retry_backoff_ms=50,
        **config,
    ) as producer:
        producer.send(topic, b"warm-up", key=b"warm-up").get(10)  # metadata, producer id
        schedule_thread = proxied.proxy.start_schedule(schedule)
        chunks = 100
        for chunk in range(chunks):
            for index in range(chunk * count // chunks, (chunk + 1) * count // chunks):
                futures.append(producer.send(topic, b"%07d" % index, key=key_of(index)))
            time.sleep(0.04)  # spread the sends over the schedule
        schedule_thread.join()
        producer.flush(60)
        # Nothing may be left pending once flush returned: every future is done now.
        pending = [index for index, future in enumerate(futures) if not future.done()]
        assert pending == [], f"{len(pending)} futures still pending, first {pending[:5]}"
        acked: dict[int, tuple[int, int]] = {}
        failed: dict[int, BaseException] = {}
        for index, future in enumerate(futures):
            error = future.exception(0)
            if error is None:
                metadata = future.get(0)
                acked[index] = (metadata.partition, metadata.offset)
            else:
                failed[index] = error
    seconds = time.monotonic() - started
    batches = fetch_topic(proxied.broker, topic)
    log = {
        partition: [
            (int(record.value), record.offset, record.key or b"")
            for batch in partition_batches
            for record in batch.records
            if record.value is not None and record.value != b"warm-up"
        ]
        for partition, partition_batches in batches.items()
    }
    return Outcome(count, acked, failed, log, batches, seconds, proxied.proxy.injected)


def fetch_topic(broker: LocalBroker, topic: str) -> dict[int, list[RecordBatch]]:
    # Straight to the broker's own port: the check must not pass through the faults.
    with BlockingConnection(broker.host, broker.port, timeout=30) as conn:
        version = negotiate_versions(conn)[1]
        return {
            partition: fetch_partition(conn, topic, partition, version, max_wait_ms=50)
            for partition in range(PARTITIONS)
        }


@dataclass
class Tally:
    lost: list[int]
    duplicates: int
    reordered: int
    unknown: list[int]
    wrong_offset: list[int]
    wrong_partition: list[int]
    key_order_broken: list[bytes]


def tally(outcome: Outcome) -> Tally:
    where: dict[int, list[tuple[int, int]]] = collections.defaultdict(list)
    reordered = 0
    last_by_key: dict[bytes, int] = {}
    key_order_broken: set[bytes] = set()
    for partition, entries in outcome.log.items():
        previous = -1
        for index, offset, key in entries:
            first = index not in where
            where[index].append((partition, offset))
            if key != key_of(index):
                key_order_broken.add(key)  # not even the right key: worse than disorder
            if not first:
                continue  # a duplicate: counted as such, not as a reordering
            # One thread sent in index order, so per partition (and per key) indices rise.
            if index < previous:
                reordered += 1
            previous = max(previous, index)
            if last_by_key.get(key, -1) > index:
                key_order_broken.add(key)
            last_by_key[key] = max(last_by_key.get(key, -1), index)
    duplicates = sum(len(places) - 1 for places in where.values())
    wrong_offset, wrong_partition = [], []
    for index, (partition, offset) in outcome.acked.items():
        places = where.get(index, [])
        if places and partition not in {p for p, _ in places}:
            wrong_partition.append(index)
        # -1: acknowledged by a DUPLICATE_SEQUENCE_NUMBER answer, which carries no offset.
        if places and offset >= 0 and (partition, offset) not in places:
            wrong_offset.append(index)
    return Tally(
        lost=sorted(index for index in outcome.acked if index not in where),
        duplicates=duplicates,
        reordered=reordered,
        unknown=sorted(index for index in where if not 0 <= index < outcome.sent),
        wrong_offset=wrong_offset,
        wrong_partition=wrong_partition,
        key_order_broken=sorted(key_order_broken),
    )


def report(name: str, outcome: Outcome, counts: Tally, capsys: pytest.CaptureFixture[str]) -> None:
    errors = collections.Counter(type(error).__name__ for error in outcome.failed.values())
    answered_dup = sum(1 for _, offset in outcome.acked.values() if offset == -1)
    with capsys.disabled():
        print(
            f"\n[{name}] sent {outcome.sent}, acknowledged {len(outcome.acked)}, "
            f"failed {len(outcome.failed)} {dict(errors)} (of the acknowledged, {answered_dup} "
            f"by DUPLICATE_SEQUENCE_NUMBER), faults {outcome.faults}, "
            f"lost {len(counts.lost)}, duplicates {counts.duplicates}, "
            f"reordered {counts.reordered}, in {outcome.seconds:.1f} s"
        )


def fault_schedule() -> list[tuple[float, Fault]]:
    """A handful of each fault, 0.5 s apart, while the sends run (~5 s)."""
    return [
        (0.3, Cut(CutPoint.MID_REQUEST)),
        (0.5, DelayResponse(LATE)),
        (0.5, Cut(CutPoint.BEFORE_RESPONSE)),
        (0.5, Stall(LATE)),
        (0.5, Cut(CutPoint.MID_REQUEST)),
        (0.5, Cut(CutPoint.BEFORE_RESPONSE)),
        (0.5, DelayResponse(LATE)),
        (0.5, Cut(CutPoint.MID_REQUEST)),
        (0.5, Cut(CutPoint.BEFORE_RESPONSE)),
    ]


def test_idempotent_producer_writes_each_acknowledged_record_once_in_order_through_faults(
    proxied: Proxied, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    topic = "idempotence-under-faults"
    proxied.broker.create_topic(topic, partitions=PARTITIONS)
    with caplog.at_level("DEBUG", logger="kafkaline"):
        outcome = send_through_faults(proxied, topic, 100_000, fault_schedule(), acks=-1)
    counts = tally(outcome)
    report("idempotence on", outcome, counts, capsys)

    # The faults happened: every one scheduled met traffic, of every kind.
    assert proxied.proxy.pending == 0
    assert outcome.faults == {
        "cut mid-request": 3,
        "cut before-response": 3,
        "delayed response": 2,
        "stalled reads": 1,
    }
    # The late responses were late for the producer: its request timeout fired.
    assert f"request_timeout_ms={REQUEST_TIMEOUT_MS}" in caplog.text
    # Failures are allowed only as named errors (delivery_timeout_ms is far away, so none
    # are expected; the report shows them).
    assert all(isinstance(error, KafkaError) for error in outcome.failed.values())
    assert counts.unknown == []
    assert counts.duplicates == 0, "idempotence on: no record may be written twice"
    assert counts.reordered == 0, "idempotence on: per-partition order is the send order"
    assert counts.key_order_broken == []
    assert counts.wrong_partition == []
    assert counts.wrong_offset == [], "a future reported an offset the record is not at"
    if counts.lost:
        explain_loss_or_fail(proxied.broker, topic, outcome, counts.lost)


def explain_loss_or_fail(
    broker: LocalBroker, topic: str, outcome: Outcome, lost: list[int]
) -> None:
    """Acknowledged records are missing. Only Tansu's defect may explain it: each was answered
    DUPLICATE_SEQUENCE_NUMBER (offset -1), and producing the first again, raw, with its
    producer id, epoch and sequence gets that answer while a fetch still does not find it."""
    assert all(outcome.acked[index][1] == -1 for index in lost), (
        f"{len(lost)} acknowledged records lost, some acknowledged with an offset: ours"
    )
    index = lost[0]
    partition = outcome.acked[index][0]
    batches = outcome.batches[partition]
    identities = {(b.producer_id, b.producer_epoch) for b in batches}
    assert len(identities) == 1, f"the producer changed id/epoch: {identities}, cannot replay"
    ((producer_id, epoch),) = identities
    # Its sequence: its place among the partition's records (the warm-up record first, if
    # it went there), as no record failed and the producer kept its id and epoch.
    assert not outcome.failed
    in_partition = sorted(i for i, (p, _) in outcome.acked.items() if p == partition)
    warm_up = any(r.value == b"warm-up" for b in batches for r in b.records)
    sequence = in_partition.index(index) + int(warm_up)
    assert not any(
        b.base_sequence <= sequence < b.base_sequence + len(b.records) for b in batches
    ), "the log holds a batch with that sequence"
    builder = RecordBatchBuilder(producer_id=producer_id, producer_epoch=epoch)
    builder.set_producer_state(producer_id, epoch, sequence)
    builder.append(int(time.time() * 1000), key_of(index), b"%07d" % index)
    with BlockingConnection(broker.host, broker.port) as conn:
        version = negotiate_versions(conn)[0]
        with pytest.raises(DuplicateSequenceNumberError):
            produce_batch(conn, topic, partition, builder.build(), version)
    again = fetch_topic(broker, topic)[partition]
    assert b"%07d" % index not in {r.value for b in again for r in b.records}
    pytest.xfail(
        "Tansu 0.6 defect (DESIGN.md): it answered DUPLICATE_SEQUENCE_NUMBER for "
        f"{len(lost)} acknowledged record(s) it never stored; a raw Produce of record {index} "
        f"to {topic}-{partition} with producer id {producer_id}, epoch {epoch}, sequence "
        f"{sequence} got DUPLICATE_SEQUENCE_NUMBER and a fetch still does not find it"
    )


def test_without_idempotence_no_acknowledged_record_is_lost_through_faults(
    proxied: Proxied, capsys: pytest.CaptureFixture[str]
) -> None:
    topic = "at-least-once-under-faults"
    proxied.broker.create_topic(topic, partitions=PARTITIONS)
    schedule: list[tuple[float, Fault]] = [
        (0.3, Cut(CutPoint.BEFORE_RESPONSE)),
        (0.5, Cut(CutPoint.MID_REQUEST)),
        (0.5, DelayResponse(LATE)),
        (0.5, Cut(CutPoint.BEFORE_RESPONSE)),
    ]
    outcome = send_through_faults(
        proxied, topic, 20_000, schedule, acks=-1, enable_idempotence=False
    )
    counts = tally(outcome)
    report("idempotence off", outcome, counts, capsys)

    assert proxied.proxy.pending == 0
    assert sum(outcome.faults.values()) == len(schedule)
    assert all(isinstance(error, KafkaError) for error in outcome.failed.values())
    assert counts.unknown == []
    assert counts.lost == [], "at-least-once: an acknowledged record is missing"
    assert counts.wrong_partition == []
    assert counts.wrong_offset == [], "a future reported an offset the record is not at"


def test_idempotent_producer_writes_each_record_once_through_corrupted_responses(
    proxied: Proxied, capsys: pytest.CaptureFixture[str]
) -> None:
    # The broker stores each request, then the proxy spoils its answer: the producer cannot
    # decode it, drops the connection and retries; the broker must see the retry as the
    # duplicate it is, so every record is in the log once.
    topic = "idempotence-corrupted-responses"
    proxied.broker.create_topic(topic, partitions=PARTITIONS)
    schedule: list[tuple[float, Fault]] = [
        (0.3 if step == 0 else 0.6, CorruptResponse(how))
        for step, how in enumerate(list(Corruption) * 2)
    ]
    outcome = send_through_faults(proxied, topic, 30_000, schedule, acks=-1)
    counts = tally(outcome)
    report("corrupted responses, idempotence on", outcome, counts, capsys)
    assert proxied.proxy.pending == 0
    assert outcome.faults == {f"corrupt response {how.value}": 2 for how in Corruption}
    assert outcome.failed == {}
    assert counts.unknown == []
    assert counts.duplicates == 0
    assert counts.reordered == 0
    assert counts.key_order_broken == []
    assert counts.wrong_partition == []
    assert counts.wrong_offset == []
    if counts.lost:
        explain_loss_or_fail(proxied.broker, topic, outcome, counts.lost)
