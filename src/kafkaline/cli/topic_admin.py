"""Creating and listing topics for ``kafkaline topics``.

kafkaline has no admin client yet (it is a producer), so this module speaks two requests
itself, over :class:`kafkaline.testing.wire.BlockingConnection` (a documented, public helper:
one socket, one request, one response) with the declarations in :mod:`kafkaline.protocol.api`:
Metadata for all topics, and CreateTopics. It is the only part of the command line below the
public Producer API, kept in this one module so that an admin API can replace it later.

It works against any Kafka-protocol broker, not only the LocalBroker (whose
``create_topic`` runs the Tansu binary's own CLI and so needs that binary).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TypeVar

from kafkaline.cli.errors import BrokerUnreachableError, UsageError
from kafkaline.errors import (
    KafkaError,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
    raise_for_code,
)
from kafkaline.protocol import CLIENT_VERSIONS, broker_version_ranges
from kafkaline.protocol.api import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    CreateTopicsRequest,
    CreateTopicsResponse,
    MetadataRequest,
    MetadataResponse,
)
from kafkaline.protocol.api.create_topics import CreatableTopic
from kafkaline.protocol.api.metadata import MetadataRequestTopic
from kafkaline.protocol.versions import highest_common_version
from kafkaline.testing.wire import BlockingConnection

_CLIENT_ID = "kafkaline-cli"
# Kafka's own rule (org.apache.kafka.common.internals.Topic); some brokers (Tansu) check none
# of it and create topics that clients then refuse to use.
_LEGAL_TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]{1,249}")

_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class TopicInfo:
    """A topic as ``topics list`` shows it."""

    name: str
    partitions: int


def validate_topic_name(name: str) -> None:
    """Raise UsageError unless ``name`` is a legal Kafka topic name.

    >>> validate_topic_name("bad name!")
    Traceback (most recent call last):
    ...
    kafkaline.cli.errors.UsageError: 'bad name!' is not a legal topic name: 1-249 ASCII \
letters, digits, '.', '_' or '-', and not '.' or '..'
    """
    if not _LEGAL_TOPIC_NAME.fullmatch(name) or name in {".", ".."}:
        raise UsageError(
            f"{name!r} is not a legal topic name: 1-249 ASCII letters, digits, '.', '_' or "
            "'-', and not '.' or '..'"
        )


def parse_bootstrap_servers(text: str) -> list[tuple[str, int]]:
    """``"a:9092,b:9093"`` -> ``[("a", 9092), ("b", 9093)]``; IPv6 hosts in brackets.

    >>> parse_bootstrap_servers("127.0.0.1:9092, [::1]:9093")
    [('127.0.0.1', 9092), ('::1', 9093)]
    """
    servers: list[tuple[str, int]] = []
    for item in text.split(","):
        server = item.strip()
        host, separator, port_text = server.rpartition(":")
        host = host.removeprefix("[").removesuffix("]")
        if not separator or not host or not port_text.isdigit() or not 0 < int(port_text) < 65536:
            raise UsageError(f"--bootstrap-server: {server!r} is not HOST:PORT")
        servers.append((host, int(port_text)))
    return servers


@dataclass(frozen=True, slots=True)
class PartitionInfo:
    """A partition as ``topics describe`` shows it: its leader and replica node ids."""

    partition: int
    leader: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class TopicDescription:
    """A topic as ``topics describe`` shows it; ``error_code`` is the broker's (0: none)."""

    name: str
    error_code: int
    partitions: tuple[PartitionInfo, ...]

    def lines(self) -> list[str]:
        """The Java tool's layout: a topic line, then one tab-indented line per partition."""
        replication = len(self.partitions[0].replicas) if self.partitions else 0
        head = (
            f"Topic: {self.name}\tPartitionCount: {len(self.partitions)}\t"
            f"ReplicationFactor: {replication}"
        )
        return [head] + [
            f"\tTopic: {self.name}\tPartition: {p.partition}\tLeader: {p.leader}\t"
            f"Replicas: {','.join(map(str, p.replicas))}\tIsr: {','.join(map(str, p.isr))}"
            for p in self.partitions
        ]


