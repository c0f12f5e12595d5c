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
from typing import NamedTuple

import numpy as np

from kafkaline.producer.accumulator import EncodedChunk, OpenBatch
from kafkaline.producer.bulk.columns import (
    ONE_SHAPE_MIN_VALUE,
    BinaryColumn,
    Bytes,
    Column,
    Int64s,
    OrderedColumns,
    nonnegative,
    take,
    uniform,
    varint_scalar,
    varints_of,
    zigzag_length,
)
from kafkaline.producer.bulk.one_shape import by_request, encode_one_shape
from kafkaline.producer.bulk.row_views import encode_rows

__all__ = ["ColumnarRecords"]


class _Cut(NamedTuple):
    start: int  # first row, in the records' (partition) order
    stop: int
    first_offset_delta: int
    base_timestamp: int
    continues_open: bool


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
        self._keys = keys
        self._values = values
        self._header_blocks = header_blocks
        self._input_timestamps = timestamps
        self._groups, order = _partition_groups(chosen, len(values.lengths))
        self._order = order

        def in_order(column: Column, checked: bool = False) -> Column:
            # ``checked``: an array is known not to hold one value for all rows.
            if not (checked or isinstance(column, int)):
                column = uniform(column)
            return column if order is None or isinstance(column, int) else column[order]

        header_lengths: Int64s | None = None
        if header_blocks is not None:
            lengths = header_blocks.lengths
            header_lengths = lengths if order is None else lengths[order]
        self._columns = OrderedColumns(
            keys,
            values,
            header_blocks,
            order,
            timestamps=in_order(timestamps),
            key_lengths=-1 if keys is None else in_order(keys.one_length, True),
            value_lengths=in_order(values.one_length, True),
            header_lengths=header_lengths,
            key_prefixes=key_prefixes,
        )
        self._timestamps = self._columns.timestamps
        self._fixed_size = _fixed_sizes(self._columns)
        kl, vl = self._columns.key_lengths, self._columns.value_lengths
        #: Every record of one shape (one timestamp, keys of one length or all null, values
        #: of one length, at least 8 bytes, no headers): :meth:`_encode_one_shape`'s.
        self._one_shape = (
            header_blocks is None
            and isinstance(timestamps, int)
            and isinstance(kl, int)
            and isinstance(vl, int)
            and vl >= ONE_SHAPE_MIN_VALUE
        )
        #: Which encoder the last :meth:`encode` took: ``"one shape"`` or ``"general"``
        #: (None before the first); for tests and profiles to see it without hooks.
        self.last_encoding: str | None = None

    @property
    def one_shape(self) -> bool:
        """Whether every record is of one shape (one timestamp, keys of one length or all
        null, values of one length and at least 8 bytes, no headers): :meth:`encode` then
        tries the one-shape encoder first."""
        return self._one_shape

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
        rows: Int64s | slice
        if all(a[1] == b[0] for a, b in itertools.pairwise(bounds)):
            rows = slice(bounds[0][0], bounds[-1][1])
        else:
            rows = np.concatenate([np.arange(a, b, dtype=np.int64) for a, b in bounds])
        timestamps = take(self._timestamps, rows)
        ends = self._record_ends(requests, rows, counts, firsts, timestamps)
        per_request = [
            _cut_group(ends, state, start, first, count, fresh_room, timestamps)
            for (_, state), (start, _), first, count in zip(
                requests, bounds, firsts[:-1], counts, strict=True
            )
        ]
        return per_request, rows, firsts[-1], timestamps

    def _record_ends(
        self,
        requests: Sequence[tuple[int, OpenBatch | None]],
        rows: Int64s | slice,
        counts: list[int],
        firsts: list[int],
        timestamps: Column,
    ) -> Int64s:
        """``ends[i]``: the bytes of the first ``i`` records of ``rows`` (an upper bound,
        see :meth:`_cuts`)."""
        total = firsts[-1]
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
        body = take(self._fixed_size, rows) + span + varints_of(offsets * 2, True)[1]
        sizes = body + varints_of(body * 2, True)[1]
        if isinstance(sizes, int):
            return np.arange(0, sizes * (total + 1), sizes, dtype=np.int64)
        ends = np.zeros(total + 1, np.int64)
        np.cumsum(sizes, out=ends[1:])
        return ends

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
                self.last_encoding = "one shape"
                return shaped
        self.last_encoding = "general"
        per_request, rows, row_count, timestamps = self._cuts(requests, fresh_room)
        cuts = [cut for group_cuts in per_request for cut in group_cuts]
        counts = [cut.stop - cut.start for cut in cuts]
        chunk_first = [0, *itertools.accumulate(counts)]  # each chunk's first row in ``rows``
        deltas, timestamp_deltas = _deltas(cuts, counts, chunk_first, row_count, timestamps)
        piece_count, records = encode_rows(self._columns, rows, row_count, deltas, timestamp_deltas)
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
        return by_request(chunks, [len(group_cuts) for group_cuts in per_request])

    def _encode_one_shape(
        self, requests: Sequence[tuple[int, OpenBatch | None]], fresh_room: int
    ) -> list[list[EncodedChunk]] | None:
        """:meth:`encode` for records of one shape (``None``: the general encoder must take
        them); see :mod:`kafkaline.producer.bulk.one_shape`."""
        return encode_one_shape(self._columns, self._groups, requests, fresh_room)


