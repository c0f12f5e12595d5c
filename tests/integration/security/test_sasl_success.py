"""SASL that succeeds, end to end: kafkaline's client authenticates (PLAIN, SCRAM-SHA-256,
SCRAM-SHA-512, OAUTHBEARER, also inside TLS) and then produces to the real broker, whose
records are read back.

The bundled Tansu build cannot authenticate anyone (it stores no users), so a SaslGateway in
this module does the server's side: a loopback Kafka proxy that authenticates clients itself,
then forwards their traffic to the broker (which advertises the gateway's port). Its SASL
server is written here from RFC 4616 (PLAIN), RFC 5802/7677 (SCRAM) and RFC 7628 (OAUTHBEARER),
independently of the client code: this checks the client against a second implementation and
the whole connection path, not against a real broker's SASL.

Before authentication it reads whole request frames: ApiVersions is forwarded to the broker
(one request, one response), SaslHandshake and SaslAuthenticate are answered here; once the
client has authenticated, bytes flow both ways unchanged. ``forge_server_signature=True`` makes
the SCRAM server send a wrong signature (a server that does not know the password), which the
client must refuse. Test code only: one thread per connection, joined on close().
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import json
import secrets
import select
import socket
import struct
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from kafkaline import Producer
from kafkaline.config import ProducerConfig
from kafkaline.errors import SaslAuthenticationError
from kafkaline.net.client import NetworkClient
from kafkaline.protocol import Request, Response
from kafkaline.protocol.api import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)
from kafkaline.protocol.headers import (
    RequestHeader,
    ResponseHeader,
    request_header_version,
    response_header_version,
)
from kafkaline.protocol.primitives import Reader
from kafkaline.protocol.schema import read_message
from kafkaline.testing import LocalBroker
from kafkaline.testing._ports import find_free_port
from kafkaline.testing.tls_terminator import TlsTerminator, make_test_certificates
from kafkaline.testing.wire import BlockingConnection, fetch_partition, negotiate_versions

_SIZE = struct.Struct(">i")
_API_KEY_VERSION = struct.Struct(">hh")
_HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
_ITERATIONS = 4096
_POLL = 0.05
_SASL_AUTHENTICATION_FAILED = 58
_UNSUPPORTED_SASL_MECHANISM = 33


class _Refused(Exception):
    """The client failed to authenticate; the message goes back to it."""


class _ScramServer:
    def __init__(self, mechanism: str, users: Mapping[str, str], forge: bool) -> None:
        self._hash = _HASHES[mechanism]
        self._users = users
        self._forge = forge
        self._state = "first"
        self._client_first_bare = ""
        self._server_first = ""
        self._nonce = ""
        self._salted = b""
        self.user: str | None = None

    def step(self, token: bytes) -> tuple[bytes, bool]:
        """The server's answer and whether the client is authenticated."""
        text = token.decode()
        if self._state == "first":
            if not text.startswith("n,,"):
                raise _Refused("channel binding or authzid not supported")
            self._client_first_bare = text[3:]
            fields = dict(part.split("=", 1) for part in self._client_first_bare.split(","))
            user = fields["n"].replace("=2C", ",").replace("=3D", "=")
            if user not in self._users:
                raise _Refused(f"unknown user {user!r}")
            self.user = user
            salt = secrets.token_bytes(16)
            self._nonce = fields["r"] + secrets.token_urlsafe(18)
            self._salted = hashlib.pbkdf2_hmac(
                self._hash, self._users[user].encode(), salt, _ITERATIONS
            )
            self._server_first = (
                f"r={self._nonce},s={base64.b64encode(salt).decode()},i={_ITERATIONS}"
            )
            self._state = "final"
            return self._server_first.encode(), False
        without_proof, _, proof_text = text.rpartition(",p=")
        fields = dict(part.split("=", 1) for part in without_proof.split(","))
        if fields.get("r") != self._nonce or fields.get("c") != "biws":
            raise _Refused("nonce or channel binding mismatch")
        auth_message = f"{self._client_first_bare},{self._server_first},{without_proof}".encode()
        client_key_expected = hmac.digest(self._salted, b"Client Key", self._hash)
        stored_key = hashlib.new(self._hash, client_key_expected).digest()
        signature = hmac.digest(stored_key, auth_message, self._hash)
        proof = base64.b64decode(proof_text)
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        if hashlib.new(self._hash, client_key).digest() != stored_key:
            raise _Refused("invalid proof: wrong password")
        server_key = hmac.digest(self._salted, b"Server Key", self._hash)
        server_signature = hmac.digest(server_key, auth_message, self._hash)
        if self._forge:
            server_signature = bytes(byte ^ 0xFF for byte in server_signature)
        return b"v=" + base64.b64encode(server_signature), True


