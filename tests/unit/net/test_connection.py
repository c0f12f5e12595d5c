"""BrokerConnection without a network: a scripted transport and a fake clock drive the state
machine, ApiVersions negotiation, in-flight bookkeeping, timeouts and the reconnect backoff."""

from __future__ import annotations

import socket
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import pytest

from kafkaline.config import ExponentialBackoff
from kafkaline.errors import (
    ConnectionSetupTimeoutError,
    CorrelationIdMismatchError,
    IllegalStateError,
    KafkaConnectionError,
    KafkaTimeoutError,
    NoCompatibleVersionError,
    RequestTimeoutError,
    SaslAuthenticationFailedError,
    UnknownServerError,
)
from kafkaline.net.connection import (
    Authenticator,
    BrokerConnection,
    Completion,
    ConnectionState,
    SetupRequest,
)
from kafkaline.net.settings import NetworkSettings
from kafkaline.net.transport import EVENT_READ, EVENT_WRITE, ResolvedAddress, Transport
from kafkaline.protocol import CLIENT_VERSIONS, Request, Response, VersionRange
from kafkaline.protocol.api import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    MetadataRequest,
    MetadataResponse,
    ProduceRequest,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)
from kafkaline.protocol.api.api_versions import ApiVersion
from kafkaline.protocol.api.produce import PartitionProduceData, TopicProduceData
from kafkaline.protocol.headers import RequestHeader, ResponseHeader, response_header_version
from kafkaline.protocol.primitives import Reader
from kafkaline.protocol.schema import read_message

# --------------------------------------------------------------------------- a scripted broker


@dataclass
class FakeTransport:
    """A Transport whose peer is the test: it records what the client writes and serves
    what the test queues."""

    connect_error: KafkaConnectionError | None = None
    connects_at_once: bool = False
    finish_error: KafkaConnectionError | None = None
    handshake_events: list[int] = field(default_factory=list)
    #: At most this many bytes are taken per send() (None: everything).
    accept_per_send: int | None = None
    sent: bytearray = field(default_factory=bytearray)
    incoming: bytearray = field(default_factory=bytearray)
    eof: bool = False
    closed: bool = False
    send_calls: int = 0
    #: The bytes offered to each send().
    offered: list[int] = field(default_factory=list)

    @property
    def description(self) -> str:
        return "fake:9092"

    def fileno(self) -> int:
        return 1000

    def connect(self) -> bool:
        if self.connect_error is not None:
            raise self.connect_error
        return self.connects_at_once

    def finish_connect(self) -> None:
        if self.finish_error is not None:
            raise self.finish_error

    def handshake(self) -> int:
        return self.handshake_events.pop(0) if self.handshake_events else 0

    def send(self, buffers: Sequence[memoryview]) -> int:
        self.send_calls += 1
        data = b"".join(bytes(buffer) for buffer in buffers)
        self.offered.append(len(data))
        taken = len(data) if self.accept_per_send is None else min(self.accept_per_send, len(data))
        self.sent += data[:taken]
        return taken

    def recv_into(self, buffer: memoryview) -> int:
        if not self.incoming:
            if self.eof:
                raise KafkaConnectionError("broker at fake:9092 closed the connection")
            return 0
        count = min(len(buffer), len(self.incoming))
        buffer[:count] = self.incoming[:count]
        del self.incoming[:count]
        return count

    def close(self) -> None:
        self.closed = True

    # ------------------------------------------------------------------ the broker's side

    def take_requests(self) -> list[tuple[RequestHeader, bytes]]:
        """The complete request frames written so far (consumed)."""
        frames = []
        while len(self.sent) >= 4:
            (size,) = struct.unpack_from(">i", self.sent)
            if len(self.sent) < 4 + size:
                break
            frame = bytes(self.sent[4 : 4 + size])
            del self.sent[: 4 + size]
            reader = Reader(frame)
            header = read_message(RequestHeader, reader, 1)
            frames.append((header, frame[reader.position :]))
        return frames

    def answer(self, header: RequestHeader, response: Response, version: int | None = None) -> None:
        version = header.request_api_version if version is None else version
        data = bytearray()
        flexible = type(response).is_flexible(version)
        header_version = response_header_version(header.request_api_key, flexible)
        ResponseHeader(correlation_id=header.correlation_id).encode_into(data, header_version)
        response.encode_into(data, version)
        self.incoming += struct.pack(">i", len(data)) + data


