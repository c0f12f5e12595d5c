"""Malformed broker responses, end to end (issue 8's fuzzing of the response decoding path):
a real Producer against a fake broker on a loopback socket that speaks just enough Kafka
(ApiVersions, Metadata, InitProducerId, Produce) and answers chosen Produce requests with
garbage: random bodies, bodies cut short or with bytes after them, wrong correlation ids, lying
frame sizes, a frame cut off by a closed connection, an answer for a partition that was not
asked about, retriable error codes. Hypothesis picks the garbage. New producers also get
garbage for their first Metadata answers, and must still find the topic.

What must hold:
- a malformed response closes that connection (the fake sees the client hang up and come back)
  and the request is retried; the record is then acknowledged by the fake's good answer;
- the producer's I/O thread never dies (sends keep working, no SenderFailedError);
- nothing is reported as acknowledged that the fake did not acknowledge: a future's offset is
  always one the fake gave that record in a well-formed answer.

The fake stores what it acknowledges and, like Kafka, answers a retried batch it already
stored (same producer id, epoch and sequence) with the first offset instead of storing it again.
"""

from __future__ import annotations

import collections
import contextlib
import random
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkaline import Producer
from kafkaline.errors import KafkaError, ProtocolError, SenderFailedError
from kafkaline.protocol import CLIENT_VERSIONS, Request, Response
from kafkaline.protocol.api import (
    REQUEST_TYPES,
    ApiVersionsRequest,
    ApiVersionsResponse,
    InitProducerIdRequest,
    InitProducerIdResponse,
    MetadataRequest,
    MetadataResponse,
    ProduceRequest,
    ProduceResponse,
)
from kafkaline.protocol.api.api_versions import ApiVersion
from kafkaline.protocol.api.metadata import (
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from kafkaline.protocol.api.produce import PartitionProduceResponse, TopicProduceResponse
from kafkaline.protocol.headers import (
    RequestHeader,
    ResponseHeader,
    request_header_version,
    response_header_version,
)
from kafkaline.protocol.primitives import Reader
from kafkaline.protocol.schema import decode_message, read_message
from kafkaline.record import read_record_batches

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

TOPIC = "fuzz"
NODE_ID = 1
_SIZE = struct.Struct(">i")
_API_AND_VERSION = struct.Struct(">hh")
_REQUESTS: dict[int, type[Request]] = {request.API_KEY: request for request in REQUEST_TYPES}
_ANSWERED = (
    ProduceRequest.API_KEY,
    MetadataRequest.API_KEY,
    ApiVersionsRequest.API_KEY,
    InitProducerIdRequest.API_KEY,
)


# --------------------------------------------------------------------------- the garbage


@dataclass(frozen=True)
class Malformation:
    """How to spoil one Produce answer. ``kind`` names it; the other fields are its dials."""

    kind: str
    data: bytes = b""
    number: int = 0

    def answer(
        self,
        correlation_id: int,
        version: int,
        good: Response,
        api_key: int = ProduceRequest.API_KEY,
    ) -> bytes:
        """The bytes to send instead of ``good``, the answer to a request of ``api_key``."""
        header = _response_header(correlation_id, api_key, version)
        body = good.encode(version)
        if self.kind == "random-body":
            return _frame(header + self.data)
        if self.kind == "cut-body":
            return _frame(header + body[: self.number % len(body)])
        if self.kind == "trailing-bytes":
            return _frame(header + body + self.data)
        if self.kind == "wrong-correlation-id":
            wrong = _response_header((correlation_id + 1 + self.number) % 2**31, api_key, version)
            return _frame(wrong + body)
        if self.kind == "lying-frame-size":
            return _SIZE.pack(self.number) + self.data
        if self.kind == "frame-cut-by-close":
            whole = _frame(header + body)
            return whole[: 1 + self.number % (len(whole) - 1)]
        assert api_key == ProduceRequest.API_KEY, f"{self.kind} spoils Produce answers only"
        if self.kind == "other-partition":
            other = ProduceResponse(
                responses=[
                    TopicProduceResponse(
                        name=TOPIC,
                        partition_responses=[
                            PartitionProduceResponse(index=5, error_code=0, base_offset=0)
                        ],
                    )
                ]
            )
            return _frame(header + other.encode(version))
        if self.kind == "retriable-error":
            failed = ProduceResponse(
                responses=[
                    TopicProduceResponse(
                        name=TOPIC,
                        partition_responses=[
                            PartitionProduceResponse(
                                index=0, error_code=self.number, base_offset=-1
                            )
                        ],
                    )
                ]
            )
            return _frame(header + failed.encode(version))
        raise AssertionError(f"unknown malformation {self.kind}")

    @property
    def closes_connection(self) -> bool:
        """Whether the fake hangs up after sending it (a response cut off mid-frame)."""
        return self.kind == "frame-cut-by-close"

    @property
    def is_undecodable(self) -> bool:
        """Answers the client cannot read at all: the connection must go, the request retried."""
        return self.kind in {
            "cut-body",
            "trailing-bytes",
            "wrong-correlation-id",
            "lying-frame-size",
            "frame-cut-by-close",
        }


MALFORMATIONS = st.one_of(
    st.builds(Malformation, st.just("random-body"), st.binary(max_size=80)),
    st.builds(Malformation, st.just("cut-body"), number=st.integers(0, 10_000)),
    st.builds(Malformation, st.just("trailing-bytes"), st.binary(min_size=1, max_size=20)),
    st.builds(Malformation, st.just("wrong-correlation-id"), number=st.integers(0, 1000)),
    st.builds(
        Malformation,
        st.just("lying-frame-size"),
        st.binary(max_size=20),
        st.one_of(st.integers(-(2**31), -1), st.integers(200 << 20, 2**31 - 1)),
    ),
    st.builds(Malformation, st.just("frame-cut-by-close"), number=st.integers(0, 10_000)),
    st.builds(Malformation, st.just("other-partition")),
    # NOT_LEADER_OR_FOLLOWER, REQUEST_TIMED_OUT, NETWORK_EXCEPTION, NOT_ENOUGH_REPLICAS
    st.builds(Malformation, st.just("retriable-error"), number=st.sampled_from([6, 7, 13, 19])),
)


def _response_header(correlation_id: int, api_key: int, version: int) -> bytes:
    data = bytearray()
    flexible = _REQUESTS[api_key].RESPONSE_TYPE.is_flexible(version)
    ResponseHeader(correlation_id=correlation_id).encode_into(
        data, response_header_version(api_key, flexible)
    )
    return bytes(data)


def _frame(payload: bytes) -> bytes:
    return _SIZE.pack(len(payload)) + payload


# --------------------------------------------------------------------------- the fake broker


class FakeBroker:
    """One node, one topic of one partition; answers chosen Produce requests with garbage."""

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.05)
        self.port: int = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.pending: collections.deque[Malformation] = collections.deque()
        #: Spoil the next Metadata answers with these (undecodable kinds only).
        self.metadata_pending: collections.deque[Malformation] = collections.deque()
        #: Given a Produce request number (1-based), a malformation to send, or None.
        self.chooser: Callable[[int], Malformation | None] | None = None
        self.log: list[bytes] = []  # stored record values, by offset
        self.acknowledged: dict[bytes, set[int]] = collections.defaultdict(set)
        self.malformed_sent: collections.Counter[str] = collections.Counter()
        self.produce_requests = 0
        self.connections = 0
        self.hung_up_by_client = 0
        self._sequences: dict[tuple[int, int, int], int] = {}  # (pid, epoch, seq) -> offset
        self.producer_ids = 1000
        #: What went wrong inside the fake itself (its threads cannot raise into the test).
        self.errors: list[str] = []
        self._threads = [threading.Thread(target=self._accept, daemon=True)]
        self._threads[0].start()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def close(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=5)
        self._listener.close()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            with self._lock:
                self.connections += 1
            thread = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            self._threads.append(thread)
            thread.start()

    def _serve(self, conn: socket.socket) -> None:
        conn.settimeout(0.05)
        buffer = bytearray()
        with conn:
            while not self._stop.is_set():
                try:
                    data = conn.recv(1 << 20)
                except TimeoutError:
                    continue
                except OSError:
                    data = b""
                if not data:
                    with self._lock:
                        self.hung_up_by_client += 1
                    return
                buffer += data
                while len(buffer) >= 4 and len(buffer) >= 4 + _SIZE.unpack_from(buffer)[0]:
                    size = _SIZE.unpack_from(buffer)[0]
                    frame = bytes(buffer[4 : 4 + size])
                    del buffer[: 4 + size]
                    try:
                        answer, hang_up = self._answer(frame)
                    except Exception as error:
                        self.errors.append(f"{type(error).__name__}: {error}")
                        return
                    try:
                        conn.sendall(answer)
                    except OSError:
                        return
                    if hang_up:
                        with contextlib.suppress(OSError):  # the client may have gone first
                            conn.shutdown(socket.SHUT_RDWR)
                        return

    def _answer(self, frame: bytes) -> tuple[bytes, bool]:
        api_key, version = _API_AND_VERSION.unpack_from(frame)
        request_type = _REQUESTS[api_key]
        reader = Reader(frame)
        header = read_message(
            RequestHeader, reader, request_header_version(request_type.is_flexible(version))
        )
        request = decode_message(request_type, reader, version)
        correlation_id = header.correlation_id
        if isinstance(request, ProduceRequest):
            return self._answer_produce(request, correlation_id, version)
        response: Response
        if isinstance(request, ApiVersionsRequest):
            response = ApiVersionsResponse(
                api_keys=[
                    ApiVersion(api_key=key, min_version=r.min, max_version=r.max)
                    for key, r in CLIENT_VERSIONS.items()
                    if key in _ANSWERED
                ]
            )
        elif isinstance(request, MetadataRequest):
            response = MetadataResponse(
                brokers=[MetadataResponseBroker(node_id=NODE_ID, host="127.0.0.1", port=self.port)],
                controller_id=NODE_ID,
                topics=[
                    MetadataResponseTopic(
                        name=TOPIC,
                        partitions=[
                            MetadataResponsePartition(
                                partition_index=0,
                                leader_id=NODE_ID,
                                replica_nodes=[NODE_ID],
                                isr_nodes=[NODE_ID],
                            )
                        ],
                    )
                ],
            )
            with self._lock:
                spoil = self.metadata_pending.popleft() if self.metadata_pending else None
                if spoil is not None:
                    self.malformed_sent[f"metadata {spoil.kind}"] += 1
            if spoil is not None:
                bad = spoil.answer(correlation_id, version, response, MetadataRequest.API_KEY)
                return bad, spoil.closes_connection
        elif isinstance(request, InitProducerIdRequest):
            with self._lock:  # a fresh id each time, as a broker would give
                self.producer_ids += 1
                response = InitProducerIdResponse(producer_id=self.producer_ids, producer_epoch=0)
        else:
            raise AssertionError(f"the fake broker does not answer {request_type.__name__}")
        return _frame(
            _response_header(correlation_id, api_key, version) + response.encode(version)
        ), False

    def _answer_produce(
        self, request: ProduceRequest, correlation_id: int, version: int
    ) -> tuple[bytes, bool]:
        with self._lock:
            self.produce_requests += 1
            number = self.produce_requests
            malformation = self.pending.popleft() if self.pending else None
            if malformation is None and self.chooser is not None:
                malformation = self.chooser(number)
            if malformation is not None:
                # Garbage instead of an answer: nothing stored, nothing acknowledged.
                self.malformed_sent[malformation.kind] += 1
                good = _good_answer(0)
                bad = malformation.answer(correlation_id, version, good)
                return bad, malformation.closes_connection
            [topic_data] = request.topic_data
            [partition_data] = topic_data.partition_data
            assert topic_data.name == TOPIC and partition_data.index == 0
            base_offset = -1
            for batch in read_record_batches(partition_data.records or b""):
                identity = (batch.producer_id, batch.producer_epoch, batch.base_sequence)
                if batch.producer_id >= 0 and identity in self._sequences:
                    # A retry of a batch already stored: answered with its first offset, so
                    # that is an acknowledgement of those records at those offsets.
                    base_offset = self._sequences[identity]
                    for position, record in enumerate(batch.records):
                        stored = self.log[base_offset + position]
                        if stored != record.value:
                            self.errors.append(f"sequence {identity} reused for {record.value!r}")
                        self.acknowledged[stored].add(base_offset + position)
                    continue
                base_offset = len(self.log)
                if batch.producer_id >= 0:
                    self._sequences[identity] = base_offset
                for position, record in enumerate(batch.records):
                    assert record.value is not None
                    self.log.append(record.value)
                    self.acknowledged[record.value].add(base_offset + position)
            # Acknowledged on the wire only now that the answer is well-formed.
        return _frame(
            _response_header(correlation_id, ProduceRequest.API_KEY, version)
            + _good_answer(base_offset).encode(version)
        ), False


