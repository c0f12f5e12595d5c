"""NetworkClient against the real broker (Tansu): connecting, version choice, metadata, produce
round trips, reconnecting after the broker restarts, idle close, wakeup, and no leaked fds."""

from __future__ import annotations

import logging
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import pytest

from kafkaline.config import ExponentialBackoff, ProducerConfig
from kafkaline.errors import KafkaConnectionError, KafkaTimeoutError
from kafkaline.net import (
    ClientResponse,
    ConnectionState,
    NetworkClient,
    NetworkSettings,
    TopicPartition,
)
from kafkaline.protocol import broker_version_ranges, choose_versions
from kafkaline.protocol.api import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    MetadataRequest,
    MetadataResponse,
    ProduceRequest,
    ProduceResponse,
)
from kafkaline.protocol.api.produce import PartitionProduceData, TopicProduceData
from kafkaline.record import build_record_batch
from kafkaline.testing import LocalBroker, TopicFactory
from kafkaline.testing._ports import find_free_port
from kafkaline.testing.wire import BlockingConnection, fetch_partition

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]


def settings_for(bootstrap_servers: str, **changes: Any) -> NetworkSettings:
    config = ProducerConfig(bootstrap_servers=tuple(bootstrap_servers.split(",")))
    settings = NetworkSettings.from_config(config)
    return replace(settings, **changes)


@contextmanager
def network_client(settings: NetworkSettings) -> Iterator[NetworkClient]:
    client = NetworkClient(settings)
    try:
        yield client
    finally:
        client.close()


def poll_until(
    client: NetworkClient, condition: Callable[[], bool], timeout: float = 10.0
) -> float:
    """Poll until ``condition()``; the seconds it took. Fails the test on timeout."""
    started = time.monotonic()
    while not condition():
        if time.monotonic() - started > timeout:
            pytest.fail(f"condition not met within {timeout} s; client: {client!r}")
        client.poll(20)
    return time.monotonic() - started


def load_metadata(client: NetworkClient, topic: str | None = None) -> None:
    if topic is not None:
        client.metadata.add_topic(topic, client.now())
        poll_until(client, lambda: client.metadata.cluster.has_topic(topic))
    else:
        poll_until(client, lambda: not client.metadata.cluster.is_bootstrap)


def connect(client: NetworkClient, node_id: int) -> float:
    return poll_until(client, lambda: client.ready(node_id, client.now()))


def only_node(client: NetworkClient) -> int:
    [node_id] = client.metadata.cluster.brokers
    return node_id


def produce_request(topic: str, partition: int, batch: bytes, acks: int = -1) -> ProduceRequest:
    return ProduceRequest(
        acks=acks,
        timeout_ms=10_000,
        topic_data=[
            TopicProduceData(
                name=topic, partition_data=[PartitionProduceData(index=partition, records=batch)]
            )
        ],
    )


def send_and_wait(client: NetworkClient, node_id: int, request: ProduceRequest) -> ClientResponse:
    responses: list[ClientResponse] = []
    client.send(node_id, request, responses.append)
    poll_until(client, lambda: bool(responses))
    return responses[0]


def open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


class IoThread:
    """Polls the client in a thread, as the producer's Sender will."""

    def __init__(self, client: NetworkClient) -> None:
        self._client = client
        self._stop = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="test-io-thread")

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                self._client.poll(1_000)
        except BaseException as error:  # handed to the test in __exit__
            self._error = error

    def __enter__(self) -> IoThread:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._client.wakeup()
        self._thread.join(timeout=5)
        assert not self._thread.is_alive()
        if self._error is not None:
            raise self._error


# --------------------------------------------------------------------------- connecting


def test_connect_checks_api_versions_and_chooses_the_same_versions_as_the_protocol_layer(
    broker: LocalBroker,
) -> None:
    with network_client(settings_for(broker.bootstrap_servers)) as client:
        assert client.node_ids == (-1,)
        load_metadata(client)
        node_id = only_node(client)
        assert client.node_ids == (node_id,)
        # The bootstrap connection reaches the advertised address: it is kept, not redone.
        assert client.connection_state(node_id) is ConnectionState.READY
        versions = dict(client.api_versions(node_id))

    with BlockingConnection(broker.host, broker.port) as conn:
        answer = conn.request(ApiVersionsRequest(), 0, ApiVersionsResponse)
    expected = choose_versions(broker_version_ranges(answer))
    assert versions == expected
    assert versions[ProduceRequest.API_KEY] >= 9 and versions[MetadataRequest.API_KEY] >= 9


def test_bootstrap_tries_the_next_server_when_the_first_is_dead(
    broker: LocalBroker, caplog: pytest.LogCaptureFixture
) -> None:
    dead_port = find_free_port()
    servers = f"127.0.0.1:{dead_port},{broker.bootstrap_servers}"
    with network_client(settings_for(servers)) as client:
        assert client.node_ids == (-1, -2)
        with caplog.at_level(logging.WARNING, logger="kafkaline.net.connection"):
            took = poll_until(client, lambda: not client.metadata.cluster.is_bootstrap)
        assert took < 2.0
        assert client.node_ids == tuple(client.metadata.cluster.brokers)
    failures = [r.getMessage() for r in caplog.records if f":{dead_port}" in r.getMessage()]
    assert failures and "node -1" in failures[0] and "Connection refused" in failures[0]


