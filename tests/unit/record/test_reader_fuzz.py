"""Hostile bytes into the reader: only decode errors escape, quickly, without big allocations.

UnsupportedCodecError is allowed too: a batch naming a codec id this library does not know is
a distinct, named condition (a newer Kafka), not corruption.
"""

from __future__ import annotations

import struct
import time
import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkaline.errors import DecodeError, UnsupportedCodecError
from kafkaline.record import CompressionType, RecordBatchBuilder, crc32c, read_record_batches

ALLOWED = (DecodeError, UnsupportedCodecError)
BASE_TS = 1_700_000_000_000


def sample_batches() -> list[bytes]:
    samples = []
    for codec in CompressionType:
        builder = RecordBatchBuilder(compression=codec, is_transactional=codec % 2 == 1)
        for i in range(12):
            headers = [(f"h{i}", b"x" * i), ("n", None)] if i % 3 == 0 else None
            builder.append(BASE_TS - 50 + i * 9, b"key%d" % i if i % 2 else None, b"v" * i, headers)
        samples.append(builder.build())
    return samples


SAMPLES = sample_batches()
MAX_OUTPUT = 1 << 20


def read_bounded(data: bytes, verify_crc: bool) -> None:
    """Read, allowing only the named errors, and check time and memory stayed small."""
    tracemalloc.start()
    started = time.perf_counter()
    try:
        read_record_batches(data, verify_crc=verify_crc, max_decompressed_size=MAX_OUTPUT)
    except ALLOWED:
        pass
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert time.perf_counter() - started < 5
    # Input, its decompression (capped) and the records built from it, with room to spare.
    assert peak < 8 * len(data) + 4 * MAX_OUTPUT


def recrc(data: bytearray) -> bytes:
    """Recompute the first batch's CRC so that mutations reach the structure checks."""
    if len(data) >= 21:
        struct.pack_into(">I", data, 17, crc32c(bytes(data[21:])))
    return bytes(data)


fuzz_settings = settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


@fuzz_settings
@given(st.binary(max_size=400))
def test_random_bytes(data: bytes) -> None:
    read_bounded(data, verify_crc=True)
    read_bounded(data, verify_crc=False)


@fuzz_settings
@given(st.binary(min_size=61, max_size=400), st.integers(0, (1 << 31) - 1))
def test_random_bytes_behind_a_valid_looking_header(tail: bytes, length: int) -> None:
    header = struct.pack(">qiib", 0, min(length, 49 + len(tail) - 61), -1, 2)
    data = bytearray(header + tail[len(header) :])
    read_bounded(recrc(data), verify_crc=True)


@fuzz_settings
@given(sample=st.sampled_from(SAMPLES), data=st.data())
def test_bit_flips(sample: bytes, data: st.DataObject) -> None:
    mutated = bytearray(sample)
    for _ in range(data.draw(st.integers(1, 8))):
        position = data.draw(st.integers(0, len(mutated) - 1))
        mutated[position] ^= 1 << data.draw(st.integers(0, 7))
    read_bounded(bytes(mutated), verify_crc=True)
    read_bounded(bytes(mutated), verify_crc=False)
    read_bounded(recrc(mutated), verify_crc=True)


@fuzz_settings
@given(sample=st.sampled_from(SAMPLES), data=st.data())
def test_overwritten_bytes(sample: bytes, data: st.DataObject) -> None:
    mutated = bytearray(sample)
    position = data.draw(st.integers(0, len(mutated) - 1))
    replacement = data.draw(st.binary(min_size=1, max_size=8))
    mutated[position : position + len(replacement)] = replacement
    read_bounded(recrc(mutated), verify_crc=True)


@fuzz_settings
@given(sample=st.sampled_from(SAMPLES), cut=st.integers(0, 10_000), extra=st.binary(max_size=30))
def test_truncated_and_extended(sample: bytes, cut: int, extra: bytes) -> None:
    doubled = sample + sample
    truncated = doubled[: cut % (len(doubled) + 1)]
    # A cut through the second batch leaves the first intact and reads it.
    if len(truncated) >= len(sample):
        assert len(read_record_batches(truncated)) >= 1
    read_bounded(truncated + extra, verify_crc=True)


@pytest.mark.parametrize("field_offset", [8, 57])  # batch_length, record_count
def test_lying_lengths_do_not_allocate(field_offset: int) -> None:
    sample = bytearray(SAMPLES[0])
    struct.pack_into(">i", sample, field_offset, (1 << 31) - 1)
    read_bounded(recrc(sample), verify_crc=True)