def api_versions_response(
    ranges: Mapping[int, VersionRange] = CLIENT_VERSIONS, error_code: int = 0
) -> ApiVersionsResponse:
    return ApiVersionsResponse(
        error_code=error_code,
        api_keys=[
            ApiVersion(api_key=key, min_version=r.min, max_version=r.max)
            for key, r in ranges.items()
        ],
    )


def produce_request(acks: int = -1, records: bytes = b"x" * 100) -> ProduceRequest:
    return ProduceRequest(
        acks=acks,
        timeout_ms=1000,
        topic_data=[
            TopicProduceData(
                name="t", partition_data=[PartitionProduceData(index=0, records=records)]
            )
        ],
    )


SETTINGS = NetworkSettings(
    bootstrap_servers=(("fake", 9092),),
    client_id="unit",
    request_timeout_ms=1_000,
    connection_setup_timeout_ms=500,
    reconnect_backoff=ExponentialBackoff(initial_ms=50, max_ms=1_000, jitter=0.0),
    max_in_flight_requests_per_connection=2,
    connections_max_idle_ms=10_000,
    client_software_version="1.2.3",
)


class NoRandom:
    def uniform(self, a: float, b: float, /) -> float:
        return (a + b) / 2


@dataclass
class Harness:
    """A connection, the transports it made (one per attempt) and what completed."""

    settings: NetworkSettings = SETTINGS
    script: list[FakeTransport] = field(default_factory=list)
    addresses: list[ResolvedAddress] = field(
        default_factory=lambda: [ResolvedAddress(socket.AF_INET, ("10.0.0.1", 9092))]
    )
    authenticator: Authenticator | None = None
    transports: list[FakeTransport] = field(default_factory=list)
    used_addresses: list[ResolvedAddress] = field(default_factory=list)
    completed: list[Completion] = field(default_factory=list)
    resolutions: int = 0
    conn: BrokerConnection = field(init=False)

    def __post_init__(self) -> None:
        authenticator = self.authenticator
        self.conn = BrokerConnection(
            7,
            "fake",
            9092,
            self.settings,
            self._make_transport,
            rng=NoRandom(),
            authenticator_factory=(lambda host, port: authenticator)
            if authenticator is not None
            else None,
            resolver=self._resolve,
        )

    def _resolve(self, host: str, port: int) -> list[ResolvedAddress]:
        self.resolutions += 1
        return self.addresses

    def _make_transport(self, host: str, port: int, address: ResolvedAddress) -> Transport:
        transport = self.script.pop(0) if self.script else FakeTransport()
        self.transports.append(transport)
        self.used_addresses.append(address)
        return transport

    @property
    def transport(self) -> FakeTransport:
        return self.transports[-1]

    def connect_ready(self, now: float = 0.0) -> None:
        """Connect and answer ApiVersions with every version kafkaline knows."""
        self.conn.connect(now, self.completed)
        self.conn.handle_events(EVENT_WRITE, now, self.completed)
        self.conn.handle_events(EVENT_WRITE, now, self.completed)
        [(header, _)] = self.transport.take_requests()
        self.transport.answer(header, api_versions_response())
        self.conn.handle_events(EVENT_READ, now, self.completed)
        assert state_of(self.conn) is ConnectionState.READY

    def send(self, request: Request, now: float = 0.0) -> int:
        return self.conn.send(request, now, self.completed, None)


def state_of(conn: BrokerConnection) -> ConnectionState:
    """The state, read through a call so mypy does not narrow it across transitions."""
    return conn.state


# --------------------------------------------------------------------------- connecting


