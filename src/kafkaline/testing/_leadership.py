"""Who leads which partition in a :class:`~kafkaline.testing.LocalCluster`: a pure function of
the live nodes and the moves asked for, with a leader epoch that grows at every change.

No sockets, no threads: LocalCluster holds one under its lock and asks it on every Metadata
and Produce request; unit tests ask it with a fake clock.

    replicas(p)   the node ids rotated by the partition index: partition 0 of a 3-node
                  cluster has replicas (1, 2, 3), partition 1 has (2, 3, 1), ...
    leader        a node named by move() if it is live, else the first live replica
                  (so a node started again leads its partitions again), else none (-1)
    epoch         0 at the first look, +1 at every change of leader
    announced     what Metadata answers: the leader, except for ``announce_after`` seconds
                  after a move(), during which the old leader and epoch are reported (a
                  real cluster's metadata also lags behind its leadership)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import NamedTuple

from kafkaline.errors import ConfigError

#: The leader id of a partition none of whose replicas is live.
NO_LEADER = -1


class LeaderAndEpoch(NamedTuple):
    """A partition's leader (or :data:`NO_LEADER`) and its leader epoch."""

    leader: int
    epoch: int


class _Stale(NamedTuple):
    announced: LeaderAndEpoch
    until: float


class Leadership:
    """Leaders and epochs of every partition of a cluster of ``node_ids``.

    >>> leadership = Leadership([1, 2, 3], replication=3, clock=lambda: 0.0)
    >>> leadership.replicas(1)
    (2, 3, 1)
    >>> leadership.leader("t", 1)
    LeaderAndEpoch(leader=2, epoch=0)
    >>> leadership.kill(2); leadership.leader("t", 1)
    LeaderAndEpoch(leader=3, epoch=1)
    >>> leadership.start(2); leadership.leader("t", 1)
    LeaderAndEpoch(leader=2, epoch=2)
    """

    def __init__(
        self, node_ids: Iterable[int], *, replication: int, clock: Callable[[], float]
    ) -> None:
        self._nodes = tuple(node_ids)
        if not self._nodes:
            raise ConfigError("a cluster needs at least one node")
        if not 1 <= replication <= len(self._nodes):
            raise ConfigError(
                f"replication={replication!r} must be between 1 and the number of nodes "
                f"({len(self._nodes)})"
            )
        self._replication = replication
        self._clock = clock
        self._live = set(self._nodes)
        self._moved: dict[tuple[str, int], int] = {}
        self._known: dict[tuple[str, int], LeaderAndEpoch] = {}
        self._stale: dict[tuple[str, int], _Stale] = {}

    @property
    def nodes(self) -> tuple[int, ...]:
        """Every node id, live or not, in order."""
        return self._nodes

    @property
    def live(self) -> tuple[int, ...]:
        """The live node ids, in order."""
        return tuple(node for node in self._nodes if node in self._live)

    def is_live(self, node: int) -> bool:
        """Whether ``node`` is live."""
        return node in self._live

    def replicas(self, partition: int) -> tuple[int, ...]:
        """The partition's replicas, its preferred leader first."""
        count = len(self._nodes)
        return tuple(self._nodes[(partition + i) % count] for i in range(self._replication))

    def isr(self, partition: int) -> tuple[int, ...]:
        """The live replicas (every live replica is in sync: they share one log)."""
        return tuple(node for node in self.replicas(partition) if node in self._live)

    def offline(self, partition: int) -> tuple[int, ...]:
        """The replicas that are down."""
        return tuple(node for node in self.replicas(partition) if node not in self._live)

    def _check_node(self, node: int) -> None:
        if node not in self._nodes:
            raise ConfigError(f"node {node!r} is not in the cluster (nodes: {list(self._nodes)})")

    def kill(self, node: int) -> None:
        """Mark ``node`` down: its partitions go to their next live replica."""
        self._check_node(node)
        self._live.discard(node)
        self._resolve_known()

    def start(self, node: int) -> None:
        """Mark ``node`` live again: it leads its preferred partitions again."""
        self._check_node(node)
        self._live.add(node)
        self._resolve_known()

    def _resolve_known(self) -> None:
        # Every change of leader bumps the epoch, even one nobody asked about in between.
        for topic, partition in list(self._known):
            self.leader(topic, partition)

    def move(self, topic: str, partition: int, node: int, *, announce_after: float = 0.0) -> None:
        """Make ``node`` the leader of ``topic``/``partition`` (while it is live). For
        ``announce_after`` seconds Metadata still names the old leader and epoch."""
        self._check_node(node)
        if node not in self.replicas(partition):
            raise ConfigError(
                f"node {node} is not a replica of partition {partition} "
                f"(replicas: {list(self.replicas(partition))})"
            )
        if announce_after < 0:
            raise ConfigError(f"announce_after={announce_after!r} must be >= 0")
        before = self.leader(topic, partition)
        self._moved[(topic, partition)] = node
        if self.leader(topic, partition) != before and announce_after > 0:
            self._stale[(topic, partition)] = _Stale(before, self._clock() + announce_after)

    def leader(self, topic: str, partition: int) -> LeaderAndEpoch:
        """Who leads the partition now, and its epoch."""
        key = (topic, partition)
        moved = self._moved.get(key)
        if moved is not None and moved in self._live:
            leader = moved
        else:
            leader = next(
                (node for node in self.replicas(partition) if node in self._live), NO_LEADER
            )
        known = self._known.get(key)
        if known is None:
            known = LeaderAndEpoch(leader, 0)
        elif known.leader != leader:
            known = LeaderAndEpoch(leader, known.epoch + 1)
        else:
            return known
        self._known[key] = known
        return known

    def announced(self, topic: str, partition: int) -> LeaderAndEpoch:
        """What Metadata reports for the partition (see the module docstring)."""
        current = self.leader(topic, partition)
        stale = self._stale.get((topic, partition))
        if stale is None:
            return current
        if self._clock() >= stale.until:
            del self._stale[(topic, partition)]
            return current
        return stale.announced
