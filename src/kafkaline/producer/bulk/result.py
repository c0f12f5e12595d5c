"""What ``send_batch()`` and ``send_arrow()`` return: :class:`BatchSendResult`, one object for
all of a call's records.

A bulk call returns one result object, not one future per record: it keeps the runs of records
the accumulator appended to each batch (``(batch result, first offset delta, count)``) and the
input positions of each run, and builds the records' metadata only when asked.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from kafkaline.errors import BufferExhaustedError, KafkaTimeoutError
from kafkaline.producer.futures import (
    SPLIT,
    SUCCEEDED,
    FutureRecordMetadata,
    ProduceRequestResult,
)
from kafkaline.producer.record_metadata import NO_TIMESTAMP, UNKNOWN_OFFSET, RecordMetadata

__all__ = ["BatchSendResult", "BulkRun", "report_queued"]

#: One run of records in one batch: the batch's result, the first record's offset delta, how
#: many records, and their input positions (``None``: consecutive from ``first_position``).
BulkRun = tuple[ProduceRequestResult, int, int, "Sequence[int] | None", int]


class BatchSendResult:
    """The outcome of one ``send_batch()`` / ``send_arrow()`` call, for all its records.

    ``get(timeout)`` waits and returns every record's :class:`RecordMetadata` in input order,
    or raises the first failed record's error; ``done()`` says whether all completed;
    ``exceptions()`` maps the input index of every failed record to its error.
    ``timestamp`` is the records' create time: one for all, or one per record (input order).
    ``encoder`` says how the call's records were encoded (see the producer's
    ``bulk_encoder`` setting): ``"records"``, ``"columnar"`` or ``"per-record"`` (one
    ``send()`` each, taken with interceptors).

    >>> result = producer.send_batch("events", [b"a", b"b"], keys=[b"k1", b"k2"])  # doctest: +SKIP
    >>> [m.offset for m in result.get(timeout=10)]                                # doctest: +SKIP
    [41, 7]
    """

    __slots__ = (
        "_count",
        "_encoder",
        "_futures",
        "_keys",
        "_runs",
        "_sized",
        "_timestamp",
        "_topic",
        "_values",
    )

    def __init__(
        self,
        topic: str,
        count: int,
        runs: list[BulkRun],
        keys: Sequence[bytes | None],
        values: Sequence[bytes | None],
        timestamp: int | Sequence[int],
        encoder: str = "records",
    ) -> None:
        self._topic = topic
        self._encoder = encoder
        self._count = count
        self._runs = runs
        self._keys = keys
        self._values = values
        self._timestamp = timestamp
        self._futures: list[FutureRecordMetadata] | None = None
        #: keys and values hold the records' serialized sizes (-1: null), not their bytes.
        self._sized = False

    @classmethod
    def of_sizes(
        cls,
        topic: str,
        count: int,
        runs: list[BulkRun],
        key_sizes: Any,
        value_sizes: Any,
        timestamp: int | Any,
    ) -> BatchSendResult:
        """A result whose records are known by their key and value sizes (-1: null) and
        timestamps: numpy arrays, or sequences of ints (the columnar path keeps no bytes)."""
        result = cls(topic, count, runs, key_sizes, value_sizes, timestamp, "columnar")
        result._sized = True
        return result

    def _sizes(self) -> tuple[Sequence[int], Sequence[int], int | Sequence[int]]:
        """Every record's key size, value size (-1: null) and its timestamp (or one for all)."""
        timestamp = self._timestamp
        if not isinstance(timestamp, int) and hasattr(timestamp, "tolist"):
            timestamp = timestamp.tolist()
        if self._sized:
            keys: Any = self._keys
            values: Any = self._values
            return (
                keys.tolist() if hasattr(keys, "tolist") else keys,
                values.tolist() if hasattr(values, "tolist") else values,
                timestamp,
            )
        return (
            [-1 if key is None else len(key) for key in self._keys],
            [-1 if value is None else len(value) for value in self._values],
            timestamp,
        )

    @classmethod
    def of_futures(cls, topic: str, futures: list[FutureRecordMetadata]) -> BatchSendResult:
        """A result over per-record futures (the path taken with interceptors)."""
        result = cls(topic, len(futures), [], (), (), NO_TIMESTAMP, "per-record")
        result._futures = futures
        return result

    @property
    def encoder(self) -> str:
        """How the records were encoded: ``"records"`` (the record encoder's loop, in the
        compiled core or the Python builder), ``"columnar"`` (numpy over whole columns) or
        ``"per-record"`` (one ``send()`` per record)."""
        return self._encoder

    def __len__(self) -> int:
        return self._count

    def __repr__(self) -> str:
        state = "done" if self.done() else "pending"
        return f"<BatchSendResult {self._topic} {self._count} records {state}>"

    # ------------------------------------------------------------------ waiting

    def done(self) -> bool:
        """Whether every record's send completed (succeeded or failed)."""
        if self._futures is not None:
            return all(future.done() for future in self._futures)
        for result, first_delta, count, _, _ in self._runs:
            if not result.is_done():  # completed and its callbacks ran
                return False
            if result.state is SPLIT and not all(
                _resolve(result, first_delta + j)[0].is_done() for j in range(count)
            ):
                return False
        return True

    def _wait(self, timeout: float | None) -> None:
        deadline = None if timeout is None else time.monotonic() + timeout
        for result, _, _, _, _ in self._runs:
            if not result.wait_final(deadline):
                raise KafkaTimeoutError(
                    f"the records sent to {result.topic}-{result.partition} were not "
                    f"acknowledged within the {timeout} s timeout given to get()"
                )

    def get(self, timeout: float | None = None) -> list[RecordMetadata]:
        """Wait up to ``timeout`` seconds (``None``: for ever); return the records' metadata
        in input order. Raises the first failed record's error (by input index), or
        :class:`~kafkaline.errors.KafkaTimeoutError` if not all are done in time."""
        if self._futures is not None:
            deadline = None if timeout is None else time.monotonic() + timeout
            return [
                future.get(None if deadline is None else max(0.0, deadline - time.monotonic()))
                for future in self._futures
            ]
        self._wait(timeout)
        errors = self._collect_errors()
        if errors:
            raise errors[min(errors)]
        metadata: list[RecordMetadata | None] = [None] * self._count
        topic = self._topic
        key_sizes, value_sizes, timestamps = self._sizes()
        per_record = None if isinstance(timestamps, int) else timestamps
        timestamp = timestamps if isinstance(timestamps, int) else NO_TIMESTAMP
        for result, first_delta, count, positions, first_position in self._runs:
            if positions is not None and hasattr(positions, "tolist"):
                positions = positions.tolist()
            for j in range(count):
                position = first_position + j if positions is None else positions[j]
                final, delta = _resolve(result, first_delta + j)
                base = final.base_offset
                if per_record is not None:
                    timestamp = per_record[position]
                metadata[position] = RecordMetadata(
                    topic,
                    final.partition,
                    base + delta if base != UNKNOWN_OFFSET else UNKNOWN_OFFSET,
                    final.log_append_time if final.log_append_time != NO_TIMESTAMP else timestamp,
                    key_sizes[position],
                    value_sizes[position],
                )
        return metadata  # type: ignore[return-value]  # every position is filled

    def partition_counts(self, timeout: float | None = None) -> dict[int, tuple[int, int, int]]:
        """Wait like :meth:`get`; return ``{partition: (records, lowest offset, highest
        offset)}`` for this call's records, or raise the first failed record's error.

        The summary a caller that only counts wants (the Spark sink's commit messages),
        without a :class:`RecordMetadata` per record: one step per batch the records went
        to. Offsets are -1 where the broker gave none (``acks=0``, or a duplicate an
        idempotent producer was told it had already written).

        >>> producer.send_batch("t", [b"a", b"b", b"c"]).partition_counts()  # doctest: +SKIP
        {4: (3, 120, 122)}
        """
        if self._futures is not None:
            return _summarise(self.get(timeout))
        self._wait(timeout)
        counts: dict[int, tuple[int, int, int]] = {}
        for result, first_delta, count, _, _ in self._runs:
            if result.state is not SUCCEEDED:
                # A failed or split batch: the per-record path raises the first error, or
                # follows every record to the batch it went to.
                return _summarise(self.get(0))
            base = result.base_offset
            if base == UNKNOWN_OFFSET:
                _merge(counts, result.partition, count, UNKNOWN_OFFSET, UNKNOWN_OFFSET)
            else:
                first = base + first_delta
                _merge(counts, result.partition, count, first, first + count - 1)
        return counts

    def exceptions(self, timeout: float | None = None) -> dict[int, Exception]:
        """Wait like :meth:`get`; return ``{input index: error}`` of the records that failed
        (empty when all succeeded)."""
        if self._futures is not None:
            deadline = None if timeout is None else time.monotonic() + timeout
            errors: dict[int, Exception] = {}
            for index, future in enumerate(self._futures):
                remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
                error = future.exception(remaining)
                if error is not None:
                    errors[index] = error
            return errors
        self._wait(timeout)
        return self._collect_errors()

    def _collect_errors(self) -> dict[int, Exception]:
        errors: dict[int, Exception] = {}
        for result, first_delta, count, positions, first_position in self._runs:
            if positions is not None and hasattr(positions, "tolist"):
                positions = positions.tolist()
            for j in range(count):
                final, delta = _resolve(result, first_delta + j)
                error = final.record_error(delta)
                if error is not None:
                    errors[first_position + j if positions is None else positions[j]] = error
        return errors

    def futures(self) -> list[FutureRecordMetadata]:
        """One future per record, in input order (made on demand)."""
        if self._futures is not None:
            return list(self._futures)
        made: list[FutureRecordMetadata | None] = [None] * self._count
        key_sizes, value_sizes, timestamps = self._sizes()
        for result, first_delta, count, positions, first_position in self._runs:
            if positions is not None and hasattr(positions, "tolist"):
                positions = positions.tolist()
            for j in range(count):
                position = first_position + j if positions is None else positions[j]
                made[position] = FutureRecordMetadata(
                    result,
                    first_delta + j,
                    key_sizes[position],
                    value_sizes[position],
                    timestamps if isinstance(timestamps, int) else timestamps[position],
                )
        return made  # type: ignore[return-value]  # every position is filled


def _merge(
    counts: dict[int, tuple[int, int, int]], partition: int, records: int, first: int, last: int
) -> None:
    """Add ``records`` at offsets ``first..last`` (-1: unknown) to ``partition``'s count."""
    seen = counts.get(partition)
    if seen is None:
        counts[partition] = (records, first, last)
        return
    seen_records, seen_first, seen_last = seen
    counts[partition] = (
        seen_records + records,
        first
        if seen_first == UNKNOWN_OFFSET
        else seen_first
        if first == UNKNOWN_OFFSET
        else min(seen_first, first),
        max(seen_last, last),
    )


def _summarise(metadata: Sequence[RecordMetadata]) -> dict[int, tuple[int, int, int]]:
    counts: dict[int, tuple[int, int, int]] = {}
    for record in metadata:
        _merge(counts, record.partition, 1, record.offset, record.offset)
    return counts


def _resolve(result: ProduceRequestResult, delta: int) -> tuple[ProduceRequestResult, int]:
    while True:
        target = result.redirected(delta)
        if target is None:
            return result, delta
        result, delta = target


def report_queued(error: Exception, partial: BatchSendResult) -> None:
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
