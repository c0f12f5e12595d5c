"""Idempotence through mixed faults (issue 16, item 1): one producer, several threads using
send(), send_batch() and send_arrow() on 4 partitions of an S3-backed LocalBroker behind a
FaultProxy, while a seeded schedule mixes every fault kind in one run: the broker stopped and
started, paused (SIGSTOP) past request_timeout_ms, restarted (SIGKILL), every connection cut
at once, and single requests cut mid-request or before the response. delivery_timeout_ms is
short (the stop lasts longer), so batches expire and leave sequence gaps: the producer asks
for a new epoch, Tansu refuses, and the producer takes a new producer id.

Before the fix, a batch whose try lost its connection was renumbered and sent again under that
new producer id: the same records were in the log twice, under two producer ids (seed 3 once
wrote 707 records twice, e.g. producer id 12 sequence 782 and producer id 13 sequence 0).
Checked after each run, from the log read straight from the broker (not through the proxy):

- no record is in the log twice (whatever producer id or epoch its batches carry);
- every future completed, with metadata or a named error (a KafkaError: records whose outcome
  could not be proven fail with DeliveryOutcomeUnknownError);
- every record acknowledged with an offset is in the log at that offset and partition;
- per key (one thread sends a key), the log holds the acknowledged records in send order.

Records acknowledged by DUPLICATE_SEQUENCE_NUMBER (offset -1) may be missing: Tansu 0.6 stores
a producer's sequence before the batch, and after a kill answers DUPLICATE_SEQUENCE_NUMBER for
a batch it never stored (DESIGN.md). The test then shows it from the producer's log: each such
answer names the producer id, epoch and sequence, the fetched log holds no batch with them, and
the missing records are no more than those answers covered; only then does it xfail, naming
the broker's defect.
"""

from __future__ import annotations

import collections
import random
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import pyarrow  # type: ignore[import-untyped]  # pyarrow ships no type information
import pytest

from kafkaline import Producer
from kafkaline.errors import KafkaError
from kafkaline.producer.futures import FutureRecordMetadata
from kafkaline.record import RecordBatch
from kafkaline.testing import LocalBroker
from kafkaline.testing._ports import find_free_port
from kafkaline.testing.fault_proxy import Cut, CutPoint, FaultProxy
from kafkaline.testing.wire import BlockingConnection, fetch_partition, negotiate_versions

pytestmark = [pytest.mark.integration, pytest.mark.timeout(150)]

PARTITIONS = 4
REQUEST_TIMEOUT_MS = 1000
# Short: batches stuck through a stop or a pause expire, a gap that needs a new epoch (the
# path that re-sent records under a new producer id).
DELIVERY_TIMEOUT_MS = 2500
KEYS_PER_THREAD = 40
CHUNK = 40
SEEDS = [1, 2, 3]
#: The sending paths, one thread each (send() twice: it is the most used).
PATHS = ("send", "send_batch", "send_arrow", "send")
_DUPLICATE_ANSWER = re.compile(
    r"(\S+)-(\d+): duplicate of a batch already written \(producer id (\d+), epoch (\d+), "
    r"sequence (\d+), (\d+) records\)"
)


@dataclass
class Rig:
    broker: LocalBroker
    proxy: FaultProxy


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    """A durable broker advertising the port of a FaultProxy in front of it."""
    broker_port = find_free_port()
    with (
        FaultProxy(upstream_port=broker_port) as proxy,
        LocalBroker(
            storage="s3",
            port=broker_port,
            advertised_port=proxy.port,
            log_dir=tmp_path_factory.mktemp("mixed-faults-broker"),
        ) as broker,
    ):
        yield Rig(broker, proxy)


def fault_actions(rig: Rig) -> dict[str, Callable[[], None]]:
    def stop_start() -> None:
        rig.broker.stop()
        # Longer than delivery_timeout_ms: batches in flight at the kill expire, leaving a
        # sequence gap that needs a new epoch (Tansu refuses the bump: a new producer id).
        time.sleep(DELIVERY_TIMEOUT_MS / 1000 + 0.5)
        rig.broker.start()

    def pause() -> None:
        rig.broker.pause()
        time.sleep(2.2)  # past request_timeout_ms: requests time out, connections close
        rig.broker.resume()

    def cut_all() -> None:
        rig.proxy.cut_all()

    return {
        "stop/start": stop_start,
        "pause": pause,
        "restart": rig.broker.restart,
        "cut all": cut_all,
        "cut mid-request": lambda: rig.proxy.inject(Cut(CutPoint.MID_REQUEST)),
        "cut before-response": lambda: rig.proxy.inject(Cut(CutPoint.BEFORE_RESPONSE)),
    }