def _partition_groups(
    chosen: Int64s | int | None, count: int
) -> tuple[list[tuple[int | None, int, int]], Int64s | None]:
    """The ``(partition or None for sticky, start, stop)`` groups of ``count`` rows, and the
    order that groups them (``None``: the rows are one group, in input order)."""
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
            groups: list[tuple[int | None, int, int]] = []
            start = 0
            for shifted in used:
                size = counts[shifted]
                groups.append((None if shifted == 0 else shifted - 1, start, start + size))
                start += size
            return groups, order
    partition = None if chosen is None or chosen < 0 else int(chosen)
    return ([(partition, 0, count)] if count else []), None


def _fixed_sizes(columns: OrderedColumns) -> Column:
    """Each record's size without its length field, timestamp delta and offset delta:
    attributes, key length + key, value length + value, headers (or their count, 0)."""
    kl, vl = columns.key_lengths, columns.value_lengths
    sizes: Column = (
        1
        + varints_of(zigzag_length(kl))[1]
        + nonnegative(kl)
        + varints_of(zigzag_length(vl))[1]
        + nonnegative(vl)
        + (1 if columns.header_lengths is None else columns.header_lengths)
    )
    return sizes


def _cut_group(
    ends: Int64s,
    state: OpenBatch | None,
    start: int,
    first: int,
    count: int,
    fresh_room: int,
    timestamps: Column,
) -> list[_Cut]:
    """One group's batch cuts: what fits the open batch ``state`` (if any), then new
    batches of ``fresh_room``; the group's rows are ``first..first+count-1`` of ``ends``
    and start at row ``start`` of the source."""
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
    return cuts


def _deltas(
    cuts: list[_Cut], counts: list[int], chunk_first: list[int], row_count: int, timestamps: Column
) -> tuple[Int64s, Column]:
    """Each row's offset delta and timestamp delta in its batch."""
    first_deltas = [cut.first_offset_delta for cut in cuts]
    if len(cuts) == 1:
        deltas = np.arange(first_deltas[0], first_deltas[0] + row_count, dtype=np.int64)
    else:
        deltas = np.arange(row_count, dtype=np.int64) - np.repeat(
            np.array(chunk_first[:-1], np.int64) - np.array(first_deltas, np.int64), counts
        )
    bases = [cut.base_timestamp for cut in cuts]
    if min(bases) == max(bases):
        if isinstance(timestamps, int):
            return deltas, timestamps - bases[0]
        return deltas, uniform(timestamps - bases[0])
    timestamp_deltas: Int64s = timestamps - np.repeat(np.array(bases, np.int64), counts)
    return deltas, timestamp_deltas
