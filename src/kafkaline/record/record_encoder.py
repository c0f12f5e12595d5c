"""Encoding the records section of a batch: many records in one pass.

Record layout (v2), every integer a zigzag varint (see ``varint``)::

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

Speed: this is the producer's per-record cost, so the common case avoids per-field function
calls. Every record becomes a tuple of ready-made pieces (varints looked up in
:func:`~kafkaline.record.varint.small_varint_table`, key and value by reference) and one
``bytes.join`` copies them all once: many times cheaper than a function call per field (see
docs/performance.md, Notes moved from the code). Anything the fast loops do not cover (null
values, mixed null and non-null keys, headers, negative timestamp deltas, fields or offsets of
8 Ki and more) goes through the general path, per chunk.
"""

from __future__ import annotations

import operator
from bisect import bisect_right
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import NamedTuple, cast

from kafkaline.record.batch_format import Headers
from kafkaline.record.varint import (
    INT32_MAX,
    INT64_MAX,
    INT64_MIN,
    SMALL_VARINT_LIMIT,
    encode_varint,
    encode_varlong,
    size_of_varint,
    small_varint_table,
)

#: An upper bound of a record's size beyond its key, value and header bytes: length (5),
#: attributes (1), timestamp delta (10), offset delta (5), key length (5), value length (5),
#: header count (5). The same bound librdkafka uses. Keeping it a constant makes the running
#: estimate one addition per record; ``RecordBatchBuilder`` corrects it to the exact size when
#: a batch gets close to its limit.
RECORD_OVERHEAD_BOUND = 36
#: The least a record can take beyond its key, value and header bytes: one byte each for its
#: length, attributes, timestamp delta, offset delta, key length and value length.
RECORD_OVERHEAD_MIN = 6

_NULL_LENGTH = b"\x01"  # varint(-1)
_ONE_BYTE_LIMIT = 64  # varints of 0..63 take one byte
_EMPTY = b"\x00"  # varint(0): attributes, a zero delta, no headers
#: A record's bytes besides its key and value fields, at most: its length (5), attributes,
#: timestamp delta (in the small table: 2), offset delta (2), header count.
_RECORD_HEAD_MAX = 11


class _VarintMemo(dict[int, bytes]):
    """``prefix + encode_varint(n)`` for any ``n``, memoized as it is asked for: a lookup
    that costs a C-level dict access where the value is known (the sizes of a workload's
    big records repeat). Cleared when it reaches ``_MEMO_ENTRIES``, so that records of ever
    new sizes cannot grow it without bound."""

    __slots__ = ("_prefix",)

    def __init__(self, prefix: bytes) -> None:
        super().__init__()
        self._prefix = prefix

    def __missing__(self, n: int) -> bytes:
        if len(self) >= _MEMO_ENTRIES:
            self.clear()
        encoded = self[n] = self._prefix + encode_varint(n)
        return encoded


class _SizeMemo(dict[int, int]):
    """``size_of_varint(n)``, memoized as :class:`_VarintMemo` is."""

    __slots__ = ()

    def __missing__(self, n: int) -> int:
        if len(self) >= _MEMO_ENTRIES:
            self.clear()
        size = self[n] = size_of_varint(n)
        return size


_MEMO_ENTRIES = 4096
#: Values from this size have lengths past the small-varint table.
_SMALL_LENGTH_LIMIT = SMALL_VARINT_LIMIT
_Lengths = tuple[Sequence[bytes] | Mapping[int, bytes], Sequence[int] | Mapping[int, int],
                 Sequence[bytes] | Mapping[int, bytes]]  # fmt: skip
#: ``(varints, sizes, zeroed)`` as :func:`~kafkaline.record.varint.small_varint_table`'s,
#: for lengths of any size: the fast loops' key, value and record lengths when a record
#: is too big for the table. Shared by every producer (bounded; a lost race between threads
#: only computes an entry twice). Big records then take three dict lookups instead of the
#: general path's calls (see docs/performance.md, Notes moved from the code).
_BIG_LENGTHS: _Lengths = (_VarintMemo(b""), _SizeMemo(), _VarintMemo(_EMPTY))


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
    if not isinstance(timestamps, int) and len(timestamps) != count:
        raise ValueError("timestamps must be one int or one per record")
    if count == 0:
        return b""
    if base_timestamp is None:
        base_timestamp = timestamps if isinstance(timestamps, int) else timestamps[0]
    header_blocks = None
    if headers is not None:
        header_blocks = {i: encode_headers(h) for i, h in enumerate(headers) if h}
    # Copy anything that is not bytes (and reject what is not bytes-like) up front: the fast
    # loops take len() as the byte length. set(map(type)) runs in C: cheap per record.
    if not set(map(type, keys)) <= _KEY_TYPES:
        keys = [None if k is None else as_bytes(k, "key") for k in keys]
    if not set(map(type, values)) <= _KEY_TYPES:
        values = [None if v is None else as_bytes(v, "value") for v in values]
    return encode_record_chunk(
        timestamps, keys, values, header_blocks, base_timestamp, first_offset_delta
    )


