"""Codecs: round trips, levels, the framings other clients write and read, bounded output."""

from __future__ import annotations

import contextlib
import gzip
import struct

import cramjam
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka import codec as kafka_python_codec

from kafkaline.errors import CorruptRecordError, UnsupportedCodecError
from kafkaline.record.compression import (
    DEFAULT_LEVELS,
    LEVEL_RANGES,
    XERIAL_BLOCK_SIZE,
    XERIAL_MAGIC,
    CompressionType,
    compress,
    decompress,
    snappy_decode,
    snappy_xerial_encode,
)

ALL_CODECS = list(CompressionType)
COMPRESSING_CODECS = [c for c in CompressionType if c is not CompressionType.NONE]
TEXT = b"".join(b"record %d: the quick brown fox; " % i for i in range(5000))


@pytest.mark.parametrize("codec", ALL_CODECS, ids=lambda c: c.name)
@settings(max_examples=40)
@given(data=st.binary(max_size=200_000))
def test_round_trip(codec: CompressionType, data: bytes) -> None:
    assert decompress(codec, compress(codec, data)) == data


@pytest.mark.parametrize("codec", ALL_CODECS, ids=lambda c: c.name)
def test_round_trip_of_compressible_multi_block_data(codec: CompressionType) -> None:
    compressed = compress(codec, TEXT)
    if codec is not CompressionType.NONE:
        assert len(compressed) < len(TEXT) // 3
    assert decompress(codec, compressed) == TEXT
    assert decompress(codec, memoryview(compressed)) == TEXT
    assert decompress(codec, bytearray(compressed)) == TEXT


@pytest.mark.parametrize("codec", list(LEVEL_RANGES), ids=lambda c: c.name)
def test_every_level_edge_works_and_outside_levels_are_refused(codec: CompressionType) -> None:
    allowed = LEVEL_RANGES[codec]
    for level in (allowed.start, DEFAULT_LEVELS[codec], allowed.stop - 1):
        if codec is CompressionType.ZSTD and level == allowed.start:
            level = -5  # the most negative zstd levels are legal but pointless to run here
        assert decompress(codec, compress(codec, TEXT, level)) == TEXT
    for level in (allowed.start - 1, allowed.stop):
        with pytest.raises(ValueError, match="compression level"):
            compress(codec, TEXT, level)


def test_the_level_reaches_the_codec() -> None:
    # lz4's fast levels (1-2) are our own frame writer and its HC levels (3-17) cramjam's
    # frame Compressor: the two HC levels compare one codec's levels. (Across the two, cramjam
    # 2.11, the newest for Python 3.10, writes HC frames larger than the fast writer's.)
    varied = b"".join(b"%d:%x;" % (i, (i * 2654435761) % 1000003) for i in range(20000))
    for codec, fast_level, slow_level in (
        (CompressionType.GZIP, 1, 9),
        (CompressionType.LZ4, 3, 12),
        (CompressionType.ZSTD, 1, 19),
    ):
        fast = compress(codec, varied, fast_level)
        slow = compress(codec, varied, slow_level)
        assert len(slow) < len(fast), codec


@pytest.mark.parametrize("codec", [CompressionType.NONE, CompressionType.SNAPPY])
def test_codecs_without_levels_refuse_one(codec: CompressionType) -> None:
    with pytest.raises(ValueError, match="no compression level"):
        compress(codec, b"x", 1)


@pytest.mark.parametrize("codec_id", [5, 6, 7, -1, 99])
def test_unknown_codec_ids_are_named(codec_id: int) -> None:
    with pytest.raises(UnsupportedCodecError, match=f"codec id {codec_id} "):
        compress(codec_id, b"x")
    with pytest.raises(UnsupportedCodecError, match=f"codec id {codec_id} "):
        decompress(codec_id, b"x")


# ------------------------------------------------------------------------- what we write


def test_gzip_output_is_a_standard_gzip_member() -> None:
    assert gzip.decompress(compress(CompressionType.GZIP, TEXT)) == TEXT


def test_snappy_output_uses_java_xerial_framing_with_32k_blocks() -> None:
    data = bytes(range(256)) * 300  # 76800 bytes: three blocks of input
    framed = compress(CompressionType.SNAPPY, data)
    assert framed[:16] == XERIAL_MAGIC + struct.pack(">ii", 1, 1)
    pos, pieces = 16, []
    while pos < len(framed):
        (length,) = struct.unpack_from(">i", framed, pos)
        pieces.append(bytes(cramjam.snappy.decompress_raw(framed[pos + 4 : pos + 4 + length])))
        pos += 4 + length
    assert [len(p) for p in pieces] == [XERIAL_BLOCK_SIZE, XERIAL_BLOCK_SIZE, 76800 - 65536]
    assert b"".join(pieces) == data


