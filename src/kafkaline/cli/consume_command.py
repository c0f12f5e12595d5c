"""``kafkaline consume``: the console consumer, with the Java tool's option names.

    kafkaline consume --topic T --bootstrap-server H:P [--from-beginning] [--partition N]
        [--offset N|earliest|latest] [--max-messages N] [--timeout-ms MS]
        [--property print.key=true ...] [--isolation-level read_committed]

Partitions are assigned (no consumer group); see :mod:`kafkaline.cli.console_consumer`.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import BinaryIO, Final

from kafkaline.cli import topic_admin
from kafkaline.cli.console_consumer import (
    FORMAT_PROPERTIES,
    MessageFormat,
    ReadUncommitted,
    TransactionFilter,
    visible_records,
)
from kafkaline.cli.error_report import PROGRAM
from kafkaline.cli.errors import BrokerUnreachableError, UnknownTopicError, UsageError
from kafkaline.cli.exit_status import ExitStatus
from kafkaline.cli.properties import parse_key_value_arguments
from kafkaline.errors import UnknownTopicOrPartitionError, raise_for_code
from kafkaline.protocol.api import (
    FetchRequest,
    FetchResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    MetadataRequest,
    MetadataResponse,
)
from kafkaline.protocol.api.fetch import FetchPartition, FetchTopic
from kafkaline.protocol.api.list_offsets import ListOffsetsPartition, ListOffsetsTopic
from kafkaline.protocol.api.metadata import MetadataRequestTopic
from kafkaline.record import Record, read_record_batches
from kafkaline.testing.wire import BlockingConnection

_CONNECT_TIMEOUT_S: Final = 10.0
# A fetch waits this long on the broker for new records before answering empty.
_FETCH_MAX_WAIT_MS: Final = 200
# Fetch v13+ names topics by id; this reader asks by name.
_MAX_FETCH_VERSION: Final = 12
_LATEST: Final = -1
_EARLIEST: Final = -2
_ISOLATION_LEVELS: Final = {"read_uncommitted": 0, "read_committed": 1}

Versions = Callable[[int], int]


def add_parser(subcommands: argparse._SubParsersAction[argparse.ArgumentParser],
               parent: argparse.ArgumentParser) -> None:  # fmt: skip
    """Register ``consume`` with the Java console consumer's option names."""
    parser = subcommands.add_parser(
        "consume",
        parents=[parent],
        help="print a topic's records (the console consumer)",
        description="Print the records of --topic, from the latest offset (or "
        "--from-beginning, or --partition N --offset N), until --max-messages or "
        "--timeout-ms or Ctrl-C. Formatter properties (--property): "
        + ", ".join(FORMAT_PROPERTIES)
        + ".",
    )
    parser.add_argument("--topic", required=True, help="the topic to read")
    parser.add_argument(
        "--bootstrap-server",
        "--broker-list",
        dest="bootstrap_server",
        required=True,
        metavar="HOST:PORT[,...]",
        help="the broker(s) to connect to",
    )
    parser.add_argument(
        "--from-beginning", action="store_true", help="start at the earliest offset"
    )
    parser.add_argument("--partition", type=int, metavar="N", help="read only this partition")
    parser.add_argument(
        "--offset",
        metavar="N|earliest|latest",
        help="with --partition: where to start (default: latest)",
    )
    parser.add_argument(
        "--max-messages", type=int, metavar="N", help="stop after printing N records"
    )
    parser.add_argument(
        "--timeout-ms",
        type=int,
        metavar="MS",
        help="stop when no record has arrived for MS milliseconds",
    )
    parser.add_argument(
        "--property",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a formatter property, e.g. print.key=true (repeatable)",
    )
    parser.add_argument(
        "--isolation-level",
        choices=tuple(_ISOLATION_LEVELS),
        default="read_uncommitted",
        help="read_committed hides aborted and still-open transactions (default: read_uncommitted)",
    )
    parser.set_defaults(run=run)


@dataclass
class _Partition:
    """One assigned partition: where to fetch next and what its reader holds back."""

    index: int
    leader: int
    offset: int
    reader: TransactionFilter | ReadUncommitted


