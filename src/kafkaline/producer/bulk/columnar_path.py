""":class:`ColumnarPath`: send_arrow() without a loop over records, the ``columnar`` bulk
encoder. Each slice's columns are checked (sizes, partitions, timestamps: errors name the row
of the whole input), partitioned by the vectorised murmur2 and made a
:class:`~kafkaline.producer.bulk.columnar.ColumnarRecords`, which encodes whole batches' worth
of records for :meth:`RecordAccumulator.append_encoded
<kafkaline.producer.accumulator.RecordAccumulator.append_encoded>`.

numpy and pyarrow are imported by name when a producer chooses this encoder (see
:func:`~kafkaline.producer.bulk.encoder.choose_encoder`): kafkaline imports without them.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kafkaline.errors import InvalidRecordTimestampError, RecordTooLargeError
from kafkaline.producer.accumulator import EncodedRun, RecordAccumulator
from kafkaline.producer.bulk.arrow import TO_MILLISECONDS, ArrowSlice, arrow_slices
from kafkaline.producer.bulk.encoder import ArrowColumns
from kafkaline.producer.bulk.result import BatchSendResult, BulkRun, report_queued
from kafkaline.producer.partitioner import validate_partition
from kafkaline.producer.validation import check_headers, headers_size_bound
from kafkaline.record import Headers
from kafkaline.record.record_encoder import encode_headers

if TYPE_CHECKING:
    from kafkaline.net.cluster import ClusterMetadata

__all__ = ["ColumnarPath"]

_monotonic = time.monotonic


class ColumnarPath:
    """The ``columnar`` :class:`~kafkaline.producer.bulk.encoder.BulkEncoder` of a producer's
    bulk calls (``columnar``: the ``bulk.columnar`` module, imported only with numpy).
    :class:`BulkSender <kafkaline.producer.bulk.sender.BulkSender>` hands over
    ``begin(topic, partition)``: the call's checks, then the partition count and the
    ``max_block_ms`` left, and ``check_size(topic, size, headers)``."""

    name = "columnar"

    def __init__(
        self,
        columnar: Any,
        accumulator: RecordAccumulator,
        *,
        payload_limit: int,
        keyed: bool,
        begin: Callable[[str, int | None], tuple[int, float]],
        check_size: Callable[[str, int, Headers | None], None],
        cluster: Callable[[], ClusterMetadata | None],
        wakeup: Callable[[], None],
        translate_error: Callable[[Exception, str, int | None], Exception | None],
    ) -> None:
        self._columnar = columnar
        self._accumulator = accumulator
        self._payload_limit = payload_limit
        self._keyed = keyed
        self._begin = begin
        self._check_size = check_size
        self._cluster = cluster
        self._wakeup = wakeup
        self._translate_error = translate_error

    def send_arrow(self, topic: str, data: Any, columns: ArrowColumns) -> BatchSendResult:
        """send_arrow()'s columns read as slices of Arrow arrays, then :meth:`send`."""
        slices = arrow_slices(
            data, columns.key, columns.value, columns.headers, columns.partition, columns.timestamp
        )
        return self.send(topic, slices, columns.partition, columns.timestamp)

    def send(
        self,
        topic: str,
        slices: list[ArrowSlice],
        partition_column: str | None,
        timestamp_column: str | None,
    ) -> BatchSendResult:
        """Check every slice, then append them."""
        columnar = self._columnar
        np: Any = importlib.import_module("numpy")
        columns: Any = importlib.import_module("kafkaline.producer.bulk.columns")
        count, max_block_ms = self._begin(topic, None)
        now = time.time_ns() // 1_000_000
        # Checks first, for every slice: errors are raised before anything is queued.
        sources = []
        row = 0
        for part in slices:
            records = self._records(
                columnar, columns, np, topic, part, row, count, now, partition_column,
                timestamp_column,
            )  # fmt: skip
            sources.append((records, row))
            row += len(part.values)
        runs: list[BulkRun] = []
        wake = False
        deadline_ms = _monotonic() * 1000.0 + max_block_ms

        def result() -> BatchSendResult:
            records = [source for source, _ in sources]
            return BatchSendResult.of_sizes(
                topic,
                row,
                runs,
                _concatenate(np, [source.key_sizes for source in records]),
                _concatenate(np, [source.value_sizes for source in records]),
                now
                if timestamp_column is None
                else _concatenate(np, [source.timestamps for source in records]),
            )

        try:
            for source, first_row in sources:
                if self._append(topic, source, first_row, deadline_ms, runs):
                    wake = True
        except Exception as error:
            replacement = self._translate_error(error, topic, None)
            report_queued(error, result())
            if replacement is not None:
                raise replacement from error
            raise
        finally:
            if wake:
                self._wakeup()
        return result()

    def _records(
        self,
        columnar: Any,
        columns: Any,
        np: Any,
        topic: str,
        part: ArrowSlice,
        first_row: int,
        count: int,
        now: int,
        partition_column: str | None,
        timestamp_column: str | None,
    ) -> Any:
        """One slice's columns checked (errors name the row of the whole input) and made a
        ``ColumnarRecords`` (``columnar`` and ``columns``: the modules, imported with numpy)."""
        values = columns.binary_column(part.values)
        keys = None if part.keys is None else columns.binary_column(part.keys)
        header_blocks = self._check_sizes(columns, np, topic, part, first_row, keys, values)
        timestamps: Any = now  # one for every row
        if part.timestamps is not None:
            timestamps = _timestamps(np, part, first_row, now, timestamp_column)
        chosen: Any = None
        prefixes = None
        if keys is not None and self._keyed:
            chosen, prefixes = columns.murmur2_partitions_and_prefixes(
                keys,
                count,
                columns.prefixes_needed(values, part.headers is not None, part.timestamps is None),
            )
        if part.partitions is not None:
            chosen = _given_partitions(
                np, topic, part, first_row, count, len(values.lengths), chosen, partition_column
            )
        return columnar.ColumnarRecords(keys, values, header_blocks, timestamps, chosen, prefixes)

    def _check_sizes(
        self,
        columns: Any,
        np: Any,
        topic: str,
        part: ArrowSlice,
        first_row: int,
        keys: Any,
        values: Any,
    ) -> Any:
        """RecordTooLargeError naming the first row over the limits; the slice's header blocks
        (encoded per record in Python: rows with headers are the exception), or None."""
        # Each row's key + value size, computed per row only when the largest key and the
        # largest value together exceed the limit (known per column: no pass over the rows).
        largest = max(0, values.longest)
        if keys is not None:
            largest += max(0, keys.longest)
        if largest <= self._payload_limit and part.headers is None:
            return None
        sizes: Any = np.maximum(values.lengths, 0)
        if keys is not None:
            sizes = sizes + np.maximum(keys.lengths, 0)
        header_blocks = None
        header_lists: list[Headers | None] = []
        if part.headers is not None:
            header_blocks, header_lists = _header_blocks(columns, part.headers)
            sizes = sizes + np.array(
                [0 if h is None else headers_size_bound(h) for h in header_lists], np.int64
            )
        for index in np.flatnonzero(sizes > self._payload_limit).tolist():
            header = header_lists[index] if header_lists else None
            kv = int(sizes[index]) - (0 if header is None else headers_size_bound(header))
            try:
                self._check_size(topic, kv, header)
            except RecordTooLargeError as error:
                raise type(error)(f"record {first_row + index}: {error}") from None
        return header_blocks

    def _append(
        self,
        topic: str,
        source: Any,  # bulk.columnar.ColumnarRecords (its module is imported only with numpy)
        first_row: int,
        deadline_ms: float,
        runs: list[BulkRun],
    ) -> bool:
        """Append a source whose first record is input row ``first_row``, adding its runs to
        ``runs`` (also when it raises); whether the Sender needs a wakeup."""
        encoded_runs: list[EncodedRun] = []
        now_ms = _monotonic() * 1000.0
        try:
            _, wake = self._accumulator.append_encoded(
                topic,
                source,
                max(0.0, deadline_ms - now_ms),
                now_ms,
                self._cluster(),
                self._wakeup,
                encoded_runs,
            )
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


