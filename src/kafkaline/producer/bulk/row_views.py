"""The columnar encoder for records of any shape: each record a few pieces of an Arrow
``binary_view`` array (its head inline, the key inline or referenced in the key buffer, the
value referenced in place, the header block), built with numpy and copied into one buffer by
one cast to ``large_binary``. :class:`~kafkaline.producer.bulk.columnar.ColumnarRecords`
takes this path for what :mod:`~kafkaline.producer.bulk.one_shape` does not take."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from kafkaline.producer.bulk.columns import (
    INLINE_MAX,
    VOID16,
    BinaryColumn,
    Column,
    Int64s,
    OrderedColumns,
    buffer_of,
    buffer_piece,
    column_max,
    first_bytes,
    import_pyarrow,
    inline_view,
    nonnegative,
    place_in_views,
    take,
    uniform,
    varints_of,
    zigzag64,
    zigzag_length,
)

__all__ = ["encode_rows"]


def encode_rows(
    columns: OrderedColumns,
    rows: Int64s | slice,
    count: int,
    deltas: Int64s,
    timestamp_deltas: Column,
) -> tuple[int, Any]:
    """The records of ``rows`` (the source's order) with these offset and timestamp
    deltas: how many pieces each record is, and all pieces joined, as a pyarrow
    ``large_binary`` array (so record ``r`` starts at element ``pieces * r``).

    Each record is a few pieces of an Arrow ``binary_view`` array: the head (previous
    record's header count, length, attributes, timestamp delta, offset delta, key length;
    inline), the key (inline up to 12 bytes, else a reference into the key buffer), the
    value length (inline; after the key in its piece when every key has the same length
    and both fit 12 bytes), the value (a reference into the value buffer) and the header
    block; one cast to ``large_binary`` copies them into one buffer. The views are
    written in place (a byte and a uint32 view of one array)."""
    pa = import_pyarrow()
    source_rows = rows if columns.order is None else columns.order[rows]
    layout = _row_layout(columns, rows, deltas, timestamp_deltas)
    piece_count = layout.piece_count
    views = np.empty((count * piece_count + 1, 2), np.uint64)
    by_record = views[:-1].reshape(count, piece_count, 2)
    _write_head_pieces(by_record, layout, deltas)
    piece = len(layout.head_groups)
    buffers = [buffer_of(columns.keys), buffer_of(columns.values)]
    if layout.keys is not None:
        piece = _write_key_pieces(columns, views, count, piece_count, piece, layout, source_rows)
    word0, word1, _ = buffer_piece(columns.values, source_rows, 0, 1, layout.value_lengths)
    by_record[:, piece, 0], by_record[:, piece, 1] = word0, word1
    piece += 1
    if columns.header_blocks is not None:
        buffers.append(buffer_of(columns.header_blocks))
        word0, word1, _ = buffer_piece(columns.header_blocks, source_rows, 0, 2)
        by_record[:, piece, 0], by_record[:, piece, 1] = word0, word1
    # A last piece: one 0 byte, the last record's header count when it has no headers
    # (each record carries the previous one's), empty otherwise.
    views[-1] = inline_view(1 if columns.header_lengths is None else 0, 0, 0)
    array = pa.Array.from_buffers(
        pa.binary_view(), len(views), [None, pa.py_buffer(views), *buffers]
    )
    return piece_count, array.cast(pa.large_binary())


def _row_layout(
    columns: OrderedColumns, rows: Int64s | slice, deltas: Int64s, timestamp_deltas: Column
) -> _RowLayout:
    """The head fields of the records of ``rows`` grouped into inline pieces, and how
    the key and value length are laid out (see :func:`encode_rows`)."""
    kl = take(columns.key_lengths, rows)
    vl = take(columns.value_lengths, rows)
    kl = kl if isinstance(kl, int) else uniform(kl)
    vl = vl if isinstance(vl, int) else uniform(vl)
    timestamp_zz = (
        (timestamp_deltas << 1) ^ (timestamp_deltas >> 63)
        if isinstance(timestamp_deltas, int)
        else zigzag64(timestamp_deltas).astype(np.int64)
    )
    fields: list[tuple[Any, Any]] = []  # (encoded, size) per head field
    if columns.header_lengths is None:
        fields.append((0, 1))  # the previous record's header count
    head_deltas, by_delta = _head_deltas(
        deltas,
        isinstance(timestamp_zz, int)
        and isinstance(kl, int)
        and isinstance(vl, int)
        and columns.header_lengths is None,
    )
    timestamp = varints_of(timestamp_zz)
    delta = varints_of(head_deltas * 2)
    key_length = varints_of(zigzag_length(kl))
    value_length = varints_of(zigzag_length(vl))
    trailer: Column = 1 if columns.header_lengths is None else columns.header_lengths[rows]
    body = (
        1
        + timestamp[1]
        + delta[1]
        + key_length[1]
        + nonnegative(kl)
        + value_length[1]
        + nonnegative(vl)
        + trailer
    )
    fields += [varints_of(2 * body), (0, 1), timestamp, delta, key_length]
    keys = columns.keys if columns.keys is not None and column_max(kl) > 0 else None
    # Every key inline and of one length: the value length goes right after it.
    length_after_key = (
        keys is not None and isinstance(kl, int) and kl + column_max(value_length[1]) <= INLINE_MAX
    )
    if keys is None:
        fields.append(value_length)
    head_groups = _inline_groups(fields)
    piece_count = (
        len(head_groups)
        + (0 if keys is None else 1 if length_after_key else 2)
        + 1
        + (columns.header_blocks is not None)
    )
    return _RowLayout(
        kl, vl, keys, length_after_key, value_length, head_groups, head_deltas, by_delta,
        piece_count,
    )  # fmt: skip


def _head_deltas(deltas: Int64s, heads_by_delta_only: bool) -> tuple[Int64s, bool]:
    """The offset deltas to make heads for, and whether the heads are made per delta and
    gathered per row (``heads_by_delta_only``: every head field but the offset delta is one
    int for all rows)."""
    # A head then depends on the delta only: the heads of deltas 0..largest are made (a
    # batch's records) and taken per row in one gather, instead of ~20 numpy passes over
    # all rows.
    if heads_by_delta_only and len(deltas) > 0:
        largest_delta = int(deltas.max())
        if largest_delta < len(deltas):  # else no fewer heads to make
            return np.arange(largest_delta + 1, dtype=np.int64), True
    return deltas, False


def _write_key_pieces(
    columns: OrderedColumns,
    views: Any,
    count: int,
    piece_count: int,
    piece: int,
    layout: _RowLayout,
    source_rows: Int64s | slice,
) -> int:
    """Write each record's key piece (and value length piece) from ``piece`` on; the
    next piece's index."""
    keys, kl, value_length = layout.keys, layout.key_lengths, layout.value_length
    if keys is None:  # pragma: no cover - checked by the caller
        return piece
    by_record = views[:-1].reshape(count, piece_count, 2)
    if layout.length_after_key and isinstance(kl, int):
        lengths32 = views[:-1].view(np.uint32).reshape(count, piece_count, 4)[:, :, 0]
        bytes8 = views[:-1].view(np.uint8).reshape(count, piece_count, 16)
        # Bytes past a piece's length are never read (the cast copies ``length`` bytes):
        # the 12-byte gather may take a neighbour's bytes along.
        lengths32[:, piece] = kl + value_length[1]
        prefixes = columns.key_prefixes
        if prefixes is not None:  # read by murmur2 already: one gather, fewer passes
            # Rows as single items: a 1-D gather (numpy's fast path).
            width = prefixes.shape[1]
            rows_of = prefixes.view(np.dtype((np.void, width))).reshape(-1)[source_rows]
            bytes8[:, piece, 4 : 4 + kl] = rows_of.view(np.uint8).reshape(-1, width)[:, :kl]
        else:
            starts = keys.starts[source_rows]
            bytes8[:, piece, 4:16] = first_bytes(keys.data, starts, INLINE_MAX)
        # The varints as little-endian uint64s: one row (broadcast) or one per row.
        room = min(8, INLINE_MAX - kl)
        length_bytes = np.asarray(value_length[0], "<u8").reshape(-1).view(np.uint8)
        bytes8[:, piece, 4 + kl : 4 + kl + room] = length_bytes.reshape(-1, 8)[:, :room]
        return piece + 1
    word0, word1, _ = buffer_piece(keys, source_rows, 0, 0)
    by_record[:, piece, 0], by_record[:, piece, 1] = word0, word1
    by_record[:, piece + 1, 0], by_record[:, piece + 1, 1] = inline_view(
        value_length[1], value_length[0], 0
    )
    return piece + 2


class _RowLayout(NamedTuple):
    """How :func:`encode_rows` lays out a call's records (see there)."""

    key_lengths: Column
    value_lengths: Column
    #: The key column when some key has bytes, else None (no key piece).
    keys: BinaryColumn | None
    length_after_key: bool
    #: The value lengths' varints: (encoded, size).
    value_length: tuple[Any, Any]
    #: The head fields, grouped into inline pieces of at most 12 bytes.
    head_groups: list[list[tuple[Any, Any]]]
    #: The offset deltas the heads are made for (all of them, or 0..largest when by_delta).
    head_deltas: Int64s
    by_delta: bool
    piece_count: int


def _inline_groups(fields: list[tuple[Any, Any]]) -> list[list[tuple[Any, Any]]]:
    """Head fields ``(encoded, size)`` grouped into inline pieces of at most 12 bytes (for
    every row): one, usually."""
    head_groups: list[list[tuple[Any, Any]]] = [[]]
    widest = 0
    for field in fields:
        size = column_max(field[1])
        if head_groups[-1] and widest + size > INLINE_MAX:
            head_groups.append([])
            widest = 0
        head_groups[-1].append(field)
        widest += size
    return head_groups


def _write_head_pieces(by_record: Any, layout: _RowLayout, deltas: Int64s) -> None:
    """Write each record's head pieces (the first ``len(layout.head_groups)`` pieces)."""
    for piece, group in enumerate(layout.head_groups):
        low: Any = np.uint64(0)
        high: Any = np.uint64(0)
        position: Column = 0
        for encoded, field_size in group:
            spills = column_max(position) + column_max(field_size) > 8
            low, high = place_in_views(low, high, encoded, position, spills)
            position = position + field_size
        word0, word1 = inline_view(position, low, high)
        if layout.by_delta:  # both words of a head in one 16-byte gather
            heads = np.empty((len(layout.head_deltas), 2), np.uint64)
            heads[:, 0], heads[:, 1] = word0, word1
            by_record[:, piece] = (
                heads.view(VOID16).reshape(-1)[deltas].view(np.uint64).reshape(-1, 2)
            )
        else:
            by_record[:, piece, 0], by_record[:, piece, 1] = word0, word1
