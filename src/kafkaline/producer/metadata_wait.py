"""Waiting for a topic's metadata on the first send to it (``max_block_ms``), and saying
why when no broker answered."""

from __future__ import annotations

import time

from kafkaline.errors import IllegalStateError, KafkaError, KafkaTimeoutError
from kafkaline.net.client import NetworkClient
from kafkaline.net.cluster import ClusterMetadata
from kafkaline.producer.futures import on_io_thread
from kafkaline.producer.validation import check_topic_name

__all__ = ["last_connection_error", "wait_on_metadata"]


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
