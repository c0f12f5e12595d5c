"""``kafkaline topics create|list|describe``, and the Java ``kafka-topics.sh`` shape of the same
commands: ``kafkaline topics --create --topic X --partitions N``, ``--list``, ``--describe``."""

from __future__ import annotations

import argparse
import sys

from kafkaline.cli import topic_admin
from kafkaline.cli.errors import UnknownTopicError, UsageError
from kafkaline.cli.exit_status import ExitStatus
from kafkaline.errors import UnknownTopicOrPartitionError, raise_for_code

_DEFAULT_TIMEOUT_S = 10.0


def add_parser(subcommands: argparse._SubParsersAction[argparse.ArgumentParser],
               parent: argparse.ArgumentParser) -> None:  # fmt: skip
    """Register ``topics`` with its ``create``, ``list`` and ``describe`` subcommands, and the
    Java tool's ``--create``/``--list``/``--describe`` flags on ``topics`` itself."""
    connection = _connection_options()
    creation = _creation_options()
    topics = subcommands.add_parser(
        "topics",
        parents=[parent, connection, creation],
        help="create, list and describe topics",
        description="Manage topics: 'topics ACTION ...', or kafka-topics.sh's flags "
        "('topics --create --topic X --partitions N', '--list', '--describe [--topic X]').",
    )
    java_actions = topics.add_mutually_exclusive_group()
    for action in ("create", "list", "describe"):
        java_actions.add_argument(
            f"--{action}",
            dest="java_action",
            action="store_const",
            const=action,
            help=f"as 'topics {action}'",
        )
    topics.add_argument("--topic", metavar="NAME", help="the topic (with --create, --describe)")
    topics.set_defaults(run=run_java_shape, java_action=None)
    actions = topics.add_subparsers(dest="topics_action", metavar="ACTION")
    _add_create(actions, [parent, connection, creation])
    _add_list(actions, [parent, connection])
    _add_describe(actions, [parent, connection])


def _connection_options() -> argparse.ArgumentParser:
    """The broker to ask and how long to wait: shared by ``topics`` and its actions."""
    connection = argparse.ArgumentParser(add_help=False)
    connection.add_argument(
        "--bootstrap-server",
        "--broker-list",
        dest="bootstrap_server",
        metavar="HOST:PORT[,...]",
        help="the broker(s) to ask (--broker-list: the old Java name)",
    )
    connection.add_argument(
        "--timeout",
        type=float,
        default=_DEFAULT_TIMEOUT_S,
        metavar="SECONDS",
        help=f"how long to wait for the broker (default: {_DEFAULT_TIMEOUT_S:g})",
    )
    return connection


def _creation_options() -> argparse.ArgumentParser:
    """What a new topic gets: shared by ``topics --create`` and ``topics create``."""
    creation = argparse.ArgumentParser(add_help=False)
    creation.add_argument(
        "--partitions", type=int, default=1, metavar="N", help="partitions (default: 1)"
    )
    creation.add_argument(
        "--replication-factor",
        type=int,
        default=-1,
        metavar="N",
        help="replicas per partition (default: -1, the broker's default)",
    )
    creation.add_argument(
        "--if-not-exists",
        action="store_true",
        help="succeed without doing anything if the topic exists",
    )
    return creation


def _add_create(
    actions: argparse._SubParsersAction[argparse.ArgumentParser],
    parents: list[argparse.ArgumentParser],
) -> None:
    create = actions.add_parser(
        "create", parents=parents, help="create a topic", description="Create a topic."
    )
    create.add_argument("name", metavar="NAME", nargs="?", help="the topic's name")
    create.add_argument("--topic", metavar="NAME", help="the topic's name (instead of NAME)")
    create.set_defaults(run=run_create)


def _add_list(
    actions: argparse._SubParsersAction[argparse.ArgumentParser],
    parents: list[argparse.ArgumentParser],
) -> None:
    listing = actions.add_parser(
        "list",
        parents=parents,
        help="list topics",
        description="Print the cluster's topics, one per line.",
    )
    listing.add_argument(
        "--long",
        action="store_true",
        help="print each topic's partition count too (NAME<TAB>PARTITIONS)",
    )
    listing.set_defaults(run=run_list)


def _add_describe(
    actions: argparse._SubParsersAction[argparse.ArgumentParser],
    parents: list[argparse.ArgumentParser],
) -> None:
    describe = actions.add_parser(
        "describe",
        parents=parents,
        help="show topics' partitions, leaders and replicas",
        description="Show each topic's partitions with their leader, replicas and in-sync "
        "replicas (node ids), as kafka-topics.sh --describe does.",
    )
    describe.add_argument("names", metavar="NAME", nargs="*", help="the topics (default: all)")
    describe.add_argument("--topic", metavar="NAME", help="a topic (as NAME)")
    describe.set_defaults(run=run_describe)


def run_java_shape(args: argparse.Namespace) -> int:
    """``topics --create|--list|--describe``: the subcommand the flag names."""
    if args.java_action == "create":
        args.name = None
        return run_create(args)
    if args.java_action == "list":
        args.long = False
        return run_list(args)
    if args.java_action == "describe":
        args.names = []
        return run_describe(args)
    raise UsageError(
        "topics: give an action: create, list or describe (or kafka-topics.sh's --create, "
        "--list, --describe)"
    )


def _bootstrap_server(args: argparse.Namespace) -> str:
    if args.bootstrap_server is None:
        raise UsageError("topics: --bootstrap-server HOST:PORT is required")
    server: str = args.bootstrap_server
    return server


def run_create(args: argparse.Namespace) -> int:
    """Create the topic; say so on stderr (stdout stays empty for scripts)."""
    if args.name is not None and args.topic is not None and args.name != args.topic:
        raise UsageError(f"topics create: two names, {args.name!r} and --topic {args.topic!r}")
    name = args.name if args.name is not None else args.topic
    if name is None:
        raise UsageError("topics create: give the topic's name (NAME or --topic NAME)")
    created = topic_admin.create_topic(
        _bootstrap_server(args),
        name,
        args.partitions,
        args.replication_factor,
        args.timeout,
        if_not_exists=args.if_not_exists,
    )
    what = (
        f"created with {args.partitions} partitions" if created else "exists already, left as it is"
    )
    print(f"kafkaline: topic {name!r} {what}", file=sys.stderr)
    return ExitStatus.OK


def run_list(args: argparse.Namespace) -> int:
    """Print the topics, sorted, one per line."""
    for topic in topic_admin.list_topics(_bootstrap_server(args), args.timeout):
        print(f"{topic.name}\t{topic.partitions}" if args.long else topic.name)
    return ExitStatus.OK


def run_describe(args: argparse.Namespace) -> int:
    """Print each topic with its partitions; a topic the broker does not know is exit 6."""
    names: list[str] = list(args.names)
    if args.topic is not None:
        names.append(args.topic)
    server = _bootstrap_server(args)
    described = topic_admin.describe_topics(server, names or None, args.timeout)
    unknown = [t.name for t in described if t.error_code == UnknownTopicOrPartitionError.code]
    for topic in described:
        if topic.error_code == 0:
            print("\n".join(topic.lines()))
        elif topic.error_code != UnknownTopicOrPartitionError.code:
            raise_for_code(topic.error_code, f"describing topic {topic.name!r}")
    if unknown:
        listed = ", ".join(repr(name) for name in unknown)
        raise UnknownTopicError(f"topic {listed} does not exist on {server}")
    return ExitStatus.OK