# --------------------------------------------------------------------------- metadata


def test_metadata_for_a_topic_waited_for_from_another_thread(
    broker: LocalBroker, make_topic: TopicFactory
) -> None:
    topic = make_topic(partitions=6)
    with network_client(settings_for(broker.bootstrap_servers)) as client, IoThread(client):
        cluster = client.metadata.wait_for_topic(topic, 10_000)
    assert cluster.partition_count(topic) == 6
    assert cluster.available_partitions(topic) == (0, 1, 2, 3, 4, 5)
    [node_id] = cluster.brokers
    for partition in cluster.partitions_for(topic):
        assert partition.leader == node_id and partition.leader_epoch >= 0
        assert cluster.leader_for(partition.topic_partition) == cluster.brokers[node_id]
    assert len(cluster.partitions_for_node(node_id)) == 6
    assert cluster.topic_id(topic) is not None


def test_unknown_topic_times_out_with_the_brokers_error_and_is_not_created(
    broker: LocalBroker,
) -> None:
    missing = f"missing-{uuid.uuid4().hex[:12]}"
    with network_client(settings_for(broker.bootstrap_servers)) as client, IoThread(client):
        started = time.monotonic()
        with pytest.raises(KafkaTimeoutError) as caught:
            client.metadata.wait_for_topic(missing, 500)
        took = time.monotonic() - started
    assert 0.45 < took < 2.0
    assert f"{missing!r} not present in metadata after 500 ms" in str(caught.value)
    assert "UNKNOWN_TOPIC_OR_PARTITION" in str(caught.value)
    # Asking did not create it (Tansu honours allow_auto_topic_creation=False).
    with BlockingConnection(broker.host, broker.port) as conn:
        everything = conn.request(MetadataRequest(topics=None), 12, MetadataResponse)
    assert missing not in {item.name for item in everything.topics}


# --------------------------------------------------------------------------- produce


def test_produce_round_trip_returns_offsets_and_the_records_read_back(
    broker: LocalBroker, make_topic: TopicFactory
) -> None:
    topic = make_topic(partitions=6)
    values = [[b"a", b"b", b"c"], [b"d", b"e"]]
    with network_client(settings_for(broker.bootstrap_servers)) as client:
        load_metadata(client, topic)
        leader = client.metadata.cluster.leader_for(TopicPartition(topic, 4))
        assert leader is not None
        connect(client, leader.node_id)
        offsets = []
        for batch_values in values:
            batch = build_record_batch([None] * len(batch_values), batch_values, 1_700_000_000_000)
            response = send_and_wait(client, leader.node_id, produce_request(topic, 4, batch))
            assert response.latency_ms >= 0
            [answer] = response.response_as(ProduceResponse).responses[0].partition_responses
            assert (answer.index, answer.error_code) == (4, 0)
            offsets.append(answer.base_offset)
        version = client.api_versions(leader.node_id)[1]
    assert offsets == [0, 3]
    with BlockingConnection(broker.host, broker.port) as conn:
        batches = fetch_partition(conn, topic, 4, version, expected_records=5)
    assert [record.value for b in batches for record in b.records] == [b"a", b"b", b"c", b"d", b"e"]


def test_acks_zero_completes_once_written_and_the_next_response_still_matches(
    broker: LocalBroker, topic: str
) -> None:
    with network_client(settings_for(broker.bootstrap_servers)) as client:
        load_metadata(client, topic)
        node_id = only_node(client)
        connect(client, node_id)
        no_ack = produce_request(topic, 0, build_record_batch([None, None], [b"1", b"2"], 0), 0)
        completed = send_and_wait(client, node_id, no_ack)
        assert completed.response is None and completed.error is None
        assert client.in_flight_request_count(node_id) == 0
        # Tansu answers acks=0 anyway; that answer must not be taken for this one's.
        acked = send_and_wait(
            client, node_id, produce_request(topic, 0, build_record_batch([None], [b"3"], 0))
        )
        [answer] = acked.response_as(ProduceResponse).responses[0].partition_responses
        assert (answer.error_code, answer.base_offset) == (0, 2)


# --------------------------------------------------------------------------- failures


