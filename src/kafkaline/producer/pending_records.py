"""What :meth:`RecordAccumulator.append <kafkaline.producer.accumulator.RecordAccumulator.append>`'s
one append protocol appends: a record, a run of records, or a chunk of records encoded for a
batch of their own. Each knows how to go into a batch and how much room a new batch needs for
it; the accumulator's loop (try the partition's last batch, else a new batch from the pool,
try again) is the same for all three.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple, Protocol

from kafkaline.errors import ProducerClosedError
from kafkaline.producer.batch import ProducerBatch
from kafkaline.producer.futures import FutureRecordMetadata, ProduceRequestResult
from kafkaline.record import Headers
from kafkaline.record.batch_format import BATCH_HEADER_SIZE
from kafkaline.record.record_encoder import RECORD_OVERHEAD_BOUND, encode_headers

__all__ = [
    "BulkSegment",
    "EncodedChunk",
    "EncodedRecords",
    "OneRecord",
    "PendingRecords",
    "RecordRun",
]

#: A run of consecutive records appended by ``RecordAccumulator.append_many`` to one batch:
#: ``(batch result, first offset delta, record count)``.
BulkSegment = tuple[ProduceRequestResult, int, int]


class EncodedChunk(NamedTuple):
    """Records encoded by an ``EncodedRecordSource`` for one batch."""

    #: Their part of a batch's records section, in pieces (slices of a larger buffer).
    records: tuple[bytes | memoryview, ...]
    #: Its size in bytes.
    size: int
    #: The first record's index in the source's order, and how many.
    start: int
    record_count: int
    first_timestamp: int
    max_timestamp: int
    #: For the group's open batch (encoded with its ``OpenBatch``), else a new batch.
    continues_open: bool


class PendingRecords(Protocol):
    """Records on their way into a partition's batches, in order."""

    @property
    def done(self) -> bool:
        """Whether every record is in a batch."""
        ...

    @property
    def fills_batch(self) -> bool:
        """Whether one append may fill a batch up to its limit (a run of records), rather
        than add :meth:`size_bound` bytes at most."""
        ...

    def append_to(self, batch: ProducerBatch) -> int | None:
        """Put as many of the records left as fit into ``batch``; return the bytes they take
        (for the sticky partitioner), or ``None`` when none fit."""
        ...

    def size_bound(self) -> int:
        """Bytes an empty batch needs for the next record (or chunk), header included."""
        ...

    def closed_error(self) -> ProducerClosedError:
        """The error for a producer closed before the records were all queued."""
        ...


class OneRecord:
    """A serialized record of :meth:`Producer.send`; its future once appended."""

    __slots__ = ("_bound", "done", "future", "headers", "key", "timestamp", "value")

    #: One record adds :meth:`size_bound` bytes at most (a class field: nothing to set).
    fills_batch = False

    def __init__(
        self, timestamp: int, key: bytes | None, value: bytes | None, headers: Headers | None
    ) -> None:
        self.timestamp = timestamp
        self.key = key
        self.value = value
        self.headers = headers
        self.future: FutureRecordMetadata | None = None
        self.done = False
        # Once, up front: a batch's memory check and the sticky partitioner both read it.
        if headers is None and type(value) is bytes and (key is None or type(key) is bytes):
            # The usual record, and every record of the compiled send()'s new-batch step:
            # record_size_bound's first case without its call.
            self._bound = RECORD_OVERHEAD_BOUND + len(value) + (0 if key is None else len(key))
        else:
            self._bound = record_size_bound(key, value, headers)

    def append_to(self, batch: ProducerBatch) -> int | None:
        future = batch.try_append(self.timestamp, self.key, self.value, self.headers)
        if future is None:
            return None
        self.future = future
        self.done = True
        return self._bound

    def size_bound(self) -> int:
        return BATCH_HEADER_SIZE + self._bound

    def closed_error(self) -> ProducerClosedError:
        return ProducerClosedError("the producer was closed while a send was in progress")


