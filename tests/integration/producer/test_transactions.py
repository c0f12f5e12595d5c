"""Transactions against the real broker, checked on the raw log: the data batches carry the
transactional attribute and the producer id/epoch, and after them the coordinator's control
batch says COMMIT or ABORT. Tansu 0.6 writes these markers but does not filter aborted records
for read_committed fetches (DESIGN.md), so the markers are what we check, never the filtering.

Also: zombie fencing, a transaction finished by another producer from its identity (the
resume contract), wrong-order calls and misconfigurations, send_offsets_to_transaction."""

from __future__ import annotations

import uuid

import pytest
from kafka import KafkaConsumer
from kafka import TopicPartition as KafkaTopicPartition

from kafkaline import Producer
from kafkaline.errors import (
    ConfigError,
    InvalidProducerEpochError,
    KafkaConnectionError,
    KafkaTimeoutError,
    ProducerFencedError,
    TransactionAbortedError,
    TransactionStateError,
)
from kafkaline.net.cluster import TopicPartition
from kafkaline.producer.transactions import TransactionIdentity, TransactionState
from kafkaline.producer.transactions.idempotence import ProducerIdAndEpoch
from kafkaline.protocol.api.end_txn import EndTxnRequest, EndTxnResponse
from kafkaline.record import RecordBatch
from kafkaline.testing import LocalBroker, TopicFactory
from kafkaline.testing.wire import BlockingConnection, fetch_partition, negotiate_versions

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

FENCED = (ProducerFencedError, InvalidProducerEpochError)


def fetch_log(broker: LocalBroker, topic: str, partition: int) -> list[RecordBatch]:
    with BlockingConnection(broker.host, broker.port) as conn:
        version = negotiate_versions(conn)[1]
        return fetch_partition(conn, topic, partition, version, max_wait_ms=50)


Described = tuple[str, int, int, tuple[bytes | None, ...]]


def describe(batches: list[RecordBatch]) -> list[Described]:
    """Each batch as (kind, producer id, epoch, values): kind is "data", "COMMIT" or "ABORT"."""
    described: list[Described] = []
    for batch in batches:
        if batch.is_control:
            (marker,) = batch.control_records
            kind = "COMMIT" if marker.is_commit else "ABORT" if marker.is_abort else "?"
            described.append((kind, batch.producer_id, batch.producer_epoch, ()))
        else:
            values = tuple(record.value for record in batch.records)
            described.append(("data", batch.producer_id, batch.producer_epoch, values))
    return described


def raw_end_txn(broker: LocalBroker, identity: TransactionIdentity, commit: bool) -> str:
    """EndTxn sent raw with ``identity``: the broker's error name, or what the connection did."""
    with BlockingConnection(broker.host, broker.port) as conn:
        version = negotiate_versions(conn)[EndTxnRequest.API_KEY]
        request = EndTxnRequest(
            transactional_id=identity.transactional_id,
            producer_id=identity.producer_id,
            producer_epoch=identity.producer_epoch,
            committed=commit,
        )
        try:
            answer = conn.request(request, version, EndTxnResponse)
        except ConnectionError as error:
            return f"connection closed without an answer ({error})"
        return f"error code {answer.error_code}"


#: Tansu 0.6 answers a request of a fenced producer epoch (EndTxn at least) by closing the
#: connection instead of answering PRODUCER_FENCED (its log: "error=Storage(Api(ProducerFenced))").
#: A client sees a lost connection, which is retriable, and retries until max_block_ms.
TANSU_FENCED_CLOSES = (
    "Tansu 0.6 defect: a raw EndTxn with the fenced identity {identity} got: {evidence} "
    "(Kafka answers PRODUCER_FENCED / INVALID_PRODUCER_EPOCH); our producer therefore saw a "
    "lost connection and retried until max_block_ms: {error!r}"
)


def data_then(kind: str, values: tuple[bytes, ...], pid: int, epoch: int) -> list[object]:
    return [("data", pid, epoch, values), (kind, pid, epoch, ())]


def id_and_epoch(producer: Producer) -> ProducerIdAndEpoch:
    """The producer id and epoch the transactional producer got (white-box: for the checks)."""
    manager = producer._transactional
    assert manager is not None and manager.producer_id_and_epoch is not None
    return manager.producer_id_and_epoch


def new_id() -> str:
    return f"txn-{uuid.uuid4().hex[:12]}"


