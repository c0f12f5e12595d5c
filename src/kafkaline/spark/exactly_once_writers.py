"""The exactly-once sink's Spark writers: ``write`` runs a task attempt's transaction on a
worker, ``commit`` and ``abort`` run the :class:`~kafkaline.spark.exactly_once.TransactionCommitter`
on the driver. Chosen by ``.option("deliveryGuarantee", "exactly-once")``."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark import TaskContext
from pyspark.sql import Row
from pyspark.sql.datasource import (
    DataSourceStreamWriter,
    DataSourceWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import StructType

from kafkaline import ConfigError, Producer, ProducerConfig
from kafkaline.spark.arrow_records import PartitionCount, TaskSender
from kafkaline.spark.exactly_once import (
    ExactlyOnceOptions,
    FileStateStore,
    SinkTransaction,
    TaskTransaction,
    TransactionCommitter,
    transactional_id,
)
from kafkaline.spark.sink_options import SinkOptions
from kafkaline.spark.sink_schema import SinkColumns
from kafkaline.spark.writers import _rows_as_batches

_log = logging.getLogger(__name__)

#: A batch write is one "batch" of the commit protocol.
BATCH_WRITE_ID = 0


@dataclass(frozen=True)
class TransactionalCommitMessage(WriterCommitMessage):
    """One task's rows per partition and the transaction it left open for the driver."""

    partitions: tuple[PartitionCount, ...]
    task: TaskTransaction

    @property
    def records(self) -> int:
        return sum(count.records for count in self.partitions)


def check_transactional_properties(options: SinkOptions) -> None:
    """On the driver: the producer settings must allow transactions (idempotence, acks=all)."""
    properties = dict(options.properties)
    properties["transactional.id"] = "kafkaline-check"
    try:
        ProducerConfig.from_properties(properties)
    except ConfigError as error:
        raise ConfigError(f"exactly-once needs a transactional producer: {error}") from error


def write_in_transaction(
    options: SinkOptions,
    columns: SinkColumns,
    eos: ExactlyOnceOptions,
    batches: Iterable[Any],
) -> TransactionalCommitMessage:
    """One task attempt: its own transactional id, init, send every row, flush, and hand the
    open transaction to the driver (never commit here). A failing attempt aborts its own
    transaction on its way out; a killed one leaves it to the driver's fencing."""
    context = TaskContext.get()
    if context is None:
        raise RuntimeError("write_in_transaction runs inside a Spark task")
    partition, attempt = context.partitionId(), context.attemptNumber()
    name = transactional_id(eos.prefix, partition, attempt)
    properties = dict(options.properties)
    properties["transactional.id"] = name
    producer = Producer.from_properties(properties)
    try:
        producer.init_transactions()
        producer.begin_transaction()
        sender = TaskSender(producer, columns, options.topic)
        for batch in batches:
            sender.send(batch)
        counts = sender.finish()
        transaction: SinkTransaction | None = None
        if any(count.records for count in counts):
            transaction = SinkTransaction(*producer.transaction_identity())
        else:
            producer.abort_transaction()  # nothing joined it: no request, nothing left open
    except BaseException:
        try:
            producer.abort_transaction()
        except Exception as error:  # the driver fences the id anyway
            _log.warning("kafkaline: task %s could not abort its transaction: %s", name, error)
        raise
    finally:
        producer.close()
    return TransactionalCommitMessage(
        tuple(counts), TaskTransaction(partition, attempt, transaction)
    )


def committer_for(options: SinkOptions, eos: ExactlyOnceOptions) -> TransactionCommitter:
    """The driver's committer: completes transactions and fences ids with this write's
    producer settings."""
    properties = dict(options.properties)
    config = ProducerConfig.from_properties(properties)

    def complete(transaction: SinkTransaction, commit: bool) -> None:
        Producer.complete_transaction(transaction.as_tuple(), commit=commit, config=config)

    def fence(name: str) -> None:
        with Producer(config.with_changes(transactional_id=name)) as producer:
            producer.init_transactions()  # aborts what the id left open

    store = None if eos.state_location is None else FileStateStore(eos.state_location)
    return TransactionCommitter(eos.prefix, complete, fence, store)


def _tasks(messages: Sequence[WriterCommitMessage | None]) -> list[TaskTransaction | None]:
    return [m.task if isinstance(m, TransactionalCommitMessage) else None for m in messages]


def _summary(messages: Sequence[WriterCommitMessage | None]) -> tuple[int, int]:
    chosen = [m for m in messages if isinstance(m, TransactionalCommitMessage)]
    return len(chosen), sum(m.records for m in chosen)


class _ExactlyOnceWriter:
    """State and driver-side protocol shared by the exactly-once writer classes."""

    def __init__(
        self,
        options: SinkOptions,
        columns: SinkColumns,
        schema: StructType,
        eos: ExactlyOnceOptions,
    ) -> None:
        self.options = options
        self.columns = columns
        self.schema = schema
        self.eos = eos
        # Made on the driver before any task runs: a commit a dead driver cut off is finished
        # now, before this run's tasks reuse (and so fence) the same transactional ids.
        committer_for(options, eos).recover()

    def _write(self, batches: Iterable[Any]) -> WriterCommitMessage:
        return write_in_transaction(self.options, self.columns, self.eos, batches)

    def _commit(self, messages: list[WriterCommitMessage | None], batch: int, what: str) -> None:
        committed = committer_for(self.options, self.eos).commit(batch, _tasks(messages))
        tasks, records = _summary(messages)
        if committed:
            _log.info(
                "kafkaline: %s committed exactly once: %d records, %d tasks", what, records, tasks
            )
        else:
            _log.warning("kafkaline: %s was committed before: its replay was aborted", what)

    def _abort(self, messages: list[WriterCommitMessage | None], batch: int, what: str) -> None:
        committer_for(self.options, self.eos).abort(batch, _tasks(messages))
        tasks, records = _summary(messages)
        _log.error("kafkaline: %s aborted: %d tasks' %d records aborted", what, tasks, records)


class ExactlyOnceRowWriter(_ExactlyOnceWriter, DataSourceWriter):
    def write(self, iterator: Iterator[Row]) -> WriterCommitMessage:
        return self._write(_rows_as_batches(iterator, self.schema))

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        self._commit(messages, BATCH_WRITE_ID, "write")

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        self._abort(messages, BATCH_WRITE_ID, "write")


class ExactlyOnceRowStreamWriter(_ExactlyOnceWriter, DataSourceStreamWriter):
    def write(self, iterator: Iterator[Row]) -> WriterCommitMessage:
        return self._write(_rows_as_batches(iterator, self.schema))

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        self._commit(messages, batchId, f"micro-batch {batchId}")

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        self._abort(messages, batchId, f"micro-batch {batchId}")
