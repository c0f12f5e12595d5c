""":class:`BulkSender`: ``Producer.send_batch()`` and ``Producer.send_arrow()``.

A bulk call is checked whole (types, sizes, partitions, timestamps: errors name the record's
index or the column and row) before anything is queued, then handed to one of two encoders,
chosen by the producer's ``bulk_encoder`` setting, never by what else is imported:

- ``records``: the records, grouped per partition, go to
  :meth:`RecordAccumulator.append_many
  <kafkaline.producer.accumulator.RecordAccumulator.append_many>`, which encodes them one by
  one into the partition's open batch (a C loop in the compiled core, the record builder in
  the pure-Python build), taking each partition's records by their input positions.
  send_batch() over lists always takes it. Where the compiled core is built, lists it takes
  whole (bytes or None, usual headers, no serializers) are checked and grouped per
  partition in C (``lists_accepted``, ``group_positions``); anything else goes through the
  Python checks below, which name the bad index.
- ``columnar`` (:mod:`kafkaline.producer.bulk.columnar_path`): send_arrow()'s columns
  partitioned and encoded by numpy over whole columns.
"""

from __future__ import annotations

import functools
import importlib
import operator
import time
from collections.abc import Callable, Sequence
from itertools import compress, repeat
from typing import TYPE_CHECKING, Any