def transactional(broker: LocalBroker, transactional_id: str, **settings: object) -> Producer:
    defaults: dict[str, object] = {"linger_ms": 5, "max_block_ms": 20_000}
    return Producer(
        bootstrap_servers=broker.bootstrap_servers,
        transactional_id=transactional_id,
        **{**defaults, **settings},
    )


def test_commit_writes_a_commit_marker_after_the_data(
    broker: LocalBroker, make_topic: TopicFactory
) -> None:
    topic = make_topic(partitions=2)
    with transactional(broker, new_id()) as producer:
        producer.init_transactions()
        producer.begin_transaction()
        futures = [producer.send(topic, b"v%d" % i, partition=i % 2) for i in range(6)]
        producer.commit_transaction()
        assert all(future.done() for future in futures)  # commit flushed first
        pid, epoch = id_and_epoch(producer)
        assert producer._transactional is not None
        assert producer._transactional.state is TransactionState.READY
    for partition in (0, 1):
        batches = fetch_log(broker, topic, partition)
        values = tuple(b"v%d" % i for i in range(partition, 6, 2))
        assert describe(batches) == data_then("COMMIT", values, pid, epoch)
        assert all(batch.is_transactional for batch in batches)
        assert batches[0].base_sequence == 0
        assert batches[1].base_offset == batches[0].next_offset  # the marker right after


def test_abort_writes_an_abort_marker_and_fails_buffered_records(
    broker: LocalBroker, make_topic: TopicFactory
) -> None:
    topic = make_topic(partitions=1)
    with transactional(broker, new_id(), linger_ms=60_000) as producer:
        producer.init_transactions()
        producer.begin_transaction()
        sent = producer.send(topic, b"sent", partition=0)
        producer.flush()
        buffered = producer.send(topic, b"buffered", partition=0)  # lingers: never sent
        producer.abort_transaction()
        assert sent.get(1).offset == 0
        with pytest.raises(TransactionAbortedError):
            buffered.get(1)
        pid, epoch = id_and_epoch(producer)
        # The producer goes on: the next transaction commits.
        producer.begin_transaction()
        producer.send(topic, b"next", partition=0)
        producer.commit_transaction()
    assert describe(fetch_log(broker, topic, 0)) == [
        *data_then("ABORT", (b"sent",), pid, epoch),
        *data_then("COMMIT", (b"next",), pid, epoch),
    ]


def test_an_empty_transaction_needs_no_marker(
    broker: LocalBroker, make_topic: TopicFactory
) -> None:
    topic = make_topic(partitions=1)
    with transactional(broker, new_id()) as producer:
        producer.init_transactions()
        producer.begin_transaction()
        producer.commit_transaction()
        producer.begin_transaction()
        producer.abort_transaction()
        producer.begin_transaction()
        producer.send(topic, b"x", partition=0)
        producer.commit_transaction()
        pid, epoch = id_and_epoch(producer)
    assert describe(fetch_log(broker, topic, 0)) == data_then("COMMIT", (b"x",), pid, epoch)


def test_a_second_producer_with_the_same_id_fences_the_first(
    broker: LocalBroker, make_topic: TopicFactory
) -> None:
    topic = make_topic(partitions=1)
    transactional_id = new_id()
    with transactional(broker, transactional_id) as zombie:
        zombie.init_transactions()
        zombie.begin_transaction()
        zombie.send(topic, b"zombie", partition=0).get(10)
        old = id_and_epoch(zombie)
        with transactional(broker, transactional_id) as successor:
            successor.init_transactions()
            new = id_and_epoch(successor)
            assert new.producer_id == old.producer_id and new.epoch > old.epoch
            # The successor's InitProducerId aborted the zombie's open transaction.
            assert describe(fetch_log(broker, topic, 0)) == data_then(
                "ABORT", (b"zombie",), old.producer_id, old.epoch
            )
            # The zombie's next call (a send: Produce with the old epoch) is fenced...
            with pytest.raises(ProducerFencedError):
                zombie.send(topic, b"late", partition=0).get(10)
            # ... and fatal: every later call raises the fenced error.
            for call in (
                zombie.commit_transaction,
                zombie.abort_transaction,
                zombie.begin_transaction,
                lambda: zombie.send(topic, b"more", partition=0),
            ):
                with pytest.raises(ProducerFencedError):
                    call()
            successor.begin_transaction()
            successor.send(topic, b"successor", partition=0)
            successor.commit_transaction()
    log = describe(fetch_log(broker, topic, 0))
    assert not any(values == (b"late",) for _, _, _, values in log)
    assert log[-2:] == data_then("COMMIT", (b"successor",), new.producer_id, new.epoch)