def test_connect_then_api_versions_v3_naming_the_client_then_ready() -> None:
    harness = Harness()
    conn = harness.conn
    assert state_of(conn) is ConnectionState.DISCONNECTED and conn.interest() == 0
    conn.connect(0.0, harness.completed)
    assert state_of(conn) is ConnectionState.CONNECTING
    assert conn.interest() == EVENT_WRITE  # waiting for the TCP connect

    conn.handle_events(EVENT_WRITE, 1.0, harness.completed)
    assert state_of(conn) is ConnectionState.CHECKING_API_VERSIONS
    assert conn.interest() == EVENT_READ  # ApiVersions was written at once
    assert conn.in_flight_count == 1

    [(header, body)] = harness.transport.take_requests()
    assert (header.request_api_key, header.request_api_version) == (18, 3)
    assert header.client_id == "unit"
    request = ApiVersionsRequest.decode(body[1:], 3)  # after the header's tagged fields
    assert request.client_software_name == "kafkaline"
    assert request.client_software_version == "1.2.3"

    harness.transport.answer(header, api_versions_response())
    conn.handle_events(EVENT_READ, 2.0, harness.completed)
    assert state_of(conn) is ConnectionState.READY
    assert conn.api_versions[ProduceRequest.API_KEY] == CLIENT_VERSIONS[0].max
    assert conn.broker_api_versions[MetadataRequest.API_KEY] == CLIENT_VERSIONS[3]
    assert conn.can_send() and conn.last_error is None
    assert harness.completed == []  # setup requests never reach callers


def test_a_connection_made_at_once_skips_waiting_for_writability() -> None:
    harness = Harness(script=[FakeTransport(connects_at_once=True)])
    harness.conn.connect(0.0, harness.completed)
    assert state_of(harness.conn) is ConnectionState.CHECKING_API_VERSIONS


def test_tls_style_handshake_waits_for_the_events_the_transport_asks_for() -> None:
    harness = Harness(script=[FakeTransport(handshake_events=[EVENT_READ, EVENT_WRITE])])
    conn = harness.conn
    conn.connect(0.0, harness.completed)
    conn.handle_events(EVENT_WRITE, 0.0, harness.completed)  # TCP up, handshake wants READ
    assert state_of(conn) is ConnectionState.CONNECTING and conn.interest() == EVENT_READ
    conn.handle_events(EVENT_READ, 0.0, harness.completed)
    assert state_of(conn) is ConnectionState.CONNECTING and conn.interest() == EVENT_WRITE
    conn.handle_events(EVENT_WRITE, 0.0, harness.completed)
    assert state_of(conn) is ConnectionState.CHECKING_API_VERSIONS


def test_unsupported_api_versions_version_falls_back_to_the_brokers_maximum() -> None:
    harness = Harness()
    conn = harness.conn
    conn.connect(0.0, harness.completed)
    conn.handle_events(EVENT_WRITE, 0.0, harness.completed)
    conn.handle_events(EVENT_WRITE, 0.0, harness.completed)
    [(header, _)] = harness.transport.take_requests()
    # An older broker answers with error 35 and a v0 body listing its own ApiVersions range.
    old_broker = api_versions_response({18: VersionRange(0, 2)}, error_code=35)
    harness.transport.answer(header, old_broker, version=0)
    conn.handle_events(EVENT_READ, 0.0, harness.completed)
    conn.handle_events(EVENT_WRITE, 0.0, harness.completed)

    [(retry, _)] = harness.transport.take_requests()
    assert (retry.request_api_key, retry.request_api_version) == (18, 2)
    harness.transport.answer(retry, api_versions_response())
    conn.handle_events(EVENT_READ, 0.0, harness.completed)
    assert state_of(conn) is ConnectionState.READY


def test_unsupported_version_without_a_range_falls_back_to_v0() -> None:
    harness = Harness()
    conn = harness.conn
    conn.connect(0.0, harness.completed)
    conn.handle_events(EVENT_WRITE, 0.0, harness.completed)
    conn.handle_events(EVENT_WRITE, 0.0, harness.completed)
    [(header, _)] = harness.transport.take_requests()
    harness.transport.answer(header, api_versions_response({}, error_code=35), version=0)
    conn.handle_events(EVENT_READ | EVENT_WRITE, 0.0, harness.completed)
    conn.handle_events(EVENT_WRITE, 0.0, harness.completed)
    [(retry, _)] = harness.transport.take_requests()
    assert retry.request_api_version == 0


