"""The transactional producer's requests to its coordinators, one handler each
(FindCoordinator, InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit,
EndTxn): each builds its request and reads the answer into the
:class:`~kafkaline.producer.transactions.manager.TransactionManager` it serves, and
:class:`TransactionalRequestResult`, what the user's thread waits on.

NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE look the coordinator up again;
COORDINATOR_LOAD_IN_PROGRESS, CONCURRENT_TRANSACTIONS and lost connections retry after the
backoff; fencing and authorization errors are fatal.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

from kafkaline.errors import (
    ConcurrentTransactionsError,
    CoordinatorLoadInProgressError,
    CoordinatorNotAvailableError,
    GroupAuthorizationFailedError,
    InvalidProducerEpochError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    NotCoordinatorError,
    OperationNotAttemptedError,
    ProducerFencedError,
    TransactionalIdAuthorizationFailedError,
    error_for_code,
)
from kafkaline.net.cluster import TopicPartition
from kafkaline.producer.transactions.idempotence import ProducerIdAndEpoch
from kafkaline.protocol import Request, Response
from kafkaline.protocol.api.find_coordinator import (
    KEY_TYPE_GROUP,
    KEY_TYPE_TRANSACTION,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
)
from kafkaline.protocol.api.init_producer_id import InitProducerIdRequest, InitProducerIdResponse

if TYPE_CHECKING:
    from kafkaline.producer.transactions.manager import TransactionManager

__all__ = [
    "ADD_PARTITIONS_MAX_CLIENT_VERSION",
    "FATAL_ERRORS",
    "TransactionalRequestResult",
    "TxnRequestHandler",
]

_log = logging.getLogger(__name__)

#: AddPartitionsToTxn v4+ is the broker-to-broker form (KIP-890): a client sends v0-3.
ADD_PARTITIONS_MAX_CLIENT_VERSION = 3
#: Errors after which the transactional producer cannot go on (Java's fatal set).
FATAL_ERRORS: tuple[type[KafkaError], ...] = (
    ProducerFencedError,
    InvalidProducerEpochError,
    TransactionalIdAuthorizationFailedError,
)
#: The coordinator moved or is not there yet: look it up again, then retry.
_COORDINATOR_ERRORS = (NotCoordinatorError, CoordinatorNotAvailableError)
#: Retry the same request after the backoff.
_RETRY_ERRORS = (CoordinatorLoadInProgressError, ConcurrentTransactionsError)


class TransactionalRequestResult:
    """What a user's call waits for: the outcome of one or more requests on the Sender."""

    def __init__(self, action: str) -> None:
        self._action = action
        self._done = threading.Event()
        self.error: KafkaError | None = None

    def done(self, error: KafkaError | None = None) -> None:
        if not self._done.is_set():
            self.error = error
            self._done.set()

    @property
    def is_done(self) -> bool:
        return self._done.is_set()

    def wait(self, timeout_ms: float | None) -> None:
        """Wait for the outcome; raise its error, or KafkaTimeoutError."""
        if not self._done.wait(None if timeout_ms is None else timeout_ms / 1000.0):
            raise KafkaTimeoutError(
                f"{self._action} did not complete within {timeout_ms:.0f} ms (max_block_ms); "
                "it goes on in the background: call it again to wait for it"
            )
        error = self.error
        if error is not None:
            again = type(error)(str(error))
            again.__cause__ = error
            raise again


class TxnRequestHandler:
    """One transactional request: what to send, where, and what its answer means. Built and
    answered on the Sender's thread, through the manager."""

    #: None: any broker; else FindCoordinator's key type of the coordinator to send to.
    coordinator_type: int | None = KEY_TYPE_TRANSACTION
    max_version: int | None = None

    def __init__(self, manager: TransactionManager, result: TransactionalRequestResult) -> None:
        self.manager = manager
        self.result = result
        self.attempts = 0

    @property
    def coordinator_key(self) -> str:
        return self.manager.txn_id

    def build_request(self) -> Request:
        raise NotImplementedError

    def handle_response(self, response: Response, api_version: int, now: float) -> None:
        raise NotImplementedError

    def handle_error(self, error: KafkaError, now: float) -> None:
        """The usual meaning of an error: retry, look the coordinator up again, fatal, or
        abortable (Java's defaults; handlers with other rules override)."""
        manager = self.manager
        if isinstance(error, (*_COORDINATOR_ERRORS, KafkaConnectionError)):
            if self.coordinator_type is not None:
                manager.forget_coordinator(self.coordinator_type, self.coordinator_key)
            manager.retry(self, now, error)
        elif isinstance(error, _RETRY_ERRORS) or error.retriable:
            manager.retry(self, now, error)
        elif isinstance(error, FATAL_ERRORS):
            manager.fail_fatal(error, self.result)
        else:
            manager.fail_abortable(error, self.result)

    def describe(self) -> str:
        return type(self).__name__.removesuffix("Handler")


