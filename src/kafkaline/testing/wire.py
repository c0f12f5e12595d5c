"""Blocking raw-protocol helpers for LocalBroker's probes, the demo and tests: one request,
one response, over a plain socket. The producer's client (kafkaline.net) is non-blocking; this
is deliberately the simplest thing that speaks the protocol correctly, so tests can check the
producer against it."""

from __future__ import annotations

import socket
import time
from typing import TypeVar

from kafkaline import __version__
from kafkaline.errors import raise_for_code
from kafkaline.protocol import ClientProtocol, Request, Response, broker_version_ranges
from kafkaline.protocol.api import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    FetchRequest,
    FetchResponse,
    MetadataRequest,
    ProduceRequest,
    ProduceResponse,
)
from kafkaline.protocol.api.fetch import FetchPartition, FetchTopic
from kafkaline.protocol.api.produce import (
    PartitionProduceData,
    PartitionProduceResponse,
    TopicProduceData,
)
from kafkaline.protocol.versions import choose_versions
from kafkaline.record import RecordBatch, read_record_batches

_R = TypeVar("_R", bound=Response)


class BlockingConnection:
    """A socket plus a :class:`ClientProtocol`: send a request, wait for its response.

    >>> with BlockingConnection("127.0.0.1", 9092) as conn:  # doctest: +SKIP
    ...     versions = conn.request(ApiVersionsRequest(), version=3)
    """

    def __init__(
        self, host: str, port: int, timeout: float = 10.0, client_id: str = "kafkaline"
    ) -> None:
        self._timeout = timeout
        self._sock = socket.create_connection((host, port), timeout=timeout)
        self._protocol = ClientProtocol(client_id)

    def request(self, request: Request, version: int, response_type: type[_R] | None = None) -> _R:
        """Send ``request`` at ``version`` and return its decoded response. Raises OSError on
        network trouble and TimeoutError when no answer comes within the timeout."""
        self._sock.sendall(self._protocol.send(request, version))
        deadline = time.monotonic() + self._timeout
        while True:
            item = self._protocol.next_response()
            if item is not None:
                response = item[1]
                if response_type is not None and not isinstance(response, response_type):
                    raise TypeError(f"expected {response_type.__name__}, got {type(response)}")
                return response  # type: ignore[return-value]
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"no response to {type(request).__name__} in {self._timeout}s")
            self._sock.settimeout(remaining)
            data = self._sock.recv(1 << 20)
            if not data:
                raise ConnectionError("broker closed the connection")
            self._protocol.receive_data(data)

    def send_only(self, request: Request, version: int) -> None:
        """Send a request that expects no response (Produce with acks=0)."""
        self._sock.sendall(self._protocol.send(request, version))

    def close(self) -> None:
        self._sock.close()

    def __enter__(self) -> BlockingConnection:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


# Fetch v13+ names topics by id; the verification helpers ask by name, so they stop at v12.
_MAX_FETCH_VERSION_BY_NAME = 12


def negotiate_versions(conn: BlockingConnection) -> dict[int, int]:
    """Ask ApiVersions (v3, falling back as the broker answers) and return API key -> the
    highest version both sides support, requiring Produce, Fetch and Metadata."""
    response = conn.request(
        ApiVersionsRequest(client_software_name="kafkaline", client_software_version=__version__),
        3,
        ApiVersionsResponse,
    )
    if response.error_code:
        response = conn.request(ApiVersionsRequest(), 0, ApiVersionsResponse)
    raise_for_code(response.error_code, "ApiVersions")
    return choose_versions(
        broker_version_ranges(response),
        required=(ProduceRequest.API_KEY, FetchRequest.API_KEY, MetadataRequest.API_KEY),
    )


def produce_batch(
    conn: BlockingConnection,
    topic: str,
    partition: int,
    batch: bytes,
    version: int,
    acks: int = -1,
) -> PartitionProduceResponse | None:
    """Produce one record batch to ``topic``/``partition``; return the partition's answer
    (None for acks=0). Raises the broker's error if the partition answer carries one."""
    request = ProduceRequest(
        acks=acks,
        timeout_ms=30_000,
        topic_data=[
            TopicProduceData(
                name=topic, partition_data=[PartitionProduceData(index=partition, records=batch)]
            )
        ],
    )
    if acks == 0:
        conn.send_only(request, version)
        return None
    response = conn.request(request, version, ProduceResponse)
    answer = response.responses[0].partition_responses[0]
    raise_for_code(answer.error_code, answer.error_message or f"produce to {topic}/{partition}")
    return answer


def _fetch_request(topic: str, partition: int, offset: int, max_wait_ms: int) -> FetchRequest:
    """Fetch one partition from ``offset``, answered once it has any record (min_bytes=1)."""
    wanted = FetchPartition(partition=partition, fetch_offset=offset, partition_max_bytes=8 << 20)
    return FetchRequest(
        max_wait_ms=max_wait_ms,
        min_bytes=1,
        max_bytes=16 << 20,
        topics=[FetchTopic(topic=topic, partitions=[wanted])],
    )


def fetch_partition(
    conn: BlockingConnection,
    topic: str,
    partition: int,
    version: int,
    expected_records: int | None = None,
    max_wait_ms: int = 100,
    timeout: float = 10.0,
) -> list[RecordBatch]:
    """Every record batch of ``topic``/``partition`` from offset 0, fetched with our Fetch and
    decoded with our reader. Reads until the newest batch has been read, or until
    ``expected_records`` user records are in hand (this broker's reported end offsets are not
    to be trusted, so the count comes from the records themselves; its high watermark only
    tells where the newest batch starts, which is what ends the reading)."""
    version = min(version, _MAX_FETCH_VERSION_BY_NAME)
    batches: list[RecordBatch] = []
    offset = 0
    records = 0
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        request = _fetch_request(topic, partition, offset, max_wait_ms)
        response = conn.request(request, version, FetchResponse)
        raise_for_code(response.error_code, "fetch")
        data = response.responses[0].partitions[0]
        raise_for_code(data.error_code, f"fetch {topic}/{partition} at offset {offset}")
        new = [b for b in read_record_batches(data.records or b"") if b.next_offset > offset]
        if not new:
            # An empty answer is not the end of the log: a slow broker (s3 storage under load)
            # answers empty when max_wait_ms runs out. This broker's high watermark is the
            # newest batch's base offset + 1 (not the log end), so once our offset has passed
            # it, the newest batch has been read: that is the end.
            at_end = offset >= data.high_watermark
            if at_end and (expected_records is None or records >= expected_records):
                return batches
            continue
        batches.extend(new)
        records += sum(len(b.records) for b in new)
        offset = new[-1].next_offset
        if expected_records is not None and records >= expected_records:
            return batches
        if expected_records is None and offset >= data.high_watermark:
            return batches  # the newest batch is read: no need to wait for an empty answer
    raise TimeoutError(
        f"fetching {topic}/{partition}: {records} records after {timeout}s"
        + (f", expected {expected_records}" if expected_records is not None else "")
    )
