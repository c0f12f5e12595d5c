"""Before the first record: is the broker reachable, and does it know the topic?

The producer waits up to ``max.block.ms`` for a topic's metadata and then raises one
KafkaTimeoutError, whether no broker answered or the broker answered that the topic does not
exist. A command-line user needs to know which (the fixes differ), and a script needs a
distinct exit status for each, so when that wait times out the command asks the bootstrap
servers itself (see :mod:`kafkaline.cli.topic_admin`) and raises the matching error.

Checking before reading any input also means an interactive user learns about a typo in the
topic before typing the first line (the Java tool only fails at the first send).

On plaintext connections the command first asks the bootstrap servers itself, so that it
never waits in silence: a topic the broker reports unknown (the producer never asks for it to
be created) fails at once, and a broker that does not answer is named at once, with how long
the producer will keep trying.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Protocol

from kafkaline.cli import topic_admin
from kafkaline.cli.error_report import PROGRAM
from kafkaline.cli.errors import BrokerUnreachableError, UnknownTopicError
from kafkaline.errors import (
    KafkaError,
    KafkaTimeoutError,
    UnknownTopicOrPartitionError,
    error_for_code,
)

# How long the follow-up question may take; the producer has already waited max.block.ms.
_DIAGNOSIS_TIMEOUT_S = 3.0
# How long the first question may take before the producer's own wait.
_PRECHECK_TIMEOUT_S = 3.0


class _KnowsPartitions(Protocol):
    def partitions_for(self, topic: str) -> Sequence[object]: ...


def require_topic(
    producer: _KnowsPartitions,
    topic: str,
    bootstrap_servers: Sequence[str],
    max_block_ms: int,
    *,
    plaintext: bool = False,
) -> int:
    """Wait for ``topic``'s metadata through the producer; return its partition count.

    With ``plaintext`` connections, the bootstrap servers are asked first (see the module's
    docstring). Raises BrokerUnreachableError or UnknownTopicError when the producer's wait
    times out for one of those reasons; other errors (and timeouts with other causes) pass
    through.
    """
    if plaintext:
        precheck_topic(topic, bootstrap_servers, max_block_ms)
    try:
        return len(producer.partitions_for(topic))
    except KafkaTimeoutError as timeout:
        explained = explain_metadata_timeout(timeout, topic, bootstrap_servers, max_block_ms)
        if explained is timeout:
            raise
        raise explained from timeout


def precheck_topic(topic: str, bootstrap_servers: Sequence[str], max_block_ms: int) -> None:
    """Ask the bootstrap servers about ``topic``: raise UnknownTopicError if the broker does not
    know it; say on stderr what the producer is about to wait for if no broker answers or
    the topic is not ready."""
    servers = ",".join(bootstrap_servers)
    timeout_s = min(_PRECHECK_TIMEOUT_S, max(max_block_ms, 1) / 1000)
    try:
        [described] = topic_admin.describe_topics(servers, [topic], timeout_s)
    except BrokerUnreachableError as unreachable:
        _say(f"waiting up to max.block.ms={max_block_ms} ms for a broker: {unreachable}")
        return
    except KafkaError:
        return  # the broker answers but cannot say; the producer's own wait decides
    if described.error_code == UnknownTopicOrPartitionError.code:
        raise UnknownTopicError(f"topic {topic!r} does not exist on {servers}")
    if described.error_code != 0:
        reason = error_for_code(described.error_code).__name__
        _say(f"waiting up to max.block.ms={max_block_ms} ms for topic {topic!r}: {reason}")


def _say(message: str) -> None:
    print(f"{PROGRAM}: {message}", file=sys.stderr, flush=True)


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
