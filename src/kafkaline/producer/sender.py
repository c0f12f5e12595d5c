""":class:`Sender`: the producer's I/O thread, moving batches from the accumulator to brokers.

One pass of the loop (:meth:`Sender.run_once`, Java's ``Sender.runOnce``)::

    result = accumulator.ready(cluster, now)          # leaders with a sendable batch
    unknown leaders          -> metadata.request_update()
    nodes the client is not ready for (connecting, in-flight limit) are dropped
    batches = accumulator.drain(cluster, nodes, max_request_size, now)
    max_in_flight == 1       -> mute the drained partitions (keeps order across retries)
    expired batches, queued or in flight -> fail with DeliveryTimeoutError
    one ProduceRequest per node
    client.poll(min(next ready check, reconnect delay, next expiry))

Responses complete batches on this thread: success with the broker's base offset (records
get ``base_offset + index``, -1 with acks=0) and log-append time; a retriable error
re-enqueues the batch with backoff while ``retries`` and ``delivery_timeout_ms`` allow (and
asks for fresh metadata when the error says the metadata is stale; a NOT_LEADER_OR_FOLLOWER
that names the new leader, Produce v10+, KIP-951, moves the partition there at once and the
retry skips its backoff); MESSAGE_TOO_LARGE splits a batch of several records (KIP-126); any
other error fails the batch with the broker's named error, whose message names the
topic-partition.

With idempotence (an
:class:`~kafkaline.producer.transactions.idempotence.IdempotenceManager`), nothing is drained
until InitProducerId gave a producer id; the accumulator's drain numbers batches and holds
back those that must wait for sequence order; DUPLICATE_SEQUENCE_NUMBER completes a batch
with offset -1; sequence errors retry after an epoch bump or fail with the broker's
named error; INVALID_PRODUCER_EPOCH / PRODUCER_FENCED fail every pending batch for good.

The thread (not a ``threading.Thread`` subclass) is owned by the Sender and started by
:meth:`Sender.start`. It never swallows an exception: if the loop raises, the error is logged
with its traceback, every incomplete batch fails with a
:class:`~kafkaline.errors.SenderFailedError` whose ``__cause__`` is the error, the network
client is closed, and ``on_failure`` tells the producer, which then refuses sends with it.

Closing: :meth:`Sender.initiate_close` stops taking new batches and sends everything that is
buffered or in flight, then closes the network client; :meth:`Sender.force_close` stops at
once, failing every incomplete batch with :class:`~kafkaline.errors.ProducerClosedError`.
"""

from __future__ import annotations

import functools
import logging
import math
import threading
from collections.abc import Callable, Iterator, Mapping
from itertools import chain

from kafkaline.errors import (
    AuthenticationError,
    KafkaError,
    ProducerClosedError,
    SenderFailedError,
)
from kafkaline.net.cluster import ClusterMetadata
from kafkaline.net.response import ClientResponse
from kafkaline.producer.accumulator import RecordAccumulator
from kafkaline.producer.batch import ProducerBatch
from kafkaline.producer.batch_outcomes import BatchOutcomes
from kafkaline.producer.futures import SUCCEEDED, mark_io_thread
from kafkaline.producer.metrics import SenderCounters
from kafkaline.producer.sender_client import SenderClient, SenderMetadata
from kafkaline.producer.sender_requests import TransactionRequests
from kafkaline.producer.transactions.idempotence import IdempotenceManager
from kafkaline.producer.transactions.manager import TransactionManager
from kafkaline.protocol.api import ProduceResponse
from kafkaline.protocol.api.produce import new_produce_request
from kafkaline.protocol.schema import Records

__all__ = ["Sender", "SenderClient", "SenderMetadata"]

_log = logging.getLogger(__name__)