def test_api_versions_error_fails_the_connection_with_the_brokers_error() -> None:
    harness = Harness()
    conn = harness.conn
    conn.connect(0.0, harness.completed)
    conn.handle_events(EVENT_WRITE, 0.0, harness.completed)
    conn.handle_events(EVENT_WRITE, 0.0, harness.completed)
    [(header, _)] = harness.transport.take_requests()
    harness.transport.answer(header, api_versions_response(error_code=-1))
    conn.handle_events(EVENT_READ, 10.0, harness.completed)
    assert state_of(conn) is ConnectionState.DISCONNECTED
    assert isinstance(conn.last_error, UnknownServerError)
    assert "ApiVersions" in str(conn.last_error)
    assert harness.transport.closed


def test_a_broker_without_a_required_api_is_refused_by_name() -> None:
    harness = Harness()
    conn = harness.conn
    conn.connect(0.0, harness.completed)
    conn.handle_events(EVENT_WRITE, 0.0, harness.completed)
    conn.handle_events(EVENT_WRITE, 0.0, harness.completed)
    [(header, _)] = harness.transport.take_requests()
    no_produce = {key: r for key, r in CLIENT_VERSIONS.items() if key != 0}
    harness.transport.answer(header, api_versions_response(no_produce))
    conn.handle_events(EVENT_READ, 0.0, harness.completed)
    assert state_of(conn) is ConnectionState.DISCONNECTED
    assert isinstance(conn.last_error, NoCompatibleVersionError)
    assert "Produce(0)" in str(conn.last_error) and "node 7" in str(conn.last_error)


def test_authenticator_runs_after_api_versions_and_before_ready() -> None:
    class OneStep:
        def __init__(self) -> None:
            self.seen: list[Response] = []
            self.versions: Mapping[int, int] = {}

        def first_request(self, api_versions: Mapping[int, int]) -> SetupRequest | None:
            self.versions = api_versions
            return SaslHandshakeRequest(mechanism="PLAIN"), 1

        def on_response(self, response: Response) -> SetupRequest | None:
            self.seen.append(response)
            return None

    authenticator = OneStep()
    harness = Harness(authenticator=authenticator)
    conn = harness.conn
    conn.connect(0.0, harness.completed)
    conn.handle_events(EVENT_WRITE, 0.0, harness.completed)
    conn.handle_events(EVENT_WRITE, 0.0, harness.completed)
    [(header, _)] = harness.transport.take_requests()
    harness.transport.answer(header, api_versions_response())
    conn.handle_events(EVENT_READ, 0.0, harness.completed)
    assert state_of(conn) is ConnectionState.AUTHENTICATING
    assert not conn.can_send()
    assert authenticator.versions[0] == CLIENT_VERSIONS[0].max

    conn.handle_events(EVENT_WRITE, 0.0, harness.completed)
    [(sasl, _)] = harness.transport.take_requests()
    assert sasl.request_api_key == SaslHandshakeRequest.API_KEY
    harness.transport.answer(sasl, SaslHandshakeResponse(error_code=0, mechanisms=["PLAIN"]))
    conn.handle_events(EVENT_READ, 0.0, harness.completed)
    assert state_of(conn) is ConnectionState.READY
    assert isinstance(authenticator.seen[0], SaslHandshakeResponse)


def test_authenticator_failure_closes_the_connection_with_its_error() -> None:
    class Refused:
        def first_request(self, api_versions: Mapping[int, int]) -> SetupRequest | None:
            raise SaslAuthenticationFailedError("bad credentials for user 'u'")

        def on_response(self, response: Response) -> SetupRequest | None:
            raise AssertionError("not reached")

    harness = Harness(authenticator=Refused())
    harness.conn.connect(0.0, harness.completed)
    harness.conn.handle_events(EVENT_WRITE, 0.0, harness.completed)
    harness.conn.handle_events(EVENT_WRITE, 0.0, harness.completed)
    [(header, _)] = harness.transport.take_requests()
    harness.transport.answer(header, api_versions_response())
    harness.conn.handle_events(EVENT_READ, 0.0, harness.completed)
    assert state_of(harness.conn) is ConnectionState.DISCONNECTED
    assert isinstance(harness.conn.last_error, SaslAuthenticationFailedError)


# --------------------------------------------------------------------------- reconnect backoff


