"""``kafkaline topics create NAME --partitions N`` and ``kafkaline topics list``."""

from __future__ import annotations

import argparse
import sys

from kafkaline.cli import topic_admin
from kafkaline.cli.exit_status import ExitStatus

_DEFAULT_TIMEOUT_S = 10.0


def add_parser(subcommands: argparse._SubParsersAction[argparse.ArgumentParser],
               parent: argparse.ArgumentParser) -> None:  # fmt: skip
    """Register ``topics`` with its ``create`` and ``list`` subcommands."""
    topics = subcommands.add_parser(
        "topics", parents=[parent], help="create and list topics", description="Manage topics."
    )
    actions = topics.add_subparsers(dest="topics_action", metavar="ACTION", required=True)

    connection = argparse.ArgumentParser(add_help=False)
    connection.add_argument(
        "--bootstrap-server",
        required=True,
        metavar="HOST:PORT[,...]",
        help="the broker(s) to ask",
    )
    connection.add_argument(
        "--timeout",
        type=float,
        default=_DEFAULT_TIMEOUT_S,
        metavar="SECONDS",
        help=f"how long to wait for the broker (default: {_DEFAULT_TIMEOUT_S:g})",
    )

    create = actions.add_parser(
        "create", parents=[parent, connection], help="create a topic", description="Create a topic."
    )
    create.add_argument("name", metavar="NAME", help="the topic's name")
    create.add_argument(
        "--partitions", type=int, default=1, metavar="N", help="partitions (default: 1)"
    )
    create.add_argument(
        "--replication-factor",
        type=int,
        default=-1,
        metavar="N",
        help="replicas per partition (default: -1, the broker's default)",
    )
    create.add_argument(
        "--if-not-exists",
        action="store_true",
        help="succeed without doing anything if the topic exists",
    )
    create.set_defaults(run=run_create)

    listing = actions.add_parser(
        "list",
        parents=[parent, connection],
        help="list topics",
        description="Print the cluster's topics, one per line.",
    )
    listing.add_argument(
        "--long",
        action="store_true",
        help="print each topic's partition count too (NAME<TAB>PARTITIONS)",
    )
    listing.set_defaults(run=run_list)


def run_create(args: argparse.Namespace) -> int:
    """Create the topic; say so on stderr (stdout stays empty for scripts)."""
    created = topic_admin.create_topic(
        args.bootstrap_server,
        args.name,
        args.partitions,
        args.replication_factor,
        args.timeout,
        if_not_exists=args.if_not_exists,
    )
    what = (
        f"created with {args.partitions} partitions" if created else "exists already, left as it is"
    )
    print(f"kafkaline: topic {args.name!r} {what}", file=sys.stderr)
    return ExitStatus.OK


def run_list(args: argparse.Namespace) -> int:
    """Print the topics, sorted, one per line."""
    for topic in topic_admin.list_topics(args.bootstrap_server, args.timeout):
        print(f"{topic.name}\t{topic.partitions}" if args.long else topic.name)
    return ExitStatus.OK
