"""send_batch()'s records over Python lists, grouped per partition, that encode themselves
into whole batches' worth of records: an
:class:`~kafkaline.producer.accumulator.EncodedRecordSource` for
:meth:`RecordAccumulator.append_encoded
<kafkaline.producer.accumulator.RecordAccumulator.append_encoded>`, the path
``producer.columnar`` takes with numpy and pyarrow, here without them.

Each batch's records are encoded once, by the per-record encoder's fast loop
(:func:`~kafkaline.record.record_encoder.encode_record_pieces`) over a window of records
sized to fill the batch, and joined once; the batch keeps that chunk (a slice of it when the
window was too large) and copies it once more, behind its header, when it is sealed. The
builder's own bulk append (``RecordBatchBuilder.append_many``, the path before this one) cut
its windows by encoding every record's size a second time, joined twice where a window
overflowed, and kept per-record lists for the Sender to drop.

Measured (issue 5's "small" workload: 300,000 records of 100 bytes, keys from 10,000
distinct keys, send_batch() in calls of 10,000, the project's 2-core machine; the caller's
thread): the encoding loop ~0.32 us and the join ~0.09 us a record, where a window of records
cost ~0.95 us a record through ``append_many`` (cProfile and py-spy samples, alternating runs).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain

from kafkaline.producer.accumulator import EncodedChunk, OpenBatch
from kafkaline.producer.bulk import gather
from kafkaline.record import Headers
from kafkaline.record.record_encoder import (
    encode_headers,
    encode_record_pieces,
    encode_uniform_pieces,
)

__all__ = ["ListRecords"]

#: Records this large on average (encoded) keep their pieces (keys and values by reference)
#: until the batch is sealed, rather than being joined into a chunk here: one copy of each
#: record instead of two. The builder's threshold, for the same reason
#: (``RecordBatchBuilder._encode_pending``).
_KEEP_PIECES_RECORD_SIZE = 1024
#: A first window is sized from this many records' key and value lengths ...
_PROBE_RECORDS = 32
#: ... plus this much per record (lengths, deltas and attributes of a small record).
_TYPICAL_RECORD_OVERHEAD = 10
#: Windows aim this much past the room by the average record size: a window that overflows
#: drops a few records off its end (no second encoding), one that falls short needs a
#: second window (a second loop and join).
_WINDOW_OVERSHOOT = 1.02


class ListRecords:
    """One send_batch() call's records (checked: bytes or None, headers checked), grouped per
    partition, encoding themselves into batches (an ``EncodedRecordSource``).

    ``groups`` holds ``(partition or None for the sticky partitioner's, input positions or
    None)`` per group, positions in input order; ``None`` positions (one group only) take
    every record in input order. :meth:`positions` maps the source's order back to input
    positions. Every record has the timestamp ``timestamp``.
    """

    def __init__(
        self,
        values: Sequence[bytes | None],
        keys: Sequence[bytes | None] | None,
        headers: Sequence[Headers | None] | None,
        timestamp: int,
        groups: Sequence[tuple[int | None, Sequence[int] | None]],
        key_size: int | None = None,
        value_size: int | None = None,
    ) -> None:
        count = len(values)
        self._values = values
        self._keyless = keys is None
        self._keys: Sequence[bytes | None] = [None] * count if keys is None else keys
        self._timestamp = timestamp
        self._order: list[int] | None = None
        self._groups: list[tuple[int | None, int, int]] = []
        if len(groups) == 1 and groups[0][1] is None:
            if count:
                self._groups.append((groups[0][0], 0, count))
        else:
            start = 0
            for partition, positions in groups:
                size = count if positions is None else len(positions)
                if size:
                    self._groups.append((partition, start, start + size))
                    start += size
            self._order = list(
                chain.from_iterable(
                    range(count) if positions is None else positions for _, positions in groups
                )
            )
        #: Input position -> the record's encoded headers (only records that have any).
        self._header_blocks: dict[int, bytes] = {}
        if headers is not None:
            self._header_blocks = {
                position: encode_headers(header)
                for position, header in enumerate(headers)
                if header
            }
        #: Bytes per encoded record, from the last window (0: not known yet).
        self._average = 0.0
        #: (key size, value size) when every record has this shape and no headers: the
        #: encoder without a loop over records applies (``encode_uniform_pieces``).
        self._shape: tuple[int, int] | None = None
        if value_size is not None and not self._header_blocks:
            if keys is None:
                self._shape = (0, value_size)
            elif key_size is not None:
                self._shape = (key_size, value_size)

    @property
    def groups(self) -> Sequence[tuple[int | None, int, int]]:
        """``(partition or None for sticky, start, stop)`` per partition group."""
        return self._groups

    def positions(self, start: int, count: int) -> list[int] | None:
        """The input positions of records ``start..start+count-1`` of the source's order
        (``None``: the same, the order is the input's)."""
        return None if self._order is None else self._order[start : start + count]

    def encode(
        self, requests: Sequence[tuple[int, OpenBatch | None]], fresh_room: int
    ) -> list[list[EncodedChunk]]:
        """For each ``(group index, open batch)``: the group's records as chunks in order,
        first those that fit the open batch (if any; ``continues_open``), then chunks of at
        most ``fresh_room`` bytes for new batches (at least one record each)."""
        out: list[list[EncodedChunk]] = []
        for group, open_batch in requests:
            _, start, stop = self._groups[group]
            chunks: list[EncodedChunk] = []
            if open_batch is not None:
                chunk = self._fill(
                    start,
                    stop,
                    open_batch.room,
                    open_batch.first_offset_delta,
                    open_batch.base_timestamp,
                    continues_open=True,
                )
                if chunk is not None:
                    chunks.append(chunk)
                    start += chunk.record_count
            while start < stop:
                chunk = self._fill(
                    start, stop, fresh_room, 0, self._timestamp, continues_open=False
                )
                if chunk is None:  # pragma: no cover - a new batch takes at least one record
                    raise AssertionError("a new batch took no record")
                chunks.append(chunk)
                start += chunk.record_count
            out.append(chunks)
        return out

    def _fill(
        self,
        start: int,
        stop: int,
        room: int,
        first_offset_delta: int,
        base_timestamp: int,
        *,
        continues_open: bool,
    ) -> EncodedChunk | None:
        """The records from ``start`` (source order) that fit ``room`` bytes of one batch,
        encoded; ``None`` when none fits (only for an open batch: a new one takes its first
        record whatever its size)."""
        pieces: list[bytes | memoryview] = []
        size = 0
        taken = 0
        while start + taken < stop:
            average = self._average or self._probe_average(start + taken, stop)
            window = min(stop - start - taken, int((room - size) * _WINDOW_OVERSHOOT / average) + 1)
            encoded, count, encoded_size = self._encode_window(
                start + taken,
                window,
                room - size,
                first_offset_delta + taken,
                base_timestamp,
                keep_pieces=average >= _KEEP_PIECES_RECORD_SIZE,
                must_take=not continues_open and taken == 0,
            )
            if not count:
                break
            pieces += encoded
            size += encoded_size
            taken += count
            if count < window or size >= room:
                break  # cut at the room (or past it by a new batch's one record): full
        if not taken:
            return None
        return EncodedChunk(
            tuple(pieces),
            size,
            start,
            taken,
            self._timestamp,
            self._timestamp,
            continues_open,
        )

    def _probe_average(self, start: int, stop: int) -> float:
        """Bytes per record before any is encoded: the next few records' key, value and
        header sizes with a typical overhead."""
        values, keys, order, blocks = self._values, self._keys, self._order, self._header_blocks
        probe = range(start, min(stop, start + _PROBE_RECORDS))
        total = 0
        for index in probe:
            position = index if order is None else order[index]
            value, key = values[position], keys[position]
            total += _TYPICAL_RECORD_OVERHEAD + len(value or b"") + len(key or b"")
            if blocks:
                total += len(blocks.get(position, b""))
        return total / len(probe)

    def _encode_window(
        self,
        start: int,
        count: int,
        room: int,
        first_offset_delta: int,
        base_timestamp: int,
        *,
        keep_pieces: bool,
        must_take: bool,
    ) -> tuple[list[bytes | memoryview], int, int]:
        """Encode ``count`` records from ``start`` (source order) and keep those that fit
        ``room`` (all, or the first ones: at least one if ``must_take``); return their
        pieces (one joined chunk, or with ``keep_pieces`` the encoder's pieces, keys and
        values by reference), how many records they hold and their size."""
        order = self._order
        if order is None:
            keys = self._keys[start : start + count]
            values = self._values[start : start + count]
            positions: Sequence[int] = range(start, start + count)
        else:
            positions = order[start : start + count]
            keys = gather(self._keys, positions)
            values = gather(self._values, positions)
        encoded = None
        if self._shape is not None:
            encoded = encode_uniform_pieces(
                None if self._keyless else keys,  # type: ignore[arg-type]  # no nulls
                values,  # type: ignore[arg-type]  # no nulls: the shape says so
                *self._shape,
                self._timestamp - base_timestamp,
                first_offset_delta,
            )
        if encoded is None:
            blocks = None
            if self._header_blocks:
                found = self._header_blocks
                blocks = {i: found[p] for i, p in enumerate(positions) if p in found}
            encoded = encode_record_pieces(
                self._timestamp, keys, values, blocks, base_timestamp, first_offset_delta
            )
        pieces, per_record, trailer = encoded
        joined = b""
        if keep_pieces:
            records_size = sum(map(len, pieces))
        else:
            pieces.append(trailer)
            joined = b"".join(pieces)
            pieces.pop()
            records_size = len(joined) - len(trailer)
        self._average = (records_size + len(trailer)) / count
        kept = count
        if records_size + len(trailer) > room:
            # Too many: drop records off the end, summing only their pieces' sizes (the
            # records kept end where the first dropped one began; the trailer closes them).
            while kept and records_size + len(trailer) > room:
                kept -= 1
                records_size -= sum(map(len, pieces[kept * per_record : (kept + 1) * per_record]))
            if not kept:
                if not must_take:
                    return [], 0, 0
                kept = 1
                records_size = sum(map(len, pieces[:per_record]))
        kept_pieces: list[bytes | memoryview]
        if keep_pieces:
            kept_pieces = [*pieces] if kept == count else [*pieces[: kept * per_record]]
            if trailer:
                kept_pieces.append(trailer)
        elif kept == count:
            kept_pieces = [joined]
        else:
            kept_pieces = [memoryview(joined)[:records_size]]
            if trailer:
                kept_pieces.append(trailer)
        return kept_pieces, kept, records_size + len(trailer)
