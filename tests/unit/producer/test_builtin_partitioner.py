"""The KIP-794 uniform sticky partitioner: switching by bytes, adaptive weights, exclusions."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafkaline.producer.builtin_partitioner import (
    BuiltInPartitioner,
    PartitionLoadStats,
    PartitionQueueState,
)
from kafkaline.producer.partitioner import StaticCluster


class ScriptedRng:
    """randrange() answers from a script and records each ``stop`` it was asked for."""

    def __init__(self, *answers: int) -> None:
        self.answers = list(answers)
        self.stops: list[int] = []

    def randrange(self, stop: int) -> int:
        self.stops.append(stop)
        return self.answers.pop(0)


def queues(*sizes: int) -> list[PartitionQueueState]:
    return [PartitionQueueState(partition, size) for partition, size in enumerate(sizes)]


FOUR = StaticCluster({"t": 4})


# --------------------------------------------------------------------------- sticky switching


def test_sticks_to_a_partition_until_batch_size_bytes_then_switches() -> None:
    rng = ScriptedRng(2, 0)
    partitioner = BuiltInPartitioner("t", 100, rng=rng)
    first = partitioner.peek_current(FOUR)
    assert first.partition == 2
    for _ in range(9):
        partitioner.update_partition_info(first, 10, FOUR)
        assert partitioner.peek_current(FOUR) is first
    partitioner.update_partition_info(first, 10, FOUR)  # 100 bytes: switch
    assert partitioner.is_partition_changed(first)
    second = partitioner.peek_current(FOUR)
    assert (second.partition, second.produced_bytes) == (0, 0)
    assert rng.stops == [4, 4]


def test_uniform_choice_is_among_available_partitions_only() -> None:
    cluster = StaticCluster({"t": 5}, unavailable={"t": frozenset({0, 3})})
    rng = ScriptedRng(2)
    partitioner = BuiltInPartitioner("t", 100, rng=rng)
    assert partitioner.peek_current(cluster).partition == 4  # available [1, 2, 4], index 2
    assert rng.stops == [3]


def test_uniform_choice_falls_back_to_all_partitions_when_none_is_available() -> None:
    cluster = StaticCluster({"t": 3}, unavailable={"t": frozenset({0, 1, 2})})
    rng = ScriptedRng(1)
    assert BuiltInPartitioner("t", 100, rng=rng).peek_current(cluster).partition == 1
    assert rng.stops == [3]


def test_a_held_back_switch_happens_at_twice_batch_size() -> None:
    partitioner = BuiltInPartitioner("t", 100, rng=ScriptedRng(1, 3))
    first = partitioner.peek_current(FOUR)
    partitioner.update_partition_info(first, 150, FOUR, enable_switch=False)
    assert not partitioner.is_partition_changed(first)
    partitioner.update_partition_info(first, 0, FOUR, enable_switch=True)  # batch now full
    assert partitioner.peek_current(FOUR).partition == 3

    partitioner = BuiltInPartitioner("t", 100, rng=ScriptedRng(1, 3))
    first = partitioner.peek_current(FOUR)
    partitioner.update_partition_info(first, 199, FOUR, enable_switch=False)
    assert not partitioner.is_partition_changed(first)
    partitioner.update_partition_info(first, 1, FOUR, enable_switch=False)  # 200 bytes
    assert partitioner.is_partition_changed(first)


def test_a_stale_sticky_partition_is_ignored() -> None:
    partitioner = BuiltInPartitioner("t", 10, rng=ScriptedRng(0, 1))
    stale = partitioner.peek_current(FOUR)
    partitioner.update_partition_info(stale, 10, FOUR)
    current = partitioner.peek_current(FOUR)
    partitioner.update_partition_info(stale, 1000, FOUR)
    assert partitioner.peek_current(FOUR) is current
    assert stale.produced_bytes == 10


def test_sticky_batch_size_must_be_positive() -> None:
    with pytest.raises(ValueError, match="sticky_batch_size must be >= 1, got 0"):
        BuiltInPartitioner("t", 0)


def test_a_topic_without_partitions_is_an_error() -> None:
    with pytest.raises(ValueError, match="topic 't' has no partitions"):
        BuiltInPartitioner("t", 10).peek_current(StaticCluster({"t": 0}))


@given(st.integers(min_value=0, max_value=2**32), st.lists(st.integers(1, 500), max_size=60))
def test_every_byte_goes_to_the_current_partition_and_switches_follow_the_limit(
    seed: int, appends: list[int]
) -> None:
    partitioner = BuiltInPartitioner("t", 1000, rng=random.Random(seed))
    produced_since_switch = 0
    for size in appends:
        sticky = partitioner.peek_current(FOUR)
        assert 0 <= sticky.partition < 4
        partitioner.update_partition_info(sticky, size, FOUR)
        produced_since_switch += size
        assert partitioner.is_partition_changed(sticky) == (produced_since_switch >= 1000)
        if produced_since_switch >= 1000:
            produced_since_switch = 0


# --------------------------------------------------------------------------- adaptive weights


def test_weights_are_inverse_queue_lengths_as_a_cumulative_table() -> None:
    partitioner = BuiltInPartitioner("t", 10)
    partitioner.update_load_stats(queues(0, 3, 1), partition_count=3)
    assert partitioner.load_stats == PartitionLoadStats(cumulative=(4, 5, 8), partitions=(0, 1, 2))


@pytest.mark.parametrize(("draw", "partition"), [(0, 0), (3, 0), (4, 1), (5, 2), (7, 2)])
def test_weighted_draw_picks_the_first_cumulative_weight_above_it(
    draw: int, partition: int
) -> None:
    cluster = StaticCluster({"t": 3})
    rng = ScriptedRng(draw)
    partitioner = BuiltInPartitioner("t", 10, rng=rng)
    partitioner.update_load_stats(queues(0, 3, 1), partition_count=3)
    assert partitioner.peek_current(cluster).partition == partition
    assert rng.stops == [8]


def test_equal_queues_mean_uniform_choice() -> None:
    partitioner = BuiltInPartitioner("t", 10)
    partitioner.update_load_stats(queues(2, 2, 2), partition_count=3)
    assert partitioner.load_stats is None


def test_adaptive_off_or_too_few_queues_mean_uniform_choice() -> None:
    off = BuiltInPartitioner("t", 10, adaptive=False)
    off.update_load_stats(queues(0, 5), partition_count=2)
    assert off.load_stats is None
    # One partition has no queue yet: it could never be chosen, so stay uniform.
    young = BuiltInPartitioner("t", 10)
    young.update_load_stats(queues(0, 5), partition_count=3)
    assert young.load_stats is None
    single = BuiltInPartitioner("t", 10)
    single.update_load_stats(queues(4), partition_count=1)
    assert single.load_stats is None


def test_partitions_without_leader_are_excluded_even_with_equal_queues() -> None:
    partitioner = BuiltInPartitioner("t", 10)
    states = [
        PartitionQueueState(0, 1),
        PartitionQueueState(1, 1, has_leader=False),
        PartitionQueueState(2, 1),
    ]
    partitioner.update_load_stats(states, partition_count=3)
    assert partitioner.load_stats == PartitionLoadStats(cumulative=(1, 2), partitions=(0, 2))


def test_partitions_whose_leader_stalls_past_the_availability_timeout_are_excluded() -> None:
    states = [
        PartitionQueueState(0, 0, leader_stalled_ms=500),
        PartitionQueueState(1, 0, leader_stalled_ms=501),
        PartitionQueueState(2, 2),
    ]
    partitioner = BuiltInPartitioner("t", 10, availability_timeout_ms=500)
    partitioner.update_load_stats(states, partition_count=3)
    assert partitioner.load_stats == PartitionLoadStats(cumulative=(3, 4), partitions=(0, 2))
    # 0 disables the exclusion.
    no_timeout = BuiltInPartitioner("t", 10, availability_timeout_ms=0)
    no_timeout.update_load_stats(states, partition_count=3)
    assert no_timeout.load_stats == PartitionLoadStats(cumulative=(3, 6, 7), partitions=(0, 1, 2))


def test_no_usable_partition_means_uniform_choice() -> None:
    states = [PartitionQueueState(p, 0, has_leader=False) for p in range(3)]
    partitioner = BuiltInPartitioner("t", 10)
    partitioner.update_load_stats(states, partition_count=3)
    assert partitioner.load_stats is None


def test_adaptive_choice_favours_short_queues_in_proportion() -> None:
    cluster = StaticCluster({"t": 2})
    partitioner = BuiltInPartitioner("t", 1, rng=random.Random(42))
    partitioner.update_load_stats(queues(0, 9), partition_count=2)  # weights 10 : 1
    chosen: Counter[int] = Counter()
    for _ in range(11_000):
        sticky = partitioner.peek_current(cluster)
        chosen[sticky.partition] += 1
        partitioner.update_partition_info(sticky, 1, cluster)
    assert chosen[1] / 11_000 == pytest.approx(1 / 11, abs=0.01)


@given(
    sizes=st.lists(st.integers(0, 50), min_size=2, max_size=12),
    leaders=st.data(),
    seed=st.integers(0, 2**32),
)
def test_chosen_partitions_always_have_a_leader(
    sizes: list[int], leaders: st.DataObject, seed: int
) -> None:
    has_leader = [leaders.draw(st.booleans()) for _ in sizes]
    states = [
        PartitionQueueState(partition, size, has_leader=leader)
        for partition, (size, leader) in enumerate(zip(sizes, has_leader, strict=True))
    ]
    down = frozenset(p for p, leader in enumerate(has_leader) if not leader)
    cluster = StaticCluster({"t": len(sizes)}, unavailable={"t": down})
    partitioner = BuiltInPartitioner("t", 1, rng=random.Random(seed))
    partitioner.update_load_stats(states, partition_count=len(sizes))
    for _ in range(20):
        sticky = partitioner.peek_current(cluster)
        assert sticky.partition not in down or len(down) == len(sizes)
        partitioner.update_partition_info(sticky, 1, cluster)