class SaslGateway:
    """Authenticates with ``mechanisms`` (of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER)
    against ``users`` (name -> password) or ``tokens`` (accepted bearer tokens), then proxies
    to ``upstream_port``. :attr:`authenticated` counts successes, :attr:`refused` failures."""

    def __init__(
        self,
        upstream_port: int,
        *,
        mechanisms: tuple[str, ...],
        users: Mapping[str, str] | None = None,
        tokens: frozenset[str] = frozenset(),
        forge_server_signature: bool = False,
    ) -> None:
        self._upstream_port = upstream_port
        self._mechanisms = mechanisms
        self._users = dict(users or {})
        self._tokens = tokens
        self._forge = forge_server_signature
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(_POLL)
        self.port: int = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._threads: list[threading.Thread] = []
        self._sockets: list[socket.socket] = []
        self.connections = 0
        self.authenticated: list[tuple[str, str]] = []  # (mechanism, user or "token")
        self.refused: list[str] = []

    def __enter__(self) -> SaslGateway:
        thread = threading.Thread(target=self._accept, name="sasl-gateway-accept", daemon=True)
        self._threads.append(thread)
        thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._closing.set()
        self._listener.close()
        with self._lock:
            sockets = list(self._sockets)
            threads = list(self._threads)
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.close()
        for thread in threads:
            thread.join(timeout=5)

    def _accept(self) -> None:
        while not self._closing.is_set():
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with self._lock:
                self.connections += 1
                self._sockets.append(client)
                thread = threading.Thread(
                    target=self._serve, args=(client,), name="sasl-gateway-conn", daemon=True
                )
                self._threads.append(thread)
            thread.start()

    # ------------------------------------------------------------------ one connection

    def _serve(self, client: socket.socket) -> None:
        try:
            upstream = socket.create_connection(("127.0.0.1", self._upstream_port), timeout=10)
        except OSError:
            client.close()
            return
        with self._lock:
            self._sockets.append(upstream)
        client.settimeout(10)
        try:
            if self._authenticate(client, upstream):
                self._pump(client, upstream)
        except (OSError, ValueError, KeyError):
            pass
        finally:
            client.close()
            upstream.close()

    def _authenticate(self, client: socket.socket, upstream: socket.socket) -> bool:
        mechanism: str | None = None
        scram: _ScramServer | None = None
        oauth_error_sent = False
        while not self._closing.is_set():
            frame = _read_frame(client)
            api_key, version = _API_KEY_VERSION.unpack_from(frame)
            if api_key not in (SaslHandshakeRequest.API_KEY, SaslAuthenticateRequest.API_KEY):
                upstream.sendall(_SIZE.pack(len(frame)) + frame)
                response = _read_frame(upstream)
                client.sendall(_SIZE.pack(len(response)) + response)
                continue
            request_type: type[Request] = (
                SaslHandshakeRequest
                if api_key == SaslHandshakeRequest.API_KEY
                else SaslAuthenticateRequest
            )
            flexible = request_type.is_flexible(version)
            reader = Reader(frame)
            header = read_message(RequestHeader, reader, request_header_version(flexible))
            request = read_message(request_type, reader, version)
            answer: Response
            done = False
            if isinstance(request, SaslHandshakeRequest):
                if request.mechanism in self._mechanisms:
                    mechanism = request.mechanism
                    if mechanism in _HASHES:
                        scram = _ScramServer(mechanism, self._users, self._forge)
                    answer = SaslHandshakeResponse(error_code=0, mechanisms=[mechanism])
                else:
                    answer = SaslHandshakeResponse(
                        error_code=_UNSUPPORTED_SASL_MECHANISM, mechanisms=list(self._mechanisms)
                    )
            else:
                assert isinstance(request, SaslAuthenticateRequest)
                token = bytes(request.auth_bytes)
                try:
                    if mechanism is None:
                        raise _Refused("no handshake")
                    if scram is not None:
                        challenge, done = scram.step(token)
                        user = scram.user or ""
                    elif mechanism == "PLAIN":
                        _, user, password = token.decode().split("\x00")
                        if self._users.get(user) != password:
                            raise _Refused("Invalid username or password")
                        challenge, done = b"", True
                    else:  # OAUTHBEARER
                        if oauth_error_sent:
                            raise _Refused("invalid token")
                        bearer = token.decode().split("auth=Bearer ", 1)[1].split("\x01")[0]
                        if bearer not in self._tokens:
                            oauth_error_sent = True
                            status = json.dumps({"status": "invalid_token"}).encode()
                            challenge, done, user = status, False, ""
                        else:
                            challenge, done, user = b"", True, "token"
                    answer = SaslAuthenticateResponse(error_code=0, auth_bytes=challenge)
                    if done:
                        with self._lock:
                            self.authenticated.append((mechanism, user))
                except _Refused as refusal:
                    with self._lock:
                        self.refused.append(str(refusal))
                    answer = SaslAuthenticateResponse(
                        error_code=_SASL_AUTHENTICATION_FAILED,
                        error_message=f"Authentication failed: {refusal}",
                    )
            _send_response(client, header.correlation_id, api_key, flexible, answer, version)
            if done:
                return True
        return False

    def _pump(self, client: socket.socket, upstream: socket.socket) -> None:
        while not self._closing.is_set():
            readable, _, _ = select.select([client, upstream], [], [], _POLL)
            for sock in readable:
                data = sock.recv(1 << 16)
                if not data:
                    return
                (upstream if sock is client else client).sendall(data)


