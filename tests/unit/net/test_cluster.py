"""ClusterMetadata built from decoded MetadataResponses: leaders, availability, errors, and the
stale-epoch rule."""

from __future__ import annotations

import uuid

import pytest

from kafkaline.errors import (
    InvalidTopicError,
    TopicAuthorizationFailedError,
    UnknownTopicOrPartitionError,
)
from kafkaline.net.cluster import (
    NO_LEADER,
    BrokerNode,
    ClusterMetadata,
    PartitionMetadata,
    TopicPartition,
)
from kafkaline.producer.accumulator import AccumulatorCluster
from kafkaline.producer.partitioner import ClusterPartitions
from kafkaline.protocol.api import MetadataResponse
from kafkaline.protocol.api.metadata import (
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)

TOPIC_ID = uuid.UUID("01a20224-2e73-7f83-9cc9-e968b7a15d83")


def partition(
    index: int, leader: int, epoch: int = 0, error_code: int = 0
) -> MetadataResponsePartition:
    return MetadataResponsePartition(
        error_code=error_code,
        partition_index=index,
        leader_id=leader,
        leader_epoch=epoch,
        replica_nodes=[1, 2],
        isr_nodes=[leader] if leader >= 0 else [],
        offline_replicas=[],
    )


def response(*topics: MetadataResponseTopic, brokers: tuple[int, ...] = (1, 2)) -> MetadataResponse:
    return MetadataResponse(
        brokers=[
            MetadataResponseBroker(node_id=node, host=f"b{node}", port=9000 + node, rack="r1")
            for node in brokers
        ],
        cluster_id="cluster-a",
        controller_id=1,
        topics=list(topics),
    )


def topic(
    name: str, *partitions: MetadataResponsePartition, error_code: int = 0
) -> MetadataResponseTopic:
    return MetadataResponseTopic(
        error_code=error_code, name=name, topic_id=TOPIC_ID, partitions=list(partitions)
    )


def test_brokers_and_leaders_from_a_response() -> None:
    # Partitions arrive out of order; partition 2's leader (9) is not among the brokers.
    cluster = ClusterMetadata.from_response(
        response(topic("events", partition(1, 2), partition(0, 1), partition(2, 9)))
    )
    assert cluster.brokers[1] == BrokerNode(1, "b1", 9001, "r1")
    assert cluster.cluster_id == "cluster-a" and cluster.controller_id == 1
    assert not cluster.is_bootstrap
    assert [p.partition for p in cluster.partitions_for("events")] == [0, 1, 2]
    assert cluster.partition_count("events") == 3
    assert cluster.leader_for(TopicPartition("events", 1)) == cluster.brokers[2]
    assert cluster.leader_for(TopicPartition("events", 2)) is None
    assert cluster.available_partitions("events") == (0, 1)
    assert [p.partition for p in cluster.available_partitions_for("events")] == [0, 1]
    assert cluster.partitions_for_node(1) == (TopicPartition("events", 0),)
    assert cluster.partitions_for_node(2) == (TopicPartition("events", 1),)
    assert cluster.partitions_for_node(9) == ()
    assert cluster.topic_id("events") == TOPIC_ID
    first = cluster.partition(TopicPartition("events", 0))
    assert first is not None
    assert (first.leader_epoch, first.replicas, first.isr) == (0, (1, 2), (1,))


def test_partition_without_leader_is_not_available() -> None:
    cluster = ClusterMetadata.from_response(
        response(topic("t", partition(0, NO_LEADER, error_code=5), partition(1, 1)))
    )
    assert cluster.partition_count("t") == 2
    assert cluster.available_partitions("t") == (1,)
    no_leader = cluster.partition(TopicPartition("t", 0))
    assert no_leader is not None and no_leader.error_code == 5
    assert cluster.leader_for(TopicPartition("t", 0)) is None


def test_topic_errors_are_kept_with_no_partitions() -> None:
    cluster = ClusterMetadata.from_response(
        response(
            topic("ok", partition(0, 1)),
            topic("missing", error_code=UnknownTopicOrPartitionError.code),
            topic("secret", error_code=TopicAuthorizationFailedError.code),
            topic("bad name!", error_code=InvalidTopicError.code),
        )
    )
    assert cluster.topics == frozenset({"ok"})
    assert not cluster.has_topic("missing") and cluster.partitions_for("missing") == ()
    assert cluster.unknown_topics == frozenset({"missing"})
    assert cluster.unauthorized_topics == frozenset({"secret"})
    assert cluster.invalid_topics == frozenset({"bad name!"})
    assert cluster.topic_errors == {"missing": 3, "secret": 29, "bad name!": 17}

    unknown = cluster.topic_error("missing")
    assert isinstance(unknown, UnknownTopicOrPartitionError) and unknown.retriable
    assert "topic missing" in str(unknown)
    denied = cluster.topic_error("secret")
    assert isinstance(denied, TopicAuthorizationFailedError) and not denied.retriable
    assert cluster.topic_error("ok") is None
    assert cluster.topic_error("never asked") is None
    assert cluster.topic_error("secret") is not denied  # a fresh exception per call


def test_partition_count_of_an_unknown_topic_names_it() -> None:
    cluster = ClusterMetadata.from_response(response())
    with pytest.raises(KeyError, match="'nope' is not in the cluster metadata"):
        cluster.partition_count("nope")
    assert cluster.available_partitions("nope") == ()
    assert cluster.leader_for(TopicPartition("nope", 0)) is None