def schedule_for(seed: int) -> list[str]:
    """Every fault kind once, the broker-side ones twice, in an order the seed picks."""
    kinds = ["stop/start", "pause", "pause", "restart", "restart"]
    kinds += ["cut all", "cut mid-request", "cut before-response", "cut before-response"]
    random.Random(seed).shuffle(kinds)
    return kinds


@dataclass
class Sent:
    """Futures by record index; the index is the record's value, its key names its thread."""

    futures: dict[int, FutureRecordMetadata] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    errors: list[BaseException] = field(default_factory=list)


def index_of(thread: int, n: int) -> int:
    return thread * 10_000_000 + n


def key_of(index: int) -> bytes:
    thread, n = divmod(index, 10_000_000)
    return b"t%d-k%02d" % (thread, n % KEYS_PER_THREAD)


def sender_loop(
    producer: Producer, topic: str, thread: int, path: str, stop: threading.Event, sent: Sent
) -> None:
    n = 0
    try:
        while not stop.is_set():
            indices = [index_of(thread, n + j) for j in range(CHUNK)]
            n += CHUNK
            values = [b"%d" % index for index in indices]
            keys = [key_of(index) for index in indices]
            if path == "send":
                futures = [
                    producer.send(topic, value, key=key)
                    for value, key in zip(values, keys, strict=True)
                ]
            elif path == "send_batch":
                futures = producer.send_batch(topic, values, keys=keys).futures()
            else:
                table = pyarrow.record_batch({"key": keys, "value": values})
                futures = producer.send_arrow(topic, table).futures()
            with sent.lock:
                sent.futures.update(zip(indices, futures, strict=True))
            time.sleep(0.1)
    except BaseException as error:  # reported by the test: a send must not raise here
        sent.errors.append(error)


def fetch_topic(broker: LocalBroker, topic: str) -> dict[int, list[RecordBatch]]:
    # Straight to the broker's own port: the check must not pass through the faults.
    with BlockingConnection(broker.host, broker.port, timeout=30) as conn:
        version = negotiate_versions(conn)[1]
        return {
            partition: fetch_partition(conn, topic, partition, version, max_wait_ms=200, timeout=60)
            for partition in range(PARTITIONS)
        }


@dataclass(frozen=True)
class Place:
    partition: int
    offset: int
    producer_id: int
    epoch: int
    sequence: int


