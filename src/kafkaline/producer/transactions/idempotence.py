""":class:`IdempotenceManager`: the idempotent producer's id, epoch and sequences (the
idempotence half of Java's ``TransactionManager``).

Idempotence (KIP-98) lets the broker drop a retried batch it already wrote: every batch
carries the producer id and epoch from InitProducerId and the sequence number of its first
record, counted per partition. The rules kept here, as in the Java client:

* No batch is drained before the producer has an id (:meth:`needs_producer_id`); the Sender
  asks the least loaded broker with :meth:`init_producer_id_request` and hands the answer to
  :meth:`handle_init_producer_id`. Retriable errors retry after ``retry_backoff``; any other
  error is fatal.
* A batch gets its sequence when it is first drained (:meth:`assign_sequence`) and keeps it
  across retries: a retry with a new sequence could be written twice. Split batches (KIP-126)
  inherit consecutive sequences from the batch they replace (:meth:`replace_split_batch`).
* A partition's batches with a sequence and no final answer are its *in-flight* batches, in
  sequence order. A retried batch is drained only when it is the first of them
  (:meth:`should_stop_drain`): with retries in progress a partition sends one batch at a time,
  so a later sequence never reaches the broker before an earlier one.
* DUPLICATE_SEQUENCE_NUMBER is a success (the Sender completes the batch with offset -1).
  OUT_OF_ORDER_SEQUENCE_NUMBER for a batch that is not next after the last acknowledged one is
  retried (an earlier batch is still on its way). For the next batch it means a gap, and
  UNKNOWN_PRODUCER_ID means the broker lost our state: with InitProducerId v3+ (KIP-360) the
  epoch is bumped and the partition's in-flight batches are renumbered from 0 under the new
  epoch and retried; before v3 the batch fails with the broker's named error and the producer
  gets a new id. A batch that fails after it was given a sequence leaves a gap too: the epoch
  is bumped (or the id reset) in the same way, as Java does for the idempotent producer.
  Other partitions move to the new id/epoch once their in-flight batches are done.
* Never twice: a batch one of whose tries got no definite answer (:meth:`note_unknown_outcome`:
  a lost connection, a request timeout, an error a broker may give after writing) may be in
  the log already. It is retried only under the id/epoch and sequence it was sent with, which
  the broker can recognise; when its partition moves to a new id/epoch it fails with
  :class:`~kafkaline.errors.DeliveryOutcomeUnknownError` instead of being renumbered (Java
  fails such unresolved batches too). The Sender sends InitProducerId for a bump only once no
  produce request is in flight, so every renumbered batch has its final answer by then.
* INVALID_PRODUCER_EPOCH and PRODUCER_FENCED (and fatal InitProducerId errors) are fatal:
  :attr:`fatal_error` is set and ``on_fatal_error`` called; the Sender then fails every
  pending batch with it and the producer refuses sends.

Java bumps an idempotent producer's epoch locally; we ask the broker (InitProducerId with
our id and epoch, KIP-360), so the new epoch is one the broker issued. A broker that refuses
that form is asked for a fresh id instead, which is as safe: sequences restart at 0 for it.

Threads: everything but :attr:`fatal_error` is used by the Sender's thread only (drain runs
there too), so no lock is needed; ``fatal_error`` is one attribute read by other threads.
Transactions grow from this class:
:class:`~kafkaline.producer.transactions.manager.TransactionManager`.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Sequence
from typing import NamedTuple

from kafkaline.config import ExponentialBackoff, UniformRandom
from kafkaline.errors import (
    ClusterAuthorizationFailedError,
    CorruptMessageError,
    DeliveryOutcomeUnknownError,
    DuplicateSequenceNumberError,
    FencedLeaderEpochError,
    InvalidProducerEpochError,
    InvalidRecordError,
    InvalidRequiredAcksError,
    InvalidTimestampError,
    InvalidTopicError,
    InvalidTxnStateError,
    KafkaConnectionError,
    KafkaError,
    LeaderNotAvailableError,
    MessageTooLargeError,
    NotEnoughReplicasError,
    NotLeaderOrFollowerError,
    OutOfOrderSequenceNumberError,
    ProducerFencedError,
    RecordListTooLargeError,
    TopicAuthorizationFailedError,
    TransactionalIdAuthorizationFailedError,
    UnknownLeaderEpochError,
    UnknownProducerIdError,
    UnknownTopicOrPartitionError,
    UnsupportedCompressionTypeError,
    UnsupportedForMessageFormatError,
    UnsupportedVersionError,
)
from kafkaline.net.cluster import TopicPartition
from kafkaline.producer.batch import ProducerBatch
from kafkaline.protocol.api.init_producer_id import InitProducerIdRequest

__all__ = ["IdempotenceManager", "ProducerIdAndEpoch"]

_log = logging.getLogger(__name__)

#: Sequences are int32 and wrap to 0 after the largest (as the broker expects).
_SEQUENCE_LIMIT = 1 << 31
#: The idempotent producer's transaction timeout in InitProducerId (Java sends this too).
_IDEMPOTENT_TRANSACTION_TIMEOUT_MS = (1 << 31) - 1
#: Errors after which the producer cannot go on (the broker fenced this producer id/epoch).
_FATAL_PRODUCE_ERRORS = (InvalidProducerEpochError, ProducerFencedError)
#: Broker answers that prove the batch was not appended by that try (the broker checks these
#: before it writes). Any other error, and any connection error, leaves the outcome unknown.
_NOT_WRITTEN_ERRORS: tuple[type[KafkaError], ...] = (
    ClusterAuthorizationFailedError,
    CorruptMessageError,
    DuplicateSequenceNumberError,
    FencedLeaderEpochError,
    InvalidProducerEpochError,
    InvalidRecordError,
    InvalidRequiredAcksError,
    InvalidTimestampError,
    InvalidTopicError,
    InvalidTxnStateError,
    LeaderNotAvailableError,
    MessageTooLargeError,
    NotEnoughReplicasError,
    NotLeaderOrFollowerError,
    OutOfOrderSequenceNumberError,
    ProducerFencedError,
    RecordListTooLargeError,
    TopicAuthorizationFailedError,
    TransactionalIdAuthorizationFailedError,
    UnknownLeaderEpochError,
    UnknownProducerIdError,
    UnknownTopicOrPartitionError,
    UnsupportedCompressionTypeError,
    UnsupportedForMessageFormatError,
    UnsupportedVersionError,
)


def leaves_outcome_unknown(error: KafkaError) -> bool:
    """Whether a produce try that ended with ``error`` may have been written all the same
    (a lost connection or a timeout after sending, or a broker error other than those it
    checks before writing)."""
    return isinstance(error, KafkaConnectionError) or not isinstance(error, _NOT_WRITTEN_ERRORS)


class ProducerIdAndEpoch(NamedTuple):
    """The identity the broker gave the producer, stamped on every batch."""

    producer_id: int
    epoch: int


class _PartitionEntry:
    """One partition's sequence state."""

    __slots__ = (
        "in_flight",
        "last_acked_sequence",
        "next_sequence",
        "producer_id_and_epoch",
        "unknown_outcome",
    )

    def __init__(self, producer_id_and_epoch: ProducerIdAndEpoch) -> None:
        self.producer_id_and_epoch = producer_id_and_epoch
        self.next_sequence = 0
        self.last_acked_sequence = -1
        #: Batches with a sequence and no final answer, in sequence order.
        self.in_flight: list[ProducerBatch] = []
        #: Those of them a try of which may have been written, with that try's error.
        self.unknown_outcome: dict[ProducerBatch, KafkaError] = {}

    def renumber(
        self, producer_id_and_epoch: ProducerIdAndEpoch
    ) -> list[tuple[ProducerBatch, KafkaError]]:
        """Start the sequences at 0 under a new id/epoch, in-flight batches first (Java's
        ``startSequencesAtBeginning``). Batches of unknown outcome are not renumbered (they
        could be written twice): they are dropped and returned with their last uncertain
        error, for the caller to fail."""
        dropped = [
            (batch, self.unknown_outcome[batch])
            for batch in self.in_flight
            if batch in self.unknown_outcome
        ]
        if dropped:
            self.in_flight = [
                batch for batch in self.in_flight if batch not in self.unknown_outcome
            ]
            self.unknown_outcome.clear()
        sequence = 0
        for batch in self.in_flight:
            batch.set_producer_state(
                producer_id_and_epoch.producer_id, producer_id_and_epoch.epoch, sequence
            )
            sequence += batch.record_count
        self.producer_id_and_epoch = producer_id_and_epoch
        self.next_sequence = sequence
        self.last_acked_sequence = -1
        return dropped


