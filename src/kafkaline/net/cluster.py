"""An immutable snapshot of the cluster: brokers, topics, partitions and their leaders.

:class:`ClusterMetadata` is built once from a MetadataResponse and never changes, so any thread
may read it without a lock; a refresh makes a new one (:class:`~kafkaline.net.metadata.Metadata`
swaps them). Lookups the producer makes per record or per batch (a topic's partitions, a
partition's leader, the partitions led by a node) are precomputed dictionaries.

It implements the partitioners' ``ClusterPartitions`` protocol (``partition_count`` and
``available_partitions``), so the producer hands it to them directly.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import NamedTuple

from kafkaline.errors import (
    BrokerError,
    InvalidTopicError,
    TopicAuthorizationFailedError,
    UnknownTopicOrPartitionError,
    error_for_code,
)
from kafkaline.protocol.api import MetadataResponse

#: A leader id meaning "no leader known".
NO_LEADER = -1
_NO_EPOCH = -1


class TopicPartition(NamedTuple):
    """A partition of a topic."""

    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class BrokerNode:
    """A broker as the metadata describes it. Bootstrap addresses, before any metadata, are
    nodes with negative ids (-1, -2, ...), as in the Java client."""

    node_id: int
    host: str
    port: int
    rack: str | None = None

    @property
    def is_bootstrap(self) -> bool:
        """Whether this is a bootstrap address rather than a broker named by metadata."""
        return self.node_id < 0

    @property
    def address(self) -> str:
        """``host:port``."""
        return f"{self.host}:{self.port}"


@dataclass(frozen=True, slots=True)
class PartitionMetadata:
    """One partition: its leader, leader epoch and replicas.

    ``leader`` is the node id the broker reported, or :data:`NO_LEADER`; a leader that is not
    among the cluster's brokers counts as unknown (see :meth:`ClusterMetadata.leader_for`).
    """

    topic: str
    partition: int
    leader: int
    leader_epoch: int = _NO_EPOCH
    replicas: tuple[int, ...] = ()
    isr: tuple[int, ...] = ()
    offline_replicas: tuple[int, ...] = ()
    #: The partition-level error code the broker sent (e.g. LEADER_NOT_AVAILABLE), 0 if none.
    error_code: int = 0

    @property
    def topic_partition(self) -> TopicPartition:
        """``(topic, partition)``."""
        return TopicPartition(self.topic, self.partition)


class ClusterMetadata:
    """A consistent, immutable view of the cluster.

    >>> cluster = ClusterMetadata(
    ...     brokers=[BrokerNode(1, "b1", 9092)],
    ...     partitions=[PartitionMetadata("events", 0, leader=1),
    ...                 PartitionMetadata("events", 1, leader=NO_LEADER)],
    ...     topic_errors={"missing": 3})
    >>> cluster.partition_count("events"), cluster.available_partitions("events")
    (2, (0,))
    >>> cluster.leader_for(TopicPartition("events", 0))
    BrokerNode(node_id=1, host='b1', port=9092, rack=None)
    >>> cluster.unknown_topics
    frozenset({'missing'})
    """

    __slots__ = (
        "_available",
        "_brokers",
        "_by_node",
        "_by_partition",
        "_by_topic",
        "_cluster_id",
        "_controller_id",
        "_internal_topics",
        "_is_bootstrap",
        "_leaders",
        "_topic_errors",
        "_topic_ids",
    )

    def __init__(
        self,
        brokers: Iterable[BrokerNode],
        partitions: Iterable[PartitionMetadata] = (),
        *,
        topic_errors: Mapping[str, int] | None = None,
        topic_ids: Mapping[str, uuid.UUID] | None = None,
        internal_topics: Iterable[str] = (),
        cluster_id: str | None = None,
        controller_id: int = NO_LEADER,
        is_bootstrap: bool = False,
    ) -> None:
        self._brokers: Mapping[int, BrokerNode] = MappingProxyType(
            {broker.node_id: broker for broker in brokers}
        )
        by_topic: dict[str, list[PartitionMetadata]] = {}
        for partition in partitions:
            by_topic.setdefault(partition.topic, []).append(partition)
        self._by_topic: dict[str, tuple[PartitionMetadata, ...]] = {
            topic: tuple(sorted(items, key=lambda item: item.partition))
            for topic, items in by_topic.items()
        }
        self._by_partition: dict[TopicPartition, PartitionMetadata] = {
            item.topic_partition: item for items in self._by_topic.values() for item in items
        }
        known = self._brokers
        self._available: dict[str, tuple[int, ...]] = {
            topic: tuple(item.partition for item in items if item.leader in known)
            for topic, items in self._by_topic.items()
        }
        by_node: dict[int, list[TopicPartition]] = {}
        # The accumulator asks for the leader of every partition with data on every Sender
        # pass (15 times per record in the latency workload): one lookup, not two.
        self._leaders: dict[TopicPartition, BrokerNode] = {}
        for tp, item in self._by_partition.items():
            if item.leader in known:
                by_node.setdefault(item.leader, []).append(tp)
                self._leaders[tp] = known[item.leader]
        self._by_node: dict[int, tuple[TopicPartition, ...]] = {
            node: tuple(tps) for node, tps in by_node.items()
        }
        self._topic_errors: Mapping[str, int] = MappingProxyType(dict(topic_errors or {}))
        self._topic_ids: Mapping[str, uuid.UUID] = MappingProxyType(dict(topic_ids or {}))
        self._internal_topics = frozenset(internal_topics)
        self._cluster_id = cluster_id
        self._controller_id = controller_id
        self._is_bootstrap = is_bootstrap

    # ------------------------------------------------------------------ construction

    @classmethod
    def bootstrap(cls, addresses: Sequence[tuple[str, int]]) -> ClusterMetadata:
        """The cluster before any metadata: one node per bootstrap address, ids -1, -2, ...

        >>> ClusterMetadata.bootstrap([("a", 9092), ("b", 9092)]).brokers[-2].host
        'b'
        """
        return cls(
            [BrokerNode(-(index + 1), host, port) for index, (host, port) in enumerate(addresses)],
            is_bootstrap=True,
        )

    def rebootstrapped(self, addresses: Sequence[tuple[str, int]]) -> ClusterMetadata:
        """The bootstrap view (see :meth:`bootstrap`) that still knows this snapshot's topics
        and partitions, though none of their leaders (KIP-899's re-bootstrap): ``send()`` can
        still choose partitions while the client finds a broker again.

        >>> cluster = ClusterMetadata([BrokerNode(1, "b1", 9092)], [PartitionMetadata("t", 0, 1)])
        >>> again = cluster.rebootstrapped([("a", 9092)])
        >>> again.is_bootstrap, again.partition_count("t"), again.leader_for(TopicPartition("t", 0))
        (True, 1, None)
        """
        return ClusterMetadata(
            [BrokerNode(-(index + 1), host, port) for index, (host, port) in enumerate(addresses)],
            self._by_partition.values(),
            topic_errors=self._topic_errors,
            topic_ids=self._topic_ids,
            internal_topics=self._internal_topics,
            cluster_id=self._cluster_id,
            is_bootstrap=True,
        )

    @classmethod
    def from_response(
        cls, response: MetadataResponse, previous: ClusterMetadata | None = None
    ) -> ClusterMetadata:
        """Build from a decoded MetadataResponse.

        Topics with an error (unknown, unauthorized, invalid, leader not yet elected) have no
        partitions; their error codes are kept in :attr:`topic_errors`. If ``previous`` knows
        a partition with a newer leader epoch than the response (a broker with stale
        metadata answered), the previous partition is kept, as the Java client does.
        """
        brokers = [
            BrokerNode(broker.node_id, broker.host, broker.port, broker.rack)
            for broker in response.brokers
        ]
        partitions: list[PartitionMetadata] = []
        topic_errors: dict[str, int] = {}
        topic_ids: dict[str, uuid.UUID] = {}
        internal: list[str] = []
        for topic in response.topics:
            name = topic.name
            if name is None:  # only for requests by topic id, which kafkaline does not make
                continue
            if topic.error_code:
                topic_errors[name] = topic.error_code
                continue
            if topic.topic_id.int:
                topic_ids[name] = topic.topic_id
            if topic.is_internal:
                internal.append(name)
            for item in topic.partitions:
                fresh = PartitionMetadata(
                    topic=name,
                    partition=item.partition_index,
                    leader=item.leader_id,
                    leader_epoch=item.leader_epoch,
                    replicas=tuple(item.replica_nodes),
                    isr=tuple(item.isr_nodes),
                    offline_replicas=tuple(item.offline_replicas),
                    error_code=item.error_code,
                )
                known = previous.partition(fresh.topic_partition) if previous else None
                if (
                    known is not None
                    and fresh.leader_epoch != _NO_EPOCH
                    and known.leader_epoch > fresh.leader_epoch
                ):
                    fresh = known
                partitions.append(fresh)
        return cls(
            brokers,
            partitions,
            topic_errors=topic_errors,
            topic_ids=topic_ids,
            internal_topics=internal,
            cluster_id=response.cluster_id,
            controller_id=response.controller_id,
        )

    def with_leaders(
        self,
        leaders: Mapping[TopicPartition, tuple[int, int]],
        endpoints: Iterable[BrokerNode] = (),
    ) -> ClusterMetadata | None:
        """A copy in which each partition of ``leaders`` (-> ``(leader id, leader epoch)``)
        is led by that node, from a broker's hint (KIP-951); None when no hint changes
        anything. A hint is taken only for a known partition, with an epoch newer than the
        one known, naming a node that is known or among ``endpoints`` (which are added to
        the brokers), as the Java client does.

        >>> cluster = ClusterMetadata([BrokerNode(1, "b1", 9092)],
        ...                           [PartitionMetadata("t", 0, leader=1, leader_epoch=3)])
        >>> moved = cluster.with_leaders({TopicPartition("t", 0): (2, 4)},
        ...                              [BrokerNode(2, "b2", 9092)])
        >>> moved.leader_for(TopicPartition("t", 0)).host
        'b2'
        >>> cluster.with_leaders({TopicPartition("t", 0): (2, 3)}) is None  # not newer
        True
        """
        brokers = dict(self._brokers)
        hinted = {node.node_id: node for node in endpoints}
        changed: dict[TopicPartition, PartitionMetadata] = {}
        for tp, (leader, epoch) in leaders.items():
            known = self._by_partition.get(tp)
            if known is None or epoch <= known.leader_epoch or leader == NO_LEADER:
                continue
            node = hinted.get(leader) or brokers.get(leader)
            if node is None:
                continue
            brokers[leader] = node
            changed[tp] = replace(known, leader=leader, leader_epoch=epoch, error_code=0)
        if not changed:
            return None
        return ClusterMetadata(
            brokers.values(),
            [changed.get(tp, item) for tp, item in self._by_partition.items()],
            topic_errors=self._topic_errors,
            topic_ids=self._topic_ids,
            internal_topics=self._internal_topics,
            cluster_id=self._cluster_id,
            controller_id=self._controller_id,
        )

    # ------------------------------------------------------------------ brokers

    @property
    def brokers(self) -> Mapping[int, BrokerNode]:
        """Node id -> broker."""
        return self._brokers

    def node(self, node_id: int) -> BrokerNode | None:
        """The broker with ``node_id``, or None."""
        return self._brokers.get(node_id)

    @property
    def is_bootstrap(self) -> bool:
        """Whether this is the bootstrap view (no metadata received yet)."""
        return self._is_bootstrap

    @property
    def cluster_id(self) -> str | None:
        """The cluster's id, if the broker sent one."""
        return self._cluster_id

    @property
    def controller_id(self) -> int:
        """The controller's node id, -1 if unknown."""
        return self._controller_id

    # ------------------------------------------------------------------ topics and partitions

    @property
    def topics(self) -> frozenset[str]:
        """Topics with partitions in this snapshot."""
        return frozenset(self._by_topic)

    def has_topic(self, topic: str) -> bool:
        """Whether ``topic``'s partitions are known."""
        return topic in self._by_topic

    def topic_id(self, topic: str) -> uuid.UUID | None:
        """The topic's id (metadata v10+), or None."""
        return self._topic_ids.get(topic)

    def is_internal(self, topic: str) -> bool:
        """Whether the broker marked ``topic`` internal (e.g. ``__consumer_offsets``)."""
        return topic in self._internal_topics

    def partitions_for(self, topic: str) -> tuple[PartitionMetadata, ...]:
        """Every partition of ``topic``, in partition order; empty if the topic is unknown."""
        return self._by_topic.get(topic, ())

    def partition_count(self, topic: str) -> int:
        """How many partitions ``topic`` has. Raises KeyError naming the topic if unknown."""
        try:
            return len(self._by_topic[topic])
        except KeyError:
            raise KeyError(f"topic {topic!r} is not in the cluster metadata") from None

    def available_partitions(self, topic: str) -> tuple[int, ...]:
        """Partition numbers of ``topic`` whose leader is a known broker, ascending; empty
        if the topic is unknown."""
        return self._available.get(topic, ())

    def available_partitions_for(self, topic: str) -> tuple[PartitionMetadata, ...]:
        """The partitions of ``topic`` whose leader is a known broker."""
        known = self._brokers
        return tuple(item for item in self.partitions_for(topic) if item.leader in known)

    def partition(self, tp: TopicPartition) -> PartitionMetadata | None:
        """The partition's metadata, or None if unknown."""
        return self._by_partition.get(tp)

    def leader_for(self, tp: TopicPartition) -> BrokerNode | None:
        """The broker leading ``tp``, or None (unknown partition, no leader, or a leader that
        is not among the brokers)."""
        return self._leaders.get(tp)

    def partitions_for_node(self, node_id: int) -> tuple[TopicPartition, ...]:
        """The partitions ``node_id`` leads (what the producer drains for that node)."""
        return self._by_node.get(node_id, ())

    # ------------------------------------------------------------------ errors

    @property
    def topic_errors(self) -> Mapping[str, int]:
        """Topic -> the error code the broker sent for it (topics without error are absent)."""
        return self._topic_errors

    def topic_error(self, topic: str) -> BrokerError | None:
        """The broker's error for ``topic`` as an exception naming the topic, or None.

        >>> ClusterMetadata([], topic_errors={"t": 29}).topic_error("t")
        TopicAuthorizationFailedError('[Error 29] TOPIC_AUTHORIZATION_FAILED: topic t')
        """
        code = self._topic_errors.get(topic)
        if not code:
            return None
        return error_for_code(code)(f"topic {topic}")

    def _topics_with(self, error: type[BrokerError]) -> frozenset[str]:
        return frozenset(topic for topic, code in self._topic_errors.items() if code == error.code)

    @property
    def unknown_topics(self) -> frozenset[str]:
        """Topics the broker does not know (UNKNOWN_TOPIC_OR_PARTITION)."""
        return self._topics_with(UnknownTopicOrPartitionError)

    @property
    def unauthorized_topics(self) -> frozenset[str]:
        """Topics this client may not describe (TOPIC_AUTHORIZATION_FAILED)."""
        return self._topics_with(TopicAuthorizationFailedError)

    @property
    def invalid_topics(self) -> frozenset[str]:
        """Topic names the broker refused as invalid (INVALID_TOPIC_EXCEPTION)."""
        return self._topics_with(InvalidTopicError)

    def __repr__(self) -> str:
        kind = "bootstrap " if self._is_bootstrap else ""
        return (
            f"<ClusterMetadata {kind}{len(self._brokers)} broker(s), "
            f"{len(self._by_topic)} topic(s), {len(self._by_partition)} partition(s), "
            f"{len(self._topic_errors)} topic error(s)>"
        )