class _NodeConnections:
    """One negotiated connection per node, opened on first use and closed with ``stack``."""

    def __init__(self, stack: ExitStack, nodes: dict[int, tuple[str, int]]) -> None:
        self._stack = stack
        self._nodes = nodes
        self._open: dict[int, tuple[BlockingConnection, Versions]] = {}

    def __call__(self, node: int) -> tuple[BlockingConnection, Versions]:
        if node not in self._open:
            host, port = self._nodes[node]
            self._open[node] = self._stack.enter_context(
                topic_admin.negotiated_connection(host, port, _CONNECT_TIMEOUT_S)
            )
        return self._open[node]


@dataclass
class _Output:
    """Renders records to standard output and counts them against ``--max-messages``."""

    message_format: MessageFormat
    max_messages: int | None
    stream: BinaryIO = field(default_factory=lambda: sys.stdout.buffer)
    printed: int = 0

    @property
    def full(self) -> bool:
        return self.max_messages is not None and self.printed >= self.max_messages

    def write(self, partition: int, record: Record, kind: str) -> None:
        self.stream.write(self.message_format.render(partition, record, kind))
        self.printed += 1


def run(args: argparse.Namespace) -> int:
    """Assign the partitions, find the start offsets, fetch and print until told to stop."""
    output = _Output(
        MessageFormat.from_properties(parse_key_value_arguments(args.property, "--property")),
        args.max_messages,
    )
    _check_arguments(args)
    isolation = _ISOLATION_LEVELS[args.isolation_level]
    topic: str = args.topic
    topic_admin.validate_topic_name(topic)
    with ExitStack() as stack:
        bootstrap, versions = _connect_any(args.bootstrap_server, stack)
        nodes, leaders = _metadata(bootstrap, versions, topic, args.bootstrap_server)
        connection = _NodeConnections(stack, nodes)
        partitions = _assign(args, connection, leaders, isolation)
        _announce(args, partitions)
        try:
            _print_records(args, connection, partitions, isolation, output)
        except KeyboardInterrupt:
            print(f"\n{PROGRAM}: Processed a total of {output.printed} messages", file=sys.stderr)
            return ExitStatus.INTERRUPTED
    print(f"{PROGRAM}: Processed a total of {output.printed} messages", file=sys.stderr)
    return ExitStatus.OK


def _assign(
    args: argparse.Namespace,
    connection: _NodeConnections,
    leaders: dict[int, int],
    isolation: int,
) -> list[_Partition]:
    """The partitions to read (all, or ``--partition``), each at its start offset."""
    if args.partition is not None and args.partition not in leaders:
        raise UsageError(
            f"--partition {args.partition}: {args.topic!r} has partitions 0-{len(leaders) - 1}"
        )
    assigned = sorted(leaders) if args.partition is None else [args.partition]
    partitions = []
    for index in assigned:
        conn, node_versions = connection(leaders[index])
        start = _start_offset(conn, node_versions, args.topic, index, args, isolation)
        reader = TransactionFilter() if isolation else ReadUncommitted()
        partitions.append(_Partition(index, leaders[index], start, reader))
    return partitions


def _announce(args: argparse.Namespace, partitions: list[_Partition]) -> None:
    where = "the beginning" if args.from_beginning else "the latest offset"
    if args.offset is not None:
        where = f"offset {args.offset}"
    print(
        f"{PROGRAM}: reading {args.topic!r} partitions "
        f"{','.join(str(p.index) for p in partitions)} from {where} ({args.isolation_level})",
        file=sys.stderr,
        flush=True,
    )


def _print_records(
    args: argparse.Namespace,
    connection: _NodeConnections,
    partitions: list[_Partition],
    isolation: int,
    output: _Output,
) -> None:
    """Fetch from each partition in turn and print, until ``--max-messages`` are printed or
    nothing came for ``--timeout-ms``."""
    last_record = time.monotonic()
    while not output.full:
        got_any = False
        for partition in partitions:
            conn, node_versions = connection(partition.leader)
            for record, kind in _fetch(conn, node_versions, args.topic, partition, isolation):
                output.write(partition.index, record, kind)
                got_any = True
                if output.full:
                    break
            output.stream.flush()
            if output.full:
                break
        if got_any:
            last_record = time.monotonic()
        elif (
            args.timeout_ms is not None
            and (time.monotonic() - last_record) * 1000 >= args.timeout_ms
        ):
            return


