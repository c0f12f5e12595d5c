"""Before the first record: is the broker reachable, and does it know the topic?

The producer waits up to ``max.block.ms`` for a topic's metadata and then raises one
KafkaTimeoutError, whether no broker answered or the broker answered that the topic does not
exist. A command-line user needs to know which (the fixes differ), and a script needs a
distinct exit status for each, so when that wait times out the command asks the bootstrap
servers itself (see :mod:`kafkaline.cli.topic_admin`) and raises the matching error.

Checking before reading any input also means an interactive user learns about a typo in the
topic before typing the first line (the Java tool only fails at the first send).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from kafkaline.cli import topic_admin
from kafkaline.cli.errors import BrokerUnreachableError, UnknownTopicError
from kafkaline.errors import KafkaError, KafkaTimeoutError

# How long the follow-up question may take; the producer has already waited max.block.ms.
_DIAGNOSIS_TIMEOUT_S = 3.0


class _KnowsPartitions(Protocol):
    def partitions_for(self, topic: str) -> Sequence[object]: ...


def require_topic(
    producer: _KnowsPartitions, topic: str, bootstrap_servers: Sequence[str], max_block_ms: int
) -> int:
    """Wait for ``topic``'s metadata through the producer; return its partition count.

    Raises BrokerUnreachableError or UnknownTopicError when the producer's wait times out
    for one of those reasons; other errors (and timeouts with other causes) pass through.
    """
    try:
        return len(producer.partitions_for(topic))
    except KafkaTimeoutError as timeout:
        explained = explain_metadata_timeout(timeout, topic, bootstrap_servers, max_block_ms)
        if explained is timeout:
            raise
        raise explained from timeout


def explain_metadata_timeout(
    timeout: KafkaTimeoutError, topic: str, bootstrap_servers: Sequence[str], max_block_ms: int
) -> Exception:
    """The error that says why the producer found no metadata for ``topic``."""
    servers = ",".join(bootstrap_servers)
    try:
        topics = topic_admin.list_topics(servers, _DIAGNOSIS_TIMEOUT_S)
    except BrokerUnreachableError as unreachable:
        return BrokerUnreachableError(
            f"no broker answered within max.block.ms={max_block_ms}: {unreachable}"
        )
    except KafkaError:
        return timeout  # the broker answers but cannot say; the producer's message stands
    if all(known.name != topic for known in topics):
        return UnknownTopicError(f"topic {topic!r} does not exist on {servers}")
    return timeout
