"""Records of one shape (one timestamp, keys of one length or none, values of one length, no
headers) for the columnar encoder: tables of their sizes and heads per offset delta
(:func:`shape_table`), and their heads written into a batch's buffer (:func:`write_heads`).
:meth:`ColumnarRecords._encode_one_shape
<kafkaline.producer.bulk.columnar.ColumnarRecords._encode_one_shape>` scatters the keys and
values after them.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import numpy as np

from kafkaline.producer.bulk.columns import (
    Bytes,
    Column,
    Int64s,
    UInt64s,
    column_max,
    column_min,
    place_in_views,
    varint_scalar,
    varints_of,
)

__all__ = [
    "ShapeCut",
    "ShapeTable",
    "byte_items",
    "head_layout",
    "shape_table",
    "table_rows",
    "void",
    "write_heads",
]

#: The most rows a shape table has (~10 MiB): batches of more records (over ~3.5 MiB of
#: small records) take the general encoder.
_TABLE_ROWS_MAX = 1 << 18


def table_rows(needed: int) -> int:
    """Shape tables come in powers of two (from 8192, a 64 KiB batch's records of 8-byte
    values): few sizes, few tables."""
    return max(8192, 1 << (needed - 1).bit_length())


@functools.cache
def void(width: int) -> np.dtype[np.void]:
    return np.dtype((np.void, width))


def byte_items(buffer: Bytes, dtype: np.dtype[Any]) -> Any:
    """``buffer`` as overlapping items of ``dtype``, one starting at every byte (for
    scatters to any byte position)."""
    return np.ndarray((len(buffer) - dtype.itemsize + 1,), dtype, buffer=buffer, strides=(1,))


class ShapeTable(NamedTuple):
    """Records of one shape, per offset delta (the row): the size of each, ``ends[d]`` (the
    bytes of the records of deltas ``0..d-1``), and each head (see
    :meth:`ColumnarRecords._encode_one_shape`) as a row of bytes: the previous record's
    header count, the head, and where it fits, the value length after a gap for the key;
    the timestamp delta's bytes are left 0: they are put in by the caller at bit
    ``timestamp_at`` of the row's first 8 bytes (the table is made once per timestamp
    delta size, not per delta: open batches' deltas differ from call to call). The row's
    first ``head_width`` bytes hold the head, its first ``carry_width`` the value length
    too (0: it does not fit); both are multiples of 8. ``smallest``: the smallest record."""

    sizes: Int64s
    ends: Int64s
    heads: Bytes
    timestamp_at: UInt64s
    head_width: int
    carry_width: int
    smallest: int
    #: ``heads``' rows cut to a width, as one item each (made on first use per width).
    items: dict[int, Any]

    def rows_of(self, width: int) -> Any:
        """``heads``' first ``width`` bytes of each row, as one item each (copied at once,
        not row by row as a 2-D slice would be)."""
        found = self.items.get(width)
        if found is None:
            columns = min(width, self.heads.shape[1])
            rows = np.zeros((len(self.heads), width), np.uint8)
            rows[:, :columns] = self.heads[:, :columns]
            found = self.items[width] = rows.view(void(width)).reshape(-1)
            found.flags.writeable = False
        return found

    def fitting(self, first_delta: int, room: int) -> int:
        """How many records from offset delta ``first_delta`` fit ``room`` bytes."""
        ends = self.ends
        found = int(np.searchsorted(ends, int(ends[first_delta]) + room, "right")) - 1
        return min(found, len(self.sizes)) - first_delta


#: A head row carries the value length when it then takes at most this many bytes.
_HEAD_ROW_MAX = 32


@functools.lru_cache(maxsize=16)
def shape_table(
    key_length: int, value_length: int, timestamp_size: int, rows: int
) -> ShapeTable | None:
    """The table of records with keys of ``key_length`` bytes (-1: null), values of
    ``value_length``, a timestamp delta of ``timestamp_size`` bytes, for offset deltas
    ``0..rows-1`` (``None``: the timestamp delta would not be within a head's first 8
    bytes, or a head is wider than 16 bytes or than the smallest record, or too many
    rows)."""
    if rows > _TABLE_ROWS_MAX:
        return None
    deltas = np.arange(rows, dtype=np.int64)
    key, key_size = varint_scalar(2 * key_length if key_length >= 0 else 1)
    value, value_size = varint_scalar(2 * value_length)
    delta, delta_size = varints_of(deltas * 2)
    body = (
        2 + timestamp_size + delta_size + key_size + max(key_length, 0) + value_size + value_length
    )
    length, length_size = varints_of(body * 2)
    if column_max(length_size) + 2 + timestamp_size > 8:
        return None
    sizes = np.broadcast_to(np.asarray(body + length_size, np.int64), (rows,)).copy()
    # Byte 0: the previous record's header count (0); then the length, the attributes (0),
    # the timestamp delta (0 here), the offset delta and the key length.
    low: Any = np.zeros(rows, np.uint64)
    high: Any = np.zeros(rows, np.uint64)
    position: Column = 1
    for encoded, size in (
        (length, length_size),
        (0, 1),
        (0, timestamp_size),
        (delta, delta_size),
        (key, key_size),
    ):
        low, high = place_in_views(low, high, encoded, position)
        position = position + size
    smallest = int(sizes.min())
    widest = column_max(position)
    if widest > 16:
        return None
    # The value length goes after the key: its bytes per head size (a few runs of rows).
    value_at = position + max(key_length, 0)
    head_width = _round8(widest)
    carry_width = _round8(column_max(value_at) + value_size)
    if carry_width > min(_HEAD_ROW_MAX, smallest):
        carry_width = 0
    heads = np.zeros((rows, max(carry_width, 16)), np.uint8)
    words = heads.view("<u8")
    words[:, 0], words[:, 1] = low, high
    if carry_width:
        value_bytes = np.frombuffer(value.to_bytes(value_size, "little"), np.uint8)
        for at in range(column_min(value_at), column_max(value_at) + 1):  # a few head sizes
            heads[value_at == at, at : at + value_size] = value_bytes
    ends = np.zeros(rows + 1, np.int64)
    np.cumsum(sizes, out=ends[1:])
    timestamp_at = np.broadcast_to(np.asarray((2 + length_size) * 8, np.uint64), (rows,)).copy()
    table = ShapeTable(sizes, ends, heads, timestamp_at, head_width, carry_width, smallest, {})
    for array in table[:4]:
        array.flags.writeable = False
    return table


def _round8(size: int) -> int:
    return max(8, (size + 7) // 8 * 8)


#: A cut of records of one shape: (source row, count, first offset delta, table, timestamp
#: delta's varint, continues the open batch).
ShapeCut = tuple[int, int, int, ShapeTable, int, bool]


def head_layout(cuts: list[ShapeCut]) -> tuple[int, bool] | None:
    """The width of the heads' rows and whether they carry the value lengths (``None``: a
    head wider than the smallest record)."""
    tables = {id(cut[3]): cut[3] for cut in cuts}.values()
    # Heads are written as rows of one width (the widest table's), with the value lengths
    # where every table's rows have them; a record must be as large as the row (the bytes
    # past the head are overwritten by the writes after).
    smallest = min(table.smallest for table in tables)
    width = max(table.carry_width for table in tables)
    carried = all(table.carry_width for table in tables) and width <= smallest
    if not carried:
        width = max(table.head_width for table in tables)
        if width > smallest:
            return None
    return width, carried


def write_heads(cuts: list[ShapeCut], width: int) -> tuple[Int64s, Bytes]:
    """The records' ends (``ends[i]``: where record ``i`` ends, at its header count's byte;
    record ``i`` starts at ``ends[i - 1] + 1``) and a buffer with their heads written, a
    table slice per cut; byte 0 is the first head's header count, the last byte the last
    record's (0)."""
    total = sum(cut[1] for cut in cuts)
    sizes = np.empty(total, np.int64)
    heads = np.empty(total, void(width))
    low = heads.view(np.uint8).reshape(total, width).view("<u8")[:, 0]
    at = 0
    for _, count, delta, table, timestamp_delta, _ in cuts:
        stop = delta + count
        sizes[at : at + count] = table.sizes[delta:stop]
        heads[at : at + count] = table.rows_of(width)[delta:stop]
        if timestamp_delta:
            low[at : at + count] |= np.uint64(timestamp_delta) << table.timestamp_at[delta:stop]
        at += count
    ends = np.empty(total + 1, np.int64)
    ends[0] = 0
    np.cumsum(sizes, out=ends[1:])
    size = int(ends[-1])
    buffer = np.empty(size + 1 + 16, np.uint8)
    byte_items(buffer, void(width))[ends[:-1]] = heads
    buffer[size] = 0  # the last record's header count
    return ends, buffer
