"""TopicMetadata: the partition counts send() looks up, and how a metadata update changes them."""

from __future__ import annotations

from kafkaline.net.cluster import BrokerNode, ClusterMetadata, PartitionMetadata
from kafkaline.producer.metadata_wait import TopicMetadata


def cluster_of(partitions: dict[str, int]) -> ClusterMetadata:
    return ClusterMetadata(
        [BrokerNode(1, "b1", 9092)],
        [
            PartitionMetadata(topic, p, leader=1)
            for topic, count in partitions.items()
            for p in range(count)
        ],
    )


def test_a_known_topic_is_counted_without_waiting_and_keeps_all_of_max_block_ms() -> None:
    topics = TopicMetadata(max_block_ms=750.0)
    topics.counts["t"] = 3
    assert topics.partition_count("t") == (3, 750.0)


def test_an_update_recounts_known_topics_and_drops_those_gone() -> None:
    topics = TopicMetadata(max_block_ms=750.0)
    topics.counts.update({"grown": 2, "gone": 1})
    before = topics.counts
    cluster = cluster_of({"grown": 5, "never-sent-to": 4})
    counts = topics.update(cluster)
    assert counts == {"grown": 5} and topics.counts is counts
    assert topics.cluster is cluster
    # Replaced, never changed: a reader holding the old map (the compiled send) sees it whole.
    assert before == {"grown": 2, "gone": 1}
