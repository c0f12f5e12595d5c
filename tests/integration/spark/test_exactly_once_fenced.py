"""The exactly-once driver against a fenced transaction, without Spark: a task's transaction
whose id someone initialised again (a zombie's successor, or a replay that started before a
cut-off commit was finished) cannot be committed. The driver's commit must fail, and so must
the abort after it (the state file says the commit began); nothing of that transaction may
become visible, and nothing may be left open.

Kafka answers such an EndTxn with PRODUCER_FENCED; Tansu 0.6 closes the connection instead
(shown on the wire with a raw EndTxn), so our commit retries until max.block.ms and fails with
KafkaTimeoutError. The test accepts either error, keeps the visible-records checks strict, and
xfails naming the defect when it meets it."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

pytest.importorskip("pyspark")

from kafkaline import Producer
from kafkaline.errors import InvalidProducerEpochError, KafkaTimeoutError, ProducerFencedError
from kafkaline.protocol.api.end_txn import EndTxnRequest, EndTxnResponse
from kafkaline.spark.exactly_once import (
    ExactlyOnceOptions,
    SinkTransaction,
    TaskTransaction,
    transactional_id,
)
from kafkaline.spark.exactly_once_writers import committer_for
from kafkaline.spark.sink_options import SinkOptions
from kafkaline.testing import LocalBroker, TopicFactory, read_committed_log
from kafkaline.testing.wire import BlockingConnection, negotiate_versions

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def _raw_end_txn(broker: LocalBroker, transaction: SinkTransaction) -> str:
    with BlockingConnection(broker.host, broker.port) as conn:
        version = negotiate_versions(conn)[EndTxnRequest.API_KEY]
        request = EndTxnRequest(
            transactional_id=transaction.transactional_id,
            producer_id=transaction.producer_id,
            producer_epoch=transaction.producer_epoch,
            committed=True,
        )
        try:
            answer = conn.request(request, version, EndTxnResponse)
        except ConnectionError as error:
            return f"connection closed without an answer ({error})"
        return f"error code {answer.error_code}"


def test_a_fenced_task_transaction_is_never_committed(
    broker: LocalBroker, make_topic: TopicFactory, tmp_path: Path
) -> None:
    topic = make_topic(partitions=1)
    servers = broker.bootstrap_servers
    eos = ExactlyOnceOptions(f"fenced-{uuid.uuid4().hex[:8]}", str(tmp_path))
    options = SinkOptions.parse(
        {"kafka.bootstrap.servers": servers, "kafka.max.block.ms": "3000", "topic": topic}
    )
    name = transactional_id(eos.prefix, 0, 0)
    with Producer(bootstrap_servers=servers, transactional_id=name) as task:
        task.init_transactions()
        task.begin_transaction()
        task.send(topic, b"task", partition=0)
        transaction = SinkTransaction(*task.transaction_identity())
    with Producer(bootstrap_servers=servers, transactional_id=name) as successor:
        successor.init_transactions()  # fences the task's epoch, aborts its transaction
    committer = committer_for(options, eos)
    tasks: list[TaskTransaction | None] = [TaskTransaction(0, 0, transaction)]
    with pytest.raises(
        (ProducerFencedError, InvalidProducerEpochError, KafkaTimeoutError)
    ) as caught:
        committer.commit(0, tasks)
    # Spark aborts after a failed commit: the state file says the commit began, so the
    # abort tries to finish it, fails the same way, and fences the other ids.
    with pytest.raises(type(caught.value)):
        committer.abort(0, tasks)
    log = read_committed_log(servers, topic)
    print(f"fenced: {log.counts()}")
    assert log.committed_values() == []
    assert log.aborted_values() == [b"task"]
    assert log.open_producer_ids() == set()
    if isinstance(caught.value, KafkaTimeoutError):
        evidence = _raw_end_txn(broker, transaction)
        pytest.xfail(
            f"Tansu 0.6 defect: a raw EndTxn with the fenced identity {transaction.as_tuple()} "
            f"got: {evidence} (Kafka answers PRODUCER_FENCED); the driver's commit therefore "
            f"retried until max.block.ms: {caught.value!r}"
        )