_KEY_TYPES = {bytes, type(None)}


def encode_record_chunk(
    timestamps: Sequence[int] | int,
    keys: Sequence[bytes | None],
    values: Sequence[bytes | None],
    header_blocks: Mapping[int, bytes] | None,
    base_timestamp: int,
    first_offset_delta: int,
) -> bytes:
    """Encode validated records (keys and values ``bytes`` or ``None``; ``header_blocks`` from
    :func:`encode_headers`, keyed by position in this chunk). The builder's entry point."""
    pieces = encode_record_pieces(
        timestamps, keys, values, header_blocks, base_timestamp, first_offset_delta
    )
    pieces.pieces.append(pieces.trailer)
    return b"".join(pieces.pieces)


class RecordPieces(NamedTuple):
    """Encoded records before the final join.

    The chunk is ``b"".join(pieces) + trailer``. Every record is ``per_record`` consecutive
    pieces, so the chunk can be cut after any ``n`` records:
    ``b"".join(pieces[: n * per_record]) + trailer``, whose size is the sum of the first ``n``
    runs' lengths plus ``len(trailer)`` (computed with C-level ``map``/``zip``, without a second
    encoding pass). The fast loops put each record's last byte (its header count, 0) in front
    of the next record, to save a piece per record; the trailer closes the last one.
    """

    pieces: list[bytes]
    per_record: int
    trailer: bytes


def encode_record_pieces(
    timestamps: Sequence[int] | int,
    keys: Sequence[bytes | None],
    values: Sequence[bytes | None],
    header_blocks: Mapping[int, bytes] | None,
    base_timestamp: int,
    first_offset_delta: int,
) -> RecordPieces:
    """As :func:`encode_record_chunk`, before the final join (see :class:`RecordPieces`)."""
    count = len(values)
    if first_offset_delta < 0:
        raise ValueError(f"first_offset_delta {first_offset_delta} is negative")
    if count == 0:
        return RecordPieces([], 1, b"")
    if not header_blocks:
        first_value = values[0]
        # A big first record: straight to the memos (the small table's loop would stop at it).
        lengths = (
            _BIG_LENGTHS
            if first_value is not None and len(first_value) >= _SMALL_LENGTH_LIMIT
            else small_varint_table()
        )
        fast = None
        try:
            fast = _encode_fast(
                timestamps, keys, values, base_timestamp, first_offset_delta, lengths
            )
        except IndexError:
            # A length past the small-varint table (a record of 8 KiB or more): the same
            # loop with memos of big lengths' varints (see _BIG_LENGTHS). (Or a delta past
            # the table: the general path's.)
            if lengths is not _BIG_LENGTHS:
                try:
                    fast = _encode_fast(
                        timestamps, keys, values, base_timestamp, first_offset_delta, _BIG_LENGTHS
                    )
                except (IndexError, TypeError):
                    fast = None
        except TypeError:
            # A null value, or a non-int timestamp: the general path handles the first and
            # reports the last clearly.
            fast = None
        if fast is not None:
            return fast
    if isinstance(timestamps, int):
        timestamps = [timestamps] * count
    blocks = header_blocks or {}
    pieces: list[bytes] = []
    push = pieces.extend
    for i in range(count):
        push(
            _record_pieces_general(
                first_offset_delta + i,
                timestamps[i],
                base_timestamp,
                keys[i],
                values[i],
                blocks.get(i, _EMPTY),
            )
        )
    return RecordPieces(pieces, 4, b"")


