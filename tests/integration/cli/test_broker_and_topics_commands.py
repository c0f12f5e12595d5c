"""``kafkaline broker`` and ``kafkaline topics`` driven as a user drives them: subprocesses
(``python -m kafkaline``); topics checked with confluent-kafka's metadata, not our own."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer

from kafkaline.cli.exit_status import ExitStatus
from kafkaline.testing import LocalBroker

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]


def kafkaline(*args: str, timeout: float = 30) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "kafkaline", *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=timeout,
        check=False,
    )


def partition_counts(bootstrap_servers: str) -> dict[str, int]:
    """Topic -> partition count, as confluent-kafka (librdkafka) sees the cluster."""
    client = Consumer({"bootstrap.servers": bootstrap_servers, "group.id": "cli-topics-check"})
    try:
        metadata = client.list_topics(timeout=10)
        return {name: len(topic.partitions) for name, topic in metadata.topics.items()}
    finally:
        client.close()


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def port_accepts(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


@pytest.fixture
def topic_name(broker: LocalBroker) -> Iterator[str]:
    """A fresh name for a topic the test creates through the CLI; deleted afterwards."""
    name = f"cli-topic-{uuid.uuid4().hex[:12]}"
    yield name
    if name in partition_counts(broker.bootstrap_servers):
        broker.delete_topic(name)


# --------------------------------------------------------------------------- broker


@pytest.mark.parametrize("stop_signal", [signal.SIGINT, signal.SIGTERM])
def test_broker_runs_in_the_foreground_and_stops_cleanly(
    stop_signal: signal.Signals, tmp_path: Path
) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "kafkaline", "broker", "--topic", "orders", "--topic", "audit",
         "--partitions", "4", "--log-dir", str(tmp_path)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        assert process.stdout is not None and process.stderr is not None
        address = process.stdout.readline().decode().strip()
        host, _, port = address.rpartition(":")
        assert host == "127.0.0.1" and port.isdigit(), address
        counts = partition_counts(address)
        assert (counts["orders"], counts["audit"]) == (4, 4)
        process.send_signal(stop_signal)
        status = process.wait(timeout=20)
        stderr = process.stderr.read().decode()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert status == ExitStatus.OK, stderr
    assert f"broker running on {address}" in stderr
    assert stderr.rstrip().endswith("kafkaline: broker stopped")
    assert "Traceback" not in stderr
    assert not port_accepts(int(port))  # the broker process is gone with the command
    assert (tmp_path / "broker.log").exists()


def test_broker_on_a_port_in_use_is_one_line(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        started = time.monotonic()
        result = kafkaline("broker", "--port", str(port), "--log-dir", str(tmp_path))
    assert time.monotonic() - started < 5  # no waiting for the port to come free
    assert result.returncode == ExitStatus.USAGE
    assert result.stderr.decode().splitlines() == [
        f"kafkaline: error: --port {port}: cannot listen on 127.0.0.1:{port} "
        "(Address already in use)"
    ]


# --------------------------------------------------------------------------- topics


def test_topics_create_and_list(broker: LocalBroker, topic_name: str) -> None:
    created = kafkaline(
        "topics", "create", topic_name, "--partitions", "5",
        "--bootstrap-server", broker.bootstrap_servers,
    )  # fmt: skip
    assert created.returncode == ExitStatus.OK, created.stderr
    assert created.stdout == b""
    assert partition_counts(broker.bootstrap_servers)[topic_name] == 5

    listed = kafkaline("topics", "list", "--bootstrap-server", broker.bootstrap_servers)
    assert listed.returncode == ExitStatus.OK, listed.stderr
    names = listed.stdout.decode().splitlines()
    assert topic_name in names
    assert names == sorted(names)

    long_listing = kafkaline(
        "topics", "list", "--long", "--bootstrap-server", broker.bootstrap_servers
    )
    assert f"{topic_name}\t5" in long_listing.stdout.decode().splitlines()


def test_topics_create_an_existing_topic(broker: LocalBroker, topic_name: str) -> None:
    args = ["topics", "create", topic_name, "--bootstrap-server", broker.bootstrap_servers]
    assert kafkaline(*args).returncode == ExitStatus.OK
    again = kafkaline(*args)
    assert again.returncode == ExitStatus.KAFKA_ERROR
    [line] = again.stderr.decode().splitlines()
    assert line.startswith("kafkaline: error: [Error 36] TOPIC_ALREADY_EXISTS")
    tolerated = kafkaline(*args, "--if-not-exists")
    assert tolerated.returncode == ExitStatus.OK, tolerated.stderr
    assert b"exists already" in tolerated.stderr


def test_topics_against_an_unreachable_broker_is_one_line() -> None:
    result = kafkaline(
        "topics", "list", "--bootstrap-server", f"127.0.0.1:{closed_port()}", "--timeout", "2"
    )
    assert result.returncode == ExitStatus.BROKER_UNREACHABLE
    [line] = result.stderr.decode().splitlines()
    assert line.startswith("kafkaline: error: cannot reach any bootstrap server: 127.0.0.1:")
    assert "Connection refused" in line


def test_topics_tries_the_next_bootstrap_server(broker: LocalBroker) -> None:
    servers = f"127.0.0.1:{closed_port()},{broker.bootstrap_servers}"
    result = kafkaline("topics", "list", "--bootstrap-server", servers)
    assert result.returncode == ExitStatus.OK, result.stderr


def test_topics_in_the_kafka_topics_sh_shape(broker: LocalBroker, topic_name: str) -> None:
    created = kafkaline(
        "topics", "--create", "--topic", topic_name, "--partitions", "3",
        "--bootstrap-server", broker.bootstrap_servers,
    )  # fmt: skip
    assert created.returncode == ExitStatus.OK, created.stderr
    assert partition_counts(broker.bootstrap_servers)[topic_name] == 3
    listed = kafkaline("topics", "--list", "--broker-list", broker.bootstrap_servers)
    assert listed.returncode == ExitStatus.OK, listed.stderr
    assert topic_name in listed.stdout.decode().splitlines()
    described = kafkaline(
        "topics", "--describe", "--topic", topic_name,
        "--bootstrap-server", broker.bootstrap_servers,
    )  # fmt: skip
    assert described.returncode == ExitStatus.OK, described.stderr
    head, *partitions = described.stdout.decode().splitlines()
    assert head == f"Topic: {topic_name}\tPartitionCount: 3\tReplicationFactor: 1"
    # Tansu answers as one node (111) leading every partition.
    assert partitions == [
        f"\tTopic: {topic_name}\tPartition: {p}\tLeader: 111\tReplicas: 111\tIsr: 111"
        for p in range(3)
    ]


def test_topics_create_takes_the_name_as_topic_too(broker: LocalBroker, topic_name: str) -> None:
    created = kafkaline(
        "topics", "create", "--topic", topic_name, "--bootstrap-server", broker.bootstrap_servers
    )
    assert created.returncode == ExitStatus.OK, created.stderr
    assert partition_counts(broker.bootstrap_servers)[topic_name] == 1


def test_topics_describe_an_unknown_topic_is_exit_6(broker: LocalBroker) -> None:
    missing = f"no-such-topic-{uuid.uuid4().hex[:8]}"
    result = kafkaline(
        "topics", "describe", missing, "--bootstrap-server", broker.bootstrap_servers
    )
    assert result.returncode == ExitStatus.UNKNOWN_TOPIC
    assert result.stderr.decode().splitlines() == [
        f"kafkaline: error: topic {missing!r} does not exist on {broker.bootstrap_servers}"
    ]
    assert missing not in partition_counts(broker.bootstrap_servers)  # not created by asking


def test_a_wrong_flag_prints_the_subcommands_usage() -> None:
    result = kafkaline("topics", "create", "--partition", "3", "--bogus")
    assert result.returncode == ExitStatus.USAGE
    lines = result.stderr.decode().splitlines()
    assert lines[0].startswith("usage: kafkaline topics create ")
    assert lines[-1] == "kafkaline topics create: error: unrecognized arguments: --bogus"
