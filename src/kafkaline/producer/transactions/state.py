"""A transaction's states and who may move to which (:class:`TransactionStateMachine`), and
:class:`TransactionIdentity`, what one producer hands another to finish its transaction.

States (Java's ``TransactionManager.State``)::

    UNINITIALIZED --init_transactions()--> INITIALIZING --InitProducerId--> READY
    READY --begin_transaction()--> IN_TRANSACTION
    IN_TRANSACTION --commit_transaction()--> COMMITTING --EndTxn--> READY
    IN_TRANSACTION / ABORTABLE_ERROR --abort_transaction()--> ABORTING --EndTxn--> READY
    IN_TRANSACTION / COMMITTING / ABORTING --a failed batch or request--> ABORTABLE_ERROR
    any --fenced, authorization, InitProducerId failed--> FATAL_ERROR (every call raises)
"""

from __future__ import annotations

import enum
from typing import NamedTuple

from kafkaline.errors import KafkaError, TransactionStateError

__all__ = ["TransactionIdentity", "TransactionState", "TransactionStateMachine"]


class TransactionState(enum.Enum):
    """Where the transactional producer is (Java's names)."""

    UNINITIALIZED = "UNINITIALIZED"
    INITIALIZING = "INITIALIZING"
    READY = "READY"
    IN_TRANSACTION = "IN_TRANSACTION"
    COMMITTING = "COMMITTING"
    ABORTING = "ABORTING"
    ABORTABLE_ERROR = "ABORTABLE_ERROR"
    FATAL_ERROR = "FATAL_ERROR"


_S = TransactionState
#: target -> the states it may be entered from (FATAL_ERROR from any).
_VALID_PREVIOUS: dict[TransactionState, frozenset[TransactionState]] = {
    _S.UNINITIALIZED: frozenset(),
    _S.INITIALIZING: frozenset({_S.UNINITIALIZED}),
    # From ABORTING too: an abort that needed a new epoch ends with InitProducerId.
    _S.READY: frozenset({_S.INITIALIZING, _S.COMMITTING, _S.ABORTING}),
    _S.IN_TRANSACTION: frozenset({_S.READY}),
    _S.COMMITTING: frozenset({_S.IN_TRANSACTION}),
    _S.ABORTING: frozenset({_S.IN_TRANSACTION, _S.ABORTABLE_ERROR}),
    _S.ABORTABLE_ERROR: frozenset(
        {_S.IN_TRANSACTION, _S.COMMITTING, _S.ABORTING, _S.ABORTABLE_ERROR}
    ),
    _S.FATAL_ERROR: frozenset(TransactionState),
}


class TransactionStateMachine:
    """The states and their allowed transitions; pure, no I/O. Not thread-safe by itself:
    the :class:`~kafkaline.producer.transactions.manager.TransactionManager` calls it under
    its lock."""

    def __init__(self) -> None:
        self.state = TransactionState.UNINITIALIZED
        #: Why the producer is in ABORTABLE_ERROR or FATAL_ERROR.
        self.last_error: KafkaError | None = None

    def require(self, action: str, *allowed: TransactionState) -> None:
        """Raise unless the state is one of ``allowed``: the error that made the producer
        fail (fatal), or :class:`TransactionStateError` naming the state."""
        if self.state in allowed:
            return
        raise self.error_for(action)

    def error_for(self, action: str) -> KafkaError:
        """The error to raise for ``action`` in the current state."""
        state = self.state
        if state is TransactionState.FATAL_ERROR and self.last_error is not None:
            fatal = self.last_error
            again = type(fatal)(f"{fatal} (fatal: close this producer and create a new one)")
            again.__cause__ = fatal
            return again
        detail = ""
        if state is TransactionState.ABORTABLE_ERROR and self.last_error is not None:
            detail = f" after {self.last_error!r}: call abort_transaction() first"
        error = TransactionStateError(
            f"cannot {action}: the transactional producer is in state {state.value}{detail}",
            state.value,
        )
        error.__cause__ = self.last_error
        return error

    def transition(self, target: TransactionState, action: str = "") -> None:
        """Move to ``target``; raise (see :meth:`error_for`) when not allowed from here."""
        if self.state is TransactionState.FATAL_ERROR:
            raise self.error_for(action or f"move to {target.value}")
        if self.state not in _VALID_PREVIOUS[target]:
            raise self.error_for(action or f"move to {target.value}")
        self.state = target

    def to_abortable(self, error: KafkaError) -> None:
        """An error the user can recover from by aborting (ignored once fatal)."""
        if self.state is TransactionState.FATAL_ERROR:
            return
        if self.state in _VALID_PREVIOUS[TransactionState.ABORTABLE_ERROR]:
            self.state = TransactionState.ABORTABLE_ERROR
            self.last_error = error

    def to_fatal(self, error: KafkaError) -> None:
        if self.state is not TransactionState.FATAL_ERROR:
            self.state = TransactionState.FATAL_ERROR
            self.last_error = error


class TransactionIdentity(NamedTuple):
    """An open transaction, as another producer needs it to commit or abort it
    (:meth:`kafkaline.Producer.complete_transaction`)."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