def _encode_fast(
    timestamps: Sequence[int] | int,
    keys: Sequence[bytes | None],
    values: Sequence[bytes | None],
    base: int,
    first: int,
    lengths: _Lengths,
) -> RecordPieces | None:
    """The hot loops, or ``None`` when the input is not theirs to encode. Raise IndexError or
    TypeError (caught by the caller) when a field falls outside the small-varint table or is
    null where the loop expects bytes.

    Pieces of a record: ``zeroed[length]`` (the previous record's header count, 0, then this
    record's length), ``zeroed[delta]`` (attributes 0, timestamp delta), offset delta, key
    length, key, value length, value. Seven pieces rather than nine: ~10% faster.

    ``lengths``: the ``(varints, sizes, zeroed)`` that key, value and record lengths are
    looked up in: the small-varint table itself, or :data:`_BIG_LENGTHS` for records of
    8 KiB and more. Timestamp and offset deltas always come from the small table.
    """
    varints, sizes, zeroed = small_varint_table()
    length_varints, length_sizes, zeroed_lengths = lengths
    count = len(values)
    # Offset deltas' varints and sizes as slices of the table: no lookups in the loops. If
    # they run past the table, the slices come out short: the general path takes over.
    offset_varints = varints[first : first + count]
    offset_sizes = sizes[first : first + count]
    if len(offset_sizes) != count:
        return None
    out: list[bytes] = []
    push = out.extend
    keyless = keys.count(None) == count
    # The loops zip with strict=False (faster; see docs/performance.md, Notes moved from
    # the code): every caller passes sequences of one length, checked where they enter
    # (encode_records, RecordBatchBuilder).
    # Null keys (when not all are null) or values raise TypeError at len(): the caller then
    # takes the general path.
    key_bytes = cast(Sequence[bytes], keys)
    value_bytes = cast(Sequence[bytes], values)
    if isinstance(timestamps, int) or timestamps.count(timestamps[0]) == count:
        # One timestamp for all: attributes and timestamp delta are one constant piece.
        delta = (timestamps if isinstance(timestamps, int) else timestamps[0]) - base
        if delta < 0:
            return None
        head = zeroed[delta]
        fixed = len(head) + 1  # + header count
        if keyless:
            fixed += 1  # key length -1
            for ov, osize, v in zip(offset_varints, offset_sizes, value_bytes, strict=False):
                vl = len(v)
                push((zeroed_lengths[osize + length_sizes[vl] + vl + fixed], head, ov,
                      _NULL_LENGTH, length_varints[vl], v))  # fmt: skip
            per_record = 6
        else:
            for ov, osize, k, v in zip(offset_varints, offset_sizes, key_bytes, value_bytes,
                                    strict=False):  # fmt: skip
                kl = len(k)
                vl = len(v)
                push((zeroed_lengths[osize + length_sizes[kl] + length_sizes[vl] + kl + vl + fixed],
                      head, ov, length_varints[kl], k, length_varints[vl], v))  # fmt: skip
            per_record = 7
    else:
        if min(timestamps) < base:
            return None  # negative deltas would index the table from its end
        if keyless:
            for ov, osize, t, v in zip(offset_varints, offset_sizes, timestamps, value_bytes,
                                    strict=False):  # fmt: skip
                d = t - base
                vl = len(v)
                push((zeroed_lengths[sizes[d] + osize + length_sizes[vl] + vl + 3], zeroed[d], ov,
                      _NULL_LENGTH, length_varints[vl], v))  # fmt: skip
            per_record = 6
        else:
            for ov, osize, t, k, v in zip(offset_varints, offset_sizes, timestamps, key_bytes,
                                       value_bytes, strict=False):  # fmt: skip
                d = t - base
                kl = len(k)
                vl = len(v)
                push((zeroed_lengths[sizes[d] + osize + length_sizes[kl] + length_sizes[vl] + kl
                                     + vl + 2], zeroed[d], ov, length_varints[kl], k,
                      length_varints[vl], v))  # fmt: skip
            per_record = 7
    out[0] = out[0][1:]  # the first record has no record before it to close
    return RecordPieces(out, per_record, _EMPTY)


