"""The steps of :class:`~kafkaline.producer.producer.Producer`'s transaction methods, given
the producer's :class:`~kafkaline.producer.transactions.manager.TransactionManager` and what
they need of the producer (its flush, its accumulator, ``max_block_ms``). The Producer keeps
the public methods and their documentation; docs/producer.md, "Transactions", has the guide."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kafkaline.config import ProducerConfig
from kafkaline.errors import TransactionAbortedError, TransactionStateError
from kafkaline.producer.accumulator import RecordAccumulator
from kafkaline.producer.transactions.manager import TransactionManager, group_id_of, offsets_of
from kafkaline.producer.transactions.state import TransactionIdentity, TransactionState

__all__ = [
    "abort",
    "commit",
    "complete",
    "identity",
    "no_transactional_id",
    "send_offsets",
]


def no_transactional_id(action: str) -> TransactionStateError:
    """The error of a transaction method called on a producer without transactional_id."""
    return TransactionStateError(
        f"cannot {action}: the producer has no transactional_id (set "
        "transactional_id=... to use transactions)"
    )


def commit(
    transactional: TransactionManager, flush: Callable[[], None], max_block_ms: float
) -> None:
    """Flush, then EndTxn(commit)."""
    transactional.prepare_commit()
    flush()
    transactional.end_transaction(commit=True).wait(max_block_ms)


def abort(
    transactional: TransactionManager,
    accumulator: RecordAccumulator,
    flush: Callable[[], None],
    max_block_ms: float,
) -> None:
    """Fail the records still buffered, flush what is on its way, then EndTxn(abort)."""
    transactional.prepare_abort()
    accumulator.abort_undrained_batches(
        TransactionAbortedError(
            f"the transaction of {transactional.txn_id!r} was aborted before the record was sent"
        )
    )
    flush()
    transactional.end_transaction(commit=False).wait(max_block_ms)


def send_offsets(
    transactional: TransactionManager,
    offsets: Mapping[Any, Any],
    group_metadata: object,
    max_block_ms: float,
) -> None:
    """AddOffsetsToTxn then TxnOffsetCommit, once the arguments are checked."""
    checked = offsets_of(offsets)
    group_id = group_id_of(group_metadata)
    if not checked:
        return
    transactional.send_offsets(checked, group_id).wait(max_block_ms)


def identity(transactional: TransactionManager, flush: Callable[[], None]) -> TransactionIdentity:
    """The open transaction's identity, once every record sent in it is acknowledged."""
    transactional.require("transaction_identity()", TransactionState.IN_TRANSACTION)
    flush()
    return transactional.identity()


def complete(
    identity: TransactionIdentity | tuple[str, int, int],
    commit: bool,
    config: ProducerConfig | None,
    settings: dict[str, Any],
) -> None:
    """Commit or abort a handed-over transaction (see
    :mod:`kafkaline.producer.transactions.handover`)."""
    # Here, not at the top: only a handed-over transaction needs it, not every producer.
    from kafkaline.producer.transactions.handover import complete_transaction

    if config is None:
        config = ProducerConfig.from_kwargs(**settings)
    elif settings:
        config = config.with_changes(**settings)
    complete_transaction(TransactionIdentity(*identity), commit=commit, config=config)
