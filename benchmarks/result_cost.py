"""Instructions to make a batch's ProduceRequestResult and to complete it (callgrind).

Making one is part of opening a new batch on the caller's side; completing it (no callbacks,
no waiters: the usual case) is the I/O thread's, once per batch. With many partitions a batch
holds a record or two, so both are paid per record. Each mode runs in its own process under
``valgrind --tool=callgrind`` at two loop lengths, differenced so start-up cancels::

    PYTHONHASHSEED=0 .venv/bin/python benchmarks/result_cost.py
    PYTHONHASHSEED=0 PYTHONPATH=<an older checkout>/src .venv/bin/python \\
        benchmarks/result_cost.py                      # the same for that checkout

Modes: ``make`` (the constructor), ``make+complete`` (and ``complete(SUCCEEDED, base_offset,
log_append_time)`` as the Sender calls it), ``make+complete+get`` (and one record's
``get()``). A mode's cost minus the one before is that step's.
"""

from __future__ import annotations

import argparse
import glob
import os
import subprocess
import sys
import tempfile

CHILD = r"""
import sys
from kafkaline.producer.futures import SUCCEEDED, ProduceRequestResult, new_future
mode, count = sys.argv[1], int(sys.argv[2])
# Each result is freed when the next replaces it, as a batch's result dies with the batch.
if mode == "make":
    for _ in range(count):
        result = ProduceRequestResult("events", 3)
elif mode == "make+complete":
    for offset in range(count):
        result = ProduceRequestResult("events", 3)
        result.complete(SUCCEEDED, offset, -1)
else:
    for offset in range(count):
        result = ProduceRequestResult("events", 3)
        future = new_future(result, 0, 3, 100, 1_700_000_000_000)
        result.complete(SUCCEEDED, offset, -1)
        future.get()
"""

MODES = ("make", "make+complete", "make+complete+get")


def count_instructions(mode: str, count: int) -> int:
    """The whole process's instructions for one run of ``mode`` over ``count`` results."""
    with tempfile.TemporaryDirectory() as out:
        subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                f"--callgrind-out-file={out}/callgrind.out",
                sys.executable,
                "-c",
                CHILD,
                mode,
                str(count),
            ],
            check=True,
            capture_output=True,
        )
        (path,) = glob.glob(f"{out}/callgrind.out*")
        with open(path) as data:
            for line in data:
                if line.startswith("totals:") or line.startswith("summary:"):
                    return int(line.split()[1])
    raise RuntimeError("callgrind wrote no totals")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--short", type=int, default=2_000)
    parser.add_argument("--long", type=int, default=12_000)
    args = parser.parse_args()
    if os.environ.get("PYTHONHASHSEED") != "0":
        print("note: run with PYTHONHASHSEED=0 for repeatable counts", file=sys.stderr)
    previous = 0.0
    for mode in MODES:
        short = count_instructions(mode, args.short)
        long = count_instructions(mode, args.long)
        per_result = (long - short) / (args.long - args.short)
        step = per_result - previous
        print(f"{mode:<20} {per_result:8,.0f} instructions per result (+{step:,.0f})")
        previous = per_result


if __name__ == "__main__":
    main()