def _read_frame(sock: socket.socket) -> bytes:
    size = _SIZE.unpack(_read_exactly(sock, 4))[0]
    return _read_exactly(sock, size)


def _read_exactly(sock: socket.socket, count: int) -> bytes:
    data = bytearray()
    while len(data) < count:
        chunk = sock.recv(count - len(data))
        if not chunk:
            raise ConnectionError("closed")
        data += chunk
    return bytes(data)


def _send_response(
    sock: socket.socket,
    correlation_id: int,
    api_key: int,
    flexible: bool,
    response: Response,
    version: int,
) -> None:
    data = bytearray()
    ResponseHeader(correlation_id=correlation_id).encode_into(
        data, response_header_version(api_key, flexible)
    )
    response.encode_into(data, version)
    sock.sendall(_SIZE.pack(len(data)) + data)


# --------------------------------------------------------------------------- the tests

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

USERS = {"alice": "wonder-Land-42", "bob": "b0b's, password=x"}
TOKEN = "eyJhbGciOiJub25lIn0.eyJzdWIiOiJhbGljZSJ9."
FAST_S = 5.0
ALL = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")


class Cluster:
    def __init__(self, gateway: SaslGateway, broker: LocalBroker) -> None:
        self.gateway = gateway
        self.broker = broker

    @property
    def bootstrap(self) -> str:
        return self.broker.advertised_bootstrap_servers


@pytest.fixture
def cluster(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Cluster]:
    options: dict[str, object] = getattr(request, "param", {})
    broker_port = find_free_port()
    with (
        SaslGateway(
            broker_port,
            mechanisms=ALL,
            users=USERS,
            tokens=frozenset({TOKEN}),
            forge_server_signature=bool(options.get("forge", False)),
        ) as gateway,
        LocalBroker(port=broker_port, advertised_port=gateway.port, log_dir=tmp_path) as broker,
    ):
        yield Cluster(gateway, broker)


def produce_and_read_back(cluster: Cluster, topic: str, **security: object) -> None:
    cluster.broker.create_topic(topic, partitions=1)
    sent = [f"{topic}-{i}".encode() for i in range(100)]
    with Producer(bootstrap_servers=cluster.bootstrap, max_block_ms=20_000, **security) as producer:
        futures = [producer.send(topic, value) for value in sent]
        producer.flush(timeout=20)
    assert [future.get(timeout=0).offset for future in futures] == list(range(len(sent)))
    with BlockingConnection(cluster.broker.host, cluster.broker.port) as conn:
        version = negotiate_versions(conn)[1]
        batches = fetch_partition(conn, topic, 0, version, expected_records=len(sent))
    assert [bytes(r.value or b"") for b in batches for r in b.records] == sent


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
@pytest.mark.parametrize("user", sorted(USERS))
def test_password_mechanisms_authenticate_and_produce(
    cluster: Cluster, mechanism: str, user: str
) -> None:
    produce_and_read_back(
        cluster,
        f"sasl-{mechanism.lower()}-{user}",
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism=mechanism,
        sasl_plain_username=user,
        sasl_plain_password=USERS[user],
    )
    # Every connection the producer made authenticated (bootstrap and broker may be one).
    assert cluster.gateway.authenticated
    assert set(cluster.gateway.authenticated) == {(mechanism, user)}
    assert cluster.gateway.refused == []


