"""BrokerConnection running the real SaslAuthenticator over a scripted transport: a refusal
closes the connection with a SaslAuthenticationError, and closes by the broker during the
exchange become a refusal after three in a row (never while the connection was READY)."""

from __future__ import annotations

import random
import struct
from collections.abc import Sequence

from kafkaline.config import Secret
from kafkaline.errors import KafkaConnectionError, SaslAuthenticationError
from kafkaline.net.connection import BrokerConnection, Completion, ConnectionState
from kafkaline.net.sasl import PlainMechanism, SaslAuthenticator
from kafkaline.net.settings import NetworkSettings
from kafkaline.net.transport import EVENT_READ, EVENT_WRITE, ResolvedAddress, Transport
from kafkaline.protocol import CLIENT_VERSIONS, Response
from kafkaline.protocol.api import (
    ApiVersionsResponse,
    SaslAuthenticateResponse,
    SaslHandshakeResponse,
)
from kafkaline.protocol.api.api_versions import ApiVersion
from kafkaline.protocol.headers import RequestHeader, ResponseHeader, response_header_version
from kafkaline.protocol.primitives import Reader
from kafkaline.protocol.schema import read_message


class ScriptedTransport:
    """Connects at once; records requests; serves queued responses; may close on read."""

    def __init__(self) -> None:
        self.sent = bytearray()
        self.incoming = bytearray()
        self.eof = False

    @property
    def description(self) -> str:
        return "b1:9092"

    def fileno(self) -> int:
        return 1000

    def connect(self) -> bool:
        return True

    def finish_connect(self) -> None:
        pass

    def handshake(self) -> int:
        return 0

    def send(self, buffers: Sequence[memoryview]) -> int:
        data = b"".join(bytes(buffer) for buffer in buffers)
        self.sent += data
        return len(data)

    def recv_into(self, buffer: memoryview) -> int:
        if not self.incoming:
            if self.eof:
                raise KafkaConnectionError("broker at b1:9092 closed the connection")
            return 0
        count = min(len(buffer), len(self.incoming))
        buffer[:count] = self.incoming[:count]
        del self.incoming[:count]
        return count

    def close(self) -> None:
        pass

    def answer_next(self, response: Response) -> None:
        (size,) = struct.unpack_from(">i", self.sent)
        frame = bytes(self.sent[4 : 4 + size])
        del self.sent[: 4 + size]
        header = read_message(RequestHeader, Reader(frame), 1)
        version = header.request_api_version
        data = bytearray()
        flexible = type(response).is_flexible(version)
        ResponseHeader(correlation_id=header.correlation_id).encode_into(
            data, response_header_version(header.request_api_key, flexible)
        )
        response.encode_into(data, version)
        self.incoming += struct.pack(">i", len(data)) + data


def api_versions() -> ApiVersionsResponse:
    return ApiVersionsResponse(
        error_code=0,
        api_keys=[
            ApiVersion(api_key=key, min_version=r.min, max_version=r.max)
            for key, r in CLIENT_VERSIONS.items()
        ],
    )


class Harness:
    def __init__(self) -> None:
        self.transports: list[ScriptedTransport] = []
        self.completed: list[Completion] = []

        def make_transport(host: str, port: int, address: ResolvedAddress) -> Transport:
            transport = ScriptedTransport()
            self.transports.append(transport)
            return transport

        def make_authenticator(host: str, port: int) -> SaslAuthenticator:
            mechanism = PlainMechanism("alice", Secret("hunter2"))
            return SaslAuthenticator(
                "PLAIN", lambda: mechanism, where=f"{host}:{port}", user="alice"
            )

        self.conn = BrokerConnection(
            1,
            "b1",
            9092,
            NetworkSettings(bootstrap_servers=(("b1", 9092),)),
            make_transport,
            rng=random.Random(1),
            authenticator_factory=make_authenticator,
            resolver=lambda host, port: [ResolvedAddress(2, ("10.0.0.1", port))],
        )
        self.now = 0.0

    @property
    def transport(self) -> ScriptedTransport:
        return self.transports[-1]

    def connect_until_handshake(self) -> None:
        self.now += 10_000  # past any reconnect backoff
        self.conn.connect(self.now, self.completed)
        self.transport.answer_next(api_versions())
        self.conn.handle_events(EVENT_READ, self.now, self.completed)
        assert self.conn.state is ConnectionState.AUTHENTICATING
        self.conn.handle_events(EVENT_WRITE, self.now, self.completed)

    def broker_closes(self) -> None:
        self.transport.eof = True
        self.conn.handle_events(EVENT_READ, self.now, self.completed)
        assert self.conn.state is ConnectionState.DISCONNECTED