def _good_answer(base_offset: int) -> ProduceResponse:
    return ProduceResponse(
        responses=[
            TopicProduceResponse(
                name=TOPIC,
                partition_responses=[
                    PartitionProduceResponse(index=0, error_code=0, base_offset=base_offset)
                ],
            )
        ]
    )


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeBroker]:
    broker = FakeBroker()
    yield broker
    broker.close()


@pytest.fixture(scope="module")
def producer(fake: FakeBroker) -> Iterator[Producer]:
    # One producer through every example: its I/O thread must outlive all the garbage.
    with Producer(
        bootstrap_servers=fake.address,
        linger_ms=0,
        request_timeout_ms=2000,
        delivery_timeout_ms=20_000,
        retry_backoff_ms=10,
        reconnect_backoff_ms=10,
    ) as shared:
        yield shared


def io_thread_alive() -> bool:
    return any(thread.name.startswith("kafkaline-producer") for thread in threading.enumerate())


_counter = iter(range(10**9))


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(malformation=MALFORMATIONS)
def test_a_malformed_answer_is_never_taken_for_an_acknowledgement(
    fake: FakeBroker, producer: Producer, malformation: Malformation
) -> None:
    value = b"record-%06d" % next(_counter)
    hung_up_before = fake.hung_up_by_client
    fake.pending.append(malformation)
    future = producer.send(TOPIC, value, partition=0)
    started = time.monotonic()
    error = future.exception(15)
    took = time.monotonic() - started
    assert not fake.pending, "the malformation was not used"
    assert fake.errors == []
    assert io_thread_alive(), "the producer's I/O thread died"
    if error is None:
        offset = future.get(0).offset
        # The heart of it: acknowledged only with an offset the fake gave this record.
        assert offset in fake.acknowledged[value], (
            f"{malformation.kind}: the future says offset {offset}, the fake acknowledged "
            f"{sorted(fake.acknowledged[value])}"
        )
    else:
        assert isinstance(error, KafkaError) and not isinstance(error, SenderFailedError)
        assert not fake.acknowledged[value], "failed, yet the fake had acknowledged it"
    if malformation.is_undecodable:
        # The connection was closed and the request retried on a new one, which succeeded.
        assert error is None, f"{malformation.kind}: {error!r}"
        assert fake.hung_up_by_client > hung_up_before or malformation.closes_connection
        assert took < 5, f"{malformation.kind}: retried only after {took:.1f} s"
    elif malformation.kind == "other-partition":
        # An answer that does not answer: the batch fails with a named error, not acked.
        assert isinstance(error, ProtocolError), error
        assert f"did not answer for {TOPIC}-0" in str(error)
    elif malformation.kind == "retriable-error":
        assert error is None, f"retriable code {malformation.number}: {error!r}"
    elif malformation.kind == "random-body":
        # Usually undecodable (retried, acknowledged); bytes that happen to decode as a
        # ProduceResponse without this partition fail it as above.
        assert error is None or "did not answer for" in str(error), error


