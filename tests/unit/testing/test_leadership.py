"""LocalCluster's leadership rules, without sockets: who leads after kills, starts and
moves, the epochs, and what Metadata announces while a move is not yet announced."""

from __future__ import annotations

import doctest

import pytest

from kafkaline.errors import ConfigError
from kafkaline.testing import _leadership
from kafkaline.testing._leadership import NO_LEADER, LeaderAndEpoch, Leadership


def make(nodes: int = 3, replication: int = 3) -> tuple[Leadership, list[float]]:
    clock = [0.0]
    return Leadership(range(1, nodes + 1), replication=replication, clock=lambda: clock[0]), clock


def test_docstring_examples() -> None:
    results = doctest.testmod(_leadership)
    assert results.attempted > 0
    assert results.failed == 0


def test_each_partition_is_led_by_its_preferred_replica() -> None:
    leadership, _ = make()
    assert [leadership.leader("t", p).leader for p in range(6)] == [1, 2, 3, 1, 2, 3]
    assert leadership.replicas(2) == (3, 1, 2)
    assert leadership.isr(2) == (3, 1, 2)
    assert leadership.offline(2) == ()


def test_a_killed_node_hands_its_partitions_to_the_next_replica_and_takes_them_back() -> None:
    leadership, _ = make()
    assert leadership.leader("t", 1) == LeaderAndEpoch(2, 0)
    leadership.kill(2)
    assert leadership.leader("t", 1) == LeaderAndEpoch(3, 1)
    assert leadership.isr(1) == (3, 1)
    assert leadership.offline(1) == (2,)
    assert leadership.leader("t", 0) == LeaderAndEpoch(1, 0)  # not led by 2: unchanged
    leadership.start(2)
    assert leadership.leader("t", 1) == LeaderAndEpoch(2, 2)


def test_no_live_replica_means_no_leader() -> None:
    leadership, _ = make(replication=1)
    leadership.kill(1)
    assert leadership.leader("t", 0).leader == NO_LEADER
    assert leadership.live == (2, 3)


def test_a_move_is_announced_late_when_asked() -> None:
    leadership, clock = make()
    leadership.move("t", 0, 2, announce_after=1.5)
    assert leadership.leader("t", 0) == LeaderAndEpoch(2, 1)
    assert leadership.announced("t", 0) == LeaderAndEpoch(1, 0)
    clock[0] = 1.5
    assert leadership.announced("t", 0) == LeaderAndEpoch(2, 1)
    assert leadership.leader("t", 1) == LeaderAndEpoch(2, 0)  # other partitions unaffected


def test_a_moved_leader_that_dies_falls_back_to_the_replicas() -> None:
    leadership, _ = make()
    leadership.move("t", 0, 3)
    leadership.kill(3)
    assert leadership.leader("t", 0) == LeaderAndEpoch(1, 2)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda leadership: leadership.kill(9), "node 9 is not in the cluster"),
        (lambda leadership: leadership.move("t", 0, 7), "node 7 is not in the cluster"),
        (
            lambda leadership: leadership.move("t", 0, 1, announce_after=-1),
            "announce_after=-1 must be >= 0",
        ),
    ],
)
def test_bad_requests_are_named(call: object, message: str) -> None:
    leadership, _ = make()
    with pytest.raises(ConfigError, match=message):
        call(leadership)  # type: ignore[operator]


def test_bad_shapes_are_refused() -> None:
    with pytest.raises(ConfigError, match="at least one node"):
        Leadership([], replication=1, clock=lambda: 0.0)
    with pytest.raises(ConfigError, match="replication=4"):
        Leadership([1, 2, 3], replication=4, clock=lambda: 0.0)
    leadership, _ = make(replication=2)
    with pytest.raises(ConfigError, match="not a replica of partition 0"):
        leadership.move("t", 0, 3)