class FindCoordinatorHandler(TxnRequestHandler):
    coordinator_type = None

    def __init__(
        self,
        manager: TransactionManager,
        result: TransactionalRequestResult,
        key_type: int,
        key: str,
    ) -> None:
        super().__init__(manager, result)
        self.key_type = key_type
        self.key = key

    def build_request(self) -> Request:
        # Filled for every version: key (v0-3) and coordinator_keys (v4+).
        return FindCoordinatorRequest(
            key=self.key, key_type=self.key_type, coordinator_keys=[self.key]
        )

    def handle_response(self, response: Response, api_version: int, now: float) -> None:
        answer = response
        if not isinstance(answer, FindCoordinatorResponse):  # pragma: no cover
            raise TypeError(f"expected FindCoordinatorResponse, got {type(answer).__name__}")
        if answer.coordinators:
            found = answer.coordinators[0]
            code, node_id = found.error_code, found.node_id
        else:
            code, node_id = answer.error_code, answer.node_id
        if code == 0:
            self.manager.coordinator_found(self.key_type, self.key, node_id)
            return
        error = error_for_code(code)(f"FindCoordinator for {self.key!r}")
        if isinstance(error, GroupAuthorizationFailedError):
            self.manager.fail_abortable(error, self.result)
        elif isinstance(error, TransactionalIdAuthorizationFailedError):
            self.manager.fail_fatal(error, self.result)
        else:
            self.manager.retry(self, now, error)

    def describe(self) -> str:
        return f"FindCoordinator({self.key!r})"


class InitProducerIdHandler(TxnRequestHandler):
    def build_request(self) -> Request:
        return InitProducerIdRequest(
            transactional_id=self.manager.txn_id,
            transaction_timeout_ms=self.manager.transaction_timeout_ms,
        )

    def handle_response(self, response: Response, api_version: int, now: float) -> None:
        answer = response
        if not isinstance(answer, InitProducerIdResponse):  # pragma: no cover
            raise TypeError(f"expected InitProducerIdResponse, got {type(answer).__name__}")
        if answer.error_code == 0:
            self.manager.producer_id_received(
                ProducerIdAndEpoch(answer.producer_id, answer.producer_epoch), api_version
            )
            self.result.done()
            return
        error = error_for_code(answer.error_code)("InitProducerId")
        if isinstance(error, (*_COORDINATOR_ERRORS, *_RETRY_ERRORS)) or error.retriable:
            self.handle_error(error, now)
        else:
            # Java: any other InitProducerId error is fatal (no id, nothing to go on with).
            self.manager.fail_fatal(error, self.result)


class AddPartitionsHandler(TxnRequestHandler):
    max_version = ADD_PARTITIONS_MAX_CLIENT_VERSION

    def __init__(
        self,
        manager: TransactionManager,
        result: TransactionalRequestResult,
        partitions: frozenset[TopicPartition],
    ) -> None:
        super().__init__(manager, result)
        self.partitions = partitions

    def build_request(self) -> Request:
        # The transactional APIs' messages are imported when first sent: start-up needs none.
        from kafkaline.protocol.api.add_partitions_to_txn import (
            AddPartitionsToTxnRequest,
            AddPartitionsToTxnTopic,
        )

        pid = self.manager.current_producer_id_and_epoch()
        by_topic: dict[str, list[int]] = {}
        for tp in sorted(self.partitions):
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        return AddPartitionsToTxnRequest(
            v3_and_below_transactional_id=self.manager.txn_id,
            v3_and_below_producer_id=pid.producer_id,
            v3_and_below_producer_epoch=pid.epoch,
            v3_and_below_topics=[
                AddPartitionsToTxnTopic(name=topic, partitions=parts)
                for topic, parts in by_topic.items()
            ],
        )

    def handle_response(self, response: Response, api_version: int, now: float) -> None:
        from kafkaline.protocol.api.add_partitions_to_txn import AddPartitionsToTxnResponse

        answer = response
        if not isinstance(answer, AddPartitionsToTxnResponse):  # pragma: no cover
            raise TypeError(f"expected AddPartitionsToTxnResponse, got {type(answer).__name__}")
        worst: KafkaError | None = None
        for topic in answer.results_by_topic_v3_and_below:
            for part in topic.results_by_partition:
                if part.partition_error_code == 0:
                    continue
                error = error_for_code(part.partition_error_code)(
                    f"AddPartitionsToTxn for {topic.name}-{part.partition_index}"
                )
                if isinstance(error, OperationNotAttemptedError) and worst is not None:
                    continue  # only says another partition of the request failed
                if (
                    worst is None
                    or isinstance(worst, OperationNotAttemptedError)
                    or isinstance(error, FATAL_ERRORS)
                ):
                    worst = error
        if worst is None:
            self.manager.partitions_added(self.partitions)
            return
        self.handle_error(worst, now)

    def describe(self) -> str:
        return f"AddPartitionsToTxn({len(self.partitions)} partitions)"


