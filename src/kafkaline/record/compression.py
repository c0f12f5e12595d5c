"""Compression codecs of record batch v2: none, gzip, snappy, lz4, zstd.

A batch's records section is compressed as one block; the codec id sits in attribute bits 0-2.
What each codec writes, and why:

* gzip (1): a gzip member from stdlib ``zlib``, like Java's ``GZIPOutputStream``.
* snappy (2): the *xerial* framing that Java's client writes (snappy-java's
  ``SnappyOutputStream``: magic ``\\x82SNAPPY\\x00``, version 1, compatible 1, then blocks of
  32 KiB input, each a big-endian int32 length and a raw snappy block). librdkafka writes raw
  snappy but reads both (it checks for the xerial magic first), and snappy-java reads both, so
  the Java framing is the one every client accepts. We read both too.
* lz4 (3): the LZ4 *frame* format with independent blocks. Java's ``Lz4BlockInputStream``
  decompresses each block on its own, so linked blocks (cramjam's default) would break Java
  consumers on batches over one 64 KiB block. The fast levels (1-2) write the frame here
  around cramjam's block compressor (:func:`lz4_frame_encode`); HC levels (3-17) use
  cramjam's frame compressor.
* zstd (4): a standard zstd frame.

Decompression is bounded: before inflating, the frame structure is walked (cheap, no
inflation) to get an upper bound of the output size, and input whose bound exceeds
``max_output_size`` is refused with :class:`~kafkaline.errors.CorruptRecordError`, so a small
hostile batch cannot make us allocate gigabytes. gzip has no such structure; there zlib's own
``max_length`` caps the output.
"""

from __future__ import annotations

import enum
import struct
import threading
import zlib

from kafkaline.errors import CorruptRecordError, UnsupportedCodecError

BytesLike = bytes | bytearray | memoryview


