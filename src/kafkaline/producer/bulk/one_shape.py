"""The columnar encoder for records of one shape (one timestamp, keys of one length or none,
values of one length, no headers: the usual ``send_arrow()`` call): batches cut exactly by a
table of record sizes per offset delta, and records written into one buffer by three numpy
scatters. :class:`~kafkaline.producer.bulk.columnar.ColumnarRecords` takes this path when it
can."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

from kafkaline.producer.accumulator import EncodedChunk, OpenBatch
from kafkaline.producer.bulk.columns import (
    ONE_SHAPE_MIN_RECORD,
    U64,
    Bytes,
    Int64s,
    OrderedColumns,
    varint_scalar,
)
from kafkaline.producer.bulk.shapes import (
    ShapeCut,
    byte_items,
    head_layout,
    shape_table,
    table_rows,
    void,
    write_heads,
)

__all__ = ["by_request", "encode_one_shape"]


def encode_one_shape(
    columns: OrderedColumns,
    groups: Sequence[tuple[int | None, int, int]],
    requests: Sequence[tuple[int, OpenBatch | None]],
    fresh_room: int,
) -> list[list[EncodedChunk]] | None:
    """:meth:`ColumnarRecords.encode
    <kafkaline.producer.bulk.columnar.ColumnarRecords.encode>` for records of one shape
    (``None``: a head too wide for this encoder, the caller takes the general one). Such
    records differ only by offset delta (one or two bytes, rarely more), key and value:
    batches are cut exactly from a table of record sizes per offset delta
    (:func:`shape_table`) and the records written into one buffer by three scatters (numpy
    fancy assignments into overlapping views of the buffer: one item starts at every byte),
    each record's bytes written once:

    - each record's head (the previous record's header count, its length, attributes,
      timestamp delta, offset delta, key length), a gap for the key and the value length
      as one item of 8-32 bytes from the table (bytes past the value length are
      overwritten by the writes after; where the item would be larger than 32 bytes or
      a record, the head alone, and the value length as an 8-byte item of its own);
    - the keys and the values straight from the Arrow buffers, in input order, to the
      positions of their rows (rows of a partition are not gathered first).

    docs/performance.md ("Bulk encoders") has the measurements behind this."""
    timestamp = columns.timestamps
    if not isinstance(timestamp, int):
        return None  # pragma: no cover - checked by ColumnarRecords
    planned = _shape_cuts(columns, groups, requests, fresh_room)
    if planned is None:
        return None
    cuts, per_request = planned
    layout = head_layout(cuts)
    if layout is None:
        return None
    width, carried = layout
    ends, buffer = write_heads(cuts, width)
    _scatter_keys_and_values(columns, buffer, ends, cuts, carried)
    data = buffer.data  # a memoryview of the bytes
    chunks = [
        EncodedChunk(
            (data[int(ends[at]) + 1 : int(ends[at + count]) + 1],),
            int(ends[at + count] - ends[at]),
            position,
            count,
            timestamp,
            timestamp,
            continues,
        )
        for (position, count, _, _, _, continues), at in zip(
            cuts, itertools.accumulate((c[1] for c in cuts), initial=0), strict=False
        )
    ]
    return by_request(chunks, per_request)


def _shape_cuts(
    columns: OrderedColumns,
    groups: Sequence[tuple[int | None, int, int]],
    requests: Sequence[tuple[int, OpenBatch | None]],
    fresh_room: int,
) -> tuple[list[ShapeCut], list[int]] | None:
    """The batches' cuts of records of one shape, and how many cuts each request has
    (``None``: a table could not be made)."""
    timestamp, kl, vl = columns.timestamps, columns.key_lengths, columns.value_lengths
    if not (isinstance(timestamp, int) and isinstance(kl, int) and isinstance(vl, int)):
        return None  # pragma: no cover - checked by ColumnarRecords
    cuts: list[ShapeCut] = []
    per_request: list[int] = []
    fresh = shape_table(kl, vl, 1, table_rows(1 + fresh_room // ONE_SHAPE_MIN_RECORD))
    if fresh is None:
        return None
    per_batch = max(1, fresh.fitting(0, fresh_room))  # a new batch takes one at least
    for group, state in requests:
        _, start, stop = groups[group]
        position = start
        before = len(cuts)
        if state is not None:
            delta = state.first_offset_delta
            since = timestamp - state.base_timestamp
            encoded, size = varint_scalar(2 * since if since >= 0 else -2 * since - 1)
            table = shape_table(
                kl, vl, size, table_rows(delta + 1 + state.room // ONE_SHAPE_MIN_RECORD)
            )
            if table is None:
                return None
            taken = min(table.fitting(delta, state.room), stop - position)
            if taken > 0:
                cuts.append((position, taken, delta, table, encoded, True))
                position += taken
        while position < stop:
            taken = min(per_batch, stop - position)
            cuts.append((position, taken, 0, fresh, 0, False))
            position += taken
        per_request.append(len(cuts) - before)
    return cuts, per_request


def _scatter_keys_and_values(
    columns: OrderedColumns, buffer: Bytes, ends: Int64s, cuts: list[ShapeCut], carried: bool
) -> None:
    """Write the keys, the value lengths (unless the heads carried them) and the values
    of records of one shape into ``buffer`` (record ``i`` ends at ``ends[i + 1]``)."""
    kl, vl = columns.key_lengths, columns.value_lengths
    if not (isinstance(kl, int) and isinstance(vl, int)):  # pragma: no cover - checked
        raise TypeError("records of one shape have one key and one value length")
    total = len(ends) - 1
    # The rows in the buffer's order, and where each row's value starts there.
    value_at = ends[1:] - vl
    spans = [(cut[0], cut[0] + cut[1]) for cut in cuts]
    rows: Int64s | slice | None = None
    if all(a[1] == b[0] for a, b in itertools.pairwise(spans)):
        rows = slice(spans[0][0], spans[-1][1])
    if columns.order is not None and rows == slice(0, len(columns.order)):
        # Every row: each value written from its place in the input (no gather first).
        by_input = np.empty(total, np.int64)
        by_input[columns.order] = value_at
        source: slice | Int64s = slice(0, total)
        value_at = by_input
    else:
        if rows is None:
            rows = np.concatenate([np.arange(a, b, dtype=np.int64) for a, b in spans])
        source = rows if columns.order is None else columns.order[rows]
    value_length, length_size = varint_scalar(2 * vl)
    if kl > 0 and columns.keys is not None:
        keys = columns.keys
        first = int(keys.starts[0])
        matrix = keys.data[first : first + kl * len(keys.lengths)].view(void(kl))
        byte_items(buffer, matrix.dtype)[value_at - (length_size + kl)] = matrix[source]
    if not carried:
        byte_items(buffer, U64)[value_at - length_size] = np.uint64(value_length)
    values = columns.values
    first = int(values.starts[0])
    matrix = values.data[first : first + vl * len(values.lengths)].view(void(vl))
    byte_items(buffer, matrix.dtype)[value_at] = matrix[source]


def by_request(chunks: list[EncodedChunk], per_request: list[int]) -> list[list[EncodedChunk]]:
    """``chunks`` split into each request's (``per_request``: how many each has)."""
    out: list[list[EncodedChunk]] = []
    taken = 0
    for count in per_request:
        out.append(chunks[taken : taken + count])
        taken += count
    return out
