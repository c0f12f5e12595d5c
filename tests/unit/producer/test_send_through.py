"""The Sender's send-through decisions (:meth:`Sender.send_ready_batches`), with a fake
network client and clock: when the caller's thread sends, when it wakes the I/O thread
instead, and that a failure in its pass leaves the batches to the I/O thread."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import pytest

from kafkaline.config import ExponentialBackoff
from kafkaline.errors import IllegalStateError, KafkaError, NoCompatibleVersionError
from kafkaline.net.cluster import BrokerNode, ClusterMetadata, PartitionMetadata
from kafkaline.net.response import ClientResponse, OnComplete
from kafkaline.producer.accumulator import RecordAccumulator
from kafkaline.producer.futures import FutureRecordMetadata
from kafkaline.producer.sender import Sender
from kafkaline.protocol import Request
from kafkaline.protocol.api import ProduceRequest, ProduceResponse
from kafkaline.protocol.api.produce import PartitionProduceResponse, TopicProduceResponse

TOPIC = "t"


class FakeMetadata:
    def __init__(self) -> None:
        self.cluster = ClusterMetadata(
            [BrokerNode(1, "b1", 9092)], [PartitionMetadata(TOPIC, p, leader=1) for p in (0, 1)]
        )

    def add_topic(self, topic: str, now: float) -> None:
        pass

    def request_update(self) -> int:
        return 0

    def update_leaders(self, leaders: object, endpoints: object = ()) -> bool:
        return False


@dataclass
class FakeClient:
    """One node; requests kept unanswered until the test answers them."""

    metadata: FakeMetadata = field(default_factory=FakeMetadata)
    clock: list[float] = field(default_factory=lambda: [0.0])
    sent: list[tuple[ProduceRequest, OnComplete]] = field(default_factory=list)
    answered: int = 0
    wakeups: int = 0
    partial_write: bool = False
    send_error: Exception | None = None
    shared: bool = True
    connected: bool = True

    def now(self) -> float:
        return self.clock[0]

    def ready(self, node_id: int, now: float) -> bool:
        return True

    def is_ready(self, node_id: int, now: float) -> bool:
        return True

    def needs_poll(self, node_id: int, *, unread: bool = True) -> bool:
        return self.partial_write and bool(self.sent)  # the write left a part

    def share_while_waiting(self, lock: threading.Lock) -> bool:
        return self.shared

    def connection_delay(self, node_id: int, now: float) -> float:
        return 0.0

    def send(
        self,
        node_id: int,
        request: Request,
        on_complete: OnComplete | None = None,
        now: float | None = None,
        *,
        version: int | None = None,
    ) -> int:
        if self.send_error is not None:
            raise self.send_error
        assert isinstance(request, ProduceRequest) and on_complete is not None
        self.sent.append((request, on_complete))
        return len(self.sent)

    def api_versions(self, node_id: int) -> dict[int, int]:
        return {}

    def poll(self, timeout_ms: float, now: float | None = None) -> list[ClientResponse]:
        return []

    def in_flight_request_count(self, node_id: int | None = None) -> int:
        if not self.connected:
            raise IllegalStateError(f"node {node_id} is not in the cluster metadata")
        return len(self.sent) - self.answered

    def least_loaded_node(self, now: float) -> int | None:
        return 1

    def wakeup(self) -> None:
        self.wakeups += 1

    def close(self) -> list[ClientResponse]:
        return []

    def answer(self, index: int) -> None:
        request, on_complete = self.sent[index]
        self.answered += 1
        topics = [
            TopicProduceResponse(
                name=topic.name,
                partition_responses=[
                    PartitionProduceResponse(index=part.index, error_code=0, base_offset=7)
                    for part in topic.partition_data
                ],
            )
            for topic in request.topic_data
        ]
        on_complete(
            ClientResponse(
                node_id=1,
                request=request,
                api_version=9,
                correlation_id=index,
                response=ProduceResponse(responses=topics),
                error=None,
                sent_at_ms=0.0,
                completed_at_ms=self.clock[0],
            )
        )


def make_sender(
    client: FakeClient, *, send_through: bool = True
) -> tuple[Sender, RecordAccumulator]:
    accumulator = RecordAccumulator(
        batch_size=16384,
        linger_ms=0,
        delivery_timeout_ms=1000.0,
        retry_backoff=ExponentialBackoff(100, 100, jitter=0.0),
    )
    sender = Sender(
        client,
        accumulator,
        acks=1,
        request_timeout_ms=500,
        max_request_size=1 << 20,
        retries=0,
        guarantee_message_order=False,
        send_through=send_through,
    )
    sender.run_once()  # the I/O thread's first pass (its expiry scan is due at once)
    return sender, accumulator


def append(accumulator: RecordAccumulator, partition: int = 0) -> FutureRecordMetadata:
    future, _, _ = accumulator.append(TOPIC, partition, 0, b"k", b"v", now=0.0)
    return future


def test_an_idle_connection_gets_the_request_from_the_caller() -> None:
    client = FakeClient()
    sender, accumulator = make_sender(client)
    future = append(accumulator)
    sender.send_ready_batches()
    assert len(client.sent) == 1 and client.wakeups == 0
    assert not future.done()  # the answer completes it, on the I/O thread
    client.answer(0)
    assert future.get(0).offset == 7


def test_a_request_in_flight_leaves_the_batch_to_the_io_thread() -> None:
    client = FakeClient()
    sender, accumulator = make_sender(client)
    append(accumulator)
    sender.send_ready_batches()
    append(accumulator, partition=1)
    sender.send_ready_batches()
    assert len(client.sent) == 1 and client.wakeups == 1
    sender.run_once()  # the I/O thread's pass sends it (in-flight limit 5)
    assert len(client.sent) == 2


def test_the_io_thread_in_its_pass_means_a_wakeup() -> None:
    client = FakeClient()
    sender, accumulator = make_sender(client)
    append(accumulator)
    with sender._pass_lock:  # as the I/O thread holds it outside its poll's wait
        sender.send_ready_batches()
    assert client.sent == [] and client.wakeups == 1


@pytest.mark.parametrize("send_through", [False, True])
def test_off_or_closing_means_a_wakeup(send_through: bool) -> None:
    client = FakeClient()
    sender, accumulator = make_sender(client, send_through=send_through)
    if send_through:
        sender.initiate_close()
        client.wakeups = 0
    else:
        append(accumulator)
    sender.send_ready_batches()
    assert client.sent == [] and client.wakeups == 1


def test_a_partial_write_wakes_the_io_thread_to_finish_it() -> None:
    client = FakeClient(partial_write=True)
    sender, accumulator = make_sender(client)
    append(accumulator)
    sender.send_ready_batches()
    assert len(client.sent) == 1 and client.wakeups == 1


def test_without_epoll_the_producer_wakes_the_io_thread() -> None:
    client = FakeClient(shared=False)
    sender, _ = make_sender(client)
    sender.start()
    try:
        assert sender.batch_ready == client.wakeup
    finally:
        sender.force_close()
        assert sender.join(5)


def test_a_request_that_cannot_be_queued_fails_on_the_io_thread() -> None:
    client = FakeClient(send_error=NoCompatibleVersionError("no Produce version"))
    sender, accumulator = make_sender(client)
    future = append(accumulator)
    sender.send_ready_batches()
    assert not future.done() and client.wakeups == 1
    sender.run_once()
    assert isinstance(future.exception(0), NoCompatibleVersionError)


def test_a_failing_pass_turns_send_through_off_and_loses_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    client = FakeClient(send_error=RuntimeError("a bug"))
    sender, accumulator = make_sender(client)
    future = append(accumulator)
    sender.send_ready_batches()
    assert not future.done() and client.wakeups == 1
    assert "sending from the caller's thread failed" in caplog.text
    sender.run_once()
    error = future.exception(0)
    assert isinstance(error, KafkaError) and "a bug" in str(error)
    client.send_error = None
    append(accumulator, partition=1)
    sender.send_ready_batches()  # off now: the I/O thread sends
    assert client.sent == [] and client.wakeups == 2


def test_a_leader_without_a_connection_yet_is_left_to_the_io_thread() -> None:
    client = FakeClient(connected=False)
    sender, accumulator = make_sender(client)
    append(accumulator)
    sender.send_ready_batches()
    assert client.sent == [] and client.wakeups == 1
    client.connected = True
    append(accumulator, partition=1)
    sender.send_ready_batches()  # still on
    assert len(client.sent) == 1 and client.wakeups == 1
