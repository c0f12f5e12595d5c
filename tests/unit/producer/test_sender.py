"""The Sender's decisions, driven with a fake network client and a fake clock: what it sends,
how responses complete futures (offsets, log-append time, acks=0), retries with backoff,
MESSAGE_TOO_LARGE splits, delivery timeouts (queued and in flight), muting, metadata requests,
and the thread's life: graceful and forced close, and dying loudly."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

import pytest

from kafkaline.config import ExponentialBackoff
from kafkaline.errors import (
    DeliveryTimeoutError,
    InvalidRecordError,
    KafkaConnectionError,
    MessageTooLargeError,
    NotLeaderOrFollowerError,
    ProducerClosedError,
    ProtocolError,
    RequestTimeoutError,
    SenderFailedError,
    TopicAuthorizationFailedError,
)
from kafkaline.net.cluster import BrokerNode, ClusterMetadata, PartitionMetadata, TopicPartition
from kafkaline.net.response import ClientResponse, OnComplete
from kafkaline.producer.accumulator import RecordAccumulator
from kafkaline.producer.futures import FutureRecordMetadata
from kafkaline.producer.metrics import SenderCounters
from kafkaline.producer.sender import Sender
from kafkaline.protocol import Request
from kafkaline.protocol.api import ProduceRequest, ProduceResponse
from kafkaline.protocol.api.produce import (
    BatchIndexAndErrorMessage,
    LeaderIdAndEpoch,
    NodeEndpoint,
    PartitionProduceResponse,
    TopicProduceResponse,
)
from kafkaline.record import read_record_batches

TS = 1_700_000_000_000
TOPIC = "t"


def cluster_with(topic: str = TOPIC, partitions: int = 2, leader: int = 1) -> ClusterMetadata:
    return ClusterMetadata(
        [BrokerNode(1, "b1", 9092), BrokerNode(2, "b2", 9092)],
        [PartitionMetadata(topic, p, leader=leader) for p in range(partitions)],
    )


class FakeMetadata:
    def __init__(self, cluster: ClusterMetadata) -> None:
        self.cluster = cluster
        self.update_requests = 0
        self.topics: dict[str, float] = {}

    def add_topic(self, topic: str, now: float) -> None:
        self.topics[topic] = now

    def request_update(self) -> int:
        self.update_requests += 1
        return 0

    def update_leaders(
        self,
        leaders: Mapping[TopicPartition, tuple[int, int]],
        endpoints: Iterable[BrokerNode] = (),
    ) -> bool:
        cluster = self.cluster.with_leaders(leaders, endpoints)
        if cluster is None:
            return False
        self.cluster = cluster
        return True


@dataclass
class Sent:
    node: int
    request: ProduceRequest
    on_complete: OnComplete
    sent_at: float
    done: bool = False

    def batches(self) -> dict[tuple[str, int], bytes]:
        out: dict[tuple[str, int], bytes] = {}
        for topic in self.request.topic_data:
            for part in topic.partition_data:
                # an uncompressed batch's wire bytes are a bytearray (built in place)
                assert isinstance(part.records, (bytes, bytearray))
                out[(topic.name, part.index)] = bytes(part.records)
        return out

    def record_counts(self) -> dict[tuple[str, int], int]:
        return {
            tp: sum(len(batch.records) for batch in read_record_batches(raw))
            for tp, raw in self.batches().items()
        }


@dataclass
class FakeClient:
    """Ready nodes, requests kept for the test to answer, polls recorded."""

    metadata: FakeMetadata
    clock: list[float] = field(default_factory=lambda: [0.0])
    ready_nodes: set[int] = field(default_factory=lambda: {1, 2})
    sent: list[Sent] = field(default_factory=list)
    polls: list[float] = field(default_factory=list)
    wakeups: int = 0
    closed: bool = False
    poll_error: BaseException | None = None
    #: Answer every request with success during poll (for threaded tests).
    auto_respond: bool = False

    def now(self) -> float:
        return self.clock[0]

    def ready(self, node_id: int, now: float) -> bool:
        return node_id in self.ready_nodes

    def connection_delay(self, node_id: int, now: float) -> float:
        return 50.0

    def send(
        self,
        node_id: int,
        request: Request,
        on_complete: OnComplete | None = None,
        now: float | None = None,
        *,
        version: int | None = None,
    ) -> int:
        assert isinstance(request, ProduceRequest) and on_complete is not None
        self.sent.append(Sent(node_id, request, on_complete, self.clock[0]))
        return len(self.sent)

    def api_versions(self, node_id: int) -> dict[int, int]:
        return {}

    def poll(self, timeout_ms: float, now: float | None = None) -> list[ClientResponse]:
        self.polls.append(timeout_ms)
        if self.poll_error is not None:
            raise self.poll_error
        if self.auto_respond:
            for index, sent in enumerate(self.sent):
                if not sent.done:
                    self.respond(index)
        return []

    def in_flight_request_count(self, node_id: int | None = None) -> int:
        return sum(1 for sent in self.sent if not sent.done)

    def least_loaded_node(self, now: float) -> int | None:
        return min(self.ready_nodes, default=None)

    def wakeup(self) -> None:
        self.wakeups += 1

    def close(self) -> list[ClientResponse]:
        self.closed = True
        for index, sent in enumerate(self.sent):
            if not sent.done:
                self.fail(index, KafkaConnectionError("client closed"))
        return []

    # ------------------------------------------------------------------ answering

    def _complete(
        self, index: int, response: ProduceResponse | None, error: KafkaConnectionError | None
    ) -> None:
        sent = self.sent[index]
        assert not sent.done
        sent.done = True
        sent.on_complete(
            ClientResponse(
                node_id=sent.node,
                request=sent.request,
                api_version=9,
                correlation_id=index,
                response=response,
                error=error,
                sent_at_ms=sent.sent_at,
                completed_at_ms=self.clock[0],
            )
        )

    def respond(
        self,
        index: int,
        errors: dict[tuple[str, int], int] | None = None,
        base_offset: int = 100,
        log_append_time: int = -1,
        record_errors: list[BatchIndexAndErrorMessage] | None = None,
        skip: tuple[str, int] | None = None,
    ) -> None:
        errors = errors or {}
        responses = []
        for topic in self.sent[index].request.topic_data:
            partitions = [
                PartitionProduceResponse(
                    index=part.index,
                    error_code=errors.get((topic.name, part.index), 0),
                    base_offset=base_offset if not errors.get((topic.name, part.index)) else -1,
                    log_append_time_ms=log_append_time,
                    record_errors=record_errors or [],
                )
                for part in topic.partition_data
                if (topic.name, part.index) != skip
            ]
            responses.append(TopicProduceResponse(name=topic.name, partition_responses=partitions))
        self._complete(index, ProduceResponse(responses=responses), None)

    def respond_acks0(self, index: int) -> None:
        self._complete(index, None, None)

    def fail(self, index: int, error: KafkaConnectionError) -> None:
        self._complete(index, None, error)


@dataclass
class Rig:
    client: FakeClient
    accumulator: RecordAccumulator
    sender: Sender
    counters: SenderCounters

    @property
    def now(self) -> float:
        return self.client.clock[0]

    def advance(self, ms: float) -> None:
        self.client.clock[0] += ms

    def append(
        self, partition: int = 0, value: bytes = b"value", topic: str = TOPIC, count: int = 1
    ) -> list[FutureRecordMetadata]:
        futures = []
        for i in range(count):
            future, _, _ = self.accumulator.append(
                topic, partition, TS + i, b"k%d" % i, value, now=self.now
            )
            futures.append(future)
        return futures

    def run(self) -> None:
        self.sender.run_once(self.now)


def make_rig(
    *,
    acks: int = -1,
    retries: int = 5,
    max_in_flight_one: bool = False,
    batch_size: int = 16384,
    delivery_timeout_ms: float = 1000.0,
    backoff_ms: int = 100,
    cluster: ClusterMetadata | None = None,
) -> Rig:
    client = FakeClient(FakeMetadata(cluster or cluster_with()))
    accumulator = RecordAccumulator(
        batch_size=batch_size,
        linger_ms=0,
        delivery_timeout_ms=delivery_timeout_ms,
        retry_backoff=ExponentialBackoff(backoff_ms, backoff_ms, jitter=0.0),
    )
    counters = SenderCounters()
    sender = Sender(
        client,
        accumulator,
        acks=acks,
        request_timeout_ms=500,
        max_request_size=1 << 20,
        retries=retries,
        guarantee_message_order=max_in_flight_one,
        counters=counters,
    )
    return Rig(client, accumulator, sender, counters)


@pytest.fixture
def rig() -> Iterator[Rig]:
    yield make_rig()


# ---------------------------------------------------------------------- success


def test_one_request_per_node_with_the_producer_settings(rig: Rig) -> None:
    rig.append(0, count=3)
    rig.append(1, count=2)
    rig.run()
    (sent,) = rig.client.sent
    assert sent.node == 1
    assert sent.request.acks == -1 and sent.request.timeout_ms == 500
    assert sent.request.transactional_id is None
    assert sent.record_counts() == {(TOPIC, 0): 3, (TOPIC, 1): 2}
    assert rig.client.metadata.topics == {TOPIC: rig.now}  # kept in the metadata requests
    assert rig.counters.records_sent == 5 and rig.counters.requests_in_flight == 1


def test_batches_for_two_leaders_go_in_two_requests() -> None:
    cluster = ClusterMetadata(
        [BrokerNode(1, "b1", 9092), BrokerNode(2, "b2", 9092)],
        [PartitionMetadata(TOPIC, 0, leader=1), PartitionMetadata(TOPIC, 1, leader=2)],
    )
    rig = make_rig(cluster=cluster)
    rig.append(0)
    rig.append(1)
    rig.run()
    assert sorted(sent.node for sent in rig.client.sent) == [1, 2]


def test_success_gives_offsets_from_the_base_offset_and_create_times(rig: Rig) -> None:
    futures = rig.append(0, count=3)
    rig.run()
    rig.client.respond(0, base_offset=100)
    metadata = [future.get(0) for future in futures]
    assert [m.offset for m in metadata] == [100, 101, 102]
    assert [m.timestamp for m in metadata] == [TS, TS + 1, TS + 2]
    assert {(m.topic, m.partition) for m in metadata} == {(TOPIC, 0)}
    assert rig.counters.responses == 1 and rig.counters.requests_in_flight == 0
    assert not rig.accumulator.has_incomplete()


def test_log_append_time_replaces_the_timestamp(rig: Rig) -> None:
    futures = rig.append(0, count=2)
    rig.run()
    rig.client.respond(0, base_offset=7, log_append_time=1_234)
    assert [future.get(0).timestamp for future in futures] == [1_234, 1_234]


def test_acks_0_completes_with_offset_minus_one_when_written() -> None:
    rig = make_rig(acks=0)
    futures = rig.append(0, count=2)
    rig.run()
    assert rig.client.sent[0].request.acks == 0
    rig.client.respond_acks0(0)
    assert [future.get(0).offset for future in futures] == [-1, -1]


# ---------------------------------------------------------------------- errors


def test_retriable_error_reenqueues_with_backoff_and_asks_for_metadata(rig: Rig) -> None:
    futures = rig.append(0, count=2)
    rig.run()
    rig.client.respond(0, errors={(TOPIC, 0): NotLeaderOrFollowerError.code})
    assert not futures[0].done()
    assert rig.client.metadata.update_requests == 1
    assert rig.counters.records_retried == 2
    rig.advance(50)
    rig.run()
    assert len(rig.client.sent) == 1  # still backing off (100 ms)
    assert 0 < rig.client.polls[-1] <= 50
    rig.advance(60)
    rig.run()
    assert len(rig.client.sent) == 2
    rig.client.respond(1, base_offset=5)
    assert [future.get(0).offset for future in futures] == [5, 6]


def not_leader_with_hint(leader: int, epoch: int, port: int = 9092) -> ProduceResponse:
    """NOT_LEADER_OR_FOLLOWER for partition 0 naming the new leader (Produce v10+, KIP-951)."""
    partition = PartitionProduceResponse(
        index=0, error_code=NotLeaderOrFollowerError.code, base_offset=-1
    )
    partition.current_leader = LeaderIdAndEpoch(leader_id=leader, leader_epoch=epoch)
    return ProduceResponse(
        responses=[TopicProduceResponse(name=TOPIC, partition_responses=[partition])],
        node_endpoints=[NodeEndpoint(node_id=leader, host=f"b{leader}", port=port)],
    )


def test_a_leader_hint_sends_the_retry_to_the_new_leader_at_once(rig: Rig) -> None:
    futures = rig.append(0, count=2)
    rig.run()
    assert rig.client.sent[0].node == 1
    rig.client._complete(0, not_leader_with_hint(leader=2, epoch=1), None)
    leader = rig.client.metadata.cluster.leader_for(TopicPartition(TOPIC, 0))
    assert leader is not None and leader.node_id == 2
    rig.run()  # no backoff, no metadata refresh waited for
    assert [sent.node for sent in rig.client.sent] == [1, 2]
    rig.client.respond(1, base_offset=7)
    assert [future.get(0).offset for future in futures] == [7, 8]


def test_a_leader_hint_can_name_a_broker_the_metadata_does_not_know(rig: Rig) -> None:
    rig.client.ready_nodes.add(3)
    futures = rig.append(0)
    rig.run()
    rig.client._complete(0, not_leader_with_hint(leader=3, epoch=1, port=9093), None)
    rig.run()
    assert [sent.node for sent in rig.client.sent] == [1, 3]
    assert rig.client.metadata.cluster.brokers[3].port == 9093
    rig.client.respond(1)
    assert futures[0].get(0).offset == 100


def test_a_stale_leader_hint_changes_nothing_and_the_retry_backs_off(rig: Rig) -> None:
    rig.client.metadata.cluster = ClusterMetadata(
        [BrokerNode(1, "b1", 9092), BrokerNode(2, "b2", 9092)],
        [PartitionMetadata(TOPIC, p, leader=1, leader_epoch=4) for p in range(2)],
    )
    rig.append(0)
    rig.run()
    rig.client._complete(0, not_leader_with_hint(leader=2, epoch=3), None)
    rig.run()
    assert len(rig.client.sent) == 1  # backing off, for node 1 still
    rig.advance(100)
    rig.run()
    assert [sent.node for sent in rig.client.sent] == [1, 1]


def test_connection_error_is_retried_and_asks_for_metadata(rig: Rig) -> None:
    futures = rig.append(0)
    rig.run()
    rig.client.fail(0, RequestTimeoutError("no answer in 500 ms"))
    assert not futures[0].done()
    assert rig.client.metadata.update_requests == 1
    rig.advance(100)
    rig.run()
    rig.client.respond(1)
    assert futures[0].get(0).offset == 100


def test_retries_exhausted_fail_with_the_named_broker_error() -> None:
    rig = make_rig(retries=0)
    futures = rig.append(0, count=2)
    rig.run()
    rig.client.respond(0, errors={(TOPIC, 0): NotLeaderOrFollowerError.code})
    with pytest.raises(NotLeaderOrFollowerError, match=f"{TOPIC}-0"):
        futures[1].get(0)
    assert rig.counters.records_errored == 2


def test_non_retriable_error_fails_the_batch_naming_the_partition(rig: Rig) -> None:
    futures = rig.append(1, count=2)
    rig.run()
    rig.client.respond(0, errors={(TOPIC, 1): TopicAuthorizationFailedError.code})
    error = futures[0].exception(0)
    assert isinstance(error, TopicAuthorizationFailedError)
    assert f"{TOPIC}-1" in str(error)
    assert len(rig.client.sent) == 1


def test_per_record_errors_fail_their_records_with_their_message(rig: Rig) -> None:
    futures = rig.append(0, count=3)
    rig.run()
    rig.client.respond(
        0,
        errors={(TOPIC, 0): InvalidRecordError.code},
        record_errors=[BatchIndexAndErrorMessage(batch_index=1, batch_index_error_message="bad")],
    )
    bad = futures[1].exception(0)
    assert isinstance(bad, InvalidRecordError) and "record 1: bad" in str(bad)
    assert isinstance(futures[0].exception(0), InvalidRecordError)


def test_retriable_error_after_the_delivery_timeout_fails_with_the_timeout_error() -> None:
    rig = make_rig(delivery_timeout_ms=1000)
    futures = rig.append(0)
    rig.run()
    rig.advance(999)
    rig.client.fail(0, KafkaConnectionError("connection lost"))  # still in time: re-enqueued
    rig.advance(100)
    rig.run()  # expired in the queue
    error = futures[0].exception(0)
    assert isinstance(error, DeliveryTimeoutError)
    assert "delivery_timeout_ms=1000" in str(error)


def test_missing_partition_in_the_response_fails_its_batch(rig: Rig) -> None:
    futures = rig.append(0) + rig.append(1)
    rig.run()
    rig.client.respond(0, skip=(TOPIC, 1))
    assert futures[0].get(0).offset == 100
    assert isinstance(futures[1].exception(0), ProtocolError)
    assert f"did not answer for {TOPIC}-1" in str(futures[1].exception(0))


def test_an_answer_for_a_partition_not_in_the_request_is_ignored_and_logged(
    rig: Rig, caplog: pytest.LogCaptureFixture
) -> None:
    futures = rig.append(0) + rig.append(1)
    rig.run()
    sent = rig.client.sent[0]
    sent.done = True
    answers = [
        PartitionProduceResponse(index=index, base_offset=base, log_append_time_ms=-1)
        for index, base in ((0, 10), (5, 50), (1, 20))
    ]
    response = ProduceResponse(
        responses=[
            TopicProduceResponse(name=TOPIC, partition_responses=answers),
            TopicProduceResponse(
                name="other",
                partition_responses=[PartitionProduceResponse(index=0, base_offset=7)],
            ),
        ]
    )
    with caplog.at_level("WARNING", logger="kafkaline.producer.sender"):
        sent.on_complete(
            ClientResponse(
                node_id=sent.node,
                request=sent.request,
                api_version=9,
                correlation_id=0,
                response=response,
                error=None,
                sent_at_ms=sent.sent_at,
                completed_at_ms=rig.now,
            )
        )
    assert [future.get(0).offset for future in futures] == [10, 20]
    warnings = [record.getMessage() for record in caplog.records]
    assert any(f"answered for {TOPIC}-5, which was not in the request" in w for w in warnings)
    assert any("answered for other-0, which was not in the request" in w for w in warnings)
    assert not rig.accumulator.has_incomplete()


# ---------------------------------------------------------------------- MESSAGE_TOO_LARGE


def test_message_too_large_splits_the_batch_and_the_halves_are_retried() -> None:
    rig = make_rig(batch_size=16384)
    futures = rig.append(0, value=b"x" * 100, count=40)
    rig.run()
    rig.client.respond(0, errors={(TOPIC, 0): MessageTooLargeError.code})
    assert rig.counters.batch_splits == 1
    for _ in range(5):  # one batch per partition per pass
        rig.run()
    parts = [sent.record_counts()[(TOPIC, 0)] for sent in rig.client.sent[1:]]
    assert sum(parts) == 40 and 2 <= len(parts) <= 3 and max(parts) <= 20
    offset = 0
    for index, count in enumerate(parts, start=1):
        rig.client.respond(index, base_offset=offset)
        offset += count
    assert [future.get(0).offset for future in futures] == list(range(40))


def test_message_too_large_for_one_record_fails_with_the_named_error(rig: Rig) -> None:
    futures = rig.append(0, value=b"x" * 1000)
    rig.run()
    rig.client.respond(0, errors={(TOPIC, 0): MessageTooLargeError.code})
    with pytest.raises(MessageTooLargeError, match=f"{TOPIC}-0"):
        futures[0].get(0)


# ---------------------------------------------------------------------- delivery timeout


def test_queued_batches_expire_when_their_node_is_not_ready() -> None:
    rig = make_rig(delivery_timeout_ms=1000)
    rig.client.ready_nodes.clear()
    futures = rig.append(0, count=2)
    rig.run()
    assert rig.client.sent == []
    assert rig.client.polls[-1] <= 50  # the reconnect delay
    rig.advance(1000)
    rig.run()
    error = futures[0].exception(0)
    assert isinstance(error, DeliveryTimeoutError)
    assert "Expiring 2 record(s) for t-0" in str(error)
    assert rig.counters.records_errored == 2
    assert not rig.accumulator.has_incomplete()


def test_poll_waits_no_longer_than_the_next_expiry() -> None:
    rig = make_rig(delivery_timeout_ms=1000)
    rig.client.ready_nodes.clear()
    rig.client.connection_delay = lambda node_id, now: 10_000.0  # type: ignore[method-assign]
    rig.append(0)
    rig.run()
    assert rig.client.polls[-1] == pytest.approx(1000)


def test_in_flight_batches_expire_and_a_late_answer_is_ignored() -> None:
    rig = make_rig(delivery_timeout_ms=1000)
    futures = rig.append(0)
    rig.run()
    rig.run()
    assert rig.client.polls[-1] == pytest.approx(1000)  # wakes up for the in-flight expiry
    rig.advance(1000)
    rig.run()
    assert isinstance(futures[0].exception(0), DeliveryTimeoutError)
    rig.client.respond(0)  # the broker answers after all: nothing changes, nothing raises
    assert isinstance(futures[0].exception(0), DeliveryTimeoutError)


def test_a_batch_that_expires_in_the_pass_that_drains_it_is_not_sent() -> None:
    rig = make_rig(delivery_timeout_ms=1000)
    rig.client.ready_nodes.clear()
    old = rig.append(0)
    rig.run()  # its node is not ready: it stays queued
    rig.advance(900)
    fresh = rig.append(1)
    rig.client.ready_nodes.update({1, 2})
    rig.advance(100)
    rig.run()  # both drained; the old one reached its delivery timeout in this pass
    assert isinstance(old[0].exception(0), DeliveryTimeoutError)
    (sent,) = rig.client.sent
    assert sent.record_counts() == {(TOPIC, 1): 1}
    rig.client.respond(0)
    assert fresh[0].get(0).offset == 100
    assert not rig.accumulator.has_incomplete()


def test_an_idle_producer_does_not_spin_once_an_answered_batch_would_have_expired() -> None:
    rig = make_rig(delivery_timeout_ms=1000)
    futures = rig.append(0)
    rig.run()
    rig.client.respond(0)
    assert futures[0].get(0).offset == 100
    rig.advance(5000)  # past the answered batch's delivery deadline, nothing in flight
    rig.run()
    rig.run()
    assert rig.client.polls[-1] > 0  # it waits (here for the next scan of the queues)


# ---------------------------------------------------------------------- ordering, metadata


def test_max_in_flight_one_mutes_the_partition_until_the_answer() -> None:
    rig = make_rig(max_in_flight_one=True)
    first = rig.append(0)
    rig.run()
    second = rig.append(0)
    rig.run()
    assert len(rig.client.sent) == 1  # muted: the second batch waits
    assert rig.accumulator.is_muted(TopicPartition(TOPIC, 0))
    rig.client.respond(0, base_offset=0)
    rig.run()
    assert len(rig.client.sent) == 2
    rig.client.respond(1, base_offset=1)
    assert (first[0].get(0).offset, second[0].get(0).offset) == (0, 1)
    assert not rig.accumulator.is_muted(TopicPartition(TOPIC, 0))


def test_unknown_leader_asks_for_metadata_of_its_topic(rig: Rig) -> None:
    rig.append(0, topic="other")
    rig.run()
    assert rig.client.sent == []
    assert "other" in rig.client.metadata.topics
    assert rig.client.metadata.update_requests >= 1


def test_node_not_ready_gets_nothing_and_the_poll_waits_for_its_reconnect(rig: Rig) -> None:
    rig.client.ready_nodes.clear()
    rig.append(0)
    rig.run()
    assert rig.client.sent == []
    assert rig.client.polls[-1] == 50.0


def test_metadata_updates_are_reported(rig: Rig) -> None:
    seen: list[ClusterMetadata] = []
    sender = Sender(
        rig.client,
        rig.accumulator,
        acks=1,
        request_timeout_ms=500,
        max_request_size=1 << 20,
        retries=1,
        guarantee_message_order=False,
        on_metadata_update=seen.append,
    )
    first_cluster = rig.client.metadata.cluster
    sender.run_once(0.0)
    sender.run_once(0.0)
    new_cluster = cluster_with(partitions=4)
    rig.client.metadata.cluster = new_cluster
    sender.run_once(0.0)
    assert seen == [first_cluster, new_cluster]


# ---------------------------------------------------------------------- the thread


def test_graceful_close_sends_what_is_buffered_then_closes_the_client() -> None:
    rig = make_rig()
    rig.client.auto_respond = True
    futures = rig.append(0, count=3)
    rig.sender.start()
    rig.sender.initiate_close()
    assert rig.sender.join(5)
    assert [future.get(0).offset for future in futures] == [100, 101, 102]
    assert rig.client.closed
    assert rig.sender.failure is None


def test_forced_close_fails_what_is_left_with_producer_closed_error() -> None:
    rig = make_rig()
    rig.client.ready_nodes.clear()  # nothing can be sent
    futures = rig.append(0, count=2)
    rig.sender.start()
    rig.sender.force_close()
    assert rig.sender.join(5)
    with pytest.raises(ProducerClosedError):
        futures[0].get(0)
    assert rig.client.closed


def test_forced_close_fails_in_flight_batches_too() -> None:
    rig = make_rig()
    futures = rig.append(0)
    rig.run()  # in flight, never answered
    rig.sender.start()
    rig.sender.force_close()
    assert rig.sender.join(5)
    assert isinstance(futures[0].exception(0), ProducerClosedError)


def test_a_dying_loop_fails_every_pending_record_with_the_cause() -> None:
    rig = make_rig()
    rig.client.ready_nodes.clear()
    futures = rig.append(0, count=2)
    boom = RuntimeError("boom in poll")
    rig.client.poll_error = boom
    failures: list[SenderFailedError] = []
    sender = Sender(
        rig.client,
        rig.accumulator,
        acks=1,
        request_timeout_ms=500,
        max_request_size=1 << 20,
        retries=1,
        guarantee_message_order=False,
        on_failure=failures.append,
    )
    sender.start()
    assert sender.join(5)
    error = futures[1].exception(0)
    assert isinstance(error, SenderFailedError)
    assert error.__cause__ is boom
    assert failures == [error] and sender.failure is error
    assert rig.client.closed
    with pytest.raises(ProducerClosedError):  # the accumulator refuses new batches
        rig.accumulator.append(TOPIC, 1, TS, None, b"v", now=0.0)


def test_start_twice_is_refused() -> None:
    rig = make_rig()
    rig.client.auto_respond = True
    rig.sender.start()
    try:
        with pytest.raises(RuntimeError):
            rig.sender.start()
        assert rig.sender.is_alive
    finally:
        rig.sender.initiate_close()
        assert rig.sender.join(5)


def test_is_sender_thread_is_true_only_on_its_thread() -> None:
    rig = make_rig()
    rig.client.auto_respond = True
    answers: list[bool] = []
    future = rig.append(0)[0]
    future.add_callback(lambda _: answers.append(rig.sender.is_sender_thread()))
    rig.sender.start()
    future.get(5)
    rig.sender.initiate_close()
    assert rig.sender.join(5)
    assert answers == [True] and not rig.sender.is_sender_thread()
    assert threading.current_thread() is threading.main_thread()
