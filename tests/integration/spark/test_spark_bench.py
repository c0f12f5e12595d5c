"""A smoke run of the Spark benchmark (benchmarks/spark_bench.py): tiny counts, one round,
every path run and read back; the numbers mean nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")
pytest.importorskip("confluent_kafka")
pytest.importorskip("kafka")

_ROOT = Path(__file__).resolve().parents[3]
_TIMEOUT_S = 280  # under pytest-timeout's 300 s: a hang kills the child, not the test run


def test_spark_bench_smoke_run(tmp_path: Path) -> None:
    # Its own process: the benchmark starts its own broker and SparkContext.
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks.spark_bench",
            "--rows",
            "2000",
            "--rounds",
            "1",
            "--out",
            str(tmp_path),
        ],
        cwd=_ROOT,
        env={**os.environ, "PYTHONPATH": str(_ROOT)},
        capture_output=True,
        text=True,
        timeout=_TIMEOUT_S,
        check=False,
    )
    assert run.returncode == 0, f"the benchmark failed:\n{run.stdout[-2000:]}\n{run.stderr[-3000:]}"
    result = json.loads((tmp_path / "spark-latest.json").read_text())
    runs = result["runs"]
    assert {r["path"] for r in runs} == {
        "kafkaline-sink",
        "kafkaline-sink-exactly-once",
        "foreachPartition-confluent-kafka",
        "foreachPartition-kafka-python",
    }
    assert all(r["error"] is None and r["records_read_back"] == 2000 for r in runs), runs
    table = (tmp_path / "spark-latest.md").read_text()
    assert "| kafkaline-sink |" in table
    assert "| kafkaline-sink-exactly-once |" in table
