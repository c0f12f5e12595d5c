"""The benchmark harness (``python -m benchmarks``, ``make bench``) runs end to end: a quick
round of two clients over every kind of workload writes a table whose counts were read back.

It runs the harness as ``make bench`` does, in a subprocess (it starts its own broker and a
process per client), with ``--quick`` counts so it stays within seconds.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

PROJECT_ROOT = Path(__file__).resolve().parents[2]
CLIENTS = ("confluent-kafka", "broker-limit")
# One workload of each kind: throughput, latency, memory (five runs: ~8 s on an idle machine).
WORKLOADS = ("small", "latency", "memory")
# The --quick sizes (benchmarks.workloads.quick): throughput 2,000 records; latency 200
# measured after 100 warm-up records; memory 300 records of 10 KB.
EXPECTED_RECORDS = {"small": 2_000, "latency": 300, "memory": 300}
HARNESS_TIMEOUT_S = 120


@pytest.mark.integration
def test_quick_bench_writes_a_table_of_verified_runs(tmp_path: Path) -> None:
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks",
            "--quick",
            "--rounds",
            "1",
            "--clients",
            ",".join(CLIENTS),
            "--workloads",
            ",".join(WORKLOADS),
            "--no-chart",
            "--output-dir",
            str(tmp_path),
        ],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=HARNESS_TIMEOUT_S,
        check=False,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr

    runs = json.loads((tmp_path / "latest.json").read_text())["runs"]
    ran = {(run["workload"], run["client"]): run for run in runs}
    # broker-limit pre-builds its input, so it has no memory run; everything else ran once.
    expected_runs = {(w, c) for w in WORKLOADS for c in CLIENTS} - {("memory", "broker-limit")}
    assert set(ran) == expected_runs
    for (workload, _client), run in ran.items():
        assert run["status"] == "ok", run
        assert run["records_expected"] == EXPECTED_RECORDS[workload]
        assert run["records_read"] == EXPECTED_RECORDS[workload]
        assert run["wall_s"] > 0 and run["cpu_user_s"] + run["cpu_sys_s"] > 0

    table = (tmp_path / "latest.md").read_text()
    assert completed.stdout.strip() == table.strip()  # the table is printed at the end too
    for (workload, client), _run in ran.items():
        row = f"| {workload} | {client} | 1/1 | {EXPECTED_RECORDS[workload]:,} |"
        assert row in table, f"no row {row!r} in:\n{table}"
    assert "Broker limit: what Tansu accepted from a raw protocol loop" in table
    assert "- `small`: " in table  # the broker limit's line for small
    assert "vs confluent-kafka" in table
    # The results must not name this machine's paths.
    assert str(PROJECT_ROOT) not in table
    assert str(PROJECT_ROOT) not in (tmp_path / "latest.json").read_text()
