"""NetworkClient against stdlib loopback servers that speak just enough Kafka to misbehave on
purpose: a broker that never answers (request timeouts), and brokers whose metadata adds and
removes nodes."""

from __future__ import annotations

import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import replace

import pytest

from kafkaline.config import ExponentialBackoff
from kafkaline.errors import KafkaConnectionError, KafkaTimeoutError, RequestTimeoutError
from kafkaline.net import ClientResponse, ConnectionState, NetworkClient, NetworkSettings
from kafkaline.protocol import CLIENT_VERSIONS, Response
from kafkaline.protocol.api import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    MetadataRequest,
    MetadataResponse,
    ProduceRequest,
)
from kafkaline.protocol.api.api_versions import ApiVersion
from kafkaline.protocol.api.metadata import MetadataResponseBroker
from kafkaline.protocol.api.produce import PartitionProduceData, TopicProduceData
from kafkaline.protocol.headers import ResponseHeader, response_header_version

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

_HEADER = struct.Struct(">ihhi")  # size, api key, api version, correlation id
_ANSWERED_APIS = (ProduceRequest.API_KEY, MetadataRequest.API_KEY, ApiVersionsRequest.API_KEY)


class ScriptedBroker:
    """A loopback server: answers ApiVersions (unless ``answer_api_versions`` is False) and
    Metadata (with ``metadata()``, if given); reads every other request and never answers.
    Counts the connections clients open and close."""

    def __init__(
        self,
        *,
        answer_api_versions: bool = True,
        metadata: Callable[[], MetadataResponse] | None = None,
    ) -> None:
        self._answer_api_versions = answer_api_versions
        self.metadata = metadata
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.05)
        self.port: int = self._listener.getsockname()[1]
        self.accepted = 0
        self.closed_by_client = 0
        self.unanswered: list[int] = []  # api keys of requests read and left unanswered
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._accept_loop, daemon=True)]
        self._threads[0].start()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _accept_loop(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            with self._lock:
                self.accepted += 1
            thread = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            self._threads.append(thread)
            thread.start()

    def _serve(self, conn: socket.socket) -> None:
        conn.settimeout(0.05)
        buffer = bytearray()
        with conn:
            while not self._stop.is_set():
                try:
                    data = conn.recv(65536)
                except TimeoutError:
                    continue
                except ConnectionResetError:
                    data = b""
                if not data:
                    with self._lock:
                        self.closed_by_client += 1
                    return
                buffer += data
                while len(buffer) >= 4 and len(buffer) >= 4 + int.from_bytes(buffer[:4], "big"):
                    size, api_key, version, correlation_id = _HEADER.unpack_from(buffer)
                    del buffer[: 4 + size]
                    answer = self._answer(api_key, version)
                    if answer is None:
                        with self._lock:
                            self.unanswered.append(api_key)
                        continue
                    conn.sendall(_frame(correlation_id, api_key, answer, version))

    def _answer(self, api_key: int, version: int) -> Response | None:
        if api_key == ApiVersionsRequest.API_KEY and self._answer_api_versions:
            return ApiVersionsResponse(
                api_keys=[
                    ApiVersion(api_key=key, min_version=r.min, max_version=r.max)
                    for key, r in CLIENT_VERSIONS.items()
                    if key in _ANSWERED_APIS
                ]
            )
        if api_key == MetadataRequest.API_KEY and self.metadata is not None:
            return self.metadata()
        return None

    def close(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=5)
        self._listener.close()


def _frame(correlation_id: int, api_key: int, response: Response, version: int) -> bytes:
    data = bytearray()
    header_version = response_header_version(api_key, type(response).is_flexible(version))
    ResponseHeader(correlation_id=correlation_id).encode_into(data, header_version)
    response.encode_into(data, version)
    return struct.pack(">i", len(data)) + bytes(data)


@contextmanager
def scripted_broker(**kwargs: object) -> Iterator[ScriptedBroker]:
    server = ScriptedBroker(**kwargs)  # type: ignore[arg-type]
    try:
        yield server
    finally:
        server.close()


def make_client(bootstrap: str, **changes: object) -> NetworkClient:
    settings = NetworkSettings(
        bootstrap_servers=tuple(
            (host, int(port)) for host, port in (s.rsplit(":", 1) for s in bootstrap.split(","))
        ),
        reconnect_backoff=ExponentialBackoff(initial_ms=20, max_ms=100, jitter=0.0),
    )
    return NetworkClient(replace(settings, **changes))  # type: ignore[arg-type]


def poll_until(
    client: NetworkClient, condition: Callable[[], bool], timeout: float = 10.0
) -> float:
    started = time.monotonic()
    while not condition():
        if time.monotonic() - started > timeout:
            pytest.fail(f"condition not met within {timeout} s; client: {client!r}")
        client.poll(20)
    return time.monotonic() - started


def produce(acks: int = -1) -> ProduceRequest:
    return ProduceRequest(
        acks=acks,
        timeout_ms=1000,
        topic_data=[
            TopicProduceData(name="t", partition_data=[PartitionProduceData(index=0, records=b"x")])
        ],
    )


# --------------------------------------------------------------------------- request timeouts


def self_describing(server: ScriptedBroker) -> Callable[[], MetadataResponse]:
    """Metadata naming ``server`` as the only broker, node 1."""
    return lambda: MetadataResponse(
        brokers=[MetadataResponseBroker(node_id=1, host="127.0.0.1", port=server.port)],
        controller_id=1,
        topics=[],
    )


def test_a_request_without_answer_times_out_closes_the_connection_and_fails_all_in_flight() -> None:
    with scripted_broker() as server:
        server.metadata = self_describing(server)
        client = make_client(server.address, request_timeout_ms=300)
        try:
            poll_until(client, lambda: 1 in client.node_ids and client.ready(1, client.now()))
            responses: list[ClientResponse] = []
            started = time.monotonic()
            first = client.send(1, produce(), responses.append)
            time.sleep(0.05)
            client.send(1, produce(), responses.append)
            took = poll_until(client, lambda: len(responses) == 2)
            waited = time.monotonic() - started
        finally:
            client.close()
        assert 0.29 < waited < 0.8 and took < 0.8
        for response in responses:
            assert isinstance(response.error, RequestTimeoutError)
            assert isinstance(response.error, KafkaTimeoutError)
            assert isinstance(response.error, KafkaConnectionError)
            assert f"Produce(0) v11 (correlation id {first})" in str(response.error)
            assert f"node 1 at {server.address}" in str(response.error)
            assert "request_timeout_ms=300" in str(response.error)
        assert [response.correlation_id for response in responses] == [first, first + 1]
        # The client hung up on the silent broker.
        deadline = time.monotonic() + 2
        while server.closed_by_client < 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert server.closed_by_client == 1
        assert server.unanswered == [0, 0]


def test_timed_out_connection_reconnects_after_backoff() -> None:
    with scripted_broker() as server:
        server.metadata = self_describing(server)
        client = make_client(server.address, request_timeout_ms=200)
        try:
            poll_until(client, lambda: 1 in client.node_ids and client.ready(1, client.now()))
            client.send(1, produce())
            poll_until(client, lambda: client.connection_state(1) is ConnectionState.DISCONNECTED)
            assert isinstance(client.connection_error(1), RequestTimeoutError)
            delay = client.connection_delay(1, client.now())
            assert 0 < delay <= 20
            poll_until(client, lambda: 1 in client.node_ids and client.ready(1, client.now()))
            assert server.accepted == 2
        finally:
            client.close()


def test_api_versions_without_answer_fails_the_connection_as_a_timeout() -> None:
    with scripted_broker(answer_api_versions=False) as server:
        client = make_client(server.address, request_timeout_ms=200)
        try:
            client.ready(-1, client.now())
            took = poll_until(
                client, lambda: isinstance(client.connection_error(-1), RequestTimeoutError)
            )
            assert took < 1.0
            assert "ApiVersions(18) v3" in str(client.connection_error(-1))
            assert client.connection_state(-1) is ConnectionState.DISCONNECTED
        finally:
            client.close()


def test_metadata_refresh_that_times_out_is_retried_and_reported_to_waiters() -> None:
    with scripted_broker() as server:  # answers ApiVersions, never Metadata
        client = make_client(server.address, request_timeout_ms=100)
        try:
            client.metadata.add_topic("t", client.now())
            poll_until(client, lambda: client.metadata.last_error is not None)
            assert isinstance(client.metadata.last_error, RequestTimeoutError)
            poll_until(client, lambda: server.unanswered.count(MetadataRequest.API_KEY) >= 2)
        finally:
            client.close()


# --------------------------------------------------------------------------- nodes come and go


def test_brokers_are_added_and_removed_as_metadata_says() -> None:
    with ExitStack() as stack:
        second = stack.enter_context(scripted_broker())
        brokers = [MetadataResponseBroker(node_id=2, host="127.0.0.1", port=second.port)]

        def metadata() -> MetadataResponse:
            return MetadataResponse(brokers=list(brokers), controller_id=1, topics=[])

        first = stack.enter_context(scripted_broker(metadata=metadata))
        second.metadata = metadata
        brokers.insert(0, MetadataResponseBroker(node_id=1, host="127.0.0.1", port=first.port))
        client = make_client(first.address)
        stack.callback(client.close)

        poll_until(client, lambda: not client.metadata.cluster.is_bootstrap)
        assert client.node_ids == (1, 2)
        assert client.connection_state(1) is ConnectionState.READY  # the bootstrap one, kept
        poll_until(client, lambda: client.ready(2, client.now()))
        assert first.accepted == 1 and second.accepted == 1

        del brokers[1]  # node 2 leaves the cluster
        client.metadata.request_update()
        poll_until(client, lambda: client.node_ids == (1,))
        deadline = time.monotonic() + 2
        while second.closed_by_client < 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert second.closed_by_client == 1
        with pytest.raises(Exception, match="node 2 is not in the cluster metadata"):
            client.ready(2, client.now())


def test_a_node_leaving_with_requests_in_flight_is_closed_when_they_end() -> None:
    with ExitStack() as stack:
        second = stack.enter_context(scripted_broker())  # never answers Produce
        brokers = [
            MetadataResponseBroker(node_id=1, host="127.0.0.1", port=0),
            MetadataResponseBroker(node_id=2, host="127.0.0.1", port=second.port),
        ]

        def metadata() -> MetadataResponse:
            return MetadataResponse(brokers=list(brokers), controller_id=1, topics=[])

        first = stack.enter_context(scripted_broker(metadata=metadata))
        brokers[0] = MetadataResponseBroker(node_id=1, host="127.0.0.1", port=first.port)
        client = make_client(first.address, request_timeout_ms=300)
        stack.callback(client.close)
        poll_until(client, lambda: 2 in client.node_ids and client.ready(2, client.now()))
        responses: list[ClientResponse] = []
        client.send(2, produce(), responses.append)
        del brokers[1]
        client.metadata.request_update()
        poll_until(client, lambda: client.node_ids == (1,))
        assert second.closed_by_client == 0  # its request is still in flight
        poll_until(client, lambda: bool(responses))
        assert isinstance(responses[0].error, RequestTimeoutError)
        assert client.in_flight_request_count() == 0
