"""Two attempts of one task at once (what a speculative copy is), with the real broker and the
sink's own driver code but without Spark scheduling them (local mode never launches a
speculative copy): both write the same rows, each under its own transactional id, and the
driver gets the commit message of one. Only that one may be committed, the other must end
aborted, and a copy that opens its transaction again after the driver fenced it must not
touch the chosen attempt's records."""

from __future__ import annotations

import uuid

import pytest

pytest.importorskip("pyspark")

from kafkaline import Producer
from kafkaline.spark.exactly_once import (
    ExactlyOnceOptions,
    SinkTransaction,
    TaskTransaction,
    transactional_id,
)
from kafkaline.spark.exactly_once_writers import committer_for
from kafkaline.spark.sink_options import SinkOptions
from kafkaline.testing import LocalBroker, TopicFactory, read_committed_log

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

ROWS = [b"%d" % i for i in range(50)]


def _attempt(servers: str, name: str, topic: str) -> tuple[Producer, SinkTransaction]:
    """A task attempt as write_in_transaction runs it: init, send, flush, identity."""
    producer = Producer(bootstrap_servers=servers, transactional_id=name, max_block_ms=10_000)
    producer.init_transactions()
    producer.begin_transaction()
    for row in ROWS:
        producer.send(topic, row, partition=0)
    return producer, SinkTransaction(*producer.transaction_identity())


def test_only_the_chosen_attempt_commits(broker: LocalBroker, make_topic: TopicFactory) -> None:
    topic = make_topic(partitions=1)
    servers = broker.bootstrap_servers
    eos = ExactlyOnceOptions(f"spec-{uuid.uuid4().hex[:8]}", None)
    options = SinkOptions.parse({"kafka.bootstrap.servers": servers, "topic": topic})
    chosen, chosen_txn = _attempt(servers, transactional_id(eos.prefix, 0, 0), topic)
    copy, _ = _attempt(servers, transactional_id(eos.prefix, 0, 1), topic)
    chosen.close()
    # Spark hands the driver the chosen attempt's message only; the copy is still running.
    committer_for(options, eos).commit(0, [TaskTransaction(0, 0, chosen_txn)])
    after_commit = read_committed_log(servers, topic)
    # The copy was fenced: whatever it does now fails and changes nothing visible.
    with pytest.raises(Exception):  # noqa: B017 - fenced, or Tansu's closed connection
        copy.send(topic, b"late", partition=0).get(10)
        copy.commit_transaction()
    copy.close(timeout=0)
    log = read_committed_log(servers, topic)
    print(f"two attempts: {log.counts()}")
    assert after_commit.committed_values() == ROWS
    assert log.committed_values() == ROWS
    assert sorted(v or b"" for v in log.aborted_values()) == sorted(ROWS)
    assert log.open_producer_ids() == set()
    # A copy starting late, after the driver's fencing: a new InitProducerId on its id
    # aborts only its own (empty) transaction; the chosen attempt's records stay committed.
    late, _ = _attempt(servers, transactional_id(eos.prefix, 0, 1), topic)
    late.close()  # killed: its transaction stays open until fenced or timed out
    committer_for(options, eos).abort(0, [None])  # e.g. the next write's cleanup
    final = read_committed_log(servers, topic)
    assert final.committed_values() == ROWS
    assert final.open_producer_ids() == set()
