"""Building one record batch v2: cheap appends, one encoding pass when sealed.

``append`` only keeps references to the key, value and timestamp and adds an upper bound of the
record's size to a running estimate (one comparison and one addition past the type checks).
The records are encoded by :func:`~kafkaline.record.record_encoder.encode_record_chunk` when the
batch is sealed, or earlier in chunks when the estimate reaches the size limit: the encoded
chunk's exact size then replaces the estimate, and the last records are admitted on their exact
size, so a batch fills as tightly as Java's although the per-record bound is loose (36 bytes of
overhead, for ~8 real). :meth:`RecordBatchBuilder.append_many` is the bulk path: it encodes
windows of records at once and cuts them exactly at the limit.

Its cost per record: ``benchmarks/micro_record.py`` (figures in
docs/performance.md, Notes moved from the code).

The producer id, epoch and base sequence live in the header only, outside the encoded records:
:meth:`RecordBatchBuilder.set_producer_state` may change them after sealing (sequences are
assigned when a batch is drained), and :meth:`RecordBatchBuilder.build` then only re-packs the
61-byte header and re-computes the CRC.

Example::

    builder = RecordBatchBuilder(compression=CompressionType.LZ4, batch_size_limit=16384)
    for value in values:
        if builder.append(now_ms, None, value) is None:
            break  # full: start a new batch
    builder.set_producer_state(producer_id=7, producer_epoch=0, base_sequence=42)
    wire_bytes = builder.build()
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from itertools import accumulate, repeat

from kafkaline.errors import IllegalStateError, RecordTooLargeError
from kafkaline.record.batch_format import (
    ATTR_CONTROL,
    ATTR_TIMESTAMP_TYPE,
    ATTR_TRANSACTIONAL,
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
from kafkaline.record.compression import (
    CompressionType,
    compress,
    compression_type,
    resolve_compression_level,
)
from kafkaline.record.crc import crc32c
from kafkaline.record.record_encoder import (
    RECORD_OVERHEAD_BOUND,
    RECORD_OVERHEAD_MIN,
    as_bytes,
    as_timestamp,
    encode_headers,
    encode_record_chunk,
    encode_record_pieces,
    encode_uniform_records,
)
from kafkaline.record.varint import INT64_MAX, INT64_MIN

#: Kafka's default ``batch.size``.
DEFAULT_BATCH_SIZE_LIMIT = 16384
#: Pending records this large on average (by the size estimate) are kept as encoded pieces
#: until sealing rather than joined into a chunk (see ``_encode_pending``).
_KEEP_PIECES_RECORD_SIZE = 1024
#: Overhead of a record with small fields (lengths, deltas under 8 KiB): for sizing windows.
_TYPICAL_RECORD_OVERHEAD = 10
#: How much a record's size by the bound can exceed its encoded size, at most.
_OVERHEAD_SLACK = RECORD_OVERHEAD_BOUND - RECORD_OVERHEAD_MIN

_INT16 = range(-(1 << 15), 1 << 15)
_INT32 = range(-(1 << 31), 1 << 31)
_INT64 = range(INT64_MIN, INT64_MAX + 1)
_CLOSED = -1  # a limit every estimate exceeds: appends take the slow path, which refuses
#: Below every int64 timestamp: the running maximum before any record is encoded.
_NO_TIMESTAMP_YET = INT64_MIN - 1
# A global, not TimestampType.LOG_APPEND_TIME in __init__: on Python 3.11 reading a member
# from its enum class goes through EnumType.__getattr__'s hook (see docs/performance.md,
# Notes moved from the code).
_LOG_APPEND_TIME = TimestampType.LOG_APPEND_TIME


def _check_range(name: str, value: int, allowed: range) -> int:
    if not isinstance(value, int) or value not in allowed:
        raise ValueError(f"{name} {value!r} is outside {allowed.start}..{allowed.stop - 1}")
    return value


class RecordBatchBuilder:
    """Accumulates records for one partition and encodes them as one record batch v2.

    Not thread-safe: the accumulator that owns a batch serialises access to it.

    ``batch_size_limit`` caps the estimated size of the batch (Kafka's ``batch.size``): the
    first record always fits, later ones are refused once the estimate would pass the limit.
    With compression, ``estimated_compression_ratio`` (compressed / uncompressed, as the
    producer observed on earlier batches; 1.0 = assume none) lets more records in, as Java's
    producer does. ``log_append_time`` is the batch's max timestamp when ``timestamp_type`` is
    LOG_APPEND_TIME (brokers and tests build such batches; producers do not).
    """

    __slots__ = (
        "_attributes",
        "_base_offset",
        "_base_sequence",
        "_base_timestamp",
        "_built",
        "_chunks",
        "_closed",
        "_compression",
        "_compression_level",
        "_encoded_count",
        "_encoded_size",
        "_estimate",
        "_estimated_compression_ratio",
        "_header_blocks",
        "_held",
        "_held_base_timestamp",
        "_keys",
        "_limit",
        "_log_append_time",
        "_max_encoded_timestamp",
        "_max_timestamp",
        "_open_limit",
        "_partition_leader_epoch",
        "_payload",
        "_producer_epoch",
        "_producer_id",
        "_record_count",
        "_size_limit",
        "_timestamps",
        "_uncompressed_size",
        "_values",
        "_wire",
        "_wire_returned",
        "memory_cap",
    )

    def __init__(
        self,
        # The one argument a producer's plain batch passes: positional too, so that it is
        # called without a keyword dict (see ProducerBatch.__init__).
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
        # A new batch is made ~22 times per 10,000-row bulk call: what needs no call is not
        # called (an enum lookup, a level check for no level, range checks through a helper;
        # see docs/performance.md, Notes moved from the code).
        if type(compression) is not CompressionType:
            compression = compression_type(compression)
        self._compression = compression
        if compression_level is not None:
            resolve_compression_level(compression, compression_level)  # validates it
        self._compression_level = compression_level
        if not BATCH_HEADER_SIZE < batch_size_limit <= MAX_BATCH_SIZE:
            raise ValueError(
                f"batch_size_limit {batch_size_limit} is outside "
                f"{BATCH_HEADER_SIZE + 1}..{MAX_BATCH_SIZE}"
            )
        if not 0.0 < estimated_compression_ratio <= 1.0:
            raise ValueError(
                f"estimated_compression_ratio {estimated_compression_ratio} is outside (0, 1]"
            )
        log_append_time_type = timestamp_type is _LOG_APPEND_TIME
        if log_append_time_type:
            if log_append_time is None:
                raise ValueError("LOG_APPEND_TIME batches need log_append_time")
            _check_range("log_append_time", log_append_time, _INT64)
        self._size_limit = batch_size_limit
        self._estimated_compression_ratio = estimated_compression_ratio
        # The estimate counts uncompressed bytes; scaling the limit instead of every record
        # keeps the ratio off the hot path. (At a ratio of 1.0, records_room() is the limit
        # less the header: not called, once per new batch on the caller's thread.)
        self._limit = self._open_limit = (
            batch_size_limit
            if estimated_compression_ratio == 1.0
            else BATCH_HEADER_SIZE
            + self.records_room(batch_size_limit, estimated_compression_ratio)
        )
        if base_offset == 0 and type(base_offset) is int:
            self._base_offset = 0
        else:
            self._base_offset = _check_range("base_offset", base_offset, _INT64)
        if (
            partition_leader_epoch == NO_PARTITION_LEADER_EPOCH
            and type(partition_leader_epoch) is int
        ):
            self._partition_leader_epoch = NO_PARTITION_LEADER_EPOCH
        else:
            self._partition_leader_epoch = _check_range(
                "partition_leader_epoch", partition_leader_epoch, _INT32
            )
        self._built: bytes | bytearray | None = None
        if (
            producer_id == NO_PRODUCER_ID
            and producer_epoch == NO_PRODUCER_EPOCH
            and base_sequence == NO_SEQUENCE
            and type(producer_id) is type(producer_epoch) is type(base_sequence) is int
        ):
            self._producer_id = NO_PRODUCER_ID
            self._producer_epoch = NO_PRODUCER_EPOCH
            self._base_sequence = NO_SEQUENCE
        else:
            self.set_producer_state(producer_id, producer_epoch, base_sequence)
        self._attributes = (
            self._compression
            | (ATTR_TIMESTAMP_TYPE if log_append_time_type else 0)
            | (ATTR_TRANSACTIONAL if is_transactional else 0)
            | (ATTR_CONTROL if is_control else 0)
        )
        self._log_append_time = log_append_time
        self._timestamps: list[int] = []
        self._keys: list[bytes | None] = []
        self._values: list[bytes | None] = []
        self._header_blocks: dict[int, bytes] = {}
        # Records added by append_encoded() are counted, not listed: they follow every listed
        # record, and are all encoded; placeholders in the three lists would cost work per
        # record (see docs/performance.md, Notes moved from the code). While some are held,
        # _limit is _CLOSED so that the per-record appends take the slow path, which lists
        # them first (_list_held); _open_limit is the limit for the room.
        self._held = 0
        #: The first record's timestamp when the lists are empty and records are held.
        self._held_base_timestamp = 0
        self._estimate = BATCH_HEADER_SIZE
        self._chunks: list[bytes | memoryview] = []
        self._encoded_count = 0
        self._encoded_size = 0
        # The largest timestamp of the records encoded so far (those before _encoded_count),
        # kept as they are encoded: seal() then needs no pass over a timestamp per record.
        # The bulk paths keep placeholders there, and a max() over them per batch was a
        # large part of the I/O thread's work (see docs/performance.md, Notes moved from
        # the code).
        self._max_encoded_timestamp = _NO_TIMESTAMP_YET
        self._closed = False
        self._record_count = 0
        self._base_timestamp = 0
        self._max_timestamp = 0
        self._payload: bytes | bytearray | memoryview | None = None
        #: Uncompressed and sealed: the header's room and the records, built in place.
        self._wire: bytearray | None = None
        self._wire_returned = False
        self._uncompressed_size = 0
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

        ``timestamp`` is epoch milliseconds (int64; not range-checked here, the producer
        validates user timestamps; one outside int64 raises ``ValueError`` when the records are
        encoded: at :meth:`seal`, or at the append that fills the batch). ``key`` and
        ``value`` are kept by reference; a ``bytearray`` or ``memoryview`` is copied first.
        ``headers`` is a sequence of ``(str, bytes | None)``.

        A builder that refuses a record for its size closes for appends (as Java's
        accumulator closes a batch that refuses one): the appends after it are refused at
        once, not checked again against a batch that is full in all but a few bytes.

        Raises :class:`RecordTooLargeError` if a single record would not fit any batch (2 GiB),
        ``TypeError`` for a key, value or header of the wrong type.
        """
        # Hot path: bytes and an int, no headers, room left. Everything else (null values,
        # headers, bytearrays, a full or closed batch) goes the slow way.
        if type(value) is bytes and type(timestamp) is int and not headers:
            if key is None:
                size = self._estimate + RECORD_OVERHEAD_BOUND + len(value)
            elif type(key) is bytes:
                size = self._estimate + RECORD_OVERHEAD_BOUND + len(value) + len(key)
            else:
                return self._append_slow(timestamp, key, value, headers)
            if size <= self._limit:
                index = len(self._values)
                self._values.append(value)
                self._keys.append(key)
                self._timestamps.append(timestamp)
                self._estimate = size
                return index
        return self._append_slow(timestamp, key, value, headers)

    def append_bytes(
        self, timestamp: int, key: bytes | None, value: bytes, payload_size: int
    ) -> int | None:
        """:meth:`append` for a caller that has checked that ``key`` (or ``None``) and
        ``value`` are ``bytes`` and ``timestamp`` an int, and has no headers (the producer's
        hot path); ``payload_size`` is the key's and value's bytes. Return the offset delta,
        or ``None`` when the record does not fit under the loose size bound, the batch is
        closed, or it holds records from :meth:`append_encoded` (then :meth:`append` decides,
        exactly). A batch it appends to is never full
        afterwards (:attr:`is_full`): it refuses a record that would reach the limit."""
        size = self._estimate + RECORD_OVERHEAD_BOUND + payload_size
        if size >= self._limit:  # also when closed or holding records: the limit is below any size
            return None
        values = self._values
        index = len(values)
        values.append(value)
        self._keys.append(key)
        self._timestamps.append(timestamp)
        self._estimate = size
        return index

    def _append_slow(
        self,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        headers: Headers | None,
    ) -> int | None:
        if self._closed:
            return None
        if self._held:
            self._list_held()
        timestamp = as_timestamp(timestamp)
        key = None if key is None else as_bytes(key, "key")
        value = None if value is None else as_bytes(value, "value")
        header_block = encode_headers(headers) if headers else None
        size = (
            RECORD_OVERHEAD_BOUND
            + (len(key) if key is not None else 0)
            + (len(value) if value is not None else 0)
            + (len(header_block) if header_block is not None else 0)
        )
        index = len(self._values)
        if index == 0:
            if BATCH_HEADER_SIZE + size > MAX_BATCH_SIZE:
                raise RecordTooLargeError(
                    f"a record of about {size} bytes cannot fit a record batch "
                    f"(at most {MAX_BATCH_SIZE} bytes)"
                )
        elif self._estimate + size > self._limit:
            self._encode_pending()  # the estimate becomes exact for what is encoded
            if self._estimate + size > self._limit:
                if self._estimate + size - _OVERHEAD_SLACK > self._limit:
                    # Not even with the least overhead a record has: no need to encode it
                    # to know (with large records, many were encoded only to be refused; see
                    # docs/performance.md, Notes moved from the code).
                    self.close_for_appends()
                    return None
                delta = self._append_if_exactly_fits(index, timestamp, key, value, header_block)
                if delta is None:
                    self.close_for_appends()
                return delta
        self._values.append(value)
        self._keys.append(key)
        self._timestamps.append(timestamp)
        if header_block is not None:
            self._header_blocks[index] = header_block
        self._estimate += size
        return index

    def _append_if_exactly_fits(
        self,
        index: int,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        header_block: bytes | None,
    ) -> int | None:
        # Close to the limit the loose bound would refuse records that fit: encode this one
        # to know (a few times per batch at most; the encoding is kept, not redone).
        encoded = encode_record_chunk(
            [timestamp],
            [key],
            [value],
            None if header_block is None else {0: header_block},
            self._timestamps[0],
            index,
        )
        if self._estimate + len(encoded) > self._limit:
            return None
        self._values.append(value)
        self._keys.append(key)
        self._timestamps.append(timestamp)
        if header_block is not None:
            self._header_blocks[index] = header_block
        self._chunks.append(encoded)
        if timestamp > self._max_encoded_timestamp:
            self._max_encoded_timestamp = timestamp
        self._encoded_count = index + 1
        self._encoded_size += len(encoded)
        self._estimate = BATCH_HEADER_SIZE + self._encoded_size
        return index

    def append_many(
        self,
        keys: Sequence[bytes | None],
        values: Sequence[bytes | None],
        timestamps: Sequence[int] | int,
        headers: Sequence[Headers | None] | None = None,
        *,
        start: int = 0,
    ) -> int:
        """Bulk :meth:`append`: add the records from index ``start`` of parallel sequences
        (``timestamps`` may be one int for all), in order, as many as fit; return how many were
        added. The usual loop over a large input::

            while start < len(values):
                start += builder.append_many(keys, values, timestamps, start=start)
                ...  # builder is full: build it, start a new one

        Faster per record than :meth:`append`: types are checked and sizes summed by C-level
        ``map``/``sum`` over windows sized to what can still fit, a window that may not fit is
        encoded at once and cut after the last record that does, and the lists are extended
        by slices.
        """
        count = len(values)
        if len(keys) != count or (headers is not None and len(headers) != count):
            raise ValueError("keys, values and headers must have the same length")
        if not isinstance(timestamps, int) and len(timestamps) != count:
            raise ValueError("timestamps must be one int or one per record")
        if not 0 <= start <= count:
            raise ValueError(f"start {start} is outside 0..{count}")
        if self._held and not self._closed:
            self._list_held()
        taken = 0
        position = start
        while position < count and not self._closed:
            end = min(count, position + self._window_size(keys, values, position))
            window_ts = timestamps if isinstance(timestamps, int) else timestamps[position:end]
            window_headers = None if headers is None else headers[position:end]
            added = self._append_window(
                keys[position:end], values[position:end], window_ts, window_headers
            )
            taken += added
            if added < end - position:
                break  # cut at the limit on exact sizes: full
            position = end
        return taken

    def _window_size(
        self, keys: Sequence[bytes | None], values: Sequence[bytes | None], position: int
    ) -> int:
        """How many records to try next: those that fill the room left, by the average size
        of the records encoded so far plus 10% (the window is cut exactly), or before any
        are, by the next 32 records with a typical overhead less 10% (so the first window
        usually fits whole and the average is then known)."""
        room = self._limit - self._estimate
        if self._encoded_count:
            average = self._encoded_size / self._encoded_count
            return max(1, int(room * 1.1 / average) + 1)
        probe = range(position, min(len(values), position + 32))
        probe_size = sum(
            _TYPICAL_RECORD_OVERHEAD + len(keys[i] or b"") + len(values[i] or b"") for i in probe
        )
        return max(1, int(room * 0.9 * len(probe) / probe_size))

    def _append_window(
        self,
        keys: Sequence[bytes | None],
        values: Sequence[bytes | None],
        timestamps: Sequence[int] | int,
        headers: Sequence[Headers | None] | None,
    ) -> int:
        """Encode a window of records now and keep those that fit (all, or up to an exact cut)."""
        count = len(values)
        if isinstance(timestamps, int):
            timestamps = int(timestamps)
        elif not set(map(type, timestamps)) <= {int}:
            timestamps = [as_timestamp(t) for t in timestamps]
        if not set(map(type, keys)) <= _BYTES_OR_NONE:
            keys = [None if k is None else as_bytes(k, "key") for k in keys]
        if not set(map(type, values)) <= _BYTES_OR_NONE:
            values = [None if v is None else as_bytes(v, "value") for v in values]
        header_blocks = {}
        if headers is not None:
            header_blocks = {i: encode_headers(h) for i, h in enumerate(headers) if h}
        self._encode_pending()
        first = len(self._values)
        if first:
            base = self._timestamps[0]
        else:
            base = timestamps if isinstance(timestamps, int) else timestamps[0]
        encoded = encode_record_pieces(timestamps, keys, values, header_blocks, base, first)
        pieces, per_record, trailer = encoded
        pieces.append(trailer)
        chunk = b"".join(pieces)
        room = self._limit - self._estimate
        taken = count
        if len(chunk) > room:
            pieces.pop()
            # Exact record sizes: the lengths of each record's run of pieces, summed in C.
            record_sizes = map(sum, zip(*[map(len, pieces)] * per_record, strict=True))
            taken = bisect_right(list(accumulate(record_sizes)), room - len(trailer))
            if taken == 0:
                if first:
                    return 0
                taken = 1  # the first record always fits
            del pieces[taken * per_record :]
            pieces.append(trailer)
            chunk = b"".join(pieces)
        if first == 0 and BATCH_HEADER_SIZE + len(chunk) > MAX_BATCH_SIZE:
            raise RecordTooLargeError(
                f"a record of {len(chunk)} bytes cannot fit a record batch "
                f"(at most {MAX_BATCH_SIZE} bytes)"
            )
        self._extend(first, taken, keys, values, timestamps, header_blocks)
        top = (
            timestamps
            if isinstance(timestamps, int)
            else max(timestamps if taken == count else timestamps[:taken])
        )
        if top > self._max_encoded_timestamp:
            self._max_encoded_timestamp = top
        self._chunks.append(chunk)
        self._encoded_count = first + taken
        self._encoded_size += len(chunk)
        self._estimate = BATCH_HEADER_SIZE + self._encoded_size
        return taken

    def _extend(
        self,
        first: int,
        count: int,
        keys: Sequence[bytes | None],
        values: Sequence[bytes | None],
        timestamps: Sequence[int] | int,
        header_blocks: dict[int, bytes],
    ) -> None:
        self._values.extend(values[:count])
        self._keys.extend(keys[:count])
        if isinstance(timestamps, int):
            self._timestamps.extend([timestamps] * count)
        else:
            self._timestamps.extend(timestamps[:count])
        for i, block in header_blocks.items():
            if i < count:
                self._header_blocks[first + i] = block

    def _encode_pending(self) -> None:
        start = self._encoded_count
        end = len(self._values)
        if start >= end:  # nothing pending (past the end: records are held, all encoded)
            return
        blocks = {i - start: b for i, b in self._header_blocks.items() if i >= start}
        timestamps = self._timestamps[start:] if start else self._timestamps
        keys = self._keys[start:] if start else self._keys
        values = self._values[start:] if start else self._values
        pending_bytes = self._estimate - BATCH_HEADER_SIZE - self._encoded_size
        small = pending_bytes < (end - start) * _KEEP_PIECES_RECORD_SIZE
        if small and not blocks:
            # Records of one shape (a send() loop's, typically): runs of one timestamp are
            # laid out by slices, not a loop per record (see encode_uniform_records and
            # docs/performance.md, Notes moved from the code).
            uniform = encode_uniform_records(timestamps, keys, values, self._timestamps[0], start)
            if uniform is not None:
                top = timestamps[-1]  # they never decrease (checked)
                if top > self._max_encoded_timestamp:
                    self._max_encoded_timestamp = top
                self._chunks.append(uniform)
                self._encoded_count = end
                self._encoded_size += len(uniform)
                self._estimate = BATCH_HEADER_SIZE + self._encoded_size
                return
        encoded = encode_record_pieces(timestamps, keys, values, blocks, self._timestamps[0], start)
        top = max(timestamps)
        if top > self._max_encoded_timestamp:
            self._max_encoded_timestamp = top
        pieces = encoded.pieces
        pieces.append(encoded.trailer)
        if not small:
            # Large records: keep the pieces (keys and values by reference); seal() joins
            # everything once, into the wire bytes, saving a copy of every record. Small
            # records are joined here: many small pieces cost more at seal (see
            # docs/performance.md, Notes moved from the code).
            self._chunks += pieces
            size = sum(map(len, pieces))
        else:
            chunk = b"".join(pieces)
            self._chunks.append(chunk)
            size = len(chunk)
        self._encoded_count = end
        self._encoded_size += size
        self._estimate = BATCH_HEADER_SIZE + self._encoded_size

    def _list_held(self) -> None:
        """Give the held records (see __init__) placeholders in the per-record lists, for a
        per-record append after them (rare: send() into a batch send_arrow() left open); the
        appends then work as on a builder without held records. They are encoded already
        (_encoded_count passes them) and seal() reads only the first timestamp."""
        held = self._held
        self._held = 0
        self._limit = self._open_limit
        timestamps = self._timestamps
        timestamps.extend(repeat(timestamps[0] if timestamps else self._held_base_timestamp, held))
        self._values.extend(repeat(None, held))
        self._keys.extend(repeat(None, held))

    # ------------------------------------------------------------- pre-encoded records

    @staticmethod
    def records_room(batch_size_limit: int, estimated_compression_ratio: float = 1.0) -> int:
        """Bytes of encoded (uncompressed) records an empty builder made with these settings
        takes before it is full."""
        return int((batch_size_limit - BATCH_HEADER_SIZE) / estimated_compression_ratio)

    def open_state(self) -> tuple[int, int, int] | None:
        """For a caller that encodes records itself (:meth:`append_encoded`): ``(room,
        next offset delta, base timestamp)`` of a builder that holds records and is open:
        the exact bytes of encoded records it still takes, the offset delta and the timestamp
        the next records' deltas count from. ``None`` when closed or empty. Encodes the
        records appended so far (the room is exact)."""
        if self._closed:
            return None
        if self._values:
            self._encode_pending()
            base_timestamp = self._timestamps[0]
        elif self._held:
            base_timestamp = self._held_base_timestamp
        else:
            return None
        return self._open_limit - self._estimate, len(self._values) + self._held, base_timestamp

    def append_encoded(
        self,
        records: Sequence[bytes | memoryview],
        count: int,
        first_timestamp: int,
        max_timestamp: int,
    ) -> None:
        """Add ``count`` records encoded by the caller: ``records`` is their part of the
        records section, in pieces (kept by reference until the batch is sealed, the caller
        must not change them), offset deltas from :meth:`open_state`'s (0 for an empty builder) and
        timestamp deltas from its base timestamp (an empty builder's is ``first_timestamp``,
        the first record's); ``max_timestamp`` is the largest. The caller checked that they
        fit the room; an empty builder takes any size up to a batch's maximum.

        Raises :class:`IllegalStateError` if the builder is closed,
        :class:`RecordTooLargeError` past the maximum batch size.
        """
        if self._closed:
            raise IllegalStateError("cannot append to a closed record batch")
        if count <= 0:
            raise ValueError(f"count {count} must be positive")
        self._encode_pending()  # records appended before go first
        listed = len(self._values)
        first = listed + self._held
        size = sum(map(len, records))
        if first == 0 and BATCH_HEADER_SIZE + size > MAX_BATCH_SIZE:
            raise RecordTooLargeError(
                f"{count} records of {size} bytes cannot fit a record batch "
                f"(at most {MAX_BATCH_SIZE} bytes)"
            )
        # Counted, not listed (see __init__); of their timestamps only what seal() reads is
        # kept: the first (when they start the batch) and the largest.
        if first == 0:
            self._held_base_timestamp = first_timestamp
        self._held += count
        self._limit = _CLOSED  # per-record appends: the slow path, which lists them first
        self._chunks.extend(records)
        if max_timestamp > self._max_encoded_timestamp:
            self._max_encoded_timestamp = max_timestamp
        self._encoded_count = first + count
        self._encoded_size += size
        self._estimate = BATCH_HEADER_SIZE + self._encoded_size

    # ----------------------------------------------------------------------- sealing

    def close_for_appends(self) -> None:
        """Refuse further appends (they return ``None``); the records stay unencoded until
        :meth:`seal` or :meth:`build`. Cheap: for the user thread, encoding is the sender's."""
        self._closed = True
        self._limit = _CLOSED

    def seal(self) -> None:
        """Close for appends, encode and compress the records once. Idempotent.

        Raises :class:`IllegalStateError` for a batch without records, ``ValueError`` for a
        timestamp outside int64.
        """
        if self._payload is not None:
            return
        listed = len(self._values)
        if not listed and not self._held:
            raise IllegalStateError("cannot seal a record batch without records")
        # close_for_appends() and the range checks are written out here: seal() runs once per
        # batch on the I/O thread, whose cost is mostly Python calls per batch (see Sender).
        self._closed = True
        self._limit = _CLOSED
        if self._encoded_count < listed:
            self._encode_pending()
        chunks = self._chunks
        wire: bytearray | None = None
        records: bytes | bytearray | memoryview
        if self._compression:
            records = chunks[0] if len(chunks) == 1 else b"".join(chunks)
            if not isinstance(records, bytes):
                records = bytes(records)  # cramjam's lz4 takes bytes only (it copies anyway)
        else:
            # Uncompressed, the records are copied once, behind room for the header, which
            # build() writes in place: no second copy into the wire bytes (see
            # docs/performance.md, Notes moved from the code).
            wire = bytearray().join((_HEADER_ROOM, *chunks))
            records = memoryview(wire)[BATCH_HEADER_SIZE:]
        base_timestamp = self._base_timestamp = (
            self._timestamps[0] if listed else self._held_base_timestamp
        )
        # Every record is encoded now (_encode_pending above): the tracked maximum is exact.
        max_timestamp = self._max_timestamp = (
            self._log_append_time
            if self._log_append_time is not None
            else self._max_encoded_timestamp
        )
        if not (
            INT64_MIN <= base_timestamp <= INT64_MAX and INT64_MIN <= max_timestamp <= INT64_MAX
        ):
            _check_range("base timestamp", base_timestamp, _INT64)  # raises, naming which
            _check_range("max timestamp", max_timestamp, _INT64)
        payload = (
            compress(self._compression, records, self._compression_level)
            if self._compression
            else records
        )
        if BATCH_HEADER_SIZE + len(payload) > MAX_BATCH_SIZE:
            raise RecordTooLargeError(
                f"record batch of {BATCH_HEADER_SIZE + len(payload)} bytes exceeds the "
                f"{MAX_BATCH_SIZE}-byte maximum"
            )
        self._record_count = listed + self._held
        self._held = 0
        self._uncompressed_size = len(records)
        self._payload = payload
        self._wire = wire
        # The encoded bytes now hold everything: drop the references to the callers' objects.
        self._keys = []
        self._values = []
        self._chunks = []
        self._header_blocks = {}
        self._timestamps = []

    def set_producer_state(self, producer_id: int, producer_epoch: int, base_sequence: int) -> None:
        """Set the idempotence fields (``-1, -1, -1`` when not idempotent). Allowed at any
        time, also after sealing: the records are not re-encoded, only the header and CRC."""
        self._producer_id = _check_range("producer_id", producer_id, _INT64)
        self._producer_epoch = _check_range("producer_epoch", producer_epoch, _INT16)
        self._base_sequence = _check_range("base_sequence", base_sequence, _INT32)
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
        if self._built is None:
            if self._payload is None:
                self.seal()
            payload = self._payload
            if payload is None:  # pragma: no cover - seal() either sets it or raises
                raise IllegalStateError("record batch has no payload after sealing")
            header = BATCH_HEADER.pack(
                self._base_offset,
                BATCH_HEADER_SIZE - LOG_OVERHEAD + len(payload),
                self._partition_leader_epoch,
                MAGIC,
                0,  # CRC, filled in below
                self._attributes,
                self._record_count - 1,
                self._base_timestamp,
                self._max_timestamp,
                self._producer_id,
                self._producer_epoch,
                self._base_sequence,
                self._record_count,
            )
            wire = self._wire
            if wire is not None:  # the records sit behind room for the header
                if self._wire_returned:
                    # Rebuilt (new producer state for a retry): what was returned before is
                    # never changed under its holder; this copy is written instead.
                    wire = self._wire = bytearray(wire)
                self._wire_returned = True
                wire[:BATCH_HEADER_SIZE] = header
                crc = crc32c(memoryview(wire)[CRC_SPAN_START:])
                wire[CRC_OFFSET:CRC_SPAN_START] = crc.to_bytes(4, "big")
                self._built = wire
            else:
                crc = crc32c(payload, crc32c(header[CRC_SPAN_START:]))
                self._built = b"".join(
                    (header[:CRC_OFFSET], crc.to_bytes(4, "big"), header[CRC_SPAN_START:], payload)
                )
        return self._built

    # ------------------------------------------------------------------------ inspecting

    def __len__(self) -> int:
        """Number of records appended."""
        if self._payload is not None:
            return self._record_count
        return len(self._values) + self._held

    @property
    def is_closed(self) -> bool:
        """Whether appends are refused (after :meth:`close_for_appends` or :meth:`seal`)."""
        return self._closed

    @property
    def is_sealed(self) -> bool:
        """Whether the records are encoded (after :meth:`seal` or :meth:`build`)."""
        return self._payload is not None

    @property
    def is_full(self) -> bool:
        """Closed, or holding records with an estimate at or past the size limit (as Java's
        ``MemoryRecordsBuilder.isFull``)."""
        return self._closed or (
            bool(self._values or self._held) and self._estimate >= self._open_limit
        )

    @property
    def estimated_size_in_bytes(self) -> int:
        """The batch's size on the wire: exact once sealed; before, an upper bound of the
        uncompressed size scaled by ``estimated_compression_ratio``."""
        if self._payload is not None:
            return BATCH_HEADER_SIZE + len(self._payload)
        records = self._estimate - BATCH_HEADER_SIZE
        return BATCH_HEADER_SIZE + int(records * self._estimated_compression_ratio)

    @property
    def appended_size(self) -> int:
        """Bytes the records appended so far take before compression, the header included:
        what the batch holds in memory until sealed (an upper bound until they are encoded)."""
        return self._estimate

    @property
    def appended_limit(self) -> int:
        """What :attr:`appended_size` may reach: ``batch_size_limit`` scaled by the estimated
        compression ratio (a record larger than a batch goes alone, past it)."""
        return self._open_limit

    @property
    def uncompressed_records_size(self) -> int:
        """Bytes of the encoded records before compression (0 until sealed)."""
        return self._uncompressed_size

    @property
    def compression(self) -> CompressionType:
        """The batch's codec."""
        return self._compression

    @property
    def size_limit(self) -> int:
        """The ``batch_size_limit`` this builder was made with."""
        return self._size_limit

    @property
    def producer_id(self) -> int:
        """Producer id in the header (-1 when not idempotent)."""
        return self._producer_id

    @property
    def producer_epoch(self) -> int:
        """Producer epoch in the header (-1 when not idempotent)."""
        return self._producer_epoch

    @property
    def base_sequence(self) -> int:
        """Sequence number of the first record (-1 when not idempotent)."""
        return self._base_sequence


_BYTES_OR_NONE = {bytes, type(None)}
_HEADER_ROOM = bytes(BATCH_HEADER_SIZE)


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
        compression=compression,
        compression_level=compression_level,
        batch_size_limit=MAX_BATCH_SIZE,
        base_offset=base_offset,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        is_transactional=is_transactional,
    )
    builder.append_many(keys, values, timestamps, headers)
    return builder.build()