def test_reconnects_with_backoff_after_the_broker_stops_and_starts(
    broker: LocalBroker, topic: str
) -> None:
    backoff = ExponentialBackoff(initial_ms=20, max_ms=200, jitter=0.0)
    # The known node's own backoff is watched: with one broker, re-bootstrapping (the
    # default) would swap it for the bootstrap address as soon as it is in backoff.
    settings = settings_for(
        broker.bootstrap_servers, reconnect_backoff=backoff, metadata_recovery_strategy="none"
    )
    with network_client(settings) as client:
        load_metadata(client, topic)
        node_id = only_node(client)
        connect(client, node_id)
        in_flight: list[ClientResponse] = []
        broker.stop()
        # The request may be written before the kernel reports the closed socket.
        client.send(node_id, MetadataRequest(topics=[]), in_flight.append)
        poll_until(client, lambda: client.connection_state(node_id) is ConnectionState.DISCONNECTED)
        poll_until(client, lambda: bool(in_flight))
        assert isinstance(in_flight[0].error, KafkaConnectionError)
        assert f"node {node_id} at {broker.bootstrap_servers}" in str(in_flight[0].error)

        # While the broker is down, attempts are refused and the wait grows to its maximum.
        delays = []
        for _ in range(6):
            poll_until(client, lambda: client.connection_delay(node_id, client.now()) == 0)
            client.ready(node_id, client.now())
            poll_until(client, lambda: client.connection_state(node_id)
                       is ConnectionState.DISCONNECTED)  # fmt: skip
            delays.append(client.connection_delay(node_id, client.now()))
        assert isinstance(client.connection_error(node_id), KafkaConnectionError)
        assert delays[-1] > 100 and max(delays) <= 200

        broker.start()
        took = connect(client, node_id)
        assert took < 0.2 + 0.5
        response = send_and_wait(
            client, node_id, produce_request(topic, 1, build_record_batch([None], [b"x"], 0))
        )
        [answer] = response.response_as(ProduceResponse).responses[0].partition_responses
        assert answer.error_code == 0


def test_idle_connection_is_closed_and_reopened_without_backoff(broker: LocalBroker) -> None:
    settings = settings_for(broker.bootstrap_servers, connections_max_idle_ms=200)
    with network_client(settings) as client:
        load_metadata(client)
        node_id = only_node(client)
        connect(client, node_id)
        fds_connected = len(open_fds())
        started = time.monotonic()
        poll_until(client, lambda: client.connection_state(node_id) is ConnectionState.DISCONNECTED)
        assert 0.15 < time.monotonic() - started < 1.0
        assert client.connection_error(node_id) is None
        assert len(open_fds()) == fds_connected - 1
        assert client.connection_delay(node_id, client.now()) == 0
        connect(client, node_id)


def test_wakeup_interrupts_a_long_poll(broker: LocalBroker) -> None:
    with network_client(settings_for(broker.bootstrap_servers)) as client:
        load_metadata(client)
        timer = threading.Timer(0.1, client.wakeup)
        timer.start()
        started = time.monotonic()
        client.poll(10_000)
        took = time.monotonic() - started
        timer.join()
        assert 0.08 < took < 1.0

        client.wakeup()  # a wakeup before the poll makes it return at once
        client.wakeup()
        started = time.monotonic()
        client.poll(10_000)
        assert time.monotonic() - started < 0.1
        started = time.monotonic()
        client.poll(50)  # and it is consumed: the next poll waits again
        assert time.monotonic() - started >= 0.04


def test_wakeups_racing_with_polls_are_never_lost_and_leave_nothing_behind(
    broker: LocalBroker,
) -> None:
    # The poll reads the wakeup byte without the lock wakeup() writes it under: hammer both.
    with network_client(settings_for(broker.bootstrap_servers)) as client:
        load_metadata(client)
        stop = threading.Event()

        def hammer() -> None:
            while not stop.is_set():
                client.wakeup()

        hammers = [threading.Thread(target=hammer) for _ in range(2)]
        for thread in hammers:
            thread.start()
        try:
            for _ in range(300):
                client.poll(10_000)  # each returns: a wakeup is always on its way
        finally:
            stop.set()
            for thread in hammers:
                thread.join()
        for _ in range(20):
            waker = threading.Timer(0.01, client.wakeup)
            waker.start()
            started = time.monotonic()
            client.poll(10_000)
            waker.join()
            assert time.monotonic() - started < 1.0  # a later wakeup() still interrupts
        client.poll(0)
        started = time.monotonic()
        client.poll(50)  # nothing left pending: the poll waits
        assert time.monotonic() - started >= 0.04


def test_close_fails_requests_in_flight_and_leaves_no_file_descriptor(
    broker: LocalBroker, topic: str
) -> None:
    before = open_fds()
    client = NetworkClient(settings_for(broker.bootstrap_servers))
    load_metadata(client, topic)
    node_id = only_node(client)
    connect(client, node_id)
    send_and_wait(client, node_id, produce_request(topic, 0, build_record_batch([None], [b"x"], 0)))
    failed: list[ClientResponse] = []
    client.send(node_id, MetadataRequest(topics=[]), failed.append)
    assert len(open_fds()) > len(before)
    returned = client.close()
    assert [response.error for response in returned] == [failed[0].error]
    assert "closed by the client" in str(failed[0].error)
    assert open_fds() == before
    assert client.close() == []  # idempotent
    with pytest.raises(Exception, match="closed"):
        client.poll(0)


def test_fd_count_is_stable_across_many_clients(broker: LocalBroker) -> None:
    before = open_fds()
    for _ in range(5):
        with network_client(settings_for(broker.bootstrap_servers)) as client:
            load_metadata(client)
    assert open_fds() == before
