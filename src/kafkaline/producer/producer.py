""":class:`Producer`: the public Kafka producer.

``send()`` runs on the caller's thread: interceptors (if any), serializers (if any), the
topic's partition count (waited for up to ``max_block_ms`` on the first send to a topic, then
cached), the partition, and :meth:`RecordAccumulator.append
<kafkaline.producer.accumulator.RecordAccumulator.append>`; it wakes the Sender only when a
batch is new or full. Everything else (encoding, requests, retries, completing futures) runs
on the Sender's thread, started by the first send (or :meth:`Producer.start`).

With the compiled record core, the common case (bytes or None, no headers, a known topic, an
open batch with room) is one C call at the top of ``send()``
(:meth:`RecordAccumulator.open_batch_sender
<kafkaline.producer.accumulator.RecordAccumulator.open_batch_sender>`). When that call has
chosen the partition (the record's own, or its key's) and the partition's batch has no room,
it goes on with the general path's last step, :meth:`Producer._send_to_new_batch`. Every
other record, and every record of the pure-Python build, takes the general path described
above, which is the reference for what that call does.

Life cycle decisions (close, a failed I/O thread, fork): see :mod:`kafkaline.producer.lifecycle`.
"""

from __future__ import annotations

import functools
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from kafkaline.config import ProducerConfig
from kafkaline.errors import KafkaError, SenderFailedError
from kafkaline.net.client import NetworkClient
from kafkaline.net.cluster import ClusterMetadata, PartitionMetadata
from kafkaline.producer.accumulator import OpenBatchSender, RecordAccumulator
from kafkaline.producer.bulk.result import BatchSendResult
from kafkaline.producer.futures import FutureRecordMetadata
from kafkaline.producer.interceptors import InterceptorChain
from kafkaline.producer.interceptors import acknowledge_to as _acknowledge_to
from kafkaline.producer.lifecycle import (
    Gate,
    close_user_objects,
    flush_sender,
    gate_error,
    nothing,
    register_fork_handler,
    start_sender,
    stop_sender,
    transactions_for,
)
from kafkaline.producer.metadata_wait import TopicMetadata
from kafkaline.producer.metrics import ProducerMetrics, SenderCounters
from kafkaline.producer.partitioner import Partitioner
from kafkaline.producer.send_steps import (
    PLAIN,
    PartitionChooser,
    config_of,
    intercepted,
    key_partitioner,
    record_failed,
    serialize,
    serializer_or_none,
)
from kafkaline.producer.sender import Sender
from kafkaline.producer.transactions import calls as transaction_calls
from kafkaline.producer.transactions.manager import TransactionManager
from kafkaline.producer.transactions.state import TransactionIdentity
from kafkaline.producer.validation import (
    RECORD_SIZE_OVERHEAD,
    check_headers,
    check_payload_size,
    check_timestamp,
)
from kafkaline.record import Headers

if TYPE_CHECKING:
    from kafkaline.producer.bulk.sender import BulkSender

__all__ = ["Producer"]

_time_ns = time.time_ns
_monotonic = time.monotonic


