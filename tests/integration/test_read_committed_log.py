"""read_committed_log against the real broker: committed, aborted and still-open transactions
of our transactional producer, beside non-transactional records, as a read_committed reader
would see them."""

from __future__ import annotations

import uuid

import pytest

from kafkaline import Producer
from kafkaline.testing import LocalBroker, TopicFactory
from kafkaline.testing.read_committed import read_committed_log

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def test_read_committed_log_of_a_real_topic(broker: LocalBroker, make_topic: TopicFactory) -> None:
    topic = make_topic(partitions=2)
    servers = broker.bootstrap_servers
    with Producer(bootstrap_servers=servers) as plain:
        plain.send(topic, b"plain", partition=1).get(10)
    settings = {"bootstrap_servers": servers, "max_block_ms": 20_000}
    with Producer(transactional_id=f"rc-{uuid.uuid4().hex}", **settings) as producer:
        producer.init_transactions()
        for values, commit in (((b"c0", b"c1"), True), ((b"a0", b"a1"), False)):
            producer.begin_transaction()
            for i, value in enumerate(values):
                producer.send(topic, value, partition=i)
            if commit:
                producer.commit_transaction()
            else:
                producer.flush()  # on the log before the abort, not dropped from the buffer
                producer.abort_transaction()
        producer.begin_transaction()
        producer.send(topic, b"open", partition=0)
        producer.flush()
        log = read_committed_log(servers, topic)
        assert sorted(log.partitions) == [0, 1]
        assert sorted(v or b"" for v in log.committed_values()) == [b"c0", b"c1", b"plain"]
        assert sorted(v or b"" for v in log.aborted_values()) == [b"a0", b"a1"]
        assert log.open_values() == [b"open"]
        assert len(log.open_producer_ids()) == 1
        producer.abort_transaction()
    after = read_committed_log(servers, topic, partitions=[0])
    assert after.open_producer_ids() == set()
    assert after.counts()["abort_markers"] == 2
