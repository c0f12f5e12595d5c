"""The topic metadata a producer keeps for send(): the partition counts of the topics it sends
to, waited for on the first send to each (``max_block_ms``), saying why when no broker
answered."""

from __future__ import annotations

import time

from kafkaline.errors import IllegalStateError, KafkaError, KafkaTimeoutError
from kafkaline.net.client import NetworkClient
from kafkaline.net.cluster import ClusterMetadata
from kafkaline.producer.futures import on_io_thread
from kafkaline.producer.validation import check_topic_name

__all__ = ["TopicMetadata", "last_connection_error", "wait_on_metadata"]


class TopicMetadata:
    """The partition counts of the topics a producer sends to, for the current metadata:
    send()'s only metadata lookup (``counts.get(topic)``). The Sender replaces ``counts``
    on each metadata update, see :meth:`update`; in between, the first wait for a topic
    adds it, and nothing else changes the map."""

    def __init__(self, max_block_ms: float) -> None:
        self.max_block_ms = max_block_ms
        self.counts: dict[str, int] = {}
        #: The metadata as of the last wait or update (None before the producer starts).
        self.cluster: ClusterMetadata | None = None
        #: The producer's client, once it started.
        self.client: NetworkClient | None = None

    def partition_count(self, topic: str) -> tuple[int, float]:
        """The topic's partition count (waiting for its metadata on the first call) and the
        ``max_block_ms`` left."""
        count = self.counts.get(topic)
        if count is None:
            return self.wait(topic)
        return count, self.max_block_ms

    def wait(self, topic: str) -> tuple[int, float]:
        """The topic's partition count, waiting for its metadata if needed (the first send
        to a topic); also the time left of ``max_block_ms``."""
        client = self.client
        if client is None:  # pragma: no cover - the producer starts before it sends
            check_topic_name(topic)
            raise IllegalStateError("the producer is not started")
        cluster, remaining = wait_on_metadata(client, topic, self.max_block_ms)
        count = cluster.partition_count(topic)
        self.cluster = client.metadata.cluster
        # Only ever adds: a topic's count in a map never changes (the compiled send() keeps
        # it until the map is replaced), so a thread that waited alongside another takes
        # the count the first one put in.
        return self.counts.setdefault(topic, count), remaining

    def update(self, cluster: ClusterMetadata) -> dict[str, int]:
        """On the Sender's thread, after each metadata update: new counts for the known
        topics, returned. A topic gone from the metadata is dropped, so that its next send
        waits for it again."""
        counts = {
            topic: cluster.partition_count(topic)
            for topic in list(self.counts)  # list(): other threads may add
            if cluster.has_topic(topic)
        }
        self.cluster = cluster
        self.counts = counts
        return counts


def wait_on_metadata(
    client: NetworkClient, topic: str, max_block_ms: float
) -> tuple[ClusterMetadata, float]:
    """The cluster metadata once it knows ``topic`` (waiting up to ``max_block_ms`` if
    needed), and the time left of ``max_block_ms``."""
    check_topic_name(topic)
    metadata = client.metadata
    metadata.add_topic(topic, client.now())
    cluster = metadata.cluster
    remaining = max_block_ms
    if not cluster.has_topic(topic):
        if on_io_thread():
            raise IllegalStateError(
                f"the partitions of topic {topic!r} are not known yet (they are being "
                "fetched now), and were needed in a callback on the producer's I/O thread, "
                "which is the thread that fetches them: it cannot wait for them there "
                "(every delivery would stall for max_block_ms). Send to a new topic, or "
                "ask partitions_for() it, from another thread first"
            )
        started = time.monotonic()
        try:
            cluster = metadata.wait_for_topic(topic, remaining)
        except KafkaTimeoutError as error:
            # No broker answered: say why (README's error table promises it).
            last = last_connection_error(client) if error.__cause__ is None else None
            if last is None:
                raise
            raise KafkaTimeoutError(f"{error}; last connection error: {last}") from last
        remaining = max(0.0, remaining - (time.monotonic() - started) * 1000.0)
    return cluster, remaining


def last_connection_error(client: NetworkClient) -> KafkaError | None:
    """Why the last failed connection of ``client`` failed, if one did."""
    try:
        failures = [client.connection_error(node) for node in client.node_ids]
    except (KeyError, RuntimeError):  # the I/O thread changed the connections meanwhile
        return None
    return next((failure for failure in reversed(failures) if failure is not None), None)
