"""Sending the rows of Arrow record batches through a producer, and counting what was
acknowledged per partition: the work of one Spark task.

Every batch goes through ``Producer.send_arrow`` whole (per topic when a ``topic`` column
routes its rows), with the ``partition`` and ``timestamp`` columns passed along when the
DataFrame has them, so no row is turned into Python objects one by one here."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa  # type: ignore[import-untyped]  # pyarrow ships no type information
import pyarrow.compute as pc  # type: ignore[import-untyped]  # as above

from kafkaline import BatchSendResult, Producer
from kafkaline.errors import SinkSchemaError
from kafkaline.spark.sink_schema import SinkColumns


@dataclass(frozen=True)
class PartitionCount:
    """Records a task wrote to one partition, and the offsets of the first and last."""

    topic: str
    partition: int
    records: int
    first_offset: int
    last_offset: int


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
        self._pending: deque[tuple[str, BatchSendResult]] = deque()
        # (topic, partition) -> [records, first offset, last offset]
        self._counts: dict[tuple[str, int], list[int]] = {}

    def send(self, batch: pa.RecordBatch) -> None:
        """Queue every row of ``batch``."""
        if batch.num_rows == 0:
            return
        columns = self._columns
        for topic, rows in self._by_topic(batch):
            result = self._producer.send_arrow(
                topic,
                rows,
                key="key" if columns.key else None,
                value="value",
                headers="headers" if columns.headers else None,
                partition="partition" if columns.partition else None,
                timestamp="timestamp" if columns.timestamp else None,
            )
            self._pending.append((topic, result))
        self._tally_done()

    def finish(self) -> list[PartitionCount]:
        """Flush, wait for every record; raise the first delivery error, else return the
        per-partition counts."""
        self._producer.flush()
        while self._pending:
            self._tally(*self._pending.popleft())
        return [
            PartitionCount(topic, partition, records, first, last)
            for (topic, partition), (records, first, last) in sorted(self._counts.items())
        ]

    def _tally_done(self) -> None:
        while self._pending and self._pending[0][1].done():
            self._tally(*self._pending.popleft())

    def _tally(self, topic: str, result: BatchSendResult) -> None:
        # partition_counts() raises the first failed record's error: the task fails with it.
        # It summarises per batch, not per record: building every record's metadata here
        # was 2.4-3.3 CPU s per million rows, the largest part of the sink's own work.
        for partition, (records, first, last) in result.partition_counts().items():
            count = self._counts.get((topic, partition))
            if count is None:
                self._counts[(topic, partition)] = [records, first, last]
            else:
                count[0] += records
                count[1] = min(count[1], first)
                count[2] = max(count[2], last)

    def _by_topic(self, batch: pa.RecordBatch) -> Iterator[tuple[str, pa.RecordBatch]]:
        if self._topic is not None:  # the option wins over the column, as in Spark's sink
            yield self._topic, batch
            return
        column = batch.column("topic")
        if column.null_count:
            raise SinkSchemaError(
                "column 'topic' is null in a row and no 'topic' option is set: the kafkaline "
                "sink cannot tell where the record goes"
            )
        topics = pc.unique(column).to_pylist()
        if len(topics) == 1:
            yield topics[0], batch
            return
        for topic in topics:
            yield topic, batch.filter(pc.equal(column, topic))
