"""The columnar encoder's columns and vectorised pieces (numpy): Arrow binary columns as
numpy arrays, Kafka's murmur2 over every key at once (numpy's uint32 arithmetic wraps as
Java's int does), varints of whole columns, the 16-byte views that pieces of records are
built in, and the tables of records of one shape. :mod:`kafkaline.producer.bulk.columnar`
encodes batches with them.

numpy and pyarrow are needed (the ``spark`` extra); only the columnar encoder imports this.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

Int64s = npt.NDArray[np.int64]
#: A column of ints, or one int for every row (numpy broadcasts both alike).
Column = Int64s | int
UInt64s = npt.NDArray[np.uint64]
Bytes = npt.NDArray[np.uint8]

#: Keys longer than this are hashed one by one (the vectorised murmur2's matrix would be
#: rows x longest key).
_MURMUR2_MATRIX_MAX = 1024
_SEED = np.uint32(0x9747B28C)
_M = np.uint32(0x5BD1E995)


def import_pyarrow() -> Any:
    # By name: type checking does not need pyarrow's (absent) stubs.
    return importlib.import_module("pyarrow")


class BinaryColumn(NamedTuple):
    """A binary column: the pyarrow array (for the join) and numpy views of its bytes."""

    #: pyarrow ``binary`` or ``large_binary`` array.
    array: Any
    #: Its data buffer.
    data: Bytes
    #: Where each row's bytes start in ``data``.
    starts: Int64s
    #: Each row's length, -1 for a null.
    lengths: Int64s
    #: The smallest and the largest of ``lengths`` (0 without rows), found once: the steps
    #: after need them several times, and a reduction is a pass over every row.
    shortest: int
    longest: int

    @property
    def one_length(self) -> Column:
        """The length of every row when all have the same, else ``lengths``."""
        return self.shortest if self.shortest == self.longest else self.lengths


class OrderedColumns(NamedTuple):
    """A call's columns as the encoders read them: the input's key, value and header columns
    with the order that groups their rows per partition (``None``: the input's), and the
    timestamps and lengths already in that order (an int: one for every row)."""

    keys: BinaryColumn | None
    values: BinaryColumn
    header_blocks: BinaryColumn | None
    order: Int64s | None
    timestamps: Column
    key_lengths: Column
    value_lengths: Column
    header_lengths: Int64s | None
    #: Each key's first bytes, as :func:`murmur2_partitions_and_prefixes` returns them.
    key_prefixes: Bytes | None


def take(column: Column, rows: Int64s | slice) -> Column:
    """``column``'s items at ``rows`` (one int for every row stays that int)."""
    return column if isinstance(column, int) else column[rows]


def binary_column(array: Any) -> BinaryColumn:
    """A :class:`BinaryColumn` over a pyarrow ``binary`` or ``large_binary`` array (no
    copy of the data)."""
    pa = import_pyarrow()
    count = len(array)
    buffers = array.buffers()
    offset_type = np.int64 if pa.types.is_large_binary(array.type) else np.int32
    offsets = np.frombuffer(buffers[1], dtype=offset_type)[array.offset : array.offset + count + 1]
    offsets = offsets.astype(np.int64)
    data = np.frombuffer(buffers[2], np.uint8) if buffers[2] is not None else np.zeros(0, np.uint8)
    lengths = np.diff(offsets)
    if array.null_count:
        # A null may have bytes in the buffer (Arrow allows it): the validity decides.
        valid = array.is_valid().to_numpy(zero_copy_only=False)
        lengths = np.where(valid, lengths, -1)
    shortest = int(lengths.min()) if count else 0
    longest = int(lengths.max()) if count else 0
    return BinaryColumn(array, data, offsets[:-1], lengths, shortest, longest)


def first_bytes(data: Bytes, starts: Int64s, width: int) -> Bytes:
    """The ``width`` bytes from each start (zeros past the end of ``data``), as a
    ``len(starts) x width`` matrix. The buffer is viewed as overlapping ``width``-byte items,
    one starting at every byte, and gathered by a 1-D fancy index, faster than a 2-D sliding
    window or an index per byte (see docs/performance.md, Notes moved from the code)."""
    size = len(data)
    if size < width:
        padded = np.zeros(2 * width, np.uint8)
        padded[:size] = data
        data, size = padded, 2 * width
    last = size - width
    items = np.ndarray((last + 1,), np.dtype((np.void, width)), buffer=data, strides=(1,))
    out: Bytes = items[np.minimum(starts, last)].view(np.uint8).reshape(len(starts), width)
    late = np.flatnonzero(starts > last)  # rows near the end: read from a padded copy
    if len(late):
        tail = np.zeros(2 * width, np.uint8)
        tail[:width] = data[last:]
        tail_items = np.ndarray((width + 1,), np.dtype((np.void, width)), buffer=tail, strides=(1,))
        out[late] = tail_items[starts[late] - last].view(np.uint8).reshape(len(late), width)
    return out


#: Masks of the first 0..4 bytes of a little-endian word (a murmur2 tail).
_TAIL_MASKS = np.array([0, 0xFF, 0xFFFF, 0xFFFFFF], np.uint32)


def murmur2_partitions(keys: BinaryColumn, partition_count: int) -> Int64s:
    """Java's keyed partition of every key, ``toPositive(murmur2(key)) % partition_count``
    (-1 for a null key), as ``kafkaline.producer.murmur2`` computes it one key at a time."""
    return murmur2_partitions_and_prefixes(keys, partition_count)[0]


def murmur2_partitions_and_prefixes(
    keys: BinaryColumn, partition_count: int, prefixes_wanted: bool = True
) -> tuple[Int64s, Bytes | None]:
    """:func:`murmur2_partitions`, and the bytes it read: a ``rows x width`` matrix of each
    key's first bytes (at least the longest key's; past a key's end, any bytes), for
    :class:`ColumnarRecords` to write the keys from (``None`` for very long keys, or
    keys of one length when not ``prefixes_wanted``)."""
    nulls = keys.shortest < 0
    lengths: Column = np.maximum(keys.lengths, 0) if nulls else keys.one_length
    longest = max(keys.longest, 0)
    if longest > _MURMUR2_MATRIX_MAX:
        return _murmur2_one_by_one(keys, partition_count), None
    prefixes: Bytes | None = None
    words: Any = None
    word: Callable[[int], Any]
    if not prefixes_wanted and isinstance(lengths, int) and lengths > 0:
        # Keys of one length lie one after another: each word of every key is a strided
        # view of the key buffer, read in place, saving the gather of each key's first bytes
        # (see docs/performance.md, Notes moved from the code).
        word = _strided_words(keys, lengths)
    else:
        width = (longest + 3) // 4 * 4 + 4  # whole words, and the tail's word
        prefixes = first_bytes(keys.data, keys.starts, width)
        words = prefixes.view("<u4")
        word = functools.partial(_word_column, words)

    h = _murmur2_hashes(word, words, lengths, len(keys.lengths))
    h %= np.uint32(partition_count)
    chosen = h.astype(np.int64)
    return (np.where(keys.lengths >= 0, chosen, -1) if nulls else chosen), prefixes


def _strided_words(keys: BinaryColumn, length: int) -> Callable[[int], Any]:
    """Word ``i`` (little-endian uint32) of every key of ``keys``, all ``length`` bytes long,
    read in place from the key buffer; the last word holds the 1-3 tail bytes."""
    first, count = int(keys.starts[0]), len(keys.lengths)

    def strided(offset: int, dtype: str) -> Any:
        return np.ndarray(
            (count,), dtype, buffer=keys.data, offset=first + offset, strides=(length,)
        )

    columns = [strided(4 * index, "<u4") for index in range(length >> 2)]
    tail_bytes = np.zeros(count, np.uint32)  # the last 1-3 bytes, not read past the end
    for index in range(length & 3):
        byte = strided(4 * len(columns) + index, "u1").astype(np.uint32)
        tail_bytes |= byte << np.uint32(8 * index)
    columns.append(tail_bytes)
    return columns.__getitem__


def _murmur2_hashes(word: Callable[[int], Any], words: Any, lengths: Column, count: int) -> Any:
    """Java's ``murmur2(key) & 0x7fffffff`` of ``count`` keys of ``lengths`` bytes, whose
    word ``i`` is ``word(i)`` (``words``: the ``rows x words`` matrix, for keys of several
    lengths)."""
    # Keys of one length (the usual case) mix the same words in every row: no masks, and
    # the arithmetic in place (each numpy pass costs per element, so the fewer the better).
    whole: Column = lengths >> 2
    h = np.empty(count, np.uint32)
    h[:] = _SEED ^ np.asarray(lengths, np.uint32)
    for index in range(column_max(whole)):
        k = word(index) * _M
        k ^= k >> np.uint32(24)
        k *= _M
        if isinstance(whole, int):
            h *= _M
            h ^= k
        else:
            h = np.where(whole > index, (h * _M) ^ k, h)
    tail: Column = lengths & 3
    if isinstance(tail, int):
        if tail:
            h ^= word(column_max(whole)) & _TAIL_MASKS[tail]
            h *= _M
    else:
        tail_word = words[np.arange(len(words)), whole] & _TAIL_MASKS[tail]
        h = np.where(tail > 0, (h ^ tail_word) * _M, h)
    h ^= h >> np.uint32(13)
    h *= _M
    h ^= h >> np.uint32(15)
    h &= np.uint32(0x7FFFFFFF)
    return h


def _word_column(words: Any, index: int) -> Any:
    return words[:, index]


#: Records of one shape take :meth:`ColumnarRecords._encode_one_shape` from this value
#: size: the 8-byte write of the value length must end within the value.
ONE_SHAPE_MIN_VALUE = 8
#: The smallest such record (attributes, 4 varints, the value, the header count), bounding
#: how many fit a batch.
ONE_SHAPE_MIN_RECORD = ONE_SHAPE_MIN_VALUE + 6


def nonnegative(lengths: Column) -> Column:
    return max(lengths, 0) if isinstance(lengths, int) else np.maximum(lengths, 0)


def prefixes_needed(values: BinaryColumn, headers: bool, one_timestamp: bool) -> bool:
    """Whether :class:`ColumnarRecords` of these values may read key prefixes (from
    :func:`murmur2_partitions_and_prefixes`): not for records of one shape."""
    return headers or not one_timestamp or not _one_value_length(values.shortest, values.longest)


def _one_value_length(shortest: int, longest: int) -> bool:
    return shortest == longest >= ONE_SHAPE_MIN_VALUE


def _murmur2_one_by_one(keys: BinaryColumn, partition_count: int) -> Int64s:
    from kafkaline.producer.partitioner import partition_for_key

    memo: dict[bytes, int] = {}
    chosen = np.full(len(keys.lengths), -1, np.int64)
    rows = keys.array.to_pylist()
    for row, key in enumerate(rows):
        if key is not None:
            found = memo.get(key)
            if found is None:
                found = memo[key] = partition_for_key(key, partition_count)
            chosen[row] = found
    return chosen


# ---------------------------------------------------------------------- varints

#: Zigzagged values below this encode in at most 2 bytes, looked up in a table.
_SMALL = 1 << 14
#: The largest varint this module writes: 8 bytes (values below 2**56), one uint64.
_MAX_VARINT_BYTES = 8


@functools.cache
def _small_varints() -> tuple[UInt64s, Int64s]:
    """Varint bytes (little-endian in a uint64) and sizes of 0 .. _SMALL-1."""
    z = np.arange(_SMALL, dtype=np.uint64)
    two = z >= 128
    encoded = (z & np.uint64(0x7F)) | (two.astype(np.uint64) << np.uint64(7))
    encoded |= (z >> np.uint64(7)) << np.uint64(8)
    return encoded, 1 + two.astype(np.int64)


def varint_scalar(zigzagged: int) -> tuple[int, int]:
    encoded = size = 0
    while True:
        byte = zigzagged & 0x7F
        zigzagged >>= 7
        encoded |= (byte | (0x80 if zigzagged else 0)) << (8 * size)
        size += 1
        if not zigzagged:
            return encoded, size


def varints_of(zigzagged: Any, sizes_only: bool = False) -> tuple[Any, Any]:
    """Each (zigzagged, non-negative) value's varint as little-endian bytes in a uint64, and
    its size in bytes; one int each for one int. The sizes are one int when all are the
    same (the caller's arithmetic on them is then per call, not per row); ``sizes_only``:
    the bytes are not computed (``None``)."""
    if isinstance(zigzagged, int):
        return varint_scalar(zigzagged)
    largest = int(zigzagged.max(initial=0))
    if largest < _SMALL:  # the common case: table lookups
        encoded, sizes = _small_varints()
        size = int(sizes[largest])
        one_size = size == 1 or size == int(sizes[int(zigzagged.min(initial=0))])
        if sizes_only:  # a comparison costs fewer instructions than a gather
            return None, size if one_size else 1 + (zigzagged >= 128)
        return encoded[zigzagged], size if one_size else sizes[zigzagged]
    if largest >> (7 * _MAX_VARINT_BYTES):
        raise ValueError(f"a varint of {largest} does not fit {_MAX_VARINT_BYTES} bytes")
    unsigned = zigzagged.astype(np.uint64)
    sizes = np.ones(len(unsigned), np.int64)
    shift = 7
    while largest >> shift:
        sizes += unsigned >= np.uint64(1 << shift)
        shift += 7
    out = np.zeros(len(unsigned), np.uint64)
    for index in range(shift // 7):
        group = (unsigned >> np.uint64(7 * index)) & np.uint64(0x7F)
        more = (sizes > index + 1).astype(np.uint64) << np.uint64(7)
        out |= (group | more) << np.uint64(8 * index)
    return out, sizes


def zigzag64(values: Int64s) -> UInt64s:
    # (n << 1) ^ (n >> 63) in wrapping int64 arithmetic, read as unsigned: exact for int64.
    return ((values << 1) ^ (values >> 63)).view(np.uint64)


def zigzag_length(lengths: Column) -> Column:
    """Zigzag of lengths that are -1 (null) or more."""
    if isinstance(lengths, int):
        return 2 * lengths if lengths >= 0 else 1
    return np.where(lengths >= 0, lengths * 2, 1)


def uniform(values: Int64s) -> Column:
    """One int when every row has the same value, else the array: numpy then does the work
    per call instead of per row."""
    if len(values) and int(values.min()) == int(values.max()):
        return int(values[0])
    return values


def column_min(values: Column) -> int:
    return values if isinstance(values, int) else int(values.min(initial=0))


def column_max(values: Column) -> int:
    return values if isinstance(values, int) else int(values.max(initial=0))


# ---------------------------------------------------------------------- pieces

#: Masks of the first n (0..12) bytes of an inline piece, split as the low 8 and high 4.
_INLINE_LOW = np.array([(1 << (8 * min(n, 8))) - 1 for n in range(13)], np.uint64)
_INLINE_HIGH = np.array([(1 << (8 * max(0, n - 8))) - 1 for n in range(13)], np.uint64)
INLINE_MAX = 12
_U32 = np.uint64(32)
VOID16 = np.dtype((np.void, 16))
U64 = np.dtype("<u8")


def inline_view(size: Column, low: Any, high: Any) -> tuple[Any, Any]:
    """The two uint64 words of an Arrow binary view holding ``size`` (<= 12) bytes inline:
    length, then the bytes (``low`` the first 8, ``high`` the next 4)."""
    first = np.uint64(size) | (np.asarray(low, np.uint64) << _U32)
    second = (np.asarray(low, np.uint64) >> _U32) | (np.asarray(high, np.uint64) << _U32)
    return first, second


def place_in_views(
    low: Any, high: Any, encoded: Column, position: Column, spills: bool = True
) -> tuple[Any, Any]:
    """``encoded``'s bytes put at byte ``position`` of a 16-byte (low, high) pair. numpy
    defines shifts by 64 or more as 0, so the wrapping counts below drop what is not there.
    ``spills=False``: the caller knows the field ends within the low 8 bytes (half the work).
    """
    if isinstance(encoded, int) and encoded == 0:
        return low, high
    value = np.asarray(encoded, np.uint64)
    if isinstance(position, int):  # one position for all rows: the shifts are known here
        bits = 8 * position
        if bits >= 64:
            return low, high | (value << np.uint64(bits - 64))
        low = low | (value << np.uint64(bits))
        return low, (high | (value >> np.uint64(64 - bits))) if bits and spills else high
    bits = position.astype(np.uint64) * np.uint64(8)
    low = low | (value << bits)
    if spills:
        high = high | (value >> (np.uint64(64) - bits)) | (value << (bits - np.uint64(64)))
    return low, high


def buffer_piece(
    column: BinaryColumn,
    rows: Int64s | slice,
    base: int,
    index: int,
    known_lengths: Column | None = None,
) -> tuple[Any, Any, Column]:
    """Binary views of rows of a column: the bytes inline when 12 or fewer, else by buffer
    ``index`` and offset (from ``base``) with their first 4 bytes as the prefix.
    ``known_lengths``: the rows' lengths (-1: null) when the caller has them."""
    starts = column.starts[rows]
    if known_lengths is None:
        known_lengths = column.lengths[rows]
    lengths = nonnegative(known_lengths)
    lengths = lengths if isinstance(lengths, int) else uniform(lengths)
    shortest = lengths if isinstance(lengths, int) else int(lengths.min(initial=0))
    if shortest > INLINE_MAX:  # all referenced (values, usually)
        # The view's 4-byte prefix is left 0: these views only feed the cast to
        # large_binary, which copies ``length`` bytes from buffer ``index`` at the offset and
        # never reads the prefix (Arrow's FromBinaryView). Gathering the prefixes was ~0.28
        # ms of a 10,000-row encode() (~2.4 ms; line_profiler).
        word0 = np.asarray(lengths, np.uint64)
        offsets = (starts if base == 0 else starts - base).view(np.uint64)  # >= 0
        return word0, np.uint64(index) | (offsets << _U32), lengths
    first = first_bytes(column.data, starts, INLINE_MAX).view("<u4")
    low = first[:, 0].astype(np.uint64) | (first[:, 1].astype(np.uint64) << _U32)
    high = first[:, 2].astype(np.uint64)
    clipped = np.minimum(lengths, INLINE_MAX)
    low &= _INLINE_LOW[clipped]
    high &= _INLINE_HIGH[clipped]
    word0, inline1 = inline_view(lengths, low, high)
    if column_max(lengths) <= INLINE_MAX:
        return word0, inline1, lengths
    referenced = np.uint64(index) | ((starts - base).astype(np.uint64) << _U32)
    if isinstance(lengths, int):
        return word0, referenced, lengths
    return word0, np.where(lengths > INLINE_MAX, referenced, inline1), lengths


def buffer_of(column: BinaryColumn | None) -> Any:
    pa = import_pyarrow()
    if column is None:
        return pa.py_buffer(b"")
    data = column.array.buffers()[2]
    return data if data is not None else pa.py_buffer(b"")