def test_a_fenced_zombie_cannot_commit(broker: LocalBroker, make_topic: TopicFactory) -> None:
    topic = make_topic(partitions=1)
    transactional_id = new_id()
    defect = ""
    with transactional(broker, transactional_id, max_block_ms=3_000) as zombie:
        zombie.init_transactions()
        zombie.begin_transaction()
        zombie.send(topic, b"zombie", partition=0).get(10)
        old = id_and_epoch(zombie)
        with transactional(broker, transactional_id) as successor:
            successor.init_transactions()
            new = id_and_epoch(successor)
            assert new is not None and old is not None
            assert new.producer_id == old.producer_id and new.epoch > old.epoch
            with pytest.raises((*FENCED, KafkaTimeoutError)) as caught:
                zombie.commit_transaction()
            if isinstance(caught.value, KafkaTimeoutError):
                identity = TransactionIdentity(transactional_id, *old)
                evidence = raw_end_txn(broker, identity, commit=True)
                defect = TANSU_FENCED_CLOSES.format(
                    identity=tuple(identity), evidence=evidence, error=caught.value
                )
            else:
                # Fatal: every later call raises the fenced error too.
                with pytest.raises(FENCED):
                    zombie.begin_transaction()
                with pytest.raises(FENCED):
                    zombie.send(topic, b"more", partition=0)
                with pytest.raises(FENCED):
                    zombie.abort_transaction()
            successor.begin_transaction()
            successor.send(topic, b"successor", partition=0)
            successor.commit_transaction()
    log = describe(fetch_log(broker, topic, 0))
    # The zombie's open transaction never commits; the successor's does.
    assert log[0] == ("data", old.producer_id, old.epoch, (b"zombie",))
    assert not any(kind == "COMMIT" and epoch == old.epoch for kind, _, epoch, _ in log)
    assert log[-2:] == data_then("COMMIT", (b"successor",), new.producer_id, new.epoch)
    if defect:
        pytest.xfail(defect)


@pytest.mark.parametrize("commit", [True, False], ids=["commit", "abort"])
def test_another_producer_completes_a_transaction_from_its_identity(
    broker: LocalBroker, make_topic: TopicFactory, commit: bool
) -> None:
    topic = make_topic(partitions=2)
    transactional_id = new_id()
    producer_a = transactional(broker, transactional_id)
    producer_a.init_transactions()
    producer_a.begin_transaction()
    for i in range(4):
        producer_a.send(topic, b"a%d" % i, partition=i % 2)
    identity = producer_a.transaction_identity()  # flushes
    producer_a.close()  # neither commits nor aborts
    assert isinstance(identity, TransactionIdentity)
    assert identity.transactional_id == transactional_id
    # Before completion: data, no marker.
    assert [kind for kind, *_ in describe(fetch_log(broker, topic, 0))] == ["data"]
    Producer.complete_transaction(
        (identity[0], identity[1], identity[2]),  # a plain tuple will do (e.g. from JSON)
        commit=commit,
        bootstrap_servers=broker.bootstrap_servers,
    )
    kind = "COMMIT" if commit else "ABORT"
    for partition in (0, 1):
        values = (b"a%d" % partition, b"a%d" % (partition + 2))
        assert describe(fetch_log(broker, topic, partition)) == data_then(
            kind, values, identity.producer_id, identity.producer_epoch
        )
    # The transactional id goes on with a new producer (its epoch is bumped).
    with transactional(broker, transactional_id) as producer_b:
        producer_b.init_transactions()
        producer_b.begin_transaction()
        producer_b.send(topic, b"b", partition=0)
        producer_b.commit_transaction()


