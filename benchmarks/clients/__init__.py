"""The client adapters, by the names used on the command line and in the results.

The order here is the order of every round (A B C D A B C D ...) and of the report.
"""

from __future__ import annotations

from collections.abc import Callable

from benchmarks.clients.aiokafka_client import AioKafka
from benchmarks.clients.base import ClientAdapter, ClientUnavailable
from benchmarks.clients.confluent_client import ConfluentKafka
from benchmarks.clients.kafka_python_client import KafkaPython
from benchmarks.clients.kafkaline_client import (
    KafkalineSend,
    KafkalineSendArrow,
    KafkalineSendBatch,
)
from benchmarks.clients.raw_client import (
    DEFAULT_CONNECTIONS,
    DEFAULT_IN_FLIGHT,
    BrokerLimit,
)
from benchmarks.workloads import Workload

#: Every ratio in the report is taken against this client.
REFERENCE_CLIENT = ConfluentKafka.name

ADAPTERS: dict[str, Callable[[Workload], ClientAdapter]] = {
    adapter.name: adapter
    for adapter in (
        KafkalineSend,
        KafkalineSendBatch,
        KafkalineSendArrow,
        ConfluentKafka,
        KafkaPython,
        AioKafka,
    )
}
ADAPTERS[BrokerLimit.name] = BrokerLimit

CLIENT_NAMES: tuple[str, ...] = tuple(ADAPTERS)


def make_adapter(
    name: str,
    workload: Workload,
    *,
    raw_connections: int = DEFAULT_CONNECTIONS,
    raw_in_flight: int = DEFAULT_IN_FLIGHT,
) -> ClientAdapter:
    """The adapter called ``name`` for ``workload``; KeyError naming the known ones."""
    if name == BrokerLimit.name:
        return BrokerLimit(workload, connections=raw_connections, in_flight=raw_in_flight)
    try:
        factory = ADAPTERS[name]
    except KeyError:
        raise KeyError(f"unknown client {name!r}; known: {', '.join(CLIENT_NAMES)}") from None
    return factory(workload)


__all__ = [
    "CLIENT_NAMES",
    "REFERENCE_CLIENT",
    "ClientAdapter",
    "ClientUnavailable",
    "make_adapter",
]
