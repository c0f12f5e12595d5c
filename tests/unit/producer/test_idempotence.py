"""The idempotent producer's decisions, driven through the Sender with a fake network client
and a fake clock: InitProducerId before the first drain (retries, fatal errors), sequences per
partition assigned at the first drain and kept across retries, retries re-enqueued and sent in
sequence order, split batches keeping their sequences, DUPLICATE_SEQUENCE_NUMBER as success,
OUT_OF_ORDER_SEQUENCE_NUMBER / UNKNOWN_PRODUCER_ID (epoch bump with InitProducerId v3+, the
named error before), and fenced producers failing for good."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import pytest

from kafkaline.config import ExponentialBackoff
from kafkaline.errors import (
    ClusterAuthorizationFailedError,
    DeliveryOutcomeUnknownError,
    DuplicateSequenceNumberError,
    InvalidProducerEpochError,
    KafkaConnectionError,
    KafkaError,
    MessageTooLargeError,
    OutOfOrderSequenceNumberError,
    ProducerFencedError,
    UnknownProducerIdError,
    UnknownServerError,
)
from kafkaline.net.cluster import BrokerNode, ClusterMetadata, PartitionMetadata, TopicPartition
from kafkaline.net.response import ClientResponse, OnComplete
from kafkaline.producer.accumulator import RecordAccumulator
from kafkaline.producer.futures import FutureRecordMetadata
from kafkaline.producer.sender import Sender
from kafkaline.producer.transactions.idempotence import IdempotenceManager, ProducerIdAndEpoch
from kafkaline.protocol import Request
from kafkaline.protocol.api import ProduceRequest, ProduceResponse
from kafkaline.protocol.api.init_producer_id import (
    InitProducerIdRequest,
    InitProducerIdResponse,
)
from kafkaline.protocol.api.produce import PartitionProduceResponse, TopicProduceResponse
from kafkaline.record import RecordBatch, read_record_batches

TS = 1_700_000_000_000
TOPIC = "t"
TP0 = TopicPartition(TOPIC, 0)


class FakeMetadata:
    def __init__(self) -> None:
        self.cluster = ClusterMetadata(
            [BrokerNode(1, "b1", 9092)],
            [PartitionMetadata(TOPIC, p, leader=1) for p in range(2)],
        )

    def add_topic(self, topic: str, now: float) -> None:
        pass

    def request_update(self) -> int:
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
    request: Request
    on_complete: OnComplete
    done: bool = False


@dataclass
class FakeClient:
    """Keeps every request for the test to answer; InitProducerId answered at ``version``."""

    metadata: FakeMetadata = field(default_factory=FakeMetadata)
    clock: list[float] = field(default_factory=lambda: [0.0])
    sent: list[Sent] = field(default_factory=list)
    init_version: int = 4

    def now(self) -> float:
        return self.clock[0]

    def ready(self, node_id: int, now: float) -> bool:
        return True

    def connection_delay(self, node_id: int, now: float) -> float:
        return 0.0

    def least_loaded_node(self, now: float) -> int | None:
        return 1

    def send(
        self,
        node_id: int,
        request: Request,
        on_complete: OnComplete | None = None,
        now: float | None = None,
        *,
        version: int | None = None,
    ) -> int:
        assert on_complete is not None
        self.sent.append(Sent(request, on_complete))
        return len(self.sent)

    def api_versions(self, node_id: int) -> dict[int, int]:
        return {}

    def poll(self, timeout_ms: float, now: float | None = None) -> list[ClientResponse]:
        return []

    def in_flight_request_count(self, node_id: int | None = None) -> int:
        return sum(1 for sent in self.sent if not sent.done)

    def wakeup(self) -> None:
        pass

    def close(self) -> list[ClientResponse]:
        return []

    # ------------------------------------------------------------------ inspecting

    def pending(self, kind: type[Request]) -> list[int]:
        return [
            index
            for index, sent in enumerate(self.sent)
            if not sent.done and isinstance(sent.request, kind)
        ]

    def batches(self, index: int) -> dict[int, RecordBatch]:
        request = self.sent[index].request
        assert isinstance(request, ProduceRequest)
        out: dict[int, RecordBatch] = {}
        for topic in request.topic_data:
            for part in topic.partition_data:
                # an uncompressed batch's wire bytes are a bytearray (built in place)
                assert isinstance(part.records, (bytes, bytearray))
                (out[part.index],) = read_record_batches(bytes(part.records))
        return out

    # ------------------------------------------------------------------ answering

    def _complete(
        self, index: int, response: object, error: KafkaError | None, version: int
    ) -> None:
        sent = self.sent[index]
        assert not sent.done
        sent.done = True
        sent.on_complete(
            ClientResponse(
                node_id=1,
                request=sent.request,
                api_version=version,
                correlation_id=index,
                response=response,  # type: ignore[arg-type]
                error=error,
                sent_at_ms=0.0,
                completed_at_ms=self.clock[0],
            )
        )

    def answer_init(self, index: int, error_code: int = 0, pid: int = 7, epoch: int = 0) -> None:
        assert isinstance(self.sent[index].request, InitProducerIdRequest)
        response = InitProducerIdResponse(
            error_code=error_code, producer_id=pid, producer_epoch=epoch
        )
        self._complete(index, response, None, self.init_version)

    def answer_produce(self, index: int, errors: dict[int, int] | None = None) -> None:
        errors = errors or {}
        request = self.sent[index].request
        assert isinstance(request, ProduceRequest)
        responses = [
            TopicProduceResponse(
                name=topic.name,
                partition_responses=[
                    PartitionProduceResponse(
                        index=part.index,
                        error_code=errors.get(part.index, 0),
                        base_offset=-1 if errors.get(part.index) else 100 + index,
                    )
                    for part in topic.partition_data
                ],
            )
            for topic in request.topic_data
        ]
        self._complete(index, ProduceResponse(responses=responses), None, 9)

    def fail(self, index: int) -> None:
        self._complete(index, None, KafkaConnectionError("connection lost"), 9)


@dataclass
class Rig:
    client: FakeClient
    accumulator: RecordAccumulator
    sender: Sender
    transactions: IdempotenceManager
    fatal: list[KafkaError]

    def append(self, partition: int = 0, count: int = 1) -> list[FutureRecordMetadata]:
        return [
            self.accumulator.append(TOPIC, partition, TS, None, b"v%d" % i, now=self.now)[0]
            for i in range(count)
        ]

    @property
    def now(self) -> float:
        return self.client.clock[0]

    def advance(self, ms: float) -> None:
        self.client.clock[0] += ms

    def run(self) -> None:
        self.sender.run_once(self.now)

    def start(self) -> None:
        """Get the producer id (7, epoch 0)."""
        self.run()
        (init,) = self.client.pending(InitProducerIdRequest)
        self.client.answer_init(init)

    def produce(self) -> int:
        """Run once and return the index of the one produce request sent."""
        before = len(self.client.sent)
        self.run()
        new = [i for i in self.client.pending(ProduceRequest) if i >= before]
        assert len(new) == 1, new
        return new[0]


@pytest.fixture
def rig() -> Rig:
    client = FakeClient()
    fatal: list[KafkaError] = []
    backoff = ExponentialBackoff(100, 100, jitter=0.0)
    transactions = IdempotenceManager(retry_backoff=backoff, on_fatal_error=fatal.append)
    accumulator = RecordAccumulator(
        batch_size=1024,
        linger_ms=0,
        retry_backoff=backoff,
        transaction_manager=transactions,
    )
    sender = Sender(
        client,
        accumulator,
        acks=-1,
        request_timeout_ms=30_000,
        max_request_size=1 << 20,
        retries=10,
        guarantee_message_order=False,
        transaction_manager=transactions,
    )
    return Rig(client, accumulator, sender, transactions, fatal)


# ---------------------------------------------------------------------- producer id


def test_nothing_is_drained_before_init_producer_id_answers(rig: Rig) -> None:
    rig.append()
    rig.run()
    rig.run()
    assert [type(s.request) for s in rig.client.sent] == [InitProducerIdRequest]
    request = rig.client.sent[0].request
    assert isinstance(request, InitProducerIdRequest)
    assert (request.transactional_id, request.producer_id, request.producer_epoch) == (
        None,
        -1,
        -1,
    )
    rig.client.answer_init(0, pid=42, epoch=3)
    batch = rig.client.batches(rig.produce())[0]
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (42, 3, 0)


def test_init_producer_id_retries_a_retriable_error_after_the_backoff(rig: Rig) -> None:
    rig.append()
    rig.run()
    rig.client.answer_init(0, error_code=15)  # COORDINATOR_NOT_AVAILABLE
    rig.run()
    assert len(rig.client.sent) == 1  # backing off
    rig.advance(100)
    rig.run()
    assert rig.client.pending(InitProducerIdRequest) == [1]
    rig.client.fail(1)  # a lost connection is retried too
    rig.advance(100)
    rig.run()
    rig.client.answer_init(2)
    assert rig.client.batches(rig.produce())[0].producer_id == 7


def test_a_fatal_init_producer_id_error_fails_every_pending_record(rig: Rig) -> None:
    futures = rig.append(count=2) + rig.append(partition=1)
    rig.run()
    rig.client.answer_init(0, error_code=ClusterAuthorizationFailedError.code)
    rig.run()
    assert [type(error) for error in rig.fatal] == [ClusterAuthorizationFailedError]
    assert rig.transactions.fatal_error is rig.fatal[0]
    for future in futures:
        with pytest.raises(ClusterAuthorizationFailedError, match="could not get a producer id"):
            future.get(0)
    assert not rig.accumulator.has_incomplete()


# ---------------------------------------------------------------------- sequences


def test_sequences_count_records_per_partition_from_the_first_drain(rig: Rig) -> None:
    rig.start()
    rig.append(count=3)
    rig.append(partition=1, count=2)
    first = rig.client.batches(rig.produce())
    rig.append(count=4)
    second = rig.client.batches(rig.produce())
    rig.append(partition=1)
    third = rig.client.batches(rig.produce())
    assert (first[0].base_sequence, first[1].base_sequence) == (0, 0)
    assert second[0].base_sequence == 3
    assert third[1].base_sequence == 2
    assert rig.transactions.next_sequence(TP0) == 7
    assert rig.transactions.in_flight_sequences(TP0) == [0, 3]


def test_a_retried_batch_keeps_its_sequence_and_goes_before_newer_ones(rig: Rig) -> None:
    rig.start()
    futures = rig.append(count=2)
    a = rig.produce()
    futures += rig.append(count=3)
    b = rig.produce()
    rig.client.fail(a)
    rig.client.fail(b)
    rig.append(count=1)  # new, no sequence yet: must wait behind the retries
    rig.advance(100)
    retry_a = rig.produce()
    assert rig.client.batches(retry_a)[0].base_sequence == 0
    rig.run()  # b is queued with sequence 2, but a is not answered yet: nothing goes
    assert rig.client.pending(ProduceRequest) == [retry_a]
    rig.client.answer_produce(retry_a)
    retry_b = rig.produce()
    assert rig.client.batches(retry_b)[0].base_sequence == 2
    rig.client.answer_produce(retry_b)
    new = rig.produce()
    assert rig.client.batches(new)[0].base_sequence == 5
    rig.client.answer_produce(new)
    offsets = [f.get(0).offset for f in futures]
    assert offsets == [100 + retry_a, 101 + retry_a] + [100 + retry_b + i for i in range(3)]


def test_retries_answered_out_of_order_are_re_enqueued_in_sequence_order(rig: Rig) -> None:
    rig.start()
    rig.append()
    a = rig.produce()
    rig.append()
    b = rig.produce()
    rig.append()
    c = rig.produce()
    # Responses on different connections may come in any order; the queue must not.
    rig.client.fail(c)
    rig.client.fail(a)
    rig.client.fail(b)
    rig.advance(100)
    sequences = []
    for _ in range(3):
        index = rig.produce()
        sequences.append(rig.client.batches(index)[0].base_sequence)
        rig.client.answer_produce(index)
    assert sequences == [0, 1, 2]


def test_split_batches_keep_the_sequences_of_the_batch_they_replace(rig: Rig) -> None:
    rig.start()
    futures = rig.append(count=6)
    big = rig.produce()
    rig.append(count=2)
    after = rig.produce()
    assert rig.client.batches(after)[0].base_sequence == 6
    rig.client.answer_produce(big, {0: MessageTooLargeError.code})
    sequences = []
    while True:
        rig.run()
        pending = [i for i in rig.client.pending(ProduceRequest) if i != after]
        if not pending:
            break
        batch = rig.client.batches(pending[0])[0]
        sequences.append((batch.base_sequence, len(batch.records)))
        rig.client.answer_produce(pending[0])
    assert sequences == [(0, 3), (3, 3)]
    assert all(f.get(0).offset >= 0 for f in futures)
    assert rig.transactions.in_flight_sequences(TP0) == [6]


# ---------------------------------------------------------------------- sequence errors


def test_duplicate_sequence_number_is_a_success_with_unknown_offset(rig: Rig) -> None:
    rig.start()
    futures = rig.append(count=2)
    rig.client.answer_produce(rig.produce(), {0: DuplicateSequenceNumberError.code})
    assert [f.get(0).offset for f in futures] == [-1, -1]
    assert rig.transactions.in_flight_sequences(TP0) == []


def test_out_of_order_for_a_batch_behind_an_unanswered_one_is_retried_as_is(rig: Rig) -> None:
    rig.start()
    rig.append()
    a = rig.produce()
    rig.append()
    b = rig.produce()
    rig.client.answer_produce(b, {0: OutOfOrderSequenceNumberError.code})
    assert rig.client.pending(InitProducerIdRequest) == []
    rig.client.answer_produce(a)
    rig.advance(100)
    retry = rig.client.batches(rig.produce())[0]
    assert (retry.producer_epoch, retry.base_sequence) == (0, 1)


def test_a_sequence_gap_bumps_the_epoch_and_renumbers_from_zero(rig: Rig) -> None:
    rig.start()
    rig.append()
    rig.client.answer_produce(rig.produce())  # sequence 0 acknowledged
    futures = rig.append(count=2)
    a = rig.produce()
    rig.append(count=3)
    b = rig.produce()
    rig.client.answer_produce(a, {0: OutOfOrderSequenceNumberError.code})  # the broker lost 0
    rig.run()
    # Not while b is in flight: its answer decides whether it may be renumbered.
    assert rig.client.pending(InitProducerIdRequest) == []
    rig.client.answer_produce(b, {0: OutOfOrderSequenceNumberError.code})
    rig.run()
    (bump,) = rig.client.pending(InitProducerIdRequest)
    request = rig.client.sent[bump].request
    assert isinstance(request, InitProducerIdRequest)
    assert (request.producer_id, request.producer_epoch) == (7, 0)  # KIP-360
    rig.client.answer_init(bump, pid=7, epoch=1)
    rig.advance(100)
    first = rig.produce()
    assert (
        rig.client.batches(first)[0].producer_epoch,
        rig.client.batches(first)[0].base_sequence,
    ) == (1, 0)
    rig.client.answer_produce(first)
    second = rig.client.batches(rig.produce())[0]
    assert (second.producer_epoch, second.base_sequence) == (1, 2)
    assert [f.get(0).offset for f in futures] == [100 + first, 101 + first]


def test_without_kip_360_a_gap_fails_the_batch_and_gets_a_new_producer_id(rig: Rig) -> None:
    rig.client.init_version = 2
    rig.start()
    rig.append()
    rig.client.answer_produce(rig.produce())
    futures = rig.append(count=2)
    rig.client.answer_produce(rig.produce(), {0: OutOfOrderSequenceNumberError.code})
    with pytest.raises(OutOfOrderSequenceNumberError):
        futures[0].get(0)
    later = rig.append()
    rig.run()
    (init,) = rig.client.pending(InitProducerIdRequest)
    request = rig.client.sent[init].request
    assert isinstance(request, InitProducerIdRequest)
    assert request.producer_id == -1
    rig.client.answer_init(init, pid=8)
    batch = rig.client.batches(rig.produce())[0]
    assert (batch.producer_id, batch.base_sequence) == (8, 0)
    assert not later[0].done()


def test_unknown_producer_id_bumps_the_epoch_and_retries(rig: Rig) -> None:
    rig.start()
    futures = rig.append()
    rig.client.answer_produce(rig.produce(), {0: UnknownProducerIdError.code})
    rig.run()
    (bump,) = rig.client.pending(InitProducerIdRequest)
    rig.client.answer_init(bump, pid=7, epoch=1)
    rig.advance(100)
    index = rig.produce()
    assert rig.client.batches(index)[0].producer_epoch == 1
    rig.client.answer_produce(index)
    assert futures[0].get(0).offset == 100 + index


def test_a_refused_epoch_bump_falls_back_to_a_new_producer_id(rig: Rig) -> None:
    rig.start()
    rig.append()
    rig.client.answer_produce(rig.produce(), {0: UnknownProducerIdError.code})
    rig.run()
    (bump,) = rig.client.pending(InitProducerIdRequest)
    rig.client.answer_init(bump, error_code=-1)  # UNKNOWN_SERVER_ERROR, as Tansu answers
    rig.run()
    (fresh,) = rig.client.pending(InitProducerIdRequest)
    request = rig.client.sent[fresh].request
    assert isinstance(request, InitProducerIdRequest)
    assert request.producer_id == -1
    rig.client.answer_init(fresh, pid=9)
    rig.advance(100)
    batch = rig.client.batches(rig.produce())[0]
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (9, 0, 0)
    assert rig.transactions.producer_id_and_epoch == ProducerIdAndEpoch(9, 0)


# ---------------------------------------------------------------------- never twice


def test_a_batch_of_unknown_outcome_is_never_sent_under_a_new_producer_id(rig: Rig) -> None:
    """Issue 16: a try lost with its connection may have been written; a broker that then
    answers UNKNOWN_PRODUCER_ID and refuses the bump must not get the batch again under a
    fresh id (sequence 0 there is new to it: the records would be in the log twice)."""
    rig.start()
    futures = rig.append(count=2)
    first_try = rig.produce()
    rig.client.fail(first_try)  # written or not: nobody knows
    rig.advance(100)
    retry = rig.produce()
    assert rig.client.batches(retry)[0].base_sequence == 0
    rig.client.answer_produce(retry, {0: UnknownProducerIdError.code})
    rig.run()
    (bump,) = rig.client.pending(InitProducerIdRequest)
    rig.client.answer_init(bump, error_code=-1)  # refused, as Tansu 0.6 does
    rig.run()
    (fresh,) = rig.client.pending(InitProducerIdRequest)
    rig.client.answer_init(fresh, pid=9)
    for future in futures:
        with pytest.raises(DeliveryOutcomeUnknownError, match="t-0") as raised:
            future.get(0)
        assert isinstance(raised.value.__cause__, KafkaConnectionError)
    rig.advance(1_000)
    rig.run()
    assert rig.client.pending(ProduceRequest) == []  # not sent under producer id 9
    rig.append()
    batch = rig.client.batches(rig.produce())[0]
    assert (batch.producer_id, batch.base_sequence, len(batch.records)) == (9, 0, 1)
    assert rig.transactions.in_flight_sequences(TP0) == [0]


def test_a_bump_waits_for_requests_in_flight_and_fails_those_left_unknown(rig: Rig) -> None:
    """A batch that fails for good leaves a gap: the epoch is bumped, but only once the
    partition's other requests have answered; one that lost its connection then fails
    with the named error instead of being renumbered and sent again."""
    rig.start()
    failed = rig.append()
    a = rig.produce()
    unknown = rig.append(count=3)
    b = rig.produce()
    rig.client.answer_produce(a, {0: UnknownServerError.code})  # not retriable: a gap
    with pytest.raises(UnknownServerError):
        failed[0].get(0)
    rig.run()
    assert rig.client.pending(InitProducerIdRequest) == []  # b is still out
    rig.client.fail(b)
    rig.run()
    (bump,) = rig.client.pending(InitProducerIdRequest)
    rig.client.answer_init(bump, pid=7, epoch=1)
    for future in unknown:
        with pytest.raises(DeliveryOutcomeUnknownError, match="epoch 0, sequence 1"):
            future.get(0)
    rig.advance(1_000)
    rig.run()
    assert rig.client.pending(ProduceRequest) == []
    later = rig.append()
    index = rig.produce()
    batch = rig.client.batches(index)[0]
    assert (batch.producer_epoch, batch.base_sequence) == (1, 0)
    rig.client.answer_produce(index)
    assert later[0].get(0).offset == 100 + index


def test_a_batch_answered_after_a_lost_connection_is_renumbered_only_if_never_unknown(
    rig: Rig,
) -> None:
    """Of two batches renumbered after a gap, the one whose every try was refused is sent
    again under the new epoch; the one that once lost its connection fails."""
    rig.start()
    unknown = rig.append(partition=0)
    a = rig.produce()
    refused = rig.append(partition=0, count=2)
    b = rig.produce()
    rig.client.fail(a)
    rig.client.answer_produce(b, {0: OutOfOrderSequenceNumberError.code})
    rig.advance(100)
    retry_a = rig.produce()
    rig.client.answer_produce(retry_a, {0: OutOfOrderSequenceNumberError.code})  # a gap at 0
    rig.run()
    (bump,) = rig.client.pending(InitProducerIdRequest)
    rig.client.answer_init(bump, pid=7, epoch=1)
    with pytest.raises(DeliveryOutcomeUnknownError):
        unknown[0].get(0)
    rig.advance(1_000)
    index = rig.produce()
    batch = rig.client.batches(index)[0]
    assert (batch.producer_epoch, batch.base_sequence, len(batch.records)) == (1, 0, 2)
    rig.client.answer_produce(index)
    assert [f.get(0).offset for f in refused] == [100 + index, 101 + index]


@pytest.mark.parametrize("error", [InvalidProducerEpochError, ProducerFencedError])
def test_fenced_producers_fail_every_pending_record_and_say_so(
    rig: Rig, error: type[KafkaError]
) -> None:
    rig.start()
    first = rig.append()
    index = rig.produce()
    queued = rig.append(partition=1)
    rig.client.answer_produce(index, {0: error.code})  # type: ignore[attr-defined]
    for future in first + queued:
        with pytest.raises(error, match="fatal"):
            future.get(0)
    assert [type(e) for e in rig.fatal] == [error]
    rig.run()
    assert rig.client.pending(ProduceRequest) == []


def test_the_producer_is_fenced_before_the_fenced_batch_completes(rig: Rig) -> None:
    """A thread woken by the fenced batch's future (get() returning in another thread, or a
    callback) must already find the producer fatal; CI once saw a waiter reach
    commit_transaction() between the two and get the abortable state instead."""
    rig.start()
    (future,) = rig.append()
    seen: list[tuple[KafkaError | None, list[KafkaError]]] = []
    future.add_errback(lambda error: seen.append((rig.transactions.fatal_error, list(rig.fatal))))
    rig.client.answer_produce(rig.produce(), {0: ProducerFencedError.code})
    ((fatal_error, fatal),) = seen
    assert isinstance(fatal_error, ProducerFencedError)
    assert [type(e) for e in fatal] == [ProducerFencedError]
