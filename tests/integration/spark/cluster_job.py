"""A write through the kafkaline sink on ``local-cluster[2,1,1024]``: a driver and two
executor JVMs (each with its own Python workers), run as its own process by
test_spark_cluster.py, since one Python process holds one SparkContext and the tests' own is
``local[2]``.

    python cluster_job.py BOOTSTRAP TOPIC ROWS

Prints one JSON line: the executor JVMs (process ids) whose Python workers ran the write's
tasks. Exits with :data:`CANNOT_START` (and the reason on stderr) when the cluster does not
start, so that the test can skip with that reason.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import Row

CANNOT_START = 3
MASTER = "local-cluster[2,1,1024]"


def _executor_jvm(_rows: Iterable[Row]) -> Iterator[int]:
    """The executor JVM of this Python worker: the parent of its daemon (PySpark forks
    workers from a daemon that the executor starts)."""
    daemon = os.getppid()
    stat = Path(f"/proc/{daemon}/stat").read_text()
    # Fields after the command name (which is in parentheses and may hold spaces): state, ppid
    yield int(stat.rsplit(")", 1)[1].split()[1])


def main(argv: list[str]) -> int:
    servers, topic, rows = argv[0], argv[1], int(argv[2])
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    import kafkaline.spark

    try:
        spark = (
            SparkSession.builder.master(MASTER)
            .appName("kafkaline-cluster-test")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .getOrCreate()
        )
    except Exception as error:
        print(f"{MASTER} did not start: {type(error).__name__}: {error}", file=sys.stderr)
        return CANNOT_START
    try:
        spark.sparkContext.setLogLevel("ERROR")
        kafkaline.spark.register(spark)
        df = spark.range(rows, numPartitions=4).selectExpr(
            "cast(id % 100 as string) as key", "cast(id as string) as value"
        )
        (
            df.write.format("kafkaline")
            .option("kafka.bootstrap.servers", servers)
            .option("topic", topic)
            .mode("append")
            .save()
        )
        executors = sorted(set(df.rdd.mapPartitions(_executor_jvm).collect()))
    finally:
        spark.stop()
    print(json.dumps({"executor_jvms": executors}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