def encode_one_key_size(
    keys: Sequence[bytes] | None,
    values: Sequence[bytes],
    key_size: int,
    timestamp_delta: int,
    first_offset_delta: int,
) -> RecordPieces | None:
    """As :func:`encode_record_pieces` for records whose keys all have ``key_size`` bytes
    (``keys`` ``None``: all null), values of any size below ``_COLUMN_VALUE_LIMIT`` and one
    timestamp ``timestamp_delta`` after the batch's base, without a Python loop over the
    records: every piece is made column-wise by C-level passes (``None``: out of its range;
    ``TypeError`` for a null value). Pieces of a record: the previous record's header count
    (0), its length, attributes and timestamp delta (one table entry by value size, for
    the one- and for the two-byte offset deltas), offset delta and key length (one table
    entry by offset), key, value length, value. Cheaper than the loop of
    :func:`_encode_fast` (see docs/performance.md, Notes moved from the code).
    """
    varints, sizes, _ = small_varint_table()
    count = len(values)
    end = first_offset_delta + count
    if not 0 <= timestamp_delta < len(sizes) or end > len(sizes) or first_offset_delta < 0:
        return None
    if count == 0:
        return RecordPieces([], 1, b"")
    head = b"\x00" + varints[timestamp_delta]  # attributes, timestamp delta
    key_length = _NULL_LENGTH if keys is None else varints[key_size]
    # Bytes of a record besides its offset delta and its value with the value's length.
    fixed = len(head) + len(key_length) + (0 if keys is None else key_size) + 1
    # A timestamp delta other than 0 (records continuing an open batch, a few ms later) is
    # a piece of its own: tables made for every delta were made again for nearly every
    # call (see docs/performance.md, Notes moved from the code).
    delta = b"" if timestamp_delta == 0 else varints[timestamp_delta]
    table_head = head if not delta else _EMPTY
    value_sizes = list(map(len, values))
    per_record = (4 if keys is None else 5) + (1 if delta else 0)
    # Filled with the delta: its slots (if any) need no assignment of their own.
    out: list[bytes] = [delta] * (per_record * count)
    one_byte = min(max(0, _ONE_BYTE_LIMIT - first_offset_delta), count)
    try:
        out[0 : per_record * one_byte : per_record] = map(
            _length_table(fixed + 1, table_head).__getitem__, value_sizes[:one_byte]
        )
        out[per_record * one_byte :: per_record] = map(
            _length_table(fixed + 2, table_head).__getitem__, value_sizes[one_byte:]
        )
    except IndexError:  # a value of _COLUMN_VALUE_LIMIT bytes or more
        return None
    offsets = 2 if delta else 1
    out[offsets::per_record] = _offset_table(key_length, _table_size(end))[first_offset_delta:end]
    if keys is not None:
        out[offsets + 1 :: per_record] = keys
    out[per_record - 2 :: per_record] = map(_varint_list().__getitem__, value_sizes)
    out[per_record - 1 :: per_record] = values
    out[0] = out[0][1:]  # the first record has no record before it to close
    return RecordPieces(out, per_record, _EMPTY)


#: encode_one_key_size() takes values below this size (its tables' length).
_COLUMN_VALUE_LIMIT = 2048


@lru_cache(maxsize=1)
def _varint_list() -> list[bytes]:
    """``small_varint_table()``'s varints as a list (not to be changed): looked up by
    ``map(table.__getitem__, ...)``, a list's ``__getitem__`` is a C method called
    directly, a tuple's a slot wrapper called with an arguments tuple (see
    docs/performance.md, Notes moved from the code)."""
    return list(small_varint_table()[0])


@lru_cache(maxsize=8)
def _length_table(fixed: int, head: bytes) -> list[bytes]:
    """For each value size below ``_COLUMN_VALUE_LIMIT``: the previous record's header
    count (0), the length of a record of ``fixed`` bytes besides its value and the value's
    length, and ``head``. A list, not to be changed (see ``_varint_list``). ~40 bytes an
    entry, a few tables per producer (one per key size and timestamp delta in practice)."""
    _, sizes, zeroed = small_varint_table()
    return [zeroed[fixed + sizes[size] + size] + head for size in range(_COLUMN_VALUE_LIMIT)]


