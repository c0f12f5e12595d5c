"""Arrow writers (Spark >= 4.1): Spark hands each task its rows as Arrow record batches, which
go to the producer's Arrow path without becoming Python objects. Imported only where
pyspark has DataSourceArrowWriter (see data_source.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)

from kafkaline.spark.writers import _SinkWriter, write_batches


class KafkalineArrowWriter(_SinkWriter, DataSourceArrowWriter):
    """Batch writer: ``df.write.format("kafkaline")``."""

    def write(self, iterator: Iterator[Any]) -> WriterCommitMessage:
        return write_batches(self.options, self.columns, iterator)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        self._log_commit(messages, "write")

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        self._log_abort(messages, "write")


class KafkalineArrowStreamWriter(_SinkWriter, DataSourceStreamArrowWriter):
    """Streaming writer: ``df.writeStream.format("kafkaline")``; Spark's checkpoint decides
    which micro-batches run (again) after a restart."""

    def write(self, iterator: Iterator[Any]) -> WriterCommitMessage:
        return write_batches(self.options, self.columns, iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        self._log_commit(messages, f"micro-batch {batchId}")

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        self._log_abort(messages, f"micro-batch {batchId}")
