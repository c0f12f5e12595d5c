"""The broker's limit: how many records of a workload Tansu accepts when fed ready-made batches.

No producer logic runs while the clock runs. Before it, the records are partitioned by key
(murmur2, as the Java-compatible clients do), packed into record batches of the workload's
batch size with kafkaline's record layer, grouped into Produce requests (one batch for each
partition, as a producer's drain would send) and framed with kafkaline's protocol layer. The
timed part only writes those frames over ``connections`` sockets, keeping up to ``in_flight``
requests outstanding on each, and reads the answers (checking every partition's error code).
What the client costs is then next to nothing, so the rate is what the broker takes in.
"""

from __future__ import annotations

import selectors
import socket
import time
from collections import deque
from dataclasses import dataclass, field

from benchmarks.clients.base import ClientAdapter
from benchmarks.workloads import Kind, Records, Workload
from kafkaline.errors import raise_for_code
from kafkaline.producer.murmur2 import murmur2, to_positive
from kafkaline.protocol import ClientProtocol
from kafkaline.protocol.api import ProduceRequest, ProduceResponse
from kafkaline.protocol.api.produce import PartitionProduceData, TopicProduceData
from kafkaline.record import CompressionType, RecordBatchBuilder
from kafkaline.testing.wire import BlockingConnection, negotiate_versions

DEFAULT_CONNECTIONS = 2
DEFAULT_IN_FLIGHT = 5
_TIMEOUT_S = 30.0
_RECV_SIZE = 1 << 20
_CLIENT_ID = "kafkaline-bench-raw"


@dataclass
class _Connection:
    """One socket, its framing state, the frames still to write and the one being written."""

    sock: socket.socket
    protocol: ClientProtocol
    frames: deque[bytearray] = field(default_factory=deque)
    writing: memoryview | None = None
    in_flight: int = 0
    answered: int = 0


def _check_produce_response(response: object) -> None:
    if not isinstance(response, ProduceResponse):
        raise TypeError(f"expected a ProduceResponse, got {type(response).__name__}")
    for topic in response.responses:
        for answer in topic.partition_responses:
            raise_for_code(answer.error_code, answer.error_message or f"produce to {topic.name}")