def _header_blocks(columns: Any, headers: Any) -> tuple[Any, list[Headers | None]]:
    """A headers column as a binary column of encoded header blocks, and the checked lists."""
    blocks = []
    header_lists: list[Headers | None] = []
    for entry in headers.to_pylist():
        checked = (
            None if not entry else check_headers([(item["key"], item["value"]) for item in entry])
        )
        header_lists.append(checked)
        blocks.append(b"\x00" if checked is None else encode_headers(checked))
    pa: Any = importlib.import_module("pyarrow")
    return columns.binary_column(pa.array(blocks, pa.binary())), header_lists


def _timestamps(
    np: Any, part: ArrowSlice, first_row: int, now: int, timestamp_column: str | None
) -> Any:
    """A slice's timestamps in epoch milliseconds (nulls: ``now``), checked."""
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
    return np.where(valid, millis, now).astype(np.int64)


def _given_partitions(
    np: Any,
    topic: str,
    part: ArrowSlice,
    first_row: int,
    count: int,
    rows: int,
    chosen: Any,
    partition_column: str | None,
) -> Any:
    """Each row's partition: the column's where given (checked), else ``chosen``'s (or -1:
    sticky)."""
    given = part.partitions
    valid = given.is_valid().to_numpy(zero_copy_only=False)
    numbers = given.fill_null(0).cast(importlib.import_module("pyarrow").int64()).to_numpy()
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
    return np.where(valid, numbers, fallback)


def _concatenate(np: Any, arrays: list[Any]) -> Any:
    if not arrays:  # a call without records
        return np.zeros(0, np.int64)
    return arrays[0] if len(arrays) == 1 else np.concatenate(arrays)