def test_stale_leader_epoch_keeps_the_newer_partition_metadata() -> None:
    newer = ClusterMetadata.from_response(response(topic("t", partition(0, 1, epoch=5))))
    # A broker that has not caught up answers with an older epoch and another leader.
    stale = response(topic("t", partition(0, 2, epoch=4), partition(1, 2, epoch=0)))
    cluster = ClusterMetadata.from_response(stale, previous=newer)
    kept = cluster.partition(TopicPartition("t", 0))
    assert kept is not None and (kept.leader, kept.leader_epoch) == (1, 5)
    assert cluster.partitions_for_node(1) == (TopicPartition("t", 0),)
    # A newer epoch replaces it.
    fresh = response(topic("t", partition(0, 2, epoch=6)))
    replaced = ClusterMetadata.from_response(fresh, previous=cluster)
    assert replaced.leader_for(TopicPartition("t", 0)) == replaced.brokers[2]


def test_bootstrap_nodes_have_negative_ids() -> None:
    cluster = ClusterMetadata.bootstrap([("a", 1), ("b", 2)])
    assert cluster.is_bootstrap
    assert [(node.node_id, node.address) for node in cluster.brokers.values()] == [
        (-1, "a:1"),
        (-2, "b:2"),
    ]
    assert all(node.is_bootstrap for node in cluster.brokers.values())
    assert cluster.topics == frozenset()


def test_it_is_what_partitioners_need() -> None:
    cluster: ClusterPartitions = ClusterMetadata(
        [BrokerNode(1, "h", 1)],
        [PartitionMetadata("t", 0, leader=1), PartitionMetadata("t", 1, leader=NO_LEADER)],
    )
    assert cluster.partition_count("t") == 2
    assert list(cluster.available_partitions("t")) == [0]


def test_it_is_what_the_accumulator_needs() -> None:
    cluster: AccumulatorCluster = ClusterMetadata(
        [BrokerNode(1, "h", 1)],
        [PartitionMetadata("t", 1, leader=1), PartitionMetadata("t", 0, leader=1)],
    )
    leader = cluster.leader_for(TopicPartition("t", 0))
    assert leader is not None and leader.node_id == 1
    assert list(cluster.partitions_for_node(1)) == [TopicPartition("t", 0), TopicPartition("t", 1)]


def test_snapshot_cannot_be_changed() -> None:
    cluster = ClusterMetadata.from_response(response(topic("t", partition(0, 1))))
    with pytest.raises(TypeError):
        cluster.brokers[3] = BrokerNode(3, "x", 1)  # type: ignore[index]
    with pytest.raises(AttributeError):
        cluster.partitions_for("t")[0].leader = 2  # type: ignore[misc]


def test_repr_counts() -> None:
    cluster = ClusterMetadata.from_response(
        response(topic("t", partition(0, 1)), topic("x", error_code=3))
    )
    assert repr(cluster) == (
        "<ClusterMetadata 2 broker(s), 1 topic(s), 1 partition(s), 1 topic error(s)>"
    )


def hinted_cluster() -> ClusterMetadata:
    return ClusterMetadata(
        [BrokerNode(1, "b1", 9092), BrokerNode(2, "b2", 9092)],
        [
            PartitionMetadata("t", 0, leader=1, leader_epoch=5, replicas=(1, 2), isr=(1, 2)),
            PartitionMetadata("t", 1, leader=2, leader_epoch=5),
        ],
        topic_errors={"gone": 3},
        cluster_id="c",
        controller_id=1,
    )


def test_a_leader_hint_with_a_newer_epoch_moves_the_partition_and_keeps_the_rest() -> None:
    cluster = hinted_cluster()
    moved = cluster.with_leaders({TopicPartition("t", 0): (2, 6)})
    assert moved is not None
    assert moved.leader_for(TopicPartition("t", 0)) == BrokerNode(2, "b2", 9092)
    partition = moved.partition(TopicPartition("t", 0))
    assert partition is not None
    assert (partition.leader_epoch, partition.replicas, partition.isr) == (6, (1, 2), (1, 2))
    assert moved.partitions_for_node(2) == (TopicPartition("t", 0), TopicPartition("t", 1))
    assert (moved.topic_errors, moved.cluster_id, moved.controller_id) == ({"gone": 3}, "c", 1)
    assert cluster.leader_for(TopicPartition("t", 0)) == BrokerNode(1, "b1", 9092)  # unchanged


def test_a_leader_hint_can_name_a_new_broker_by_its_endpoint() -> None:
    moved = hinted_cluster().with_leaders(
        {TopicPartition("t", 1): (3, 6)}, [BrokerNode(3, "b3", 9093)]
    )
    assert moved is not None
    assert moved.leader_for(TopicPartition("t", 1)) == BrokerNode(3, "b3", 9093)
    assert sorted(moved.brokers) == [1, 2, 3]


@pytest.mark.parametrize(
    "hint",
    [
        {TopicPartition("t", 0): (2, 5)},  # not newer
        {TopicPartition("t", 0): (2, 4)},  # older
        {TopicPartition("t", 0): (9, 6)},  # a node nobody named
        {TopicPartition("t", 0): (NO_LEADER, 6)},
        {TopicPartition("t", 7): (2, 6)},  # an unknown partition
    ],
)
def test_a_leader_hint_that_is_not_newer_or_names_no_known_node_is_ignored(
    hint: dict[TopicPartition, tuple[int, int]],
) -> None:
    assert hinted_cluster().with_leaders(hint) is None