class UniformShape:
    """Records whose keys all have ``key_size`` bytes (or are all null: ``keyless``) and
    values ``value_size`` bytes, no nulls, without headers, one timestamp: how many fit a
    batch, and their bytes for several batches at once (:meth:`encode_batches`).

    Every such record differs from the next only by its offset delta, key and value: what
    comes before the key (the previous record's header count, its length, attributes,
    timestamp delta, offset delta, key length) is one piece from a table per offset delta,
    sizes are arithmetic, and the pieces are laid out by slice assignments and joined once
    for a whole group of batches, without a Python loop over records: several times cheaper
    than :func:`encode_record_pieces`, whose loop is the general path (see
    docs/performance.md, Notes moved from the code).

    ``None`` from its methods means the records are not its to encode (offset or timestamp
    deltas of 8 Ki and more, a negative timestamp delta): the caller takes the general
    encoder. Keys and values of any size are its (lengths past the small-varint table are
    encoded once, for the shape); for records of 1 KiB and more,
    :meth:`encode_batch_pieces` keeps keys and values by reference rather than joining them.
    """

    __slots__ = ("_by_delta", "_fixed", "_key_length", "_keyless", "_value_length")

    def __init__(self, key_length: bytes, value_length: bytes, fixed: int, keyless: bool) -> None:
        #: :meth:`_sizes` by timestamp delta (at most the small table's size: bounded).
        self._by_delta: dict[int, tuple[int, int, bytes]] = {}
        self._key_length = key_length
        self._value_length = value_length
        #: Bytes of a record after its offset delta: key length, key, value length, value.
        self._fixed = fixed
        self._keyless = keyless

    @classmethod
    def of(cls, key_size: int, value_size: int, keyless: bool) -> UniformShape | None:
        """The shape (``None``: a size out of an int32's range)."""
        if not (0 <= key_size <= INT32_MAX and 0 <= value_size <= INT32_MAX):
            return None
        key_length = _NULL_LENGTH if keyless else encode_varint(key_size)
        value_length = encode_varint(value_size)
        fixed = len(key_length) + (0 if keyless else key_size) + len(value_length) + value_size
        if fixed + _RECORD_HEAD_MAX > INT32_MAX:
            return None
        return cls(key_length, value_length, fixed, keyless)

    def _sizes(self, timestamp_delta: int) -> tuple[int, int, bytes] | None:
        """Record sizes with one-byte and with two-byte offset deltas, and the head. Kept
        per delta: asked for once per batch and per call, and a batch of 10 KB records holds
        6 (see docs/performance.md, Notes moved from the code)."""
        found = self._by_delta.get(timestamp_delta)
        if found is not None:
            return found
        varints, sizes, _ = small_varint_table()
        if not 0 <= timestamp_delta < len(sizes):
            return None
        head = b"\x00" + varints[timestamp_delta]  # attributes, timestamp delta
        body = len(head) + self._fixed + 1  # + header count; + the offset delta's bytes
        found = self._by_delta[timestamp_delta] = (
            body + 1 + size_of_varint(body + 1),
            body + 2 + size_of_varint(body + 2),
            head,
        )
        return found

    def fitting(self, room: int, first_offset_delta: int, timestamp_delta: int) -> int | None:
        """How many of these records fit ``room`` bytes of a batch's records section, the
        first at ``first_offset_delta`` (``None``: out of this encoder's range)."""
        found = self._sizes(timestamp_delta)
        if found is None:
            return None
        short, long, _ = found
        count = 0
        if first_offset_delta < _ONE_BYTE_LIMIT:
            one_byte = _ONE_BYTE_LIMIT - first_offset_delta
            count = min(one_byte, room // short)
            if count < one_byte:
                return count
            room -= count * short
        count += room // long
        _, sizes, _ = small_varint_table()
        return min(count, len(sizes) - first_offset_delta)

    def encode_batches(
        self,
        keys: Sequence[bytes] | None,
        values: Sequence[bytes],
        batches: Sequence[tuple[int, int, int]],
    ) -> list[memoryview] | None:
        """The records section of each batch ``(record count, first offset delta, timestamp
        delta)`` taking the records in order (the counts add up to all of them), encoded
        together: one join, each section a slice of it."""
        laid_out = self._lay_out(keys, values, batches)
        if laid_out is None:
            return None
        out, spans, _ = laid_out
        # Each record's first piece starts with the header count (0) of the record before:
        # a section starts one byte into its first record and takes the next one's first
        # byte (or the last piece) to close its last.
        data = memoryview(b"".join(out))
        sections = []
        start = 1
        for span in spans:
            sections.append(data[start : start + span])
            start += span
        return sections

    def encode_batch_pieces(
        self,
        keys: Sequence[bytes] | None,
        values: Sequence[bytes],
        batches: Sequence[tuple[int, int, int]],
    ) -> list[tuple[list[bytes], int]] | None:
        """:meth:`encode_batches` without the join: each batch's records section as pieces
        (``b"".join`` of them is the section), keys and values by reference, and its size.
        For big records, whose one copy is then the batch's own join when it is sealed."""
        laid_out = self._lay_out(keys, values, batches)
        if laid_out is None:
            return None
        out, spans, per_record = laid_out
        found = []
        start = 0
        for (batch_count, _, _), span in zip(batches, spans, strict=True):
            stop = start + per_record * batch_count
            pieces = out[start:stop]
            # The first piece starts with the previous record's header count (not this
            # section's); the next record's first byte (0, as the last piece) closes it.
            pieces[0] = pieces[0][1:]
            pieces.append(_EMPTY)
            found.append((pieces, span))
            start = stop
        return found

    def _lay_out(
        self,
        keys: Sequence[bytes] | None,
        values: Sequence[bytes],
        batches: Sequence[tuple[int, int, int]],
    ) -> tuple[list[bytes], list[int], int] | None:
        """The pieces of all the batches' records, in order, then a last piece (0); each
        batch's section size; the pieces a record."""
        _, sizes, _ = small_varint_table()
        keyless = self._keyless
        per_record = 2 if keyless else 4
        count = len(values)
        # Every slot but the value lengths' is assigned below: filled with the value length
        # from the start, they need no list and slice assignment of their own.
        out: list[bytes] = [_EMPTY if keyless else self._value_length] * (per_record * count + 1)
        out[-1] = _EMPTY  # the last record's trailer (its header count)
        suffix = self._key_length + self._value_length if keyless else self._key_length
        spans: list[int] = []
        record = 0
        for batch_count, first, delta in batches:
            found = self._sizes(delta)
            end = first + batch_count
            if found is None or end > len(sizes):
                return None
            short, long, head = found
            body = len(head) + self._fixed + 1
            if delta == 0:  # new batches, and records of their first call
                prefixes = _prefix_table(body, head, suffix, _table_size(end))[first:end]
            else:
                tails = _offset_table(suffix, _table_size(end))
                split = min(max(first, _ONE_BYTE_LIMIT), end)
                prefixes = (
                    *map((_zeroed_varint(body + 1) + head).__add__, tails[first:split]),
                    *map((_zeroed_varint(body + 2) + head).__add__, tails[split:end]),
                )
            stop = record + batch_count
            out[per_record * record : per_record * stop : per_record] = prefixes
            one_byte = max(0, min(_ONE_BYTE_LIMIT, end) - first)
            spans.append(one_byte * short + (batch_count - one_byte) * long)
            record = stop
        if record != count:
            raise ValueError(f"batches of {record} records for {count} records")
        if keys is None:
            out[1:-1:2] = values
        else:
            out[1:-1:4] = keys
            out[3:-1:4] = values
        return out, spans, per_record


#: The records per timestamp, on average, below which encode_uniform_records() declines.
_UNIFORM_MIN_RUN = 16


def encode_uniform_records(
    timestamps: Sequence[int],
    keys: Sequence[bytes | None],
    values: Sequence[bytes | None],
    base_timestamp: int,
    first_offset_delta: int,
) -> memoryview | None:
    """:func:`encode_record_chunk` for records of one shape (every key of one size, or every
    key null; every value of one size; no headers) whose timestamps never decrease: each
    run of equal timestamps goes through :meth:`UniformShape.encode_batches`, all in one
    join. ``None`` when the records are not of that kind (the caller then takes
    :func:`encode_record_pieces`), also for a negative timestamp delta or fields and offsets
    past the small-varint table.

    The records of a send() loop: its timestamps change once a millisecond, so a batch of a
    few hundred records has a few runs, and laying out a run by slices costs about half the
    per-record loop (see docs/performance.md, Notes moved from the code). Each run has a
    fixed cost: below ``_UNIFORM_MIN_RUN`` records a run on average, the per-record loop is
    cheaper.
    """
    count = len(values)
    if count == 0 or len(keys) != count or len(timestamps) != count:
        return None
    if (timestamps[-1] - timestamps[0] + 1) * _UNIFORM_MIN_RUN > count:
        return None  # runs too short on average (or out of order): each costs a few us
    # One pass each in C (faster than min() and max(), or a set); TypeError for a null.
    try:
        value_size = len(values[0])  # type: ignore[arg-type]
        if list(map(len, values)).count(value_size) != count:  # type: ignore[arg-type]
            return None
        keyless = keys[0] is None
        if keyless:
            key_size = 0
            if keys.count(None) != count:
                return None
        else:
            key_size = len(keys[0])  # type: ignore[arg-type]
            if list(map(len, keys)).count(key_size) != count:  # type: ignore[arg-type]
                return None
    except TypeError:
        return None
    shape = UniformShape.of(key_size, value_size, keyless)
    if shape is None:
        return None
    # Runs of equal timestamps, found by bisection, then checked: a run that bisection
    # got wrong (timestamps not in order) does not hold only its timestamp.
    runs: list[tuple[int, int, int]] = []
    start = 0
    while start < count:
        timestamp = timestamps[start]
        end = bisect_right(timestamps, timestamp, start)
        if end <= start or timestamps[start:end].count(timestamp) != end - start:
            return None
        runs.append((end - start, first_offset_delta + start, timestamp - base_timestamp))
        start = end
    sections = shape.encode_batches(
        None if keyless else cast(Sequence[bytes], keys), cast(Sequence[bytes], values), runs
    )
    if sections is None:
        return None
    if len(sections) == 1:
        return sections[0]
    # The sections are consecutive slices of one joined buffer: the whole of it but its
    # first byte (see encode_batches).
    return memoryview(sections[0].obj)[1:]


def _table_size(needed: int) -> int:
    """Prefix tables come in powers of two (from 1024): few sizes, few tables."""
    return max(1024, 1 << (needed - 1).bit_length())


@lru_cache(maxsize=4)
def _offset_table(suffix: bytes, size: int) -> tuple[bytes, ...]:
    """Each offset delta's varint below ``size``, then ``suffix``."""
    varints, sizes, _ = small_varint_table()
    return tuple(varints[offset] + suffix for offset in range(min(size, len(sizes))))


@lru_cache(maxsize=16)
def _prefix_table(body_size: int, head: bytes, suffix: bytes, size: int) -> tuple[bytes, ...]:
    """For each offset delta below ``size``: the previous record's header count (0), the
    length of a record whose body is ``body_size`` bytes plus its offset delta's varint,
    ``head``, the offset delta and ``suffix``. A few tables per producer in practice (one
    per record shape, for batches' base timestamp): cached, ~40 bytes an entry."""
    varints, sizes, _ = small_varint_table()
    # Two record lengths only (one- and two-byte offset deltas), of any size.
    lengths = (b"", _zeroed_varint(body_size + 1), _zeroed_varint(body_size + 2))
    return tuple(
        lengths[sizes[offset]] + head + varints[offset] + suffix
        for offset in range(min(size, len(sizes)))
    )


def _zeroed_varint(value: int) -> bytes:
    """A zero byte (the previous record's header count), then ``value``'s varint."""
    return _EMPTY + encode_varint(value)


def _record_pieces_general(
    offset_delta: int,
    timestamp: int,
    base_timestamp: int,
    key: bytes | None,
    value: bytes | None,
    header_block: bytes,
) -> tuple[bytes, bytes, bytes, bytes]:
    """One record as four pieces: its length and the fields up to the key (included), the
    value's length, the value (by reference, not copied), the header block: joining each
    record here would copy every value a second time before the batch's own join."""
    timestamp = as_timestamp(timestamp)
    if not INT64_MIN <= timestamp <= INT64_MAX:
        raise ValueError(f"timestamp {timestamp} is outside the int64 range")
    delta = timestamp - base_timestamp
    if not INT64_MIN <= delta <= INT64_MAX:
        raise ValueError(
            f"timestamp {timestamp} is too far from the batch's base timestamp {base_timestamp}"
        )
    head = b"".join(
        (
            _EMPTY,  # attributes
            encode_varlong(delta),
            encode_varint(offset_delta),
            _NULL_LENGTH if key is None else _length_and(as_bytes(key, "key")),
        )
    )
    if value is None:
        value_length, value = _NULL_LENGTH, b""
    else:
        value = as_bytes(value, "value")
        value_length = encode_varint(len(value))
    size = len(head) + len(value_length) + len(value) + len(header_block)
    return encode_varint(size) + head, value_length, value, header_block


def _length_and(data: bytes) -> bytes:
    return encode_varint(len(data)) + data