def _check_arguments(args: argparse.Namespace) -> None:
    if args.offset is not None and args.partition is None:
        raise UsageError("--offset needs --partition (an offset is one partition's)")
    if args.offset is not None and args.from_beginning:
        raise UsageError("give --offset or --from-beginning, not both")
    offset: str | None = args.offset
    if offset is not None and offset not in ("earliest", "latest") and not offset.isdigit():
        raise UsageError(f"--offset must be a number, earliest or latest, got {offset!r}")
    if args.max_messages is not None and args.max_messages < 1:
        raise UsageError(f"--max-messages must be >= 1, got {args.max_messages}")
    if args.timeout_ms is not None and args.timeout_ms < 0:
        raise UsageError(f"--timeout-ms must be >= 0, got {args.timeout_ms}")
    if args.partition is not None and args.partition < 0:
        raise UsageError(f"--partition must be >= 0, got {args.partition}")


def _connect_any(servers: str, stack: ExitStack) -> tuple[BlockingConnection, Versions]:
    failures: list[str] = []
    for host, port in topic_admin.parse_bootstrap_servers(servers):
        try:
            return stack.enter_context(
                topic_admin.negotiated_connection(host, port, _CONNECT_TIMEOUT_S)
            )
        except (OSError, TimeoutError) as error:
            failures.append(f"{host}:{port} ({error.strerror or error})")
    raise BrokerUnreachableError(f"cannot reach any bootstrap server: {', '.join(failures)}")


def _metadata(
    conn: BlockingConnection, versions: Versions, topic: str, servers: str
) -> tuple[dict[int, tuple[str, int]], dict[int, int]]:
    """(node id -> (host, port), partition -> leader node id) for ``topic``."""
    request = MetadataRequest(
        topics=[MetadataRequestTopic(name=topic)], allow_auto_topic_creation=False
    )
    response = conn.request(request, versions(MetadataRequest.API_KEY), MetadataResponse)
    answer = next((t for t in response.topics if t.name == topic), None)
    if answer is None or answer.error_code == UnknownTopicOrPartitionError.code:
        raise UnknownTopicError(f"topic {topic!r} does not exist on {servers}")
    raise_for_code(answer.error_code, f"metadata of topic {topic!r}")
    nodes = {broker.node_id: (broker.host, broker.port) for broker in response.brokers}
    leaders = {p.partition_index: p.leader_id for p in answer.partitions}
    return nodes, leaders


def _start_offset(
    conn: BlockingConnection,
    versions: Versions,
    topic: str,
    partition: int,
    args: argparse.Namespace,
    isolation: int,
) -> int:
    if args.offset is not None and args.offset.isdigit():
        return int(args.offset)
    earliest = args.from_beginning or args.offset == "earliest"
    request = ListOffsetsRequest(
        replica_id=-1,
        isolation_level=isolation,
        topics=[
            ListOffsetsTopic(
                name=topic,
                partitions=[
                    ListOffsetsPartition(
                        partition_index=partition, timestamp=_EARLIEST if earliest else _LATEST
                    )
                ],
            )
        ],
        timeout_ms=int(_CONNECT_TIMEOUT_S * 1000),
    )
    response = conn.request(request, versions(ListOffsetsRequest.API_KEY), ListOffsetsResponse)
    answer = response.topics[0].partitions[0]
    raise_for_code(answer.error_code, f"offsets of {topic}/{partition}")
    return max(answer.offset, 0)


def _fetch(
    conn: BlockingConnection, versions: Versions, topic: str, partition: _Partition, isolation: int
) -> list[tuple[Record, str]]:
    request = FetchRequest(
        max_wait_ms=_FETCH_MAX_WAIT_MS,
        min_bytes=1,
        max_bytes=16 << 20,
        isolation_level=isolation,
        topics=[
            FetchTopic(
                topic=topic,
                partitions=[
                    FetchPartition(
                        partition=partition.index,
                        fetch_offset=partition.offset,
                        partition_max_bytes=8 << 20,
                    )
                ],
            )
        ],
    )
    version = min(versions(FetchRequest.API_KEY), _MAX_FETCH_VERSION)
    response = conn.request(request, version, FetchResponse)
    raise_for_code(response.error_code, "fetch")
    data = response.responses[0].partitions[0]
    raise_for_code(data.error_code, f"fetch {topic}/{partition.index} at {partition.offset}")
    batches = [
        batch
        for batch in read_record_batches(data.records or b"")
        if batch.next_offset > partition.offset
    ]
    if not batches:
        return []
    shown = visible_records(batches, partition.offset, partition.reader)
    partition.offset = batches[-1].next_offset
    return shown