def test_failures_back_off_exponentially_up_to_the_maximum_and_ready_resets() -> None:
    refused = KafkaConnectionError("cannot connect to broker at fake:9092: Connection refused")
    harness = Harness(script=[FakeTransport(connect_error=refused) for _ in range(7)])
    conn = harness.conn
    now = 0.0
    delays = []
    for _ in range(7):
        assert conn.can_connect(now)
        conn.connect(now, harness.completed)
        assert state_of(conn) is ConnectionState.DISCONNECTED
        assert conn.last_error is refused
        delay = conn.connection_delay(now)
        delays.append(delay)
        assert not conn.can_connect(now + delay - 1)
        now += delay
    assert delays == [50, 100, 200, 400, 800, 1000, 1000]
    assert conn.failed_attempts == 7

    harness.connect_ready(now)
    assert conn.failed_attempts == 0 and conn.last_error is None
    harness.transport.eof = True
    conn.handle_events(EVENT_READ, now, harness.completed)
    assert conn.connection_delay(now) == 50  # back to the first step


def test_connection_delay_is_infinite_while_connecting_or_connected() -> None:
    harness = Harness()
    harness.conn.connect(0.0, harness.completed)
    assert harness.conn.connection_delay(0.0) == float("inf")
    assert not harness.conn.can_connect(1e9)
    with pytest.raises(IllegalStateError, match="cannot connect node 7"):
        harness.conn.connect(0.0, harness.completed)


def test_jitter_comes_from_the_backoff_policy() -> None:
    class Low:
        def uniform(self, a: float, b: float, /) -> float:
            return a

    settings = NetworkSettings(
        bootstrap_servers=(("fake", 9092),),
        reconnect_backoff=ExponentialBackoff(initial_ms=100, max_ms=10_000, jitter=0.2),
    )
    refused = KafkaConnectionError("refused")
    transports = iter([FakeTransport(connect_error=refused), FakeTransport(connect_error=refused)])
    conn = BrokerConnection(
        1,
        "fake",
        9092,
        settings,
        lambda host, port, address: next(transports),
        rng=Low(),
        resolver=lambda host, port: [ResolvedAddress(socket.AF_INET, ("10.0.0.1", port))],
    )
    completed: list[Completion] = []
    conn.connect(0.0, completed)
    assert conn.connection_delay(0.0) == 80  # 100 * (1 - 0.2)
    conn.connect(80.0, completed)
    assert conn.connection_delay(80.0) == 160


def test_each_attempt_tries_the_next_resolved_address_then_resolves_again() -> None:
    refused = KafkaConnectionError("refused")
    addresses = [
        ResolvedAddress(socket.AF_INET6, ("::1", 9092, 0, 0)),
        ResolvedAddress(socket.AF_INET, ("127.0.0.1", 9092)),
    ]
    harness = Harness(
        script=[FakeTransport(connect_error=refused) for _ in range(3)], addresses=addresses
    )
    now = 0.0
    for _ in range(3):
        harness.conn.connect(now, harness.completed)
        now += harness.conn.connection_delay(now)
    assert harness.used_addresses == [addresses[0], addresses[1], addresses[0]]
    assert harness.resolutions == 2


# --------------------------------------------------------------------------- requests


def test_response_completes_the_request_with_its_latency() -> None:
    harness = Harness()
    harness.connect_ready(0.0)
    correlation_id = harness.conn.send(MetadataRequest(topics=[]), 5.0, harness.completed, None)
    [(header, _)] = harness.transport.take_requests()
    assert header.correlation_id == correlation_id
    harness.transport.answer(header, MetadataResponse(brokers=[], topics=[]))
    harness.conn.handle_events(EVENT_READ, 17.0, harness.completed)
    [(response, callback)] = harness.completed
    assert callback is None
    assert response.node_id == 7 and response.correlation_id == correlation_id
    assert isinstance(response.response, MetadataResponse) and response.error is None
    assert response.latency_ms == 12.0
    assert response.response_as(MetadataResponse) is response.response
    assert (response.sent_at_ms, response.completed_at_ms) == (5.0, 17.0)
    assert response.api_version == harness.conn.api_versions[MetadataRequest.API_KEY]
    assert response.request is not None and response.request.API_KEY == MetadataRequest.API_KEY
    with pytest.raises(AttributeError):
        response.error = None  # type: ignore[misc]  # immutable


