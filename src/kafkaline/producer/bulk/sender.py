""":class:`BulkSender`: ``Producer.send_batch()`` and ``Producer.send_arrow()``.

A bulk call is checked whole (types, sizes, partitions, timestamps: errors name the record's
index or the column and row) before anything is queued, then handed to a bulk encoder (see
:mod:`kafkaline.producer.bulk.encoder`, their one interface): send_arrow() to the one
:func:`~kafkaline.producer.bulk.encoder.choose_encoder` picks from the producer's
``bulk_encoder`` setting, never by what else is imported; send_batch() over lists to
``records`` (``per-record`` with interceptors). BulkSender itself only orchestrates: the
serializers, the checks of lists, what every call checks first (:meth:`BulkSender._begin`).

Where the compiled core is built, lists it takes whole (bytes or None, usual headers, no
serializers) are checked in C (``lists_accepted``); anything else goes through the Python
checks below, which name the bad index.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from kafkaline.errors import InvalidPartitionError, RecordTooLargeError
from kafkaline.producer.accumulator import RecordAccumulator
from kafkaline.producer.bulk.columnar_path import ColumnarPath
from kafkaline.producer.bulk.encoder import ArrowColumns, BulkEncoder, choose_encoder
from kafkaline.producer.bulk.lists import as_bytes_column, check_lengths, longest
from kafkaline.producer.bulk.per_record import PerRecordPath
from kafkaline.producer.bulk.records_path import RecordsPath
from kafkaline.producer.bulk.result import BatchSendResult
from kafkaline.producer.serializers import Serializer
from kafkaline.producer.validation import (
    RECORD_SIZE_OVERHEAD,
    check_headers,
    check_payload_size,
    check_topic_name,
)
from kafkaline.record import Headers
from kafkaline.record.core import compiled_core

if TYPE_CHECKING:
    from kafkaline.config import ProducerConfig
    from kafkaline.net.cluster import ClusterMetadata
    from kafkaline.producer.futures import FutureRecordMetadata

__all__ = ["BulkSender"]


_CORE = compiled_core()

CheckedHeaders = list[tuple[tuple[str, bytes | None], ...] | None]


class BulkSender:
    """The bulk calls of one producer. The producer hands over what it owns as callables:
    ``partition_count(topic)`` is the topic's partition count and the ``max_block_ms`` left
    (waiting for metadata), ``cluster()`` the current metadata, ``wakeup()`` wakes the Sender,
    ``translate_error(error, topic, partition)`` a clearer error to raise (or None),
    ``check_send_allowed`` the transaction's check (None without transactions) and
    ``send_one`` the producer's ``send()`` where every record must go through it
    (interceptors), else None."""

    def __init__(
        self,
        config: ProducerConfig,
        accumulator: RecordAccumulator,
        *,
        key_serializer: Serializer[Any] | None,
        value_serializer: Serializer[Any] | None,
        key_partition: Callable[[bytes, int], int] | None,
        partition_count: Callable[[str], tuple[int, float]],
        cluster: Callable[[], ClusterMetadata | None],
        wakeup: Callable[[], None],
        translate_error: Callable[[Exception, str, int | None], Exception | None],
        check_send_allowed: Callable[[], None] | None,
        send_one: Callable[..., FutureRecordMetadata] | None,
    ) -> None:
        self._config = config
        self._accumulator = accumulator
        self._key_serializer = key_serializer
        self._value_serializer = value_serializer
        self._key_partition = key_partition
        self._partition_count = partition_count
        self._cluster = cluster
        self._wakeup = wakeup
        self._translate_error = translate_error
        self._check_send_allowed = check_send_allowed
        self._payload_limit = min(config.max_request_size, config.buffer_memory) - (
            RECORD_SIZE_OVERHEAD
        )
        self._per_record = None if send_one is None else PerRecordPath(send_one)
        #: The ``records`` encoder: send_batch()'s over lists, send_arrow()'s where chosen.
        self.records = RecordsPath(
            accumulator,
            partitioner=config.partitioner,
            key_partition=key_partition,
            begin=self._begin,
            check_sizes=self._check_sizes,
            cluster=cluster,
            wakeup=wakeup,
            translate_error=translate_error,
        )

    @functools.cached_property
    def arrow_encoder(self) -> BulkEncoder:
        """The encoder send_arrow() takes, chosen at its first call (``columnar`` imports
        numpy: send_batch() alone never does)."""
        return choose_encoder(
            self._config.bulk_encoder,
            per_record=self._per_record,
            records=self.records,
            custom_partitioner=self._config.partitioner is not None,
            columnar=self._columnar_path,
        )

    def _columnar_path(self, columnar: Any) -> ColumnarPath:
        return ColumnarPath(
            columnar,
            self._accumulator,
            payload_limit=self._payload_limit,
            keyed=self._key_partition is not None,
            begin=self._begin,
            check_size=self._check_size,
            cluster=self._cluster,
            wakeup=self._wakeup,
            translate_error=self._translate_error,
        )

    # ------------------------------------------------------------------ the two calls

    def send_batch(
        self,
        topic: str,
        values: Sequence[Any],
        keys: Sequence[Any] | None,
        headers: Sequence[Headers | None] | None,
        partition: int | None,
    ) -> BatchSendResult:
        """See :meth:`Producer.send_batch <kafkaline.Producer.send_batch>`."""
        if self._per_record is not None:
            return self._per_record.send_lists(topic, values, keys, headers, partition)
        if self._lists_accepted(values, keys, headers):
            return self.records.send_records(topic, values, keys, headers, partition)
        checked_values, checked_keys, checked_headers = self._prepare(topic, values, keys, headers)
        return self.records.send_records(
            topic, checked_values, checked_keys, checked_headers, partition
        )

    def send_arrow(
        self,
        topic: str,
        data: Any,
        key: str | None,
        value: str,
        headers: str | None,
        partition: str | None,
        timestamp: str | None,
    ) -> BatchSendResult:
        """See :meth:`Producer.send_arrow <kafkaline.Producer.send_arrow>`."""
        columns = ArrowColumns(key, value, headers, partition, timestamp)
        return self.arrow_encoder.send_arrow(topic, data, columns)

    # ------------------------------------------------------------------ checks

    def _lists_accepted(
        self, values: Sequence[Any], keys: Sequence[Any] | None, headers: object
    ) -> bool:
        """Whether the compiled core takes the call's lists whole, checked in one C pass
        (no serializers; lists of bytes or None, headers None or lists of ``(str, bytes or
        None)`` tuples, every record within the size limit). If not, :meth:`_prepare`'s
        checks run and name what is wrong."""
        return (
            _CORE is not None
            and self._key_serializer is None
            and self._value_serializer is None
            and _CORE.lists_accepted(values, keys, headers, self._payload_limit)
        )

    def _prepare(
        self,
        topic: str,
        values: Sequence[Any],
        keys: Sequence[Any] | None,
        headers: Sequence[Headers | None] | None,
    ) -> tuple[list[bytes | None], list[bytes | None] | None, CheckedHeaders | None]:
        """send_batch()'s checks and serializers over whole sequences (C-level where the
        records are already bytes): values, keys and headers as checked lists."""
        if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
            raise TypeError(f"values must be a sequence, not {type(values).__name__}")
        if keys is not None and (isinstance(keys, (str, bytes)) or not isinstance(keys, Sequence)):
            raise TypeError(f"keys must be a sequence or None, not {type(keys).__name__}")
        check_lengths(len(values), keys, headers)
        checked_headers: CheckedHeaders | None = None
        if headers is not None:
            checked_headers = []
            for index, header in enumerate(headers):
                try:
                    checked_headers.append(None if not header else check_headers(header))
                except TypeError as error:
                    raise TypeError(f"headers[{index}]: {error}") from None
        if self._key_serializer is not None and keys is not None:
            keys = _serialized(self._key_serializer, topic, keys, checked_headers)
        if self._value_serializer is not None:
            values = _serialized(self._value_serializer, topic, values, checked_headers)
        value_list = as_bytes_column(values, "values")
        key_list = None if keys is None else as_bytes_column(keys, "keys")
        self._check_sizes(topic, key_list, value_list, checked_headers)
        return value_list, key_list, checked_headers

    def _check_sizes(
        self,
        topic: str,
        keys: Sequence[bytes | None] | None,
        values: Sequence[bytes | None],
        headers: Sequence[Headers | None] | None,
    ) -> None:
        """Raise RecordTooLargeError naming the first record over the limits."""
        # The largest key plus the largest value bounds every record: one C-level pass each,
        # and a per-record look only when that bound is over the limit or there are headers.
        bound = longest(values) + (0 if keys is None else longest(keys))
        if headers is None and bound <= self._payload_limit:
            return
        for index, value in enumerate(values):
            key = None if keys is None else keys[index]
            size = (0 if key is None else len(key)) + (0 if value is None else len(value))
            header = None if headers is None else headers[index]
            if header is not None or size > self._payload_limit:
                try:
                    self._check_size(topic, size, header)
                except RecordTooLargeError as error:
                    raise type(error)(f"record {index}: {error}") from None

    def _check_size(self, topic: str, size: int, headers: Headers | None) -> None:
        check_payload_size(
            topic,
            size,
            headers,
            max_request_size=self._config.max_request_size,
            buffer_memory=self._config.buffer_memory,
        )

    def _begin(self, topic: str, partition: int | None) -> tuple[int, float]:
        """What a bulk call checks before it groups its records (the transaction allows
        sending; ``partition`` is ``None`` or an int >= 0), then the topic's partition count
        (waiting for its metadata) and the ``max_block_ms`` left for buffer memory."""
        if self._check_send_allowed is not None:
            self._check_send_allowed()
        if type(topic) is not str:  # a list or dict would fail the lookup, unnamed
            check_topic_name(topic)
        if partition is not None and (type(partition) is not int or partition < 0):
            raise InvalidPartitionError(
                f"partition={partition!r} given to send_batch() is invalid: must be None or "
                "an integer >= 0"
            )
        return self._partition_count(topic)


def _serialized(
    serializer: Serializer[Any],
    topic: str,
    items: Sequence[Any],
    headers: CheckedHeaders | None,
) -> list[Any]:
    return [
        serializer.serialize(topic, item, None if headers is None else headers[i])
        for i, item in enumerate(items)
    ]
