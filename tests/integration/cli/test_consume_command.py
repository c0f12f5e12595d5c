"""``kafkaline consume`` against the broker, reading records our producer wrote."""

from __future__ import annotations

import subprocess
import sys
import uuid

import pytest

from kafkaline import Producer
from kafkaline.cli.exit_status import ExitStatus
from kafkaline.testing import LocalBroker, TopicFactory

pytestmark = pytest.mark.timeout(120)


def kafkaline(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "kafkaline", *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=60,
        check=False,
    )


def test_from_beginning_with_keys_and_partitions(
    broker: LocalBroker, make_topic: TopicFactory
) -> None:
    topic = make_topic(partitions=2)
    with Producer(bootstrap_servers=broker.bootstrap_servers) as producer:
        for i in range(6):
            producer.send(topic, b"value-%d" % i, key=b"key-%d" % i, partition=i % 2)
        producer.flush()
    result = kafkaline(
        "consume", "--topic", topic, "--bootstrap-server", broker.bootstrap_servers,
        "--from-beginning", "--max-messages", "6",
        "--property", "print.key=true", "--property", "print.partition=true",
    )  # fmt: skip
    assert result.returncode == ExitStatus.OK, result.stderr
    lines = result.stdout.decode().splitlines()
    assert sorted(lines) == sorted(f"Partition:{i % 2}\tkey-{i}\tvalue-{i}" for i in range(6))
    assert result.stderr.decode().splitlines()[-1] == "kafkaline: Processed a total of 6 messages"


def test_one_partition_from_an_offset_until_idle(
    broker: LocalBroker, make_topic: TopicFactory
) -> None:
    topic = make_topic(partitions=1)
    with Producer(bootstrap_servers=broker.bootstrap_servers, linger_ms=0) as producer:
        for i in range(5):
            producer.send(topic, b"r%d" % i).get(timeout=10)  # one batch each
    result = kafkaline(
        "consume", "--topic", topic, "--broker-list", broker.bootstrap_servers,
        "--partition", "0", "--offset", "2", "--timeout-ms", "1500",
        "--property", "print.offset=true",
    )  # fmt: skip
    assert result.returncode == ExitStatus.OK, result.stderr
    assert result.stdout.decode().splitlines() == ["Offset:2\tr2", "Offset:3\tr3", "Offset:4\tr4"]


def test_read_committed_hides_aborted_transactions_from_the_markers(
    broker: LocalBroker, make_topic: TopicFactory
) -> None:
    # Tansu does not filter aborted records for read_committed fetches: the consumer does.
    topic = make_topic(partitions=1)
    with Producer(
        bootstrap_servers=broker.bootstrap_servers,
        transactional_id=f"consume-{uuid.uuid4().hex[:8]}",
        max_block_ms=20_000,
    ) as transactional:
        transactional.init_transactions()
        transactional.begin_transaction()
        transactional.send(topic, b"committed-1")
        transactional.commit_transaction()
        transactional.begin_transaction()
        transactional.send(topic, b"aborted-1")
        transactional.flush()
        transactional.abort_transaction()
    with Producer(bootstrap_servers=broker.bootstrap_servers) as plain:
        plain.send(topic, b"plain-1").get(timeout=10)
    common = ["consume", "--topic", topic, "--bootstrap-server", broker.bootstrap_servers,
              "--from-beginning", "--timeout-ms", "2000"]  # fmt: skip
    committed = kafkaline(*common, "--isolation-level", "read_committed")
    assert committed.returncode == ExitStatus.OK, committed.stderr
    assert committed.stdout.decode().splitlines() == ["committed-1", "plain-1"]
    everything = kafkaline(*common)
    assert everything.stdout.decode().splitlines() == ["committed-1", "aborted-1", "plain-1"]


def test_an_unknown_topic_is_exit_6(broker: LocalBroker) -> None:
    missing = f"no-such-topic-{uuid.uuid4().hex[:8]}"
    result = kafkaline(
        "consume", "--topic", missing, "--bootstrap-server", broker.bootstrap_servers
    )
    assert result.returncode == ExitStatus.UNKNOWN_TOPIC
    assert result.stderr.decode().splitlines() == [
        f"kafkaline: error: topic {missing!r} does not exist on {broker.bootstrap_servers}"
    ]
