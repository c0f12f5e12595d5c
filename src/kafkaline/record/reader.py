"""Reading record batches v2, e.g. from a Fetch response's ``records`` field.

The input may hold several batches back to back. The last one may be cut short (brokers fill a
Fetch response up to its size limit and may stop in the middle of a batch): reading stops
before it without error. Anything wrong *inside* a batch whose declared length fits the input
is an error: a CRC mismatch, a record running past the batch's end, bytes left over.

Legacy message sets (magic 0 and 1) are not decoded: they raise :class:`DecodeError` naming the
magic. A producer never meets them (every broker since 0.11 takes magic 2) and kafkaline has
no consumer that could meet them in old topics.

Errors raised: :class:`~kafkaline.errors.CorruptRecordError` (a ``DecodeError``) for malformed
or tampered bytes, ``DecodeError`` for an unsupported magic, and
:class:`~kafkaline.errors.UnsupportedCodecError` for a codec id this library does not know.
Lengths read from the input are checked against the bytes present before anything is sliced or
allocated, and decompression is capped by ``max_decompressed_size``.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import NamedTuple

from kafkaline.errors import CorruptRecordError, DecodeError
from kafkaline.record.batch_format import (
    ATTR_COMPRESSION_MASK,
    ATTR_CONTROL,
    ATTR_TIMESTAMP_TYPE,
    ATTR_TRANSACTIONAL,
    BATCH_HEADER,
    BATCH_HEADER_SIZE,
    CRC_SPAN_START,
    LOG_OVERHEAD,
    MAGIC,
    MAGIC_OFFSET,
    MIN_BATCH_LENGTH,
    Header,
    TimestampType,
)
from kafkaline.record.compression import (
    DEFAULT_MAX_DECOMPRESSED_SIZE,
    CompressionType,
    compression_type,
    decompress,
)
from kafkaline.record.control import ControlRecord, decode_control_record
from kafkaline.record.crc import crc32c
from kafkaline.record.varint import decode_varint, decode_varlong

_LOG_HEADER = struct.Struct(">qi")
#: Smallest size field any message format can have (Java's LegacyRecord.RECORD_OVERHEAD_V0):
#: below it the bytes are not a batch at all, rather than a batch cut short.
_MIN_ANY_BATCH_LENGTH = 14
#: Smallest encoded record: length, attributes, timestamp delta, offset delta, key length,
#: value length, header count, one byte each.
_MIN_RECORD_SIZE = 7


class Record(NamedTuple):
    """One record read from a batch."""

    offset: int
    """The record's offset: the batch's base offset plus the record's offset delta."""
    timestamp: int
    """Epoch milliseconds: the producer's, or the broker's for LOG_APPEND_TIME batches."""
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...]


@dataclass(frozen=True, slots=True)
class RecordBatch:
    """A decoded record batch: its header fields and its records."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int
    records: tuple[Record, ...]
    control_records: tuple[ControlRecord, ...]
    """For a control batch, its records decoded as control records; empty otherwise."""

    @property
    def compression(self) -> CompressionType:
        """The codec the records were compressed with."""
        return CompressionType(self.attributes & ATTR_COMPRESSION_MASK)

    @property
    def timestamp_type(self) -> TimestampType:
        """CREATE_TIME or LOG_APPEND_TIME."""
        return TimestampType(1 if self.attributes & ATTR_TIMESTAMP_TYPE else 0)

    @property
    def is_transactional(self) -> bool:
        """Written by a transactional producer."""
        return bool(self.attributes & ATTR_TRANSACTIONAL)

    @property
    def is_control(self) -> bool:
        """Holds control records (transaction markers), not user records."""
        return bool(self.attributes & ATTR_CONTROL)

    @property
    def size_in_bytes(self) -> int:
        """Bytes the batch takes on the wire."""
        return LOG_OVERHEAD + self.batch_length

    @property
    def next_offset(self) -> int:
        """The offset after the batch's last one."""
        return self.base_offset + self.last_offset_delta + 1


def read_record_batches(
    data: bytes | bytearray | memoryview,
    *,
    verify_crc: bool = True,
    max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
) -> list[RecordBatch]:
    """All complete batches in ``data``; see :func:`iter_record_batches`."""
    return list(
        iter_record_batches(
            data, verify_crc=verify_crc, max_decompressed_size=max_decompressed_size
        )
    )


def iter_record_batches(
    data: bytes | bytearray | memoryview,
    *,
    verify_crc: bool = True,
    max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
) -> Iterator[RecordBatch]:
    """Decode the batches in ``data`` one by one, stopping silently at a truncated last batch.

    ``verify_crc`` checks each batch's CRC-32C first (:class:`CorruptRecordError` naming the
    expected and actual value on mismatch). ``max_decompressed_size`` caps the decompressed
    records of one batch.

    >>> from kafkaline.record.builder import build_record_batch
    >>> data = build_record_batch([b"k"], [b"v"], 1000)
    >>> [r.value for b in iter_record_batches(data + data[:20]) for r in b.records]
    [b'v']
    """
    view = memoryview(data)
    if view.format != "B" or view.ndim != 1:
        view = view.cast("B")
    end = len(view)
    pos = 0
    while end - pos >= LOG_OVERHEAD:
        _, batch_length = _LOG_HEADER.unpack_from(view, pos)
        if batch_length < _MIN_ANY_BATCH_LENGTH:
            raise CorruptRecordError(
                f"batch at byte {pos} declares a length of {batch_length}, below the minimum "
                f"{_MIN_ANY_BATCH_LENGTH}"
            )
        batch_end = pos + LOG_OVERHEAD + batch_length
        if batch_end > end:
            return  # a batch cut short by the response's size limit
        magic = view[pos + MAGIC_OFFSET]
        if magic != MAGIC:
            raise DecodeError(
                f"record batch at byte {pos} has magic {magic}: only magic 2 (Kafka 0.11+) is "
                "supported, legacy message sets (magic 0 and 1) are not"
            )
        if batch_length < MIN_BATCH_LENGTH:
            raise CorruptRecordError(
                f"batch at byte {pos} declares a length of {batch_length}, below the "
                f"{MIN_BATCH_LENGTH} of a batch header"
            )
        yield _decode_batch(view, pos, batch_end, verify_crc, max_decompressed_size)
        pos = batch_end