class Sender:
    """Drives the network client and completes batches; see the module docstring.

    ``acks``, ``request_timeout_ms``, ``max_request_size`` and ``retries`` are the producer's
    settings; ``guarantee_message_order`` (``max_in_flight_requests_per_connection == 1``)
    mutes a partition while a batch of it is in flight. ``counters`` receives the metrics.
    ``on_metadata_update(cluster)`` is called on this thread whenever the client installs new
    cluster metadata; ``on_failure(error)`` once if the loop dies. ``transaction_manager``
    turns idempotence on (see the module docstring).

    Unit tests drive :meth:`run_once` directly with a fake client and clock; the producer
    calls :meth:`start`.
    """

    def __init__(
        self,
        client: SenderClient,
        accumulator: RecordAccumulator,
        *,
        acks: int,
        request_timeout_ms: int,
        max_request_size: int,
        retries: int,
        guarantee_message_order: bool,
        counters: SenderCounters | None = None,
        name: str = "kafkaline-producer-network-thread",
        on_metadata_update: Callable[[ClusterMetadata], None] | None = None,
        on_failure: Callable[[SenderFailedError], None] | None = None,
        transaction_manager: IdempotenceManager | None = None,
    ) -> None:
        self._client = client
        self._metadata = client.metadata
        self._accumulator = accumulator
        self._acks = acks
        self._request_timeout_ms = request_timeout_ms
        self._max_request_size = max_request_size
        self._retries = retries
        self._guarantee_order = guarantee_message_order
        self._delivery_timeout_ms = accumulator.delivery_timeout_ms
        self._counters = counters if counters is not None else SenderCounters()
        self._name = name
        self._on_metadata_update = on_metadata_update
        self._on_failure = on_failure
        # Idempotence (None: off). Its fatal error is acted on once, see _abort_on_fatal.
        self._transactions = transaction_manager
        self._fatal_handled = False
        # Produce requests sent and not answered: a new producer id/epoch is asked for only
        # when none is left, so every batch it renumbers has its final answer.
        self._produce_requests_in_flight = 0
        self._outcomes = BatchOutcomes(
            accumulator,
            self._metadata,
            self._counters,
            transactions=transaction_manager,
            guarantee_order=guarantee_message_order,
            retries=retries,
            on_reenqueued=self._reenqueued,
            on_fatal=self._abort_on_fatal,
        )
        # Batches sent and not answered (the outcomes' set, which the drain adds to): they
        # expire at delivery_timeout_ms too, checked no sooner than the earliest expiry.
        self._in_flight = self._outcomes.in_flight
        self._in_flight_expiry_ms = math.inf
        # When a queued batch may first expire (see _expired_queued).
        self._queued_expiry_ms = -math.inf
        self._last_cluster: ClusterMetadata | None = None
        self._running = True
        self._forced = False
        self._failure: SenderFailedError | None = None
        self._thread: threading.Thread | None = None
        self._txn_requests = TransactionRequests(
            client, self._metadata, accumulator, self._outcomes.fail_batch
        )

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Start the I/O thread (a daemon, as Java's: close or flush the producer before
        the interpreter exits, or buffered records are lost)."""
        if self._thread is not None:
            raise RuntimeError("the Sender was already started")
        thread = threading.Thread(target=self._run, name=self._name, daemon=True)
        self._thread = thread
        thread.start()

    def initiate_close(self) -> None:
        """Graceful close: no new batches; send what is buffered and in flight, then stop."""
        self._accumulator.close()
        self._running = False
        self.wakeup()

    def force_close(self) -> None:
        """Forced close: stop at once; incomplete batches fail with ProducerClosedError."""
        self._forced = True
        self._outcomes.forced = True
        self.initiate_close()

    def join(self, timeout: float | None = None) -> bool:
        """Wait up to ``timeout`` seconds for the thread to end; return whether it ended (also
        when it never started)."""
        thread = self._thread
        if thread is None:
            return True
        thread.join(timeout)
        return not thread.is_alive()

    def wakeup(self) -> None:
        """Interrupt the thread's poll: new data to send, a flush, a close. Any thread."""
        self._client.wakeup()

    def is_sender_thread(self) -> bool:
        """Whether the calling thread is the Sender's (e.g. a callback calling close())."""
        return self._thread is not None and threading.current_thread() is self._thread

    @property
    def is_alive(self) -> bool:
        """Whether the thread runs."""
        return self._thread is not None and self._thread.is_alive()

    @property
    def failure(self) -> SenderFailedError | None:
        """Why the thread died, if it did."""
        return self._failure

    @property
    def counters(self) -> SenderCounters:
        """The metrics counters this Sender updates."""
        return self._counters

    # ------------------------------------------------------------------ the loop

    def _run(self) -> None:
        mark_io_thread()
        try:
            while self._running:
                self.run_once()
            # Closing: send what is left unless forced (Java's Sender.run).
            while not self._forced and (
                self._accumulator.has_undrained() or self._client.in_flight_request_count() > 0
            ):
                self.run_once()
            if self._forced:
                self._accumulator.abort_incomplete_batches()
            elif self._accumulator.has_incomplete():  # pragma: no cover - a bug if it happens
                self._accumulator.abort_incomplete_batches(
                    ProducerClosedError("the producer closed before the record was acknowledged")
                )
            self._client.close()
        except BaseException as error:  # also SystemExit etc.: the records must not hang
            self._die(error)

    def _die(self, error: BaseException) -> None:
        if isinstance(error, AuthenticationError):
            # Expected, not a bug: one line (no traceback) and the records fail with the
            # refusal itself, which names what the broker or the TLS handshake refused.
            _log.error(
                "the producer's I/O thread %r stopped: %s; every pending record fails with it",
                self._name,
                error,
            )
        else:
            _log.error(
                "the producer's I/O thread %r failed; every pending record fails with this error",
                self._name,
                exc_info=error,
            )
        failure = SenderFailedError(
            f"the producer's I/O thread stopped on an unexpected error: {error!r}; "
            "close this producer and create a new one"
        )
        failure.__cause__ = error
        self._failure = failure
        self._running = False
        # Each step on its own: a failure in one must not skip the next. Failures are logged.
        if self._on_failure is not None:
            try:
                self._on_failure(failure)
            except Exception:
                _log.exception("the producer's failure handler raised")
        try:
            self._accumulator.abort_incomplete_batches(
                error if isinstance(error, AuthenticationError) else failure
            )
        except Exception:
            _log.exception("aborting the batches after the I/O thread failed raised too")
        try:
            self._client.close()
        except Exception:
            _log.exception("closing the network client after the I/O thread failed raised too")

    def run_once(self, now: float | None = None) -> None:
        """One pass: send what is ready, then poll the network (see the module docstring)."""
        if now is None:
            now = self._client.now()
        poll_timeout = self.send_producer_data(now)
        # The pass's time, as Java's Sender gives it: the poll reads the clock again after
        # waiting (one clock read less per pass).
        self._client.poll(poll_timeout, now)
        cluster = self._metadata.cluster
        if cluster is not self._last_cluster:
            self._last_cluster = cluster
            if self._on_metadata_update is not None:
                self._on_metadata_update(cluster)

    def send_producer_data(self, now: float) -> float:
        """Drain ready batches into produce requests and expire old ones; return how long
        the next poll may wait (ms)."""
        transactions = self._transactions
        txn_timeout = math.inf
        if transactions is not None:
            if transactions.fatal_error is not None:
                self._abort_on_fatal(transactions.fatal_error)
            if isinstance(transactions, TransactionManager):
                txn_timeout = self._txn_requests.send_transactional_request(transactions, now)
            if transactions.needs_producer_id():
                # Nothing is drained without an id (Java's maybeSendAndPollTransactionalRequest).
                return min(self._wait_for_producer_id(transactions, now), txn_timeout)
        accumulator = self._accumulator
        cluster = self._metadata.cluster
        ready_nodes, poll_timeout, unknown_leader_topics = accumulator.ready(cluster, now)
        if unknown_leader_topics:
            for topic in unknown_leader_topics:
                self._metadata.add_topic(topic, now)
            self._metadata.request_update()
        # Records sent one at a time: every other pass has nothing ready (the one after the
        # answer, before the caller's next send()), so draining is skipped then.
        drained: dict[int, list[ProducerBatch]] | None = None
        if ready_nodes:
            drained, poll_timeout = self._drain_ready_nodes(cluster, ready_nodes, poll_timeout, now)
        if (
            transactions is not None
            and isinstance(transactions, TransactionManager)
            and transactions.has_new_partitions()
        ):
            # The drain held back batches of partitions not yet in the transaction: add them
            # now, or this pass's poll could sleep with nothing else to wake it.
            txn_timeout = min(
                txn_timeout, self._txn_requests.send_transactional_request(transactions, now)
            )
        if now >= self._queued_expiry_ms or now >= self._in_flight_expiry_ms:
            self._fail_expired(now)
        sent = False
        if drained is not None:
            for node, batches in drained.items():
                if batches:
                    self._send_produce_request(node, batches, now)
                    sent = True
        # Comparisons rather than min() and max() (a call costs more): this runs twice per
        # record sent one at a time.
        if txn_timeout < poll_timeout:
            poll_timeout = txn_timeout
        delay = self._queued_expiry_ms - now
        if delay < poll_timeout:
            poll_timeout = delay
        delay = self._in_flight_expiry_ms - now
        if delay < poll_timeout:
            poll_timeout = delay
        if sent and accumulator.has_queued_batches():
            # More may be ready than one drain took (one batch per partition): come back at
            # once, as Java does, if a batch is still queued (a later append wakes the poll).
            poll_timeout = 0.0
        return poll_timeout if poll_timeout > 0.0 else 0.0

    def _drain_ready_nodes(
        self, cluster: ClusterMetadata, ready_nodes: set[int], poll_timeout: float, now: float
    ) -> tuple[dict[int, list[ProducerBatch]] | None, float]:
        """Drain the batches of the nodes the client is ready for (starting connections to
        the others) and track them as in flight; also return the poll timeout, lowered to
        the nearest reconnect."""
        accumulator = self._accumulator
        client = self._client
        track_latency = accumulator.tracks_node_latency
        for node in list(ready_nodes):
            if client.ready(node, now):
                if track_latency:
                    accumulator.update_node_latency_stats(node, now, True)
            else:
                if track_latency:
                    accumulator.update_node_latency_stats(node, now, False)
                ready_nodes.discard(node)
                delay = client.connection_delay(node, now)
                if delay < poll_timeout:
                    poll_timeout = delay
        if not ready_nodes:
            return None, poll_timeout
        drained = accumulator.drain(cluster, ready_nodes, self._max_request_size, now)
        in_flight = self._in_flight
        earliest = math.inf
        for batches in drained.values():
            if not batches:
                continue
            in_flight.update(batches)  # one call, not one per batch
            for batch in batches:
                if batch.created_ms < earliest:
                    earliest = batch.created_ms
            if self._guarantee_order:
                for batch in batches:
                    accumulator.mute(batch.topic_partition)
        expiry = earliest + self._delivery_timeout_ms
        if expiry < self._in_flight_expiry_ms:
            self._in_flight_expiry_ms = expiry
        return drained, poll_timeout

    def _reenqueued(self, batch: ProducerBatch) -> None:
        # Back in the queue with its old creation time: it may expire before the next scan.
        self._queued_expiry_ms = min(
            self._queued_expiry_ms, batch.created_ms + self._delivery_timeout_ms
        )

    def _warn_unrequested(self, node_id: int, topic: str, partition: int) -> None:
        _log.warning(
            "node %d answered for %s-%d, which was not in the request", node_id, topic, partition
        )

    # ------------------------------------------------------------------ idempotence

    def _wait_for_producer_id(self, transactions: IdempotenceManager, now: float) -> float:
        # Their answers (which end the poll) decide which batches may be renumbered.
        timeout = (
            math.inf
            if self._produce_requests_in_flight
            else self._txn_requests.send_init_producer_id(transactions, now)
        )
        self._fail_expired(now)
        return max(
            0.0,
            min(timeout, self._queued_expiry_ms - now, self._in_flight_expiry_ms - now),
        )

    def _abort_on_fatal(self, error: KafkaError) -> None:
        if self._fatal_handled:
            return
        self._fatal_handled = True
        # Every pending record fails with the fatal error; the producer refuses new ones.
        self._accumulator.abort_incomplete_batches(error)
        self._in_flight.clear()

    def _fail_expired(self, now: float) -> None:
        timeout = self._delivery_timeout_ms
        for batch in self._expired_queued(now) + self._expired_in_flight(now):
            self._outcomes.fail_batch(batch, batch.delivery_timeout_error(timeout, now))

    def _expired_queued(self, now: float) -> list[ProducerBatch]:
        # Scanning every queue takes every queue's lock, and an appending thread that meets
        # one held waits for a GIL hand-over (docs/performance.md, Notes moved from the
        # code). So scan only when a batch can have expired: the oldest queued batch's
        # expiry, or a timeout after the last scan for batches created since (re-enqueued
        # ones lower the bound, see _reenqueued).
        if now < self._queued_expiry_ms:
            return []
        expired = self._accumulator.expired_batches(now)
        self._queued_expiry_ms = min(
            self._accumulator.next_expiry_time_ms, now + self._delivery_timeout_ms
        )
        return expired

    def _expired_in_flight(self, now: float) -> list[ProducerBatch]:
        if not self._in_flight:
            # Answered since the bound was set: a bound left in the past would make every
            # later poll return at once (an idle producer spinning).
            self._in_flight_expiry_ms = math.inf
            return []
        if now < self._in_flight_expiry_ms:
            return []
        expired: list[ProducerBatch] = []
        next_expiry = math.inf
        timeout = self._delivery_timeout_ms
        for batch in list(self._in_flight):
            if batch.has_reached_delivery_timeout(timeout, now):
                # Its partition stays muted until the response (or the request's timeout)
                # comes: a retry must not overtake a request that may still succeed.
                self._in_flight.discard(batch)
                expired.append(batch)
            else:
                next_expiry = min(next_expiry, batch.created_ms + timeout)
        self._in_flight_expiry_ms = next_expiry
        return expired

    # ------------------------------------------------------------------ requests

    def _send_produce_request(self, node: int, batches: list[ProducerBatch], now: float) -> None:
        # Per topic, partition -> batch: the response's loop pops its answers from it.
        by_topic: dict[str, dict[int, ProducerBatch]] = {}
        topic_data: dict[str, list[tuple[int, Records]]] = {}
        size = 0
        largest = 0
        records = 0
        queue_times: list[float] = []
        topic: str | None = None
        partitions: list[tuple[int, Records]] = []
        topic_batches: dict[int, ProducerBatch] = {}
        in_flight = self._in_flight
        # Per batch, the builder is used directly (ProducerBatch.build, record_count and
        # final_state are each a call or two more): see the note in _handle_produce_response.
        for batch in batches:
            if batch not in in_flight:
                continue  # expired during this pass (failing it took it out of the set)
            tp = batch.topic_partition
            builder = batch.builder
            wire = builder.build_buffer()
            wire_size = len(wire)
            size += wire_size
            if wire_size > largest:
                largest = wire_size
            records += len(builder)
            queue_times.append(now - batch.created_ms)
            if tp.topic != topic:  # a node's partitions come grouped by topic
                topic = tp.topic
                partitions = topic_data.setdefault(topic, [])
                topic_batches = by_topic.setdefault(topic, {})
            partitions.append((tp.partition, wire))
            topic_batches[tp.partition] = batch
        if not topic_data:
            return
        request = new_produce_request(
            self._transactions.transactional_id if self._transactions is not None else None,
            self._acks,
            self._request_timeout_ms,
            topic_data,
        )
        on_complete = functools.partial(self._handle_produce_response, by_topic)
        try:
            self._client.send(node, request, on_complete, now)
        except KafkaError as error:
            # The request could not even be queued (no version the broker shares, a value
            # the version cannot encode): its batches fail or retry like an answered error.
            _log.warning("could not send a produce request to node %d: %s", node, error)
            for batch in _batches_of(by_topic):
                self._outcomes.complete_with_error(batch, error, now)
            return
        self._produce_requests_in_flight += 1
        self._counters.record_request(
            records=records,
            size_bytes=size,
            queue_times_ms=queue_times,
            largest_batch_bytes=largest,
        )
        for topic in topic_data:
            # Keeps the topic in the metadata requests (unused topics expire from them).
            self._metadata.add_topic(topic, now)

    def _handle_produce_response(
        self, by_topic: dict[str, dict[int, ProducerBatch]], response: ClientResponse
    ) -> None:
        self._produce_requests_in_flight -= 1
        now = response.completed_at_ms
        produce = response.response
        if response.error is not None or produce is None:
            self._handle_unanswered_request(by_topic, response)
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
        # Successes are completed here (Sender._complete written out) and taken out of the
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
            self._outcomes.fail_unanswered(list(_batches_of(by_topic)), response.node_id)

    def _handle_unanswered_request(
        self, by_topic: dict[str, dict[int, ProducerBatch]], response: ClientResponse
    ) -> None:
        """A produce request that failed as a whole (``response.error``: connection lost,
        timed out), or that expects no answer (acks=0) and was written to the socket."""
        self._counters.record_response(
            latency_ms=response.completed_at_ms - response.sent_at_ms, throttle_ms=0.0
        )
        if response.error is not None:
            self._outcomes.fail_request(list(_batches_of(by_topic)), response.error, response)
            return
        for batch in list(_batches_of(by_topic)):
            self._outcomes.complete(batch, -1, -1)


#: A topic the request did not name: no batch to pop.
_NO_BATCHES: dict[int, ProducerBatch] = {}


def _batches_of(by_topic: Mapping[str, Mapping[int, ProducerBatch]]) -> Iterator[ProducerBatch]:
    """The batches of a request's map, topic by topic."""
    return chain.from_iterable(batches.values() for batches in by_topic.values())
