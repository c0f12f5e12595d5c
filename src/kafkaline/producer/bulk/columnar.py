"""A bulk call's records as columns, partitioned and encoded without a loop over records:
the path of ``send_arrow()``.

The key, value and header columns are Arrow binary arrays (a data buffer and an offsets
buffer each); the partitions and timestamps are numpy arrays. Per record, everything is done
by numpy over whole columns and by one pyarrow cast:

- keyed partitions: Kafka's murmur2 over every key at once (:func:`murmur2_partitions`;
  numpy's uint32 arithmetic wraps as Java's int does), then a stable argsort (a radix sort on
  16-bit partitions) groups the rows per partition, in input order within each;
- batch cuts: each record's size from the column lengths (varint sizes from a table), a
  cumulative sum, and one ``searchsorted`` per batch;
- record bytes: each record is a few pieces of an Arrow ``binary_view`` array built with
  numpy: its head (the previous record's header count, length, attributes, timestamp delta,
  offset delta, key length) inline in the 16-byte view, the key inline or referenced in the
  key buffer, the value length inline (after a key of one length, in the key's view), the
  value referenced in place in the value buffer; one cast to ``large_binary`` copies all
  pieces into one buffer, where each batch's records section is one slice (a produce request
  then references that slice, copied into the batch once, and the socket takes it from
  there).

The record layout is ``kafkaline.record.record_encoder``'s (the unit tests check the bytes
against it). Each numpy pass costs per element, so the fewer passes the better; how this
compares with the per-record encoder: see docs/performance.md, Notes moved from the code.

Records of one shape (one timestamp, keys of one length or none, values of one length,
no headers: the usual send_arrow() call) skip the views: they are cut exactly by a table of
sizes per offset delta and written into one buffer by three numpy scatters (heads with the
value lengths, keys, values; see ``ColumnarRecords._encode_one_shape``).

numpy and pyarrow are needed (the ``spark`` extra); the producer imports this module only
when it takes this path.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from kafkaline.producer.accumulator import EncodedChunk, OpenBatch
from kafkaline.producer.bulk.columns import (
    INLINE_MAX,
    ONE_SHAPE_MIN_RECORD,
    ONE_SHAPE_MIN_VALUE,
    U64,
    VOID16,
    BinaryColumn,
    Bytes,
    Column,
    Int64s,
    buffer_of,
    buffer_piece,
    column_max,
    first_bytes,
    import_pyarrow,
    inline_view,
    nonnegative,
    place_in_views,
    uniform,
    varint_scalar,
    varints_of,
    zigzag64,
    zigzag_length,
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

__all__ = ["ColumnarRecords"]


class _Cut(NamedTuple):
    start: int  # first row, in the records' (partition) order
    stop: int
    first_offset_delta: int
    base_timestamp: int
    continues_open: bool


def _take(column: Column, rows: Int64s | slice) -> Column:
    return column if isinstance(column, int) else column[rows]


class ColumnarRecords:
    """One call's records, grouped per partition, that encode themselves into batches'
    worth of records (an :class:`~kafkaline.producer.accumulator.EncodedRecordSource`).

    ``chosen`` is each row's partition (-1: the sticky partitioner's), or one partition (an
    int) or ``None`` (all sticky) for every row. ``timestamps`` is each row's timestamp, or
    one for every row. ``key_prefixes``: each key's first bytes, as
    :func:`murmur2_partitions_and_prefixes` returns them (optional). Rows keep their input
    order within a partition; :meth:`positions` maps the source's order back to input rows.

    A column with one value for every row (the call's timestamp; keys, values of one length) is kept
    as that int: ordering, cutting and encoding then do nothing per row for it. The batch cuts of
    all groups are computed together (see docs/performance.md, Notes moved from the code).
    """

    def __init__(
        self,
        keys: BinaryColumn | None,
        values: BinaryColumn,
        header_blocks: BinaryColumn | None,
        timestamps: Int64s | int,
        chosen: Int64s | int | None,
        key_prefixes: Bytes | None = None,
    ) -> None:
        count = len(values.lengths)
        self._key_prefixes = key_prefixes
        self._groups: list[tuple[int | None, int, int]] = []
        self._keys = keys
        self._values = values
        self._header_blocks = header_blocks
        order: Int64s | None = None
        if isinstance(chosen, np.ndarray):
            # Each partition's count (-1, sticky, first) gives the groups, or that all rows
            # go to one partition: one pass (where a comparison with the first row and
            # taking the sorted partitions were four).
            counts = np.bincount(chosen + 1).tolist() if count else []
            used = [shifted for shifted, size in enumerate(counts) if size]
            if len(used) <= 1:
                chosen = used[0] - 1 if used else None
            else:
                # Partitions fit 16 bits (and -1): numpy's stable sort of 16-bit ints is a
                # radix sort, linear in the rows.
                order = np.argsort(chosen.astype(np.int16), kind="stable")
                start = 0
                for shifted in used:
                    size = counts[shifted]
                    partition = None if shifted == 0 else shifted - 1
                    self._groups.append((partition, start, start + size))
                    start += size
        if order is None:
            partition = None if chosen is None or chosen < 0 else int(chosen)
            self._groups = [(partition, 0, count)] if count else []
        self._order = order
        self._input_timestamps = timestamps

        def in_order(column: Column, checked: bool = False) -> Column:
            # ``checked``: an array is known not to hold one value for all rows.
            if not (checked or isinstance(column, int)):
                column = uniform(column)
            return column if order is None or isinstance(column, int) else column[order]

        self._timestamps = in_order(timestamps)
        self._key_lengths = -1 if keys is None else in_order(keys.one_length, True)
        self._value_lengths = in_order(values.one_length, True)
        self._header_lengths: Int64s | None = None
        if header_blocks is not None:
            lengths = header_blocks.lengths
            self._header_lengths = lengths if order is None else lengths[order]
        # Each record's size without its length field, timestamp delta and offset delta:
        # attributes, key length + key, value length + value, headers (or their count, 0).
        kl, vl = self._key_lengths, self._value_lengths
        self._fixed_size: Column = (
            1
            + varints_of(zigzag_length(kl))[1]
            + nonnegative(kl)
            + varints_of(zigzag_length(vl))[1]
            + nonnegative(vl)
            + (1 if self._header_lengths is None else self._header_lengths)
        )
        #: Every record of one shape (one timestamp, keys of one length or all null, values
        #: of one length, at least 8 bytes, no headers): :meth:`_encode_one_shape`'s.
        self._one_shape = (
            header_blocks is None
            and isinstance(timestamps, int)
            and isinstance(kl, int)
            and isinstance(vl, int)
            and vl >= ONE_SHAPE_MIN_VALUE
        )

    @property
    def key_sizes(self) -> Int64s:
        """Each input row's key size (-1: null), in input order."""
        if self._keys is None:
            return np.full(len(self._values.lengths), -1, np.int64)
        return self._keys.lengths

    @property
    def value_sizes(self) -> Int64s:
        """Each input row's value size (-1: null), in input order."""
        return self._values.lengths

    @property
    def timestamps(self) -> Int64s | int:
        """Each input row's timestamp, in input order (or one for all rows)."""
        return self._input_timestamps

    @property
    def groups(self) -> Sequence[tuple[int | None, int, int]]:
        """``(partition or None for sticky, start, stop)`` per partition group."""
        return self._groups

    def positions(self, start: int, count: int) -> Int64s | None:
        """The input rows of records ``start..start+count-1`` of the source's order (``None``:
        the same, the order is the input's)."""
        return None if self._order is None else self._order[start : start + count]

    # ------------------------------------------------------------------ cutting

    def _cuts(
        self, requests: Sequence[tuple[int, OpenBatch | None]], fresh_room: int
    ) -> tuple[list[list[_Cut]], Int64s | slice, int, Column]:
        """Where the requested groups' records split into batches; with the rows of all
        groups (the source's order; a slice when the groups follow each other, as usual),
        their count and their timestamps. Sizes are bounded from above (offset deltas as if
        each group were one batch, timestamp deltas by the group's span), so a batch cut by
        them fits; the exact sizes are computed when encoding. All groups' sizes are
        computed in one pass of each numpy operation, not one per group."""
        bounds = [self._groups[group][1:] for group, _ in requests]
        counts = [stop - start for start, stop in bounds]
        firsts = [0, *itertools.accumulate(counts)]  # each group's first row in ``rows``
        total = firsts[-1]
        rows: Int64s | slice
        if all(a[1] == b[0] for a, b in itertools.pairwise(bounds)):
            rows = slice(bounds[0][0], bounds[-1][1])
        else:
            rows = np.concatenate([np.arange(a, b, dtype=np.int64) for a, b in bounds])
        timestamps = _take(self._timestamps, rows)
        if isinstance(timestamps, int):
            lows = highs = [timestamps] * len(requests)
        else:
            lows = np.minimum.reduceat(timestamps, firsts[:-1]).tolist()
            highs = np.maximum.reduceat(timestamps, firsts[:-1]).tolist()
        first_deltas = [0 if state is None else state.first_offset_delta for _, state in requests]
        span_sizes = []
        for (_, state), low, high in zip(requests, lows, highs, strict=True):
            if state is not None:
                low, high = min(low, state.base_timestamp), max(high, state.base_timestamp)
            span_sizes.append(varint_scalar(2 * (high - low))[1])
        if len(requests) == 1:
            offsets = np.arange(first_deltas[0], first_deltas[0] + total, dtype=np.int64)
        else:
            offsets = np.arange(total, dtype=np.int64) - np.repeat(
                np.array(firsts[:-1], np.int64) - np.array(first_deltas, np.int64), counts
            )
        span: Column = (
            span_sizes[0]
            if min(span_sizes) == max(span_sizes)
            else np.repeat(np.array(span_sizes, np.int64), counts)
        )
        body = _take(self._fixed_size, rows) + span + varints_of(offsets * 2, True)[1]
        sizes = body + varints_of(body * 2, True)[1]
        if isinstance(sizes, int):  # ends[i]: bytes of the first i records
            ends = np.arange(0, sizes * (total + 1), sizes, dtype=np.int64)
        else:
            ends = np.zeros(total + 1, np.int64)
            np.cumsum(sizes, out=ends[1:])
        per_request: list[list[_Cut]] = []
        for (_, state), (start, _), first, count in zip(
            requests, bounds, firsts[:-1], counts, strict=True
        ):
            cuts: list[_Cut] = []
            position, stop = first, first + count
            if state is not None:
                taken = int(np.searchsorted(ends, int(ends[first]) + state.room, "right")) - 1
                taken = min(taken, stop)
                if taken > first:
                    cuts.append(
                        _Cut(start, start + taken - first, state.first_offset_delta,
                             state.base_timestamp, True)
                    )  # fmt: skip
                    position = taken
            while position < stop:
                end = int(np.searchsorted(ends, int(ends[position]) + fresh_room, "right")) - 1
                # A new batch takes its first record whatever its size.
                end = min(max(end, position + 1), stop)
                base = timestamps if isinstance(timestamps, int) else int(timestamps[position])
                cuts.append(_Cut(start + position - first, start + end - first, 0, base, False))
                position = end
            per_request.append(cuts)
        return per_request, rows, total, timestamps

    # ------------------------------------------------------------------ encoding

    def encode(
        self, requests: Sequence[tuple[int, OpenBatch | None]], fresh_room: int
    ) -> list[list[EncodedChunk]]:
        """The requested groups' records as chunks (see
        :class:`~kafkaline.producer.accumulator.EncodedRecordSource`), encoded together."""
        if not requests:
            return []
        if self._one_shape:
            shaped = self._encode_one_shape(requests, fresh_room)
            if shaped is not None:
                return shaped
        per_request, rows, row_count, timestamps = self._cuts(requests, fresh_room)
        cuts = [cut for group_cuts in per_request for cut in group_cuts]
        counts = [cut.stop - cut.start for cut in cuts]
        chunk_first = [0, *itertools.accumulate(counts)]  # each chunk's first row in ``rows``
        first_deltas = [cut.first_offset_delta for cut in cuts]
        if len(cuts) == 1:
            deltas = np.arange(first_deltas[0], first_deltas[0] + row_count, dtype=np.int64)
        else:
            deltas = np.arange(row_count, dtype=np.int64) - np.repeat(
                np.array(chunk_first[:-1], np.int64) - np.array(first_deltas, np.int64), counts
            )
        bases = [cut.base_timestamp for cut in cuts]
        timestamp_deltas: Column
        if min(bases) == max(bases):
            timestamp_deltas = (
                timestamps - bases[0]
                if isinstance(timestamps, int)
                else uniform(timestamps - bases[0])
            )
        else:
            timestamp_deltas = timestamps - np.repeat(np.array(bases, np.int64), counts)
        piece_count, records = self._encode_rows(rows, row_count, deltas, timestamp_deltas)
        offsets = np.frombuffer(records.buffers()[1], np.int64)
        data = memoryview(records.buffers()[2])
        bounds = offsets[np.array(chunk_first, np.int64) * piece_count].tolist()
        if isinstance(timestamps, int):
            firsts = maxima = [timestamps] * len(cuts)
        else:
            maxima = np.maximum.reduceat(timestamps, chunk_first[:-1]).tolist()
            firsts = timestamps[chunk_first[:-1]].tolist()
        headers = self._header_blocks is not None
        chunks: list[EncodedChunk] = []
        for index, cut in enumerate(cuts):
            begin, end = bounds[index], bounds[index + 1]
            # One slice of the records buffer, not a copy (see docs/performance.md, Notes moved from
            # the code). Without headers each record starts with the previous one's header count
            # (0): the section starts one byte in and takes the next record's first byte (a final
            # piece after the last).
            section = (data[begin:end],) if headers else (data[begin + 1 : end + 1],)
            chunks.append(
                EncodedChunk(
                    section,
                    end - begin,
                    cut.start,
                    counts[index],
                    firsts[index],
                    maxima[index],
                    cut.continues_open,
                )
            )
        return _by_request(chunks, [len(group_cuts) for group_cuts in per_request])

    def _encode_one_shape(
        self, requests: Sequence[tuple[int, OpenBatch | None]], fresh_room: int
    ) -> list[list[EncodedChunk]] | None:
        """:meth:`encode` for records of one shape (``None``: a head too wide for this
        encoder, the caller takes the general one). Such records differ only by offset delta
        (one or two bytes, rarely more), key and value: batches are cut exactly from a table
        of record sizes per offset delta (:func:`shape_table`) and the records written into
        one buffer by three scatters (numpy fancy assignments into overlapping views of the
        buffer: one item starts at every byte), each record's bytes written once:

        - each record's head (the previous record's header count, its length, attributes,
          timestamp delta, offset delta, key length), a gap for the key and the value length
          as one item of 8-32 bytes from the table (bytes past the value length are
          overwritten by the writes after; where the item would be larger than 32 bytes or
          a record, the head alone, and the value length as an 8-byte item of its own);
        - the keys and the values straight from the Arrow buffers, in input order, to the
          positions of their rows (rows of a partition are not gathered first).

        docs/performance.md ("Bulk encoders") has the measurements behind this."""
        timestamp = self._timestamps
        if not isinstance(timestamp, int):
            return None  # pragma: no cover - checked by __init__
        planned = self._shape_cuts(requests, fresh_room)
        if planned is None:
            return None
        cuts, per_request = planned
        layout = head_layout(cuts)
        if layout is None:
            return None
        width, carried = layout
        ends, buffer = write_heads(cuts, width)
        self._scatter_keys_and_values(buffer, ends, cuts, carried)
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
        return _by_request(chunks, per_request)

    def _shape_cuts(
        self, requests: Sequence[tuple[int, OpenBatch | None]], fresh_room: int
    ) -> tuple[list[ShapeCut], list[int]] | None:
        """The batches' cuts of records of one shape, and how many cuts each request has
        (``None``: a table could not be made)."""
        timestamp, kl, vl = self._timestamps, self._key_lengths, self._value_lengths
        if not (isinstance(timestamp, int) and isinstance(kl, int) and isinstance(vl, int)):
            return None  # pragma: no cover - checked by __init__
        cuts: list[ShapeCut] = []
        per_request: list[int] = []
        fresh = shape_table(kl, vl, 1, table_rows(1 + fresh_room // ONE_SHAPE_MIN_RECORD))
        if fresh is None:
            return None
        per_batch = max(1, fresh.fitting(0, fresh_room))  # a new batch takes one at least
        for group, state in requests:
            _, start, stop = self._groups[group]
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
        self, buffer: Bytes, ends: Int64s, cuts: list[ShapeCut], carried: bool
    ) -> None:
        """Write the keys, the value lengths (unless the heads carried them) and the values
        of records of one shape into ``buffer`` (record ``i`` ends at ``ends[i + 1]``)."""
        kl, vl = self._key_lengths, self._value_lengths
        if not (isinstance(kl, int) and isinstance(vl, int)):  # pragma: no cover - __init__
            raise TypeError("records of one shape have one key and one value length")
        total = len(ends) - 1
        # The rows in the buffer's order, and where each row's value starts there.
        value_at = ends[1:] - vl
        spans = [(cut[0], cut[0] + cut[1]) for cut in cuts]
        rows: Int64s | slice | None = None
        if all(a[1] == b[0] for a, b in itertools.pairwise(spans)):
            rows = slice(spans[0][0], spans[-1][1])
        if self._order is not None and rows == slice(0, len(self._order)):
            # Every row: each value written from its place in the input (no gather first).
            by_input = np.empty(total, np.int64)
            by_input[self._order] = value_at
            source: slice | Int64s = slice(0, total)
            value_at = by_input
        else:
            if rows is None:
                rows = np.concatenate([np.arange(a, b, dtype=np.int64) for a, b in spans])
            source = rows if self._order is None else self._order[rows]
        value_length, length_size = varint_scalar(2 * vl)
        if kl > 0 and self._keys is not None:
            keys = self._keys
            first = int(keys.starts[0])
            matrix = keys.data[first : first + kl * len(keys.lengths)].view(void(kl))
            byte_items(buffer, matrix.dtype)[value_at - (length_size + kl)] = matrix[source]
        if not carried:
            byte_items(buffer, U64)[value_at - length_size] = np.uint64(value_length)
        values = self._values
        first = int(values.starts[0])
        matrix = values.data[first : first + vl * len(values.lengths)].view(void(vl))
        byte_items(buffer, matrix.dtype)[value_at] = matrix[source]

    def _encode_rows(
        self, rows: Int64s | slice, count: int, deltas: Int64s, timestamp_deltas: Column
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
        source_rows = rows if self._order is None else self._order[rows]
        layout = self._row_layout(rows, deltas, timestamp_deltas)
        piece_count = layout.piece_count
        views = np.empty((count * piece_count + 1, 2), np.uint64)
        by_record = views[:-1].reshape(count, piece_count, 2)
        _write_head_pieces(by_record, layout, deltas)
        piece = len(layout.head_groups)
        buffers = [buffer_of(self._keys), buffer_of(self._values)]
        if layout.keys is not None:
            piece = self._write_key_pieces(views, count, piece_count, piece, layout, source_rows)
        word0, word1, _ = buffer_piece(self._values, source_rows, 0, 1, layout.value_lengths)
        by_record[:, piece, 0], by_record[:, piece, 1] = word0, word1
        piece += 1
        if self._header_blocks is not None:
            buffers.append(buffer_of(self._header_blocks))
            word0, word1, _ = buffer_piece(self._header_blocks, source_rows, 0, 2)
            by_record[:, piece, 0], by_record[:, piece, 1] = word0, word1
        # A last piece: one 0 byte, the last record's header count when it has no headers
        # (each record carries the previous one's), empty otherwise.
        views[-1] = inline_view(1 if self._header_lengths is None else 0, 0, 0)
        array = pa.Array.from_buffers(
            pa.binary_view(), len(views), [None, pa.py_buffer(views), *buffers]
        )
        return piece_count, array.cast(pa.large_binary())

    def _row_layout(
        self, rows: Int64s | slice, deltas: Int64s, timestamp_deltas: Column
    ) -> _RowLayout:
        """The head fields of the records of ``rows`` grouped into inline pieces, and how
        the key and value length are laid out (see :meth:`_encode_rows`)."""
        kl = _take(self._key_lengths, rows)
        vl = _take(self._value_lengths, rows)
        kl = kl if isinstance(kl, int) else uniform(kl)
        vl = vl if isinstance(vl, int) else uniform(vl)
        timestamp_zz = (
            (timestamp_deltas << 1) ^ (timestamp_deltas >> 63)
            if isinstance(timestamp_deltas, int)
            else zigzag64(timestamp_deltas).astype(np.int64)
        )
        fields: list[tuple[Any, Any]] = []  # (encoded, size) per head field
        if self._header_lengths is None:
            fields.append((0, 1))  # the previous record's header count
        # When every head field but the offset delta is one int for all rows, a head depends
        # on the delta only: the heads of deltas 0..largest are made (a batch's records) and
        # taken per row in one gather, instead of ~20 numpy passes over all rows.
        head_deltas = deltas
        by_delta = (
            isinstance(timestamp_zz, int)
            and isinstance(kl, int)
            and isinstance(vl, int)
            and self._header_lengths is None
            and len(deltas) > 0
        )
        if by_delta:
            largest_delta = int(deltas.max())
            by_delta = largest_delta < len(deltas)  # else no fewer heads to make
            if by_delta:
                head_deltas = np.arange(largest_delta + 1, dtype=np.int64)
        timestamp = varints_of(timestamp_zz)
        delta = varints_of(head_deltas * 2)
        key_length = varints_of(zigzag_length(kl))
        value_length = varints_of(zigzag_length(vl))
        trailer: Column = 1 if self._header_lengths is None else self._header_lengths[rows]
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
        keys = self._keys if self._keys is not None and column_max(kl) > 0 else None
        # Every key inline and of one length: the value length goes right after it.
        length_after_key = (
            keys is not None
            and isinstance(kl, int)
            and kl + column_max(value_length[1]) <= INLINE_MAX
        )
        if keys is None:
            fields.append(value_length)
        head_groups = _inline_groups(fields)
        piece_count = (
            len(head_groups)
            + (0 if keys is None else 1 if length_after_key else 2)
            + 1
            + (self._header_blocks is not None)
        )
        return _RowLayout(
            kl, vl, keys, length_after_key, value_length, head_groups, head_deltas, by_delta,
            piece_count,
        )  # fmt: skip

    def _write_key_pieces(
        self,
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
            prefixes = self._key_prefixes
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


def _by_request(chunks: list[EncodedChunk], per_request: list[int]) -> list[list[EncodedChunk]]:
    """``chunks`` split into each request's (``per_request``: how many each has)."""
    out: list[list[EncodedChunk]] = []
    taken = 0
    for count in per_request:
        out.append(chunks[taken : taken + count])
        taken += count
    return out


class _RowLayout(NamedTuple):
    """How :meth:`ColumnarRecords._encode_rows` lays out a call's records (see there)."""

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
