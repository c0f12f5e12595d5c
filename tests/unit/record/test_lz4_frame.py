"""The LZ4 frames the fast lz4 levels write (compression.lz4_frame_encode), checked against the
frame format and read back by our reader and by the ``lz4`` package's frame decoder."""

from __future__ import annotations

import os
import struct
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkaline.record.builder import RecordBatchBuilder as PythonBuilder
from kafkaline.record.compression import (
    LZ4_HC_MIN_LEVEL,
    CompressionType,
    _xxh32_short,
    compress,
    decompress,
    lz4_frame_bound,
    lz4_frame_encode,
    lz4_frame_encode_into,
    lz4_writes_frame,
)
from kafkaline.record.core import RecordBatchBuilder
from kafkaline.record.reader import read_record_batches

lz4_frame = pytest.importorskip("lz4.frame")

BLOCK = 64 * 1024
TEXT = b"".join(b"record %d: the quick brown fox; " % i for i in range(20000))  # ~10 blocks


def frame_blocks(frame: bytes) -> list[tuple[int, bool]]:
    """(size, stored raw) of each block of a frame with our 7-byte header."""
    pos = 7
    blocks: list[tuple[int, bool]] = []
    while True:
        (word,) = struct.unpack_from("<I", frame, pos)
        pos += 4
        if word == 0:
            assert pos == len(frame), "nothing may follow the end mark"
            return blocks
        size = word & 0x7FFFFFFF
        blocks.append((size, bool(word & 0x80000000)))
        pos += size


def test_xxh32_matches_the_reference_vectors() -> None:
    assert _xxh32_short(b"") == 0x02CC5D05
    assert _xxh32_short(b"a") == 0x550D7456
    assert _xxh32_short(b"abc") == 0x32D153FF
    with pytest.raises(ValueError, match="fewer than 16"):
        _xxh32_short(bytes(16))


def test_the_header_says_independent_64k_blocks_without_checksums() -> None:
    frame = lz4_frame_encode(b"x")
    # magic, FLG 0x60, BD 0x40, then (xxh32(FLG BD) >> 8) & 0xFF, as the lz4 reference writes
    assert frame[:7] == bytes.fromhex("04224d18604082")
    assert frame[7:] == struct.pack("<I", 0x80000001) + b"x" + bytes(4)  # one raw block


@pytest.mark.parametrize("size", [0, 1, 15, BLOCK - 1, BLOCK, BLOCK + 1, 3 * BLOCK + 5])
def test_incompressible_data_goes_in_raw_blocks(size: int) -> None:
    data = os.urandom(size)
    frame = lz4_frame_encode(data)
    blocks = frame_blocks(frame)
    assert [raw for _, raw in blocks] == [True] * len(blocks)
    assert [s for s, _ in blocks] == [min(BLOCK, size - i) for i in range(0, size, BLOCK)]
    assert decompress(CompressionType.LZ4, frame) == data
    assert lz4_frame.decompress(frame) == data


