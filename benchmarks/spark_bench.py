"""``python -m benchmarks.spark_bench``: one Spark job, three ways of writing it to Kafka.

The job is ``spark.range(rows)`` turned into a 16-byte key and a 100-byte value per row. It is
written, in the same Spark session to the same local broker (Tansu, a LocalBroker), through:

``kafkaline-sink``
    ``df.write.format("kafkaline")``: the kafkaline data source (Arrow batches to the
    producer's Arrow path, one producer per Python worker).
``kafkaline-sink-exactly-once``
    the same sink with ``deliveryGuarantee=exactly-once``: a transaction per task, committed
    by the driver; verified as a read_committed reader sees it (committed records only,
    none left open: ``kafkaline.testing.read_committed_log``).
``foreachPartition-confluent-kafka``
    ``df.foreachPartition(f)`` where ``f`` makes a confluent-kafka Producer, produces every
    row (polling when its queue is full) and flushes at the end: the way a user writes it.
``foreachPartition-kafka-python``
    the same with kafka-python's KafkaProducer (send per row, flush and close at the end).

The paths take turns (A B C A B C ...) for ``--rounds`` rounds, each run on a fresh topic.
Every run is verified by reading its topic back with kafkaline's Fetch and record reader
(the broker's reported end offsets are never used: see DESIGN.md): a run whose topic does not
hold exactly ``rows`` records of the right size is failed and its time is not used. The
table gives the median rows/s of the good runs per path and the ratio to
foreachPartition + confluent-kafka. Results: ``spark-latest.md`` and ``spark-latest.json`` in
``benchmarks/results/runs/`` (not committed; ``--out`` elsewhere); ``--publish`` also writes
the table to ``benchmarks/results/spark-latest.md``, the copy docs/spark.md links to.

    python -m benchmarks.spark_bench                          # 2,000,000 rows, 3 rounds
    python -m benchmarks.spark_bench --rows 2000 --rounds 1 --out smoke-results   # smoke run
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks.machine import MachineInfo, collect_machine_info, scrub_paths
from benchmarks.verify import ReadBack, read_back

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, Row, SparkSession

#: Where every run's files go; not committed (.gitignore).
RESULTS_DIR = Path(__file__).resolve().parent / "results" / "runs"
#: Where --publish puts the table: the one Spark results file in the repository.
PUBLISHED_DIR = Path(__file__).resolve().parent / "results"
PROJECT_ROOT = Path(__file__).resolve().parent.parent
KEY_BYTES = 16
VALUE_BYTES = 100
TOPIC_PARTITIONS = 6
SINK = "kafkaline-sink"
SINK_EXACTLY_ONCE = "kafkaline-sink-exactly-once"
CONFLUENT = "foreachPartition-confluent-kafka"
KAFKA_PYTHON = "foreachPartition-kafka-python"
PATHS = (SINK, SINK_EXACTLY_ONCE, CONFLUENT, KAFKA_PYTHON)
BASELINE = CONFLUENT
#: The issue's target: the kafkaline sink at least this many times the baseline's rows/s.
TARGET_RATIO = 4.0
#: Issue 19's target: the exactly-once sink at least this fraction of the at-least-once one.
EXACTLY_ONCE_TARGET = 0.8
WARMUP_ROWS = 1000


@dataclass
class Run:
    path: str
    round: int
    topic: str
    rows: int
    seconds: float | None = None
    records_read_back: int = 0
    payload_bytes_read_back: int = 0
    error: str | None = None

    @property
    def good(self) -> bool:
        return self.error is None and self.seconds is not None

    @property
    def rows_per_second(self) -> float | None:
        return self.rows / self.seconds if self.good and self.seconds else None


@dataclass
class Result:
    machine: MachineInfo
    rows: int
    rounds: int
    master: str
    data_partitions: int
    arrow_batch_rows: int
    sink_options: dict[str, str]
    spark_version: str = ""
    session_seconds: float = 0.0
    runs: list[Run] = field(default_factory=list)

    def medians(self) -> dict[str, float | None]:
        medians: dict[str, float | None] = {}
        for path in dict.fromkeys(run.path for run in self.runs):
            rates = [r.rows_per_second for r in self.runs if r.path == path and r.good]
            medians[path] = statistics.median(r for r in rates if r is not None) if rates else None
        return medians


# --- the two foreachPartition paths, as a user writes them --------------------------------
# They run in Spark's Python workers: everything they need is imported inside.


def confluent_partition_writer(servers: str, topic: str) -> Callable[[Iterator[Row]], None]:
    def write(rows: Iterator[Row]) -> None:
        from confluent_kafka import KafkaException, Producer

        errors: list[str] = []

        def on_delivery(error: Any, _message: Any) -> None:
            if error is not None:
                errors.append(str(error))

        producer = Producer({"bootstrap.servers": servers})
        for row in rows:
            while True:
                try:
                    producer.produce(topic, value=row.value, key=row.key, on_delivery=on_delivery)
                    break
                except BufferError:  # the local queue is full: serve callbacks and retry
                    producer.poll(0.05)
            producer.poll(0)
        remaining = producer.flush(120)
        if remaining or errors:
            raise KafkaException(f"{remaining} records not flushed; errors: {errors[:3]}")

    return write


def kafka_python_partition_writer(servers: str, topic: str) -> Callable[[Iterator[Row]], None]:
    def write(rows: Iterator[Row]) -> None:
        from kafka import KafkaProducer

        errors: list[Exception] = []
        producer = KafkaProducer(bootstrap_servers=servers)
        for row in rows:
            producer.send(topic, value=row.value, key=row.key).add_errback(errors.append)
        producer.flush()
        producer.close()
        if errors:
            raise errors[0]  # a delivery error fails the task

    return write


# --- the harness ---------------------------------------------------------------------------


def _job(spark: SparkSession, rows: int, partitions: int) -> DataFrame:
    """16-byte keys and 100-byte values, made in the JVM (the same input for every path)."""
    return spark.range(rows, numPartitions=partitions).selectExpr(
        f"cast(lpad(cast(id as string), {KEY_BYTES}, '0') as binary) as key",
        f"cast(concat(lpad(cast(id as string), 12, '0'), repeat('v', {VALUE_BYTES - 12})) "
        "as binary) as value",
    )


def _write(
    path: str, df: DataFrame, servers: str, topic: str, sink_options: dict[str, str]
) -> None:
    if path in (SINK, SINK_EXACTLY_ONCE):
        writer = df.write.format("kafkaline").option("kafka.bootstrap.servers", servers)
        for name, value in sink_options.items():
            writer = writer.option(name, value)
        if path == SINK_EXACTLY_ONCE:
            writer = writer.option("deliveryGuarantee", "exactly-once")
        writer.option("topic", topic).mode("append").save()
    elif path == CONFLUENT:
        df.foreachPartition(confluent_partition_writer(servers, topic))
    elif path == KAFKA_PYTHON:
        df.foreachPartition(kafka_python_partition_writer(servers, topic))
    else:
        raise ValueError(f"unknown path {path!r}")


def _start_spark(master: str, arrow_batch_rows: int) -> SparkSession:
    from pyspark import cloudpickle
    from pyspark.sql import SparkSession

    import benchmarks.spark_bench
    import kafkaline.spark

    # Workers need not import this module: its functions travel by value.
    cloudpickle.register_pickle_by_value(benchmarks.spark_bench)  # type: ignore[no-untyped-call]
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    spark = (
        SparkSession.builder.master(master)
        .appName("kafkaline-spark-bench")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", str(arrow_batch_rows))
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    kafkaline.spark.register(spark)
    return spark


def run_bench(
    rows: int,
    rounds: int,
    paths: tuple[str, ...],
    master: str,
    data_partitions: int,
    arrow_batch_rows: int,
    sink_options: dict[str, str],
    log: Callable[[str], None] = print,
) -> Result:
    """Run every path ``rounds`` times, in turn, and read every run back."""
    from kafkaline.testing import LocalBroker

    result = Result(
        machine=collect_machine_info(PROJECT_ROOT),
        rows=rows,
        rounds=rounds,
        master=master,
        data_partitions=data_partitions,
        arrow_batch_rows=arrow_batch_rows,
        sink_options=sink_options,
    )
    warmups = [
        Run(path, -1, f"spark-bench-warmup-{index}", WARMUP_ROWS)
        for index, path in enumerate(paths)
    ]
    runs = [
        Run(path, round_index, f"spark-bench-{round_index}-{index}", rows)
        for round_index in range(rounds)
        for index, path in enumerate(paths)
    ]
    with LocalBroker() as broker:
        # Every topic is made before Spark starts: making one later moves this thread onto
        # another py4j connection, whose JVM thread has no active session (docs/spark.md).
        for run in warmups + runs:
            broker.create_topic(run.topic, partitions=TOPIC_PARTITIONS)
        started = time.perf_counter()
        spark = _start_spark(master, arrow_batch_rows)
        result.session_seconds = time.perf_counter() - started
        result.spark_version = spark.version
        log(f"spark {spark.version} {master}, session in {result.session_seconds:.1f}s")
        try:
            # Not timed: starts the Python workers and their imports (and the sink's cached
            # producers), which the first timed path would otherwise pay alone.
            for warmup in warmups:
                _timed_run(
                    warmup,
                    _job(spark, WARMUP_ROWS, data_partitions),
                    broker.bootstrap_servers,
                    sink_options,
                )
                if warmup.error is not None:
                    log(f"warm-up of {warmup.path} failed: {warmup.error}")
            df = _job(spark, rows, data_partitions)
            for run in runs:
                _timed_run(run, df, broker.bootstrap_servers, sink_options)
                if run.error is None:
                    back, left_open = _read_back(
                        run, broker.bootstrap_servers, broker.host, broker.port
                    )
                    run.records_read_back = back.records
                    run.payload_bytes_read_back = back.payload_bytes
                    expected_bytes = rows * (KEY_BYTES + VALUE_BYTES)
                    if left_open:
                        run.error = f"{left_open} transactions left open"
                    elif back.records != rows or back.payload_bytes != expected_bytes:
                        run.error = (
                            f"read back {back.records} records / {back.payload_bytes} bytes, "
                            f"expected {rows} / {expected_bytes}"
                        )
                rate = run.rows_per_second
                log(
                    f"round {run.round + 1} {run.path:34} "
                    + (
                        f"{rate:>12,.0f} rows/s  ({run.seconds:.2f}s)"
                        if rate
                        else f"FAILED: {run.error}"
                    )
                )
                result.runs.append(run)
        finally:
            spark.stop()
    result.machine.load_average_end = os.getloadavg()
    return result


def _read_back(run: Run, servers: str, host: str, port: int) -> tuple[ReadBack, int]:
    """What a reader sees: for the exactly-once sink, a read_committed reader (committed
    records only) and how many transactions it left open (0 for the other paths)."""
    if run.path != SINK_EXACTLY_ONCE:
        return read_back(host, port, run.topic, TOPIC_PARTITIONS, run.rows), 0
    from kafkaline.testing import read_committed_log

    records = payload = open_transactions = 0
    for partition in range(TOPIC_PARTITIONS):  # one partition in memory at a time
        log = read_committed_log(servers, run.topic, [partition], timeout=120.0)
        open_transactions += len(log.open_producer_ids())
        committed = log.committed()
        records += len(committed)
        payload += sum(len(r.key or b"") + len(r.value or b"") for r in committed)
    return ReadBack(records=records, payload_bytes=payload), open_transactions


def _timed_run(run: Run, df: DataFrame, servers: str, sink_options: dict[str, str]) -> None:
    started = time.perf_counter()
    try:
        _write(run.path, df, servers, run.topic, sink_options)
    except Exception as error:  # a failed run is reported, and the others still run
        run.error = scrub_paths(f"{type(error).__name__}: {error}")[:2000]
        return
    run.seconds = time.perf_counter() - started


def render_markdown(result: Result) -> str:
    medians = result.medians()
    baseline = medians.get(BASELINE)
    machine = result.machine
    lines = [
        "# Spark benchmark: writing one DataFrame to Kafka",
        "",
        f"`python -m benchmarks.spark_bench --rows {result.rows} --rounds {result.rounds}`, "
        f"{machine.started_at}. Spark {result.spark_version}, `{result.master}`, "
        f"{result.data_partitions} DataFrame partitions, {result.rows:,} rows "
        f"({KEY_BYTES}-byte key, {VALUE_BYTES}-byte value), topics of {TOPIC_PARTITIONS} "
        f"partitions on one local Tansu broker.",
        "",
        "| path | median rows/s | runs (rows/s) | ratio to foreachPartition + confluent-kafka |",
        "| --- | ---: | --- | ---: |",
    ]
    for path, median in medians.items():
        runs = [r for r in result.runs if r.path == path]
        rates = ", ".join(
            f"{r.rows_per_second:,.0f}" if r.rows_per_second else "failed" for r in runs
        )
        ratio = f"{median / baseline:.2f}x" if median and baseline else "-"
        shown = f"{median:,.0f}" if median else "failed"
        lines.append(f"| {path} | {shown} | {rates} | {ratio} |")
    sink, base = medians.get(SINK), baseline
    lines.append("")
    if sink and base:
        verdict = "met" if sink / base >= TARGET_RATIO else "NOT met"
        lines.append(
            f"Target (kafkaline sink >= {TARGET_RATIO:g}x foreachPartition + confluent-kafka): "
            f"{verdict} ({sink / base:.2f}x, medians)."
        )
        per_round = _ratios_per_round(result, SINK, BASELINE)
        if per_round:
            lines.append(
                "Sink / confluent-kafka within each round: "
                + ", ".join(f"{ratio:.2f}x" for ratio in per_round)
                + " (the rounds show how much the machine's load moved the numbers)."
            )
    exactly_once = medians.get(SINK_EXACTLY_ONCE)
    if sink and exactly_once:
        verdict = "met" if exactly_once / sink >= EXACTLY_ONCE_TARGET else "NOT met"
        lines.append(
            f"Target (exactly-once sink >= {EXACTLY_ONCE_TARGET:g}x the at-least-once sink): "
            f"{verdict} ({exactly_once / sink:.2f}x, medians; by round: "
            + ", ".join(f"{r:.2f}x" for r in _ratios_per_round(result, SINK_EXACTLY_ONCE, SINK))
            + ")."
        )
    failed = [r for r in result.runs if not r.good]
    lines += [
        "",
        f"Every run was read back record by record (kafkaline's Fetch and reader, not the "
        f"broker's end offsets); {len(result.runs) - len(failed)} of {len(result.runs)} runs "
        "held exactly the rows and bytes written.",
        "",
        "Time is the wall clock of the write action on the driver (Spark schedules, makes the "
        "rows, hands them to the Python workers, the workers send and flush). The Spark "
        f"session took {result.session_seconds:.1f}s to start (not counted).",
        "",
        "## Configuration",
        "",
        f"- kafkaline sink options: {result.sink_options or '(none besides bootstrap servers)'}; "
        f"`spark.sql.execution.arrow.maxRecordsPerBatch` = {result.arrow_batch_rows}",
        "- confluent-kafka: a Producer per partition with its defaults, produce per row "
        "(poll on BufferError), flush at the end",
        "- kafka-python: a KafkaProducer per partition with its defaults, send per row, "
        "flush and close at the end",
        "",
        "## Machine",
        "",
        f"- {machine.cpu_count} CPUs ({machine.cpu_model}), {machine.memory_gib:.1f} GiB, "
        f"{machine.system}, {machine.python}",
        f"- load average at start {machine.load_average_start[0]:.2f}, at end "
        + (f"{machine.load_average_end[0]:.2f}" if machine.load_average_end else "?")
        + " (1 minute)",
        f"- versions: {', '.join(f'{k} {v}' for k, v in machine.versions.items())}; "
        f"pyspark {result.spark_version}; broker {machine.broker}",
        f"- kafkaline commit {machine.kafkaline_commit}",
    ]
    for run in failed:
        lines.append(f"- FAILED round {run.round + 1} {run.path}: {run.error}")
    return "\n".join(lines) + "\n"


def _ratios_per_round(result: Result, path: str, baseline: str) -> list[float]:
    rates = {(run.path, run.round): run.rows_per_second for run in result.runs}
    ratios = []
    for round_index in range(result.rounds):
        sink, base = rates.get((path, round_index)), rates.get((baseline, round_index))
        if sink and base:
            ratios.append(sink / base)
    return ratios


def _options(pairs: list[str]) -> dict[str, str]:
    options: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep:
            raise argparse.ArgumentTypeError(f"--sink-option wants NAME=VALUE, got {pair!r}")
        options[name] = value
    return options


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.spark_bench",
        description="One Spark job written to Kafka through the kafkaline sink and through "
        "foreachPartition with confluent-kafka and with kafka-python.",
    )
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--paths", default=",".join(PATHS), help=f"comma-separated, of {', '.join(PATHS)}"
    )
    parser.add_argument("--master", default="local[2]")
    parser.add_argument(
        "--data-partitions", type=int, default=2, help="partitions of the DataFrame (tasks)"
    )
    parser.add_argument(
        "--arrow-batch-rows",
        type=int,
        default=10_000,
        help="spark.sql.execution.arrow.maxRecordsPerBatch",
    )
    parser.add_argument(
        "--sink-option",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="an extra option of the kafkaline sink, e.g. kafka.linger.ms=5",
    )
    parser.add_argument(
        "--out", type=Path, default=RESULTS_DIR, help="results directory (not committed)"
    )
    parser.add_argument(
        "--publish",
        action="store_true",
        help="also write the table to benchmarks/results/spark-latest.md (committed)",
    )
    args = parser.parse_args(argv)
    paths = tuple(p.strip() for p in args.paths.split(",") if p.strip())
    unknown = [p for p in paths if p not in PATHS]
    if unknown or args.rows < 1 or args.rounds < 1:
        parser.error(f"bad --paths/--rows/--rounds (unknown paths: {unknown})")
    result = run_bench(
        args.rows,
        args.rounds,
        paths,
        args.master,
        args.data_partitions,
        args.arrow_batch_rows,
        _options(args.sink_option),
    )
    text = render_markdown(result)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "spark-latest.md").write_text(text)
    payload = asdict(result) | {"medians_rows_per_second": result.medians()}
    (args.out / "spark-latest.json").write_text(
        scrub_paths(json.dumps(payload, indent=2, default=str)) + "\n"
    )
    if args.publish:
        PUBLISHED_DIR.mkdir(parents=True, exist_ok=True)
        (PUBLISHED_DIR / "spark-latest.md").write_text(text)
    print()
    print(text)
    return 0 if all(run.good for run in result.runs) else 1


if __name__ == "__main__":
    raise SystemExit(main())