def test_under_load_every_acknowledgement_is_one_the_broker_gave(
    fake: FakeBroker, producer: Producer, capsys: pytest.CaptureFixture[str]
) -> None:
    # 5,000 records in many small requests while one Produce answer in four is garbage
    # (chosen at random, seeded): up to 5 requests in flight when a connection is dropped.
    rng = random.Random(8)
    kinds = [
        Malformation("random-body", bytes(rng.randrange(256) for _ in range(30))),
        Malformation("cut-body", number=7),
        Malformation("trailing-bytes", b"\x00\x01"),
        Malformation("wrong-correlation-id", number=3),
        Malformation("lying-frame-size", b"", -5),
        Malformation("frame-cut-by-close", number=11),
        Malformation("retriable-error", number=6),
    ]
    fake.chooser = lambda number: rng.choice(kinds) if rng.random() < 0.25 else None
    malformed_before = sum(fake.malformed_sent.values())
    try:
        values = [b"load-%06d" % i for i in range(5000)]
        futures = []
        for index, value in enumerate(values):
            futures.append(producer.send(TOPIC, value, partition=0))
            if index % 10 == 9:
                time.sleep(0.002)  # many small requests, several in flight
        producer.flush(60)
    finally:
        fake.chooser = None
    malformed = sum(fake.malformed_sent.values()) - malformed_before
    errors = [future.exception(0) for future in futures]
    failed = collections.Counter(type(error).__name__ for error in errors if error is not None)
    wrong = [
        value
        for value, future, error in zip(values, futures, errors, strict=True)
        if error is None and future.get(0).offset not in fake.acknowledged[value]
    ]
    stored_twice = sum(1 for value in values if fake.log.count(value) > 1)
    with capsys.disabled():
        print(
            f"\n[malformed responses] 5000 records, {malformed} Produce answers replaced by "
            f"garbage ({dict(fake.malformed_sent)} over the whole module), failed "
            f"{dict(failed)}, acknowledged with an offset the broker did not give: "
            f"{len(wrong)}, stored twice: {stored_twice}"
        )
    assert fake.errors == []
    assert malformed > 20
    assert io_thread_alive()
    assert failed == {}, "every malformed answer is retried until a good one comes"
    assert wrong == []
    assert stored_twice == 0, "idempotent retries are deduplicated by the broker"
    assert producer.send(TOPIC, b"after", partition=0).get(10).offset >= 0


@settings(max_examples=15, deadline=None)
@given(spoils=st.lists(MALFORMATIONS.filter(lambda m: m.is_undecodable), min_size=1, max_size=3))
def test_malformed_metadata_answers_are_retried_until_a_good_one_comes(
    fake: FakeBroker, spoils: list[Malformation]
) -> None:
    # A new producer's first Metadata answers are garbage: each closes the connection, the
    # request is asked again, and the first send completes once a good answer comes.
    value = b"after-bad-metadata-%06d" % next(_counter)
    fake.metadata_pending.extend(spoils)
    with Producer(
        bootstrap_servers=fake.address,
        max_block_ms=10_000,
        reconnect_backoff_ms=10,
        retry_backoff_ms=10,
    ) as fresh:
        started = time.monotonic()
        metadata = fresh.send(TOPIC, value, partition=0).get(10)
        took = time.monotonic() - started
    assert not fake.metadata_pending, "every spoiled answer was read"
    assert fake.errors == []
    assert metadata.offset in fake.acknowledged[value]
    assert took < 5, f"{len(spoils)} bad Metadata answers cost {took:.1f} s"
