"""Structured Streaming into Kafka through the kafkaline sink, stopped and restarted.

    python examples/spark_streaming.py                  # a local broker, two runs, verified
    python examples/spark_streaming.py --bootstrap-server HOST:9092 --topic rates \\
        --checkpoint /path/to/checkpoint --seconds 60  # one run against a cluster

A ``rate`` source (a counter, ``--rows-per-second``) is written to a topic, the counter as the
value and its last digit as the key. The query keeps its progress in the ``--checkpoint``
directory: stop it (after ``--seconds``, or Ctrl-C) and start it again with the same
checkpoint, and it goes on from the last micro-batch Spark committed. A micro-batch that was
being written when the query stopped is written again on restart, so a restart can leave
duplicates but never a gap: the sink is at-least-once.

Without ``--bootstrap-server`` the example starts a local broker (kafkaline.testing), runs the
query twice with one checkpoint, reads the topic back and checks that the counter has no gap.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
import time
import warnings
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming.query import StreamingQuery


def start_query(
    spark: SparkSession, servers: str, topic: str, checkpoint: str, rows_per_second: int
) -> StreamingQuery:
    """Start the rate source -> kafkaline query; Spark resumes it from ``checkpoint``."""
    return (
        spark.readStream.format("rate")
        .option("rowsPerSecond", rows_per_second)
        .option("numPartitions", 2)
        .load()
        .selectExpr(
            "cast(value % 10 as string) as key",
            "cast(value as string) as value",
            "timestamp",
        )
        .writeStream.format("kafkaline")
        .option("kafka.bootstrap.servers", servers)
        .option("kafka.enable.idempotence", "true")
        .option("topic", topic)
        .option("checkpointLocation", checkpoint)
        .trigger(processingTime="1 second")
        .start()
    )


def run_for(query: StreamingQuery, seconds: float, startup_seconds: float = 120.0) -> None:
    """Let ``query`` run for ``seconds`` after its first micro-batch with rows (waiting up to
    ``startup_seconds`` for that one: Python workers start with it), or until Ctrl-C /
    SIGTERM, then stop it; raise its error if it failed."""
    stop = False

    def request_stop(_signum: int, _frame: object) -> None:
        nonlocal stop
        stop = True

    previous = signal.signal(signal.SIGTERM, request_stop)
    deadline = time.monotonic() + startup_seconds
    started = False
    try:
        while not stop and time.monotonic() < deadline and query.isActive:
            if not started and any(p["numInputRows"] > 0 for p in query.recentProgress):
                started = True
                deadline = time.monotonic() + seconds
            time.sleep(0.2)
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        query.stop()
    error = query.exception()
    if error is not None:
        raise RuntimeError(f"the streaming query failed: {error}")


def counter_gaps(values: list[int]) -> tuple[int, int, list[int]]:
    """(distinct counter values, duplicates, missing values below the highest) of what was
    read back: a lost micro-batch shows as missing values."""
    seen = Counter(values)
    distinct = set(seen)
    highest = max(distinct, default=-1)
    missing = [v for v in range(highest + 1) if v not in distinct]
    return len(distinct), sum(n - 1 for n in seen.values()), missing


def _session() -> SparkSession:
    from pyspark.sql import SparkSession

    import kafkaline.spark

    # Python workers must run this interpreter, so that they import the same kafkaline.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    # PySpark warns in every process that it does not fully support pandas 3; this example
    # uses no pandas API.
    warnings.filterwarnings("ignore", _PANDAS_3_WARNING, FutureWarning)
    os.environ.setdefault("PYTHONWARNINGS", f"ignore:{_PANDAS_3_WARNING}:FutureWarning")
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("kafkaline-streaming-example")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    _quiet_accumulator_server(spark)
    kafkaline.spark.register(spark)
    return spark


_PANDAS_3_WARNING = "PySpark does not yet fully support pandas"


def _quiet_accumulator_server(spark: SparkSession) -> None:
    """Drop the EOFError traceback PySpark's accumulator server prints when the JVM closes its
    connection as a streaming query stops: harmless (no update is lost), but it reads like a
    failure. Other errors are still printed. The server is a private attribute of PySpark's
    SparkContext; without it, nothing changes."""
    server = getattr(spark.sparkContext, "_accumulatorServer", None)
    if server is None:
        return
    print_error = server.handle_error

    def handle_error(request: object, client_address: object) -> None:
        if not isinstance(sys.exc_info()[1], EOFError):
            print_error(request, client_address)

    server.handle_error = handle_error


def _read_counter(host: str, port: int, topic: str, partitions: int) -> list[int]:
    from kafkaline.testing.wire import BlockingConnection, fetch_partition, negotiate_versions

    fetch_api_key = 1  # Kafka's Fetch
    values: list[int] = []
    with BlockingConnection(host, port, client_id="kafkaline-streaming-example") as conn:
        version = negotiate_versions(conn)[fetch_api_key]
        for partition in range(partitions):
            for batch in fetch_partition(conn, topic, partition, version, timeout=30.0):
                values += [int(record.value or b"-1") for record in batch.records]
    return values


def _demo(rows_per_second: int, seconds: float) -> int:
    from kafkaline.testing import LocalBroker

    topic, partitions = "rates", 3
    # The broker starts before Spark (see docs/spark.md: starting it later loses the
    # py4j thread's active session).
    with LocalBroker() as broker, tempfile.TemporaryDirectory() as checkpoint:
        broker.create_topic(topic, partitions=partitions)
        spark = _session()
        try:
            for run in (1, 2):
                print(f"run {run}: streaming for {seconds:g}s (checkpoint kept between runs)")
                query = start_query(
                    spark, broker.bootstrap_servers, topic, checkpoint, rows_per_second
                )
                run_for(query, seconds)
                progress = query.lastProgress
                if progress:
                    print(f"run {run}: stopped after micro-batch {progress['batchId']}")
        finally:
            spark.stop()
        values = _read_counter(broker.host, broker.port, topic, partitions)
    distinct, duplicates, missing = counter_gaps(values)
    print(f"read back {len(values)} records: {distinct} distinct counter values")
    print(f"duplicates (written again after the restart): {duplicates}")
    print(f"missing below the highest value: {len(missing)}")
    return 0 if distinct and not missing else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--bootstrap-server", help="a cluster to write to (else a local broker)")
    parser.add_argument("--topic", default="rates")
    parser.add_argument("--checkpoint", type=Path, help="checkpoint directory (with a cluster)")
    parser.add_argument("--rows-per-second", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=10.0, help="how long each run lasts")
    args = parser.parse_args(argv)
    if args.bootstrap_server is None:
        return _demo(args.rows_per_second, args.seconds)
    if args.checkpoint is None:
        parser.error("--checkpoint is needed with --bootstrap-server (it is what a restart uses)")
    spark = _session()
    try:
        query = start_query(
            spark, args.bootstrap_server, args.topic, str(args.checkpoint), args.rows_per_second
        )
        run_for(query, args.seconds)
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
