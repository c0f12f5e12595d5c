"""The producer against a LocalCluster whose nodes fail (issue 16's "multi-broker cluster",
items 2 and 3): leaders that move, a node killed for good, every node killed and back, and a
producer whose only known node dies (re-bootstrapping, KIP-899), with idempotence on and off.

Keyed records are sent in paced chunks while a schedule of cluster changes runs; then every
future must be done, and the log, read with our Fetch straight from the broker behind the
nodes, is checked record by record:

- idempotence on: every acknowledged record is in the log exactly once, at the offset its
  future reported, in send order per partition (so per key); no record fails.
- idempotence off (at-least-once): no acknowledged record is missing.

Every node forwards to one broker on memory storage, which is never killed: a node's death
loses connections and requests in flight, not data (Tansu's own defects under kills, see
DESIGN.md, stay out of the way).
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest

from kafkaline import Producer
from kafkaline.errors import KafkaError
from kafkaline.producer.futures import FutureRecordMetadata
from kafkaline.testing import LocalCluster
from kafkaline.testing.wire import BlockingConnection, fetch_partition, negotiate_versions

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

PARTITIONS = 6
KEYS = 300
COUNT = 6_000

Action = Callable[[LocalCluster], None]


@pytest.fixture
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with LocalCluster(brokers=3, log_dir=tmp_path_factory.mktemp("cluster")) as running:
        yield running


@dataclass
class Outcome:
    sent: int
    acked: dict[int, tuple[int, int]]  # index -> (partition, offset)
    failed: dict[int, BaseException]
    log: dict[int, list[tuple[int, int, bytes]]]  # partition -> [(index, offset, key)]
    seconds: float


def key_of(index: int) -> bytes:
    return b"key-%03d" % (index % KEYS)


def run_schedule(cluster: LocalCluster, steps: list[tuple[float, Action]]) -> threading.Thread:
    def run() -> None:
        for delay, action in steps:
            time.sleep(delay)
            action(cluster)

    thread = threading.Thread(target=run, name="cluster-schedule", daemon=True)
    thread.start()
    return thread


def send_through(
    cluster: LocalCluster,
    topic: str,
    steps: list[tuple[float, Action]],
    count: int = COUNT,
    bootstrap_servers: str | None = None,
    **config: object,
) -> Outcome:
    """Send ``count`` keyed records over ~2 s while ``steps`` run, flush, read back."""
    futures: list[FutureRecordMetadata] = []
    started = time.monotonic()
    settings: dict[str, object] = {
        "linger_ms": 5,
        "request_timeout_ms": 3_000,
        "delivery_timeout_ms": 40_000,
        "max_block_ms": 30_000,
        "retry_backoff_ms": 50,
        **config,
    }
    with Producer(
        bootstrap_servers=bootstrap_servers or cluster.bootstrap_servers,
        **settings,
    ) as producer:
        producer.send(topic, b"warm-up", key=b"warm-up").get(10)
        schedule = run_schedule(cluster, steps)
        chunks = 100
        for chunk in range(chunks):
            for index in range(chunk * count // chunks, (chunk + 1) * count // chunks):
                futures.append(producer.send(topic, b"%07d" % index, key=key_of(index)))
            time.sleep(0.02)
        schedule.join()
        producer.flush(60)
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
    return Outcome(count, acked, failed, read_log(cluster, topic), seconds)


def read_log(cluster: LocalCluster, topic: str) -> dict[int, list[tuple[int, int, bytes]]]:
    # Straight to the broker: the check does not go through the nodes.
    broker = cluster.broker
    with BlockingConnection(broker.host, broker.port, timeout=30) as conn:
        version = negotiate_versions(conn)[1]
        return {
            partition: [
                (int(record.value), record.offset, record.key or b"")
                for batch in fetch_partition(conn, topic, partition, version, max_wait_ms=50)
                for record in batch.records
                if record.value is not None and record.value != b"warm-up"
            ]
            for partition in range(PARTITIONS)
        }


@dataclass
class Tally:
    lost: list[int]
    duplicates: int
    reordered: int
    wrong_offset: list[int]


def tally(outcome: Outcome) -> Tally:
    where: dict[int, list[tuple[int, int]]] = collections.defaultdict(list)
    reordered = 0
    for partition, entries in outcome.log.items():
        previous = -1
        for index, offset, key in entries:
            assert key == key_of(index), f"record {index} under key {key!r}"
            first = index not in where
            where[index].append((partition, offset))
            if first:
                # One thread sent in index order: per partition (so per key) indices rise.
                reordered += index < previous
                previous = max(previous, index)
    wrong_offset = [
        index
        for index, (partition, offset) in outcome.acked.items()
        if offset >= 0 and where.get(index) and (partition, offset) not in where[index]
    ]
    return Tally(
        lost=sorted(index for index in outcome.acked if index not in where),
        duplicates=sum(len(places) - 1 for places in where.values()),
        reordered=reordered,
        wrong_offset=wrong_offset,
    )


def report(name: str, outcome: Outcome, counts: Tally, cluster: LocalCluster) -> str:
    errors = collections.Counter(type(error).__name__ for error in outcome.failed.values())
    line = (
        f"[{name}] sent {outcome.sent}, acknowledged {len(outcome.acked)}, failed "
        f"{len(outcome.failed)} {dict(errors)}, lost {len(counts.lost)}, duplicates "
        f"{counts.duplicates}, reordered {counts.reordered}, refused produce requests "
        f"{cluster.refused_produce_requests}, in {outcome.seconds:.1f} s"
    )
    print(line)
    return line


def check_exactly_once_in_order(outcome: Outcome, counts: Tally) -> None:
    assert outcome.failed == {}
    assert len(outcome.acked) == outcome.sent
    assert counts.lost == []
    assert counts.duplicates == 0, "idempotence on: no record may be written twice"
    assert counts.reordered == 0, "idempotence on: per-partition order is the send order"
    assert counts.wrong_offset == []


def check_nothing_acknowledged_lost(outcome: Outcome, counts: Tally) -> None:
    assert all(isinstance(error, KafkaError) for error in outcome.failed.values())
    assert counts.lost == [], "an acknowledged record is missing from the log"
    assert counts.wrong_offset == []


def move(topic: str, partition: int, node: int, announce_after: float = 0.0) -> Action:
    return lambda cluster: cluster.move_leader(
        topic, partition, node, announce_after=announce_after
    )


def kill(*nodes: int) -> Action:
    def action(cluster: LocalCluster) -> None:
        for node in nodes:
            cluster.kill_node(node)

    return action


def start(*nodes: int) -> Action:
    def action(cluster: LocalCluster) -> None:
        for node in nodes:
            cluster.start_node(node)

    return action


def leader_moves(topic: str) -> list[tuple[float, Action]]:
    # Each partition's replicas are (p % 3 + 1, ...): move to the next one, some announced late.
    return [
        (0.3, move(topic, 0, 2)),
        (0.2, move(topic, 1, 3, announce_after=0.5)),
        (0.2, move(topic, 2, 1)),
        (0.3, move(topic, 3, 3, announce_after=1.0)),
        (0.3, move(topic, 0, 1)),
    ]


SCENARIOS: dict[str, Callable[[str], list[tuple[float, Action]]]] = {
    "leader moves": leader_moves,
    "a node killed for good": lambda topic: [(0.5, kill(2))],
    "every node killed and back": lambda topic: [(0.5, kill(1, 2, 3)), (2.0, start(1, 2, 3))],
    "kills, starts and moves": lambda topic: [
        (0.3, kill(3)),
        (0.4, move(topic, 0, 2, announce_after=0.3)),
        (0.4, start(3)),
        (0.3, kill(1)),
    ],
}


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
@pytest.mark.parametrize("idempotence", [True, False], ids=["idempotent", "at-least-once"])
def test_every_acknowledged_record_survives_the_cluster_changing(
    cluster: LocalCluster, scenario: str, idempotence: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    topic = "cluster-" + scenario.replace(" ", "-").replace(",", "")
    cluster.create_topic(topic, partitions=PARTITIONS)
    outcome = send_through(
        cluster, topic, SCENARIOS[scenario](topic), enable_idempotence=idempotence
    )
    counts = tally(outcome)
    with capsys.disabled():
        report(
            f"{scenario}, idempotence {'on' if idempotence else 'off'}", outcome, counts, cluster
        )
    if idempotence:
        check_exactly_once_in_order(outcome, counts)
    else:
        check_nothing_acknowledged_lost(outcome, counts)


# ---------------------------------------------------------------------- re-bootstrapping


@pytest.fixture
def isolated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """Three nodes that each name only themselves in Metadata, as separate brokers on one
    store do: a producer knows only the node it first asked."""
    with LocalCluster(
        brokers=3, metadata_scope="self", log_dir=tmp_path_factory.mktemp("isolated")
    ) as running:
        yield running


def kill_known_nodes(cluster: LocalCluster) -> None:
    """Kill, for good, every node the producer is connected to (the one it knows)."""
    known = [node for node in cluster.node_ids if cluster.connection_count(node)]
    assert 1 <= len(known) < len(cluster.node_ids), f"connected to {known}"
    kill(*known)(cluster)


@pytest.mark.parametrize("idempotence", [True, False], ids=["idempotent", "at-least-once"])
def test_the_producer_goes_back_to_the_bootstrap_servers_when_its_broker_dies(
    isolated: LocalCluster,
    idempotence: bool,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    topic = "rebootstrap"
    isolated.create_topic(topic, partitions=PARTITIONS)
    with caplog.at_level("WARNING", logger="kafkaline.net.client"):
        outcome = send_through(
            isolated,
            topic,
            [(0.6, kill_known_nodes)],
            enable_idempotence=idempotence,
            delivery_timeout_ms=20_000,
        )
    counts = tally(outcome)
    with capsys.disabled():
        report(
            f"rebootstrap, idempotence {'on' if idempotence else 'off'}", outcome, counts, isolated
        )
    assert "going back to the bootstrap servers" in caplog.text
    if idempotence:
        check_exactly_once_in_order(outcome, counts)
    else:
        check_nothing_acknowledged_lost(outcome, counts)
        assert outcome.failed == {}


def test_without_rebootstrap_the_producer_is_stuck_with_its_dead_broker(
    isolated: LocalCluster, capsys: pytest.CaptureFixture[str]
) -> None:
    topic = "no-rebootstrap"
    isolated.create_topic(topic, partitions=PARTITIONS)
    outcome = send_through(
        isolated,
        topic,
        [(0.3, kill_known_nodes)],
        count=600,
        metadata_recovery_strategy="none",
        delivery_timeout_ms=3_000,
        request_timeout_ms=1_000,
    )
    counts = tally(outcome)
    with capsys.disabled():
        report("metadata_recovery_strategy=none", outcome, counts, isolated)
    # The records sent after the kill have nowhere to go: they time out.
    assert outcome.failed
    assert len(outcome.acked) + len(outcome.failed) == 600
    assert counts.lost == []


# ---------------------------------------------------------------------- leader hints


def refused_after_a_late_announced_move(
    tmp_path_factory: pytest.TempPathFactory, *, leader_hints: bool
) -> tuple[int, float]:
    """Produce requests refused, and seconds to deliver, when partition 0's leader moves and
    Metadata keeps naming the old one for 2 s."""
    with LocalCluster(
        brokers=3, leader_hints=leader_hints, log_dir=tmp_path_factory.mktemp("hints")
    ) as cluster:
        cluster.create_topic("hints", partitions=3)
        with Producer(
            bootstrap_servers=cluster.bootstrap_servers, linger_ms=0, retry_backoff_ms=100
        ) as producer:
            producer.send("hints", b"warm-up", partition=0).get(10)
            cluster.move_leader("hints", 0, 2, announce_after=2.0)
            started = time.monotonic()
            futures = [producer.send("hints", b"%d" % i, partition=0) for i in range(20)]
            producer.flush(30)
            seconds = time.monotonic() - started
            assert [future.get(0).partition for future in futures] == [0] * 20
        return cluster.refused_produce_requests, seconds


def test_leader_hints_send_the_retry_to_the_new_leader_at_once(
    tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    with_hints = refused_after_a_late_announced_move(tmp_path_factory, leader_hints=True)
    without = refused_after_a_late_announced_move(tmp_path_factory, leader_hints=False)
    with capsys.disabled():
        print(
            f"[leader hints] refused produce requests / seconds to deliver 20 records: "
            f"with hints {with_hints[0]} / {with_hints[1]:.2f}, "
            f"Produce v9 (no hints) {without[0]} / {without[1]:.2f}"
        )
    # The refusals with hints are the requests already in flight when the leader moved.
    assert 1 <= with_hints[0] <= 5
    assert with_hints[1] < 1.0
    # Without hints the old leader is asked again until the metadata names the new one.
    assert without[0] > with_hints[0]
    assert without[1] >= 2.0