class CompressionType(enum.IntEnum):
    """Codec ids of attribute bits 0-2."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


#: Default cap on one batch's decompressed records (a batch is at most ``message.max.bytes``
#: compressed, 1 MiB by default; this leaves room for ratios over 100:1).
DEFAULT_MAX_DECOMPRESSED_SIZE = 128 * 1024 * 1024

#: Levels accepted per codec, as in Kafka's ``compression.<codec>.level`` settings.
LEVEL_RANGES: dict[CompressionType, range] = {
    CompressionType.GZIP: range(1, 10),
    CompressionType.LZ4: range(1, 18),
    CompressionType.ZSTD: range(-131072, 23),
}
#: Level used when none is given. gzip and zstd as in both Java and librdkafka; lz4 as in
#: librdkafka (fast mode): Java's default 9 (HC) is far slower for a little smaller output
#: (docs/performance.md, "Notes moved from the code").
DEFAULT_LEVELS: dict[CompressionType, int] = {
    CompressionType.GZIP: 6,
    CompressionType.LZ4: 1,
    CompressionType.ZSTD: 3,
}


def compression_type(codec: int) -> CompressionType:
    """The :class:`CompressionType` for a codec id; :class:`UnsupportedCodecError` otherwise."""
    try:
        return CompressionType(codec)
    except ValueError:
        raise UnsupportedCodecError(
            f"compression codec id {codec} is not supported (known: 0 none, 1 gzip, 2 snappy, "
            "3 lz4, 4 zstd)"
        ) from None


def resolve_compression_level(codec: CompressionType, level: int | None) -> int:
    """The level to use for ``codec``: ``level`` if allowed, the default for ``None``; 0 for
    codecs without levels. ``ValueError`` for a level out of range or given to such a codec."""
    if codec not in LEVEL_RANGES:
        if level is not None:
            raise ValueError(f"compression {codec.name.lower()} has no compression level")
        return 0
    if level is None:
        return DEFAULT_LEVELS[codec]
    allowed = LEVEL_RANGES[codec]
    if level not in allowed:
        raise ValueError(
            f"compression level {level} is outside {allowed.start}..{allowed.stop - 1} "
            f"for {codec.name.lower()}"
        )
    return level


def compress(
    codec: int, data: BytesLike, level: int | None = None, *, header_room: int = 0
) -> bytes:
    """Compress a records section with codec id ``codec``.

    ``level`` is the codec's compression level (gzip 1..9, lz4 1..17, zstd -131072..22;
    ``None`` for the default); snappy and none take no level. NONE returns the data unchanged.
    ``header_room`` zero bytes come first, before the compressed data: room for the caller to
    write a header in place (the compiled core's seal asks for the batch header's).

    >>> decompress(CompressionType.ZSTD, compress(CompressionType.ZSTD, b"abc" * 100))[:6]
    b'abcabc'
    """
    kind = compression_type(codec)
    chosen = resolve_compression_level(kind, level)
    if header_room < 0:
        raise ValueError(f"header_room must be 0 or more, not {header_room}")
    if kind is CompressionType.LZ4 and lz4_writes_frame(chosen):
        return lz4_frame_encode(data, header_room=header_room)
    compressed = _compress(kind, chosen, data)
    return bytes(header_room) + compressed if header_room else compressed


def _compress(kind: CompressionType, level: int, data: BytesLike) -> bytes:
    if kind is CompressionType.NONE:
        return bytes(data)
    if kind is CompressionType.GZIP:
        compressor = zlib.compressobj(level, zlib.DEFLATED, 31)  # wbits 16+15: gzip wrapper
        return compressor.compress(data) + compressor.flush()
    if kind is CompressionType.SNAPPY:
        return snappy_xerial_encode(data)
    # cramjam is imported at the first batch that needs it: most producers never compress.
    import cramjam

    if kind is CompressionType.LZ4:
        lz4 = cramjam.lz4.Compressor(level=level, content_checksum=False, block_linked=False)
        # Its compress() takes bytes only, not the memoryview the compiled seal passes.
        lz4.compress(data if isinstance(data, bytes) else bytes(data))
        return bytes(lz4.finish())
    return bytes(cramjam.zstd.compress(data, level=level))


def decompress(
    codec: int, data: BytesLike, *, max_output_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE
) -> bytes:
    """Decompress a records section compressed with codec id ``codec``.

    Raises :class:`UnsupportedCodecError` for an unknown codec id, and
    :class:`CorruptRecordError` for data that does not decompress or whose output would exceed
    ``max_output_size`` bytes.
    """
    import cramjam

    kind = compression_type(codec)
    try:
        if kind is CompressionType.NONE:
            _check_bound(kind, len(data), max_output_size)
            return bytes(data)
        if kind is CompressionType.GZIP:
            return _gzip_decode(data, max_output_size)
        if kind is CompressionType.SNAPPY:
            return snappy_decode(data, max_output_size=max_output_size)
        if kind is CompressionType.LZ4:
            bound = _lz4_frame_output_bound(data)
            if bound <= max_output_size:
                return bytes(cramjam.lz4.decompress(data))
            return _lz4_decode_capped(data, bound, max_output_size)
        _check_bound(kind, _zstd_output_bound(data), max_output_size)
        return bytes(cramjam.zstd.decompress(data))
    except (cramjam.DecompressionError, zlib.error) as exc:
        raise CorruptRecordError(f"{kind.name.lower()} decompression failed: {exc}") from exc


def _lz4_decode_capped(data: BytesLike, bound: int, max_output_size: int) -> bytes:
    """LZ4 frames whose blocks are smaller than the maximum they declare (cramjam before 2.12,
    the last release for Python 3.10, writes such) have a loose bound: decompress into a
    buffer one byte larger than the cap, so the cap holds exactly and nothing grows past it."""
    import cramjam

    output = bytearray(max_output_size + 1)
    try:
        written = cramjam.lz4.decompress_into(data, output)
    except cramjam.DecompressionError as exc:
        # Corrupt, or longer than the buffer: either way not within the cap.
        raise CorruptRecordError(
            f"lz4 data (which may decompress to {bound} bytes) does not decompress within the "
            f"{max_output_size} allowed: {exc}"
        ) from exc
    if written > max_output_size:
        raise CorruptRecordError(
            f"lz4 data decompresses to more than the {max_output_size} allowed"
        )
    return bytes(memoryview(output)[:written])


def _check_bound(kind: CompressionType, bound: int, max_output_size: int) -> None:
    if bound > max_output_size:
        raise CorruptRecordError(
            f"{kind.name.lower()} data may decompress to {bound} bytes, more than the "
            f"{max_output_size} allowed"
        )


# ----------------------------------------------------------------------------------- gzip


_GZIP_MAGIC = b"\x1f\x8b"


def _gzip_decode(data: BytesLike, max_output_size: int) -> bytes:
    chunks: list[bytes] = []
    room = max_output_size
    pending = data
    while True:
        inflater = zlib.decompressobj(47)  # 32+15: gzip or zlib header, detected
        # Ask for one byte more than allowed: getting it proves the output is too big.
        out = inflater.decompress(pending, room + 1)
        if len(out) > room:
            raise CorruptRecordError(
                f"gzip data decompresses to more than the {max_output_size} bytes allowed"
            )
        if not inflater.eof:
            raise CorruptRecordError("gzip data is truncated")
        chunks.append(out)
        room -= len(out)
        pending = inflater.unused_data
        # Another member may follow (gzip allows concatenation); anything else after the end
        # is ignored, as Java's GZIPInputStream does.
        if not pending.startswith(_GZIP_MAGIC):
            return b"".join(chunks)


# --------------------------------------------------------------------------------- snappy

#: snappy-java's stream header: magic, then int32 version 1 and int32 minimum compatible 1.
XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_HEADER_SIZE = len(_XERIAL_HEADER)
#: snappy-java's default block size (input bytes per block).
XERIAL_BLOCK_SIZE = 32 * 1024
_INT32 = struct.Struct(">i")


def snappy_xerial_encode(data: BytesLike, block_size: int = XERIAL_BLOCK_SIZE) -> bytes:
    """Snappy in snappy-java's framing, as Java's producer writes it.

    Always at least one block, even for empty input: librdkafka treats a stream of just the
    16-byte header as raw snappy and fails on it.
    """
    import cramjam

    view = memoryview(data)
    pieces = [_XERIAL_HEADER]
    for start in range(0, max(len(view), 1), block_size):
        block = bytes(cramjam.snappy.compress_raw(view[start : start + block_size]))
        pieces.append(_INT32.pack(len(block)))
        pieces.append(block)
    return b"".join(pieces)


def snappy_decode(
    data: BytesLike, *, max_output_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE
) -> bytes:
    """Decode snappy as Kafka clients write it: xerial-framed (Java, kafka-python) or raw
    (librdkafka). Raises :class:`CorruptRecordError` on bad data or too large an output."""
    import cramjam

    view = memoryview(data)
    try:
        if view[: len(XERIAL_MAGIC)] != XERIAL_MAGIC:
            _check_bound(
                CompressionType.SNAPPY, cramjam.snappy.decompress_raw_len(view), max_output_size
            )
            return bytes(cramjam.snappy.decompress_raw(view))
        blocks = _xerial_blocks(view)
        # Each raw block starts with its uncompressed length: sum them before inflating.
        bound = sum(map(cramjam.snappy.decompress_raw_len, blocks))
        _check_bound(CompressionType.SNAPPY, bound, max_output_size)
        return b"".join([bytes(cramjam.snappy.decompress_raw(block)) for block in blocks])
    except cramjam.DecompressionError as exc:
        raise CorruptRecordError(f"snappy decompression failed: {exc}") from exc


def _xerial_blocks(view: memoryview) -> list[memoryview]:
    if len(view) < _XERIAL_HEADER_SIZE:
        raise CorruptRecordError("xerial snappy header is truncated")
    blocks = []
    pos = _XERIAL_HEADER_SIZE
    end = len(view)
    while pos < end:
        if end - pos < 4:
            raise CorruptRecordError(f"xerial snappy block length truncated at byte {pos}")
        (length,) = _INT32.unpack_from(view, pos)
        pos += 4
        if length < 0 or length > end - pos:
            raise CorruptRecordError(
                f"xerial snappy block at byte {pos - 4} declares {length} bytes, {end - pos} remain"
            )
        blocks.append(view[pos : pos + length])
        pos += length
    return blocks


# ------------------------------------------------------------------------------------ lz4

_LZ4_FRAME_MAGIC = 0x184D2204
_SKIPPABLE_MAGIC_MASK = 0xFFFFFFF0
_SKIPPABLE_MAGIC = 0x184D2A50  # lz4 and zstd share the skippable-frame magic range
_UINT32_LE = struct.Struct("<I")
_LZ4_BLOCK_MAX_SIZES = {4: 64 << 10, 5: 256 << 10, 6: 1 << 20, 7: 4 << 20}
_LZ4_UNCOMPRESSED_BIT = 0x80000000


#: The lowest lz4 level that is HC; below it the frame API compresses in fast mode, as
#: :func:`lz4_frame_encode` does.
LZ4_HC_MIN_LEVEL = 3
LZ4_BLOCK_SIZE = 64 << 10


def _xxh32_short(data: bytes, seed: int = 0) -> int:
    """xxHash32 of fewer than 16 bytes (the frame header checksum's input; longer inputs take
    a four-lane loop that this does not need)."""
    p1, p2, p3, p4, p5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
    mask = 0xFFFFFFFF

    def rotl(x: int, r: int) -> int:
        return ((x << r) | (x >> (32 - r))) & mask

    if len(data) >= 16:
        raise ValueError("_xxh32_short takes fewer than 16 bytes")
    h = (seed + p5 + len(data)) & mask
    pos = 0
    while pos + 4 <= len(data):
        h = rotl((h + int.from_bytes(data[pos : pos + 4], "little") * p3) & mask, 17) * p4 & mask
        pos += 4
    for byte in data[pos:]:
        h = rotl((h + byte * p5) & mask, 11) * p1 & mask
    h = ((h ^ (h >> 15)) * p2) & mask
    h = ((h ^ (h >> 13)) * p3) & mask
    return h ^ (h >> 16)


# The frame lz4_frame_encode writes (LZ4 frame format, which Kafka's lz4 is since KIP-57);
# integers little-endian:
#
#   magic        u32   0x184D2204
#   FLG          u8    0x60: version 01, blocks independent, no block checksums,
#                      no content size, no content checksum, no dictionary id
#   BD           u8    0x40: block maximum size 64 KiB
#   HC           u8    (xxh32(FLG BD, seed 0) >> 8) & 0xFF
#   blocks             each: u32 size, then that many bytes; the size's high bit set means
#                      the bytes are stored raw (the block did not shrink)
#   end mark     u32   0
_LZ4_DESCRIPTOR = bytes((0x60, 0x40))
LZ4_FRAME_HEADER = (
    _UINT32_LE.pack(_LZ4_FRAME_MAGIC)
    + _LZ4_DESCRIPTOR
    + bytes(((_xxh32_short(_LZ4_DESCRIPTOR) >> 8) & 0xFF,))
)
_LZ4_END_MARK = bytes(4)
# The compiled core's seal writes this frame too (_core_builder_seal.c, reading the header,
# block size and levels from here): this is its reference.
# The frame is written into a scratch buffer kept per thread (the Sender seals on one thread)
# and copied out once, rather than built from pieces.
_lz4_scratch = threading.local()
# A rare huge batch (records up to its limit / estimated ratio) gets a buffer of its own
# rather than one every thread keeps.
_LZ4_SCRATCH_KEPT = 4 << 20


def lz4_writes_frame(level: int | None) -> bool:
    """Whether lz4 at ``level`` (``None``: the default) is a fast level, whose frame
    :func:`lz4_frame_encode` writes; the HC levels go through cramjam's frame compressor."""
    return resolve_compression_level(CompressionType.LZ4, level) < LZ4_HC_MIN_LEVEL