def test_snappy_of_nothing_still_has_a_block() -> None:
    # librdkafka reads a bare 16-byte header as raw snappy and fails: always write a block.
    framed = snappy_xerial_encode(b"")
    assert len(framed) > 20
    assert decompress(CompressionType.SNAPPY, framed) == b""


def test_lz4_output_is_a_frame_with_independent_blocks() -> None:
    frame = compress(CompressionType.LZ4, TEXT * 3)  # several 64 KiB blocks
    assert frame[:4] == b"\x04\x22\x4d\x18"  # LZ4 frame magic, little-endian
    flags, block_descriptor = frame[4], frame[5]
    assert flags >> 6 == 1  # version 01
    assert flags & 0x20, "Java's Lz4BlockInputStream cannot read linked blocks"
    assert (block_descriptor >> 4) & 0x07 == 4  # 64 KiB blocks, as Java writes


def test_zstd_output_is_a_standard_frame() -> None:
    frame = compress(CompressionType.ZSTD, TEXT)
    assert frame[:4] == b"\x28\xb5\x2f\xfd"
    assert bytes(cramjam.zstd.decompress(frame)) == TEXT


# -------------------------------------------------------------------------- what we read


def test_snappy_reads_raw_snappy_as_librdkafka_writes_it() -> None:
    raw = bytes(cramjam.snappy.compress_raw(TEXT))
    assert decompress(CompressionType.SNAPPY, raw) == TEXT


def test_snappy_reads_hand_built_xerial_framing() -> None:
    blocks = [TEXT[:1000], TEXT[1000:50000], TEXT[50000:]]
    framed = XERIAL_MAGIC + struct.pack(">ii", 1, 1)
    for block in blocks:
        compressed = bytes(cramjam.snappy.compress_raw(block))
        framed += struct.pack(">i", len(compressed)) + compressed
    assert decompress(CompressionType.SNAPPY, framed) == TEXT


def test_snappy_reads_xerial_framing_of_other_versions() -> None:
    compressed = bytes(cramjam.snappy.compress_raw(b"payload"))
    framed = XERIAL_MAGIC + struct.pack(">ii", 2, 1) + struct.pack(">i", len(compressed))
    assert snappy_decode(framed + compressed) == b"payload"


def test_lz4_reads_linked_block_frames_too() -> None:
    linked = bytes(cramjam.lz4.compress(TEXT * 3))  # cramjam's default: linked blocks
    assert not linked[4] & 0x20
    assert decompress(CompressionType.LZ4, linked) == TEXT * 3


def test_zstd_reads_streamed_frames_without_a_content_size() -> None:
    compressor = cramjam.zstd.Compressor()
    compressor.compress(TEXT)
    streamed = bytes(compressor.finish())
    assert decompress(CompressionType.ZSTD, streamed) == TEXT


def test_gzip_reads_concatenated_members_and_ignores_trailing_bytes() -> None:
    data = gzip.compress(b"first ") + gzip.compress(b"second") + b"\x00\x00"
    assert decompress(CompressionType.GZIP, data) == b"first second"


def test_reads_gzip_written_by_kafka_python() -> None:
    assert decompress(CompressionType.GZIP, kafka_python_codec.gzip_encode(TEXT)) == TEXT


@pytest.mark.skipif(not kafka_python_codec.has_snappy(), reason="python-snappy not installed")
def test_reads_snappy_written_by_kafka_python() -> None:
    for xerial in (True, False):
        encoded = kafka_python_codec.snappy_encode(TEXT, xerial_compatible=xerial)
        assert decompress(CompressionType.SNAPPY, encoded) == TEXT
    assert kafka_python_codec.snappy_decode(compress(CompressionType.SNAPPY, TEXT)) == TEXT


@pytest.mark.skipif(not kafka_python_codec.has_lz4(), reason="lz4 not installed")
def test_reads_lz4_written_by_kafka_python() -> None:
    assert decompress(CompressionType.LZ4, kafka_python_codec.lz4_encode(TEXT)) == TEXT
    assert kafka_python_codec.lz4_decode(compress(CompressionType.LZ4, TEXT)) == TEXT


@pytest.mark.skipif(not kafka_python_codec.has_zstd(), reason="zstandard not installed")
def test_reads_zstd_written_by_kafka_python() -> None:
    assert decompress(CompressionType.ZSTD, kafka_python_codec.zstd_encode(TEXT)) == TEXT
    assert kafka_python_codec.zstd_decode(compress(CompressionType.ZSTD, TEXT)) == TEXT


# -------------------------------------------------------------------------- bad input

BOMB_SIZE = 64 << 20  # 64 MiB of zeros compresses to kilobytes with every codec


@pytest.fixture(scope="module")
def bombs() -> dict[CompressionType, bytes]:
    zeros = bytes(BOMB_SIZE)
    return {codec: compress(codec, zeros) for codec in COMPRESSING_CODECS}