class RecordRun:
    """Records of parallel sequences (``send_batch()``), from ``position`` on (of
    ``positions``, the input indexes of the run's records, if given); each batch they go
    into adds a :data:`BulkSegment` to ``segments``."""

    __slots__ = (
        "_bound",
        "_bound_at",
        "count",
        "done",
        "fills_batch",
        "headers",
        "keys",
        "position",
        "positions",
        "segments",
        "timestamp",
        "values",
    )

    def __init__(
        self,
        timestamp: int | Sequence[int],
        keys: Sequence[bytes | None],
        values: Sequence[bytes | None],
        headers: Sequence[Headers | None] | None,
        segments: list[BulkSegment],
        positions: Sequence[int] | None = None,
    ) -> None:
        self.timestamp = timestamp
        self.keys = keys
        self.values = values
        self.headers = headers
        self.segments = segments
        self.positions = positions
        self.count = len(values) if positions is None else len(positions)
        self.position = 0
        self.done = self.count == 0
        self.fills_batch = True
        self._bound_at = -1
        self._bound = 0

    def append_to(self, batch: ProducerBatch) -> int | None:
        builder = batch.builder
        first = len(builder)
        size_before = builder.estimated_size_in_bytes if first else 0
        added = builder.append_many(
            self.keys,
            self.values,
            self.timestamp,
            self.headers,
            start=self.position,
            positions=self.positions,
        )
        if not added:
            return None
        self.segments.append((batch.result, first, added))
        self.position += added
        self.done = self.position >= self.count
        return builder.estimated_size_in_bytes - size_before

    def advance(self, count: int) -> None:
        """Count ``count`` more records as appended (by the compiled core's rounds)."""
        self.position += count
        self.done = self.position >= self.count

    def size_bound(self) -> int:
        at = self.position if self.positions is None else self.positions[self.position]
        if self._bound_at != at:  # asked again for the same record while it waits for a batch
            headers = None if self.headers is None else self.headers[at]
            self._bound = record_size_bound(self.keys[at], self.values[at], headers)
            self._bound_at = at
        return BATCH_HEADER_SIZE + self._bound

    def closed_error(self) -> ProducerClosedError:
        return ProducerClosedError(
            f"the producer was closed while send_batch() was in progress "
            f"({self.position} of {self.count} records were queued)"
        )


class EncodedRecords:
    """A chunk encoded for a batch of its own (offset deltas from 0): it goes only into an
    empty batch. ``progress`` is ``(records queued, of all)`` before it, for an error."""

    __slots__ = ("chunk", "done", "fills_batch", "progress", "result")

    def __init__(self, chunk: EncodedChunk, progress: tuple[int, int]) -> None:
        self.chunk = chunk
        self.progress = progress
        self.result: ProduceRequestResult | None = None
        self.done = False
        self.fills_batch = False

    def append_to(self, batch: ProducerBatch) -> int | None:
        if len(batch.builder):
            return None
        chunk = self.chunk
        batch.builder.append_encoded(
            chunk.records, chunk.record_count, chunk.first_timestamp, chunk.max_timestamp
        )
        self.result = batch.result
        self.done = True
        return chunk.size

    def size_bound(self) -> int:
        return BATCH_HEADER_SIZE + self.chunk.size

    def closed_error(self) -> ProducerClosedError:
        return ProducerClosedError(
            "the producer was closed while a bulk send was in progress "
            f"({self.progress[0]} of {self.progress[1]} records were queued)"
        )


def record_size_bound(key: bytes | None, value: bytes | None, headers: Headers | None) -> int:
    """An upper bound of the record's encoded size, checking the types on the way."""
    if type(value) is bytes and (key is None or type(key) is bytes) and not headers:
        # The usual record (once per new batch for records sent one at a time)
        return RECORD_OVERHEAD_BOUND + len(value) + (0 if key is None else len(key))
    size = RECORD_OVERHEAD_BOUND
    for name, field in (("key", key), ("value", value)):
        if field is None:
            continue
        if not isinstance(field, (bytes, bytearray, memoryview)):
            raise TypeError(f"record {name} must be bytes or None, not {type(field).__name__}")
        size += field.nbytes if isinstance(field, memoryview) else len(field)
    if headers:
        size += len(encode_headers(headers))
    return size
