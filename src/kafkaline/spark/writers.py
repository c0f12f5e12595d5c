"""The sink's writers: the per-task ``write`` (on the workers) and the job's ``commit`` and
``abort`` (on the driver), for batch and streaming writes.

Spark >= 4.1 has Arrow writers (the rows arrive as Arrow record batches and go to the
producer's Arrow path); with 4.0 the row writers collect rows into Arrow batches of
``ROWS_PER_BATCH`` and send those the same way."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]  # pyarrow ships no type information
from pyspark.sql import Row
from pyspark.sql.datasource import (
    DataSourceStreamWriter,
    DataSourceWriter,
    WriterCommitMessage,
)
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from kafkaline.spark.arrow_records import PartitionCount, TaskSender
from kafkaline.spark.producer_cache import WORKER_PRODUCERS
from kafkaline.spark.sink_options import SinkOptions
from kafkaline.spark.sink_schema import SinkColumns

_log = logging.getLogger(__name__)

ROWS_PER_BATCH = 10_000


@dataclass(frozen=True)
class KafkalineCommitMessage(WriterCommitMessage):
    """What one task wrote: records per partition with their first and last offsets."""

    partitions: tuple[PartitionCount, ...]

    @property
    def records(self) -> int:
        return sum(count.records for count in self.partitions)


def write_batches(
    options: SinkOptions, columns: SinkColumns, batches: Iterable[Any]
) -> KafkalineCommitMessage:
    """One task's work: send every Arrow batch, flush, and fail with the first delivery
    error (a task never reports success with undelivered records)."""
    producer = WORKER_PRODUCERS.get(options.properties)
    sender = TaskSender(producer, columns, options.topic)
    try:
        for batch in batches:
            sender.send(batch)
        counts = sender.finish()
    except BaseException:
        # The records this task queued may still be in the producer: a retried task sends
        # them again, so drop them (and a producer whose Sender failed) with the producer.
        WORKER_PRODUCERS.discard(options.properties)
        raise
    return KafkalineCommitMessage(tuple(counts))


def summarize(messages: Sequence[WriterCommitMessage | None]) -> tuple[int, int, str]:
    """(tasks that reported, records, "topic-partition: n, ...") over commit messages."""
    per_partition: dict[tuple[str, int], int] = {}
    tasks = 0
    for message in messages:
        if isinstance(message, KafkalineCommitMessage):
            tasks += 1
            for count in message.partitions:
                key = (count.topic, count.partition)
                per_partition[key] = per_partition.get(key, 0) + count.records
    text = ", ".join(f"{t}-{p}: {n}" for (t, p), n in sorted(per_partition.items()))
    return tasks, sum(per_partition.values()), text


def _rows_as_batches(rows: Iterator[Row], schema: StructType) -> Iterator[Any]:
    arrow_schema = to_arrow_schema(schema)
    chunk: list[dict[str, Any]] = []
    for row in rows:
        chunk.append(row.asDict(recursive=True))
        if len(chunk) == ROWS_PER_BATCH:
            yield pa.RecordBatch.from_pylist(chunk, schema=arrow_schema)
            chunk = []
    if chunk:
        yield pa.RecordBatch.from_pylist(chunk, schema=arrow_schema)


class _SinkWriter:
    """State and driver-side callbacks shared by every writer class."""

    def __init__(self, options: SinkOptions, columns: SinkColumns, schema: StructType) -> None:
        self.options = options
        self.columns = columns
        self.schema = schema

    def _log_commit(self, messages: list[WriterCommitMessage | None], what: str) -> None:
        tasks, records, text = summarize(messages)
        summary = f"kafkaline: {what} committed: {records} records from {tasks} tasks ({text})"
        _log.info("%s", summary)
        # On the driver's console too, beside Spark's own messages: the library's logger
        # prints nothing unless the application configures logging.
        print(summary, file=sys.stderr, flush=True)

    def _log_abort(self, messages: list[WriterCommitMessage | None], what: str) -> None:
        tasks, records, text = summarize(messages)
        failed = sum(1 for message in messages if message is None)
        summary = (
            f"kafkaline: {what} aborted ({failed} tasks failed); {tasks} tasks had written "
            f"{records} records, which stay in Kafka ({text or 'none'})"
        )
        _log.error("%s", summary)
        print(summary, file=sys.stderr, flush=True)


class KafkalineRowWriter(_SinkWriter, DataSourceWriter):
    """Batch writer for Spark versions without Arrow writers."""

    def write(self, iterator: Iterator[Row]) -> WriterCommitMessage:
        return write_batches(self.options, self.columns, _rows_as_batches(iterator, self.schema))

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        self._log_commit(messages, "write")

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        self._log_abort(messages, "write")


class KafkalineRowStreamWriter(_SinkWriter, DataSourceStreamWriter):
    """Streaming writer for Spark versions without Arrow writers."""

    def write(self, iterator: Iterator[Row]) -> WriterCommitMessage:
        return write_batches(self.options, self.columns, _rows_as_batches(iterator, self.schema))

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        self._log_commit(messages, f"micro-batch {batchId}")

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        self._log_abort(messages, f"micro-batch {batchId}")
