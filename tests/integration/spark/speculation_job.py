"""An exactly-once batch write with speculation on, where one task's first attempt is slow,
so that Spark launches a speculative copy of it; run as its own process by
test_spark_speculation.py (one Python process holds one SparkContext, and the copy needs a
second executor: not ``local[...]``).

    python speculation_job.py '{"master": ..., "servers": ..., "topic": ..., "rows": ...,
                                "slow_partition": ..., "slow_s": ..., "attempts": DIR}'

Writes through the kafkaline sink with a wrapper around it (``kafkaline_slow``): the sink's
code runs unchanged; the wrapper sleeps in the row iterator of the slow attempt, after its
first batch (so that attempt has records in its open transaction), and touches a file per
task attempt in ``attempts`` (``p<partition>-a<attempt>``). Prints one JSON line: the
write's error (or null) and the attempts whose commit messages the driver got. Exits with
:data:`CANNOT_START` (the reason on stderr) when the cluster does not start.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

CANNOT_START = 3

#: Speculation as eager as Spark allows: checked every 100 ms, a task is a candidate once half
#: of its stage's tasks finished and it ran 1.5 times their median, and at least 1 s.
SPECULATION = {
    "spark.speculation": "true",
    "spark.speculation.interval": "100ms",
    "spark.speculation.multiplier": "1.5",
    "spark.speculation.quantile": "0.5",
    "spark.speculation.minTaskRuntime": "1s",
    # Spark >= 3.4 speculates only tasks it judges inefficient from their progress; a task
    # asleep in its iterator shows no progress metric it could judge, so take that out.
    "spark.speculation.efficiency.enabled": "false",
    "spark.locality.wait": "0s",
}


def _slow_rows(
    batches: Iterator[Any], partition: int, slow_s: float, attempts: str
) -> Iterator[Any]:
    from pyspark import TaskContext

    context = TaskContext.get()
    assert context is not None
    me = f"p{context.partitionId()}-a{context.attemptNumber()}"
    Path(attempts, me).touch()
    slow = context.partitionId() == partition and context.attemptNumber() == 0
    for index, batch in enumerate(batches):
        yield batch
        if index == 0 and slow:
            time.sleep(slow_s)  # the copy starts, writes and wins meanwhile
            Path(attempts, f"{me}-woke").touch()


def _source_class(partition: int, slow_s: float, attempts: str) -> type[Any]:
    from kafkaline.spark import KafkalineDataSource

    class SlowSource(KafkalineDataSource):  # type: ignore[misc]
        @classmethod
        def name(cls) -> str:
            return "kafkaline_slow"

        def writer(self, schema: Any, overwrite: bool) -> Any:
            inner = super().writer(schema, overwrite)
            base = type(inner)

            class Slow(base):  # type: ignore[misc,valid-type]
                def write(self, iterator: Iterator[Any]) -> Any:
                    return base.write(self, _slow_rows(iterator, partition, slow_s, attempts))

                def commit(self, messages: Any) -> None:
                    # Runs in a Python worker of the driver: tell the driver through a file.
                    picked = sorted([m.task.partition, m.task.attempt] for m in messages)
                    Path(attempts, "chosen.json").write_text(json.dumps(picked))
                    base.commit(self, messages)

            slow = Slow.__new__(Slow)
            slow.__dict__.update(inner.__dict__)
            return slow

    return SlowSource


def main(argv: list[str]) -> int:
    spec = json.loads(argv[0])
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master(spec["master"])
        .appName("kafkaline-speculation")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", "100")
    )
    for key, value in {**SPECULATION, **spec.get("conf", {})}.items():
        builder = builder.config(key, value)
    try:
        spark = builder.getOrCreate()
    except Exception as failed:
        print(f"{spec['master']} did not start: {type(failed).__name__}: {failed}", file=sys.stderr)
        return CANNOT_START
    error: str | None = None
    try:
        spark.sparkContext.setLogLevel("ERROR")
        spark.dataSource.register(
            _source_class(spec["slow_partition"], spec["slow_s"], spec["attempts"])
        )
        frame = spark.range(0, spec["rows"], numPartitions=spec["partitions"]).selectExpr(
            "cast(id as string) as value"
        )
        try:
            (
                frame.write.format("kafkaline_slow")
                .option("kafka.bootstrap.servers", spec["servers"])
                .option("kafka.transaction.timeout.ms", "60000")
                .option("topic", spec["topic"])
                .option("deliveryGuarantee", "exactly-once")
                .option("transactionalIdPrefix", spec["prefix"])
                .mode("append")
                .save()
            )
        except Exception as failure:  # the outcome, reported to the test
            error = f"{type(failure).__name__}: {failure}"
    finally:
        spark.stop()
    print(json.dumps({"error": error}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