class AddOffsetsHandler(TxnRequestHandler):
    def __init__(
        self,
        manager: TransactionManager,
        result: TransactionalRequestResult,
        offsets: dict[TopicPartition, int],
        group_id: str,
    ) -> None:
        super().__init__(manager, result)
        self.offsets = offsets
        self.group_id = group_id

    def build_request(self) -> Request:
        from kafkaline.protocol.api.add_offsets_to_txn import AddOffsetsToTxnRequest

        pid = self.manager.current_producer_id_and_epoch()
        return AddOffsetsToTxnRequest(
            transactional_id=self.manager.txn_id,
            producer_id=pid.producer_id,
            producer_epoch=pid.epoch,
            group_id=self.group_id,
        )

    def handle_response(self, response: Response, api_version: int, now: float) -> None:
        from kafkaline.protocol.api.add_offsets_to_txn import AddOffsetsToTxnResponse

        answer = response
        if not isinstance(answer, AddOffsetsToTxnResponse):  # pragma: no cover
            raise TypeError(f"expected AddOffsetsToTxnResponse, got {type(answer).__name__}")
        if answer.error_code:
            self.handle_error(error_for_code(answer.error_code)("AddOffsetsToTxn"), now)
            return
        self.manager.offsets_added(
            TxnOffsetCommitHandler(self.manager, self.result, self.offsets, self.group_id)
        )


class TxnOffsetCommitHandler(TxnRequestHandler):
    coordinator_type = KEY_TYPE_GROUP

    def __init__(
        self,
        manager: TransactionManager,
        result: TransactionalRequestResult,
        offsets: dict[TopicPartition, int],
        group_id: str,
    ) -> None:
        super().__init__(manager, result)
        self.offsets = offsets
        self.group_id = group_id

    @property
    def coordinator_key(self) -> str:
        return self.group_id

    def build_request(self) -> Request:
        from kafkaline.protocol.api.txn_offset_commit import (
            TxnOffsetCommitRequest,
            TxnOffsetCommitRequestPartition,
            TxnOffsetCommitRequestTopic,
        )

        pid = self.manager.current_producer_id_and_epoch()
        by_topic: dict[str, list[TxnOffsetCommitRequestPartition]] = {}
        for tp, offset in sorted(self.offsets.items()):
            by_topic.setdefault(tp.topic, []).append(
                TxnOffsetCommitRequestPartition(
                    partition_index=tp.partition, committed_offset=offset, committed_metadata=""
                )
            )
        return TxnOffsetCommitRequest(
            transactional_id=self.manager.txn_id,
            group_id=self.group_id,
            producer_id=pid.producer_id,
            producer_epoch=pid.epoch,
            topics=[
                TxnOffsetCommitRequestTopic(name=topic, partitions=parts)
                for topic, parts in by_topic.items()
            ],
        )

    def handle_response(self, response: Response, api_version: int, now: float) -> None:
        from kafkaline.protocol.api.txn_offset_commit import TxnOffsetCommitResponse

        answer = response
        if not isinstance(answer, TxnOffsetCommitResponse):  # pragma: no cover
            raise TypeError(f"expected TxnOffsetCommitResponse, got {type(answer).__name__}")
        for topic in answer.topics:
            for part in topic.partitions:
                if part.error_code:
                    error = error_for_code(part.error_code)(
                        f"TxnOffsetCommit for group {self.group_id!r}, "
                        f"{topic.name}-{part.partition_index}"
                    )
                    self.handle_error(error, now)
                    return
        self.result.done()

    def describe(self) -> str:
        return f"TxnOffsetCommit(group {self.group_id!r})"


class EndTxnHandler(TxnRequestHandler):
    def __init__(
        self, manager: TransactionManager, result: TransactionalRequestResult, committed: bool
    ) -> None:
        super().__init__(manager, result)
        self.committed = committed

    def build_request(self) -> Request:
        from kafkaline.protocol.api.end_txn import EndTxnRequest

        pid = self.manager.current_producer_id_and_epoch()
        return EndTxnRequest(
            transactional_id=self.manager.txn_id,
            producer_id=pid.producer_id,
            producer_epoch=pid.epoch,
            committed=self.committed,
        )

    def handle_response(self, response: Response, api_version: int, now: float) -> None:
        from kafkaline.protocol.api.end_txn import EndTxnResponse

        answer = response
        if not isinstance(answer, EndTxnResponse):  # pragma: no cover
            raise TypeError(f"expected EndTxnResponse, got {type(answer).__name__}")
        if answer.error_code:
            self.handle_error(error_for_code(answer.error_code)("EndTxn"), now)
            return
        self.manager.transaction_ended(self.result)

    def describe(self) -> str:
        return f"EndTxn({'commit' if self.committed else 'abort'})"
