"""Arrow versions of the exactly-once writers (Spark >= 4.1; see arrow_writers.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)

from kafkaline.spark.exactly_once_writers import BATCH_WRITE_ID, _ExactlyOnceWriter


class ExactlyOnceArrowWriter(_ExactlyOnceWriter, DataSourceArrowWriter):
    """Batch writer with ``deliveryGuarantee`` ``exactly-once``."""

    def write(self, iterator: Iterator[Any]) -> WriterCommitMessage:
        return self._write(iterator)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        self._commit(messages, BATCH_WRITE_ID, "write")

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        self._abort(messages, BATCH_WRITE_ID, "write")


class ExactlyOnceArrowStreamWriter(_ExactlyOnceWriter, DataSourceStreamArrowWriter):
    """Streaming writer with ``deliveryGuarantee`` ``exactly-once``: one round of the commit
    protocol per micro-batch."""

    def write(self, iterator: Iterator[Any]) -> WriterCommitMessage:
        return self._write(iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        self._commit(messages, batchId, f"micro-batch {batchId}")

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        self._abort(messages, batchId, f"micro-batch {batchId}")