from kafkaline.errors import IllegalStateError, InvalidPartitionError, RecordTooLargeError
from kafkaline.producer.accumulator import BulkSegment, RecordAccumulator
from kafkaline.producer.bulk.arrow import (
    arrow_columns,
    arrow_partitions_and_timestamps,
    arrow_slices,
)
from kafkaline.producer.bulk.columnar_path import ColumnarPath
from kafkaline.producer.bulk.lists import (
    as_bytes_column,
    check_lengths,
    group_by_partition,
    longest,
)
from kafkaline.producer.bulk.result import BatchSendResult, BulkRun, report_queued
from kafkaline.producer.murmur2 import partitions_of_many
from kafkaline.producer.partitioner import Partitioner, validate_partition
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
_monotonic = time.monotonic
#: Keys up to this size are remembered by the key -> partition memo of the pure-Python build.
_MEMO_KEY_SIZE = 128
#: Entries of that memo per partition count (cleared when full).
_MEMO_ENTRIES = 1 << 15

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
        self._partitioner: Partitioner | None = config.partitioner
        self._key_partition = key_partition
        self._partition_count = partition_count
        self._cluster = cluster
        self._wakeup = wakeup
        self._translate_error = translate_error
        self._check_send_allowed = check_send_allowed
        self._send_one = send_one
        self._payload_limit = min(config.max_request_size, config.buffer_memory) - (
            RECORD_SIZE_OVERHEAD
        )
        # The pure-Python build's key -> partition memo, per partition count.
        self._partition_memo: dict[int, dict[bytes, int]] = {}
        self._columnar = ColumnarPath(
            accumulator,
            payload_limit=self._payload_limit,
            keyed=key_partition is not None,
            begin=self._begin,
            check_size=self._check_size,
            cluster=cluster,
            wakeup=wakeup,
            translate_error=translate_error,
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
        if self._send_one is not None:
            count = len(values)
            key_list = [None] * count if keys is None else keys
            header_list = [None] * count if headers is None else headers
            check_lengths(count, key_list, header_list)
            send = self._send_one
            return BatchSendResult.of_futures(
                topic,
                [
                    send(topic, value, key, header, partition)
                    for value, key, header in zip(values, key_list, header_list, strict=True)
                ],
            )
        if self._lists_accepted(values, keys, headers):
            return self.send_records(topic, values, keys, headers, partition)
        checked_values, checked_keys, checked_headers = self._prepare(topic, values, keys, headers)
        return self.send_records(topic, checked_values, checked_keys, checked_headers, partition)

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
        if self._send_one is None and self._partitioner is None:
            columnar = self._columnar_encoder()
            if columnar is not None:
                slices = arrow_slices(data, key, value, headers, partition, timestamp)
                return self._columnar.send(columnar, topic, slices, partition, timestamp)
        keys, values, header_list = arrow_columns(data, key, value, headers)
        partitions, timestamps = arrow_partitions_and_timestamps(data, partition, timestamp)
        if self._send_one is not None:
            return self._send_each(topic, keys, values, header_list, partitions, timestamps)
        checked_headers = None
        if header_list is not None:
            checked_headers = [None if not h else check_headers(h) for h in header_list]
        self._check_sizes(topic, keys, values, checked_headers)
        return self.send_records(
            topic,
            values,
            keys,
            checked_headers,
            None,
            partitions,
            timestamps,
            f"column {partition!r}",
        )

    def _send_each(
        self,
        topic: str,
        keys: list[bytes | None] | None,
        values: list[bytes | None],
        header_list: list[Headers | None] | None,
        partitions: list[int | None] | None,
        timestamps: list[int | None] | None,
    ) -> BatchSendResult:
        """send_arrow() with interceptors: every row through the producer's send()."""
        if partitions is None and timestamps is None:
            return self.send_batch(topic, values, keys, header_list, None)
        send = self._send_one
        if send is None:  # pragma: no cover - checked by the caller
            raise IllegalStateError("no per-record send")
        return BatchSendResult.of_futures(
            topic,
            [
                send(
                    topic,
                    values[i],
                    None if keys is None else keys[i],
                    None if header_list is None else header_list[i],
                    None if partitions is None else partitions[i],
                    None if timestamps is None else timestamps[i],
                )
                for i in range(len(values))
            ],
        )

    def _columnar_encoder(self) -> Any:
        """``bulk.columnar`` when the ``bulk_encoder`` setting asks for it (``auto``: where
        numpy and pyarrow 16+ are installed), else None."""
        chosen = self._config.bulk_encoder
        if chosen == "records":
            return None
        found = columnar_module()
        if found is None and chosen == "columnar":
            raise ModuleNotFoundError(
                "bulk_encoder='columnar' needs numpy and pyarrow 16 or later, which are not "
                "installed: install kafkaline with its spark extra (pip install '.[spark]' "
                "from the clone), or set bulk_encoder='auto' or 'records'",
                name="numpy",
            )
        return found

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

    # ------------------------------------------------------------------ the records encoder

    def send_records(
        self,
        topic: str,
        values: Sequence[bytes | None],
        keys: Sequence[bytes | None] | None,
        headers: Sequence[Headers | None] | None,
        partition: int | None,
        partitions: Sequence[int | None] | None = None,
        timestamps: Sequence[int | None] | None = None,
        partitions_source: str = "",
    ) -> BatchSendResult:
        """Partition checked records and append them per partition (``append_many``).

        ``partitions`` (one per record, ``None``: the partitioner's choice; checked here
        against the topic, errors naming ``partitions_source`` and the row) and
        ``timestamps`` (one per record, ``None``: now; checked by the caller) are
        send_arrow()'s columns."""
        count, max_block_ms = self._begin(topic, partition)
        now = time.time_ns() // 1_000_000
        timestamp: int | list[int] = now
        if timestamps is not None:
            timestamp = [now if t is None else t for t in timestamps]
        key_list: Sequence[bytes | None] = [None] * len(values) if keys is None else keys
        groups = self._groups(topic, values, keys, partition, partitions, count, partitions_source)
        runs: list[BulkRun] = []
        wake = False
        # max_block_ms bounds the whole call's waits for memory, not each partition's.
        deadline_ms = _monotonic() * 1000.0 + max_block_ms
        try:
            for group_partition, positions in groups:
                if self._append_group(
                    topic, group_partition, positions, timestamp, key_list, values, headers,
                    deadline_ms, runs,
                ):  # fmt: skip
                    wake = True
        except Exception as error:
            replacement = self._translate_error(error, topic, partition)
            report_queued(
                error, BatchSendResult(topic, len(values), runs, key_list, values, timestamp)
            )
            if replacement is not None:
                raise replacement from error
            raise
        finally:
            if wake:
                self._wakeup()
        return BatchSendResult(topic, len(values), runs, key_list, values, timestamp)

    def _groups(
        self,
        topic: str,
        values: Sequence[bytes | None],
        keys: Sequence[bytes | None] | None,
        partition: int | None,
        partitions: Sequence[int | None] | None,
        count: int,
        partitions_source: str,
    ) -> Sequence[tuple[int | None, Sequence[int] | None]]:
        """``(partition or None for sticky, input positions or None for all in order)``
        for every partition the records go to."""
        if partition is not None:
            validate_partition(topic, partition, count, "send_batch()")
            return [(partition, None)]
        hashed = keys if self._key_partition is not None else None
        if _CORE is not None and self._partitioner is None:
            # The same choices as below, grouped in one C pass (positions kept compact).
            if partitions is not None:
                check_given_partitions(topic, partitions, count, partitions_source)
            elif hashed is None:
                return [(None, None)]
            groups: list[tuple[int | None, Sequence[int]]] = _CORE.group_positions(
                len(values), hashed, partitions, count
            )
            return groups
        if partitions is not None:
            chosen = self._given_partitions(
                topic, partitions, keys, values, count, partitions_source
            )
            return group_by_partition(chosen, count)
        if hashed is not None:
            return group_by_partition(self._key_partitions(hashed, count), count)
        if self._partitioner is not None:
            key_list: Sequence[bytes | None] = [None] * len(values) if keys is None else keys
            chosen = [
                self._custom_partition(topic, k, v, count)
                for k, v in zip(key_list, values, strict=True)
            ]
            return group_by_partition(chosen, count)
        return [(None, None)]

    def _append_group(
        self,
        topic: str,
        partition: int | None,
        positions: Sequence[int] | None,
        timestamp: int | list[int],
        keys: Sequence[bytes | None],
        values: Sequence[bytes | None],
        headers: Sequence[Headers | None] | None,
        deadline_ms: float,
        runs: list[BulkRun],
    ) -> bool:
        """One partition's records appended (``positions``: their input positions, None for
        all in order), their runs added to ``runs`` also when it raises; whether the Sender
        needs a wakeup."""
        now_ms = _monotonic() * 1000.0
        segments: list[BulkSegment] = []
        try:
            _, new_or_full = self._accumulator.append_many(
                topic,
                partition,
                timestamp,
                keys,
                values,
                headers,
                max(0.0, deadline_ms - now_ms),
                now_ms,
                self._cluster(),
                self._wakeup,
                segments,
                positions,
            )
        finally:  # also what was queued before an error, for the error to report
            offset = 0
            for result, first_delta, run_count in segments:
                if positions is None:
                    runs.append((result, first_delta, run_count, None, offset))
                else:
                    run_positions = positions[offset : offset + run_count]
                    runs.append((result, first_delta, run_count, run_positions, 0))
                offset += run_count
        return new_or_full

    # ------------------------------------------------------------------ partitions

    def _given_partitions(
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
        present = check_given_partitions(topic, partitions, count, source)
        if len(present) == len(partitions):
            return present
        chosen: list[int] = list(partitions)  # type: ignore[arg-type]  # Nones replaced below
        missing = [row for row, given in enumerate(partitions) if given is None]
        if keys is not None and self._key_partition is not None:
            found = self._key_partitions([keys[row] for row in missing], count)
            for row, partition in zip(missing, found, strict=True):
                chosen[row] = partition
        elif self._partitioner is not None:
            for row in missing:
                chosen[row] = self._custom_partition(
                    topic, None if keys is None else keys[row], values[row], count
                )
        else:
            for row in missing:
                chosen[row] = -1
        return chosen

    def _key_partitions(self, keys: Sequence[bytes | None], count: int) -> list[int]:
        """The partition of each key (``-1`` for ``None``: sticky), as send() chooses them.

        Looked up in a key -> partition memo per partition count; the keys it misses are
        hashed all at once (``murmur2.partitions_of_many``)."""
        if self._key_partition is None:  # pragma: no cover - checked by the caller
            raise IllegalStateError("keyed partitioning is off")
        memo = self._partition_memo.setdefault(count, {})
        try:  # every key known, the common case once a producer has seen its keys
            return list(map(memo.__getitem__, keys))  # type: ignore[arg-type]
        except KeyError:  # a key not seen yet, or None
            pass
        chosen: list[int | None] = list(map(memo.get, keys))  # type: ignore[arg-type]
        # The keys the memo missed (and None keys), each once.
        missing = dict.fromkeys(compress(keys, map(operator.is_, chosen, repeat(None))))
        missing.pop(None, None)
        new_keys: list[bytes] = list(missing)  # type: ignore[arg-type]  # None popped
        found = dict(zip(new_keys, partitions_of_many(new_keys, count), strict=True))
        remembered = {k: p for k, p in found.items() if len(k) <= _MEMO_KEY_SIZE}
        if len(memo) + len(remembered) > _MEMO_ENTRIES:
            memo.clear()
        memo.update(remembered)
        return [
            partition if partition is not None else -1 if key is None else found[key]
            for key, partition in zip(keys, chosen, strict=True)
        ]

    def _custom_partition(
        self, topic: str, key: bytes | None, value: bytes | None, count: int
    ) -> int:
        partitioner = self._partitioner
        cluster = self._cluster()
        if partitioner is None or cluster is None:  # pragma: no cover - checked by the caller
            raise IllegalStateError("no custom partitioner or no metadata")
        chosen = partitioner.partition(topic, key, value, cluster)
        return validate_partition(topic, chosen, count, f"partitioner {partitioner!r}")


def check_given_partitions(
    topic: str, partitions: Sequence[int | None], count: int, source: str
) -> list[int]:
    """The partitions given per record (``None`` left out), each checked against the
    topic's ``count``: an error names the first bad row of ``source``."""
    present = [p for p in partitions if p is not None]
    if present and (min(present) < 0 or max(present) >= count):
        for row, given in enumerate(partitions):
            if given is not None and not 0 <= given < count:
                validate_partition(topic, given, count, f"row {row} of {source}")
    return present


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


@functools.cache
def columnar_module() -> Any:
    """``bulk.columnar`` if numpy and pyarrow (16 or later) are installed, else None."""
    try:
        importlib.import_module("numpy")
        pyarrow = importlib.import_module("pyarrow")
    except ImportError:
        return None
    if not hasattr(pyarrow, "binary_view"):  # pyarrow before 16: no binary views
        return None
    return importlib.import_module("kafkaline.producer.bulk.columnar")