def test_a_refused_handshake_closes_with_a_sasl_error() -> None:
    harness = Harness()
    harness.connect_until_handshake()
    harness.transport.answer_next(
        SaslHandshakeResponse(error_code=33, mechanisms=["SCRAM-SHA-256"])
    )
    harness.conn.handle_events(EVENT_READ, harness.now, harness.completed)
    error = harness.conn.last_error
    assert isinstance(error, SaslAuthenticationError)
    assert "it offers: SCRAM-SHA-256" in str(error) and "hunter2" not in str(error)


def test_the_whole_plain_exchange_makes_the_connection_ready() -> None:
    harness = Harness()
    harness.connect_until_handshake()
    harness.transport.answer_next(SaslHandshakeResponse(error_code=0, mechanisms=["PLAIN"]))
    harness.conn.handle_events(EVENT_READ, harness.now, harness.completed)
    assert b"\x00alice\x00hunter2" in harness.transport.sent  # the PLAIN token was written
    harness.transport.answer_next(SaslAuthenticateResponse(error_code=0, auth_bytes=b""))
    harness.conn.handle_events(EVENT_READ, harness.now, harness.completed)
    assert harness.conn.is_ready


def test_three_closes_in_a_row_during_sasl_are_a_refusal() -> None:
    harness = Harness()
    for attempt in range(1, 4):
        harness.connect_until_handshake()
        harness.broker_closes()
        error = harness.conn.last_error
        if attempt < 3:
            assert type(error) is KafkaConnectionError  # retriable: it may be bad luck
        else:
            assert isinstance(error, SaslAuthenticationError)
            assert "closed the connection during SASL authentication 3 times in a row" in str(error)
            assert isinstance(error.__cause__, KafkaConnectionError)


def test_becoming_ready_resets_the_count_and_closes_when_ready_do_not_count() -> None:
    harness = Harness()
    for _ in range(2):
        harness.connect_until_handshake()
        harness.broker_closes()
    harness.connect_until_handshake()
    harness.transport.answer_next(SaslHandshakeResponse(error_code=0, mechanisms=["PLAIN"]))
    harness.conn.handle_events(EVENT_READ, harness.now, harness.completed)
    harness.transport.answer_next(SaslAuthenticateResponse(error_code=0, auth_bytes=b""))
    harness.conn.handle_events(EVENT_READ, harness.now, harness.completed)
    assert harness.conn.is_ready
    for _ in range(3):
        harness.broker_closes()  # a READY connection lost: never a refusal
        assert type(harness.conn.last_error) is KafkaConnectionError
        harness.connect_until_handshake()
        harness.transport.answer_next(SaslHandshakeResponse(error_code=0, mechanisms=["PLAIN"]))
        harness.conn.handle_events(EVENT_READ, harness.now, harness.completed)
        harness.transport.answer_next(SaslAuthenticateResponse(error_code=0, auth_bytes=b""))
        harness.conn.handle_events(EVENT_READ, harness.now, harness.completed)
    harness.broker_closes()
    harness.connect_until_handshake()
    harness.broker_closes()
    assert type(harness.conn.last_error) is KafkaConnectionError  # the count started over
