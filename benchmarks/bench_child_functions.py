"""Where the bench's own client process spends its instructions: a per-function callgrind
diff of ``benchmarks.child`` (what ``python -m benchmarks --instructions`` counts).

:mod:`benchmarks.callgrind_functions` runs a small program of its own; this runs the bench's
child for one client (``--client kafkaline-batch``, ``kafkaline``, ...) on one workload
(``--workload``, default small) at two lengths (the same input of ``--long`` records,
linger 5 s), as the instruction mode does, and prints the caller's and the I/O threads'
instructions per record function by function (self cost, the two lengths differenced),
largest first. So the harness's own per-record work (input slices, the payload sum, the GC
over the input lists) shows beside the producer's. Run it from the repository root:

    PYTHONHASHSEED=0 .venv/bin/python -m benchmarks.bench_child_functions
        [--client kafkaline-batch] [--workload small] [--short 10000] [--long 30000] [--top 40]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import uuid
from dataclasses import replace

from benchmarks.callgrind_functions import _report
from benchmarks.instructions import instruction_workload, steady_environment
from benchmarks.workloads import ISSUE_WORKLOADS
from kafkaline.testing import LocalBroker


def _run(args: argparse.Namespace, broker: LocalBroker, records: int, out: str) -> None:
    topic = f"child-functions-{uuid.uuid4().hex[:8]}"
    chosen = next(w for w in ISSUE_WORKLOADS if w.name == args.workload)
    workload = replace(instruction_workload(chosen), records=records)
    broker.create_topic(topic, partitions=workload.partitions)
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    with tempfile.TemporaryDirectory() as scratch:
        subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                "--separate-threads=yes",
                "--quiet",
                f"--callgrind-out-file={out}",
                sys.executable,
                "-m",
                "benchmarks.child",
                "--client",
                args.client,
                "--workload-json",
                json.dumps(workload.to_json()),
                "--bootstrap-servers",
                broker.bootstrap_servers,
                "--topic",
                topic,
                "--result",
                os.path.join(scratch, "result.json"),
                "--input-records",
                str(args.long),
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            check=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--client", default="kafkaline-batch")
    parser.add_argument("--workload", default="small")
    parser.add_argument("--short", type=int, default=10_000)
    parser.add_argument("--long", type=int, default=30_000)
    parser.add_argument("--top", type=int, default=40)
    args = parser.parse_args()
    steady_environment()
    with tempfile.TemporaryDirectory() as directory, LocalBroker() as broker:
        for records in (args.short, args.long):
            _run(args, broker, records, os.path.join(directory, f"cg{records}"))
        _report(directory, args, caller=True)
        _report(directory, args, caller=False)


if __name__ == "__main__":
    main()
