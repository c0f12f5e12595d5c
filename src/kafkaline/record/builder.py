"""Building one record batch v2: the pure-Python reference builder.

Each record is encoded when it is appended
(:func:`~kafkaline.record.record_encoder.encode_record_parts`) and goes in if its exact size
fits under the batch's limit; sealing joins the records, compresses them once, and
:meth:`RecordBatchBuilder.build` writes the 61-byte header and the CRC-32C. The compiled core's
builder (``kafkaline._record_core``) has the same interface and gives the same bytes;
:mod:`kafkaline.record.core` picks the one in use.

The producer id, epoch and base sequence live in the header only, outside the encoded records:
:meth:`RecordBatchBuilder.set_producer_state` may change them after sealing (sequences are
assigned when a batch is drained), and :meth:`RecordBatchBuilder.build` then only re-packs the
header and re-computes the CRC.

Example::

    builder = RecordBatchBuilder(compression=CompressionType.LZ4, batch_size_limit=16384)
    for value in values:
        if builder.append(now_ms, None, value) is None:
            break  # full: start a new batch
    builder.set_producer_state(producer_id=7, producer_epoch=0, base_sequence=42)
    wire_bytes = builder.build()
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from kafkaline.errors import IllegalStateError, RecordTooLargeError
from kafkaline.record.batch_format import (
    BATCH_HEADER,
    BATCH_HEADER_SIZE,
    CRC_OFFSET,
    CRC_SPAN_START,
    LOG_OVERHEAD,
    MAGIC,
    MAX_BATCH_SIZE,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    Headers,
    TimestampType,
)
from kafkaline.record.batch_settings import (
    BatchSettings,
    ProducerState,
    attribute_flags,
    records_room,
)
from kafkaline.record.compression import CompressionType, compress
from kafkaline.record.crc import crc32c
from kafkaline.record.record_encoder import (
    NO_HEADERS,
    as_bytes,
    as_timestamp,
    encode_headers,
    encode_record_parts,
)
from kafkaline.record.varint import INT64_MAX, INT64_MIN

__all__ = ["DEFAULT_BATCH_SIZE_LIMIT", "RecordBatchBuilder", "build_record_batch"]

#: Kafka's default ``batch.size``.
DEFAULT_BATCH_SIZE_LIMIT = 16384
_HEADER_ROOM = bytes(BATCH_HEADER_SIZE)


def _too_large(key: bytes | None, value: bytes | None, header_block: bytes) -> RecordTooLargeError:
    size = len(key or b"") + len(value or b"") + len(header_block)
    return RecordTooLargeError(
        f"a record of about {size} bytes cannot fit a record batch (at most {MAX_BATCH_SIZE} bytes)"
    )


class _SealedRecords(NamedTuple):
    """The records once sealed: the payload (compressed, or a view of ``wire``) and, when
    uncompressed, ``wire``: room for the header, then the records (build() writes the header
    in place, so the records are copied once)."""

    payload: bytes | memoryview
    wire: bytearray | None
    uncompressed_size: int


class RecordBatchBuilder:
    """Accumulates records for one partition and encodes them as one record batch v2.

    Not thread-safe: the accumulator that owns a batch serialises access to it.

    ``batch_size_limit`` caps the batch's size (Kafka's ``batch.size``): the first record
    always goes in, later ones only if they fit. With compression,
    ``estimated_compression_ratio`` (compressed / uncompressed, as the producer observed on
    earlier batches; 1.0 = assume none) lets more records in, as Java's producer does.
    ``log_append_time`` is the batch's max timestamp when ``timestamp_type`` is
    LOG_APPEND_TIME (brokers and tests build such batches; producers do not).

    Appending: :meth:`append` adds one record. The bulk paths use :meth:`append_many` (records
    of parallel sequences, as many as fit: a C loop in the compiled core) and, for records
    they encode themselves, :meth:`open_state` and :meth:`append_encoded`.
    """

    __slots__ = (
        "_base_timestamp",
        "_built",
        "_closed",
        "_count",
        "_failure",
        "_max_timestamp",
        "_producer",
        "_records",
        "_sealed",
        "_settings",
        "_size",
        "_wire_returned",
        "appended_limit",
        "memory_cap",
    )

    def __init__(
        self,
        batch_size_limit: int = DEFAULT_BATCH_SIZE_LIMIT,
        *,
        compression: int = CompressionType.NONE,
        compression_level: int | None = None,
        estimated_compression_ratio: float = 1.0,
        base_offset: int = 0,
        partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
        producer_id: int = NO_PRODUCER_ID,
        producer_epoch: int = NO_PRODUCER_EPOCH,
        base_sequence: int = NO_SEQUENCE,
        is_transactional: bool = False,
        is_control: bool = False,
        timestamp_type: TimestampType = TimestampType.CREATE_TIME,
        log_append_time: int | None = None,
    ) -> None:
        self._settings = BatchSettings.checked(
            batch_size_limit,
            compression,
            compression_level,
            estimated_compression_ratio,
            base_offset,
            partition_leader_epoch,
            attribute_flags(is_transactional, is_control, timestamp_type),
            log_append_time,
        )
        #: What :attr:`appended_size` may reach: ``batch_size_limit`` scaled by the estimated
        #: compression ratio (a record larger than a batch goes alone, past it). Read-only: a
        #: field rather than a property, as the accumulator reads it for every record.
        self.appended_limit = self._settings.appended_limit
        self._producer = ProducerState.checked(producer_id, producer_epoch, base_sequence)
        self._closed = False
        #: The encoded records, in order, in pieces: each appended one's from
        #: encode_record_parts() (a large value by reference), and the pieces
        #: append_encoded() was given.
        self._records: list[bytes | memoryview] = []
        #: The header and the encoded records, in bytes: ``appended_size``.
        self._size = BATCH_HEADER_SIZE
        self._count = 0
        self._base_timestamp = 0
        self._max_timestamp = 0
        #: Why the batch cannot be sealed (a timestamp out of range), raised by seal().
        self._failure: str | None = None
        self._sealed: _SealedRecords | None = None
        self._built: bytes | bytearray | None = None
        self._wire_returned = False
        #: Bytes of buffer memory the batch holds (``appended_size`` may reach it): the
        #: producer's accumulator keeps it, and the compiled core's open-batch appender
        #: (which appends without the accumulator) stays within it. Unbounded by default.
        self.memory_cap = MAX_BATCH_SIZE

    # ------------------------------------------------------------------------- appending

    def append(
        self,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        headers: Headers | None = None,
    ) -> int | None:
        """Add a record; return its offset delta (0, 1, 2 ...), or ``None`` when it does not
        fit under the size limit or the batch is closed.

        ``timestamp`` is epoch milliseconds (one outside int64 fails the batch with
        ``ValueError`` at :meth:`seal`: the producer validates user timestamps). ``key`` and
        ``value`` are ``bytes`` or ``None``; a ``bytearray`` or ``memoryview`` is copied.
        ``headers`` is a sequence of ``(str, bytes | None)``.

        A builder that refuses a record for its size closes for appends (as Java's
        accumulator closes a batch that refuses one).

        Raises :class:`RecordTooLargeError` if a single record would not fit any batch (2 GiB),
        ``TypeError`` for a key, value, header or timestamp of the wrong type.
        """
        if self._closed:
            return None
        offset_delta = self._try_append(timestamp, key, value, headers)
        if offset_delta is None:
            self._closed = True
        return offset_delta

    def append_many(
        self,
        keys: Sequence[bytes | None],
        values: Sequence[bytes | None],
        timestamps: Sequence[int] | int,
        headers: Sequence[Headers | None] | None = None,
        *,
        start: int = 0,
        positions: Sequence[int] | None = None,
    ) -> int:
        """Add the records from index ``start`` of parallel sequences (``timestamps`` may be
        one int for all), in order, as many as fit; return how many were added. The batch
        stays open: a later, smaller record may still fit. The usual loop over a large
        input::

            while start < len(values):
                start += builder.append_many(keys, values, timestamps, start=start)
                ...  # builder is full: build it, start a new one

        ``positions``, if given, are the input indexes of the records to add, in order
        (``start`` then counts in them): one partition's records of a larger input, taken
        where they are.
        """
        count = len(values)
        if len(keys) != count or (headers is not None and len(headers) != count):
            raise ValueError("keys, values and headers must have the same length")
        if not isinstance(timestamps, int) and len(timestamps) != count:
            raise ValueError("timestamps must be one int or one per record")
        order: Sequence[int] = range(count) if positions is None else positions
        if not 0 <= start <= len(order):
            raise ValueError(f"start {start} is outside 0..{len(order)}")
        taken = 0
        for j in range(start, len(order)):
            i = order[j]
            if not 0 <= i < count:
                raise IndexError(f"position {i} is outside 0..{count - 1}")
            timestamp = timestamps if isinstance(timestamps, int) else timestamps[i]
            record_headers = None if headers is None else headers[i]
            if (
                self._closed
                or self._try_append(timestamp, keys[i], values[i], record_headers) is None
            ):
                break
            taken += 1
        return taken

    def _try_append(
        self,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        headers: Headers | None,
    ) -> int | None:
        """Encode the record and keep it if it fits (the first always does)."""
        if type(timestamp) is not int:
            timestamp = as_timestamp(timestamp)
        if key is not None and type(key) is not bytes:
            key = as_bytes(key, "key")
        if value is not None and type(value) is not bytes:
            value = as_bytes(value, "value")
        header_block = encode_headers(headers) if headers else NO_HEADERS
        count = self._count
        if count == 0:
            self._base_timestamp = self._max_timestamp = timestamp
        delta = timestamp - self._base_timestamp
        if not (INT64_MIN <= timestamp <= INT64_MAX and INT64_MIN <= delta <= INT64_MAX):
            delta = self._fail_at_seal(timestamp)
        try:
            # In pieces: seal() joins them with the other records, the one copy.
            pieces, record_size = encode_record_parts(count, delta, key, value, header_block)
        except ValueError:  # a key or value length past int32
            raise _too_large(key, value, header_block) from None
        size = self._size + record_size
        if count == 0:
            if size > MAX_BATCH_SIZE:  # (an empty builder holds the header only)
                raise _too_large(key, value, header_block)
        elif size > self.appended_limit:
            return None
        if timestamp > self._max_timestamp:
            self._max_timestamp = timestamp
        self._records.extend(pieces)
        self._size = size
        self._count = count + 1
        return count

    def _fail_at_seal(self, timestamp: int) -> int:
        """Note a timestamp out of range (outside int64, or too far from the first one for
        an int64 delta): the batch fails at seal(), as the compiled core's does. Returns the
        delta to encode meanwhile, 0."""
        if self._failure is None:
            self._failure = (
                f"timestamp {timestamp} is outside int64"
                if not INT64_MIN <= timestamp <= INT64_MAX
                else f"timestamp {timestamp} is too far from the batch's first, "
                f"{self._base_timestamp}, for an int64 delta"
            )
        return 0

    # -------------------------------------------------------- records encoded by the caller

    @staticmethod
    def records_room(batch_size_limit: int, estimated_compression_ratio: float = 1.0) -> int:
        """Bytes of encoded (uncompressed) records an empty builder made with these settings
        takes before it is full."""
        return records_room(batch_size_limit, estimated_compression_ratio)

    def open_state(self) -> tuple[int, int, int] | None:
        """For a caller that encodes records itself (:meth:`append_encoded`): ``(room,
        next offset delta, base timestamp)`` of a builder that holds records and is open:
        the bytes of encoded records it still takes, the offset delta and the timestamp the
        next records' deltas count from. ``None`` when closed or empty."""
        if self._closed or not self._count:
            return None
        return self.appended_limit - self._size, self._count, self._base_timestamp

    def append_encoded(
        self,
        records: Sequence[bytes | memoryview],
        count: int,
        first_timestamp: int,
        max_timestamp: int,
    ) -> None:
        """Add ``count`` records encoded by the caller: ``records`` is their part of the
        records section, in pieces (kept by reference until the batch is sealed, the caller
        must not change them), offset deltas from :meth:`open_state`'s (0 for an empty
        builder) and timestamp deltas from its base timestamp (an empty builder's is
        ``first_timestamp``, the first record's); ``max_timestamp`` is the largest. The
        caller checked that they fit the room; an empty builder takes any size up to a
        batch's maximum.

        Raises :class:`IllegalStateError` if the builder is closed,
        :class:`RecordTooLargeError` past the maximum batch size.
        """
        if self._closed:
            raise IllegalStateError("cannot append to a closed record batch")
        if count <= 0:
            raise ValueError(f"count {count} must be positive")
        size = sum(memoryview(record).nbytes for record in records)  # bytes, not items
        if self._count == 0:
            if BATCH_HEADER_SIZE + size > MAX_BATCH_SIZE:
                raise RecordTooLargeError(
                    f"{count} records of {size} bytes cannot fit a record batch "
                    f"(at most {MAX_BATCH_SIZE} bytes)"
                )
            self._base_timestamp = self._max_timestamp = first_timestamp
        self._max_timestamp = max(self._max_timestamp, max_timestamp)
        self._records.extend(records)
        self._size += size
        self._count += count

    # ----------------------------------------------------------------------- sealing

    def close_for_appends(self) -> None:
        """Refuse further appends (they return ``None``)."""
        self._closed = True

    def seal(self) -> None:
        """Close for appends, then join and compress the records once. Idempotent.

        Raises :class:`IllegalStateError` for a batch without records, ``ValueError`` for a
        timestamp outside int64.
        """
        if self._sealed is not None:
            return
        if not self._count:
            raise IllegalStateError("cannot seal a record batch without records")
        self._closed = True
        if self._failure is not None:
            raise ValueError(self._failure)
        settings = self._settings
        wire = None
        payload: bytes | memoryview
        if settings.compression:
            records = b"".join(self._records)
            payload = compress(settings.compression, records, settings.compression_level)
        else:
            wire = bytearray().join((_HEADER_ROOM, *self._records))
            payload = memoryview(wire)[BATCH_HEADER_SIZE:]
        if BATCH_HEADER_SIZE + len(payload) > MAX_BATCH_SIZE:
            raise RecordTooLargeError(
                f"record batch of {BATCH_HEADER_SIZE + len(payload)} bytes exceeds the "
                f"{MAX_BATCH_SIZE}-byte maximum"
            )
        self._sealed = _SealedRecords(payload, wire, self._size - BATCH_HEADER_SIZE)
        self._records = []  # the payload holds them now: drop the callers' objects

    def set_producer_state(self, producer_id: int, producer_epoch: int, base_sequence: int) -> None:
        """Set the idempotence fields (``-1, -1, -1`` when not idempotent). Allowed at any
        time, also after sealing: the records are not re-encoded, only the header and CRC."""
        self._producer = ProducerState.checked(producer_id, producer_epoch, base_sequence)
        self._built = None

    def build(self) -> bytes:
        """The batch's wire bytes (sealing it first if needed)."""
        built = self.build_buffer()
        return built if isinstance(built, bytes) else bytes(built)

    def build_buffer(self) -> bytes | bytearray:
        """:meth:`build` without a copy: uncompressed, the bytearray the records were sealed
        into, its header written in place (the producer's path: the request encoder copies
        it into the request). Cached until the producer state changes; a buffer once returned
        is never changed (a rebuild writes a copy)."""
        if self._built is not None:
            return self._built
        self.seal()
        sealed = self._sealed
        if sealed is None:  # pragma: no cover - seal() either sets it or raises
            raise IllegalStateError("record batch has no payload after sealing")
        header = self._header(len(sealed.payload))
        wire = sealed.wire
        if wire is None:  # compressed: header, CRC and payload joined
            crc = crc32c(sealed.payload, crc32c(header[CRC_SPAN_START:]))
            crc_bytes = crc.to_bytes(4, "big")
            self._built = b"".join(
                (header[:CRC_OFFSET], crc_bytes, header[CRC_SPAN_START:], sealed.payload)
            )
            return self._built
        if self._wire_returned:
            # Rebuilt (new producer state for a retry): what was returned before is never
            # changed under its holder; this copy is written instead.
            wire = bytearray(wire)
            self._sealed = sealed._replace(wire=wire)
        self._wire_returned = True
        wire[:BATCH_HEADER_SIZE] = header
        crc = crc32c(memoryview(wire)[CRC_SPAN_START:])
        wire[CRC_OFFSET:CRC_SPAN_START] = crc.to_bytes(4, "big")
        self._built = wire
        return wire

    def _header(self, payload_size: int) -> bytes:
        """The 61-byte header with the CRC field 0."""
        settings, producer = self._settings, self._producer
        max_timestamp = (
            self._max_timestamp if settings.log_append_time is None else settings.log_append_time
        )
        return BATCH_HEADER.pack(
            settings.base_offset,
            BATCH_HEADER_SIZE - LOG_OVERHEAD + payload_size,
            settings.partition_leader_epoch,
            MAGIC,
            0,  # CRC, filled in by the caller
            settings.attributes,
            self._count - 1,
            self._base_timestamp,
            max_timestamp,
            producer.producer_id,
            producer.producer_epoch,
            producer.base_sequence,
            self._count,
        )

    # ------------------------------------------------------------------------ inspecting

    def __len__(self) -> int:
        """Number of records appended."""
        return self._count

    @property
    def is_closed(self) -> bool:
        """Whether appends are refused (after :meth:`close_for_appends` or :meth:`seal`)."""
        return self._closed

    @property
    def is_sealed(self) -> bool:
        """Whether the records are joined and compressed (after :meth:`seal` or :meth:`build`)."""
        return self._sealed is not None

    @property
    def is_full(self) -> bool:
        """Closed, or holding records up to the size limit (as Java's
        ``MemoryRecordsBuilder.isFull``)."""
        return self._closed or (self._count > 0 and self._size >= self.appended_limit)

    @property
    def estimated_size_in_bytes(self) -> int:
        """The batch's size on the wire: exact once sealed; before, the uncompressed size
        scaled by ``estimated_compression_ratio``."""
        if self._sealed is not None:
            return BATCH_HEADER_SIZE + len(self._sealed.payload)
        records = self._size - BATCH_HEADER_SIZE
        return BATCH_HEADER_SIZE + int(records * self._settings.estimated_compression_ratio)

    @property
    def appended_size(self) -> int:
        """Bytes the header and the records appended so far take before compression: what
        the batch holds in memory until sealed."""
        return self._size

    @property
    def uncompressed_records_size(self) -> int:
        """Bytes of the encoded records before compression (0 until sealed)."""
        return 0 if self._sealed is None else self._sealed.uncompressed_size

    @property
    def compression(self) -> CompressionType:
        """The batch's codec."""
        return self._settings.compression

    @property
    def size_limit(self) -> int:
        """The ``batch_size_limit`` this builder was made with."""
        return self._settings.size_limit

    @property
    def producer_id(self) -> int:
        """Producer id in the header (-1 when not idempotent)."""
        return self._producer.producer_id

    @property
    def producer_epoch(self) -> int:
        """Producer epoch in the header (-1 when not idempotent)."""
        return self._producer.producer_epoch

    @property
    def base_sequence(self) -> int:
        """Sequence number of the first record (-1 when not idempotent)."""
        return self._producer.base_sequence


def build_record_batch(
    keys: Sequence[bytes | None],
    values: Sequence[bytes | None],
    timestamps: Sequence[int] | int,
    headers: Sequence[Headers | None] | None = None,
    *,
    compression: int = CompressionType.NONE,
    compression_level: int | None = None,
    base_offset: int = 0,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    is_transactional: bool = False,
) -> bytes:
    """One batch holding all the given records, whatever their size; see
    :class:`RecordBatchBuilder` for the parameters.

    >>> len(build_record_batch([None], [b"v"], 0))
    69
    """
    builder = RecordBatchBuilder(
        MAX_BATCH_SIZE,
        compression=compression,
        compression_level=compression_level,
        base_offset=base_offset,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        is_transactional=is_transactional,
    )
    builder.append_many(keys, values, timestamps, headers)
    return builder.build()
