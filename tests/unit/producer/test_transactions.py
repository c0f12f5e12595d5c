"""The transactional producer's state machine and request flow, without a network: the
TransactionManager is driven as the Sender drives it (next_request, coordinator_for,
request_sent, request_completed) with hand-made responses and a fake clock."""

from __future__ import annotations

import pytest

from kafkaline.config import ExponentialBackoff
from kafkaline.errors import (
    ConcurrentTransactionsError,
    InvalidProducerEpochError,
    KafkaError,
    ProducerFencedError,
    TransactionalIdAuthorizationFailedError,
    TransactionStateError,
)
from kafkaline.net.cluster import TopicPartition
from kafkaline.producer.batch import ProducerBatch
from kafkaline.producer.transactions.coordinator_requests import (
    ADD_PARTITIONS_MAX_CLIENT_VERSION,
    AddOffsetsHandler,
    AddPartitionsHandler,
    EndTxnHandler,
    FindCoordinatorHandler,
    InitProducerIdHandler,
    TxnOffsetCommitHandler,
    TxnRequestHandler,
)
from kafkaline.producer.transactions.idempotence import ProducerIdAndEpoch
from kafkaline.producer.transactions.manager import TransactionManager, group_id_of, offsets_of
from kafkaline.producer.transactions.state import TransactionState, TransactionStateMachine
from kafkaline.protocol import Response
from kafkaline.protocol.api.add_offsets_to_txn import AddOffsetsToTxnResponse
from kafkaline.protocol.api.add_partitions_to_txn import (
    AddPartitionsToTxnPartitionResult,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    AddPartitionsToTxnTopicResult,
)
from kafkaline.protocol.api.end_txn import EndTxnRequest, EndTxnResponse
from kafkaline.protocol.api.find_coordinator import (
    KEY_TYPE_GROUP,
    KEY_TYPE_TRANSACTION,
    FindCoordinatorResponse,
)
from kafkaline.protocol.api.init_producer_id import InitProducerIdRequest, InitProducerIdResponse
from kafkaline.protocol.api.txn_offset_commit import TxnOffsetCommitResponse

S = TransactionState
TP = TopicPartition("t", 0)
COORDINATOR = 7


class NoJitter:
    def uniform(self, a: float, b: float) -> float:
        return b


# ------------------------------------------------------------------ the state machine


def test_the_happy_path_and_wrong_order_calls() -> None:
    machine = TransactionStateMachine()
    with pytest.raises(TransactionStateError, match="in state UNINITIALIZED") as caught:
        machine.transition(S.IN_TRANSACTION, "begin_transaction()")
    assert caught.value.state == "UNINITIALIZED"
    assert "begin_transaction()" in str(caught.value)
    for target in (S.INITIALIZING, S.READY, S.IN_TRANSACTION, S.COMMITTING, S.READY):
        machine.transition(target)
    machine.transition(S.IN_TRANSACTION)
    machine.transition(S.ABORTING)
    machine.transition(S.READY)
    with pytest.raises(TransactionStateError, match="READY"):
        machine.transition(S.COMMITTING, "commit_transaction()")
    with pytest.raises(TransactionStateError, match="READY"):
        machine.transition(S.INITIALIZING, "init_transactions()")


def test_an_abortable_error_allows_only_abort() -> None:
    machine = TransactionStateMachine()
    for target in (S.INITIALIZING, S.READY, S.IN_TRANSACTION):
        machine.transition(target)
    cause = KafkaError("a batch failed")
    machine.to_abortable(cause)
    assert machine.state is S.ABORTABLE_ERROR
    with pytest.raises(TransactionStateError, match="abort_transaction\\(\\) first") as caught:
        machine.transition(S.COMMITTING, "commit_transaction()")
    assert caught.value.__cause__ is cause
    machine.transition(S.ABORTING)
    machine.transition(S.READY)


@pytest.mark.parametrize(
    "error",
    [ProducerFencedError, InvalidProducerEpochError, TransactionalIdAuthorizationFailedError],
)
def test_a_fatal_error_makes_every_later_transition_raise_it(error: type[KafkaError]) -> None:
    machine = TransactionStateMachine()
    machine.transition(S.INITIALIZING)
    fatal = error("fenced")
    machine.to_fatal(fatal)
    machine.to_abortable(KafkaError("later"))  # does not leave FATAL_ERROR
    for target in S:
        with pytest.raises(error) as caught:
            machine.transition(target)
        assert caught.value.__cause__ is fatal
    with pytest.raises(error):
        machine.require("begin_transaction()", S.READY)


