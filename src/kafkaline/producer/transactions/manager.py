""":class:`TransactionManager`: the transactional producer (KIP-98), grown from
:class:`~kafkaline.producer.transactions.idempotence.IdempotenceManager` (the idempotent
producer's id, epoch and sequences) by a transaction's state and its coordinator requests.

States (Java's ``TransactionManager.State``; :class:`TransactionStateMachine` keeps them)::

    UNINITIALIZED --init_transactions()--> INITIALIZING --InitProducerId--> READY
    READY --begin_transaction()--> IN_TRANSACTION
    IN_TRANSACTION --commit_transaction()--> COMMITTING --EndTxn--> READY
    IN_TRANSACTION / ABORTABLE_ERROR --abort_transaction()--> ABORTING --EndTxn--> READY
    IN_TRANSACTION / COMMITTING / ABORTING --a failed batch or request--> ABORTABLE_ERROR
    any --fenced, authorization, InitProducerId failed--> FATAL_ERROR (every call raises)

A call in the wrong state raises :class:`~kafkaline.errors.TransactionStateError` naming the
state. The user's thread only changes the state and queues requests; the Sender's thread
sends them one at a time (as Java does), to the transaction coordinator (or the group
coordinator for TxnOffsetCommit), looking it up with FindCoordinator first and again after
NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE. Those, COORDINATOR_LOAD_IN_PROGRESS,
CONCURRENT_TRANSACTIONS and lost connections retry after ``retry_backoff``.

Partitions join the transaction on their way out: a batch for a partition not yet added is
held in the accumulator (:meth:`TransactionManager.should_stop_drain`) and the partition
queued for AddPartitionsToTxn (v0-3, the client form); once the coordinator accepts it, its
batches drain. Sequence errors, which the idempotent producer fixes with an epoch bump, make
the transaction abortable here: records of it may be missing, so it must not commit. After
such an abort InitProducerId gives a new epoch and the sequences restart at 0.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Iterable

from kafkaline.config import ExponentialBackoff, UniformRandom
from kafkaline.errors import (
    KafkaConnectionError,
    KafkaError,
    TransactionStateError,
)
from kafkaline.net.cluster import TopicPartition
from kafkaline.producer.batch import ProducerBatch
from kafkaline.producer.transactions.coordinator_requests import (
    FATAL_ERRORS,
    AddOffsetsHandler,
    AddPartitionsHandler,
    EndTxnHandler,
    FindCoordinatorHandler,
    InitProducerIdHandler,
    TransactionalRequestResult,
    TxnOffsetCommitHandler,
    TxnRequestHandler,
)
from kafkaline.producer.transactions.idempotence import IdempotenceManager, ProducerIdAndEpoch
from kafkaline.producer.transactions.state import (
    TransactionIdentity,
    TransactionState,
    TransactionStateMachine,
)
from kafkaline.protocol import Response

__all__ = ["TransactionManager", "group_id_of", "offsets_of"]

_log = logging.getLogger(__name__)


class TransactionManager(IdempotenceManager):
    """The idempotent producer's sequences plus a transaction's state and requests; see the
    module docstring. User-thread methods change the state and queue requests under a lock;
    the Sender takes them with :meth:`next_request` and answers through the handlers."""

    is_transactional = True

    def __init__(
        self,
        transactional_id: str,
        transaction_timeout_ms: int,
        *,
        retry_backoff: ExponentialBackoff | None = None,
        rng: UniformRandom | None = None,
        on_fatal_error: Callable[[KafkaError], None] | None = None,
        wakeup: Callable[[], None] | None = None,
    ) -> None:
        super().__init__(retry_backoff=retry_backoff, rng=rng, on_fatal_error=on_fatal_error)
        self.transactional_id = transactional_id
        #: The same, typed as always set.
        self.txn_id = transactional_id
        self.transaction_timeout_ms = transaction_timeout_ms
        self._lock = threading.RLock()
        self._machine = TransactionStateMachine()
        self._wakeup = wakeup
        self._pending: deque[TxnRequestHandler] = deque()
        self._in_flight_request: TxnRequestHandler | None = None
        self._not_before_ms = 0.0
        self._coordinators: dict[tuple[int, str], int] = {}
        # Partitions: in the transaction; in an AddPartitionsToTxn on its way; waiting for one.
        self._partitions_in_txn: set[TopicPartition] = set()
        self._pending_partitions: set[TopicPartition] = set()
        self._new_partitions: set[TopicPartition] = set()
        # Whether anything (partitions, offsets) joined the coordinator's transaction: an
        # empty one needs no EndTxn (Java's transactionStarted).
        self._transaction_started = False
        # A sequence gap in this transaction: after the abort, a new epoch (InitProducerId).
        self._epoch_bump_needed = False
        # The init/commit/abort under way, for a call repeated after a timeout.
        self._ongoing: TransactionalRequestResult | None = None

    # ------------------------------------------------------------------ user's thread

    @property
    def state(self) -> TransactionState:
        return self._machine.state

    @property
    def last_error(self) -> KafkaError | None:
        return self._machine.last_error

    def set_wakeup(self, wakeup: Callable[[], None]) -> None:
        self._wakeup = wakeup

    def initialize_transactions(self) -> TransactionalRequestResult:
        """UNINITIALIZED -> INITIALIZING; queue InitProducerId."""
        with self._lock:
            if self._machine.state is TransactionState.INITIALIZING and self._ongoing:
                return self._ongoing  # an earlier call timed out waiting: wait again
            self._machine.transition(TransactionState.INITIALIZING, "init_transactions()")
            result = self._ongoing = TransactionalRequestResult("init_transactions()")
            self._enqueue(InitProducerIdHandler(self, result))
        return result

    def begin_transaction(self) -> None:
        with self._lock:
            self._machine.require("begin_transaction()", TransactionState.READY)
            self._machine.transition(TransactionState.IN_TRANSACTION, "begin_transaction()")

    def check_send_allowed(self) -> None:
        """Raise unless records may be sent (IN_TRANSACTION). Read without the lock: the state
        is one attribute, and a send racing with commit is the user's ordering to make."""
        if self._machine.state is not TransactionState.IN_TRANSACTION:
            raise self._machine.error_for("send a record outside a transaction")

    def prepare_commit(self) -> None:
        """IN_TRANSACTION -> COMMITTING: no more sends; the producer flushes next."""
        with self._lock:
            if self._machine.state is TransactionState.COMMITTING:
                return  # an earlier call timed out waiting (see end_transaction)
            self._machine.require("commit_transaction()", TransactionState.IN_TRANSACTION)
            self._machine.transition(TransactionState.COMMITTING, "commit_transaction()")

    def prepare_abort(self) -> None:
        """-> ABORTING: no more sends; the producer drops what is buffered, then flushes."""
        with self._lock:
            self._machine.require(
                "abort_transaction()",
                TransactionState.IN_TRANSACTION,
                TransactionState.ABORTABLE_ERROR,
                TransactionState.ABORTING,
            )
            if self._machine.state is not TransactionState.ABORTING:
                self._machine.transition(TransactionState.ABORTING, "abort_transaction()")

    def end_transaction(self, commit: bool) -> TransactionalRequestResult:
        """After the flush: queue EndTxn (nothing when nothing joined the transaction)."""
        action = "commit_transaction()" if commit else "abort_transaction()"
        with self._lock:
            if commit:
                self._machine.require(action, TransactionState.COMMITTING)
            else:
                self._machine.require(action, TransactionState.ABORTING)
            if self._ongoing is not None and not self._ongoing.is_done:
                return self._ongoing  # an earlier call timed out waiting: wait again
            result = self._ongoing = TransactionalRequestResult(action)
            if not self._transaction_started and not self._epoch_bump_needed:
                self._finish_transaction_locked()
                result.done()
                return result
            if self._transaction_started:
                self._enqueue(EndTxnHandler(self, result, commit))
            else:
                self._after_abort_locked(result)
        return result

    def send_offsets(
        self, offsets: dict[TopicPartition, int], group_id: str
    ) -> TransactionalRequestResult:
        with self._lock:
            self._machine.require("send_offsets_to_transaction()", TransactionState.IN_TRANSACTION)
            result = TransactionalRequestResult("send_offsets_to_transaction()")
            self._enqueue(AddOffsetsHandler(self, result, offsets, group_id))
        return result

    def identity(self) -> TransactionIdentity:
        with self._lock:
            self._machine.require("transaction_identity()", TransactionState.IN_TRANSACTION)
            pid = self.current_producer_id_and_epoch()
            return TransactionIdentity(self.txn_id, pid.producer_id, pid.epoch)

    def require(self, action: str, *allowed: TransactionState) -> None:
        with self._lock:
            self._machine.require(action, *allowed)

    def has_new_partitions(self) -> bool:
        """Whether a drain found partitions that wait for AddPartitionsToTxn."""
        return bool(self._new_partitions)

    # ------------------------------------------------------------------ Sender's thread

    def current_producer_id_and_epoch(self) -> ProducerIdAndEpoch:
        pid = self.producer_id_and_epoch
        if pid is None:  # requests needing it are queued only after init
            raise TransactionStateError("no producer id yet", self._machine.state.value)
        return pid

    def init_producer_id_due_in(self, now: float) -> float | None:
        # InitProducerId goes to the coordinator as a transactional request (next_request).
        return None

    def next_request(self, now: float) -> tuple[TxnRequestHandler | None, float]:
        """The request to send now (the Sender calls :meth:`request_sent` once it is on its
        way), or None and how long until one may be due."""
        with self._lock:
            if self._in_flight_request is not None:
                return None, float("inf")
            if self._new_partitions and self._machine.state in (
                TransactionState.IN_TRANSACTION,
                TransactionState.COMMITTING,
            ):
                partitions = frozenset(self._new_partitions)
                self._new_partitions.clear()
                self._pending_partitions |= partitions
                self._transaction_started = True
                result = TransactionalRequestResult("AddPartitionsToTxn")
                self._pending.append(AddPartitionsHandler(self, result, partitions))
            if not self._pending:
                return None, float("inf")
            if now < self._not_before_ms:
                return None, self._not_before_ms - now
            return self._pending[0], 0.0

    def coordinator_for(self, handler: TxnRequestHandler) -> int | None:
        """The node to send ``handler`` to: None means look it up first (queued here)."""
        if handler.coordinator_type is None:
            raise ValueError("sent to any node")  # the Sender picks one
        with self._lock:
            node = self._coordinators.get((handler.coordinator_type, handler.coordinator_key))
            if node is None:
                self._pending.appendleft(
                    FindCoordinatorHandler(
                        self, handler.result, handler.coordinator_type, handler.coordinator_key
                    )
                )
            return node

    def request_sent(self, handler: TxnRequestHandler) -> None:
        with self._lock:
            if self._pending and self._pending[0] is handler:
                self._pending.popleft()
            self._in_flight_request = handler
            handler.attempts += 1

    def request_completed(
        self,
        handler: TxnRequestHandler,
        response: Response | None,
        error: KafkaError | None,
        api_version: int,
        now: float,
    ) -> None:
        """The Sender's callback: a response, or the error that ended the request."""
        with self._lock:
            self._in_flight_request = None
            if error is not None or response is None:
                handler.handle_error(
                    error or KafkaConnectionError(f"{handler.describe()}: no answer"), now
                )
            else:
                handler.handle_response(response, api_version, now)

    def forget_coordinator(self, key_type: int, key: str) -> None:
        with self._lock:
            self._coordinators.pop((key_type, key), None)

    def coordinator_found(self, key_type: int, key: str, node_id: int) -> None:
        with self._lock:
            self._coordinators[(key_type, key)] = node_id
            self._not_before_ms = 0.0

    def retry(self, handler: TxnRequestHandler, now: float, error: KafkaError) -> None:
        with self._lock:
            delay = self._retry_backoff.next_delay(max(handler.attempts - 1, 0), self._rng)
            self._not_before_ms = now + delay
            if handler not in self._pending:
                self._pending.appendleft(handler)
            _log.info("%s: retrying in %.0f ms after %s", handler.describe(), delay, error)

    def fail_abortable(self, error: KafkaError, result: TransactionalRequestResult) -> None:
        with self._lock:
            _log.warning("transaction %r: abortable error: %s", self.transactional_id, error)
            self._machine.to_abortable(error)
            self._drop_pending_locked(error)
            result.done(error)

    def fail_fatal(self, error: KafkaError, result: TransactionalRequestResult) -> None:
        with self._lock:
            fatal = error
            if not isinstance(error, FATAL_ERRORS):
                fatal = type(error)(f"{error} (fatal for the transactional producer)")
                fatal.__cause__ = error
            self._machine.to_fatal(fatal)
            self._drop_pending_locked(fatal)
            result.done(fatal)
        self.transition_to_fatal(fatal)

    def transition_to_fatal(self, error: KafkaError) -> None:
        # Fenced produce answers come here from the Sender too: keep the machine in step.
        with self._lock:
            self._machine.to_fatal(error)
        super().transition_to_fatal(error)

    def producer_id_received(self, pid: ProducerIdAndEpoch, api_version: int) -> None:
        with self._lock:
            _log.info(
                "transactional id %r: producer id %d, epoch %d",
                self.transactional_id,
                pid.producer_id,
                pid.epoch,
            )
            self._producer_id_and_epoch = pid
            self.supports_epoch_bump = api_version >= 3
            # A new id or epoch: sequences start again at 0 for every partition.
            self._partitions.clear()
            self._epoch_bump_needed = False
            if self._machine.state in (TransactionState.INITIALIZING, TransactionState.ABORTING):
                self._machine.transition(TransactionState.READY)

    def partitions_added(self, partitions: frozenset[TopicPartition]) -> None:
        with self._lock:
            self._pending_partitions -= partitions
            self._partitions_in_txn |= partitions

    def offsets_added(self, commit: TxnOffsetCommitHandler) -> None:
        with self._lock:
            self._transaction_started = True
            self._pending.appendleft(commit)

    def transaction_ended(self, result: TransactionalRequestResult) -> None:
        with self._lock:
            if self._machine.state is TransactionState.ABORTING and self._epoch_bump_needed:
                self._after_abort_locked(result)
                return
            self._finish_transaction_locked()
            result.done()

    # ------------------------------------------------------------------ draining

    def should_stop_drain(self, batch: ProducerBatch) -> bool:
        if super().should_stop_drain(batch):
            return True
        tp = batch.topic_partition
        if tp in self._partitions_in_txn:
            return False
        with self._lock:
            if tp not in self._partitions_in_txn and tp not in self._pending_partitions:
                self._new_partitions.add(tp)
            return tp not in self._partitions_in_txn

    def handle_failed_batch(self, batch: ProducerBatch, error: Exception | None = None) -> None:
        super().handle_failed_batch(batch, error)
        with self._lock:
            if self.fatal_error is not None or self._machine.state is TransactionState.ABORTING:
                return  # an abort does not care which of its records failed
            # Records of the transaction are missing: it must not commit (Java does the same).
            if not isinstance(error, KafkaError):
                cause = error
                error = KafkaError(f"a batch for {batch.topic}-{batch.partition} failed: {cause!r}")
                error.__cause__ = cause
            self._machine.to_abortable(error)

    def _request_new_epoch(self, tp: TopicPartition | None) -> None:
        # Inside a transaction a gap means records are missing: the transaction must abort,
        # and the abort gets the new epoch (see transaction_ended).
        self._epoch_bump_needed = True

    def _gap_needs_new_epoch(self, batch: ProducerBatch) -> bool:
        self._epoch_bump_needed = True
        return False

    # ------------------------------------------------------------------ internals

    def _enqueue(self, handler: TxnRequestHandler) -> None:
        self._pending.append(handler)
        if self._wakeup is not None:
            self._wakeup()

    def _finish_transaction_locked(self) -> None:
        self._partitions_in_txn.clear()
        self._pending_partitions.clear()
        self._new_partitions.clear()
        self._transaction_started = False
        self._machine.transition(TransactionState.READY)

    def _after_abort_locked(self, result: TransactionalRequestResult) -> None:
        self._partitions_in_txn.clear()
        self._pending_partitions.clear()
        self._new_partitions.clear()
        self._transaction_started = False
        self._pending.appendleft(InitProducerIdHandler(self, result))

    def _drop_pending_locked(self, error: KafkaError) -> None:
        # Queued requests of a failed transaction would fail the same way; their callers
        # get the error now (a FindCoordinator shares its result with the request it serves).
        while self._pending:
            self._pending.popleft().result.done(error)
        self._new_partitions.clear()