def describe_topics(
    bootstrap_servers: str, names: list[str] | None, timeout_s: float
) -> list[TopicDescription]:
    """The named topics (``None``: all) with their partitions, leaders and replicas, in the
    order asked (all: sorted by name). A topic the broker does not know has its error code
    (UNKNOWN_TOPIC_OR_PARTITION); none is ever created by asking."""
    if names is not None:
        for name in names:
            validate_topic_name(name)

    def ask(conn: BlockingConnection, versions: Callable[[int], int]) -> MetadataResponse:
        topics = None if names is None else [MetadataRequestTopic(name=name) for name in names]
        request = MetadataRequest(topics=topics, allow_auto_topic_creation=False)
        return conn.request(request, versions(MetadataRequest.API_KEY), MetadataResponse)

    response = _with_any_broker(bootstrap_servers, timeout_s, ask)
    described = {
        topic.name: TopicDescription(
            topic.name,
            topic.error_code,
            tuple(
                PartitionInfo(
                    p.partition_index, p.leader_id, tuple(p.replica_nodes), tuple(p.isr_nodes)
                )
                for p in sorted(topic.partitions, key=lambda p: p.partition_index)
            ),
        )
        for topic in response.topics
        if topic.name is not None
    }
    order = sorted(described) if names is None else names
    return [
        described.get(name, TopicDescription(name, UnknownTopicOrPartitionError.code, ()))
        for name in order
    ]


def list_topics(bootstrap_servers: str, timeout_s: float) -> list[TopicInfo]:
    """Every topic the cluster reports (without error), sorted by name."""

    def ask(conn: BlockingConnection, versions: Callable[[int], int]) -> MetadataResponse:
        # A null topic list asks for all topics, and never auto-creates one.
        request = MetadataRequest(topics=None, allow_auto_topic_creation=False)
        return conn.request(request, versions(MetadataRequest.API_KEY), MetadataResponse)

    response = _with_any_broker(bootstrap_servers, timeout_s, ask)
    topics = [
        TopicInfo(topic.name, len(topic.partitions))
        for topic in response.topics
        if topic.error_code == 0 and topic.name is not None
    ]
    return sorted(topics, key=lambda topic: topic.name)


def create_topic(
    bootstrap_servers: str,
    name: str,
    partitions: int,
    replication_factor: int,
    timeout_s: float,
    *,
    if_not_exists: bool = False,
) -> bool:
    """Create a topic; True if it was created, False if it existed and ``if_not_exists``.

    Raises UsageError for an illegal name or count, TopicAlreadyExistsError (unless
    ``if_not_exists``) and the broker's other errors by name.
    """
    validate_topic_name(name)
    if partitions < 1:
        raise UsageError(f"--partitions must be >= 1, got {partitions}")
    if replication_factor < 1 and replication_factor != -1:
        raise UsageError(
            f"--replication-factor must be >= 1 (or -1: the broker's default), got "
            f"{replication_factor}"
        )

    def ask(conn: BlockingConnection, versions: Callable[[int], int]) -> CreateTopicsResponse:
        request = CreateTopicsRequest(
            topics=[
                CreatableTopic(
                    name=name,
                    num_partitions=partitions,
                    replication_factor=replication_factor,
                    assignments=[],
                    configs=[],
                )
            ],
            timeout_ms=int(timeout_s * 1000),
        )
        return conn.request(request, versions(CreateTopicsRequest.API_KEY), CreateTopicsResponse)

    response = _with_any_broker(bootstrap_servers, timeout_s, ask)
    result = next((topic for topic in response.topics if topic.name == name), None)
    if result is None:
        raise KafkaError(f"the broker's CreateTopics answer does not mention topic {name!r}")
    if result.error_code == TopicAlreadyExistsError.code and if_not_exists:
        return False
    raise_for_code(result.error_code, result.error_message or f"creating topic {name!r}")
    return True


def _with_any_broker(
    bootstrap_servers: str,
    timeout_s: float,
    ask: Callable[[BlockingConnection, Callable[[int], int]], _T],
) -> _T:
    """Run ``ask`` on the first bootstrap server that accepts a connection (any broker
    answers Metadata and, on KRaft clusters, forwards CreateTopics to the controller)."""
    servers = parse_bootstrap_servers(bootstrap_servers)
    failures: list[str] = []
    for host, port in servers:
        try:
            with negotiated_connection(host, port, timeout_s) as (conn, versions):
                return ask(conn, versions)
        except (OSError, TimeoutError) as error:
            # Try the next server; if none answers, all the reasons are reported together.
            failures.append(f"{host}:{port} ({error.strerror or error})")
    raise BrokerUnreachableError(f"cannot reach any bootstrap server: {', '.join(failures)}")


@contextmanager
def negotiated_connection(
    host: str, port: int, timeout_s: float
) -> Iterator[tuple[BlockingConnection, Callable[[int], int]]]:
    with BlockingConnection(host, port, timeout_s, _CLIENT_ID) as conn:
        answer = conn.request(ApiVersionsRequest(), 0, ApiVersionsResponse)
        raise_for_code(answer.error_code, "ApiVersions")
        broker_ranges = broker_version_ranges(answer)

        def version_for(api_key: int) -> int:
            return highest_common_version(
                api_key, CLIENT_VERSIONS[api_key], broker_ranges.get(api_key)
            )

        yield conn, version_for