@pytest.mark.parametrize("seed", SEEDS)
def test_idempotent_producer_never_writes_a_record_twice_through_mixed_faults(
    rig: Rig, seed: int, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    topic = f"mixed-faults-{seed}-{time.monotonic_ns()}"
    rig.broker.create_topic(topic, partitions=PARTITIONS)
    schedule = schedule_for(seed)
    actions = fault_actions(rig)
    sent = Sent()
    stop = threading.Event()
    started = time.monotonic()
    with (
        caplog.at_level("INFO", logger="kafkaline.producer.sender"),
        Producer(
            bootstrap_servers=rig.broker.advertised_bootstrap_servers,
            linger_ms=5,
            request_timeout_ms=REQUEST_TIMEOUT_MS,
            delivery_timeout_ms=DELIVERY_TIMEOUT_MS,
            max_block_ms=30_000,
            retry_backoff_ms=50,
            enable_idempotence=True,
        ) as producer,
    ):
        producer.send(topic, b"warm-up", key=b"warm-up").get(30)  # metadata, producer id
        threads = [
            threading.Thread(
                target=sender_loop, args=(producer, topic, thread, path, stop, sent), daemon=True
            )
            for thread, path in enumerate(PATHS)
        ]
        for thread in threads:
            thread.start()
        for kind in schedule:
            time.sleep(0.6)
            actions[kind]()
        time.sleep(0.6)
        stop.set()
        for thread in threads:
            thread.join(30)
        producer.flush(90)
        futures = dict(sent.futures)
        pending = [index for index, future in futures.items() if not future.done()]
        assert pending == [], f"{len(pending)} futures still pending after flush()"
    seconds = time.monotonic() - started
    assert sent.errors == []

    # What the log holds, by record index.
    places: dict[int, list[Place]] = collections.defaultdict(list)
    logged_sequences: set[tuple[int, int, int, int]] = set()  # partition, pid, epoch, seq
    batches = fetch_topic(rig.broker, topic)
    for partition, partition_batches in batches.items():
        for batch in partition_batches:
            for position, record in enumerate(batch.records):
                sequence = batch.base_sequence + position
                logged_sequences.add((partition, batch.producer_id, batch.producer_epoch, sequence))
                if record.value is None or not record.value.isdigit():
                    continue  # the warm-up record
                index = int(record.value)
                assert record.key == key_of(index), f"record {index} has key {record.key!r}"
                places[index].append(
                    Place(
                        partition, record.offset, batch.producer_id, batch.producer_epoch, sequence
                    )
                )

    acked: dict[int, tuple[int, int]] = {}
    failed: dict[int, BaseException] = {}
    for index, future in futures.items():
        error = future.exception(0)
        if error is None:
            metadata = future.get(0)
            acked[index] = (metadata.partition, metadata.offset)
        else:
            failed[index] = error
    twice = {index: where for index, where in places.items() if len(where) > 1}
    unknown = [index for index in places if index not in futures]
    wrong_place = [
        index
        for index, (partition, offset) in acked.items()
        if offset >= 0
        and (partition, offset) not in {(p.partition, p.offset) for p in places.get(index, [])}
    ]
    lost = sorted(index for index in acked if index not in places)
    errors = collections.Counter(type(error).__name__ for error in failed.values())
    by_duplicate_answer = sum(1 for _, offset in acked.values() if offset == -1)
    producer_ids = sorted({(p.producer_id, p.epoch) for ps in places.values() for p in ps})
    with capsys.disabled():
        print(
            f"\n[mixed faults, seed {seed}] {' -> '.join(schedule)}: sent {len(futures)}, "
            f"acknowledged {len(acked)} ({by_duplicate_answer} by DUPLICATE_SEQUENCE_NUMBER), "
            f"failed {len(failed)} {dict(errors)}, in the log twice {len(twice)}, "
            f"lost {len(lost)}, producer ids/epochs in the log {producer_ids}, "
            f"in {seconds:.1f} s"
        )

    # Our side, strictly.
    assert all(isinstance(error, KafkaError) for error in failed.values()), errors
    assert unknown == []
    assert twice == {}, (
        f"idempotence on: {len(twice)} records in the log twice, e.g. {next(iter(twice.items()))}"
    )
    assert wrong_place == [], f"acknowledged at an offset the record is not at: {wrong_place[:5]}"
    # Per key, acknowledged records are in the log in send order. (A record that failed may
    # be anywhere: a paused broker can still write a request the producer gave up on.)
    out_of_order: list[tuple[int, int]] = []
    last_by_key: dict[bytes, int] = {}
    for partition, offset, index in sorted(
        (where[0].partition, where[0].offset, index)
        for index, where in places.items()
        if index in acked
    ):
        key = key_of(index)
        if last_by_key.get(key, -1) > index:
            out_of_order.append((partition, offset))
        last_by_key[key] = max(last_by_key.get(key, -1), index)
    assert out_of_order == [], f"acknowledged records out of send order at {out_of_order[:5]}"
    if not lost:
        return
    # Acknowledged records missing: each must have been acknowledged by the broker's
    # DUPLICATE_SEQUENCE_NUMBER answer (offset -1)...
    with_offset = [index for index in lost if acked[index][1] != -1]
    assert with_offset == [], f"acknowledged with an offset, yet not in the log: {with_offset}"
    # ...and the broker must have answered DUPLICATE_SEQUENCE_NUMBER for sequences its log
    # does not hold, covering at least as many records as are missing.
    phantom: list[str] = []
    phantom_records = 0
    for match in _DUPLICATE_ANSWER.finditer(caplog.text):
        name, part, pid, pepoch, pseq, precords = match.groups()
        if name != topic:
            continue
        answered = (int(part), int(pid), int(pepoch), int(pseq))
        if answered not in logged_sequences:
            phantom.append(f"{topic}-{part} producer id {pid}, epoch {pepoch}, seq {pseq}")
            phantom_records += int(precords)
    assert phantom, f"{len(lost)} acknowledged records lost with no DUPLICATE answer to explain"
    assert len(lost) <= phantom_records, (
        f"{len(lost)} acknowledged records lost, DUPLICATE answers for missing sequences "
        f"covered only {phantom_records}"
    )
    pytest.xfail(
        f"Tansu 0.6 defect (DESIGN.md): {len(lost)} acknowledged records are not in the log; "
        f"the broker answered DUPLICATE_SEQUENCE_NUMBER for {len(phantom)} batch(es) whose "
        f"sequence no batch of its log holds, first: {phantom[0]}"
    )