def test_in_flight_limit_is_exposed_as_can_send() -> None:
    harness = Harness()  # max_in_flight_requests_per_connection=2
    harness.connect_ready()
    harness.send(produce_request())
    assert harness.conn.can_send()
    harness.send(produce_request())
    assert not harness.conn.can_send() and harness.conn.in_flight_count == 2
    with pytest.raises(IllegalStateError, match="2 of 2 requests in flight"):
        harness.send(produce_request())
    header, _ = harness.transport.take_requests()[0]
    harness.transport.answer(header, produce_request().RESPONSE_TYPE())
    harness.conn.handle_events(EVENT_READ, 0.0, harness.completed)
    assert harness.conn.can_send() and harness.conn.in_flight_count == 1


def test_send_before_ready_is_refused() -> None:
    harness = Harness()
    with pytest.raises(IllegalStateError, match="state disconnected"):
        harness.send(produce_request())
    harness.conn.connect(0.0, harness.completed)
    with pytest.raises(IllegalStateError, match="state connecting"):
        harness.send(produce_request())


def test_request_without_response_completes_once_written_whole() -> None:
    harness = Harness()
    harness.connect_ready()
    harness.transport.accept_per_send = 40  # the socket takes 40 bytes per write
    harness.send(produce_request(acks=0))
    assert harness.completed == [] and harness.conn.in_flight_count == 1
    assert harness.conn.interest() == EVENT_READ | EVENT_WRITE
    while harness.conn.interest() & EVENT_WRITE:
        harness.conn.handle_events(EVENT_WRITE, 3.0, harness.completed)
    [(response, _)] = harness.completed
    assert response.response is None and response.error is None
    assert harness.conn.in_flight_count == 0
    [(header, body)] = harness.transport.take_requests()  # the bytes arrived whole, in order
    assert header.request_api_key == 0 and b"x" * 100 in body


def test_queued_requests_are_written_in_order_across_partial_writes() -> None:
    harness = Harness(settings=replace(SETTINGS, max_in_flight_requests_per_connection=5))
    harness.connect_ready()
    harness.transport.accept_per_send = 7
    payloads = [bytes([65 + index]) * (50 + index) for index in range(4)]
    for payload in payloads:
        harness.send(produce_request(records=payload))
    while harness.conn.interest() & EVENT_WRITE:
        harness.conn.handle_events(EVENT_WRITE, 0.0, harness.completed)
    frames = harness.transport.take_requests()
    assert len(frames) == len(payloads)
    assert all(payload in body for (_, body), payload in zip(frames, payloads, strict=True))
    assert [header.correlation_id for header, _ in frames] == [1, 2, 3, 4]


# --------------------------------------------------------------------------- timeouts


def test_request_timeout_closes_the_connection_and_fails_every_request_in_flight() -> None:
    harness = Harness()
    harness.connect_ready(0.0)
    harness.send(produce_request(), now=100.0)
    harness.send(produce_request(), now=300.0)
    assert harness.conn.next_deadline() == 1_100.0
    harness.conn.check_timeouts(1_099.0, harness.completed)
    assert harness.completed == [] and harness.conn.is_ready

    harness.conn.check_timeouts(1_100.0, harness.completed)
    assert state_of(harness.conn) is ConnectionState.DISCONNECTED
    assert harness.transport.closed
    errors = [response.error for response, _ in harness.completed]
    assert len(errors) == 2
    for error in errors:
        assert isinstance(error, RequestTimeoutError)
        assert isinstance(error, KafkaTimeoutError) and isinstance(error, KafkaConnectionError)
        assert error.retriable
        assert "Produce(0) v" in str(error) and "correlation id 1" in str(error)
        assert "request_timeout_ms=1000" in str(error)
        assert "node 7 at fake:9092" in str(error)
    assert isinstance(harness.conn.last_error, RequestTimeoutError)
    assert harness.conn.connection_delay(1_100.0) == 50


def test_a_write_that_never_finishes_times_out_too() -> None:
    harness = Harness()
    harness.connect_ready(0.0)
    harness.transport.accept_per_send = 0  # the peer stopped reading
    harness.send(produce_request(acks=0), now=0.0)
    harness.conn.check_timeouts(1_000.0, harness.completed)
    [(response, _)] = harness.completed
    assert isinstance(response.error, RequestTimeoutError)