def lz4_frame_encode(data: BytesLike, *, header_room: int = 0) -> bytes:
    """An LZ4 frame of independent 64 KiB blocks, compressed in fast mode (level 1); a block
    that does not shrink is stored raw, after ``header_room`` zero bytes. Standard output any
    LZ4 frame reader accepts:

    >>> decompress(CompressionType.LZ4, lz4_frame_encode(b"abc" * 100))[:6]
    b'abcabc'
    """
    view = memoryview(data)
    out = memoryview(_lz4_scratch_buffer(header_room + lz4_frame_bound(view)))
    out[:header_room] = bytes(header_room)
    written = lz4_frame_encode_into(view, out[header_room:])
    return bytes(out[: header_room + written])


def lz4_frame_bound(data: BytesLike) -> int:
    """The most bytes :func:`lz4_frame_encode_into` writes for ``data``."""
    import cramjam

    view = memoryview(data)
    blocks = -(-len(view) // LZ4_BLOCK_SIZE)
    bound: int = cramjam.lz4.compress_block_bound(view[:LZ4_BLOCK_SIZE])
    return len(LZ4_FRAME_HEADER) + blocks * (4 + bound) + len(_LZ4_END_MARK)


def lz4_frame_encode_into(data: BytesLike, out: memoryview) -> int:
    """Write :func:`lz4_frame_encode`'s frame of ``data`` (without header room) at the start
    of ``out``, a writable buffer of at least :func:`lz4_frame_bound` bytes: the bytes
    written. The compiled core's seal writes it straight into the batch's bytes."""
    import cramjam

    view = memoryview(data)
    pos = len(LZ4_FRAME_HEADER)
    out[:pos] = LZ4_FRAME_HEADER
    for start in range(0, len(view), LZ4_BLOCK_SIZE):
        block = view[start : start + LZ4_BLOCK_SIZE]
        written = cramjam.lz4.compress_block_into(block, out[pos + 4 :], store_size=False)
        if written >= len(block):
            written = len(block)
            out[pos + 4 : pos + 4 + written] = block
            _UINT32_LE.pack_into(out, pos, written | _LZ4_UNCOMPRESSED_BIT)
        else:
            _UINT32_LE.pack_into(out, pos, written)
        pos += 4 + written
    out[pos : pos + 4] = _LZ4_END_MARK
    return pos + 4


def _lz4_scratch_buffer(size: int) -> bytearray:
    scratch: bytearray | None = getattr(_lz4_scratch, "buffer", None)
    if scratch is None or len(scratch) < size:
        scratch = bytearray(size)
        if size <= _LZ4_SCRATCH_KEPT:
            _lz4_scratch.buffer = scratch
    return scratch


def _lz4_frame_output_bound(data: BytesLike) -> int:
    """Upper bound of the decompressed size of concatenated LZ4 frames: no block inflates to
    more than the frame's block maximum size."""
    view = memoryview(data)
    end = len(view)
    pos = 0
    bound = 0
    if end == 0:
        raise CorruptRecordError("lz4 data is empty")
    while pos < end:
        magic = _read_u32_le(view, pos, "lz4 frame magic")
        pos += 4
        if magic & _SKIPPABLE_MAGIC_MASK == _SKIPPABLE_MAGIC:
            pos += 4 + _read_u32_le(view, pos, "lz4 skippable frame size")
            continue
        if magic != _LZ4_FRAME_MAGIC:
            raise CorruptRecordError(f"not an lz4 frame: magic 0x{magic:08x} at byte {pos - 4}")
        if end - pos < 3:
            raise CorruptRecordError("lz4 frame descriptor is truncated")
        flags, block_descriptor = view[pos], view[pos + 1]
        if flags >> 6 != 1:
            raise CorruptRecordError(f"lz4 frame version {flags >> 6} is not supported")
        has_block_checksum = bool(flags & 0x10)
        has_content_checksum = bool(flags & 0x04)
        # FLG, BD, optional content size (8) and dictionary id (4), header checksum (1).
        pos += 2 + (8 if flags & 0x08 else 0) + (4 if flags & 0x01 else 0) + 1
        block_max = _LZ4_BLOCK_MAX_SIZES.get((block_descriptor >> 4) & 0x07)
        if block_max is None:
            raise CorruptRecordError(f"lz4 block descriptor 0x{block_descriptor:02x} is invalid")
        while True:
            word = _read_u32_le(view, pos, "lz4 block size")
            pos += 4
            if word == 0:  # end mark
                break
            size = word & ~_LZ4_UNCOMPRESSED_BIT
            if size > block_max:
                raise CorruptRecordError(f"lz4 block of {size} bytes exceeds its {block_max} max")
            bound += size if word & _LZ4_UNCOMPRESSED_BIT else block_max
            pos += size + (4 if has_block_checksum else 0)
        pos += 4 if has_content_checksum else 0
    if pos != end:
        raise CorruptRecordError("lz4 frame is truncated")
    return bound


def _read_u32_le(view: memoryview, pos: int, what: str) -> int:
    if len(view) - pos < 4:
        raise CorruptRecordError(f"{what} truncated at byte {pos}")
    value: int = _UINT32_LE.unpack_from(view, pos)[0]
    return value


# ----------------------------------------------------------------------------------- zstd

_ZSTD_FRAME_MAGIC = 0xFD2FB528
_ZSTD_BLOCK_MAX = 128 << 10
_ZSTD_DICT_ID_SIZES = (0, 1, 2, 4)
_ZSTD_RAW, _ZSTD_RLE, _ZSTD_COMPRESSED = 0, 1, 2


def _zstd_output_bound(data: BytesLike) -> int:
    """Upper bound of the decompressed size of concatenated zstd frames, from block headers:
    a raw or RLE block states its size, a compressed one inflates to at most 128 KiB."""
    view = memoryview(data)
    end = len(view)
    pos = 0
    bound = 0
    if end == 0:
        raise CorruptRecordError("zstd data is empty")
    while pos < end:
        magic = _read_u32_le(view, pos, "zstd frame magic")
        pos += 4
        if magic & _SKIPPABLE_MAGIC_MASK == _SKIPPABLE_MAGIC:
            pos += 4 + _read_u32_le(view, pos, "zstd skippable frame size")
            continue
        if magic != _ZSTD_FRAME_MAGIC:
            raise CorruptRecordError(f"not a zstd frame: magic 0x{magic:08x} at byte {pos - 4}")
        if pos >= end:
            raise CorruptRecordError("zstd frame header is truncated")
        descriptor = view[pos]
        pos += 1
        single_segment = descriptor & 0x20
        content_size_flag = descriptor >> 6
        content_size_bytes = (1 if single_segment else 0, 2, 4, 8)[content_size_flag]
        pos += (0 if single_segment else 1) + _ZSTD_DICT_ID_SIZES[descriptor & 0x03]
        pos += content_size_bytes
        while True:
            if end - pos < 3:
                raise CorruptRecordError(f"zstd block header truncated at byte {pos}")
            header = view[pos] | view[pos + 1] << 8 | view[pos + 2] << 16
            pos += 3
            block_type = (header >> 1) & 0x03
            size = header >> 3
            if block_type == _ZSTD_RAW:
                bound += size
                pos += size
            elif block_type == _ZSTD_RLE:
                bound += size
                pos += 1
            elif block_type == _ZSTD_COMPRESSED:
                bound += _ZSTD_BLOCK_MAX
                pos += size
            else:
                raise CorruptRecordError(f"zstd block at byte {pos - 3} has the reserved type")
            if header & 0x01:  # last block
                break
        pos += 4 if descriptor & 0x04 else 0  # content checksum
    if pos != end:
        raise CorruptRecordError("zstd frame is truncated")
    return bound
