"""The two questions LocalBroker asks its broker: "are you serving?" (ApiVersions) and "which
topics do you have?" (Metadata for all topics). Both go through kafkaline.protocol."""

from __future__ import annotations

from kafkaline.errors import KafkaError
from kafkaline.protocol.api import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    MetadataRequest,
    MetadataResponse,
)
from kafkaline.testing.wire import BlockingConnection

_CLIENT_ID = "kafkaline-testing-probe"


def _api_versions_ready(host: str, port: int, timeout: float) -> bool:
    """Whether a Kafka broker at host:port answers ApiVersions v0 without error.

    Never raises for network trouble: a broker that is still starting refuses or resets.

    >>> _api_versions_ready("127.0.0.1", 1, timeout=0.1)
    False
    """
    try:
        with BlockingConnection(host, port, timeout, _CLIENT_ID) as conn:
            response = conn.request(ApiVersionsRequest(), 0, ApiVersionsResponse)
    except (OSError, KafkaError, TypeError):
        return False
    return response.error_code == 0


def _topic_partition_counts(host: str, port: int, timeout: float) -> dict[str, int] | None:
    """Every topic the broker reports without error, with its partition count, from one
    Metadata v1 request for all topics. None when the broker could not be asked.

    Asking for all topics (a null list) rather than by name matters: a by-name request may
    auto-create the topic on brokers that do that.
    """
    try:
        with BlockingConnection(host, port, timeout, _CLIENT_ID) as conn:
            response = conn.request(MetadataRequest(topics=None), 1, MetadataResponse)
    except (OSError, KafkaError, TypeError):
        return None
    return {
        topic.name: len(topic.partitions)
        for topic in response.topics
        if topic.error_code == 0 and topic.name is not None
    }
