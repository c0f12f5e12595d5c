"""The Sender's produce responses: each answer completes its batch (success with the
broker's offset), or goes to :class:`~kafkaline.producer.batch_outcomes.BatchOutcomes` (errors,
retries); see :mod:`kafkaline.producer.sender`."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from itertools import chain

from kafkaline.net.response import ClientResponse
from kafkaline.producer.accumulator import RecordAccumulator
from kafkaline.producer.batch import ProducerBatch
from kafkaline.producer.batch_outcomes import BatchOutcomes
from kafkaline.producer.futures import SUCCEEDED
from kafkaline.producer.metrics import SenderCounters
from kafkaline.producer.transactions.idempotence import IdempotenceManager
from kafkaline.protocol.api import ProduceResponse

__all__ = ["ProduceResponses", "batches_of"]

_log = logging.getLogger("kafkaline.producer.sender")


class ProduceResponses:
    """Handles the answers to a Sender's produce requests (:meth:`handle`, each request's
    callback with its partition -> batch maps). ``requests_in_flight`` counts the requests
    sent (the Sender counts up) and not answered."""

    def __init__(
        self,
        accumulator: RecordAccumulator,
        counters: SenderCounters,
        outcomes: BatchOutcomes,
        transactions: IdempotenceManager | None,
        guarantee_order: bool,
    ) -> None:
        self._accumulator = accumulator
        self._counters = counters
        self._outcomes = outcomes
        self._in_flight = outcomes.in_flight
        self._transactions = transactions
        self._guarantee_order = guarantee_order
        self.requests_in_flight = 0

    def handle(
        self, by_topic: dict[str, dict[int, ProducerBatch]], response: ClientResponse
    ) -> None:
        self.requests_in_flight -= 1
        now = response.completed_at_ms
        produce = response.response
        if response.error is not None or produce is None:
            self._handle_unanswered(by_topic, response)
            return
        if not isinstance(produce, ProduceResponse):
            produce = response.response_as(ProduceResponse)  # raises naming the type
        self._counters.record_response(
            latency_ms=now - response.sent_at_ms,  # its latency_ms
            throttle_ms=float(produce.throttle_time_ms),
        )
        # The I/O thread's cost is mostly Python calls per batch (docs/performance.md): this
        # loop keeps to few. The answers are popped from this request's own map (no copy),
        # so what is left in it was not answered.
        # Successes are completed here (BatchOutcomes.complete written out) and taken out of the
        # in-flight set and given their memory back in one go after the loop: a topic of
        # thousands of partitions answers for a batch of a record or two per partition.
        transactions = self._transactions
        unmute = self._accumulator.unmute if self._guarantee_order else None
        succeeded: list[ProducerBatch] = []
        try:
            for topic_response in produce.responses:
                name = topic_response.name
                topic_batches = by_topic.get(name, _NO_BATCHES)
                for answer in topic_response.partition_responses:
                    found = topic_batches.pop(answer.index, None)
                    if found is None:
                        self._warn_unrequested(response.node_id, name, answer.index)
                        continue
                    if answer.error_code == 0:
                        if transactions is not None and found.result.state is None:
                            transactions.handle_completed_batch(found)
                        succeeded.append(found)
                        base_offset = answer.base_offset
                        log_append_time = answer.log_append_time_ms
                        # The result completes in one call; only if it had completed before
                        # does done() decide (a bug raises, a late answer is logged).
                        previous = found.result.complete(SUCCEEDED, base_offset, log_append_time)
                        if previous is not None:
                            found.done(base_offset, log_append_time)
                        if unmute is not None:
                            unmute(found.topic_partition)
                        continue
                    self._outcomes.handle_partition_error(found, answer, produce, now)
        finally:
            if succeeded:
                self._in_flight.difference_update(succeeded)
                self._accumulator.deallocate_batches(succeeded)
        # Every answer was popped: usually each map is empty, and nothing is listed.
        if any(by_topic.values()):
            self._outcomes.fail_unanswered(list(batches_of(by_topic)), response.node_id)

    def _warn_unrequested(self, node_id: int, topic: str, partition: int) -> None:
        _log.warning(
            "node %d answered for %s-%d, which was not in the request", node_id, topic, partition
        )

    def _handle_unanswered(
        self, by_topic: dict[str, dict[int, ProducerBatch]], response: ClientResponse
    ) -> None:
        """A produce request that failed as a whole (``response.error``: connection lost,
        timed out), or that expects no answer (acks=0) and was written to the socket."""
        self._counters.record_response(
            latency_ms=response.completed_at_ms - response.sent_at_ms, throttle_ms=0.0
        )
        if response.error is not None:
            self._outcomes.fail_request(list(batches_of(by_topic)), response.error, response)
            return
        for batch in list(batches_of(by_topic)):
            self._outcomes.complete(batch, -1, -1)


#: A topic the request did not name: no batch to pop.
_NO_BATCHES: dict[int, ProducerBatch] = {}


def batches_of(by_topic: Mapping[str, Mapping[int, ProducerBatch]]) -> Iterator[ProducerBatch]:
    """The batches of a request's map, topic by topic."""
    return chain.from_iterable(batches.values() for batches in by_topic.values())
