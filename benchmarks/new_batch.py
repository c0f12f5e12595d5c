"""Instructions per send() that opens a new batch (callgrind), compiled and pure-Python builds.

Every record needs a new batch: ``batch_size`` is 1, so a batch holds one record, and the
next record for its partition finds it full (or already drained). Records go to ``--partitions``
partitions of a fresh topic on one LocalBroker, by key (murmur2, ``--mode keyed``: 10,000
keys in turn) or by an explicit partition (``--mode partition``: in turn). Each measured run is
one process under ``valgrind --tool=callgrind --separate-threads=yes``; the caller is the main
thread. Two run lengths are measured and differenced, so that start-up (imports, metadata,
each partition's first record) cancels: instructions per send = (I(long) - I(short)) / (long -
short).

    .venv/bin/python benchmarks/new_batch.py [--modes keyed,partition]
        [--builds compiled,python] [--short 4000] [--long 12000] [--partitions 600]

``PYTHONPATH=<another checkout>/src`` measures that checkout instead.
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import subprocess
import sys
import tempfile
import uuid

from kafkaline.testing import LocalBroker

# The measured program: argv is bootstrap, topic, mode, records, partitions.
CHILD = r"""
import os, sys
from kafkaline import Producer
from kafkaline.record import core_build
bootstrap, topic, mode = sys.argv[1:4]
records, partitions = int(sys.argv[4]), int(sys.argv[5])
value = os.urandom(100)
keys = [b"key-%06d" % i for i in range(10_000)]
producer = Producer(bootstrap_servers=bootstrap, linger_ms=5000, batch_size=1, acks=1)
producer.partitions_for(topic)
send = producer.send
for p in range(partitions):  # every partition's first record, in both run lengths
    send(topic, value, partition=p)
if mode == "keyed":
    for i in range(records):
        send(topic, value, keys[i % 10_000])
else:
    for i in range(records):
        send(topic, value, partition=i % partitions)
producer.flush(timeout=600)
producer.close()
print(core_build())
"""


def _env(build: str) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("KAFKALINE_PURE_PYTHON", None)
    env["PYTHONHASHSEED"] = "0"
    if build == "python":
        env["KAFKALINE_PURE_PYTHON"] = "1"
    return env


def _caller_instructions(
    bootstrap: str, topic: str, mode: str, build: str, records: int, partitions: int
) -> int:
    """The main thread's instructions in one run under callgrind."""
    with tempfile.TemporaryDirectory() as out:
        prefix = os.path.join(out, "cg.out")
        command = [
            "valgrind",
            "--tool=callgrind",
            "--separate-threads=yes",
            f"--callgrind-out-file={prefix}",
            sys.executable,
            "-c",
            CHILD,
            bootstrap,
            topic,
            mode,
            str(records),
            str(partitions),
        ]
        run = subprocess.run(command, env=_env(build), capture_output=True, text=True, check=False)
        if run.returncode != 0 or run.stdout.strip() != build:
            raise RuntimeError(f"run failed ({run.returncode}): {run.stdout} {run.stderr[-2000:]}")
        with open(prefix + "-01") as f:
            match = re.search(r"^(?:summary|totals): (\d+)", f.read(), re.M)
        if match is None or not glob.glob(prefix + "-*"):
            raise RuntimeError("no callgrind totals for the main thread")
        return int(match.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modes", default="keyed,partition")
    parser.add_argument("--builds", default="compiled,python")
    parser.add_argument("--short", type=int, default=4_000)
    parser.add_argument("--long", type=int, default=12_000)
    parser.add_argument("--partitions", type=int, default=600)
    args = parser.parse_args()
    with LocalBroker() as broker:
        for mode in args.modes.split(","):
            for build in args.builds.split(","):
                counts = []
                for records in (args.short, args.long):
                    topic = f"new-batch-{uuid.uuid4().hex[:8]}"
                    broker.create_topic(topic, partitions=args.partitions)
                    counts.append(
                        _caller_instructions(
                            broker.bootstrap_servers, topic, mode, build, records, args.partitions
                        )
                    )
                per_send = (counts[1] - counts[0]) / (args.long - args.short)
                print(
                    f"{mode:9} {build:8} partitions={args.partitions}:"
                    f" caller {per_send:,.0f} instructions per send() that opens a batch",
                    flush=True,
                )


if __name__ == "__main__":
    main()