def test_setup_timeout_while_connecting() -> None:
    harness = Harness()
    harness.conn.connect(0.0, harness.completed)
    assert harness.conn.next_deadline() == 500.0
    harness.conn.check_timeouts(499.0, harness.completed)
    assert state_of(harness.conn) is ConnectionState.CONNECTING
    harness.conn.check_timeouts(500.0, harness.completed)
    assert state_of(harness.conn) is ConnectionState.DISCONNECTED
    assert isinstance(harness.conn.last_error, ConnectionSetupTimeoutError)
    assert "not set up within 500 ms" in str(harness.conn.last_error)


def test_api_versions_without_answer_times_out_as_a_request() -> None:
    harness = Harness()
    harness.conn.connect(0.0, harness.completed)
    harness.conn.handle_events(EVENT_WRITE, 10.0, harness.completed)
    harness.conn.check_timeouts(1_010.0, harness.completed)
    assert state_of(harness.conn) is ConnectionState.DISCONNECTED
    assert isinstance(harness.conn.last_error, RequestTimeoutError)
    assert "ApiVersions(18) v3" in str(harness.conn.last_error)
    assert harness.completed == []


# --------------------------------------------------------------------------- disconnects


def test_lost_connection_fails_requests_in_flight_with_a_connection_error() -> None:
    harness = Harness()
    harness.connect_ready()
    harness.send(produce_request())
    harness.transport.eof = True
    harness.conn.handle_events(EVENT_READ, 0.0, harness.completed)
    [(response, _)] = harness.completed
    assert isinstance(response.error, KafkaConnectionError)
    assert not isinstance(response.error, KafkaTimeoutError)
    assert "connection lost" in str(response.error) and "closed the connection" in str(
        response.error
    )
    assert state_of(harness.conn) is ConnectionState.DISCONNECTED


def test_a_response_out_of_order_closes_the_connection() -> None:
    harness = Harness()
    harness.connect_ready()
    harness.send(produce_request())
    harness.send(produce_request())
    headers = [header for header, _ in harness.transport.take_requests()]
    harness.transport.answer(headers[1], produce_request().RESPONSE_TYPE())
    harness.conn.handle_events(EVENT_READ, 0.0, harness.completed)
    assert state_of(harness.conn) is ConnectionState.DISCONNECTED
    assert isinstance(harness.conn.last_error, CorrelationIdMismatchError)
    assert all(isinstance(r.error, KafkaConnectionError) for r, _ in harness.completed)
    assert len(harness.completed) == 2


def test_close_on_purpose_fails_requests_but_does_not_back_off() -> None:
    harness = Harness()
    harness.connect_ready()
    harness.send(produce_request())
    harness.conn.close(5.0, harness.completed)
    [(response, _)] = harness.completed
    assert "closed by the client" in str(response.error)
    assert harness.conn.can_connect(5.0) and harness.conn.last_error is None


# --------------------------------------------------------------------------- idle


def test_idle_connection_is_due_for_closing_after_connections_max_idle_ms() -> None:
    harness = Harness()
    harness.connect_ready(0.0)
    assert harness.conn.next_deadline() == 10_000.0
    assert not harness.conn.is_idle(9_999.0)
    assert harness.conn.is_idle(10_000.0)
    harness.send(MetadataRequest(topics=[]), now=9_000.0)  # traffic and a request in flight
    assert not harness.conn.is_idle(30_000.0)


def test_idle_close_can_be_disabled() -> None:
    harness = Harness(settings=replace(SETTINGS, connections_max_idle_ms=-1))
    harness.connect_ready(0.0)
    assert not harness.conn.is_idle(1e12)
    assert harness.conn.next_deadline() == float("inf")


