"""What happens to a batch once its produce request is answered (or is not): success, retry
with backoff, a split after MESSAGE_TOO_LARGE, a leader hint followed (KIP-951), or failure
with the broker's named error (see :mod:`kafkaline.producer.sender` for the rules). Runs on
the Sender's thread."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence

from kafkaline.errors import (
    DeliveryTimeoutError,
    DuplicateSequenceNumberError,
    KafkaConnectionError,
    KafkaError,
    MessageTooLargeError,
    ProtocolError,
    error_for_code,
)
from kafkaline.net.cluster import BrokerNode, TopicPartition
from kafkaline.net.response import ClientResponse
from kafkaline.producer.accumulator import RecordAccumulator
from kafkaline.producer.batch import ProducerBatch
from kafkaline.producer.metrics import SenderCounters
from kafkaline.producer.sender_client import SenderMetadata
from kafkaline.producer.transactions.idempotence import IdempotenceManager, leaves_outcome_unknown
from kafkaline.protocol.api import ProduceResponse
from kafkaline.protocol.api.produce import PartitionProduceResponse
from kafkaline.record.batch_format import BATCH_HEADER_SIZE

__all__ = ["BatchOutcomes"]

# The Sender's logger: what a user filters on for the I/O thread's messages stays one name.
_log = logging.getLogger("kafkaline.producer.sender")


class BatchOutcomes:
    """Completes, retries, splits or fails the Sender's batches, and keeps the set of those
    in flight (``in_flight``, which the Sender's drain adds to). ``on_reenqueued(batch)``
    tells the Sender a batch is queued again (its expiry scan), ``on_fatal(error)`` that the
    idempotent producer was fenced. ``forced`` is set by a forced close: nothing retries."""

    def __init__(
        self,
        accumulator: RecordAccumulator,
        metadata: SenderMetadata,
        counters: SenderCounters,
        *,
        transactions: IdempotenceManager | None,
        guarantee_order: bool,
        retries: int,
        on_reenqueued: Callable[[ProducerBatch], None],
        on_fatal: Callable[[KafkaError], None],
    ) -> None:
        self._accumulator = accumulator
        self._metadata = metadata
        self._counters = counters
        self._transactions = transactions
        self._guarantee_order = guarantee_order
        self._retries = retries
        self._delivery_timeout_ms = accumulator.delivery_timeout_ms
        self._on_reenqueued = on_reenqueued
        self._on_fatal = on_fatal
        # Batches sent and not answered: they expire at delivery_timeout_ms too (Java's
        # inFlightBatches).
        self.in_flight: set[ProducerBatch] = set()
        self.forced = False

    def fail_request(
        self,
        batches: Sequence[ProducerBatch],
        error: KafkaError,
        response: ClientResponse,
    ) -> None:
        """A produce request that got no answer (connection lost, timed out)."""
        _log.warning(
            "produce request to node %d failed (%s) for %s",
            response.node_id,
            error,
            ", ".join(f"{batch.topic}-{batch.partition}" for batch in batches),
        )
        transactions = self._transactions
        for batch in batches:
            if transactions is not None:
                # The request may have been written before the connection went.
                transactions.note_unknown_outcome(batch, error)
            self.complete_with_error(batch, error, response.completed_at_ms)

    def handle_partition_error(
        self,
        batch: ProducerBatch,
        answer: PartitionProduceResponse,
        produce: ProduceResponse,
        now: float,
    ) -> None:
        broker_error, record_errors = _partition_error(batch.topic_partition, answer)
        if self._transactions is not None and leaves_outcome_unknown(broker_error):
            self._transactions.note_unknown_outcome(batch, broker_error)
        moved = answer.current_leader.leader_id >= 0 and self._take_leader_hint(
            batch.topic_partition, answer, produce
        )
        self.complete_with_error(batch, broker_error, now, record_errors)
        if moved:
            # The retry goes to the new leader: no backoff (KIP-951).
            batch.skip_retry_backoff()

    def fail_unanswered(self, batches: Iterable[ProducerBatch], node_id: int) -> None:
        """Batches the response did not answer for: a broker bug, failed rather than hung."""
        for batch in batches:
            self.fail_batch(
                batch,
                ProtocolError(
                    f"the produce response from node {node_id} did not answer for "
                    f"{batch.topic}-{batch.partition}"
                ),
            )
            self.unmute(batch)

    def _take_leader_hint(
        self, tp: TopicPartition, answer: PartitionProduceResponse, produce: ProduceResponse
    ) -> bool:
        """Install the new leader a NOT_LEADER_OR_FOLLOWER answer named (Produce v10+,
        KIP-951), so the retry goes there without waiting for a metadata refresh. Returns
        whether the leader changed."""
        hint = answer.current_leader
        endpoints = [
            BrokerNode(node.node_id, node.host, node.port, node.rack)
            for node in produce.node_endpoints
        ]
        moved = self._metadata.update_leaders({tp: (hint.leader_id, hint.leader_epoch)}, endpoints)
        if moved:
            _log.info(
                "%s-%d: leader moved to node %d (epoch %d), from the broker's hint",
                tp.topic,
                tp.partition,
                hint.leader_id,
                hint.leader_epoch,
            )
        return moved

    def complete(self, batch: ProducerBatch, base_offset: int, log_append_time: int) -> None:
        self.in_flight.discard(batch)
        if self._transactions is not None and batch.result.state is None:
            self._transactions.handle_completed_batch(batch)
        self._accumulator.complete_batch(batch, base_offset, log_append_time)
        if self._guarantee_order:  # unmute(), written out: once per batch
            self._accumulator.unmute(batch.topic_partition)

    def complete_with_error(
        self,
        batch: ProducerBatch,
        error: KafkaError,
        now: float,
        record_errors: dict[int, Exception] | None = None,
    ) -> None:
        self.in_flight.discard(batch)
        tp = batch.topic_partition
        transactions = self._transactions
        if batch.final_state is not None:
            pass  # expired or aborted while in flight: this late answer changes nothing
        elif transactions is not None and isinstance(error, DuplicateSequenceNumberError):
            self._complete_duplicate(batch)
            return
        elif transactions is not None and transactions.error_is_fatal(error):
            self._fail_fenced(transactions, batch, error, record_errors)
        elif isinstance(error, MessageTooLargeError) and batch.record_count > 1:
            self._split_too_large(batch)
        elif self._can_retry(batch, error, now):
            _log.warning(
                "retrying a batch of %d records for %s-%d (attempt %d) after: %s",
                batch.record_count,
                tp.topic,
                tp.partition,
                batch.attempts + 1,
                error,
            )
            self._accumulator.reenqueue(batch, now)
            self._on_reenqueued(batch)
            self._counters.records_retried += batch.record_count
        else:
            final: Exception = error
            if error.retriable and batch.has_reached_delivery_timeout(
                self._delivery_timeout_ms, now
            ):
                final = batch.delivery_timeout_error(self._delivery_timeout_ms, now)
                final.__cause__ = error
            self.fail_batch(batch, final, record_errors)
        if isinstance(error, KafkaConnectionError) or getattr(error, "invalid_metadata", False):
            self._metadata.request_update()
        self.unmute(batch)

    def _complete_duplicate(self, batch: ProducerBatch) -> None:
        tp = batch.topic_partition
        # The broker has this batch already (an earlier try was written): a success
        # whose offset it does not say, as in Java.
        producer_id, epoch = batch.producer_id_and_epoch
        _log.info(
            "%s-%d: duplicate of a batch already written (producer id %d, epoch %d, "
            "sequence %d, %d records)",
            tp.topic,
            tp.partition,
            producer_id,
            epoch,
            batch.base_sequence,
            batch.record_count,
        )
        self.complete(batch, -1, -1)

    def _fail_fenced(
        self,
        transactions: IdempotenceManager,
        batch: ProducerBatch,
        error: KafkaError,
        record_errors: dict[int, Exception] | None,
    ) -> None:
        fatal = type(error)(
            f"{error} (fatal: the broker fenced this idempotent producer's id/epoch; "
            "every pending record fails and the producer cannot send any more: close it "
            "and create a new one)"
        )
        fatal.__cause__ = error
        # Fatal first, then the batch: a thread woken by this batch's future must find
        # the producer fenced already, not in the abortable state failing it would set.
        transactions.transition_to_fatal(fatal)
        self.fail_batch(batch, fatal, record_errors)
        self._on_fatal(fatal)

    def _split_too_large(self, batch: ProducerBatch) -> None:
        tp = batch.topic_partition
        # Halves, not batch_size: a batch no larger than batch_size would come back
        # whole and be refused again until it expired (Java's behaviour). Halving ends
        # with one-record batches, which then fail with the broker's named error.
        half = BATCH_HEADER_SIZE + (batch.estimated_size_in_bytes - BATCH_HEADER_SIZE) // 2
        parts = self._accumulator.split_and_reenqueue(batch, half)
        self._on_reenqueued(batch)
        self._counters.batch_splits += 1
        _log.info(
            "split a batch of %d records for %s-%d into %d after MESSAGE_TOO_LARGE",
            batch.record_count,
            tp.topic,
            tp.partition,
            parts,
        )

    def _can_retry(self, batch: ProducerBatch, error: KafkaError, now: float) -> bool:
        if self._transactions is not None and batch.has_sequence:
            # Sequence errors: retried after an epoch bump, or not (see IdempotenceManager).
            retriable = self._transactions.can_retry(batch, error)
        else:
            retriable = error.retriable
        return (
            retriable
            and batch.attempts < self._retries
            and not batch.has_reached_delivery_timeout(self._delivery_timeout_ms, now)
            and not self.forced
        )

    def fail_batch(
        self,
        batch: ProducerBatch,
        error: Exception,
        record_errors: dict[int, Exception] | None = None,
    ) -> None:
        self.in_flight.discard(batch)
        if self._transactions is not None and batch.final_state is None:
            self._transactions.handle_failed_batch(batch, error)
        if self._accumulator.fail_batch(batch, error, record_errors):
            self._counters.records_errored += batch.record_count
            log = _log.debug if isinstance(error, DeliveryTimeoutError) else _log.warning
            log(
                "%d record(s) for %s-%d failed: %s",
                batch.record_count,
                batch.topic,
                batch.partition,
                error,
            )

    def unmute(self, batch: ProducerBatch) -> None:
        if self._guarantee_order:
            self._accumulator.unmute(batch.topic_partition)


def _partition_error(
    tp: TopicPartition, answer: PartitionProduceResponse
) -> tuple[KafkaError, dict[int, Exception] | None]:
    """The broker's named error for a partition, its message naming the topic-partition, and
    the per-record errors it listed (KIP-467)."""
    detail = f"producing to {tp.topic}-{tp.partition}"
    if answer.error_message:
        detail += f": {answer.error_message}"
    error_class = error_for_code(answer.error_code)
    record_errors: dict[int, Exception] | None = None
    if answer.record_errors:
        record_errors = {
            item.batch_index: error_class(
                f"{detail} (record {item.batch_index}: "
                f"{item.batch_index_error_message or 'invalid'})"
            )
            for item in answer.record_errors
        }
    return error_class(detail), record_errors
