"""Completing a transaction another producer opened: FindCoordinator, then EndTxn with the
transaction's producer id and epoch (:meth:`kafkaline.Producer.complete_transaction`).

Why this works: the transaction coordinator knows a transaction only by its transactional id,
producer id and epoch; EndTxn with those three from any connection ends it, exactly as the
producer that opened it would have. InitProducerId is *not* sent: for an id with an open
transaction it bumps the epoch and aborts that transaction (zombie fencing), which is the
opposite of what the caller wants.

The contract and its limits:

* The opening producer must have flushed (:meth:`~kafkaline.Producer.transaction_identity`
  does), so every record is written and every partition was added, and must make no further
  transactional call for that transaction (close() is fine: it neither commits nor aborts).
* The coordinator aborts a transaction left open longer than ``transaction_timeout_ms`` (from
  its first AddPartitionsToTxn); a commit after that fails (INVALID_PRODUCER_EPOCH,
  PRODUCER_FENCED or INVALID_TXN_STATE depending on the broker) and the records stay aborted.
* A producer that calls InitProducerId for the same transactional id meanwhile fences the
  identity: the completion fails with the fenced error.
* Completing twice is the caller's business: a second commit of a committed transaction is
  answered by the broker (Kafka: INVALID_TXN_STATE, or success for a retry it recognises).

This runs its own :class:`~kafkaline.net.NetworkClient`, driven on the caller's thread: it
has no Sender and nothing else uses the client.
"""

from __future__ import annotations

import logging
import random

from kafkaline.config import ProducerConfig
from kafkaline.errors import (
    ConcurrentTransactionsError,
    CoordinatorLoadInProgressError,
    CoordinatorNotAvailableError,
    KafkaError,
    KafkaTimeoutError,
    NotCoordinatorError,
    error_for_code,
)
from kafkaline.net.client import NetworkClient
from kafkaline.net.response import ClientResponse
from kafkaline.producer.transactions import TransactionIdentity
from kafkaline.protocol import Request, Response
from kafkaline.protocol.api.end_txn import EndTxnRequest, EndTxnResponse
from kafkaline.protocol.api.find_coordinator import (
    KEY_TYPE_TRANSACTION,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
)

__all__ = ["complete_transaction"]

_log = logging.getLogger(__name__)

#: How long one wait for the network may last before deadlines are checked again.
_POLL_MS = 50.0
_RETRIABLE = (
    NotCoordinatorError,
    CoordinatorNotAvailableError,
    CoordinatorLoadInProgressError,
    ConcurrentTransactionsError,
)


def complete_transaction(
    identity: TransactionIdentity, *, commit: bool, config: ProducerConfig
) -> None:
    """Commit (or abort) the open transaction ``identity`` names; see the module docstring.
    Retries coordinator errors and CONCURRENT_TRANSACTIONS within ``max_block_ms``; raises
    the broker's named error otherwise, KafkaTimeoutError when time runs out."""
    identity = TransactionIdentity(*identity)
    rng = random.Random()
    with NetworkClient.from_config(config) as client:
        deadline = client.now() + config.max_block_ms
        attempt = 0
        while True:
            try:
                node = _find_coordinator(client, identity.transactional_id, deadline)
                answer = _request(
                    client,
                    node,
                    EndTxnRequest(
                        transactional_id=identity.transactional_id,
                        producer_id=identity.producer_id,
                        producer_epoch=identity.producer_epoch,
                        committed=commit,
                    ),
                    deadline,
                )
                if not isinstance(answer, EndTxnResponse):  # pragma: no cover
                    raise TypeError(f"expected EndTxnResponse, got {type(answer).__name__}")
                if answer.error_code == 0:
                    _log.info(
                        "%s transaction %r (producer id %d, epoch %d)",
                        "committed" if commit else "aborted",
                        *identity,
                    )
                    return
                error: KafkaError = error_for_code(answer.error_code)(
                    f"EndTxn({'commit' if commit else 'abort'}) for transactional id "
                    f"{identity.transactional_id!r}, producer id {identity.producer_id}, "
                    f"epoch {identity.producer_epoch}"
                )
            except KafkaError as failure:  # a lost connection or a FindCoordinator error
                error = failure
            if not (isinstance(error, _RETRIABLE) or error.retriable):
                raise error
            delay = config.retry_backoff.next_delay(attempt, rng)
            attempt += 1
            if client.now() + delay >= deadline:
                raise KafkaTimeoutError(
                    f"could not complete transaction {identity.transactional_id!r} within "
                    f"max_block_ms={config.max_block_ms}: last error {error}"
                ) from error
            _log.info("completing transaction: retrying in %.0f ms after %s", delay, error)
            client.poll(delay)


def _find_coordinator(client: NetworkClient, transactional_id: str, deadline: float) -> int:
    answer = _request(
        client,
        None,
        FindCoordinatorRequest(
            key=transactional_id,
            key_type=KEY_TYPE_TRANSACTION,
            coordinator_keys=[transactional_id],
        ),
        deadline,
    )
    if not isinstance(answer, FindCoordinatorResponse):  # pragma: no cover
        raise TypeError(f"expected FindCoordinatorResponse, got {type(answer).__name__}")
    if answer.coordinators:
        code, node_id = answer.coordinators[0].error_code, answer.coordinators[0].node_id
    else:
        code, node_id = answer.error_code, answer.node_id
    if code:
        raise error_for_code(code)(f"FindCoordinator for transactional id {transactional_id!r}")
    return node_id


def _request(
    client: NetworkClient, node: int | None, request: Request, deadline: float
) -> Response:
    """Send ``request`` to ``node`` (None: the least loaded) once it is connected; wait for
    the answer. Raises the connection error, or KafkaTimeoutError at ``deadline``."""
    responses: list[ClientResponse] = []
    sent = False
    while not responses:
        now = client.now()
        if now >= deadline:
            raise KafkaTimeoutError(f"{type(request).__name__} got no answer before max_block_ms")
        if not sent:
            target = node if node is not None else client.least_loaded_node(now)
            if target is not None and target not in client.node_ids:
                client.metadata.request_update()  # the coordinator is a broker we do not know yet
            elif target is not None and client.ready(target, now):
                client.send(target, request, responses.append, now)
                sent = True
                continue
        client.poll(min(_POLL_MS, deadline - now))
    response = responses[0]
    if response.error is not None:
        raise response.error
    if response.response is None:  # pragma: no cover - only requests without answer
        raise KafkaError(f"{type(request).__name__} got no answer")
    return response.response