def test_completing_with_a_fenced_identity_fails(
    broker: LocalBroker, make_topic: TopicFactory
) -> None:
    topic = make_topic(partitions=1)
    transactional_id = new_id()
    with transactional(broker, transactional_id) as producer_a:
        producer_a.init_transactions()
        producer_a.begin_transaction()
        producer_a.send(topic, b"a", partition=0)
        identity = producer_a.transaction_identity()
    with transactional(broker, transactional_id) as producer_b:
        producer_b.init_transactions()  # fences identity's epoch and aborts its transaction
    with pytest.raises((*FENCED, KafkaTimeoutError)) as caught:
        Producer.complete_transaction(
            identity, commit=True, bootstrap_servers=broker.bootstrap_servers, max_block_ms=3_000
        )
    # Never committed, whatever the broker answered.
    assert not any(kind == "COMMIT" for kind, *_ in describe(fetch_log(broker, topic, 0)))
    if isinstance(caught.value, KafkaTimeoutError):
        assert isinstance(caught.value.__cause__, KafkaConnectionError)
        evidence = raw_end_txn(broker, identity, commit=True)
        pytest.xfail(
            TANSU_FENCED_CLOSES.format(
                identity=tuple(identity), evidence=evidence, error=caught.value
            )
        )


def test_wrong_order_calls_name_the_state(broker: LocalBroker, make_topic: TopicFactory) -> None:
    topic = make_topic(partitions=1)
    with transactional(broker, new_id()) as producer:
        for call in (
            lambda: producer.send(topic, b"x"),
            producer.begin_transaction,
            producer.commit_transaction,
            producer.abort_transaction,
            producer.transaction_identity,
            lambda: producer.send_offsets_to_transaction({(topic, 0): 1}, "group"),
        ):
            with pytest.raises(TransactionStateError, match="UNINITIALIZED") as caught:
                call()
            assert caught.value.state == "UNINITIALIZED"
        producer.init_transactions()
        with pytest.raises(TransactionStateError, match="READY"):
            producer.init_transactions()
        with pytest.raises(TransactionStateError, match="READY"):
            producer.send(topic, b"x")
        with pytest.raises(TransactionStateError, match="READY"):
            producer.send_batch(topic, [b"x"])
        with pytest.raises(TransactionStateError, match="READY"):
            producer.commit_transaction()
        producer.begin_transaction()
        with pytest.raises(TransactionStateError, match="IN_TRANSACTION"):
            producer.begin_transaction()
        producer.send(topic, b"x", partition=0)
        producer.commit_transaction()


def test_transactional_calls_need_a_transactional_id(broker: LocalBroker) -> None:
    with Producer(bootstrap_servers=broker.bootstrap_servers) as producer:
        with pytest.raises(TransactionStateError, match="no transactional_id"):
            producer.init_transactions()
        with pytest.raises(TransactionStateError, match="no transactional_id"):
            producer.begin_transaction()


def test_misconfigurations_are_named() -> None:
    with pytest.raises(ConfigError, match="transactional_id"):
        Producer(bootstrap_servers="127.0.0.1:1", transactional_id="t", enable_idempotence=False)
    with pytest.raises(ConfigError, match="transactional_id"):
        Producer(bootstrap_servers="127.0.0.1:1", transactional_id="t", acks=1)
    with pytest.raises(ConfigError, match="transaction_timeout_ms"):
        Producer(bootstrap_servers="127.0.0.1:1", transactional_id="t", transaction_timeout_ms=0)


class GroupMetadata:
    def __init__(self, group_id: str) -> None:
        self.group_id = group_id


def test_send_offsets_to_transaction_is_accepted(
    broker: LocalBroker, make_topic: TopicFactory
) -> None:
    topic = make_topic(partitions=2)
    with transactional(broker, new_id()) as producer:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send(topic, b"out", partition=0)
        producer.send_offsets_to_transaction({(topic, 0): 5, TopicPartition(topic, 1): 7}, "g1")
        producer.send_offsets_to_transaction({(topic, 0): 6}, GroupMetadata("g2"))
        producer.commit_transaction()
        with pytest.raises(TypeError, match="group_id"):
            producer.send_offsets_to_transaction({(topic, 0): 1}, 42)
        pid, epoch = id_and_epoch(producer)
    assert describe(fetch_log(broker, topic, 0)) == data_then("COMMIT", (b"out",), pid, epoch)
    # Tansu stores transactional offsets: an independent client (kafka-python) reads them.
    for group, expected in (("g1", {0: 5, 1: 7}), ("g2", {0: 6})):
        consumer = KafkaConsumer(
            bootstrap_servers=broker.bootstrap_servers, group_id=group, enable_auto_commit=False
        )
        try:
            committed = {p: consumer.committed(KafkaTopicPartition(topic, p)) for p in expected}
        finally:
            consumer.close()
        assert committed == expected, group