def test_oauthbearer_calls_the_provider_per_connection_and_produces(cluster: Cluster) -> None:
    calls: list[float] = []

    class Provider:
        def token(self) -> str:
            calls.append(time.monotonic())
            return TOKEN

    produce_and_read_back(
        cluster,
        "sasl-oauthbearer",
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="OAUTHBEARER",
        sasl_oauth_token_provider=Provider(),
    )
    assert len(calls) == len(cluster.gateway.authenticated) >= 1
    assert set(cluster.gateway.authenticated) == {("OAUTHBEARER", "token")}


def refusal(cluster: Cluster, **security: object) -> SaslAuthenticationError:
    config = ProducerConfig.from_kwargs(bootstrap_servers=cluster.bootstrap, **security)
    started = time.monotonic()
    with (
        NetworkClient.from_config(config) as client,
        pytest.raises(SaslAuthenticationError) as caught,
    ):
        while time.monotonic() - started < FAST_S:
            client.poll(100)
    assert time.monotonic() - started < FAST_S
    assert cluster.gateway.connections == 1  # refused once, never retried
    return caught.value


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_a_wrong_password_is_refused_fast(cluster: Cluster, mechanism: str) -> None:
    wrong = "not-" + USERS["alice"]
    error = refusal(
        cluster,
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism=mechanism,
        sasl_plain_username="alice",
        sasl_plain_password=wrong,
    )
    assert "SASL_AUTHENTICATION_FAILED" in str(error)
    assert wrong not in str(error) and USERS["alice"] not in str(error)


def test_a_rejected_token_is_refused_with_the_servers_status(cluster: Cluster) -> None:
    error = refusal(
        cluster,
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="OAUTHBEARER",
        sasl_oauth_token_provider=lambda: "expired-token-value",
    )
    assert "invalid_token" in str(error) and "expired-token-value" not in str(error)


@pytest.mark.parametrize("cluster", [{"forge": True}], indirect=True)
@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_a_server_that_does_not_know_the_password_is_refused(
    cluster: Cluster, mechanism: str
) -> None:
    # The gateway accepts the client's proof but signs with a wrong key: the client must not
    # trust it, although the server said yes.
    error = refusal(
        cluster,
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism=mechanism,
        sasl_plain_username="alice",
        sasl_plain_password=USERS["alice"],
    )
    assert "server signature does not verify" in str(error)
    assert cluster.gateway.authenticated == [(mechanism, "alice")]  # the server said yes


def test_sasl_ssl_scram_inside_tls_produces(tmp_path: Path) -> None:
    pki = make_test_certificates(tmp_path / "pki")
    broker_port = find_free_port()
    with (
        SaslGateway(broker_port, mechanisms=ALL, users=USERS) as gateway,
        TlsTerminator(gateway.port, certfile=pki.server_cert, keyfile=pki.server_key) as tls,
        LocalBroker(port=broker_port, advertised_port=tls.port, log_dir=tmp_path / "b") as broker,
    ):
        cluster = Cluster(gateway, broker)
        produce_and_read_back(
            cluster,
            "sasl-ssl",
            security_protocol="SASL_SSL",
            ssl_cafile=str(pki.ca_cert),
            sasl_mechanism="SCRAM-SHA-512",
            sasl_plain_username="alice",
            sasl_plain_password=USERS["alice"],
        )
        assert tls.handshake_failures == 0 and tls.accepted >= 1
        assert set(gateway.authenticated) == {("SCRAM-SHA-512", "alice")}


def test_a_producer_with_a_wrong_password_fails_its_sends_fast(cluster: Cluster) -> None:
    cluster.broker.create_topic("sasl-wrong", partitions=1)
    started = time.monotonic()
    with (
        Producer(
            bootstrap_servers=cluster.bootstrap,
            max_block_ms=60_000,
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="SCRAM-SHA-256",
            sasl_plain_username="alice",
            sasl_plain_password="wrong",
        ) as producer,
        pytest.raises(SaslAuthenticationError),
    ):
        producer.send("sasl-wrong", b"never")
    assert time.monotonic() - started < FAST_S
    assert cluster.gateway.connections == 1
