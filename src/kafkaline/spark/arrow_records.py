"""Sending the rows of Arrow record batches through a producer, and counting what was
acknowledged per partition: the work of one Spark task.

Rows with only key, value and headers (the common case) go through ``Producer.send_arrow``
for the whole batch (per topic when a ``topic`` column routes them), so they are never turned
into Python objects one by one. Rows with a ``partition`` or ``timestamp`` go through
``Producer.send`` one by one: the bulk calls take neither per record."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol

import pyarrow as pa  # type: ignore[import-untyped]  # pyarrow ships no type information
import pyarrow.compute as pc  # type: ignore[import-untyped]  # as above

from kafkaline import FutureRecordMetadata, Producer, RecordMetadata
from kafkaline.spark.sink_schema import SinkColumns

_MICROS_PER_UNIT = {"s": 1_000_000, "ms": 1_000, "us": 1, "ns": 1}


@dataclass(frozen=True)
class PartitionCount:
    """Records a task wrote to one partition, and the offsets of the first and last."""

    topic: str
    partition: int
    records: int
    first_offset: int
    last_offset: int


class _PendingSend(Protocol):
    """What send_arrow's result and a list of send() futures have in common."""

    def done(self) -> bool: ...

    def get(self, timeout: float | None = None) -> list[RecordMetadata]: ...


class _Futures:
    def __init__(self, futures: list[FutureRecordMetadata]) -> None:
        self._futures = futures

    def done(self) -> bool:
        return all(future.done() for future in self._futures)

    def get(self, timeout: float | None = None) -> list[RecordMetadata]:
        return [future.get(timeout) for future in self._futures]


class TaskSender:
    """Sends a task's record batches and tallies their acknowledgements.

    :meth:`finish` flushes the producer and raises the first delivery error, so a task that
    returns has had every record acknowledged. Acknowledged sends are tallied as the task
    goes, which keeps the pending ones (and the bytes they hold) to what is in flight.
    """

    def __init__(self, producer: Producer, columns: SinkColumns, topic: str | None) -> None:
        self._producer = producer
        self._columns = columns
        self._topic = topic
        self._pending: deque[_PendingSend] = deque()
        # (topic, partition) -> [records, first offset, last offset]
        self._counts: dict[tuple[str, int], list[int]] = {}

    def send(self, batch: pa.RecordBatch) -> None:
        """Queue every row of ``batch``."""
        if batch.num_rows == 0:
            return
        for topic, rows in self._by_topic(batch):
            if self._needs_per_row_send(rows):
                self._pending.append(_Futures(list(self._send_rows(topic, rows))))
            else:
                self._pending.append(
                    self._producer.send_arrow(
                        topic,
                        rows,
                        key="key" if self._columns.key else None,
                        value="value",
                        headers="headers" if self._columns.headers else None,
                    )
                )
        self._tally_done()

    def finish(self) -> list[PartitionCount]:
        """Flush, wait for every record; raise the first delivery error, else return the
        per-partition counts."""
        self._producer.flush()
        while self._pending:
            self._tally(self._pending.popleft())
        return [
            PartitionCount(topic, partition, records, first, last)
            for (topic, partition), (records, first, last) in sorted(self._counts.items())
        ]

    def _tally_done(self) -> None:
        while self._pending and self._pending[0].done():
            self._tally(self._pending.popleft())

    def _tally(self, pending: _PendingSend) -> None:
        # get() raises the first failed record's error: the task fails with it.
        for metadata in pending.get():
            count = self._counts.get((metadata.topic, metadata.partition))
            if count is None:
                self._counts[(metadata.topic, metadata.partition)] = [
                    1,
                    metadata.offset,
                    metadata.offset,
                ]
            else:
                count[0] += 1
                count[1] = min(count[1], metadata.offset)
                count[2] = max(count[2], metadata.offset)

    def _by_topic(self, batch: pa.RecordBatch) -> Iterator[tuple[str, pa.RecordBatch]]:
        if self._topic is not None:  # the option wins over the column, as in Spark's sink
            yield self._topic, batch
            return
        column = batch.column("topic")
        if column.null_count:
            raise ValueError(
                "column 'topic' is null in a row and no 'topic' option is set: the kafkaline "
                "sink cannot tell where the record goes"
            )
        topics = pc.unique(column).to_pylist()
        if len(topics) == 1:
            yield topics[0], batch
            return
        for topic in topics:
            yield topic, batch.filter(pc.equal(column, topic))

    def _needs_per_row_send(self, rows: pa.RecordBatch) -> bool:
        columns = self._columns
        return (columns.partition and rows.column("partition").null_count < rows.num_rows) or (
            columns.timestamp and rows.column("timestamp").null_count < rows.num_rows
        )

    def _send_rows(self, topic: str, rows: pa.RecordBatch) -> Iterator[FutureRecordMetadata]:
        columns = self._columns
        count = rows.num_rows
        values = _bytes_list(rows.column("value"))
        keys = _bytes_list(rows.column("key")) if columns.key else [None] * count
        headers = _headers_list(rows.column("headers")) if columns.headers else [None] * count
        partitions: list[Any] = (
            rows.column("partition").to_pylist() if columns.partition else [None] * count
        )
        timestamps = (
            _epoch_millis(rows.column("timestamp")) if columns.timestamp else [None] * count
        )
        send = self._producer.send
        for value, key, header, partition, timestamp in zip(
            values, keys, headers, partitions, timestamps, strict=True
        ):
            yield send(topic, value, key, header, partition, timestamp)


def _bytes_list(column: pa.Array) -> list[bytes | None]:
    if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
        column = pc.cast(column, pa.binary())
    values: list[bytes | None] = column.to_pylist()
    return values


def _headers_list(column: pa.Array) -> list[list[tuple[str, bytes | None]] | None]:
    return [
        None if row is None else [(item["key"], item["value"]) for item in row]
        for row in column.to_pylist()
    ]


def _epoch_millis(column: pa.Array) -> list[int | None]:
    """Spark hands timestamps to Arrow as microseconds (UTC, or none for TIMESTAMP_NTZ, read
    as UTC here); Kafka wants epoch milliseconds."""
    per_unit = _MICROS_PER_UNIT[column.type.unit]
    raw = column.cast(pa.int64()).to_pylist()
    if column.type.unit == "ns":
        return [None if t is None else t // 1_000_000 for t in raw]
    return [None if t is None else t * per_unit // 1_000 for t in raw]
