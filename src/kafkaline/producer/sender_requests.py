"""The requests idempotence and transactions add to the Sender's loop: InitProducerId (a
producer id and epoch before anything is drained) and the transaction's coordinator requests
(one at a time, as in Java's ``maybeSendAndPollTransactionalRequest``)."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

from kafkaline.errors import IllegalStateError, KafkaError, ProtocolError, error_for_code
from kafkaline.net.response import ClientResponse
from kafkaline.producer.accumulator import RecordAccumulator
from kafkaline.producer.batch import ProducerBatch
from kafkaline.producer.sender_client import SenderClient, SenderMetadata
from kafkaline.producer.transactions.coordinator_requests import TxnRequestHandler
from kafkaline.producer.transactions.idempotence import IdempotenceManager
from kafkaline.producer.transactions.manager import TransactionManager
from kafkaline.protocol.api.init_producer_id import InitProducerIdResponse

__all__ = ["TransactionRequests"]

#: How often to look for a node to send InitProducerId to while none is ready.
_NODE_RECHECK_MS = 50.0


class TransactionRequests:
    """Sends InitProducerId and the transaction's requests for a Sender, on its thread, and
    hands their answers to the manager; batches the new id rules out fail through
    ``fail_batch``."""

    def __init__(
        self,
        client: SenderClient,
        metadata: SenderMetadata,
        accumulator: RecordAccumulator,
        fail_batch: Callable[[ProducerBatch, Exception], None],
    ) -> None:
        self._client = client
        self._metadata = metadata
        self._accumulator = accumulator
        self._fail_batch = fail_batch

    def send_transactional_request(self, transactions: TransactionManager, now: float) -> float:
        """Send the transaction's next request (one at a time, as Java does) to its
        coordinator, or FindCoordinator to the least loaded node; return how long to poll."""
        handler, wait = transactions.next_request(now)
        if handler is None:
            return wait
        client = self._client
        if handler.coordinator_type is None:
            node = client.least_loaded_node(now)
        else:
            node = transactions.coordinator_for(handler)
            if node is None:
                return 0.0  # FindCoordinator was queued before it: send that now
        try:
            ready = node is not None and client.ready(node, now)
        except IllegalStateError:
            # The coordinator FindCoordinator named is not in our metadata yet.
            self._metadata.request_update()
            return _NODE_RECHECK_MS
        if node is None or not ready:
            delay = client.connection_delay(node, now) if node is not None else math.inf
            return min(delay, _NODE_RECHECK_MS)
        request = handler.build_request()
        version = None
        if handler.max_version is not None:
            # AddPartitionsToTxn v4+ is the broker-to-broker form: cap what we would choose.
            chosen = client.api_versions(node).get(request.API_KEY, handler.max_version)
            version = min(chosen, handler.max_version)
        transactions.request_sent(handler)
        on_complete = functools.partial(self._handle_transactional_response, handler)
        try:
            client.send(node, request, on_complete, now, version=version)
        except KafkaError as error:
            transactions.request_completed(handler, None, error, -1, now)
        return 0.0

    def _handle_transactional_response(
        self, handler: TxnRequestHandler, response: ClientResponse
    ) -> None:
        handler.manager.request_completed(
            handler,
            response.response,
            response.error,
            response.api_version,
            response.completed_at_ms,
        )

    def send_init_producer_id(self, transactions: IdempotenceManager, now: float) -> float:
        """Send InitProducerId to the least loaded node when due; return how long to poll."""
        due_in = transactions.init_producer_id_due_in(now)
        if due_in is None:
            return math.inf  # in flight (its answer ends the poll) or not needed
        if due_in > 0:
            return due_in
        client = self._client
        node = client.least_loaded_node(now)
        if node is None or not client.ready(node, now):
            # ready() starts connecting; look again when it may have connected (the poll
            # is not woken by a connection that completes without a request on it).
            delay = client.connection_delay(node, now) if node is not None else math.inf
            return min(delay, _NODE_RECHECK_MS)
        request = transactions.init_producer_id_request()
        on_complete = functools.partial(self._handle_init_producer_id, transactions)
        try:
            client.send(node, request, on_complete, now)
        except KafkaError as error:
            transactions.handle_init_producer_id(error, -1, -1, -1, now)
            return 0.0
        return math.inf

    def _handle_init_producer_id(
        self, transactions: IdempotenceManager, response: ClientResponse
    ) -> None:
        now = response.completed_at_ms
        error = response.error
        if error is not None or response.response is None:
            transactions.handle_init_producer_id(
                error or ProtocolError("InitProducerId got no answer"), -1, -1, -1, now
            )
            return
        answer = response.response_as(InitProducerIdResponse)
        broker_error = (
            error_for_code(answer.error_code)(f"InitProducerId at node {response.node_id}")
            if answer.error_code
            else None
        )
        to_fail = transactions.handle_init_producer_id(
            broker_error, answer.producer_id, answer.producer_epoch, response.api_version, now
        )
        for batch, outcome_unknown in to_fail:
            # Queued for a retry it must not get: it fails before any batch under the new id
            # is drained.
            self._accumulator.remove_queued(batch)
            self._fail_batch(batch, outcome_unknown)
