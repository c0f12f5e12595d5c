"""Instructions per record of sealing and building lz4 batches (callgrind), without a broker.

The small-lz4 workload's records (100-byte values, keys from 10,000 distinct keys) are
appended to ``--batches`` record batch builders of 64 KiB (lz4, the default level, the
producer's ``estimated_compression_ratio`` given by ``--ratio``), as the accumulator fills
them. Two processes run under ``valgrind --tool=callgrind`` and make the same batches; one
also seals and builds them (``seal()`` then ``build_buffer()``, what the Sender does), the
other does not. The difference divided by the records is the seal + build cost per record,
start-up and appends cancelled. Run it from the repository root (the child imports
``benchmarks.workloads``):

    .venv/bin/python -m benchmarks.lz4_seal [--builds compiled,python] [--batches 40]
        [--ratio 0.5] [--level N]

``PYTHONPATH=<an older checkout>/src:.`` measures that checkout instead.
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import subprocess
import sys
import tempfile

# The measured program: argv is mode (seal or fill), batches, ratio, level ("" for default).
CHILD = r"""
import gc, sys
from benchmarks.workloads import ISSUE_WORKLOADS, make_records
from kafkaline.record.core import RecordBatchBuilder, core_build

mode, batches, ratio, level = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
workload = next(w for w in ISSUE_WORKLOADS if w.name == "small-lz4")
records = make_records(workload, 200_000)
builders = []
appended = 0
for _ in range(batches):
    builder = RecordBatchBuilder(
        batch_size_limit=64 * 1024,
        compression=3,
        compression_level=int(level) if level else None,
        estimated_compression_ratio=ratio,
    )
    while builder.append(
        1_700_000_000_000, records.keys[appended], records.values[appended], ()
    ) is not None:
        appended += 1
    builders.append(builder)
gc.freeze()  # collections would walk the records held for the batches: not the seal's cost
if mode == "seal":
    for builder in builders:
        builder.seal()
        builder.build_buffer()
print(core_build(), appended)
"""


def _callgrind(mode: str, build: str, batches: int, ratio: float, level: str) -> tuple[int, int]:
    """(instructions, records appended) of one run under callgrind."""
    env = dict(os.environ, PYTHONHASHSEED="0")
    env.pop("KAFKALINE_PURE_PYTHON", None)
    if build == "python":
        env["KAFKALINE_PURE_PYTHON"] = "1"
    with tempfile.TemporaryDirectory() as out:
        prefix = os.path.join(out, "cg.out")
        command = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={prefix}"]
        command += [sys.executable, "-c", CHILD, mode, str(batches), str(ratio), level]
        run = subprocess.run(
            command,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        words = run.stdout.split()
        if run.returncode != 0 or not words or words[0] != build:
            raise RuntimeError(f"run failed ({run.returncode}): {run.stdout} {run.stderr[-2000:]}")
        total = 0
        for path in glob.glob(prefix + "*"):
            with open(path) as f:
                match = re.search(r"^(?:summary|totals): (\d+)", f.read(), re.M)
            if match:
                total += int(match.group(1))
        return total, int(words[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--builds", default="compiled,python")
    parser.add_argument("--batches", type=int, default=40)
    parser.add_argument("--ratio", type=float, default=0.5)
    parser.add_argument("--level", default="", help="lz4 level (default: the codec default)")
    args = parser.parse_args()
    for build in args.builds.split(","):
        sealed, records = _callgrind("seal", build, args.batches, args.ratio, args.level)
        filled, same = _callgrind("fill", build, args.batches, args.ratio, args.level)
        if records != same:
            raise RuntimeError(f"the two runs made different batches: {records} != {same}")
        print(
            f"{build}: {args.batches} lz4 batches of {records / args.batches:,.0f} records "
            f"(ratio {args.ratio}): seal + build {(sealed - filled) / records:,.0f} "
            "instructions per record"
        )


if __name__ == "__main__":
    main()
