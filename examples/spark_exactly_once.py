"""Structured Streaming into Kafka exactly once: the kafkaline sink with
``deliveryGuarantee=exactly-once``, stopped while it runs and restarted from its checkpoint.

    python examples/spark_exactly_once.py               # a local broker, two runs, verified
    python examples/spark_exactly_once.py --bootstrap-server HOST:9092 --topic rates \\
        --checkpoint /path/to/checkpoint --seconds 60  # one run against a cluster

A ``rate`` source (a counter) is written to a topic. Each micro-batch is one set of Kafka
transactions, committed by the driver; the sink's state file (under the checkpoint) makes a
micro-batch that Spark replays after a restart count once. Consumers must read with
``isolation.level=read_committed``.

Without ``--bootstrap-server`` the example starts a local broker (kafkaline.testing), runs the
query twice with one checkpoint, and checks the topic as a read_committed reader sees it
(``kafkaline.testing.read_committed_log``, since the test broker does not filter aborted
records itself): every counter value at most once, no gap, no transaction left open.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming.query import StreamingQuery


def start_query(
    spark: SparkSession, servers: str, topic: str, checkpoint: str, rows_per_second: int
) -> StreamingQuery:
    """The rate source -> kafkaline query, exactly once; Spark resumes it from ``checkpoint``."""
    return (
        spark.readStream.format("rate")
        .option("rowsPerSecond", rows_per_second)
        .option("numPartitions", 2)
        .load()
        .selectExpr("cast(value as string) as value")
        .writeStream.format("kafkaline")
        .option("kafka.bootstrap.servers", servers)
        .option("topic", topic)
        .option("deliveryGuarantee", "exactly-once")
        .option("checkpointLocation", checkpoint)
        .trigger(processingTime="2 seconds")
        .start()
    )


def run_for(query: StreamingQuery, seconds: float, startup_seconds: float = 180.0) -> None:
    """Let ``query`` run ``seconds`` after its first micro-batch with rows, then stop it."""
    deadline = time.monotonic() + startup_seconds
    started = False
    try:
        while time.monotonic() < deadline and query.isActive:
            if not started and any(p["numInputRows"] > 0 for p in query.recentProgress):
                started = True
                deadline = time.monotonic() + seconds
            time.sleep(0.2)
    except KeyboardInterrupt:
        pass
    finally:
        query.stop()
    error = query.exception()
    if error is not None:
        raise RuntimeError(f"the streaming query failed: {error}")


def check(values: list[int]) -> tuple[int, int, int]:
    """(distinct values, duplicates, values missing below the highest)."""
    seen = Counter(values)
    highest = max(seen, default=-1)
    missing = sum(1 for v in range(highest + 1) if v not in seen)
    return len(seen), sum(n - 1 for n in seen.values()), missing


def _session() -> SparkSession:
    from pyspark.sql import SparkSession

    import kafkaline.spark

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("kafkaline-exactly-once-example")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    kafkaline.spark.register(spark)
    return spark


def _demo(rows_per_second: int, seconds: float) -> int:
    from kafkaline.testing import LocalBroker, read_committed_log

    topic = "rates"
    with LocalBroker() as broker, tempfile.TemporaryDirectory() as checkpoint:
        broker.create_topic(topic, partitions=3)
        spark = _session()
        try:
            for run in (1, 2):
                print(f"run {run}: streaming for {seconds:g}s (checkpoint kept between runs)")
                query = start_query(
                    spark, broker.bootstrap_servers, topic, checkpoint, rows_per_second
                )
                run_for(query, seconds)
        finally:
            spark.stop()
        log = read_committed_log(broker.bootstrap_servers, topic)
    values = [int(v or b"-1") for v in log.committed_values()]
    distinct, duplicates, missing = check(values)
    print(f"read_committed: {len(values)} records, {distinct} distinct counter values")
    print(f"duplicates: {duplicates}, missing below the highest: {missing}")
    print(f"aborted records (never visible): {len(log.aborted_values())}")
    print(f"transactions left open: {len(log.open_producer_ids())}")
    ok = distinct > 0 and duplicates == 0 and missing == 0 and not log.open_producer_ids()
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--bootstrap-server", help="a cluster to write to (else a local broker)")
    parser.add_argument("--topic", default="rates")
    parser.add_argument("--checkpoint", type=Path, help="checkpoint directory (with a cluster)")
    parser.add_argument("--rows-per-second", type=int, default=500)
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