class BrokerLimit(ClientAdapter):
    name = "broker-limit"

    def __init__(
        self,
        workload: Workload,
        connections: int = DEFAULT_CONNECTIONS,
        in_flight: int = DEFAULT_IN_FLIGHT,
    ) -> None:
        super().__init__(workload)
        if connections < 1 or in_flight < 1:
            raise ValueError("connections and in_flight must be at least 1")
        self.connections = connections
        self.in_flight = in_flight
        self._connections: list[_Connection] = []
        self._produce_version = 0
        self._topic = ""

    def unsupported_reason(self) -> str | None:
        if self.workload.kind is Kind.MEMORY:
            return "pre-builds all its batches: its memory is its input, not a producer's"
        return None

    def config(self) -> dict[str, object]:
        workload = self.workload
        return {
            "acks": workload.acks,
            "batch bytes (uncompressed)": workload.batch_size,
            "compression": workload.compression,
            "connections": 1 if workload.kind is Kind.LATENCY else self.connections,
            "requests in flight per connection": (
                1 if workload.kind is Kind.LATENCY else self.in_flight
            ),
        }

    # ------------------------------------------------------------------ setup, not timed

    def open(self, bootstrap_servers: str, topic: str) -> None:
        host, _, port = bootstrap_servers.rpartition(":")
        with BlockingConnection(host, int(port), timeout=_TIMEOUT_S) as probe:
            self._produce_version = negotiate_versions(probe)[ProduceRequest.API_KEY]
        count = 1 if self.workload.kind is Kind.LATENCY else self.connections
        for _ in range(count):
            sock = socket.create_connection((host, int(port)), timeout=_TIMEOUT_S)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._connections.append(_Connection(sock, ClientProtocol(_CLIENT_ID)))
        self._topic = topic

    def prepare(self, records: Records) -> None:
        if self.workload.kind is Kind.LATENCY:
            self._frame_one_record_requests(records)
        else:
            self._frame_batched_requests(records)

    def _new_builder(self) -> RecordBatchBuilder:
        codec = CompressionType[self.workload.compression.upper()]
        return RecordBatchBuilder(compression=codec, batch_size_limit=self.workload.batch_size)

    def _frame_batched_requests(self, records: Records) -> None:
        partitions = self.workload.partitions
        by_partition: list[tuple[list[bytes], list[bytes]]] = [([], []) for _ in range(partitions)]
        for key, value in zip(records.keys, records.values, strict=True):
            keys, values = by_partition[to_positive(murmur2(key)) % partitions]
            keys.append(key)
            values.append(value)
        timestamp = int(time.time() * 1000)
        batches: list[deque[bytes]] = []
        for keys, values in by_partition:
            built: deque[bytes] = deque()
            start = 0
            while start < len(values):
                builder = self._new_builder()
                start += builder.append_many(keys, values, timestamp, start=start)
                built.append(builder.build())
            batches.append(built)
        # One request carries the next batch of every partition that has one left.
        requests = 0
        while any(batches):
            data = [
                PartitionProduceData(index=partition, records=queue.popleft())
                for partition, queue in enumerate(batches)
                if queue
            ]
            connection = self._connections[requests % len(self._connections)]
            connection.frames.append(connection.protocol.send(self._request(data), self._version))
            requests += 1

    def _frame_one_record_requests(self, records: Records) -> None:
        partitions = self.workload.partitions
        connection = self._connections[0]
        timestamp = int(time.time() * 1000)
        for key, value in zip(records.keys, records.values, strict=True):
            builder = self._new_builder()
            builder.append(timestamp, key, value)
            partition = to_positive(murmur2(key)) % partitions
            data = [PartitionProduceData(index=partition, records=builder.build())]
            connection.frames.append(connection.protocol.send(self._request(data), self._version))

    @property
    def _version(self) -> int:
        return self._produce_version

    def _request(self, data: list[PartitionProduceData]) -> ProduceRequest:
        return ProduceRequest(
            acks=self.workload.acks,
            timeout_ms=int(_TIMEOUT_S * 1000),
            topic_data=[TopicProduceData(name=self._topic, partition_data=data)],
        )

    # ------------------------------------------------------------------ timed

    def produce_all(self, records: Records) -> None:
        expected = sum(len(c.frames) for c in self._connections)
        answered = 0
        deadline = time.monotonic() + _TIMEOUT_S * 4
        with selectors.DefaultSelector() as selector:
            for connection in self._connections:
                connection.sock.setblocking(False)
                selector.register(connection.sock, self._interest(connection), connection)
            while answered < expected:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{answered} of {expected} produce requests answered")
                for key, events in selector.select(timeout=1.0):
                    connection = key.data
                    if events & selectors.EVENT_READ:
                        answered += self._read_answers(connection)
                    if events & selectors.EVENT_WRITE:
                        self._write_some(connection)
                    selector.modify(connection.sock, self._interest(connection), connection)

    def _interest(self, connection: _Connection) -> int:
        wants_write = connection.writing is not None or (
            connection.frames and connection.in_flight < self.in_flight
        )
        return selectors.EVENT_READ | (selectors.EVENT_WRITE if wants_write else 0)

    def _write_some(self, connection: _Connection) -> None:
        while True:
            if connection.writing is None:
                if not connection.frames or connection.in_flight >= self.in_flight:
                    return
                connection.writing = memoryview(connection.frames.popleft())
                connection.in_flight += 1
            try:
                sent = connection.sock.send(connection.writing)
            except BlockingIOError:
                return
            connection.writing = (
                connection.writing[sent:] if sent < len(connection.writing) else None
            )
            if connection.writing is not None:
                return  # the socket buffer is full: wait until it is writable again

    def _read_answers(self, connection: _Connection) -> int:
        try:
            data = connection.sock.recv(_RECV_SIZE)
        except BlockingIOError:
            return 0
        if not data:
            raise ConnectionError("the broker closed the connection")
        connection.protocol.receive_data(data)
        answered = 0
        while (item := connection.protocol.next_response()) is not None:
            _check_produce_response(item[1])
            connection.in_flight -= 1
            answered += 1
        connection.answered += answered
        return answered

    def latencies(self, records: Records, warmup: int) -> list[float]:
        connection = self._connections[0]
        sock = connection.sock
        protocol = connection.protocol
        timings: list[float] = []
        index = 0
        while connection.frames:
            frame = connection.frames.popleft()
            start = time.perf_counter()
            sock.sendall(frame)
            while (item := protocol.next_response()) is None:
                data = sock.recv(_RECV_SIZE)
                if not data:
                    raise ConnectionError("the broker closed the connection")
                protocol.receive_data(data)
            elapsed = time.perf_counter() - start
            _check_produce_response(item[1])
            if index >= warmup:
                timings.append(elapsed)
            index += 1
        return timings

    def close(self) -> None:
        for connection in self._connections:
            connection.sock.close()
        self._connections.clear()
