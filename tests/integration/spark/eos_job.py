"""A Spark driver for the exactly-once proof tests (test_spark_exactly_once.py), run as its
own process: the tests need task retries (``local[2,3]``, while the tests' shared session is
``local[2]``) and a driver they can SIGKILL.

    python eos_job.py '{"servers": ..., "topic": ..., "cases": [...], ...}'

Writes through a data source that is the kafkaline sink with faults injected around it
(``kafkaline_faults``): the sink's own code runs unchanged; the fault wraps the rows it reads
or the driver's commit. Prints one JSON line per case: ``{"case": ..., "error": ...}``.

Faults (``fault``; ``pPaA`` = partition P, attempt A):
  raise-p0a0      the task raises after its first Arrow batch reached the broker
  kill-p0a0       the task's Python worker SIGKILLs itself at the same point
  raise-p1        every attempt of partition 1 raises there (the job aborts)
  die-before-commit  the driver's commit touches ``marker`` and waits to be killed
  die-mid-commit  the driver's commit completes one transaction, touches ``marker``, waits
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

MASTER = "local[2,3]"  # 3 attempts per task


def _fault_in_task(fault: str) -> bool:
    from pyspark import TaskContext

    context = TaskContext.get()
    if context is None:
        return False
    partition, attempt = context.partitionId(), context.attemptNumber()
    if fault in ("raise-p0a0", "kill-p0a0"):
        return partition == 0 and attempt == 0
    return fault == "raise-p1" and partition == 1


def _inject(batches: Iterator[Any], fault: str) -> Iterator[Any]:
    for index, batch in enumerate(batches):
        yield batch
        if index == 0 and _fault_in_task(fault):
            time.sleep(1.0)  # the sink sent the first batch: it reaches the broker (linger)
            if fault.startswith("kill"):
                os.kill(os.getpid(), signal.SIGKILL)
            raise RuntimeError(f"injected fault {fault} after some rows were written")


def _wait_to_be_killed(marker: str) -> None:
    Path(marker).touch()
    time.sleep(600)


def _before_commit(fault: str, marker: str, batch_id: int | None, fault_batch: int) -> None:
    if batch_id is not None and batch_id != fault_batch:
        return
    if fault == "die-before-commit":
        _wait_to_be_killed(marker)
    elif fault == "die-mid-commit":
        from kafkaline import Producer

        original = Producer.complete_transaction.__func__  # type: ignore[attr-defined]
        lock = threading.Lock()
        done: list[object] = []

        def complete_then_die(cls: type[Producer], *args: Any, **kwargs: Any) -> None:
            if not kwargs.get("commit", True):
                original(cls, *args, **kwargs)
                return
            with lock:
                first = not done
                done.append(args)
            if not first:  # the driver's other threads wait: exactly one commit gets through
                time.sleep(600)
            original(cls, *args, **kwargs)
            _wait_to_be_killed(marker)

        # One transaction completes, then the driver "dies": the state file says committing.
        Producer.complete_transaction = classmethod(complete_then_die)  # type: ignore[assignment,method-assign]


def _faulty(inner: Any, fault: str, marker: str, fault_batch: int) -> Any:
    base = type(inner)

    class Faulty(base):  # type: ignore[misc,valid-type]
        def write(self, iterator: Iterator[Any]) -> Any:
            return base.write(self, _inject(iterator, fault))

        def commit(self, messages: Any, *batch: int) -> None:
            _before_commit(fault, marker, batch[0] if batch else None, fault_batch)
            base.commit(self, messages, *batch)

    faulty = Faulty.__new__(Faulty)
    faulty.__dict__.update(inner.__dict__)
    return faulty


def _source_class() -> type[Any]:
    from kafkaline.spark import KafkalineDataSource

    class FaultInjectingSource(KafkalineDataSource):  # type: ignore[misc]
        @classmethod
        def name(cls) -> str:
            return "kafkaline_faults"

        def _fault(self) -> tuple[str, str, int]:
            return (
                self.options.get("test.fault", ""),
                self.options.get("test.marker", ""),
                int(self.options.get("test.faultbatch", "0")),
            )

        def writer(self, schema: Any, overwrite: bool) -> Any:
            return _faulty(super().writer(schema, overwrite), *self._fault())

        def streamWriter(self, schema: Any, overwrite: bool) -> Any:
            return _faulty(super().streamWriter(schema, overwrite), *self._fault())

    return FaultInjectingSource


def main(argv: list[str]) -> int:
    spec = json.loads(argv[0])
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master(spec.get("master", MASTER))
        .appName("kafkaline-eos-proof")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", "100")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("FATAL")
    spark.dataSource.register(_source_class())
    for case in spec["cases"]:
        options = {
            "kafka.bootstrap.servers": spec["servers"],
            "kafka.transaction.timeout.ms": "60000",
            "topic": case["topic"],
            "deliveryGuarantee": "exactly-once",
            "test.fault": case.get("fault", ""),
            "test.marker": case.get("marker", ""),
            "test.faultbatch": str(case.get("fault_batch", 0)),
        }
        if case.get("prefix"):
            options["transactionalIdPrefix"] = case["prefix"]
        if case.get("state"):
            options["transactionStateLocation"] = case["state"]
        error = None
        try:
            if case.get("source"):
                reader = (
                    spark.readStream.schema("n long")
                    .option("maxFilesPerTrigger", "1")
                    .json(case["source"])
                )
                query = (
                    # Two tasks per micro-batch, so that a commit can be cut off half way.
                    reader.repartition(2)
                    .selectExpr("cast(n as string) as value")
                    .writeStream.format("kafkaline_faults")
                    .options(**options)
                    .option("checkpointLocation", case["checkpoint"])
                    .trigger(availableNow=True)
                    .start()
                )
                query.awaitTermination(240)
                failure = query.exception()
                if failure is not None:
                    raise RuntimeError(str(failure))
            else:
                frame = spark.range(0, case["rows"], numPartitions=2).selectExpr(
                    "cast(id as string) as value"
                )
                frame.write.format("kafkaline_faults").options(**options).mode("append").save()
        except Exception as failure:  # the case's outcome, reported to the test
            error = f"{type(failure).__name__}: {failure}"
        print(json.dumps({"case": case["name"], "error": error}), flush=True)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