def _decode_batch(
    view: memoryview, pos: int, batch_end: int, verify_crc: bool, max_decompressed_size: int
) -> RecordBatch:
    (
        base_offset,
        batch_length,
        partition_leader_epoch,
        magic,
        stored_crc,
        attributes,
        last_offset_delta,
        base_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        record_count,
    ) = BATCH_HEADER.unpack_from(view, pos)
    if verify_crc:
        actual_crc = crc32c(view[pos + CRC_SPAN_START : batch_end])
        if actual_crc != stored_crc:
            raise CorruptRecordError(
                f"record batch at offset {base_offset} (byte {pos}) failed its CRC-32C check: "
                f"expected 0x{stored_crc:08x} (stored), actual 0x{actual_crc:08x} (computed)"
            )
    codec = compression_type(attributes & ATTR_COMPRESSION_MASK)
    section = view[pos + BATCH_HEADER_SIZE : batch_end]
    if codec is CompressionType.NONE:
        records_bytes = section.tobytes()
    else:
        records_bytes = decompress(codec, section, max_output_size=max_decompressed_size)
    fixed_timestamp = max_timestamp if attributes & ATTR_TIMESTAMP_TYPE else None
    try:
        records = _decode_records(
            records_bytes, record_count, base_offset, base_timestamp, fixed_timestamp
        )
    except UnicodeDecodeError as exc:  # a header key; every length is checked before use
        raise CorruptRecordError(
            f"record batch at offset {base_offset} (byte {pos}) is malformed: {exc}"
        ) from exc
    control_records: tuple[ControlRecord, ...] = ()
    if attributes & ATTR_CONTROL:
        control_records = tuple(decode_control_record(r.key, r.value) for r in records)
    return RecordBatch(
        base_offset,
        batch_length,
        partition_leader_epoch,
        magic,
        stored_crc,
        attributes,
        last_offset_delta,
        base_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        record_count,
        records,
        control_records,
    )


def _decode_records(
    buf: bytes,
    count: int,
    base_offset: int,
    base_timestamp: int,
    fixed_timestamp: int | None,
) -> tuple[Record, ...]:
    end = len(buf)
    if count < 0 or count * _MIN_RECORD_SIZE > end:
        raise CorruptRecordError(
            f"batch declares {count} records but holds only {end} bytes of records"
        )
    records = []
    pos = 0
    for _ in range(count):
        length, pos = decode_varint(buf, pos)
        record_end = pos + length
        if length < _MIN_RECORD_SIZE - 1 or record_end > end:
            raise CorruptRecordError(
                f"record at byte {pos} declares {length} bytes, {end - pos} remain"
            )
        # Skip the attributes byte: no record-level attributes are defined.
        timestamp_delta, pos = decode_varlong(buf, pos + 1)
        offset_delta, pos = decode_varint(buf, pos)
        key_length, pos = decode_varint(buf, pos)
        key = None
        if key_length >= 0:
            key = buf[pos : pos + key_length]
            pos += key_length
        elif key_length != -1:
            raise CorruptRecordError(f"record key length {key_length} is invalid")
        value_length, pos = decode_varint(buf, pos)
        value = None
        if value_length >= 0:
            value = buf[pos : pos + value_length]
            pos += value_length
        elif value_length != -1:
            raise CorruptRecordError(f"record value length {value_length} is invalid")
        header_count, pos = decode_varint(buf, pos)
        headers: tuple[Header, ...] = ()
        if header_count:
            headers, pos = _decode_headers(buf, pos, record_end, header_count)
        if pos != record_end:
            raise CorruptRecordError(
                f"record ending at byte {pos} declared it would end at byte {record_end}"
            )
        timestamp = base_timestamp + timestamp_delta if fixed_timestamp is None else fixed_timestamp
        records.append(Record(base_offset + offset_delta, timestamp, key, value, headers))
    if pos != end:
        raise CorruptRecordError(f"{end - pos} bytes remain after the batch's {count} records")
    return tuple(records)


def _decode_headers(
    buf: bytes, pos: int, record_end: int, count: int
) -> tuple[tuple[Header, ...], int]:
    # Each header takes at least two bytes: checking first stops a lying count early.
    if count < 0 or 2 * count > record_end - pos:
        raise CorruptRecordError(f"record declares {count} headers, too many for its size")
    headers = []
    for _ in range(count):
        key_length, pos = decode_varint(buf, pos)
        if key_length < 0 or pos + key_length > record_end:
            raise CorruptRecordError(f"header key length {key_length} is invalid")
        key = buf[pos : pos + key_length].decode("utf-8")
        pos += key_length
        value_length, pos = decode_varint(buf, pos)
        value = None
        if value_length >= 0:
            value = buf[pos : pos + value_length]
            pos += value_length
        elif value_length != -1:
            raise CorruptRecordError(f"header value length {value_length} is invalid")
        headers.append((key, value))
    return tuple(headers), pos
