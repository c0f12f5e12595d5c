"""The benchmark harness (``python -m benchmarks``, ``make bench``) runs end to end: a quick
round of two clients over every kind of workload writes a table whose counts were read back;
the --partitions and --instructions modes write theirs.

It runs the harness as ``make bench`` does, in a subprocess (it starts its own broker and a
process per client), with ``--quick`` counts so it stays within seconds.
"""

from __future__ import annotations

import json
import os
import shutil
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
# Two confluent-kafka processes under valgrind, each ~30 s on a loaded machine.
INSTRUCTIONS_TIMEOUT_S = 290


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


def _run_bench(options: list[str], output_dir: Path, timeout_s: float) -> str:
    completed = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--quick", "--output-dir", str(output_dir), *options],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    return completed.stdout


@pytest.mark.integration
def test_partitions_mode_prints_cpu_per_thread_and_its_growth_for_both_builds(
    tmp_path: Path,
) -> None:
    clients = ("kafkaline", "kafkaline-pure", "confluent-kafka")
    output = _run_bench(
        ["--partitions", "12,3", "--clients", ",".join(clients)], tmp_path, HARNESS_TIMEOUT_S
    )

    data = json.loads((tmp_path / "partitions-latest.json").read_text())
    assert [w["partitions"] for w in data["plan"]["workloads"]] == [3, 12]
    runs = {(run["workload"], run["client"]): run for run in data["runs"]}
    assert set(runs) == {(f"small-p{n}", c) for n in (3, 12) for c in clients}
    for run in runs.values():
        assert run["status"] == "ok", run
        assert run["records_read"] == EXPECTED_RECORDS["small"]
        # Each client's own threads did work: the caller sent, an I/O thread wrote requests.
        assert run["cpu_caller_s"] > 0 and run["cpu_io_s"] > 0, run

    table = (tmp_path / "partitions-latest.md").read_text()
    assert output.strip() == table.strip()
    assert "## CPU per thread" in table
    assert "## CPU per record as the partition count grows" in table
    growth_rows = [line for line in table.splitlines() if line.startswith(("| 3 |", "| 12 |"))]
    assert [row.split(" | ")[:2] for row in growth_rows] == [
        [f"| {count}", client] for count in (3, 12) for client in clients
    ]
    for row in growth_rows[:3]:  # each client's CPU growth is relative to its own 3-partition run
        assert row.endswith("| 1.00x |"), row


@pytest.mark.integration
@pytest.mark.skipif(shutil.which("valgrind") is None, reason="needs valgrind")
def test_instructions_mode_counts_per_record_by_thread(tmp_path: Path) -> None:
    # confluent-kafka only: a kafkaline process under callgrind takes minutes to start here.
    output = _run_bench(
        ["--instructions", "--instruction-records", "100,3000", "--clients", "confluent-kafka"],
        tmp_path,
        INSTRUCTIONS_TIMEOUT_S,
    )

    runs = json.loads((tmp_path / "instructions-latest.json").read_text())["runs"]
    by_length = {run["records_sent"]: run for run in runs}
    assert set(by_length) == {100, 3000}
    for run in runs:
        assert run["status"] == "ok", run
        assert run["records_read"] == run["records_sent"]
        assert run["instructions_caller"] > 0 and run["instructions_io"] > 0, run
    # More records sent, more instructions in the caller's thread: 2,900 records at ~5,000
    # each, well above how much its start-up moves between processes (a few million).
    added = by_length[3000]["instructions_caller"] - by_length[100]["instructions_caller"]
    assert added > 2_900 * 1_000, by_length

    table = (tmp_path / "instructions-latest.md").read_text()
    assert output.strip() == table.strip()
    assert "| small | confluent-kafka | " in table
    assert "linger 5000 ms" in table  # batches fill under callgrind's slowness


def test_the_pure_python_client_refuses_to_run_without_its_switch(tmp_path: Path) -> None:
    environment = {k: v for k, v in os.environ.items() if k != "KAFKALINE_PURE_PYTHON"}
    result_path = tmp_path / "result.json"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks.child",
            "--client",
            "kafkaline-pure",
            "--workload",
            "small",
            "--sizes",
            "quick",
            "--bootstrap-servers",
            "127.0.0.1:9",
            "--topic",
            "unused",
            "--result",
            str(result_path),
        ],
        cwd=PROJECT_ROOT,
        env=environment,
        capture_output=True,
        timeout=60,
        check=True,
    )
    result = json.loads(result_path.read_text())
    assert result["status"] == "failed"
    assert "KAFKALINE_PURE_PYTHON=1" in result["detail"]