def test_compressible_data_goes_in_compressed_blocks_of_at_most_64k() -> None:
    frame = lz4_frame_encode(TEXT)
    blocks = frame_blocks(frame)
    assert len(blocks) == -(-len(TEXT) // BLOCK)
    assert not any(raw for _, raw in blocks)
    assert len(frame) < len(TEXT) // 3
    assert decompress(CompressionType.LZ4, frame) == TEXT
    assert lz4_frame.decompress(frame) == TEXT


def test_mixed_blocks_each_take_their_own_form() -> None:
    data = TEXT[:BLOCK] + os.urandom(BLOCK) + TEXT[:BLOCK]
    frame = lz4_frame_encode(memoryview(data))
    assert [raw for _, raw in frame_blocks(frame)] == [False, True, False]
    assert lz4_frame.decompress(frame) == data


@settings(max_examples=40)
@given(data=st.binary(max_size=3 * BLOCK))
def test_round_trip_through_both_readers(data: bytes) -> None:
    frame = compress(CompressionType.LZ4, bytearray(data))
    assert frame == lz4_frame_encode(data)
    assert compress(CompressionType.LZ4, data, header_room=61) == bytes(61) + frame
    assert decompress(CompressionType.LZ4, frame) == data
    assert lz4_frame.decompress(frame) == data


def test_fast_levels_write_our_frame_and_hc_levels_the_compressor() -> None:
    for level in range(1, LZ4_HC_MIN_LEVEL):
        assert compress(CompressionType.LZ4, TEXT, level) == lz4_frame_encode(TEXT)
    hc = compress(CompressionType.LZ4, TEXT, LZ4_HC_MIN_LEVEL)
    assert hc[5] == 0x40 and hc[4] & 0x20  # still independent 64 KiB blocks
    assert lz4_frame.decompress(hc) == TEXT


def test_threads_compressing_at_once_each_get_their_own_frame() -> None:
    inputs = [TEXT[i * 1000 :] + os.urandom(i * 5000) for i in range(8)]
    results: dict[int, bytes] = {}

    def work(i: int) -> None:
        for _ in range(20):
            results[i] = lz4_frame_encode(inputs[i])
            assert lz4_frame.decompress(results[i]) == inputs[i]

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [lz4_frame.decompress(results[i]) for i in range(8)] == inputs


@pytest.mark.parametrize("count", [1, 2, 3000])
def test_lz4_batches_of_one_to_several_blocks_read_back(count: int) -> None:
    builder = RecordBatchBuilder(
        batch_size_limit=1 << 20, compression=CompressionType.LZ4, estimated_compression_ratio=0.2
    )
    values = [TEXT[i * 100 : i * 100 + 100 + i % 7] for i in range(count)]
    for i, value in enumerate(values):
        assert builder.append(1_700_000_000_000 + i, b"k%d" % i, value, ()) == i
    builder.seal()
    wire = builder.build()
    assert builder.estimated_size_in_bytes == len(wire)  # exact once sealed
    (batch,) = read_record_batches(wire)
    assert [record.value for record in batch.records] == values
    if count == 3000:
        assert builder.uncompressed_records_size > 3 * BLOCK


def test_a_huge_frame_does_not_leave_its_buffer_behind() -> None:
    from kafkaline.record import compression

    lz4_frame_encode(TEXT)
    kept = compression._lz4_scratch.buffer
    huge = TEXT * 20  # over the kept size
    assert len(huge) > compression._LZ4_SCRATCH_KEPT
    assert lz4_frame.decompress(lz4_frame_encode(huge)) == huge
    assert compression._lz4_scratch.buffer is kept


@pytest.mark.parametrize("size", [0, 1, 100, BLOCK, BLOCK + 1, 3 * BLOCK + 5])
def test_a_frame_written_into_a_buffer_is_the_same_frame(size: int) -> None:
    data = (TEXT[: size // 2] + os.urandom(size))[:size]
    bound = lz4_frame_bound(data)
    out = bytearray(b"\xee" * (bound + 3))
    written = lz4_frame_encode_into(data, memoryview(out)[:bound])
    assert 0 < written <= bound
    assert bytes(out[:written]) == lz4_frame_encode(data)
    assert out[bound:] == b"\xee" * 3  # nothing past the bound
    assert lz4_frame.decompress(bytes(out[:written])) == data


def test_only_the_fast_levels_write_the_frame() -> None:
    assert lz4_writes_frame(None)
    assert [lz4_writes_frame(level) for level in range(1, 18)] == [
        level < LZ4_HC_MIN_LEVEL for level in range(1, 18)
    ]


NOISE = os.urandom(400_000)


@pytest.mark.parametrize("level", [None, 1, 2, LZ4_HC_MIN_LEVEL, 9])
@pytest.mark.parametrize("count", [1, 700, 3000])
@pytest.mark.parametrize("source", [TEXT, NOISE, TEXT[:150_000] + NOISE])
def test_a_sealed_lz4_batch_is_the_reference_builders(
    level: int | None, count: int, source: bytes
) -> None:
    # The compiled seal writes the fast levels' frame itself, straight into the batch's
    # bytes: compressed blocks, raw blocks (noise) and both in one frame.
    values = [source[i * 90 : i * 90 + 100] for i in range(count)]
    batches = []
    for make in (RecordBatchBuilder, PythonBuilder):
        builder = make(
            batch_size_limit=1 << 20,
            compression=CompressionType.LZ4,
            compression_level=level,
            estimated_compression_ratio=0.2,
        )
        for i in range(count):
            builder.append(1_700_000_000_000 + i, b"key-%06d" % i, values[i])
        builder.set_producer_state(5, 1, 0)
        batches.append(bytes(builder.build()))
    assert batches[0] == batches[1]
    (batch,) = read_record_batches(batches[0])
    assert [r.value for r in batch.records] == values