class IdempotenceManager:
    """The idempotent producer's id, epoch and per-partition sequences; see the module
    docstring. ``retry_backoff`` paces InitProducerId retries; ``on_fatal_error(error)`` is
    called once, on the Sender's thread, when the producer can no longer send."""

    #: Whether batches are transactional (the subclass for transactions says yes).
    is_transactional = False
    #: Sent in ProduceRequests; None for the idempotent producer.
    transactional_id: str | None = None

    def __init__(
        self,
        *,
        retry_backoff: ExponentialBackoff | None = None,
        rng: UniformRandom | None = None,
        on_fatal_error: Callable[[KafkaError], None] | None = None,
    ) -> None:
        self._retry_backoff = (
            retry_backoff if retry_backoff is not None else ExponentialBackoff(100, 1000)
        )
        self._rng: UniformRandom = rng if rng is not None else random.Random()
        self._on_fatal_error = on_fatal_error
        self._producer_id_and_epoch: ProducerIdAndEpoch | None = None
        self._partitions: dict[TopicPartition, _PartitionEntry] = {}
        # InitProducerId: in flight, attempts so far, not before this time.
        self._init_in_flight = False
        self._init_attempts = 0
        self._init_not_before_ms = 0.0
        # An epoch bump asked for: the id/epoch to send, and the partitions to renumber.
        self._bump_from: ProducerIdAndEpoch | None = None
        self._partitions_to_renumber: set[TopicPartition] = set()
        #: Whether the broker answered InitProducerId at v3+ (KIP-360 epoch bumps).
        self.supports_epoch_bump = False
        #: Set once when the producer cannot go on; read by other threads.
        self.fatal_error: KafkaError | None = None

    # ------------------------------------------------------------------ producer id

    @property
    def producer_id_and_epoch(self) -> ProducerIdAndEpoch | None:
        """The current id and epoch; None while one is being obtained."""
        return self._producer_id_and_epoch

    def needs_producer_id(self) -> bool:
        """Whether drains wait for InitProducerId (no id yet, or a bump/reset pending)."""
        return self._producer_id_and_epoch is None

    def init_producer_id_due_in(self, now: float) -> float | None:
        """Milliseconds until InitProducerId may be sent (0: now); None when none is needed
        or one is already in flight."""
        if self._producer_id_and_epoch is not None or self._init_in_flight:
            return None
        if self.fatal_error is not None:
            return None
        return max(0.0, self._init_not_before_ms - now)

    def init_producer_id_request(self) -> InitProducerIdRequest:
        """The request to send now (marks it in flight). After a bump request it names the
        current id and epoch (KIP-360; ignored by brokers before v3)."""
        self._init_in_flight = True
        bump_from = self._bump_from
        return InitProducerIdRequest(
            transactional_id=None,
            transaction_timeout_ms=_IDEMPOTENT_TRANSACTION_TIMEOUT_MS,
            producer_id=bump_from.producer_id if bump_from is not None else -1,
            producer_epoch=bump_from.epoch if bump_from is not None else -1,
        )

    def handle_init_producer_id(
        self,
        error: KafkaError | None,
        producer_id: int,
        producer_epoch: int,
        api_version: int,
        now: float,
    ) -> list[tuple[ProducerBatch, DeliveryOutcomeUnknownError]]:
        """Take InitProducerId's outcome: ``error`` is the connection error or the broker's
        named error (None on success). Returns the batches the caller must fail, each with
        its error: those of unknown outcome in the partitions moved to the new id/epoch."""
        self._init_in_flight = False
        if error is None:
            self.supports_epoch_bump = api_version >= 3
            new = ProducerIdAndEpoch(producer_id, producer_epoch)
            _log.info("producer id %d, epoch %d", producer_id, producer_epoch)
            self._producer_id_and_epoch = new
            self._init_attempts = 0
            self._bump_from = None
            to_fail: list[tuple[ProducerBatch, DeliveryOutcomeUnknownError]] = []
            for tp in self._partitions_to_renumber:
                entry = self._partitions.get(tp)
                if entry is not None:
                    for batch, uncertain in entry.renumber(new):
                        to_fail.append((batch, _unknown_outcome_error(batch, uncertain, new)))
            self._partitions_to_renumber.clear()
            return to_fail
        if error.retriable:
            delay = self._retry_backoff.next_delay(self._init_attempts, self._rng)
            self._init_attempts += 1
            self._init_not_before_ms = now + delay
            _log.warning("InitProducerId failed, retrying in %.0f ms: %s", delay, error)
            return []
        if self._bump_from is not None:
            # A broker that refuses the KIP-360 form (Tansu 0.6 answers UNKNOWN_SERVER_ERROR):
            # a fresh id is as good, sequences restart at 0 under it.
            _log.warning("epoch bump refused (%s): asking for a new producer id", error)
            self._bump_from = None
            return []
        fatal = type(error)(
            f"the idempotent producer could not get a producer id (InitProducerId): {error}; "
            "this producer cannot send: close it and create a new one"
        )
        fatal.__cause__ = error
        self.transition_to_fatal(fatal)
        return []

    def transition_to_fatal(self, error: KafkaError) -> None:
        """Make ``error`` fatal: every later send fails with it."""
        if self.fatal_error is not None:
            return
        _log.error("fatal error of the idempotent producer: %s", error)
        self.fatal_error = error
        if self._on_fatal_error is not None:
            self._on_fatal_error(error)

    def _request_new_epoch(self, tp: TopicPartition | None) -> None:
        """Stop drains until InitProducerId gives a new id/epoch; renumber ``tp`` then."""
        current = self._producer_id_and_epoch
        if current is not None:
            self._bump_from = current if self.supports_epoch_bump else None
            self._producer_id_and_epoch = None
            self._init_attempts = 0
        if tp is not None and self.supports_epoch_bump:
            self._partitions_to_renumber.add(tp)

    # ------------------------------------------------------------------ draining

    def should_stop_drain(self, batch: ProducerBatch) -> bool:
        """Whether ``batch``, first in its partition's queue, must wait (Java's
        ``shouldStopDrainBatchesForPartition``)."""
        current = self._producer_id_and_epoch
        if current is None:
            return True
        entry = self._partitions.get(batch.topic_partition)
        if entry is None or not entry.in_flight:
            return False
        if not batch.has_sequence:
            # Batches of an older id/epoch are still out: a new one starting at sequence 0
            # could be written before them.
            return entry.producer_id_and_epoch != current
        # A retried batch goes only when every earlier sequence has its answer.
        return entry.in_flight[0] is not batch

    def assign_sequence(self, batch: ProducerBatch) -> None:
        """Stamp a batch drained for the first time with the id, epoch and the partition's
        next sequence (a batch that has one keeps it)."""
        if batch.has_sequence:
            return
        current = self._producer_id_and_epoch
        if current is None:  # should_stop_drain() keeps this from happening
            raise RuntimeError("assign_sequence() before the producer has an id")
        tp = batch.topic_partition
        entry = self._partitions.get(tp)
        if entry is None:
            entry = self._partitions[tp] = _PartitionEntry(current)
        elif entry.producer_id_and_epoch != current and not entry.in_flight:
            entry.renumber(current)
        sequence = entry.next_sequence
        batch.set_producer_state(current.producer_id, current.epoch, sequence)
        entry.next_sequence = (sequence + batch.record_count) % _SEQUENCE_LIMIT
        entry.in_flight.append(batch)

    def replace_split_batch(self, batch: ProducerBatch, parts: Sequence[ProducerBatch]) -> None:
        """``batch`` was split into ``parts`` (which inherited its sequences): track them in
        its place."""
        entry = self._partitions.get(batch.topic_partition)
        if entry is None or batch not in entry.in_flight:
            return
        index = entry.in_flight.index(batch)
        kept = [part for part in parts if part.has_sequence]
        entry.in_flight[index : index + 1] = kept
        uncertain = entry.unknown_outcome.pop(batch, None)
        if uncertain is not None:
            for part in kept:
                entry.unknown_outcome[part] = uncertain

    def note_unknown_outcome(self, batch: ProducerBatch, error: KafkaError) -> None:
        """A try of ``batch`` ended with ``error``, which does not say whether the broker
        wrote it (see :func:`leaves_outcome_unknown`): it must never get a new sequence."""
        entry = self._partitions.get(batch.topic_partition)
        if entry is not None and batch in entry.in_flight:
            entry.unknown_outcome[batch] = error

    # ------------------------------------------------------------------ answers

    def handle_completed_batch(self, batch: ProducerBatch) -> None:
        """A batch was acknowledged (or was a duplicate of one that was)."""
        entry = self._remove_in_flight(batch)
        if entry is not None and batch.producer_id_and_epoch == entry.producer_id_and_epoch:
            last = batch.base_sequence + batch.record_count - 1
            entry.last_acked_sequence = max(entry.last_acked_sequence, last)

    def handle_failed_batch(self, batch: ProducerBatch, error: Exception | None = None) -> None:
        """A batch failed for good (with ``error``). If it had a sequence, the broker will
        never see it and later sequences would be out of order: get a new epoch (or id)."""
        entry = self._remove_in_flight(batch)
        if entry is None or self.fatal_error is not None:
            return
        if batch.producer_id_and_epoch == entry.producer_id_and_epoch:
            self._request_new_epoch(batch.topic_partition)

    def error_is_fatal(self, error: KafkaError) -> bool:
        """Whether a produce error ends the producer (fenced: another producer took over, or
        the broker no longer accepts this epoch)."""
        return isinstance(error, _FATAL_PRODUCE_ERRORS)

    def can_retry(self, batch: ProducerBatch, error: KafkaError) -> bool:
        """Whether a batch that got ``error`` may be retried, as far as sequences go (the
        Sender still checks attempts and the delivery timeout). May ask for a new epoch."""
        if isinstance(error, OutOfOrderSequenceNumberError):
            entry = self._partitions.get(batch.topic_partition)
            if entry is not None and batch.producer_id_and_epoch == entry.producer_id_and_epoch:
                expected = (entry.last_acked_sequence + 1) % _SEQUENCE_LIMIT
                if batch.base_sequence != expected:
                    # An earlier batch is still on its way (or being retried): not a gap yet.
                    return True
            elif entry is not None:
                # Numbered under an older epoch and renumbered since: retry under the new one.
                return True
            return self._gap_needs_new_epoch(batch)
        if isinstance(error, UnknownProducerIdError):
            if batch.producer_id_and_epoch != self._partition_state(batch):
                return True  # already renumbered after an earlier answer of the same kind
            return self._gap_needs_new_epoch(batch)
        return error.retriable

    def _partition_state(self, batch: ProducerBatch) -> ProducerIdAndEpoch | None:
        entry = self._partitions.get(batch.topic_partition)
        return entry.producer_id_and_epoch if entry is not None else None

    def _gap_needs_new_epoch(self, batch: ProducerBatch) -> bool:
        if self.supports_epoch_bump:
            self._request_new_epoch(batch.topic_partition)
            return True
        # Before KIP-360 the broker cannot bump an epoch: the batch fails with the broker's
        # named error (handle_failed_batch then resets the producer id).
        return False

    def _remove_in_flight(self, batch: ProducerBatch) -> _PartitionEntry | None:
        entry = self._partitions.get(batch.topic_partition)
        if entry is None:
            return None
        try:
            entry.in_flight.remove(batch)
        except ValueError:
            return None
        entry.unknown_outcome.pop(batch, None)
        return entry

    # ------------------------------------------------------------------ inspecting

    def next_sequence(self, tp: TopicPartition) -> int:
        """The sequence the partition's next new batch gets."""
        entry = self._partitions.get(tp)
        return entry.next_sequence if entry is not None else 0

    def in_flight_sequences(self, tp: TopicPartition) -> list[int]:
        """Base sequences of the partition's batches without a final answer, in order."""
        entry = self._partitions.get(tp)
        return [batch.base_sequence for batch in entry.in_flight] if entry is not None else []


def _unknown_outcome_error(
    batch: ProducerBatch,
    uncertain: KafkaError,
    new: ProducerIdAndEpoch,
) -> DeliveryOutcomeUnknownError:
    producer_id, epoch = batch.producer_id_and_epoch
    error = DeliveryOutcomeUnknownError(
        f"{batch.record_count} record(s) for {batch.topic}-{batch.partition} "
        f"(sent as producer id {producer_id}, epoch {epoch}, sequence {batch.base_sequence}) "
        f"got no definite answer (last: {uncertain}) and the producer moved to producer id "
        f"{new.producer_id}, epoch {new.epoch}: sending them again under it could write them "
        "twice, so they fail; they may or may not be in the log"
    )
    error.__cause__ = uncertain
    return error
