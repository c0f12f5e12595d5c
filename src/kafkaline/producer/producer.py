""":class:`Producer`: the public Kafka producer.

``send()`` runs on the caller's thread: interceptors (if any), serializers (if any), the
topic's partition count (waited for up to ``max_block_ms`` on the first send to a topic, then
cached), the partition, and :meth:`RecordAccumulator.append
<kafkaline.producer.accumulator.RecordAccumulator.append>`; it wakes the Sender only when a
batch is new or full. Everything else (encoding, requests, retries, completing futures) runs
on the Sender's thread, started by the first send (or :meth:`Producer.start`).

The hot path is one method with no per-record lock of its own and nothing allocated but the
record's future handle (the accumulator takes its partition's lock). Each piece is the
cheapest form measured (CPython 3.11, the project's 2-core machine); see
``benchmarks/simple_loop.py`` for the end-to-end rate and profile.

Lifecycle decisions:

* ``close()`` sends what is buffered and waits; ``close(timeout)`` waits up to ``timeout``
  seconds, then aborts what is left; ``close(0)`` aborts at once: unsent records fail with
  :class:`~kafkaline.errors.ProducerClosedError`. ``close()`` is idempotent; ``send()``
  afterwards raises ProducerClosedError; ``flush()`` afterwards returns at once.
* If the Sender's thread dies, every pending record fails with
  :class:`~kafkaline.errors.SenderFailedError` (its ``__cause__`` is the error), and so do
  later ``send()`` and ``flush()`` calls.
* After ``os.fork()``, a producer that was started in the parent raises
  :class:`~kafkaline.errors.ProducerForkedError` from ``send()``, ``flush()`` and
  ``partitions_for()`` in the child: its thread and connections stay in the parent. (A
  producer that was never started may be used in the child.) ``close()`` in the child only
  marks the child's copy closed. Detected with ``os.register_at_fork``, so the hot path pays
  nothing; each started producer leaves one small weak callback registered.
"""

from __future__ import annotations

import enum
import functools
import importlib
import importlib.util
import logging
import operator
import os
import sys
import threading
import time
import weakref
from bisect import bisect_right
from collections.abc import Callable, Mapping, Sequence, Sized
from itertools import accumulate, compress, repeat
from types import TracebackType
from typing import TYPE_CHECKING, Any

from kafkaline.config import ProducerConfig
from kafkaline.errors import (
    AuthenticationError,
    BufferExhaustedError,
    IllegalStateError,
    InvalidPartitionError,
    InvalidRecordTimestampError,
    InvalidTopicNameError,
    KafkaError,
    KafkaTimeoutError,
    ProducerClosedError,
    ProducerForkedError,
    RecordTooLargeError,
    SenderFailedError,
    TransactionAbortedError,
    TransactionStateError,
)
from kafkaline.net.client import NetworkClient
from kafkaline.net.cluster import ClusterMetadata, PartitionMetadata
from kafkaline.producer.accumulator import (
    BulkSegment,
    EncodedRecordSource,
    EncodedRun,
    RecordAccumulator,
)
from kafkaline.producer.batch import ProducerBatch
from kafkaline.producer.bulk import (
    TO_MILLISECONDS,
    ArrowSlice,
    BatchSendResult,
    BulkRun,
    arrow_columns,
    arrow_partitions_and_timestamps,
    arrow_slices,
    as_bytes_column,
    gather,
    group_by_partition,
)
from kafkaline.producer.futures import FutureRecordMetadata, on_io_thread
from kafkaline.producer.idempotence import TransactionManager
from kafkaline.producer.interceptors import InterceptorChain
from kafkaline.producer.list_records import KeyPartitions, ListRecords
from kafkaline.producer.metrics import ProducerMetrics, SenderCounters
from kafkaline.producer.murmur2 import partitions_of_many
from kafkaline.producer.partitioner import KeyPartitionCache, Partitioner, validate_partition
from kafkaline.producer.record import ProducerRecord
from kafkaline.producer.record_metadata import (
    NO_TIMESTAMP,
    UNKNOWN_OFFSET,
    RecordMetadata,
)
from kafkaline.producer.sender import Sender
from kafkaline.producer.serializers import Serializer, as_serializer, bytes_or_none
from kafkaline.producer.transaction_completion import complete_transaction
from kafkaline.producer.transactions import (
    TransactionalManager,
    TransactionIdentity,
    TransactionState,
    group_id_of,
    offsets_of,
)
from kafkaline.producer.validation import (
    MAX_TIMESTAMP,
    RECORD_SIZE_OVERHEAD,
    check_headers,
    check_record_size,
    check_timestamp,
    check_topic_name,
    headers_size_bound,
)
from kafkaline.record import Headers
from kafkaline.record.core import compiled_core

if TYPE_CHECKING:
    from kafkaline._record_core import KeyHashes
from kafkaline.record.record_encoder import encode_headers

__all__ = ["Producer"]

#: The compiled record core when it is in use: send_batch() over lists then appends through
#: its builder's C loop, and keys are hashed by it (see kafkaline.record.core).
_CORE = compiled_core()
_log = logging.getLogger(__name__)
_time_ns = time.time_ns
_monotonic = time.monotonic
#: Keys whose murmur2 hash the producer remembers (keys up to 128 bytes: at most ~8 MiB).
_KEY_MEMO_ENTRIES = 1 << 15
#: Keys longer than this are not remembered by send_batch()'s key -> partition memo (as
#: KeyPartitionCache's default): at most ~4 MiB per partition count.
_BULK_MEMO_KEY_SIZE = 128