# ------------------------------------------------------------------ the request flow


class Driver:
    """Plays the Sender for a TransactionManager."""

    def __init__(self) -> None:
        self.now = 0.0
        self.fatal: list[KafkaError] = []
        self.manager = TransactionManager(
            "tx",
            30_000,
            retry_backoff=ExponentialBackoff(100, 1000),
            rng=NoJitter(),
            on_fatal_error=self.fatal.append,
        )

    def next(self) -> TxnRequestHandler:
        handler, wait = self.manager.next_request(self.now)
        assert handler is not None, f"no request due (wait {wait} ms)"
        if handler.coordinator_type is not None:
            assert self.manager.coordinator_for(handler) == COORDINATOR
        self.manager.request_sent(handler)
        return handler

    def answer(self, handler: TxnRequestHandler, response: Response) -> None:
        self.manager.request_completed(handler, response, None, 4, self.now)

    def find_coordinator(self) -> None:
        handler, _ = self.manager.next_request(self.now)
        assert handler is not None and handler.coordinator_type is not None
        assert self.manager.coordinator_for(handler) is None  # queues FindCoordinator first
        find = self.next()
        assert isinstance(find, FindCoordinatorHandler)
        self.answer(find, FindCoordinatorResponse(error_code=0, node_id=COORDINATOR))

    def initialized(self) -> TransactionManager:
        self.manager.initialize_transactions()
        self.find_coordinator()
        init = self.next()
        assert isinstance(init, InitProducerIdHandler)
        request = init.build_request()
        assert isinstance(request, InitProducerIdRequest)
        assert (request.transactional_id, request.transaction_timeout_ms) == ("tx", 30_000)
        self.answer(init, InitProducerIdResponse(error_code=0, producer_id=5, producer_epoch=2))
        assert self.manager.state is S.READY
        return self.manager


def batch_for(tp: TopicPartition) -> ProducerBatch:
    batch = ProducerBatch(tp, created_ms=0.0, is_transactional=True)
    batch.try_append(0, None, b"v")
    return batch


def test_init_looks_up_the_coordinator_and_gets_a_producer_id() -> None:
    driver = Driver()
    manager = driver.initialized()
    assert manager.producer_id_and_epoch == ProducerIdAndEpoch(5, 2)
    assert manager.next_request(driver.now) == (None, float("inf"))


def test_coordinator_errors_retry_after_backoff_and_look_it_up_again() -> None:
    driver = Driver()
    manager = driver.manager
    manager.initialize_transactions()
    driver.find_coordinator()
    init = driver.next()
    driver.answer(init, InitProducerIdResponse(error_code=ConcurrentTransactionsError.code))
    handler, wait = manager.next_request(driver.now)
    assert handler is None and 0 < wait <= 1000  # the retry backoff
    driver.now = wait
    init = driver.next()
    driver.answer(init, InitProducerIdResponse(error_code=16))  # NOT_COORDINATOR
    driver.now = 1000.0
    driver.find_coordinator()  # forgotten: looked up again
    driver.answer(driver.next(), InitProducerIdResponse(producer_id=5, producer_epoch=0))
    assert manager.state is S.READY


def test_batches_wait_for_add_partitions_then_drain() -> None:
    driver = Driver()
    manager = driver.initialized()
    manager.begin_transaction()
    batch = batch_for(TP)
    assert manager.should_stop_drain(batch)
    assert manager.has_new_partitions()
    add = driver.next()
    assert isinstance(add, AddPartitionsHandler)
    assert add.max_version == ADD_PARTITIONS_MAX_CLIENT_VERSION == 3
    request = add.build_request()
    assert isinstance(request, AddPartitionsToTxnRequest)
    assert request.v3_and_below_producer_id == 5 and request.v3_and_below_producer_epoch == 2
    assert [(t.name, t.partitions) for t in request.v3_and_below_topics] == [("t", [0])]
    assert manager.should_stop_drain(batch)  # still waiting for the answer
    driver.answer(
        add,
        AddPartitionsToTxnResponse(
            results_by_topic_v3_and_below=[
                AddPartitionsToTxnTopicResult(
                    name="t",
                    results_by_partition=[
                        AddPartitionsToTxnPartitionResult(partition_index=0, partition_error_code=0)
                    ],
                )
            ]
        ),
    )
    assert not manager.should_stop_drain(batch)