class Producer:
    """A Kafka producer: ``send()`` batches records per partition; a background thread (the
    Sender) sends them and completes their futures.

    ``Producer(**settings)`` takes :class:`~kafkaline.ProducerConfig`'s settings as keywords;
    ``Producer(config)`` a ProducerConfig (keywords given too change it);
    :meth:`from_properties` Java-style properties. Nothing happens until the first send (or
    :meth:`start`): no thread, no socket. Thread-safe: share one producer between threads.

    Example::

        from kafkaline import Producer

        with Producer(bootstrap_servers="127.0.0.1:9092", linger_ms=5) as producer:
            future = producer.send("events", b"payload", key=b"user-1", headers=[("h", b"v")])
            metadata = future.get(timeout=10)      # RecordMetadata(topic, partition, offset, ...)
            producer.flush()
        # leaving the block closed it: everything buffered was sent first
    """

    def __init__(self, config: ProducerConfig | None = None, /, **settings: Any) -> None:
        self._config = config = config_of(config, settings)
        self._interceptors: InterceptorChain | None = (
            InterceptorChain(config.interceptors) if config.interceptors else None
        )
        self._key_serializer = serializer_or_none(config.key_serializer)
        self._value_serializer = serializer_or_none(config.value_serializer)
        self._serializers = (self._key_serializer, self._value_serializer)
        self._serializing = self._key_serializer is not None or self._value_serializer is not None
        self._partitioner: Partitioner | None = config.partitioner
        # Keyed records hash with murmur2 unless a custom partitioner or ignore_keys says no.
        keyed = config.partitioner is None and not config.partitioner_ignore_keys
        keying = key_partitioner() if keyed else None
        self._key_partition = None if keying is None else keying.partition_for_key
        self._max_block_ms = float(config.max_block_ms)
        self._topics = TopicMetadata(self._max_block_ms)
        self._partition_chooser = PartitionChooser(
            self._topics, keying, self._partitioner, self._max_block_ms
        )
        # Key + value bytes above which send() checks the record's full size bound.
        self._payload_limit = min(config.max_request_size, config.buffer_memory) - (
            RECORD_SIZE_OVERHEAD
        )
        self._check_size = functools.partial(
            check_payload_size,
            max_request_size=config.max_request_size,
            buffer_memory=config.buffer_memory,
        )
        self._counters = SenderCounters()
        # Idempotence and transactions: one object (None when idempotence is off), a
        # TransactionManager with a transactional_id, shared with the accumulator and Sender.
        self._transactions = transactions_for(config, self._on_fatal_error)
        # The same object when the producer has a transactional_id (send() reads it), else None.
        self._transactional = (
            self._transactions if isinstance(self._transactions, TransactionManager) else None
        )
        self._accumulator = RecordAccumulator.from_config(
            config, transaction_manager=self._transactions
        )
        self._metrics = ProducerMetrics(
            self._counters,
            start_ms=_monotonic() * 1000.0,
            buffer_pool=self._accumulator.buffer_pool,
            batch_stats=self._accumulator.batch_stats,
        )
        self._lock = threading.Lock()
        self._gate: Gate | None = Gate.NOT_STARTED
        self._closed = False
        self._sender: Sender | None = None
        self._wakeup: Callable[[], None] = nothing
        self._owner_pid = 0
        self._core_send = self._bind_core_send()

    def _bind_core_send(self) -> OpenBatchSender | None:
        """send()'s common case in one compiled call, when the producer has nothing that must
        see each record: no interceptors, serializers, transaction checks or custom
        partitioner (None then, and with the pure-Python core)."""
        if (
            self._key_partition is None
            or self._interceptors is not None
            or self._serializing
            or self._config.transactional_id is not None
        ):
            return None
        core_send = self._accumulator.open_batch_sender(self._payload_limit)
        if core_send is not None:
            core_send.partition_counts = self._topics.counts
            core_send.new_batch = self._accumulator.new_batch_step(
                self._send_to_new_batch, lambda: self._wakeup()
            )
            if type(self).send is Producer.send:  # (a subclass's own send() stays)
                # Then producer.send is the compiled call; what it declines takes send().
                core_send.fallback = self.send
                self.__dict__["send"] = core_send
        return core_send

    @classmethod
    def from_properties(cls, properties: Mapping[str, object]) -> Producer:
        """A producer from Java-style properties (``{"bootstrap.servers": "h:9092",
        "linger.ms": "5"}``), see :meth:`ProducerConfig.from_properties
        <kafkaline.ProducerConfig.from_properties>`."""
        return cls(ProducerConfig.from_properties(properties))

    @property
    def config(self) -> ProducerConfig:
        """The producer's configuration."""
        return self._config

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Start the I/O thread now rather than at the first send. Idempotent; raises
        ProducerClosedError after :meth:`close`."""
        self._pass_gate()

    def _pass_gate(self) -> None:
        if self._gate is Gate.NOT_STARTED:
            with self._lock:
                if self._gate is Gate.NOT_STARTED:
                    self._start_locked()
        gate = self._gate
        if gate is not None:
            raise self._gate_error(gate)

    def _start_locked(self) -> None:
        config = self._config
        client = NetworkClient.from_config(config)
        try:
            sender = start_sender(
                client,
                self._accumulator,
                config,
                self._counters,
                on_metadata_update=self._on_metadata_update,
                on_failure=self._on_sender_failure,
                transactions=self._transactions,
            )
        except BaseException:
            client.close()  # never polled: safe from this thread
            raise
        self._sender = sender
        self._topics.client = client
        self._topics.cluster = client.metadata.cluster
        self._wakeup = sender.wakeup
        if self._transactional is not None:
            self._transactional.set_wakeup(sender.wakeup)
        self._owner_pid = os.getpid()
        register_fork_handler(self._forked)
        # The Sender may already have failed (it starts above and can die within
        # milliseconds, e.g. on an authentication refusal): never overwrite that with "open".
        if self._gate is Gate.NOT_STARTED:
            self._set_gate(None)

    def _set_gate(self, gate: Gate | None) -> None:
        # The compiled send() goes straight on only while the gate is open; everything else
        # takes the general path, which raises the gate's error.
        self._gate = gate
        if self._core_send is not None:
            self._core_send.open = gate is None

    def _gate_error(self, gate: Gate) -> Exception:
        return gate_error(
            gate, owner_pid=self._owner_pid, sender=self._sender, transactions=self._transactions
        )

    def _forked(self) -> None:
        # In the child, right after fork(): only a flag, no lock (a parent's thread may have
        # held one, and it does not exist here to release it).
        self._set_gate(Gate.FORKED)

    def _on_sender_failure(self, failure: SenderFailedError) -> None:
        self._shut_gate(Gate.FAILED)

    def _on_fatal_error(self, error: KafkaError) -> None:
        self._shut_gate(Gate.FATAL)

    def _shut_gate(self, gate: Gate) -> None:
        # The Sender's thread: from now on send() raises the gate's error (see _gate_error).
        # Under the lock: _start_locked() must not reopen the gate after this.
        with self._lock:
            if self._gate is not Gate.FORKED:
                self._set_gate(gate)

    def _on_metadata_update(self, cluster: ClusterMetadata) -> None:
        counts = self._topics.update(cluster)
        if self._core_send is not None:
            self._core_send.partition_counts = counts

    def close(self, timeout: float | None = None) -> None:
        """Send what is buffered, stop the I/O thread and close every connection.

        ``timeout`` (seconds; ``None``: as long as it takes, bounded by
        ``delivery_timeout_ms``) limits the wait; what is still unsent then is aborted.
        ``close(0)`` aborts at once: unsent records fail with
        :class:`~kafkaline.errors.ProducerClosedError`. With a ``timeout`` it returns at most
        about half a second after it, even if a callback blocks the I/O thread (the records
        left fail once that callback returns). Idempotent. Called from a callback on the I/O
        thread, it cannot wait for that thread: it closes forcefully.
        """
        if self._gate is Gate.FORKED:
            self._closed = True  # the thread and sockets belong to the parent
            return
        with self._lock:
            first = not self._closed
            self._closed = True
            if self._gate is None or self._gate is Gate.NOT_STARTED:
                self._set_gate(Gate.CLOSED)
            sender = self._sender
        if sender is not None:
            stop_sender(sender, timeout)
        if first:
            close_user_objects(
                self._interceptors,
                (
                    ("key_serializer", self._key_serializer),
                    ("value_serializer", self._value_serializer),
                    ("partitioner", self._partitioner),
                ),
            )

    def __enter__(self) -> Producer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ------------------------------------------------------------------ sending

    def send(
        self,
        topic: str,
        value: Any = None,
        key: Any = None,
        headers: Headers | None = None,
        partition: int | None = None,
        timestamp_ms: int | None = None,
    ) -> FutureRecordMetadata:
        """Queue a record for ``topic`` and return its future at once.

        ``value``, ``key``: bytes or what their serializers take (``None``: a Kafka null);
        ``headers``: ``(str, bytes | None)`` pairs; ``partition``: default murmur2 of the key,
        else the sticky partitioner; ``timestamp_ms``: default now. Blocks (up to
        ``max_block_ms``) only for a topic's first metadata and a full ``buffer_memory``. Bad
        input raises at once, naming it (docs/producer.md, "What happens on errors").

        >>> producer.send("events", b"v", key=b"k").get(timeout=10).offset  # doctest: +SKIP
        42
        """
        if self._gate is not None:  # (the compiled core's send() declined this record)
            self._pass_gate()
        if self._transactional is not None:
            self._transactional.check_send_allowed()
        interceptors = self._interceptors
        try:
            if interceptors is not None:
                topic, value, key, headers, partition, timestamp_ms = intercepted(
                    interceptors, topic, value, key, headers, partition, timestamp_ms
                )
            if headers is not None:
                headers = check_headers(headers)
            if self._serializing or type(key) not in PLAIN or type(value) not in PLAIN:
                key, value = serialize(self._serializers, topic, key, value, headers)
            timestamp = (
                _time_ns() // 1_000_000 if timestamp_ms is None else check_timestamp(timestamp_ms)
            )
            size = (0 if key is None else len(key)) + (0 if value is None else len(value))
            if headers is not None or size > self._payload_limit:
                self._check_size(topic, size, headers)
            partition, wait_ms = self._partition_chooser.choose(topic, partition, key, value)
            now = _monotonic() * 1000.0
            future, batch_is_full, new_batch = self._accumulator.append(
                topic, partition, timestamp, key, value, headers, wait_ms, now, self._topics.cluster
            )
        except Exception as error:
            self._raise_failed(error, topic, partition, interceptors)
        if batch_is_full or new_batch:
            self._wakeup()
        if interceptors is not None:
            _acknowledge_to(interceptors, future)
        return future

    def _send_to_new_batch(
        self, topic: str, partition: int, timestamp: int, key: bytes | None, value: bytes | None
    ) -> FutureRecordMetadata:
        """The end of send()'s general path, for a record the compiled send() checked and
        placed (bytes or None, no headers, its own partition or its key's, a topic whose
        partitions are known) when the partition has no batch with room for it."""
        try:
            future, batch_is_full, new_batch = self._accumulator.append_to_new_batch(
                topic, partition, timestamp, key, value, self._max_block_ms, _monotonic() * 1000.0
            )
        except Exception as error:
            self._raise_failed(error, topic, partition, None)
        if batch_is_full or new_batch:
            self._wakeup()
        return future

    def send_batch(
        self,
        topic: str,
        values: Sequence[Any],
        keys: Sequence[Any] | None = None,
        headers: Sequence[Headers | None] | None = None,
        partition: int | None = None,
    ) -> BatchSendResult:
        """Queue many records for ``topic`` in one call; return one
        :class:`~kafkaline.producer.bulk.BatchSendResult` for all of them.

        ``values`` and ``keys`` are parallel sequences, ``headers`` one header list (or
        ``None``) per record; records go where :meth:`send` would put them, in input order per
        partition. Bad input raises before anything is queued, naming the record's index; see
        docs/producer.md, "Sending many records at once", for the details.

        >>> result = producer.send_batch("t", [b"a", b"b"], keys=[b"k1", b"k2"])  # doctest: +SKIP
        >>> [m.partition for m in result.get(timeout=10)]                         # doctest: +SKIP
        [3, 0]
        """
        if self._gate is not None:
            self._pass_gate()
        return self._bulk.send_batch(topic, values, keys, headers, partition)

    def send_arrow(
        self,
        topic: str,
        data: Any,
        key: str | None = "key",
        value: str = "value",
        headers: str | None = None,
        partition: str | None = None,
        timestamp: str | None = None,
    ) -> BatchSendResult:
        """:meth:`send_batch` for a pyarrow ``RecordBatch`` or ``Table``: one record per row,
        from the columns named ``key`` (``None``: no keys), ``value`` and optionally
        ``headers``, ``partition`` and ``timestamp``. Needs pyarrow (the ``spark`` extra). The
        column types and errors: docs/producer.md, "Sending many records at once".

        >>> batch = pyarrow.record_batch({"key": [b"k"], "value": [b"v"]})  # doctest: +SKIP
        >>> producer.send_arrow("events", batch).get(timeout=10)             # doctest: +SKIP
        """
        if self._gate is not None:
            self._pass_gate()
        return self._bulk.send_arrow(topic, data, key, value, headers, partition, timestamp)

    @functools.cached_property
    def _bulk(self) -> BulkSender:
        """send_batch()'s and send_arrow()'s sender, made (and imported) at the first one."""
        from kafkaline.producer.bulk.sender import BulkSender

        transactional = self._transactional
        return BulkSender(
            self._config,
            self._accumulator,
            key_serializer=self._key_serializer,
            value_serializer=self._value_serializer,
            key_partition=self._key_partition,
            partition_count=self._topics.partition_count,
            cluster=lambda: self._topics.cluster,
            wakeup=lambda: self._wakeup(),  # (the Sender's, once started)
            translate_error=lambda error, topic, partition: self._send_failed(
                error, topic, partition, None
            ),
            check_send_allowed=None if transactional is None else transactional.check_send_allowed,
            send_one=None if self._interceptors is None else self.send,
        )

    def _send_failed(
        self,
        error: Exception,
        topic: str,
        partition: int | None,
        interceptors: InterceptorChain | None,
    ) -> Exception | None:
        """See :func:`~kafkaline.producer.send_steps.record_failed`."""
        gate = self._gate
        gate_error = None if gate is None else self._gate_error(gate)
        return record_failed(error, topic, partition, interceptors, gate_error)

    def _raise_failed(
        self,
        error: Exception,
        topic: str,
        partition: int | None,
        interceptors: InterceptorChain | None,
    ) -> NoReturn:
        """Raise what a record call's ``error`` is for the user (:meth:`_send_failed`)."""
        replacement = self._send_failed(error, topic, partition, interceptors)
        if replacement is not None:
            raise replacement from error
        raise error

    # ------------------------------------------------------------------ flushing, metadata

    def flush(self, timeout: float | None = None) -> None:
        """Make every buffered record sendable now and wait until all records sent before
        this call are acknowledged or failed (their futures are done).

        As in Java, when it returns every callback of those records has run too.

        ``timeout`` in seconds (``None``: no limit); raises
        :class:`~kafkaline.errors.KafkaTimeoutError` when it runs out (the records stay
        buffered). Returns at once before the first send and after :meth:`close`. Raises
        SenderFailedError if the I/O thread died, ProducerForkedError in a forked child.
        """
        gate = self._gate
        if gate is Gate.NOT_STARTED or gate is Gate.CLOSED:
            return
        if gate is not None:
            raise self._gate_error(gate)
        sender = self._sender
        if sender is None:  # pragma: no cover - started when the gate is None
            return
        flush_sender(sender, self._accumulator, timeout)
        if self._gate is Gate.FAILED:
            raise self._gate_error(Gate.FAILED)

    # ------------------------------------------------------------------ transactions

    def _require_transactional(self, action: str) -> TransactionManager:
        transactional = self._transactional
        if transactional is None:
            raise transaction_calls.no_transactional_id(action)
        if self._gate is not None:
            self._pass_gate()  # starts the I/O thread; raises once closed or fatal
        return transactional

    def init_transactions(self) -> None:
        """Get a producer id and epoch for ``transactional_id`` (InitProducerId at its
        transaction coordinator). Call once, first. Fences any earlier producer with the same
        transactional id and aborts a transaction it left open. Waits up to
        ``max_block_ms`` (KafkaTimeoutError: call it again to keep waiting)."""
        transactional = self._require_transactional("init_transactions()")
        transactional.initialize_transactions().wait(self._max_block_ms)

    def begin_transaction(self) -> None:
        """Start a transaction: the records sent until :meth:`commit_transaction` or
        :meth:`abort_transaction` are written together or not at all. Local: no request.
        The guide: docs/producer.md, "Transactions"."""
        self._require_transactional("begin_transaction()").begin_transaction()

    def commit_transaction(self) -> None:
        """Flush, then commit the transaction (EndTxn). After an abortable error (a record
        failed) it raises TransactionStateError: call :meth:`abort_transaction`."""
        transactional = self._require_transactional("commit_transaction()")
        transaction_calls.commit(transactional, self.flush, self._max_block_ms)

    def abort_transaction(self) -> None:
        """Abort the transaction: records still buffered fail with TransactionAbortedError,
        those sent are marked aborted (EndTxn). Also the way out of an abortable error."""
        transactional = self._require_transactional("abort_transaction()")
        transaction_calls.abort(transactional, self._accumulator, self.flush, self._max_block_ms)

    def send_offsets_to_transaction(
        self, offsets: Mapping[Any, Any], group_metadata: object
    ) -> None:
        """Commit consumer offsets with the transaction (AddOffsetsToTxn, then TxnOffsetCommit
        to the group's coordinator): a read-process-write loop's input and output commit
        together. ``offsets`` maps ``(topic, partition)`` or a TopicPartition to the next
        offset to consume; ``group_metadata`` is the consumer group id or an object with a
        ``group_id`` attribute (a consumer's group metadata)."""
        transactional = self._require_transactional("send_offsets_to_transaction()")
        transaction_calls.send_offsets(transactional, offsets, group_metadata, self._max_block_ms)

    def transaction_identity(self) -> TransactionIdentity:
        """Flush, then return the open transaction's (transactional_id, producer_id,
        producer_epoch), for another producer to finish it with
        :meth:`complete_transaction`. This producer must then make no transactional call
        for it (closing is fine). See :mod:`kafkaline.producer.transactions.handover`."""
        transactional = self._require_transactional("transaction_identity()")
        return transaction_calls.identity(transactional, self.flush)

    @classmethod
    def complete_transaction(
        cls,
        identity: TransactionIdentity | tuple[str, int, int],
        *,
        commit: bool = True,
        config: ProducerConfig | None = None,
        **settings: Any,
    ) -> None:
        """Commit (``commit=True``) or abort a transaction another producer opened and
        handed over with :meth:`transaction_identity`, without InitProducerId (which would
        fence it and abort it). ``config`` or keyword settings say how to reach the cluster
        (``bootstrap_servers=...``). Must happen within ``transaction_timeout_ms`` of the
        transaction's start, or the coordinator has aborted it.

        >>> identity = producer_a.transaction_identity()           # doctest: +SKIP
        >>> Producer.complete_transaction(identity, commit=True,
        ...                               bootstrap_servers="127.0.0.1:9092")  # doctest: +SKIP
        """
        transaction_calls.complete(identity, commit, config, settings)

    def partitions_for(self, topic: str) -> tuple[PartitionMetadata, ...]:
        """The partitions of ``topic`` (number, leader, replicas), waiting up to
        ``max_block_ms`` for its metadata. Starts the producer if needed.

        >>> [p.partition for p in producer.partitions_for("events")]  # doctest: +SKIP
        [0, 1, 2]
        """
        if self._gate is not None:
            self._pass_gate()
        try:
            self._topics.wait(topic)
        except Exception as error:
            self._raise_failed(error, topic, None, None)
        cluster = self._topics.cluster
        return () if cluster is None else cluster.partitions_for(topic)

    def metrics(self) -> dict[str, float]:
        """The producer's metrics under the Java client's names (``record-send-rate``,
        ``request-latency-avg``, ``buffer-available-bytes``, ...): the list and how rates are
        computed are in :mod:`kafkaline.producer.metrics`."""
        return self._metrics.read(_monotonic() * 1000.0)

    def __repr__(self) -> str:
        state = "running" if self._gate is None else self._gate.value
        return f"<Producer {','.join(self._config.bootstrap_servers)} {state}>"
