"""Encoding records (v2): the reference encoder of a batch's records section.

Record layout, every integer a zigzag varint (see ``varint``)::

    field            encoding   notes
    length           varint     bytes of the record after this field
    attributes       int8       0 (unused)
    timestamp_delta  varlong    timestamp - batch base_timestamp (may be negative)
    offset_delta     varint     position in the batch: 0, 1, 2 ...
    key_length       varint     -1 for a null key
    key              bytes
    value_length     varint     -1 for a null value
    value            bytes
    header_count     varint
    headers          header_key_length varint, key (UTF-8), header_value_length varint
                     (-1 for null), value; repeated header_count times

:func:`encode_record` writes one record of checked fields, :func:`encode_record_parts`
the same in two parts (the pure-Python :class:`~kafkaline.record.builder.RecordBatchBuilder`
calls it once per append), and :func:`encode_records` a whole section. The compiled core
writes the same layout in C (a differential test requires identical bytes).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence

from kafkaline.record.batch_format import Headers
from kafkaline.record.varint import INT64_MAX, INT64_MIN, encode_varint, encode_varlong

__all__ = [
    "LARGE_VALUE",
    "NO_HEADERS",
    "RECORD_OVERHEAD_BOUND",
    "as_bytes",
    "as_timestamp",
    "encode_headers",
    "encode_record",
    "encode_record_parts",
    "encode_records",
]

#: An upper bound of a record's size beyond its key, value and header bytes: length (5),
#: attributes (1), timestamp delta (10), offset delta (5), key length (5), value length (5),
#: header count (5). The same bound librdkafka uses; the accumulator sizes buffer memory and
#: send()'s record size check with it.
RECORD_OVERHEAD_BOUND = 36

#: The header count and headers of a record without headers: a count of 0.
NO_HEADERS = b"\x00"
_NULL_LENGTH = b"\x01"  # varint(-1)
_ATTRIBUTES = b"\x00"
#: A value this large is a piece of its own in :func:`encode_record_parts`, not copied into
#: the rest of its record: copying it costs more than the pieces do (docs/performance.md,
#: "purezstd").
LARGE_VALUE = 2048


class _EncodedCache(dict[int, bytes]):
    """Varints by value, each encoded on its first use: lengths, offset deltas and timestamp
    deltas repeat within a batch and from batch to batch, so most are a dict lookup."""

    def __init__(self, encode: Callable[[int], bytes], max_entries: int) -> None:
        super().__init__()
        self._encode = encode
        self._max_entries = max_entries

    def __missing__(self, value: int) -> bytes:
        encoded = self._encode(value)  # ValueError outside its range, as the encoder's
        if len(self) >= self._max_entries:
            self.clear()  # bounded: values that do not repeat do not pile up
        self[value] = encoded
        return encoded


_VARINTS = _EncodedCache(encode_varint, max_entries=1 << 15)
_VARLONGS = _EncodedCache(encode_varlong, max_entries=1 << 12)


def encode_record(
    offset_delta: int,
    timestamp_delta: int,
    key: bytes | None,
    value: bytes | None,
    header_block: bytes = NO_HEADERS,
) -> bytes:
    """One record: ``key`` and ``value`` are ``bytes`` or ``None``, ``header_block`` the
    header count and headers from :func:`encode_headers`. Raises ``ValueError`` for a delta
    outside its varint's range.

    >>> encode_record(0, 0, b"k", b"v").hex()
    '10000000026b027600'
    """
    pieces, _ = encode_record_parts(offset_delta, timestamp_delta, key, value, header_block)
    return b"".join(pieces)


def encode_record_parts(
    offset_delta: int,
    timestamp_delta: int,
    key: bytes | None,
    value: bytes | None,
    header_block: bytes = NO_HEADERS,
) -> tuple[tuple[bytes, ...], int]:
    """:func:`encode_record`'s bytes in pieces, and their size. A builder that joins its
    records once, when sealing, keeps the pieces apart, so that the key and value are
    copied there only: the pieces are the length varint and the rest of the record, or for
    a value of :data:`LARGE_VALUE` bytes or more, the length varint, the bytes before the
    value, the value itself and the headers.

    >>> pieces, size = encode_record_parts(0, 0, b"k", b"v")
    >>> b"".join(pieces).hex(), size
    ('10000000026b027600', 9)
    """
    varints = _VARINTS
    if key is None:
        key, key_length = b"", _NULL_LENGTH
    else:
        key_length = varints[len(key)]
    if value is None:
        value, value_length = b"", _NULL_LENGTH
    else:
        value_size = len(value)
        value_length = varints[value_size]
        if value_size >= LARGE_VALUE:
            head = b"".join(
                (
                    _ATTRIBUTES,
                    _VARLONGS[timestamp_delta],
                    varints[offset_delta],
                    key_length,
                    key,
                    value_length,
                )
            )
            length = len(head) + value_size + len(header_block)
            prefix = varints[length]
            return (prefix, head, value, header_block), len(prefix) + length
    rest = b"".join(
        (
            _ATTRIBUTES,
            _VARLONGS[timestamp_delta],
            varints[offset_delta],
            key_length,
            key,
            value_length,
            value,
            header_block,
        )
    )
    prefix = varints[len(rest)]
    return (prefix, rest), len(prefix) + len(rest)


def encode_headers(headers: Headers) -> bytes:
    """The ``header_count`` and headers fields for ``headers``, as one bytes block.

    Keys must be ``str`` (encoded UTF-8), values ``bytes`` or ``None``.
    """
    pieces = [encode_varint(len(headers))]
    for key, value in headers:
        if not isinstance(key, str):
            raise TypeError(f"header key must be str, not {type(key).__name__}")
        key_bytes = key.encode("utf-8")
        pieces.append(encode_varint(len(key_bytes)))
        pieces.append(key_bytes)
        if value is None:
            pieces.append(_NULL_LENGTH)
        else:
            value_bytes = as_bytes(value, "header value")
            pieces.append(encode_varint(len(value_bytes)))
            pieces.append(value_bytes)
    return b"".join(pieces)


def as_bytes(data: object, what: str) -> bytes:
    """``data`` as ``bytes`` (copying a bytearray or memoryview, so later changes by the caller
    cannot reach an encoded batch); ``TypeError`` for anything else."""
    if isinstance(data, bytes):
        return data
    if isinstance(data, bytearray):
        return bytes(data)
    if isinstance(data, memoryview):
        return data.tobytes()
    raise TypeError(f"{what} must be bytes, not {type(data).__name__}")


def as_timestamp(timestamp: object) -> int:
    """``timestamp`` as an int (anything with ``__index__``, e.g. numpy integers);
    ``TypeError`` for floats and the rest: Kafka timestamps are integer milliseconds."""
    try:
        return operator.index(timestamp)  # type: ignore[arg-type]
    except TypeError:
        raise TypeError(
            f"timestamp must be int milliseconds, not {type(timestamp).__name__}"
        ) from None


def encode_records(
    keys: Sequence[bytes | None],
    values: Sequence[bytes | None],
    timestamps: Sequence[int] | int,
    headers: Sequence[Headers | None] | None = None,
    *,
    base_timestamp: int | None = None,
    first_offset_delta: int = 0,
) -> bytes:
    """Encode records into the (uncompressed) records section of a batch.

    ``keys``, ``values`` and (if given) ``headers`` are parallel sequences; ``timestamps`` is a
    parallel sequence of epoch milliseconds or one int for every record. Deltas are taken from
    ``base_timestamp`` (default: the first record's timestamp) and offset deltas count up from
    ``first_offset_delta``, so a batch can be encoded in several chunks.

    >>> encode_records([b"k"], [b"v"], 1_700_000_000_000).hex()
    '10000000026b027600'
    """
    count = len(values)
    if len(keys) != count or (headers is not None and len(headers) != count):
        raise ValueError("keys, values and headers must have the same length")
    if isinstance(timestamps, int):
        timestamps = [timestamps] * count
    elif len(timestamps) != count:
        raise ValueError("timestamps must be one int or one per record")
    if first_offset_delta < 0:
        raise ValueError(f"first_offset_delta {first_offset_delta} is negative")
    if count == 0:
        return b""
    checked = [_checked_timestamp(t) for t in timestamps]
    base = checked[0] if base_timestamp is None else base_timestamp
    pieces = []
    for i in range(count):
        key, value = keys[i], values[i]
        record_headers = None if headers is None else headers[i]
        pieces.append(
            encode_record(
                first_offset_delta + i,
                _timestamp_delta(checked[i], base),
                None if key is None else as_bytes(key, "key"),
                None if value is None else as_bytes(value, "value"),
                encode_headers(record_headers) if record_headers else NO_HEADERS,
            )
        )
    return b"".join(pieces)


def _checked_timestamp(timestamp: object) -> int:
    checked = as_timestamp(timestamp)
    if not INT64_MIN <= checked <= INT64_MAX:
        raise ValueError(f"timestamp {checked} is outside the int64 range")
    return checked


def _timestamp_delta(timestamp: int, base_timestamp: int) -> int:
    delta = timestamp - base_timestamp
    if not INT64_MIN <= delta <= INT64_MAX:
        raise ValueError(
            f"timestamp {timestamp} is too far from the batch's base timestamp {base_timestamp}"
        )
    return delta
