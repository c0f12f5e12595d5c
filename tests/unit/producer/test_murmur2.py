"""murmur2 is Java's Utils.murmur2, bit for bit."""

from __future__ import annotations

import random
import warnings
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafkaline.producer.murmur2 import _lane_remainders, murmur2, partitions_of_many, to_positive

# Apache Kafka's UtilsTest.testMurmur2 (clients/src/test/.../common/utils/UtilsTest.java).
JAVA_UTILS_TEST_VECTORS = [
    (b"21", -973932308),
    (b"foobar", -790332482),
    (b"a-little-bit-long-string", -985981536),
    (b"a-little-bit-longer-string", -1486304829),
    (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
    (b"abc", 479470107),
]

# kafka-python's test_murmur2_java_compatibility: partitions out of 1000, "compared with output
# from Kafka's org.apache.kafka.clients.producer.Partitioner".
JAVA_PARTITIONS_OF_1000 = [
    (b"", 681),
    (b"a", 524),
    (b"ab", 434),
    (b"abc", 107),
    (b"123456789", 566),
    (b"\x00 ", 742),
]


@pytest.mark.parametrize(("data", "expected"), JAVA_UTILS_TEST_VECTORS)
def test_java_utils_test_vectors(data: bytes, expected: int) -> None:
    assert murmur2(data) == expected


@pytest.mark.parametrize(("key", "partition"), JAVA_PARTITIONS_OF_1000)
def test_java_partitions(key: bytes, partition: int) -> None:
    assert to_positive(murmur2(key)) % 1000 == partition


def test_to_positive_clears_the_sign_bit_unlike_abs() -> None:
    assert to_positive(-1) == 0x7FFFFFFF
    assert to_positive(-(2**31)) == 0
    assert to_positive(12345) == 12345


@pytest.fixture(scope="module")
def kafka_python_murmur2() -> Callable[[bytes], int]:
    # kafka-python's package import emits DeprecationWarnings of its own; not ours to see.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from kafka.partitioner.default import murmur2 as unsigned_murmur2
    function: Callable[[bytes], int] = unsigned_murmur2
    return function


@given(data=st.binary(max_size=300))
def test_agrees_with_kafka_pythons_independent_implementation(
    kafka_python_murmur2: Callable[[bytes], int], data: bytes
) -> None:
    unsigned = kafka_python_murmur2(data)
    assert murmur2(data) == (unsigned - 2**32 if unsigned >= 2**31 else unsigned)


@given(st.binary(max_size=64))
def test_bytes_like_inputs_hash_alike(data: bytes) -> None:
    expected = murmur2(data)
    assert murmur2(bytearray(data)) == expected
    assert murmur2(memoryview(data)) == expected
    # A slice that does not start at offset 0 of its buffer.
    assert murmur2(memoryview(b"xx" + data)[2:]) == expected


@given(st.binary(max_size=64))
def test_result_is_a_signed_32_bit_int(data: bytes) -> None:
    assert -(2**31) <= murmur2(data) < 2**31


@pytest.mark.parametrize("seed", range(4))
def test_partitions_of_many_match_one_key_at_a_time(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(40):
        count = rng.choice([0, 1, 15, 16, 17, 300])
        lengths = rng.choice([[10], [0], [1, 2, 3], [4, 5, 6, 7, 8], [31, 64, 129, 200]])
        keys = [rng.randbytes(rng.choice(lengths)) for _ in range(count)]
        for partitions in (1, 2, 3, 6, 255, 256, 257, 1000, 65535, 65536, 65537, 1 << 20):
            expected = [to_positive(murmur2(key)) % partitions for key in keys]
            assert partitions_of_many(keys, partitions) == expected


@pytest.mark.parametrize("divisor", [1, 2, 3, 6, 7, 255, 256, 1000, 32768, 65521, 65535, 65536])
def test_lane_remainders_are_exact_at_the_edges(divisor: int) -> None:
    top = (1 << 31) - 1
    edges = {0, 1, top, top - 1, divisor - 1, divisor, divisor + 1}
    edges |= {top // divisor * divisor + d for d in (-1, 0)} | {(1 << 30) + 7, 123456789}
    dividends = sorted(e for e in edges if 0 <= e <= top)
    ones = int.from_bytes((b"\x01" + bytes(7)) * len(dividends), "little")
    lanes = int.from_bytes(b"".join(d.to_bytes(8, "little") for d in dividends), "little")
    remainders = _lane_remainders(lanes, ones, divisor)
    out = remainders.to_bytes(8 * len(dividends), "little")
    got = [int.from_bytes(out[i : i + 8], "little") for i in range(0, len(out), 8)]
    assert got == [d % divisor for d in dividends]