def test_large_record_sets_are_written_by_reference_across_partial_writes() -> None:
    # Record sets of SCATTER_MIN_BYTES or more are separate buffers of one request (not
    # copied into its frame): partial writes cut through them, the request completes once.
    harness = Harness(settings=replace(SETTINGS, max_in_flight_requests_per_connection=5))
    harness.connect_ready()
    harness.transport.accept_per_send = 1000
    payloads = [bytes([65 + index]) * (5000 + index) for index in range(3)]
    for payload in payloads:
        harness.send(produce_request(acks=0, records=payload))
    while harness.conn.interest() & EVENT_WRITE:
        harness.conn.handle_events(EVENT_WRITE, 0.0, harness.completed)
    assert len(harness.completed) == 3  # acks=0: complete once written, each once
    frames = harness.transport.take_requests()
    assert len(frames) == 3  # whole and in order
    assert all(payload in body for (_, body), payload in zip(frames, payloads, strict=True))


@pytest.mark.parametrize("accept", [1, 999, 4096, 5003, 12_345, 1 << 20])
def test_requests_of_several_batches_are_written_whole_and_in_order_whatever_the_writes_take(
    accept: int,
) -> None:
    # Each request is several buffers (its frame pieces and 3 batches by reference); writes
    # that end inside a buffer, on a boundary between two, or take everything queued.
    harness = Harness(settings=replace(SETTINGS, max_in_flight_requests_per_connection=5))
    harness.connect_ready()
    harness.transport.accept_per_send = accept
    requests = []
    for number in range(4):
        batches = [bytes([65 + number * 3 + index]) * (4096 + 907 * index) for index in range(3)]
        requests.append(batches)
        harness.send(_acks0_produce(batches))
    while harness.conn.interest() & EVENT_WRITE:
        harness.conn.handle_events(EVENT_WRITE, 0.0, harness.completed)
    assert len(harness.completed) == 4  # acks=0: each completes once, when written whole
    frames = harness.transport.take_requests()
    assert [header.correlation_id for header, _ in frames] == [1, 2, 3, 4]
    for (_, body), batches in zip(frames, requests, strict=True):
        assert all(batch in body for batch in batches)
    assert harness.transport.sent == bytearray()  # nothing left over or duplicated


@pytest.mark.parametrize("accept", [None, 100_000])
def test_queued_requests_are_offered_to_a_write_up_to_a_bound_in_bytes(
    accept: int | None,
) -> None:
    # A socket takes at most its send buffer's free space: offering every queued request's
    # buffers to each write converts them all for a part of them. Frames are added until they
    # hold _OFFER_BYTES; what a write took whole is followed by the rest at once.
    harness = Harness(settings=replace(SETTINGS, max_in_flight_requests_per_connection=5))
    harness.connect_ready()
    harness.transport.accept_per_send = 0  # the socket is full while they are queued
    batches = [[bytes([65 + number]) * 40_000] * 3 for number in range(5)]
    for request_batches in batches:
        harness.send(_acks0_produce(request_batches))
    harness.transport.accept_per_send = accept
    harness.transport.offered.clear()
    while harness.conn.interest() & EVENT_WRITE:
        harness.conn.handle_events(EVENT_WRITE, 0.0, harness.completed)
    offered = harness.transport.offered
    assert 256 * 1024 <= offered[0] < 4 * 120_100  # three of the five queued requests
    assert all(size < 4 * 120_100 for size in offered)
    frames = harness.transport.take_requests()
    assert [header.correlation_id for header, _ in frames] == [1, 2, 3, 4, 5]
    assert len(harness.completed) == 5
    assert harness.transport.sent == bytearray()


def test_closing_mid_request_fails_a_request_of_several_buffers_once() -> None:
    harness = Harness()
    harness.connect_ready(0.0)
    harness.transport.accept_per_send = 10  # the header only: the record set is still queued
    harness.send(produce_request(acks=0, records=b"r" * 8000), now=0.0)
    harness.conn.close(1.0, harness.completed)
    [(response, _)] = harness.completed
    assert isinstance(response.error, KafkaConnectionError)


def _acks0_produce(batches: list[bytes]) -> ProduceRequest:
    """An acks=0 ProduceRequest of topic "t" with one of ``batches`` per partition, in order."""
    return ProduceRequest(
        acks=0,
        timeout_ms=1000,
        topic_data=[
            TopicProduceData(
                name="t",
                partition_data=[
                    PartitionProduceData(index=index, records=batch)
                    for index, batch in enumerate(batches)
                ],
            )
        ],
    )
