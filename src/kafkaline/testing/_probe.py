"""Hand-encoded Kafka requests that LocalBroker uses to see whether its broker is up.

Kept apart on purpose: once kafkaline.protocol can encode ApiVersions and Metadata, these two
functions are replaced by calls into it and nothing else in kafkaline.testing changes.

Wire format (all integers big-endian; see ../shared/kafka-protocol/message/*.json)::

    Request    size int32 | header | body
    header v1  api_key int16 | api_version int16 | correlation_id int32 | client_id nullable str
    Response   size int32 | correlation_id int32 (header v0) | body

    ApiVersions v0 request   (empty body)
    ApiVersions v0 response  error_code int16 | api_keys [api_key int16, min int16, max int16]

    Metadata v1 request   topics [name string]          (-1 = null = all topics, never creates)
    Metadata v1 response  brokers [node_id int32, host string, port int32, rack nullable string]
                          controller_id int32
                          topics [error_code int16, name string, is_internal bool,
                                  partitions [error_code int16, partition_index int32,
                                              leader_id int32, replica_nodes [int32],
                                              isr_nodes [int32]]]
"""

from __future__ import annotations

import secrets
import socket
import struct
import time

_API_VERSIONS_KEY = 18
_METADATA_KEY = 3
_CLIENT_ID = b"kafkaline-testing-probe"
# A probe answer is a few hundred bytes; anything far larger means we are not talking to a
# Kafka broker, so stop reading instead of allocating whatever the peer claims.
_MAX_RESPONSE_SIZE = 1 << 20


class _ProbeFailed(Exception):
    """The peer closed, timed out or answered something that is not the expected response."""


def _encode_request(api_key: int, api_version: int, correlation_id: int, body: bytes) -> bytes:
    header = struct.pack(">hhih", api_key, api_version, correlation_id, len(_CLIENT_ID))
    payload = header + _CLIENT_ID + body
    return struct.pack(">i", len(payload)) + payload


def _recv_exactly(sock: socket.socket, size: int) -> bytes:
    chunks: list[bytes] = []
    remaining = size
    while remaining:
        chunk = sock.recv(remaining)
        if not chunk:
            raise _ProbeFailed("connection closed before the response was complete")
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def _round_trip(
    host: str, port: int, timeout: float, api_key: int, api_version: int, body: bytes
) -> bytes:
    """Send one request on a fresh connection and return the response body, after checking
    that the response answers this request (correlation id)."""
    correlation_id = secrets.randbits(31)
    deadline = time.monotonic() + timeout
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.sendall(_encode_request(api_key, api_version, correlation_id, body))
            sock.settimeout(max(deadline - time.monotonic(), 0.001))
            (size,) = struct.unpack(">i", _recv_exactly(sock, 4))
            if not 4 <= size <= _MAX_RESPONSE_SIZE:
                raise _ProbeFailed(f"implausible response size {size}")
            response = _recv_exactly(sock, size)
    except OSError as exc:  # refused, reset, timed out: the broker is not (yet) serving
        raise _ProbeFailed(str(exc)) from exc
    (answered_id,) = struct.unpack_from(">i", response, 0)
    if answered_id != correlation_id:
        raise _ProbeFailed(f"correlation id {answered_id} != {correlation_id}")
    return response[4:]


def _api_versions_ready(host: str, port: int, timeout: float) -> bool:
    """Whether a Kafka broker at host:port answers ApiVersions v0 without error.

    Never raises for network trouble: a broker that is still starting refuses or resets.

    >>> _api_versions_ready("127.0.0.1", 1, timeout=0.1)
    False
    """
    try:
        body = _round_trip(host, port, timeout, _API_VERSIONS_KEY, 0, b"")
    except _ProbeFailed:
        return False
    if len(body) < 2:
        return False
    (error_code,) = struct.unpack_from(">h", body, 0)
    return int(error_code) == 0


class _Reader:
    """Just enough of a cursor to walk a Metadata v1 response."""

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._offset = 0

    def _take(self, fmt: str) -> int:
        try:
            (value,) = struct.unpack_from(fmt, self._data, self._offset)
        except struct.error as exc:
            raise _ProbeFailed("truncated metadata response") from exc
        self._offset += struct.calcsize(fmt)
        return int(value)

    def int16(self) -> int:
        return self._take(">h")

    def int32(self) -> int:
        return self._take(">i")

    def boolean(self) -> bool:
        return self._take(">b") != 0

    def string(self) -> str | None:
        length = self.int16()
        if length < 0:
            return None
        end = self._offset + length
        if end > len(self._data):
            raise _ProbeFailed("truncated metadata response")
        text = self._data[self._offset : end].decode("utf-8", errors="replace")
        self._offset = end
        return text

    def skip_int32_array(self) -> None:
        count = self.int32()
        for _ in range(max(count, 0)):
            self.int32()


def _topic_partition_counts(host: str, port: int, timeout: float) -> dict[str, int] | None:
    """Every topic the broker reports without error, with its partition count, from one
    Metadata v1 request for all topics. None when the broker could not be asked.

    Asking for all topics (a null list) rather than by name matters: a by-name request may
    auto-create the topic on brokers that do that.
    """
    all_topics = struct.pack(">i", -1)
    try:
        reader = _Reader(_round_trip(host, port, timeout, _METADATA_KEY, 1, all_topics))
        for _ in range(max(reader.int32(), 0)):  # brokers
            reader.int32()
            reader.string()
            reader.int32()
            reader.string()
        reader.int32()  # controller_id
        counts: dict[str, int] = {}
        for _ in range(max(reader.int32(), 0)):
            topic_error = reader.int16()
            name = reader.string()
            reader.boolean()
            partition_count = max(reader.int32(), 0)
            for _ in range(partition_count):
                reader.int16()
                reader.int32()
                reader.int32()
                reader.skip_int32_array()
                reader.skip_int32_array()
            if topic_error == 0 and name is not None:
                counts[name] = partition_count
    except _ProbeFailed:
        return None
    return counts