def test_commit_sends_end_txn_and_returns_to_ready() -> None:
    driver = Driver()
    manager = driver.initialized()
    manager.begin_transaction()
    offsets = {TP: 10}
    offsets_result = manager.send_offsets(offsets, "group")
    add_offsets = driver.next()
    assert isinstance(add_offsets, AddOffsetsHandler)
    driver.answer(add_offsets, AddOffsetsToTxnResponse(error_code=0))
    handler, _ = manager.next_request(driver.now)
    assert isinstance(handler, TxnOffsetCommitHandler)
    assert handler.coordinator_type == KEY_TYPE_GROUP and handler.coordinator_key == "group"
    assert manager.coordinator_for(handler) is None  # the group's coordinator: looked up
    find = driver.next()
    assert isinstance(find, FindCoordinatorHandler)
    assert (find.key_type, find.key) == (KEY_TYPE_GROUP, "group")
    driver.answer(find, FindCoordinatorResponse(node_id=COORDINATOR))
    driver.answer(driver.next(), TxnOffsetCommitResponse(topics=[]))
    assert offsets_result.is_done and offsets_result.error is None
    manager.prepare_commit()
    with pytest.raises(TransactionStateError, match="COMMITTING"):
        manager.check_send_allowed()
    result = manager.end_transaction(commit=True)
    end = driver.next()
    assert isinstance(end, EndTxnHandler)
    request = end.build_request()
    assert isinstance(request, EndTxnRequest) and request.committed
    driver.answer(end, EndTxnResponse(error_code=0))
    assert result.is_done and result.error is None
    assert manager.state is S.READY


def test_an_empty_transaction_ends_without_a_request() -> None:
    driver = Driver()
    manager = driver.initialized()
    manager.begin_transaction()
    manager.prepare_commit()
    assert manager.end_transaction(commit=True).is_done
    assert manager.state is S.READY
    assert manager.next_request(driver.now) == (None, float("inf"))


def test_a_failed_batch_makes_the_transaction_abortable() -> None:
    driver = Driver()
    manager = driver.initialized()
    manager.begin_transaction()
    manager.handle_failed_batch(batch_for(TP), KafkaError("delivery timed out"))
    assert manager.state is S.ABORTABLE_ERROR
    with pytest.raises(TransactionStateError, match="ABORTABLE_ERROR"):
        manager.prepare_commit()
    with pytest.raises(TransactionStateError, match="ABORTABLE_ERROR"):
        manager.check_send_allowed()
    manager.prepare_abort()
    assert manager.end_transaction(commit=False).is_done  # nothing was added
    assert manager.state.value == "READY"  # (.value: mypy narrowed state above)


def test_fenced_end_txn_is_fatal() -> None:
    driver = Driver()
    manager = driver.initialized()
    manager.begin_transaction()
    manager.should_stop_drain(batch_for(TP))
    add = driver.next()
    driver.answer(
        add,
        AddPartitionsToTxnResponse(
            results_by_topic_v3_and_below=[
                AddPartitionsToTxnTopicResult(
                    name="t",
                    results_by_partition=[
                        AddPartitionsToTxnPartitionResult(partition_index=0, partition_error_code=0)
                    ],
                )
            ]
        ),
    )
    manager.prepare_commit()
    result = manager.end_transaction(commit=True)
    driver.answer(driver.next(), EndTxnResponse(error_code=ProducerFencedError.code))
    assert isinstance(result.error, ProducerFencedError)
    assert manager.state is S.FATAL_ERROR
    assert driver.fatal and isinstance(manager.fatal_error, ProducerFencedError)
    with pytest.raises(ProducerFencedError):
        manager.begin_transaction()


def test_group_metadata_and_offsets_forms() -> None:
    class Metadata:
        group_id = "g"

    assert group_id_of("g") == group_id_of(Metadata()) == "g"
    with pytest.raises(TypeError, match="group_id"):
        group_id_of(3)
    with pytest.raises(ValueError, match="empty"):
        group_id_of("")
    assert offsets_of({("t", 0): 1, TopicPartition("t", 1): 2}) == {
        TopicPartition("t", 0): 1,
        TopicPartition("t", 1): 2,
    }
    with pytest.raises(TypeError, match="pair"):
        offsets_of({"t": 1})
    with pytest.raises(ValueError, match="int >= 0"):
        offsets_of({("t", 0): -1})
    assert KEY_TYPE_TRANSACTION == 1