@pytest.mark.parametrize("codec", COMPRESSING_CODECS, ids=lambda c: c.name)
def test_output_over_the_cap_is_refused(
    codec: CompressionType, bombs: dict[CompressionType, bytes]
) -> None:
    with pytest.raises(CorruptRecordError, match=str(1 << 20)):
        decompress(codec, bombs[codec], max_output_size=1 << 20)
    assert len(decompress(codec, bombs[codec], max_output_size=BOMB_SIZE)) == BOMB_SIZE


def test_lz4_blocks_smaller_than_their_declared_maximum_decompress_up_to_the_cap() -> None:
    # Some writers (cramjam before 2.12, python-lz4 with auto_flush) send blocks far smaller
    # than the maximum the frame declares: the bound from block maxima is then loose (here
    # 128 blocks x 4 MiB), and the cap must still be exact.
    lz4_frame = pytest.importorskip("lz4.frame")
    data = bytes(range(256)) * 4096  # 1 MiB
    context = lz4_frame.create_compression_context()
    parts = [
        lz4_frame.compress_begin(
            context, block_size=lz4_frame.BLOCKSIZE_MAX4MB, auto_flush=True, content_checksum=False
        )
    ]
    parts += [
        lz4_frame.compress_chunk(context, data[i : i + 8192]) for i in range(0, len(data), 8192)
    ]
    parts.append(lz4_frame.compress_flush(context))
    frame = b"".join(parts)
    assert decompress(CompressionType.LZ4, frame, max_output_size=len(data)) == data
    with pytest.raises(CorruptRecordError, match=f"the {len(data) - 1} allowed"):
        decompress(CompressionType.LZ4, frame, max_output_size=len(data) - 1)


def test_a_lying_snappy_length_header_is_refused_before_allocating() -> None:
    lying = encode_uvarint(1 << 40) + b"\x00"  # claims a terabyte
    with pytest.raises(CorruptRecordError):
        decompress(CompressionType.SNAPPY, lying)
    framed = XERIAL_MAGIC + struct.pack(">ii", 1, 1) + struct.pack(">i", len(lying)) + lying
    with pytest.raises(CorruptRecordError):
        decompress(CompressionType.SNAPPY, framed)


def test_a_lying_xerial_block_length_is_refused() -> None:
    framed = XERIAL_MAGIC + struct.pack(">ii", 1, 1) + struct.pack(">i", 1 << 30) + b"abc"
    with pytest.raises(CorruptRecordError, match="declares"):
        decompress(CompressionType.SNAPPY, framed)


def encode_uvarint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


@pytest.mark.parametrize("codec", COMPRESSING_CODECS, ids=lambda c: c.name)
def test_truncated_data_is_corrupt(codec: CompressionType) -> None:
    compressed = compress(codec, TEXT)
    for cut in (0, 1, 5, len(compressed) // 2, len(compressed) - 1):
        with pytest.raises(CorruptRecordError):
            decompress(codec, compressed[:cut])


@pytest.mark.parametrize("codec", COMPRESSING_CODECS, ids=lambda c: c.name)
@settings(max_examples=100)
@given(garbage=st.binary(max_size=300))
def test_garbage_raises_only_corrupt_record(codec: CompressionType, garbage: bytes) -> None:
    with contextlib.suppress(CorruptRecordError):
        decompress(codec, garbage, max_output_size=1 << 20)


@pytest.mark.parametrize("codec", COMPRESSING_CODECS, ids=lambda c: c.name)
@settings(max_examples=100)
@given(data=st.data())
def test_flipped_bits_raise_only_corrupt_record(
    codec: CompressionType, data: st.DataObject
) -> None:
    compressed = bytearray(compress(codec, TEXT[:3000]))
    for _ in range(data.draw(st.integers(1, 4))):
        position = data.draw(st.integers(0, len(compressed) - 1))
        compressed[position] ^= 1 << data.draw(st.integers(0, 7))
    with contextlib.suppress(CorruptRecordError):
        decompress(codec, compressed, max_output_size=1 << 20)


def test_zlib_errors_are_translated() -> None:
    broken = bytearray(gzip.compress(TEXT))
    broken[20:40] = bytes(20)
    with pytest.raises(CorruptRecordError, match="gzip"):
        decompress(CompressionType.GZIP, bytes(broken))


@pytest.mark.parametrize("codec", ALL_CODECS, ids=lambda c: c.name)
def test_header_room_comes_first_as_zero_bytes(codec: CompressionType) -> None:
    plain = compress(codec, TEXT)
    assert compress(codec, TEXT, header_room=61) == bytes(61) + plain
    assert compress(codec, TEXT, header_room=0) == plain
    with pytest.raises(ValueError, match="header_room"):
        compress(codec, TEXT, header_room=-1)