def group_id_of(group_metadata: object) -> str:
    """A consumer group id from a string or an object with a ``group_id`` attribute
    (kafka-python's and confluent-kafka's group metadata)."""
    if isinstance(group_metadata, str):
        group_id = group_metadata
    else:
        attribute: object = getattr(group_metadata, "group_id", None)
        if not isinstance(attribute, str):
            raise TypeError(
                "group_metadata must be a consumer group id (str) or an object with a str "
                f"group_id attribute, not {type(group_metadata).__name__}"
            )
        group_id = attribute
    if not group_id:
        raise ValueError("the consumer group id must not be empty")
    return group_id


def offsets_of(offsets: object) -> dict[TopicPartition, int]:
    """``{(topic, partition) or TopicPartition: offset}`` as TopicPartition -> int."""
    items: Iterable[tuple[object, object]]
    if hasattr(offsets, "items"):
        items = offsets.items()
    else:
        raise TypeError(f"offsets must be a mapping, not {type(offsets).__name__}")
    result: dict[TopicPartition, int] = {}
    for key, value in items:
        topic = getattr(key, "topic", None)
        partition = getattr(key, "partition", None)
        if topic is None and isinstance(key, tuple) and len(key) == 2:
            topic, partition = key
        if not isinstance(topic, str) or type(partition) is not int or partition < 0:
            raise TypeError(f"offsets key {key!r} is not a (topic, partition) pair")
        offset = getattr(value, "offset", value)
        if type(offset) is not int or offset < 0:
            raise ValueError(f"offset {value!r} for {topic}-{partition} is not an int >= 0")
        result[TopicPartition(topic, partition)] = offset
    return result
