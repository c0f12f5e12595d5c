"""NetworkClient's decisions with a fake clock and in-memory brokers: which node gets the
metadata request, bootstrap rotation, metadata first, nodes following the metadata, callbacks.

The fake transports hand the selector one end of a socketpair, so the real selector works; the
broker's answers are computed in memory the moment a request is written."""

from __future__ import annotations

import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import pytest

from kafkaline.config import ExponentialBackoff
from kafkaline.errors import IllegalStateError, KafkaConnectionError, RequestTimeoutError
from kafkaline.net import ClientResponse, ConnectionState, NetworkClient, NetworkSettings
from kafkaline.net.cluster import TopicPartition
from kafkaline.net.transport import ResolvedAddress, Transport
from kafkaline.protocol import CLIENT_VERSIONS, Response
from kafkaline.protocol.api import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    MetadataRequest,
    MetadataResponse,
)
from kafkaline.protocol.api.api_versions import ApiVersion
from kafkaline.protocol.api.metadata import (
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from kafkaline.protocol.headers import ResponseHeader, response_header_version

_HEADER = struct.Struct(">ihhi")
# A numeric address: resolving it needs no DNS; the memory transports ignore it anyway.
HOST = "127.0.0.1"


@dataclass
class Cluster:
    """In-memory brokers: which addresses accept connections and what Metadata says."""

    reachable: set[int] = field(default_factory=set)  # ports that accept connections
    brokers: list[tuple[int, int]] = field(default_factory=list)  # (node id, port)
    topics: dict[str, int] = field(default_factory=dict)
    answer_metadata: bool = True
    requests: list[tuple[int, int]] = field(default_factory=list)  # (port, api key)
    transports: list[MemoryTransport] = field(default_factory=list)

    def metadata(self) -> MetadataResponse:
        return MetadataResponse(
            brokers=[
                MetadataResponseBroker(node_id=node, host=HOST, port=port)
                for node, port in self.brokers
            ],
            topics=[
                MetadataResponseTopic(
                    name=name,
                    partitions=[
                        MetadataResponsePartition(partition_index=i, leader_id=self.brokers[0][0])
                        for i in range(count)
                    ],
                )
                for name, count in self.topics.items()
            ],
        )

    def answer(self, port: int, api_key: int) -> Response | None:
        self.requests.append((port, api_key))
        if api_key == ApiVersionsRequest.API_KEY:
            return ApiVersionsResponse(
                api_keys=[
                    ApiVersion(api_key=key, min_version=r.min, max_version=r.max)
                    for key, r in CLIENT_VERSIONS.items()
                ]
            )
        if api_key == MetadataRequest.API_KEY and self.answer_metadata:
            return self.metadata()
        return None


class MemoryTransport:
    def __init__(self, cluster: Cluster, port: int) -> None:
        self._cluster = cluster
        self.port = port
        self._reader, self._signal = socket.socketpair()
        self._incoming = bytearray()
        self._outgoing = bytearray()
        self.closed = False

    @property
    def description(self) -> str:
        return f"mem:{self.port}"

    def fileno(self) -> int:
        return self._reader.fileno()

    def connect(self) -> bool:
        if self.port not in self._cluster.reachable:
            raise KafkaConnectionError(f"cannot connect to broker at mem:{self.port}: refused")
        return True

    def finish_connect(self) -> None:
        pass

    def handshake(self) -> int:
        return 0

    def send(self, buffers: Sequence[memoryview]) -> int:
        data = b"".join(bytes(buffer) for buffer in buffers)
        self._outgoing += data
        while len(self._outgoing) >= 4:
            size, api_key, version, correlation_id = _HEADER.unpack_from(self._outgoing)
            if len(self._outgoing) < 4 + size:
                break
            del self._outgoing[: 4 + size]
            response = self._cluster.answer(self.port, api_key)
            if response is None:
                continue
            body = bytearray()
            flexible = type(response).is_flexible(version)
            header = response_header_version(api_key, flexible)
            ResponseHeader(correlation_id=correlation_id).encode_into(body, header)
            response.encode_into(body, version)
            self._incoming += struct.pack(">i", len(body)) + body
            self._signal.send(b"!")  # make the selector report the socket readable
        return len(data)

    def recv_into(self, buffer: memoryview) -> int:
        if not self._incoming:
            return 0
        self._reader.recv(4096)
        count = min(len(buffer), len(self._incoming))
        buffer[:count] = self._incoming[:count]
        del self._incoming[:count]
        return count

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._reader.close()
            self._signal.close()


class FakeClock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def cluster() -> Cluster:
    return Cluster()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def make_client(cluster: Cluster, clock: FakeClock) -> Iterator[Callable[..., NetworkClient]]:
    clients: list[NetworkClient] = []

    def make(ports: Sequence[int], **changes: object) -> NetworkClient:
        def transport(host: str, port: int, address: ResolvedAddress) -> Transport:
            made = MemoryTransport(cluster, port)
            cluster.transports.append(made)
            return made

        settings = NetworkSettings(
            bootstrap_servers=tuple((HOST, port) for port in ports),
            reconnect_backoff=ExponentialBackoff(initial_ms=50, max_ms=1_000, jitter=0.0),
            metadata_refresh_backoff=ExponentialBackoff(initial_ms=100, max_ms=1_000, jitter=0.0),
            metadata_max_age_ms=60_000,
            **changes,  # type: ignore[arg-type]
        )
        client = NetworkClient(
            settings,
            clock=clock,
            transport_factory=transport,
            rng=NoJitter(),
        )
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()
    for made in cluster.transports:
        made.close()


class NoJitter:
    def uniform(self, a: float, b: float, /) -> float:
        return (a + b) / 2


def test_bootstrap_servers_are_tried_in_turn_until_one_answers(
    cluster: Cluster, clock: FakeClock, make_client: Callable[..., NetworkClient]
) -> None:
    cluster.reachable = {3}
    cluster.brokers = [(7, 3)]
    client = make_client([1, 2, 3])
    client.poll(0)  # -1 refused, -2 refused, -3 connects: all in one poll
    assert [t.port for t in cluster.transports] == [1, 2, 3]
    assert isinstance(client.connection_error(-1), KafkaConnectionError)
    client.poll(0)
    assert client.node_ids == (7,)  # the bootstrap connection to port 3 became node 7
    assert client.connection_state(7) is ConnectionState.READY
    assert (3, MetadataRequest.API_KEY) in cluster.requests


def test_metadata_waits_for_the_reconnect_backoff_when_no_node_is_reachable(
    cluster: Cluster, clock: FakeClock, make_client: Callable[..., NetworkClient]
) -> None:
    client = make_client([1, 2])
    client.poll(0)
    assert len(cluster.transports) == 2
    assert client.least_loaded_node(clock.now) is None
    clock.now += 49
    client.poll(0)
    assert len(cluster.transports) == 2  # still in backoff: no attempt
    clock.now += 1
    cluster.reachable = {2}
    cluster.brokers = [(5, 2)]
    client.poll(0)
    client.poll(0)
    assert client.node_ids == (5,)


def test_least_loaded_node_prefers_ready_then_connecting_then_connectable(
    cluster: Cluster, clock: FakeClock, make_client: Callable[..., NetworkClient]
) -> None:
    cluster.reachable = {1, 2, 3}
    cluster.brokers = [(1, 1), (2, 2), (3, 3)]
    cluster.answer_metadata = True
    client = make_client([1], max_in_flight_requests_per_connection=2)
    client.poll(0)
    client.poll(0)
    assert client.node_ids == (1, 2, 3)
    assert client.least_loaded_node(clock.now) == 1  # the only ready one
    cluster.answer_metadata = False
    client.send(1, MetadataRequest(topics=[]))
    assert client.ready(2, clock.now) is False  # starts connecting
    # A ready node with room for a request beats one still connecting...
    assert {client.least_loaded_node(clock.now) for _ in range(6)} == {1}
    client.send(1, MetadataRequest(topics=[]))
    # ...but a full one does not; a connecting one beats one that may only start connecting.
    assert {client.least_loaded_node(clock.now) for _ in range(6)} == {2}
    client.poll(0)  # node 2 becomes ready with nothing in flight
    assert {client.least_loaded_node(clock.now) for _ in range(6)} == {2}


def test_metadata_goes_first_so_nodes_are_not_ready_while_it_is_due(
    cluster: Cluster, clock: FakeClock, make_client: Callable[..., NetworkClient]
) -> None:
    cluster.reachable = {1}
    cluster.brokers = [(1, 1)]
    client = make_client([1])
    client.poll(0)
    client.poll(0)
    assert client.is_ready(1, clock.now)
    client.metadata.request_update()
    clock.now += 100  # the refresh backoff after the last refresh is over
    assert not client.is_ready(1, clock.now)
    client.poll(0, clock.now)
    assert client.is_ready(1, clock.now)


def test_periodic_refresh_after_metadata_max_age(
    cluster: Cluster, clock: FakeClock, make_client: Callable[..., NetworkClient]
) -> None:
    cluster.reachable = {1}
    cluster.brokers = [(1, 1)]
    client = make_client([1])
    client.poll(0)
    client.poll(0)
    count = cluster.requests.count((1, MetadataRequest.API_KEY))
    clock.now += 59_999
    client.poll(0)
    assert cluster.requests.count((1, MetadataRequest.API_KEY)) == count
    clock.now += 1
    client.poll(0)
    assert cluster.requests.count((1, MetadataRequest.API_KEY)) == count + 1


def test_a_new_topic_is_asked_for_and_nodes_follow_the_metadata(
    cluster: Cluster, clock: FakeClock, make_client: Callable[..., NetworkClient]
) -> None:
    cluster.reachable = {1, 2}
    cluster.brokers = [(1, 1), (2, 2)]
    client = make_client([1])
    client.poll(0)
    client.poll(0)
    assert client.node_ids == (1, 2)
    cluster.topics = {"events": 3}
    client.metadata.add_topic("events", clock.now)
    client.poll(0)  # no refresh backoff for a new topic
    client.poll(0)
    assert client.metadata.cluster.partition_count("events") == 3

    assert client.ready(2, clock.now) is False
    client.poll(0)
    assert client.connection_state(2) is ConnectionState.READY
    cluster.brokers = [(1, 1)]
    client.metadata.request_update()
    clock.now += 100
    client.poll(0)
    client.poll(0)
    assert list(client.node_ids) == [1]
    node_2 = [t for t in cluster.transports if t.port == 2]
    assert node_2 and all(t.closed for t in node_2)
    with pytest.raises(IllegalStateError, match="node 2 is not in the cluster metadata"):
        client.ready(2, clock.now)


def test_callbacks_all_run_and_the_first_error_is_raised_after(
    cluster: Cluster, clock: FakeClock, make_client: Callable[..., NetworkClient]
) -> None:
    cluster.reachable = {1}
    cluster.brokers = [(1, 1)]
    client = make_client([1])
    client.poll(0)
    client.poll(0)
    seen: list[int] = []

    def failing(response: ClientResponse) -> None:
        seen.append(response.correlation_id)
        raise RuntimeError(f"callback {response.correlation_id} failed")

    first = client.send(1, MetadataRequest(topics=[]), failing)
    second = client.send(1, MetadataRequest(topics=[]), failing)
    with pytest.raises(RuntimeError, match=f"callback {first} failed"):
        client.poll(0)
    assert seen == [first, second]


def test_poll_returns_responses_but_not_the_clients_own_metadata(
    cluster: Cluster, clock: FakeClock, make_client: Callable[..., NetworkClient]
) -> None:
    cluster.reachable = {1}
    cluster.brokers = [(1, 1)]
    client = make_client([1])
    assert client.poll(0) == []
    assert client.poll(0) == []  # the metadata response was the client's own
    correlation_id = client.send(1, MetadataRequest(topics=[]))
    [response] = client.poll(0)
    assert response.correlation_id == correlation_id
    assert isinstance(response.response, MetadataResponse)


def test_send_to_a_node_that_is_not_ready_is_refused(
    cluster: Cluster, clock: FakeClock, make_client: Callable[..., NetworkClient]
) -> None:
    client = make_client([1])
    with pytest.raises(IllegalStateError, match="cannot send Metadata"):
        client.send(-1, MetadataRequest(topics=[]))
    assert client.connection_delay(-1, clock.now) == 0


def test_poll_fails_an_unanswered_request_at_its_deadline_not_before(
    cluster: Cluster, clock: FakeClock, make_client: Callable[..., NetworkClient]
) -> None:
    # poll() scans for timeouts only once the earliest deadline has passed: check that the
    # scan still comes at that deadline, for a request sent between two polls.
    cluster.reachable = {1}
    cluster.brokers = [(1, 1)]
    client = make_client([1], request_timeout_ms=500)
    client.poll(0)
    client.poll(0)
    cluster.answer_metadata = False  # this broker now never answers
    outcomes: list[ClientResponse] = []
    clock.now += 10
    client.send(1, MetadataRequest(topics=[]), outcomes.append)
    clock.now += 499
    assert client.poll(0) == []
    assert client.in_flight_request_count(1) == 1
    clock.now += 1
    [response] = client.poll(0)
    assert outcomes == [response]
    assert isinstance(response.error, RequestTimeoutError)
    assert client.connection_state(1) is ConnectionState.DISCONNECTED


def test_a_request_sent_after_the_clock_went_back_still_times_out_at_its_deadline(
    cluster: Cluster, clock: FakeClock, make_client: Callable[..., NetworkClient]
) -> None:
    # poll() looks the connections' deadlines up only once a bound found earlier has passed;
    # a request sent at an earlier time than that bound was found (a fake clock set back)
    # lowers the bound, so its timeout is not missed.
    cluster.reachable = {1}
    cluster.brokers = [(1, 1)]
    client = make_client([1], request_timeout_ms=500)
    client.poll(0)
    client.poll(0)
    cluster.answer_metadata = False
    clock.now += 10_000
    client.poll(0)  # the bound: no deadline before now + 500
    clock.now -= 10_000
    outcomes: list[ClientResponse] = []
    client.send(1, MetadataRequest(topics=[]), outcomes.append)
    clock.now += 499
    assert client.poll(0) == []
    clock.now += 1
    [response] = client.poll(0)
    assert outcomes == [response]
    assert isinstance(response.error, RequestTimeoutError)


def test_poll_closes_an_idle_connection_after_connections_max_idle_ms(
    cluster: Cluster, clock: FakeClock, make_client: Callable[..., NetworkClient]
) -> None:
    cluster.reachable = {1}
    cluster.brokers = [(1, 1)]
    client = make_client([1], connections_max_idle_ms=1_000)
    client.poll(0)
    client.poll(0)
    assert client.connection_state(1) is ConnectionState.READY
    clock.now += 999
    client.poll(0)
    assert client.connection_state(1) is ConnectionState.READY
    clock.now += 1
    client.poll(0)
    assert client.connection_state(1) is ConnectionState.DISCONNECTED
    assert client.connection_error(1) is None  # closed on purpose: no failure, no backoff


def test_a_metadata_refresh_asked_from_another_thread_is_seen_by_the_next_poll(
    cluster: Cluster, clock: FakeClock, make_client: Callable[..., NetworkClient]
) -> None:
    # Metadata.time_to_next_update reads its flags without the lock (see its comment).
    cluster.reachable = {1}
    cluster.brokers = [(1, 1)]
    client = make_client([1])
    client.poll(0)
    client.poll(0)
    count = cluster.requests.count((1, MetadataRequest.API_KEY))
    clock.now += 100  # past the refresh backoff
    assert client.metadata.time_to_next_update(clock.now) > 0
    asker = threading.Thread(target=client.metadata.request_update)
    asker.start()
    asker.join()
    assert client.metadata.time_to_next_update(clock.now) == 0
    client.poll(0)
    assert cluster.requests.count((1, MetadataRequest.API_KEY)) == count + 1


def test_wakeups_while_one_is_pending_write_one_byte_and_the_poll_after_returns_at_once(
    cluster: Cluster, make_client: Callable[..., NetworkClient]
) -> None:
    cluster.reachable = {1}
    cluster.brokers = [(7, 1)]
    client = make_client([1])
    client.poll(0)
    client.poll(0)
    assert client.node_ids == (7,)
    for _ in range(1000):  # send()'s general path, per record behind a full batch
        client.wakeup()
    receiver = client._wakeup.receiver
    assert len(receiver.recv(64, socket.MSG_PEEK)) == 1  # one byte, not one per call
    started = time.monotonic()
    client.poll(10_000)  # reads it
    assert time.monotonic() - started < 5
    client.wakeup()  # after the poll read the byte: a new one, the next poll returns too
    started = time.monotonic()
    client.poll(10_000)
    assert time.monotonic() - started < 5


def lose_node_seven(cluster: Cluster, clock: FakeClock, client: NetworkClient) -> None:
    """Node 7 (port 1), the only broker the client knows, goes away for good; the broker at
    bootstrap port 2 (node 8) stays. Its idle connection is closed and a refresh is due."""
    client.poll(0)
    client.poll(0)
    assert client.node_ids == (7,)
    cluster.reachable = {2}
    cluster.brokers = [(8, 2)]
    clock.now += 1_000  # connections_max_idle_ms: the connection to node 7 is closed
    client.poll(0)
    assert client.connection_state(7) is ConnectionState.DISCONNECTED
    client.metadata.request_update()
    clock.now += 1_000


def test_when_no_known_broker_is_reachable_the_client_goes_back_to_the_bootstrap_servers(
    cluster: Cluster, clock: FakeClock, make_client: Callable[..., NetworkClient]
) -> None:
    cluster.reachable = {1, 2}
    cluster.brokers = [(7, 1)]  # each broker names only itself
    cluster.topics = {"t": 2}
    client = make_client([1, 2], connections_max_idle_ms=1_000)
    client.metadata.add_topic("t", clock.now)
    lose_node_seven(cluster, clock, client)
    client.poll(0)  # node 7 refused: no known broker left, back to ports 1 and 2
    assert client.rebootstrap_count == 1
    # The topics stay known (send() can still choose partitions), their leaders do not.
    assert client.metadata.cluster.is_bootstrap
    assert client.metadata.cluster.partition_count("t") == 2
    assert client.metadata.cluster.leader_for(TopicPartition("t", 0)) is None
    for _ in range(3):
        client.poll(0)
    assert client.node_ids == (8,)
    assert client.metadata.cluster.brokers[8].port == 2
    assert (2, MetadataRequest.API_KEY) in cluster.requests


def test_without_rebootstrap_the_client_keeps_trying_the_known_broker(
    cluster: Cluster, clock: FakeClock, make_client: Callable[..., NetworkClient]
) -> None:
    cluster.reachable = {1, 2}
    cluster.brokers = [(7, 1)]
    client = make_client([1, 2], connections_max_idle_ms=1_000, metadata_recovery_strategy="none")
    lose_node_seven(cluster, clock, client)
    for _ in range(20):
        client.poll(0)
        clock.now += 500
    assert client.rebootstrap_count == 0
    assert client.node_ids == (7,)
    assert isinstance(client.connection_error(7), KafkaConnectionError)


def test_the_bootstrap_view_is_not_rebootstrapped_again_and_keeps_its_backoff(
    cluster: Cluster, clock: FakeClock, make_client: Callable[..., NetworkClient]
) -> None:
    cluster.reachable = {1}
    cluster.brokers = [(7, 1)]
    client = make_client([1, 2], connections_max_idle_ms=1_000)
    lose_node_seven(cluster, clock, client)
    cluster.reachable = set()  # nobody at all
    client.poll(0)
    assert client.rebootstrap_count == 1
    attempts = len(cluster.transports)
    for _ in range(10):
        client.poll(0)  # the clock stands: every bootstrap address is in backoff
    assert client.rebootstrap_count == 1
    assert len(cluster.transports) == attempts


def test_refreshes_failing_for_the_trigger_time_also_rebootstrap(
    cluster: Cluster, clock: FakeClock, make_client: Callable[..., NetworkClient]
) -> None:
    cluster.reachable = {1, 2}
    cluster.brokers = [(7, 1)]
    client = make_client(
        [1, 2], request_timeout_ms=500, metadata_recovery_rebootstrap_trigger_ms=2_000
    )
    client.poll(0)
    client.poll(0)
    assert client.node_ids == (7,)
    cluster.answer_metadata = False  # node 7 is reachable but never answers Metadata
    client.metadata.request_update()
    started = clock.now
    while client.rebootstrap_count == 0 and clock.now - started < 10_000:
        clock.now += 250
        client.poll(0)
    assert client.rebootstrap_count == 1
    # The first refresh failed at its request timeout (500 ms); 2 s of failures later, at
    # the next refresh the backoff allows, the client went back.
    assert 2_500 <= clock.now - started <= 3_500 + 1_000
    cluster.answer_metadata = True
    cluster.brokers = [(8, 2)]
    for _ in range(5):
        clock.now += 100
        client.poll(0)
    assert 8 in client.node_ids
