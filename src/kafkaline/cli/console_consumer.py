"""The console consumer's parts: how a record is printed, read_committed done by the reader,
and reading one partition from an offset.

kafkaline has no consumer (it is a producer): like :mod:`kafkaline.cli.topic_admin`, this
speaks the requests itself (Metadata, ListOffsets, Fetch) over
:class:`kafkaline.testing.wire.BlockingConnection`, and decodes batches with
:func:`kafkaline.record.read_record_batches`. No consumer group: partitions are assigned.

read_committed is done here, from the log's control batches, so it is right even on brokers
that do not filter aborted records (Tansu): a transactional producer's records are held until
its commit or abort marker, and nothing after a still-open transaction's first record is shown
before that transaction ends (as a consumer stops at the last stable offset).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from kafkaline.cli.errors import UsageError
from kafkaline.record import Record, RecordBatch

#: The formatter properties (``--property``), as Java's DefaultMessageFormatter names them.
FORMAT_PROPERTIES = (
    "print.timestamp",
    "print.key",
    "print.offset",
    "print.partition",
    "print.headers",
    "print.value",
    "key.separator",
    "line.separator",
    "headers.separator",
    "headers.key.separator",
    "null.literal",
)
_TRUE_FALSE = {"true": True, "false": False}


@dataclass(frozen=True, slots=True)
class MessageFormat:
    """How a record is printed: Java's DefaultMessageFormatter's fields, in its order
    (timestamp, partition, offset, headers, key, value), each followed by key.separator.

    >>> fmt = MessageFormat.from_properties({"print.key": "true", "print.offset": "true"})
    >>> fmt.render(0, Record(5, 1000, b"k", b"v", ()), "CreateTime")
    b'Offset:5\\tk\\tv\\n'
    """

    print_timestamp: bool = False
    print_key: bool = False
    print_offset: bool = False
    print_partition: bool = False
    print_headers: bool = False
    print_value: bool = True
    key_separator: bytes = b"\t"
    line_separator: bytes = b"\n"
    headers_separator: bytes = b","
    headers_key_separator: bytes = b":"
    null_literal: bytes = b"null"

    @classmethod
    def from_properties(cls, properties: Mapping[str, str]) -> MessageFormat:
        """From ``--property`` pairs; an unknown name or a non-boolean flag is a UsageError."""
        values: dict[str, object] = {}
        for name, text in properties.items():
            if name not in FORMAT_PROPERTIES:
                raise UsageError(
                    f"--property {name!r} is not a formatter property; known: "
                    + ", ".join(FORMAT_PROPERTIES)
                )
            field = name.replace(".", "_")
            if name.startswith("print."):
                if text.strip().lower() not in _TRUE_FALSE:
                    raise UsageError(f"--property {name}={text!r}: must be true or false")
                values[field] = _TRUE_FALSE[text.strip().lower()]
            else:
                values[field] = _unescape(text).encode()
        return cls(**values)  # type: ignore[arg-type]

    def render(self, partition: int, record: Record, timestamp_type: str) -> bytes:
        """One record as printed, line separator included."""
        parts: list[bytes] = []
        if self.print_timestamp:
            parts.append(f"{timestamp_type}:{record.timestamp}".encode())
        if self.print_partition:
            parts.append(b"Partition:%d" % partition)
        if self.print_offset:
            parts.append(b"Offset:%d" % record.offset)
        if self.print_headers:
            parts.append(
                self.headers_separator.join(
                    name.encode()
                    + self.headers_key_separator
                    + (self.null_literal if value is None else value)
                    for name, value in record.headers
                )
                if record.headers
                else b"NO_HEADERS"
            )
        if self.print_key:
            parts.append(self.null_literal if record.key is None else record.key)
        if self.print_value:
            parts.append(self.null_literal if record.value is None else record.value)
        return self.key_separator.join(parts) + self.line_separator


def _unescape(text: str) -> str:
    # Separators are given as typed on a shell line: "\t" means a tab, as in the Java tool.
    return text.encode("latin-1", "backslashreplace").decode("unicode_escape")


class TransactionFilter:
    """read_committed over one partition's batches in log order, from the markers in its
    control batches: records of a transaction that commits are released (in offset order),
    those of one that aborts are dropped, and none after an open transaction's first record
    is released before it ends."""

    def __init__(self) -> None:
        # Each record with the producer id whose transaction it waits for (None: decided).
        self._queue: deque[tuple[Record, int | None]] = deque()
        self._open: set[int] = set()

    def add(self, batch: RecordBatch) -> list[Record]:
        """Take the next batch; return the records it makes visible, in offset order."""
        if batch.is_control:
            if batch.producer_id in self._open:
                self._open.discard(batch.producer_id)
                committed = any(marker.is_commit for marker in batch.control_records)
                self._decide(batch.producer_id, committed)
        elif batch.is_transactional:
            self._open.add(batch.producer_id)
            self._queue.extend((record, batch.producer_id) for record in batch.records)
        else:
            self._queue.extend((record, None) for record in batch.records)
        released: list[Record] = []
        while self._queue and self._queue[0][1] is None:
            released.append(self._queue.popleft()[0])
        return released

    def _decide(self, producer_id: int, committed: bool) -> None:
        self._queue = deque(
            (record, None if owner == producer_id else owner)
            for record, owner in self._queue
            if committed or owner != producer_id
        )


class ReadUncommitted:
    """Every user record, control batches skipped (read_uncommitted)."""

    def add(self, batch: RecordBatch) -> list[Record]:
        return [] if batch.is_control else list(batch.records)


def visible_records(
    batches: Iterable[RecordBatch], start_offset: int, reader: TransactionFilter | ReadUncommitted
) -> list[tuple[Record, str]]:
    """The records the batches make visible from ``start_offset`` on (a fetch returns whole
    batches, which may begin before it), each with its timestamp type's name."""
    shown: list[tuple[Record, str]] = []
    for batch in batches:
        kind = "LogAppendTime" if batch.timestamp_type == 1 else "CreateTime"
        if batch.base_offset < start_offset and not batch.is_control:
            # Trimmed before the reader sees it: records it held from earlier fetches lie
            # before start_offset too and must still come out.
            batch = replace(
                batch, records=tuple(r for r in batch.records if r.offset >= start_offset)
            )
        shown += [(record, kind) for record in reader.add(batch)]
    return shown
