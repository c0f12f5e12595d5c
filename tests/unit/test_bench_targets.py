"""The bench's targets table: send_batch()'s caller CPU per record against send()'s."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# The benchmarks package is not installed: ask it from the project root, as `make bench` runs
# it. argv: JSON of [[client, caller CPU seconds per million records], ...].
_PROGRAM = """
import json, sys
from benchmarks.result import RunResult, Status
from benchmarks.summary import Summary
from benchmarks.targets import target_lines
from benchmarks.workloads import workload_by_name
summaries = []
for client, caller_s in json.loads(sys.argv[1]):
    run = RunResult(client=client, workload="small", status=Status.OK, records_sent=1_000_000,
                    cpu_user_s=caller_s + 0.1, cpu_caller_s=caller_s, cpu_io_s=0.1)
    summaries.append(Summary(workload_by_name("small"), client, [run], []))
print(json.dumps(target_lines(summaries)))
"""


def _caller_row(runs: list[tuple[str, float]]) -> str:
    completed = subprocess.run(
        [sys.executable, "-c", _PROGRAM, json.dumps(runs)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    lines: list[str] = json.loads(completed.stdout.strip().splitlines()[-1])
    return next(line for line in lines if line.startswith("| send_batch() caller CPU"))


def test_send_batch_caller_cpu_is_held_to_half_of_send() -> None:
    met = _caller_row([("kafkaline", 0.40), ("kafkaline-batch", 0.19)])
    assert met.endswith("| 0.19 | 0.20 | caller CPU s/M records | met |")
    missed = _caller_row([("kafkaline", 0.40), ("kafkaline-batch", 0.21)])
    assert missed.endswith("| not met |")


def test_without_send_the_row_says_not_measured() -> None:
    # confluent-kafka's run measures the other CPU targets; send()'s is missing
    row = _caller_row([("kafkaline-batch", 0.2), ("confluent-kafka", 0.5)])
    assert row.endswith("| not measured |")