class _State(enum.Enum):
    """Why send() cannot go straight on (the producer's ``_gate``; None when it can)."""

    NOT_STARTED = "not started"
    CLOSED = "closed"
    FAILED = "failed"
    FORKED = "forked"
    #: The idempotent producer was fenced, or could not get a producer id.
    FATAL = "fatal"


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
        if config is None:
            config = ProducerConfig.from_kwargs(**settings)
        elif not isinstance(config, ProducerConfig):
            raise TypeError(
                f"Producer() takes a ProducerConfig or keyword settings, not "
                f"{type(config).__name__}; for Java-style properties use Producer.from_properties"
            )
        elif settings:
            config = config.with_changes(**settings)
        self._config = config
        self._interceptors: InterceptorChain | None = (
            InterceptorChain(config.interceptors) if config.interceptors else None
        )
        self._key_serializer: Serializer[Any] | None = (
            None if config.key_serializer is None else as_serializer(config.key_serializer)
        )
        self._value_serializer: Serializer[Any] | None = (
            None if config.value_serializer is None else as_serializer(config.value_serializer)
        )
        self._partitioner: Partitioner | None = config.partitioner
        # Keyed records hash with murmur2 unless a custom partitioner or ignore_keys says no.
        keyed = config.partitioner is None and not config.partitioner_ignore_keys
        self._key_partition: Callable[[bytes, int], int] | None = None
        # send()'s hot path (see there): the key's hash read without a call, and whether the
        # producer has nothing that must see each record (interceptors, serializers, a
        # transaction's checks, a custom partitioner).
        self._key_hashes: Mapping[bytes, int] | KeyHashes = {}
        if keyed and _CORE is not None:
            # The compiled core hashes any key in C: no memo to keep.
            self._key_partition = _CORE.partition_for_key
            self._key_hashes = _CORE.KeyHashes()
        elif keyed:
            # The memo holds 32768 keys: with the default 8192, a producer cycling over 10,000
            # keys (issue 5's workload) cleared it before any key came back and hashed every
            # record: 7.7 against 4.0 us per send() (benchmarks/simple_loop.py, 300k records).
            key_cache = KeyPartitionCache(max_entries=_KEY_MEMO_ENTRIES)
            self._key_partition = key_cache.partition_for_key
            self._key_hashes = key_cache.memo
        self._hot_path = (
            keyed
            and self._interceptors is None
            and self._key_serializer is None
            and self._value_serializer is None
            and config.transactional_id is None
        )
        # send_batch(): key -> partition per partition count, looked up by a C-level map().
        self._bulk_partition_memo: dict[int, dict[bytes, int]] = {}
        self._max_block_ms = float(config.max_block_ms)
        # Key + value bytes above which send() checks the record's full size bound.
        self._payload_limit = min(config.max_request_size, config.buffer_memory) - (
            RECORD_SIZE_OVERHEAD
        )
        self._counters = SenderCounters()
        # Transactions (None without transactional_id); its manager is also the idempotent
        # producer's, so the accumulator and Sender see one object.
        self._transactional: TransactionalManager | None = None
        self._transaction_manager: TransactionManager | None = None
        if config.transactional_id is not None:
            self._transactional = TransactionalManager(
                config.transactional_id,
                config.transaction_timeout_ms,
                retry_backoff=config.retry_backoff,
                on_fatal_error=self._on_fatal_error,
            )
            self._transaction_manager = self._transactional
        elif config.idempotent:
            self._transaction_manager = TransactionManager(
                retry_backoff=config.retry_backoff, on_fatal_error=self._on_fatal_error
            )
        self._accumulator = RecordAccumulator.from_config(
            config,
            on_batch_sealed=self._on_batch_sealed,
            transaction_manager=self._transaction_manager,
        )
        # send()'s hot path for keyed records with the compiled core (None without it).
        self._append_keyed = (
            self._accumulator.keyed_open_batch_appender() if self._hot_path else None
        )
        self._metrics = ProducerMetrics(
            self._counters,
            start_ms=_monotonic() * 1000.0,
            buffer_pool=self._accumulator.buffer_pool,
            batch_stats=self._accumulator.batch_stats,
        )
        self._lock = threading.Lock()
        self._gate: _State | None = _State.NOT_STARTED
        self._closed = False
        self._client: NetworkClient | None = None
        self._sender: Sender | None = None
        self._wakeup: Callable[[], None] = _nothing
        # Partition counts of the topics sent to, for the current metadata: the hot path's
        # only metadata lookup. Replaced (not changed) by the Sender on a metadata update.
        self._partition_counts: dict[str, int] = {}
        self._cluster: ClusterMetadata | None = None
        self._owner_pid = 0

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
        if self._gate is _State.NOT_STARTED:
            with self._lock:
                if self._gate is _State.NOT_STARTED:
                    self._start_locked()
        gate = self._gate
        if gate is not None:
            raise self._gate_error(gate)

    def _start_locked(self) -> None:
        config = self._config
        client = NetworkClient.from_config(config)
        try:
            sender = Sender(
                client,
                self._accumulator,
                acks=config.acks,
                request_timeout_ms=config.request_timeout_ms,
                max_request_size=config.max_request_size,
                retries=config.retries,
                guarantee_message_order=config.max_in_flight_requests_per_connection == 1,
                counters=self._counters,
                name=_thread_name(config.client_id),
                on_metadata_update=self._on_metadata_update,
                on_failure=self._on_sender_failure,
                transaction_manager=self._transaction_manager,
            )
            sender.start()
        except BaseException:
            client.close()  # never polled: safe from this thread
            raise
        self._client = client
        self._sender = sender
        self._cluster = client.metadata.cluster
        self._wakeup = sender.wakeup
        if self._transactional is not None:
            self._transactional.set_wakeup(sender.wakeup)
        self._owner_pid = os.getpid()
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(
                after_in_child=functools.partial(_call_if_alive, weakref.WeakMethod(self._forked))
            )
        # The Sender may already have failed (it starts above and can die within
        # milliseconds, e.g. on an authentication refusal): never overwrite that with "open".
        if self._gate is _State.NOT_STARTED:
            self._gate = None

    def _gate_error(self, gate: _State) -> Exception:
        if gate is _State.CLOSED:
            return ProducerClosedError("the producer is closed: create a new one to send")
        if gate is _State.FORKED:
            return ProducerForkedError(
                f"this producer was started in process {self._owner_pid} and is used in process "
                f"{os.getpid()}, a child made by os.fork(): its I/O thread and connections "
                "exist only in the parent, so records sent here would never leave. Create the "
                "producer in the child process (records buffered in the parent are not sent "
                "by the child)"
            )
        if gate is _State.FAILED:
            failure = self._sender.failure if self._sender is not None else None
            cause = failure.__cause__ if failure is not None else None
            if isinstance(cause, AuthenticationError):
                # A refused TLS handshake or SASL exchange: say that, not "the thread failed".
                refusal = type(cause)(str(cause))
                refusal.__cause__ = cause
                return refusal
            error = SenderFailedError(
                f"the producer's I/O thread failed earlier ({cause!r}); pending records failed "
                "with it. Close this producer and create a new one"
            )
            error.__cause__ = cause
            return error
        if gate is _State.FATAL:
            fatal = (
                self._transaction_manager.fatal_error
                if self._transaction_manager is not None
                else None
            )
            if fatal is not None:
                again = type(fatal)(str(fatal))
                again.__cause__ = fatal
                return again
        return IllegalStateError(f"the producer is {gate.value}")  # pragma: no cover

    def _forked(self) -> None:
        # In the child, right after fork(): only a flag, no lock (a parent's thread may have
        # held one, and it does not exist here to release it).
        self._gate = _State.FORKED

    def _on_sender_failure(self, failure: SenderFailedError) -> None:
        # Under the lock: _start_locked() must not reopen the gate after this.
        with self._lock:
            if self._gate is not _State.FORKED:
                self._gate = _State.FAILED

    def _on_fatal_error(self, error: KafkaError) -> None:
        # The Sender's thread: from now on send() raises the error (see _gate_error).
        with self._lock:
            if self._gate is not _State.FORKED:
                self._gate = _State.FATAL

    def _on_metadata_update(self, cluster: ClusterMetadata) -> None:
        # The Sender's thread, after each metadata update: new counts for the known topics.
        # A topic gone from the metadata is dropped, so its next send waits for it again.
        counts = {
            topic: cluster.partition_count(topic)
            for topic in list(self._partition_counts)  # list(): other threads may add
            if cluster.has_topic(topic)
        }
        self._cluster = cluster
        self._partition_counts = counts

    def _on_batch_sealed(self, batch: ProducerBatch) -> None:
        self._counters.record_batch_size(batch.estimated_size_in_bytes)

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
        if self._gate is _State.FORKED:
            self._closed = True  # the thread and sockets belong to the parent
            return
        with self._lock:
            first = not self._closed
            self._closed = True
            if self._gate is None or self._gate is _State.NOT_STARTED:
                self._gate = _State.CLOSED
            sender = self._sender
        if sender is not None:
            _stop_sender(sender, timeout)
        if first:
            self._close_user_objects()

    def _close_user_objects(self) -> None:
        if self._interceptors is not None:
            self._interceptors.close()
        for name, obj in (
            ("key_serializer", self._key_serializer),
            ("value_serializer", self._value_serializer),
            ("partitioner", self._partitioner),
        ):
            close = getattr(obj, "close", None)
            if close is None:
                continue
            try:
                close()
            except Exception:
                _log.exception("the %s's close() raised; the producer closed anyway", name)

    def __enter__(self) -> Producer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
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

        ``value`` and ``key`` are bytes (or anything their serializers take; ``None`` is a
        Kafka null); ``headers`` a sequence of ``(str, bytes | None)``; ``partition`` a
        partition number (default: murmur2 of the key like Java, or the sticky partitioner
        without key); ``timestamp_ms`` epoch milliseconds (default: now).

        Blocks only for the first send to a topic (its metadata) and when ``buffer_memory``
        is used up, each up to ``max_block_ms``. Raises at once, with a named error:
        :class:`~kafkaline.errors.InvalidTopicNameError`,
        :class:`~kafkaline.errors.InvalidPartitionError`,
        :class:`~kafkaline.errors.InvalidRecordTimestampError`,
        :class:`~kafkaline.errors.RecordTooLargeError` (larger than ``max_request_size`` or
        ``buffer_memory``), TypeError (a non-bytes key or value without serializer, a bad
        header); after waiting: :class:`~kafkaline.errors.KafkaTimeoutError` (topic not in
        the metadata), :class:`~kafkaline.errors.BufferExhaustedError`; and
        ProducerClosedError, SenderFailedError or ProducerForkedError when the producer cannot
        send.

        >>> future = producer.send("events", b"v", key=b"k")  # doctest: +SKIP
        >>> future.get(timeout=10).offset                       # doctest: +SKIP
        42
        """
        if (
            type(value) is bytes
            and self._hot_path
            and self._gate is None
            and headers is None
            and partition is None
            and timestamp_ms is None
        ):
            # Hot path: a record of bytes into its partition's open batch, with only
            # the checks such a record can fail (size; the topic's metadata and the key's hash
            # known, else the general path below fetches and computes them). Measured with
            # valgrind (instructions, which the shared machine's load does not change): a
            # send() of a 10-byte key and 100-byte value into an open batch costs ~10,000
            # instructions this way against ~14,200 through the general path (a whole
            # record, encoding at the batch's seal included, ~15,800 against ~20,000); a
            # record without key, whole, ~18,100 against ~34,200.
            # Subscripts, not dict.get(): a specialized instruction against a method call
            # (the loop measured at append_to_open_batch: caller 14,814 -> 14,605
            # instructions a record); a miss is rare (a topic's or key's first send) and goes
            # the general way.
            value_size = len(value)
            append_keyed = self._append_keyed
            if type(key) is bytes and append_keyed is not None:
                # The compiled core: hash, queue, lock, encoding and future in one call.
                try:
                    partition_count = self._partition_counts[topic]
                except (KeyError, TypeError):  # TypeError: a topic that is no str, named below
                    pass
                else:
                    if len(key) + value_size <= self._payload_limit:
                        future = append_keyed(
                            topic, partition_count, key, value, _time_ns() // 1_000_000
                        )
                        if future is not None:
                            return future
        if self._gate is not None:
            self._pass_gate()
        if self._transactional is not None:
            self._transactional.check_send_allowed()
        interceptors = self._interceptors
        try:
            if interceptors is not None:
                record = interceptors.on_send(
                    ProducerRecord(topic, value, key, headers or (), partition, timestamp_ms)
                )
                topic, value, key = record.topic, record.value, record.key
                headers = record.headers or None
                partition, timestamp_ms = record.partition, record.timestamp_ms
            if headers is not None:
                headers = check_headers(headers)
            serializer = self._key_serializer
            if serializer is not None:
                key = serializer.serialize(topic, key, headers)
                if key is not None and type(key) is not bytes:
                    key = _serialized(key, "key", serializer)
            elif key is not None and type(key) is not bytes:
                key = bytes_or_none(key, "key")
            serializer = self._value_serializer
            if serializer is not None:
                value = serializer.serialize(topic, value, headers)
                if value is not None and type(value) is not bytes:
                    value = _serialized(value, "value", serializer)
            elif value is not None and type(value) is not bytes:
                value = bytes_or_none(value, "value")
            if timestamp_ms is None:
                timestamp = _time_ns() // 1_000_000
            elif type(timestamp_ms) is int and 0 <= timestamp_ms <= MAX_TIMESTAMP:
                timestamp = timestamp_ms
            else:
                timestamp = check_timestamp(timestamp_ms)
            size = (0 if key is None else len(key)) + (0 if value is None else len(value))
            if headers is not None or size > self._payload_limit:
                self._check_size(topic, size, headers)
            if partition is not None and (type(partition) is not int or partition < 0):
                raise InvalidPartitionError(
                    f"partition={partition!r} given by the record is invalid: must be None or "
                    "an integer >= 0"
                )
            count = self._partition_counts.get(topic)
            max_block_ms = self._max_block_ms
            if count is None:
                count, max_block_ms = self._wait_on_metadata(topic)
            if partition is not None:
                if type(partition) is not int or not 0 <= partition < count:
                    validate_partition(topic, partition, count, "the record")
            elif key is not None and self._key_partition is not None:
                partition = self._key_partition(key, count)
            elif self._partitioner is not None:
                partition = self._custom_partition(topic, key, value, count)
            future, batch_is_full, new_batch = self._accumulator.append(
                topic,
                partition,
                timestamp,
                key,
                value,
                headers,
                max_block_ms,
                _monotonic() * 1000.0,
                self._cluster,
            )
        except Exception as error:
            replacement = self._send_failed(error, topic, partition, interceptors)
            if replacement is not None:
                raise replacement from error
            raise
        if batch_is_full or new_batch:
            self._wakeup()
        if interceptors is not None:
            _acknowledge_to(interceptors, future)
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

        ``values`` (required) and ``keys`` (optional) are parallel sequences of bytes (or what
        their serializers take; ``None`` is a Kafka null); ``headers`` an optional sequence of
        one header list (or ``None``) per record; ``partition`` sends every record there.
        Records go to the partitions :meth:`send` would choose (murmur2 of the key, or the
        sticky partitioner without key), in input order within each partition, all with the
        same timestamp (now). Checks and errors are those of :meth:`send`, raised before
        anything is queued and naming the record's index (``TypeError: values[3] is of type
        str ...``); only a wait for buffer memory can fail midway: the
        :class:`~kafkaline.errors.BufferExhaustedError` then says which records were queued
        before it (``error.queued``: input index -> future; they are sent as usual) and the
        rest were not. Not all-or-nothing: the queued ones may already be on their way.

        >>> result = producer.send_batch("t", [b"a", b"b"], keys=[b"k1", b"k2"])  # doctest: +SKIP
        >>> [m.partition for m in result.get(timeout=10)]                         # doctest: +SKIP
        [3, 0]
        """
        if self._gate is not None:
            self._pass_gate()
        if self._interceptors is not None:
            # Interceptors see every record as a ProducerRecord: the per-record path.
            count = len(values)
            key_list = [None] * count if keys is None else keys
            header_list = [None] * count if headers is None else headers
            _check_lengths(count, key_list, header_list)
            return BatchSendResult.of_futures(
                topic,
                [
                    self.send(topic, value, key, header, partition)
                    for value, key, header in zip(values, key_list, header_list, strict=True)
                ],
            )
        checked_values, checked_keys, checked_headers, key_size, value_size, longest = (
            self._prepare_bulk(topic, values, keys, headers)
        )
        if _CORE is not None and self._partitioner is None:
            # The compiled core: grouped per partition and encoded by C loops over the lists
            # (RecordBatchBuilder.append_many), whatever their shape.
            return self._send_bulk(topic, checked_values, checked_keys, checked_headers, partition)
        # Records of one shape (every key and every value of one size, no headers) go to
        # send_arrow()'s one-shape encoder where numpy is loaded (see _send_shaped_lists),
        # else they are cut and encoded by arithmetic on the list path, which beat the
        # general columnar path for them (see _columnar_lists).
        one_shape = (
            _LISTS_FOR_ONE_SHAPE
            and value_size is not None
            and checked_headers is None
            and (checked_keys is None or key_size is not None)
        )
        if (
            self._partitioner is None
            and one_shape
            and value_size is not None
            and value_size >= _SHAPED_MIN_VALUE
            and len(values) >= _COLUMNAR_MIN_RECORDS
        ):
            columnar = _columnar_if_loaded()
            if columnar is not None:
                return self._send_shaped_lists(
                    columnar,
                    topic,
                    checked_values,  # type: ignore[arg-type]  # one shape: no nulls
                    checked_keys,  # type: ignore[arg-type]  # one shape: no nulls
                    partition,
                    key_size or 0,
                    value_size,
                    longest,
                )
        if self._partitioner is None and not one_shape and len(values) >= _COLUMNAR_MIN_RECORDS:
            if partition is not None and (type(partition) is not int or partition < 0):
                raise InvalidPartitionError(
                    f"partition={partition!r} given to send_batch() is invalid: must be None "
                    "or an integer >= 0"
                )
            columns = _columnar_lists(checked_values, checked_keys, checked_headers)
            if columns is not None:
                return self._send_columns(topic, columns, partition, None, None)
        if self._partitioner is None:
            return self._send_lists(
                topic,
                checked_values,
                checked_keys,
                checked_headers,
                partition,
                key_size,
                value_size,
                longest,
            )
        return self._send_bulk(topic, checked_values, checked_keys, checked_headers, partition)

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
        """:meth:`send_batch` for a pyarrow ``RecordBatch`` or ``Table``: the columns named
        ``key`` (``None``: no keys), ``value`` and optionally ``headers``, ``partition`` and
        ``timestamp`` are sent, one record per row. Key and value columns are binary or string
        (or large_binary/large_string; strings are sent as UTF-8), nulls are Kafka nulls; the
        headers column is ``list<struct<key: string, value: binary>>``. The partition column
        is an integer column (int32 or int64; a null lets the partitioner choose, as
        :meth:`send` without partition); the timestamp column an Arrow ``timestamp`` of any
        unit (sent as epoch milliseconds, rounded down) or ``int64`` milliseconds (a null is
        the time of the call). A missing column raises ValueError, a column of another type
        TypeError, a partition the topic does not have
        :class:`~kafkaline.errors.InvalidPartitionError`, a negative timestamp
        :class:`~kafkaline.errors.InvalidRecordTimestampError`, all naming the column.
        Serializers are not applied (the columns are bytes already). Running out of buffer
        memory part way raises :class:`~kafkaline.errors.BufferExhaustedError` saying which
        rows were queued (``error.queued``, as :meth:`send_batch`). Needs pyarrow
        (kafkaline's ``spark`` extra).

        >>> batch = pyarrow.record_batch({"key": [b"k"], "value": [b"v"]})  # doctest: +SKIP
        >>> producer.send_arrow("events", batch).get(timeout=10)             # doctest: +SKIP
        """
        if self._gate is not None:
            self._pass_gate()
        if self._interceptors is None and self._partitioner is None and _columnar() is not None:
            return self._send_arrow_columnar(topic, data, key, value, headers, partition, timestamp)
        keys, values, header_list = arrow_columns(data, key, value, headers)
        partitions, timestamps = arrow_partitions_and_timestamps(data, partition, timestamp)
        if self._interceptors is not None:
            if partitions is None and timestamps is None:
                return self.send_batch(topic, values, keys, header_list)
            # Interceptors see every record as a ProducerRecord: the per-record path.
            count = len(values)
            return BatchSendResult.of_futures(
                topic,
                [
                    self.send(
                        topic,
                        values[i],
                        None if keys is None else keys[i],
                        None if header_list is None else header_list[i],
                        None if partitions is None else partitions[i],
                        None if timestamps is None else timestamps[i],
                    )
                    for i in range(count)
                ],
            )
        checked_headers = None
        if header_list is not None:
            checked_headers = [None if not h else check_headers(h) for h in header_list]
        self._check_bulk_sizes(topic, keys, values, checked_headers)
        return self._send_bulk(
            topic,
            values,
            keys,
            checked_headers,
            None,
            partitions,
            timestamps,
            f"column {partition!r}",
        )

    def _send_arrow_columnar(
        self,
        topic: str,
        data: Any,
        key: str | None,
        value: str,
        headers: str | None,
        partition: str | None,
        timestamp: str | None,
    ) -> BatchSendResult:
        """send_arrow() without a loop over records: partitions chosen, records encoded and
        cut into batches by numpy and pyarrow over whole columns (``producer.columnar``).

        Measured (``benchmarks/bulk_paths.py``, 300k records of 100 bytes with 10-byte keys
        in Arrow batches of 10,000; client CPU seconds per million records, all threads, on
        the 2-core machine shared with other jobs): 2.98 over Python lists (load 2.3-3.6),
        1.75 this way (load 5). Records of one shape written by numpy scatters (see
        ``ColumnarRecords._encode_one_shape``): 0.83 -> 0.49 and 0.88 -> 0.67 CPU s per
        million records for the send loop and flush (medians of two sets of six alternating
        runs of 30 calls, 9-byte keys; load 3-4.5 and 1.9-2.1)."""
        slices = arrow_slices(data, key, value, headers, partition, timestamp)
        return self._send_columns(topic, slices, None, partition, timestamp)

    def _send_columns(
        self,
        topic: str,
        slices: list[ArrowSlice],
        fixed_partition: int | None,
        partition_column: str | None,
        timestamp_column: str | None,
    ) -> BatchSendResult:
        """The columnar bulk path (send_arrow(), send_batch()): checks every slice, then
        appends them through ``RecordAccumulator.append_encoded``."""
        columnar = _columnar()
        if columnar is None:  # pragma: no cover - checked by the callers
            raise IllegalStateError("numpy is not available")
        if self._transactional is not None:
            self._transactional.check_send_allowed()
        np: Any = importlib.import_module("numpy")
        if type(topic) is not str:  # a list or dict would fail the lookup below, unnamed
            check_topic_name(topic)
        count = self._partition_counts.get(topic)
        max_block_ms = self._max_block_ms
        if count is None:
            count, max_block_ms = self._wait_on_metadata(topic)
        now = _time_ns() // 1_000_000
        # Checks first, for every slice: errors are raised before anything is queued.
        prepared = []
        row = 0
        if fixed_partition is not None:
            validate_partition(topic, fixed_partition, count, "send_batch()")
        for part in slices:
            prepared.append(
                self._columnar_slice(
                    columnar,
                    np,
                    topic,
                    part,
                    row,
                    count,
                    now,
                    fixed_partition,
                    partition_column,
                    timestamp_column,
                )
            )
            row += len(part.values)
        runs: list[BulkRun] = []
        wake = False
        deadline_ms = _monotonic() * 1000.0 + max_block_ms
        sources = [source for source, _ in prepared]

        def result() -> BatchSendResult:
            return BatchSendResult.of_sizes(
                topic,
                row,
                runs,
                _concatenate(np, [source.key_sizes for source in sources]),
                _concatenate(np, [source.value_sizes for source in sources]),
                now
                if timestamp_column is None
                else _concatenate(np, [s.timestamps for s in sources]),
            )

        try:
            for source, first_row in prepared:
                if self._append_columnar(topic, source, first_row, deadline_ms, runs):
                    wake = True
        except Exception as error:
            replacement = self._send_failed(error, topic, None, None)
            _report_queued(error, result())
            if replacement is not None:
                raise replacement from error
            raise
        finally:
            if wake:
                self._wakeup()
        return result()

    def _columnar_slice(
        self,
        columnar: Any,
        np: Any,
        topic: str,
        part: ArrowSlice,
        first_row: int,
        count: int,
        now: int,
        fixed_partition: int | None,
        partition_column: str | None,
        timestamp_column: str | None,
    ) -> tuple[Any, int]:
        """One slice's columns checked (sizes, partitions, timestamps; errors name the row of
        the whole input) and made a ``ColumnarRecords``; with the slice's first row."""
        values = columnar.binary_column(part.values)
        keys = None if part.keys is None else columnar.binary_column(part.keys)
        rows = len(values.lengths)
        # Each row's key + value size, computed per row only when the largest key and the
        # largest value together exceed the limit (known per column: no pass over the rows).
        largest = max(0, values.longest)
        if keys is not None:
            largest += max(0, keys.longest)
        sizes: Any = 0
        if largest > self._payload_limit or part.headers is not None:
            sizes = np.maximum(values.lengths, 0)
            if keys is not None:
                sizes = sizes + np.maximum(keys.lengths, 0)
        header_blocks = None
        header_lists: list[Headers | None] = []
        if part.headers is not None:
            # Headers are encoded per record in Python: rows with headers are the exception.
            blocks = []
            entries = part.headers if isinstance(part.headers, list) else part.headers.to_pylist()
            for entry in entries:
                checked = (
                    None
                    if not entry
                    else entry
                    if isinstance(entry, tuple)  # send_batch(): checked already
                    else check_headers([(item["key"], item["value"]) for item in entry])
                )
                header_lists.append(checked)
                blocks.append(b"\x00" if checked is None else encode_headers(checked))
            pa: Any = importlib.import_module("pyarrow")
            header_blocks = columnar.binary_column(pa.array(blocks, pa.binary()))
            sizes = sizes + np.array(
                [0 if h is None else headers_size_bound(h) for h in header_lists], np.int64
            )
        if largest > self._payload_limit or part.headers is not None:
            for index in np.flatnonzero(sizes > self._payload_limit).tolist():
                header = header_lists[index] if header_lists else None
                kv = int(sizes[index]) - (0 if header is None else headers_size_bound(header))
                try:
                    self._check_size(topic, kv, header)
                except RecordTooLargeError as error:
                    raise type(error)(f"record {first_row + index}: {error}") from None
        timestamps: Any = now  # one for every row
        if part.timestamps is not None:
            multiplier, divisor = TO_MILLISECONDS[part.timestamp_unit]
            given = part.timestamps
            valid = given.is_valid().to_numpy(zero_copy_only=False)
            raw = given.fill_null(0).to_numpy()
            millis = raw * multiplier // divisor if (multiplier, divisor) != (1, 1) else raw
            bad = np.flatnonzero(valid & (millis < 0))
            if len(bad):
                index = int(bad[0])
                raise InvalidRecordTimestampError(
                    f"row {first_row + index} of column {timestamp_column!r} has the timestamp "
                    f"{int(millis[index])} ms: Kafka timestamps are milliseconds since the "
                    "epoch, >= 0 and within int64"
                )
            timestamps = np.where(valid, millis, now).astype(np.int64)
        chosen: Any = fixed_partition
        prefixes = None
        if fixed_partition is not None:
            pass
        elif keys is not None and self._key_partition is not None:
            chosen, prefixes = columnar.murmur2_partitions_and_prefixes(
                keys,
                count,
                columnar.prefixes_needed(values, part.headers is not None, part.timestamps is None),
            )
        if part.partitions is not None:
            given = part.partitions
            valid = given.is_valid().to_numpy(zero_copy_only=False)
            numbers = given.fill_null(0).cast(importlib.import_module("pyarrow").int64())
            numbers = numbers.to_numpy()
            bad = np.flatnonzero(valid & ((numbers < 0) | (numbers >= count)))
            if len(bad):
                index = int(bad[0])
                validate_partition(
                    topic,
                    int(numbers[index]),
                    count,
                    f"row {first_row + index} of column {partition_column!r}",
                )
            fallback = np.full(rows, -1, np.int64) if chosen is None else chosen
            chosen = np.where(valid, numbers, fallback)
        records = columnar.ColumnarRecords(
            keys, values, header_blocks, timestamps, chosen, prefixes
        )
        return records, first_row

    def _prepare_bulk(
        self,
        topic: str,
        values: Sequence[Any],
        keys: Sequence[Any] | None,
        headers: Sequence[Headers | None] | None,
    ) -> tuple[
        list[bytes | None],
        list[bytes | None] | None,
        list[tuple[tuple[str, bytes | None], ...] | None] | None,
        int | None,
        int | None,
        int,
    ]:
        """send_batch()'s checks and serializers over whole sequences (C-level where the
        records are already bytes): values, keys, headers, the one size of every key and of
        every value (``None``: they differ), and the largest value's size."""
        if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
            raise TypeError(f"values must be a sequence, not {type(values).__name__}")
        count = len(values)
        if keys is not None and (isinstance(keys, (str, bytes)) or not isinstance(keys, Sequence)):
            raise TypeError(f"keys must be a sequence or None, not {type(keys).__name__}")
        _check_lengths(count, keys, headers)
        checked_headers: list[tuple[tuple[str, bytes | None], ...] | None] | None = None
        if headers is not None:
            checked_headers = []
            for index, header in enumerate(headers):
                try:
                    checked_headers.append(None if not header else check_headers(header))
                except TypeError as error:
                    raise TypeError(f"headers[{index}]: {error}") from None
        serializer = self._key_serializer
        if serializer is not None and keys is not None:
            keys = [
                serializer.serialize(
                    topic, key, None if checked_headers is None else checked_headers[i]
                )
                for i, key in enumerate(keys)
            ]
        serializer = self._value_serializer
        if serializer is not None:
            values = [
                serializer.serialize(
                    topic, value, None if checked_headers is None else checked_headers[i]
                )
                for i, value in enumerate(values)
            ]
        value_list = as_bytes_column(values, "values")
        key_list = None if keys is None else as_bytes_column(keys, "keys")
        sizes = self._check_bulk_sizes(topic, key_list, value_list, checked_headers)
        return value_list, key_list, checked_headers, *sizes

    def _check_bulk_sizes(
        self,
        topic: str,
        keys: Sequence[bytes | None] | None,
        values: Sequence[bytes | None],
        headers: Sequence[Headers | None] | None,
    ) -> tuple[int | None, int | None, int]:
        """Raise RecordTooLargeError naming the first record over the limits; return the one
        size every key has and the one every value has (``None``: sizes differ, or nulls),
        for the list path's encoder of records of one shape, and the largest value's."""
        # The largest key plus the largest value bounds every record: one C-level pass each,
        # and a per-record look only when that bound is over the limit or there are headers.
        longest_value, value_size = _longest_and_uniform(values)
        longest = longest_value
        key_size = None
        if keys is not None:
            longest_key, key_size = _longest_and_uniform(keys)
            longest += longest_key
        if headers is None and longest <= self._payload_limit:
            return key_size, value_size, longest_value
        for index, value in enumerate(values):
            key = None if keys is None else keys[index]
            size = (0 if key is None else len(key)) + (0 if value is None else len(value))
            header = None if headers is None else headers[index]
            if header is not None or size > self._payload_limit:
                try:
                    self._check_size(topic, size, header)
                except RecordTooLargeError as error:
                    raise type(error)(f"record {index}: {error}") from None
        return key_size, value_size, longest_value

    def _send_lists(
        self,
        topic: str,
        values: list[bytes | None],
        keys: list[bytes | None] | None,
        headers: Sequence[Headers | None] | None,
        partition: int | None,
        key_size: int | None,
        value_size: int | None,
        longest_value: int,
    ) -> BatchSendResult:
        """send_batch() over checked lists without a custom partitioner: records grouped per
        partition and encoded a batch at a time (``producer.list_records``), appended through
        ``RecordAccumulator.append_encoded`` as the columnar path appends. ``key_size`` and
        ``value_size``: the one size of every key and of every value, if they have one.

        numpy is not imported for this (decided by measurement): importing it cost 127-187 ms
        of CPU on the project's machine, about half of what the whole "small" workload
        (300,000 records) now costs, and over Python lists it could only replace the
        grouping loop (~0.1 us a record) and the murmur2 of new keys, which
        ``murmur2.partitions_of_many`` does in pure Python at ~0.3 us a key: every other
        pass is over Python objects either way. Where numpy and pyarrow are loaded already,
        send_batch() takes the columnar path as before (the caller's CPU measured ~0.9 s per
        million records there for the small workload, ~0.55 here; on par for values of
        varied sizes)."""
        count, max_block_ms = self._begin_bulk(topic, partition)
        now = _time_ns() // 1_000_000
        chosen: list[int] | KeyPartitions | int | None = partition
        if partition is not None:
            validate_partition(topic, partition, count, "send_batch()")
        elif keys is not None and self._key_partition is not None:
            # Looked up by ListRecords' grouping loop (the memo's, or all at once if a key
            # is new).
            memo = self._bulk_partition_memo.setdefault(count, {})
            chosen = KeyPartitions(memo, functools.partial(self._bulk_key_partitions, count=count))

        def append_slice(first: int, stop: int, deadline_ms: float, runs: list[BulkRun]) -> bool:
            part_keys = None if keys is None else keys[first:stop]
            source = ListRecords(
                values[first:stop] if first or stop < len(values) else values,
                part_keys if first or stop < len(values) else keys,
                None if headers is None else headers[first:stop],
                now,
                chosen[first:stop] if isinstance(chosen, list) else chosen,
                count,
                key_size,
                value_size,
            )
            encoded_runs: list[EncodedRun] = []
            try:
                _, wake = self._append_encoded(topic, source, deadline_ms, encoded_runs)
            finally:  # also what was queued before an error, for the error to report
                for result, first_delta, start, run_count in encoded_runs:
                    positions = source.positions(start, run_count, first)
                    runs.append((result, first_delta, run_count, positions, first + start))
            source.drop_records()
            return wake

        return self._send_list_slices(
            topic, values, keys, partition, longest_value, now, max_block_ms, append_slice
        )

    def _send_shaped_lists(
        self,
        columnar: Any,
        topic: str,
        values: list[bytes],
        keys: list[bytes] | None,
        partition: int | None,
        key_size: int,
        value_size: int,
        longest_value: int,
    ) -> BatchSendResult:
        """send_batch() over checked lists of records of one shape (keys of one size or none,
        values of one size, no headers) where numpy is loaded already: each slice's keys and
        values joined into one buffer each and handed to send_arrow()'s one-shape encoder
        (``columnar.ColumnarRecords``), the keys' partitions by the vectorised murmur2.

        Measured (valgrind, calls of 10,000 records of 9-byte keys and 100-byte values in 6
        partitions, the caller's thread): 2,350 instructions a record on the list path, 1,624
        this way, of which ~700 are the type and size checks of ``_prepare_bulk`` (four
        C-level passes) and ~250 the joins. Not taken where numpy is not loaded: importing it
        (0.13-0.18 s of CPU) cost more than it saved over 300,000 records."""
        count, max_block_ms = self._begin_bulk(topic, partition)
        now = _time_ns() // 1_000_000
        if partition is not None:
            validate_partition(topic, partition, count, "send_batch()")
        hashed = partition is None and keys is not None and self._key_partition is not None

        def append_slice(first: int, stop: int, deadline_ms: float, runs: list[BulkRun]) -> bool:
            whole = not first and stop == len(values)
            value_column = columnar.fixed_width_column(
                values if whole else values[first:stop], value_size
            )
            key_column = None
            if keys is not None:
                key_column = columnar.fixed_width_column(
                    keys if whole else keys[first:stop], key_size
                )
            chosen: Any = partition
            if hashed:
                chosen = columnar.murmur2_partitions_and_prefixes(key_column, count, False)[0]
            source = columnar.ColumnarRecords(key_column, value_column, None, now, chosen)
            return self._append_columnar(topic, source, first, deadline_ms, runs)

        return self._send_list_slices(
            topic, values, keys, partition, longest_value, now, max_block_ms, append_slice
        )

    def _send_list_slices(
        self,
        topic: str,
        values: Sequence[bytes | None],
        keys: Sequence[bytes | None] | None,
        partition: int | None,
        longest_value: int,
        now: int,
        max_block_ms: float,
        append_slice: Callable[[int, int, float, list[BulkRun]], bool],
    ) -> BatchSendResult:
        """send_batch()'s list paths (:meth:`_send_lists`, :meth:`_send_shaped_lists`) past
        their preparation: ``append_slice(first, stop, deadline_ms, runs)`` queues the records
        ``first..stop-1``, adds their runs and says whether the Sender needs a wakeup. In
        slices of bounded size: a slice is encoded whole before its batches take buffer
        memory, so a call larger than buffer_memory must not be encoded at once. Errors are
        translated as every send path does, and the Sender is woken even when one is
        raised."""
        runs: list[BulkRun] = []
        wake = False
        deadline_ms = _monotonic() * 1000.0 + max_block_ms
        try:
            for first, stop in _list_slices(values, longest_value):
                if append_slice(first, stop, deadline_ms, runs):
                    wake = True
        except Exception as error:
            replacement = self._send_failed(error, topic, partition, None)
            _report_queued(
                error,
                BatchSendResult(
                    topic,
                    len(values),
                    runs,
                    [None] * len(values) if keys is None else keys,
                    values,
                    now,
                ),
            )
            if replacement is not None:
                raise replacement from error
            raise
        finally:
            if wake:
                self._wakeup()
        return BatchSendResult(
            topic, len(values), runs, [None] * len(values) if keys is None else keys, values, now
        )

    def _append_columnar(
        self,
        topic: str,
        source: Any,  # columnar.ColumnarRecords (its module is imported only with numpy)
        first_row: int,
        deadline_ms: float,
        runs: list[BulkRun],
    ) -> bool:
        """Append a columnar source whose first record is input row ``first_row``, adding its
        runs to ``runs`` (send_arrow()'s and send_batch()'s columnar paths); whether the
        Sender needs a wakeup."""
        encoded_runs: list[EncodedRun] = []
        try:
            _, wake = self._append_encoded(topic, source, deadline_ms, encoded_runs)
        finally:  # also what was queued before an error, for the error to report
            for result, first_delta, start, run_count in encoded_runs:
                positions = source.positions(start, run_count)
                if positions is None:
                    runs.append((result, first_delta, run_count, None, first_row + start))
                else:
                    if first_row:
                        positions = positions + first_row
                    runs.append((result, first_delta, run_count, positions, 0))
        return wake

    def _append_encoded(
        self,
        topic: str,
        source: EncodedRecordSource,
        deadline_ms: float,
        into: list[EncodedRun] | None = None,
    ) -> tuple[list[EncodedRun], bool]:
        """``RecordAccumulator.append_encoded`` for a bulk call waiting for buffer memory
        until ``deadline_ms`` (monotonic milliseconds) at the latest; ``into`` collects the
        runs queued (also when it raises)."""
        now_ms = _monotonic() * 1000.0
        return self._accumulator.append_encoded(
            topic,
            source,
            max(0.0, deadline_ms - now_ms),
            now_ms,
            self._cluster,
            self._wakeup,
            into,
        )

    def _begin_bulk(self, topic: str, partition: int | None) -> tuple[int, float]:
        """What a bulk call checks before it groups its records (the transaction allows
        sending; ``partition`` is ``None`` or an int >= 0), then the topic's partition count
        (waiting for its metadata) and the ``max_block_ms`` left for buffer memory."""
        if self._transactional is not None:
            self._transactional.check_send_allowed()
        if type(topic) is not str:  # a list or dict would fail the lookup below, unnamed
            check_topic_name(topic)
        if partition is not None and (type(partition) is not int or partition < 0):
            raise InvalidPartitionError(
                f"partition={partition!r} given to send_batch() is invalid: must be None or "
                "an integer >= 0"
            )
        count = self._partition_counts.get(topic)
        if count is None:
            return self._wait_on_metadata(topic)
        return count, self._max_block_ms

    def _send_bulk(
        self,
        topic: str,
        values: list[bytes | None],
        keys: list[bytes | None] | None,
        headers: Sequence[Headers | None] | None,
        partition: int | None,
        partitions: Sequence[int | None] | None = None,
        timestamps: Sequence[int | None] | None = None,
        partitions_source: str = "",
    ) -> BatchSendResult:
        """Partition checked records and append them per partition (the bulk hot loop).

        ``partitions`` (one per record, ``None``: the partitioner's choice; checked here
        against the topic, errors naming ``partitions_source`` and the row) and
        ``timestamps`` (one per record, ``None``: now; checked by the caller) are
        send_arrow()'s columns."""
        count, max_block_ms = self._begin_bulk(topic, partition)
        now = _time_ns() // 1_000_000
        timestamp: int | list[int] = now
        if timestamps is not None:
            timestamp = [now if t is None else t for t in timestamps]
        total = len(values)
        key_list: Sequence[bytes | None] = [None] * total if keys is None else keys
        # (partition or None for sticky, input positions or None for all in order)
        groups: Sequence[tuple[int | None, list[int] | None]]
        if partition is not None:
            validate_partition(topic, partition, count, "send_batch()")
            groups = [(partition, None)]
        elif partitions is not None:
            groups = group_by_partition(
                self._bulk_given_partitions(
                    topic, partitions, keys, values, count, partitions_source
                ),
                count,
            )
        elif keys is not None and (
            self._key_partition is not None or self._partitioner is not None
        ):
            if self._key_partition is not None and _CORE is not None:
                groups = _CORE.group_by_key_partition(keys, count)
            elif self._key_partition is not None:
                groups = group_by_partition(self._bulk_key_partitions(keys, count), count)
            else:
                chosen = [
                    self._custom_partition(topic, k, v, count)
                    for k, v in zip(keys, values, strict=True)
                ]
                groups = group_by_partition(chosen, count)
        elif self._partitioner is not None:
            chosen = [self._custom_partition(topic, None, v, count) for v in values]
            groups = group_by_partition(chosen, count)
        else:
            groups = [(None, None)]
        runs: list[BulkRun] = []
        group_keys: Sequence[bytes | None]
        group_values: Sequence[bytes | None]
        group_headers: Sequence[Headers | None] | None
        wake = False
        append_many = self._accumulator.append_many
        # max_block_ms bounds the whole call's waits for memory, not each partition's.
        deadline_ms = _monotonic() * 1000.0 + max_block_ms
        try:
            for group_partition, positions in groups:
                group_timestamps: int | Sequence[int] = timestamp
                if positions is None:
                    group_keys, group_values, group_headers = key_list, values, headers
                else:
                    group_keys = gather(key_list, positions)
                    group_values = gather(values, positions)
                    group_headers = None if headers is None else gather(headers, positions)
                    if not isinstance(timestamp, int):
                        group_timestamps = gather(timestamp, positions)
                now_ms = _monotonic() * 1000.0
                segments: list[BulkSegment] = []
                try:
                    _, new_or_full = append_many(
                        topic,
                        group_partition,
                        group_timestamps,
                        group_keys,
                        group_values,
                        group_headers,
                        max(0.0, deadline_ms - now_ms),
                        now_ms,
                        self._cluster,
                        self._wakeup,
                        segments,
                    )
                finally:  # also what was queued before an error, for the error to report
                    offset = 0
                    for result, first_delta, run_count in segments:
                        if positions is None:
                            runs.append((result, first_delta, run_count, None, offset))
                        else:
                            runs.append(
                                (
                                    result,
                                    first_delta,
                                    run_count,
                                    positions[offset : offset + run_count],
                                    0,
                                )
                            )
                        offset += run_count
                wake = wake or new_or_full
        except Exception as error:
            replacement = self._send_failed(error, topic, partition, None)
            _report_queued(error, BatchSendResult(topic, total, runs, key_list, values, timestamp))
            if replacement is not None:
                raise replacement from error
            raise
        finally:
            if wake:
                self._wakeup()
        return BatchSendResult(topic, total, runs, key_list, values, timestamp)

    def _bulk_given_partitions(
        self,
        topic: str,
        partitions: Sequence[int | None],
        keys: Sequence[bytes | None] | None,
        values: Sequence[bytes | None],
        count: int,
        source: str,
    ) -> list[int]:
        """Each record's partition (``-1``: sticky) where some are given per record: the
        given ones checked against the topic, the others (``None``) chosen as send() would."""
        present = [p for p in partitions if p is not None]
        if present and (min(present) < 0 or max(present) >= count):
            for row, given in enumerate(partitions):
                if given is not None and not 0 <= given < count:
                    validate_partition(topic, given, count, f"row {row} of {source}")
        if len(present) == len(partitions):
            return present
        chosen: list[int] = list(partitions)  # type: ignore[arg-type]  # Nones replaced below
        missing = [row for row, given in enumerate(partitions) if given is None]
        if keys is not None and self._key_partition is not None:
            for row, found in zip(
                missing, self._bulk_key_partitions(gather(keys, missing), count), strict=True
            ):
                chosen[row] = found
        elif self._partitioner is not None:
            for row in missing:
                chosen[row] = self._custom_partition(
                    topic, None if keys is None else keys[row], values[row], count
                )
        else:
            for row in missing:
                chosen[row] = -1
        return chosen

    def _bulk_key_partitions(self, keys: Sequence[bytes | None], count: int) -> list[int]:
        """The partition of each key (``-1`` for ``None``: sticky), as send() chooses them.

        Looked up with ``map(memo.get, keys)`` in a key -> partition memo per partition
        count; the keys it misses are hashed all at once
        (``murmur2.partitions_of_many``). Measured (300k keyed records over 10k keys,
        send_batch in chunks of 10k, cProfile): the per-key call took ~1.0 us a record, the
        map ~0.03 us once the keys are known; the first call's 10,000 new keys took ~25 ms
        one by one, ~3 ms at once."""
        if self._key_partition is None:  # pragma: no cover - checked by the caller
            raise IllegalStateError("keyed partitioning is off")
        memo = self._bulk_partition_memo.get(count)
        if memo is None:
            memo = self._bulk_partition_memo[count] = {}
        # Every key known (the common case once a producer has seen its keys): one C-level
        # pass. Measured (valgrind, the small workload): ~120 instructions a record less than
        # map(memo.get) followed by a scan for the misses (``None in``: a rich comparison of
        # each int with None).
        try:
            return list(map(memo.__getitem__, keys))  # type: ignore[arg-type]
        except KeyError:  # a key not seen yet, or None
            pass
        chosen: list[int | None] = list(map(memo.get, keys))  # type: ignore[arg-type]
        # The keys the memo missed (and None keys), each once.
        missing = dict.fromkeys(compress(keys, map(operator.is_, chosen, repeat(None))))
        missing.pop(None, None)
        new_keys: list[bytes] = list(missing)  # type: ignore[arg-type]  # None popped
        found = dict(zip(new_keys, partitions_of_many(new_keys, count), strict=True))
        remembered = found
        if new_keys and max(map(len, new_keys)) > _BULK_MEMO_KEY_SIZE:  # bounds the memo
            remembered = {k: p for k, p in found.items() if len(k) <= _BULK_MEMO_KEY_SIZE}
        if len(memo) + len(remembered) > _KEY_MEMO_ENTRIES:
            memo.clear()
        memo.update(remembered)
        return [
            partition if partition is not None else -1 if key is None else found[key]
            for key, partition in zip(keys, chosen, strict=True)
        ]

    def _check_size(self, topic: str, size: int, headers: Headers | None) -> None:
        if headers:
            size += headers_size_bound(headers)
        check_record_size(
            size + RECORD_SIZE_OVERHEAD,
            max_request_size=self._config.max_request_size,
            buffer_memory=self._config.buffer_memory,
            topic=topic,
        )

    def _custom_partition(
        self, topic: str, key: bytes | None, value: bytes | None, count: int
    ) -> int:
        partitioner = self._partitioner
        cluster = self._cluster
        if partitioner is None or cluster is None:  # pragma: no cover - checked by the caller
            raise IllegalStateError("no custom partitioner or no metadata")
        chosen = partitioner.partition(topic, key, value, cluster)
        return validate_partition(topic, chosen, count, f"partitioner {partitioner!r}")

    def _wait_on_metadata(self, topic: str) -> tuple[int, float]:
        """The topic's partition count, waiting for its metadata if needed (the first send
        to a topic); also the time left of ``max_block_ms``."""
        check_topic_name(topic)
        client = self._client
        if client is None:  # pragma: no cover - the gate started it
            raise IllegalStateError("the producer is not started")
        metadata = client.metadata
        metadata.add_topic(topic, client.now())
        cluster = metadata.cluster
        remaining = self._max_block_ms
        if not cluster.has_topic(topic):
            if on_io_thread():
                raise IllegalStateError(
                    f"the partitions of topic {topic!r} are not known yet (they are being "
                    "fetched now), and were needed in a callback on the producer's I/O thread, "
                    "which is the thread that fetches them: it cannot wait for them there "
                    "(every delivery would stall for max_block_ms). Send to a new topic, or "
                    "ask partitions_for() it, from another thread first"
                )
            started = _monotonic()
            try:
                cluster = metadata.wait_for_topic(topic, remaining)
            except KafkaTimeoutError as error:
                # No broker answered: say why (README's error table promises it).
                last = _last_connection_error(client) if error.__cause__ is None else None
                if last is None:
                    raise
                raise KafkaTimeoutError(f"{error}; last connection error: {last}") from last
            remaining = max(0.0, remaining - (_monotonic() - started) * 1000.0)
        count = cluster.partition_count(topic)
        self._cluster = metadata.cluster
        self._partition_counts[topic] = count
        return count, remaining

    def _send_failed(
        self,
        error: Exception,
        topic: str,
        partition: int | None,
        interceptors: InterceptorChain | None,
    ) -> Exception | None:
        """Tell the interceptors; return a clearer error to raise when the producer was
        closed, failed or forked meanwhile (a wait for metadata or memory ended by it)."""
        if interceptors is not None and isinstance(topic, str) and topic:
            interceptors.on_send_error(ProducerRecord(topic), partition, error)
        if not isinstance(topic, str):
            # send() looks an unhashable topic (a list, a dict) up before naming it.
            try:
                check_topic_name(topic)
            except InvalidTopicNameError as named:
                return named
        gate = self._gate
        if isinstance(error, IllegalStateError) and gate is not None:
            replacement = self._gate_error(gate)
            if type(replacement) is not type(error):
                return replacement
        return None

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
        if gate is _State.NOT_STARTED or gate is _State.CLOSED:
            return
        if gate is not None:
            raise self._gate_error(gate)
        sender = self._sender
        if sender is None:  # pragma: no cover - started when the gate is None
            return
        if sender.is_sender_thread():
            raise IllegalStateError(
                "flush() was called from a callback on the producer's I/O thread: it would "
                "wait for itself"
            )
        self._accumulator.begin_flush()
        sender.wakeup()
        self._accumulator.await_flush_completion(None if timeout is None else timeout * 1000.0)
        if self._gate is _State.FAILED:
            raise self._gate_error(_State.FAILED)

    # ------------------------------------------------------------------ transactions

    def _require_transactional(self, action: str) -> TransactionalManager:
        transactional = self._transactional
        if transactional is None:
            raise TransactionStateError(
                f"cannot {action}: the producer has no transactional_id (set "
                "transactional_id=... to use transactions)"
            )
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

        >>> producer.init_transactions()                           # doctest: +SKIP
        >>> producer.begin_transaction()                           # doctest: +SKIP
        >>> producer.send("events", b"v")                          # doctest: +SKIP
        >>> producer.commit_transaction()                          # doctest: +SKIP
        """
        self._require_transactional("begin_transaction()").begin_transaction()

    def commit_transaction(self) -> None:
        """Flush, then commit the transaction (EndTxn). After an abortable error (a record
        failed) it raises TransactionStateError: call :meth:`abort_transaction`."""
        transactional = self._require_transactional("commit_transaction()")
        transactional.prepare_commit()
        self.flush()
        transactional.end_transaction(commit=True).wait(self._max_block_ms)

    def abort_transaction(self) -> None:
        """Abort the transaction: records still buffered fail with TransactionAbortedError,
        those sent are marked aborted (EndTxn). Also the way out of an abortable error."""
        transactional = self._require_transactional("abort_transaction()")
        transactional.prepare_abort()
        self._accumulator.abort_undrained_batches(
            TransactionAbortedError(
                f"the transaction of {transactional.txn_id!r} was aborted before the record "
                "was sent"
            )
        )
        self.flush()
        transactional.end_transaction(commit=False).wait(self._max_block_ms)

    def send_offsets_to_transaction(
        self, offsets: Mapping[Any, Any], group_metadata: object
    ) -> None:
        """Commit consumer offsets with the transaction (AddOffsetsToTxn, then TxnOffsetCommit
        to the group's coordinator): a read-process-write loop's input and output commit
        together. ``offsets`` maps ``(topic, partition)`` or a TopicPartition to the next
        offset to consume; ``group_metadata`` is the consumer group id or an object with a
        ``group_id`` attribute (a consumer's group metadata)."""
        transactional = self._require_transactional("send_offsets_to_transaction()")
        checked = offsets_of(offsets)
        group_id = group_id_of(group_metadata)
        if not checked:
            return
        transactional.send_offsets(checked, group_id).wait(self._max_block_ms)

    def transaction_identity(self) -> TransactionIdentity:
        """Flush, then return the open transaction's (transactional_id, producer_id,
        producer_epoch), for another producer to finish it with
        :meth:`complete_transaction`. This producer must then make no transactional call
        for it (closing is fine). See :mod:`kafkaline.producer.transaction_completion`."""
        transactional = self._require_transactional("transaction_identity()")
        transactional.require("transaction_identity()", TransactionState.IN_TRANSACTION)
        self.flush()
        return transactional.identity()

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
        if config is None:
            config = ProducerConfig.from_kwargs(**settings)
        elif settings:
            config = config.with_changes(**settings)
        complete_transaction(TransactionIdentity(*identity), commit=commit, config=config)

    def partitions_for(self, topic: str) -> tuple[PartitionMetadata, ...]:
        """The partitions of ``topic`` (number, leader, replicas), waiting up to
        ``max_block_ms`` for its metadata. Starts the producer if needed.

        >>> [p.partition for p in producer.partitions_for("events")]  # doctest: +SKIP
        [0, 1, 2]
        """
        if self._gate is not None:
            self._pass_gate()
        try:
            self._wait_on_metadata(topic)
        except Exception as error:
            replacement = self._send_failed(error, topic, None, None)
            if replacement is not None:
                raise replacement from error
            raise
        cluster = self._cluster
        return () if cluster is None else cluster.partitions_for(topic)

    def metrics(self) -> dict[str, float]:
        """The producer's metrics under the Java client's names: ``record-send-rate`` and
        ``-total``, ``record-error-*``, ``record-retry-*``, ``request-rate``,
        ``request-latency-avg``/``-max``, ``records-per-request-avg``, ``batch-size-avg``/
        ``-max``, ``compression-rate-avg``, ``record-queue-time-avg``/``-max``,
        ``buffer-total-bytes``, ``buffer-available-bytes``, ``bufferpool-wait-time-total``
        (ns), ``waiting-threads``, ``requests-in-flight``, ... Rates are per second over
        about the last 30 s (see :mod:`kafkaline.producer.metrics`)."""
        return self._metrics.read(_monotonic() * 1000.0)

    def __repr__(self) -> str:
        state = "running" if self._gate is None else self._gate.value
        return f"<Producer {','.join(self._config.bootstrap_servers)} {state}>"


#: send_batch() takes the columnar path from this many records: below, its per-call cost
#: (numpy and pyarrow calls, ~100-200 us) outweighs what it saves per record.
_COLUMNAR_MIN_RECORDS = 256
#: send_batch() keeps records of one shape on the list path (see _columnar_lists); the
#: tests turn this off to drive such records through the columnar path too.
_LISTS_FOR_ONE_SHAPE = True
#: send_batch() hands the columnar path lists in slices of this many records (bounds its
#: working memory).
_COLUMNAR_SLICE = 65536


def _columnar_lists(
    values: list[bytes | None],
    keys: list[bytes | None] | None,
    headers: list[tuple[tuple[str, bytes | None], ...] | None] | None,
) -> list[ArrowSlice] | None:
    """send_batch()'s checked lists as columnar slices; None when numpy and pyarrow are not
    both loaded already. Measured (300k records in calls of 10,000, alternating runs, load
    ~4.5): 2.06-2.46 CPU s per million records this way against 2.24-2.79 over the lists,
    but importing numpy costs ~0.13 s of CPU once: a program that has not loaded them
    (no Arrow in sight) keeps the list path. Since the list path encodes records of one
    shape by arithmetic, those take it anyway: 300k records of 10-byte keys and 100-byte
    values with both loaded, 1.56-1.63 CPU s/M over the lists against 2.13-2.22 this way
    (alternated runs, load ~1-2.5); for values of 60-140 bytes the two were on par (1.84-2.43
    this way, 1.94-2.13 over the lists), and these keep this path. Records of one shape
    now take ``Producer._send_shaped_lists`` where numpy is loaded (no pyarrow arrays)."""
    if "numpy" not in sys.modules or "pyarrow" not in sys.modules or _columnar() is None:
        return None
    slices = []
    for start in range(0, len(values), _COLUMNAR_SLICE):
        stop = start + _COLUMNAR_SLICE
        slices.append(
            ArrowSlice(
                None if keys is None else _binary_array(keys[start:stop]),
                _binary_array(values[start:stop]),
                None if headers is None else headers[start:stop],
                None,
                None,
                "ms",
            )
        )
    return slices


#: send_batch() hands lists of one shape to the columnar one-shape encoder for values of at
#: least this many bytes (its records' least value size, ``columnar._ONE_SHAPE_MIN_VALUE``).
_SHAPED_MIN_VALUE = 8


def _columnar_if_loaded() -> Any:
    """``producer.columnar`` for send_batch()'s lists of one shape, if numpy is loaded
    already (importing it costs ~0.13 s of CPU) and pyarrow (16 or later) is installed (the
    general encoder needs it, should the one-shape one decline a batch); else None."""
    if "numpy" not in sys.modules:
        return None
    return _columnar_without_pyarrow_import()


@functools.cache
def _columnar_without_pyarrow_import() -> Any:
    """``producer.columnar`` if pyarrow 16 or later is installed, found without importing it
    (where it is not loaded yet), else None."""
    if "pyarrow" in sys.modules:
        return _columnar()
    # Imported here, not at the top: importlib.metadata costs every program's start-up.
    import importlib.metadata

    try:
        if importlib.util.find_spec("pyarrow") is None:
            return None
        major = int(importlib.metadata.version("pyarrow").split(".")[0])
    except (ImportError, ValueError):
        return None
    if major < 16:  # no binary views
        return None
    return importlib.import_module("kafkaline.producer.columnar")


def _binary_array(items: list[bytes | None]) -> Any:
    """A pyarrow large_binary array of bytes and None, made by one ``bytes.join`` and numpy
    offsets: ~120 ns/record measured, against ~60 for ``pyarrow.array(items)``, which
    however imports pandas on first use (~1 s of CPU, a third of a 300k-record benchmark)."""
    np: Any = importlib.import_module("numpy")
    pa: Any = importlib.import_module("pyarrow")
    count = len(items)
    offsets = np.zeros(count + 1, np.int64)
    validity = None
    if None in items:
        valid = np.fromiter((item is not None for item in items), np.bool_, count)
        lengths = np.fromiter((0 if item is None else len(item) for item in items), np.int64, count)
        validity = pa.py_buffer(np.packbits(valid, bitorder="little"))
        data = b"".join(filter(None, items))
    else:
        lengths = np.fromiter(map(len, items), np.int64, count)  # type: ignore[arg-type]
        data = b"".join(items)  # type: ignore[arg-type]
    np.cumsum(lengths, out=offsets[1:])
    return pa.Array.from_buffers(
        pa.large_binary(), count, [validity, pa.py_buffer(offsets), pa.py_buffer(data)]
    )


@functools.cache
def _columnar() -> Any:
    """``producer.columnar`` if numpy and pyarrow (16 or later) are installed (the columnar
    send_arrow() path), else None (the path over Python lists)."""
    try:
        importlib.import_module("numpy")
        pyarrow = importlib.import_module("pyarrow")
    except ImportError:
        return None
    if not hasattr(pyarrow, "binary_view"):  # pyarrow before 16: no binary views
        return None
    return importlib.import_module("kafkaline.producer.columnar")


def _concatenate(np: Any, arrays: list[Any]) -> Any:
    if not arrays:  # a call without records
        return np.zeros(0, np.int64)
    return arrays[0] if len(arrays) == 1 else np.concatenate(arrays)


#: send_batch() over lists encodes and queues a call in slices of at most this many records
#: and (by their values) bytes: the working memory of a call stays bounded.
_LIST_SLICE_RECORDS = 65536
_LIST_SLICE_BYTES = 16 << 20


def _list_slices(values: Sequence[bytes | None], longest: int) -> list[tuple[int, int]]:
    """``(start, stop)`` of each slice of a send_batch() call over lists (one for most);
    ``longest``: the largest value's size."""
    count = len(values)
    if count * longest <= _LIST_SLICE_BYTES:  # the usual case, without a pass over values
        step = _LIST_SLICE_RECORDS
        return [(start, min(start + step, count)) for start in range(0, count, step)]
    try:
        ends = list(accumulate(map(len, values)))  # type: ignore[arg-type]  # None raises
    except TypeError:
        ends = list(accumulate(0 if value is None else len(value) for value in values))
    if ends[-1] <= _LIST_SLICE_BYTES and count <= _LIST_SLICE_RECORDS:
        return [(0, count)]
    slices = []
    start = 0
    while start < count:
        before = ends[start - 1] if start else 0
        stop = bisect_right(ends, before + _LIST_SLICE_BYTES, start, count)
        stop = min(max(stop, start + 1), start + _LIST_SLICE_RECORDS)
        slices.append((start, stop))
        start = stop
    return slices


def _longest_and_uniform(items: Sequence[bytes | None]) -> tuple[int, int | None]:
    """The largest size of ``items`` (0 if none; nulls count 0) and the one size all have
    (``None``: sizes differ, or there are nulls): it tells the list path whether its encoder
    for records of one shape applies. C-level passes, chosen by the first few sizes: where
    they are one, ``operator.countOf`` the first size over all (an identity test each for
    sizes below 257), without a list of the sizes, whose growth by realloc cost more than
    the count (valgrind, send_batch of 10,000 records with 10-byte keys and 100-byte
    values, the caller's thread: 2540 -> 2384 instructions a record with the same change to
    ``as_bytes_column``; 2783 with the set of the sizes, which stays for sizes that
    differ)."""
    try:
        head = list(map(len, items[:_SIZE_PROBE]))  # type: ignore[arg-type]  # None raises
        if head and head.count(head[0]) == len(head):
            sizes = map(len, items)  # type: ignore[arg-type]
            if operator.countOf(sizes, head[0]) == len(items):
                return head[0], head[0]
        found = set(map(len, items))  # type: ignore[arg-type]
    except TypeError:
        return max(map(len, filter(None, items)), default=0), None
    return max(found, default=0), None


#: _longest_and_uniform() looks at this many sizes first.
_SIZE_PROBE = 16


def _check_lengths(count: int, keys: Sized | None, headers: Sized | None) -> None:
    if keys is not None and len(keys) != count:
        raise ValueError(f"send_batch() got {len(keys)} keys for {count} values")
    if headers is not None and len(headers) != count:
        raise ValueError(f"send_batch() got {len(headers)} headers for {count} values")


def _report_queued(error: Exception, partial: BatchSendResult) -> None:
    """A bulk call ran out of buffer memory part way: the error says which records it queued
    (their input indices and futures), as ``queued`` (see BufferExhaustedError)."""
    if isinstance(error, BufferExhaustedError):
        futures = partial.futures()
        error.queued = {index: f for index, f in enumerate(futures) if f is not None}
        error.args = (
            f"{error.args[0] if error.args else error}; {len(error.queued)} of {len(futures)} "
            "records of this call were queued before it (their futures: the error's "
            "'queued', by input index), the rest were not",
        )


def _last_connection_error(client: NetworkClient) -> KafkaError | None:
    """Why the last failed connection of ``client`` failed, if one did."""
    try:
        failures = [client.connection_error(node) for node in client.node_ids]
    except (KeyError, RuntimeError):  # the I/O thread changed the connections meanwhile
        return None
    return next((failure for failure in reversed(failures) if failure is not None), None)


def _stop_sender(sender: Sender, timeout: float | None) -> None:
    if sender.is_sender_thread():
        _log.warning(
            "close() was called on the producer's own I/O thread (from a callback): closing "
            "forcefully, without waiting for buffered records"
        )
        sender.force_close()
        return
    if timeout is not None and timeout <= 0:
        sender.force_close()
    else:
        sender.initiate_close()
    if not sender.join(timeout):
        _log.warning(
            "the producer did not finish sending within the %s s close timeout; aborting the "
            "records left",
            timeout,
        )
        sender.force_close()
        # Bounded: a callback that blocks (on the I/O thread) must not hold close() for ever.
        if not sender.join(_CLOSE_GRACE_S):
            _log.warning(
                "the producer's I/O thread is still busy %s s after the close timeout (a "
                "callback that does not return?); close() returns without it",
                _CLOSE_GRACE_S,
            )


#: How long close(timeout) waits for the I/O thread after aborting, past its timeout.
_CLOSE_GRACE_S = 0.5


def _acknowledge_to(interceptors: InterceptorChain, future: FutureRecordMetadata) -> None:
    """Tell the interceptors how the record's send ends (on the I/O thread)."""

    def on_error(error: Exception) -> None:
        metadata = RecordMetadata(
            future.topic, future.partition, UNKNOWN_OFFSET, NO_TIMESTAMP, -1, -1
        )
        interceptors.on_acknowledgement(metadata, error)

    future.add_both(lambda metadata: interceptors.on_acknowledgement(metadata, None), on_error)


def _serialized(data: object, role: str, serializer: object) -> bytes:
    """A serializer's output as bytes: bytearray and memoryview copied, others refused."""
    if isinstance(data, (bytearray, memoryview)):
        return bytes(data)
    raise TypeError(
        f"{role}_serializer {serializer!r} returned {type(data).__name__}; it must return bytes "
        "or None"
    )


def _thread_name(client_id: str) -> str:
    return f"kafkaline-producer-network-thread | {client_id or 'producer'}"


def _nothing() -> None:
    """The wakeup before the Sender exists."""


def _call_if_alive(method: weakref.WeakMethod[Callable[[], None]]) -> None:
    function = method()
    if function is not None:
        function()
