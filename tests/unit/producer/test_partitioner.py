"""Keyed partitioning, the partition selector, round robin and partition validation."""

from __future__ import annotations

import pickle
from collections.abc import Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafkaline.errors import KafkaError
from kafkaline.producer.murmur2 import murmur2, to_positive
from kafkaline.producer.partitioner import (
    ClusterPartitions,
    InvalidPartitionError,
    KeyPartitionCache,
    Partitioner,
    PartitionSelector,
    RoundRobinPartitioner,
    StaticCluster,
    partition_for_key,
    partitioner_for_name,
    validate_partition,
)

CLUSTER = StaticCluster({"events": 12, "other": 3})


# --------------------------------------------------------------------------- keyed


def test_partition_for_key_is_javas_formula() -> None:
    assert partition_for_key(b"", 1000) == 681
    assert partition_for_key(b"123456789", 1000) == 566


@given(st.binary(max_size=200), st.integers(min_value=1, max_value=10_000))
def test_key_cache_agrees_with_the_uncached_formula(key: bytes, count: int) -> None:
    cache = KeyPartitionCache(max_entries=4, max_key_size=16)
    expected = to_positive(murmur2(key)) % count
    assert cache.partition_for_key(key, count) == expected
    assert cache.partition_for_key(key, count) == expected  # second time: from the memo
    assert cache.partition_for_key(bytearray(key), count) == expected


def test_key_cache_is_bounded_and_skips_long_and_unhashable_keys() -> None:
    cache = KeyPartitionCache(max_entries=3, max_key_size=8)
    for key in (b"a", b"b", b"c"):
        cache.partition_for_key(key, 10)
    assert len(cache) == 3
    cache.partition_for_key(b"d", 10)  # full: cleared, then d remembered
    assert len(cache) == 1
    cache.partition_for_key(b"123456789", 10)  # longer than max_key_size
    cache.partition_for_key(bytearray(b"e"), 10)  # not hashable: computed, not stored
    assert len(cache) == 1


# --------------------------------------------------------------------------- the selector


def test_keyed_records_hash_over_all_partitions_even_unavailable_ones() -> None:
    key = b"user-1"
    expected = partition_for_key(key, 12)
    everyone_down = StaticCluster({"events": 12}, unavailable={"events": frozenset(range(12))})
    selector = PartitionSelector()
    assert selector.select("events", None, key, b"v", CLUSTER) == expected
    assert selector.select("events", None, key, b"v", everyone_down) == expected


def test_an_empty_key_is_hashed_and_a_none_key_is_not() -> None:
    selector = PartitionSelector()
    assert selector.select("events", None, b"", b"v", CLUSTER) == partition_for_key(b"", 12)
    assert selector.select("events", None, None, b"v", CLUSTER) is None


def test_ignore_keys_makes_keyed_records_sticky() -> None:
    selector = PartitionSelector(ignore_keys=True)
    assert selector.select("events", None, b"user-1", b"v", CLUSTER) is None


def test_explicit_partition_wins_and_is_validated() -> None:
    selector = PartitionSelector(custom=RoundRobinPartitioner())
    assert selector.select("events", 11, b"k", b"v", CLUSTER) == 11
    with pytest.raises(InvalidPartitionError) as caught:
        selector.select("other", 3, b"k", b"v", CLUSTER)
    assert str(caught.value) == (
        "partition 3 given by the record is not a partition of topic 'other', which has "
        "3 partitions (0-2)"
    )


class FixedPartitioner:
    def __init__(self, answer: int) -> None:
        self.answer = answer
        self.calls: list[tuple[str, bytes | None, bytes | None]] = []

    def partition(
        self,
        topic: str,
        key_bytes: bytes | None,
        value_bytes: bytes | None,
        cluster: ClusterPartitions,
    ) -> int:
        self.calls.append((topic, key_bytes, value_bytes))
        return self.answer

    def close(self) -> None:
        pass

    def __repr__(self) -> str:
        return f"FixedPartitioner({self.answer})"


def test_custom_partitioner_decides_keyed_and_keyless_records() -> None:
    custom = FixedPartitioner(2)
    selector = PartitionSelector(custom)
    assert selector.select("other", None, b"k", b"v", CLUSTER) == 2
    assert selector.select("other", None, None, None, CLUSTER) == 2
    assert custom.calls == [("other", b"k", b"v"), ("other", None, None)]
    assert isinstance(custom, Partitioner)


@pytest.mark.parametrize("answer", [-1, 3])
def test_custom_partitioner_answers_are_validated(answer: int) -> None:
    selector = PartitionSelector(FixedPartitioner(answer))
    with pytest.raises(InvalidPartitionError, match=rf"partition {answer} given by partitioner "):
        selector.select("other", None, b"k", b"v", CLUSTER)


def test_validate_partition() -> None:
    assert validate_partition("t", 0, 1, "x") == 0
    for bad in (-1, 1, True):
        with pytest.raises(InvalidPartitionError):
            validate_partition("t", bad, 1, "x")
    with pytest.raises(InvalidPartitionError, match=r"which has 0 partitions \(none yet\)"):
        validate_partition("t", 0, 0, "x")
    error = InvalidPartitionError("x")
    assert isinstance(error, KafkaError) and isinstance(error, ValueError)


# --------------------------------------------------------------------------- round robin


def take(
    partitioner: RoundRobinPartitioner, topic: str, cluster: StaticCluster, n: int
) -> list[int]:
    return [partitioner.partition(topic, b"key", b"v", cluster) for _ in range(n)]


def test_round_robin_cycles_available_partitions_ignoring_keys() -> None:
    cluster = StaticCluster({"t": 4}, unavailable={"t": frozenset({1})})
    assert take(RoundRobinPartitioner(), "t", cluster, 7) == [0, 2, 3, 0, 2, 3, 0]


def test_round_robin_falls_back_to_all_partitions_when_none_is_available() -> None:
    cluster = StaticCluster({"t": 3}, unavailable={"t": frozenset({0, 1, 2})})
    assert take(RoundRobinPartitioner(), "t", cluster, 4) == [0, 1, 2, 0]


def test_round_robin_counts_per_topic() -> None:
    partitioner = RoundRobinPartitioner()
    cluster = StaticCluster({"a": 3, "b": 3})
    assert take(partitioner, "a", cluster, 2) == [0, 1]
    assert take(partitioner, "b", cluster, 1) == [0]
    assert take(partitioner, "a", cluster, 1) == [2]
    partitioner.close()
    assert isinstance(partitioner, Partitioner)


def test_partitioner_names() -> None:
    assert partitioner_for_name("") is None
    for name in ("round_robin", "org.apache.kafka.clients.producer.RoundRobinPartitioner"):
        assert isinstance(partitioner_for_name(name), RoundRobinPartitioner)
    with pytest.raises(LookupError, match="known names"):
        partitioner_for_name("com.example.Mine")


def test_static_cluster() -> None:
    cluster = StaticCluster({"t": 3}, unavailable={"t": frozenset({1})})
    available: Sequence[int] = cluster.available_partitions("t")
    assert (cluster.partition_count("t"), list(available)) == (3, [0, 2])
    with pytest.raises(KeyError):
        cluster.partition_count("unknown")


def test_round_robin_copies_restart_their_counters() -> None:
    partitioner = RoundRobinPartitioner()
    cluster = StaticCluster({"t": 3})
    take(partitioner, "t", cluster, 2)
    copy = pickle.loads(pickle.dumps(partitioner))
    assert take(copy, "t", cluster, 2) == [0, 1]
    assert take(partitioner, "t", cluster, 1) == [2]
