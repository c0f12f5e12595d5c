"""Instructions per send() that opens a new batch (callgrind), compiled and pure-Python builds.

Every record needs a new batch: ``batch_size`` is 1, so a batch holds one record and the next
record for its partition finds it full. Records go to ``--partitions`` partitions of topic "t"
by key (murmur2, ``--mode keyed``: 10,000 keys in turn) or by an explicit partition (``--mode
partition``: in turn). The producer is offline: it is told the topic's partitions and opened
without a broker or an I/O thread (private hooks, as the unit tests do), so the count is
send()'s alone and does not depend on how fast another thread drains. Each measured run is one
process under callgrind; two run lengths are differenced, so that start-up (imports, each
partition's first record) cancels: instructions per send = (I(long) - I(short)) / (long -
short). ``--compression`` gives the producer a codec (its batches then carry the topic's
ratio estimate, 1.0 here: no batch is sealed).

    .venv/bin/python benchmarks/new_batch.py [--modes keyed,partition]
        [--builds compiled,python] [--short 2000] [--long 6000] [--partitions 600]
        [--compression none]

``PYTHONPATH=<another checkout>/src`` measures that checkout instead.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile

# The measured program: argv is mode, records, partitions, compression.
CHILD = r"""
import os, sys
from kafkaline import Producer
from kafkaline.net.cluster import BrokerNode, ClusterMetadata, PartitionMetadata
from kafkaline.record import core_build
mode, records, partitions, codec = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
value = os.urandom(100)
keys = [b"key-%06d" % i for i in range(10_000)]
producer = Producer(
    bootstrap_servers="127.0.0.1:1", linger_ms=5000, batch_size=1, compression_type=codec
)
producer._topics.cluster = ClusterMetadata(
    [BrokerNode(1, "b1", 9092)], [PartitionMetadata("t", p, leader=1) for p in range(partitions)]
)
producer._topics.counts["t"] = partitions
producer._set_gate(None)
send = producer.send
for p in range(partitions):  # every partition's first record, in both run lengths
    send("t", value, partition=p)
if mode == "keyed":
    for i in range(records):
        send("t", value, keys[i % 10_000])
else:
    for i in range(records):
        send("t", value, partition=i % partitions)
producer.close(0)
print(core_build())
"""


def _env(build: str) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("KAFKALINE_PURE_PYTHON", None)
    env["PYTHONHASHSEED"] = "0"
    if build == "python":
        env["KAFKALINE_PURE_PYTHON"] = "1"
    return env


def _instructions(mode: str, build: str, records: int, partitions: int, codec: str) -> int:
    """The instructions of one run under callgrind."""
    with tempfile.TemporaryDirectory() as out:
        path = os.path.join(out, "cg.out")
        command = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={path}"]
        command += [sys.executable, "-c", CHILD, mode, str(records), str(partitions), codec]
        run = subprocess.run(command, env=_env(build), capture_output=True, text=True, check=False)
        if run.returncode != 0 or run.stdout.strip() != build:
            raise RuntimeError(f"run failed ({run.returncode}): {run.stdout} {run.stderr[-2000:]}")
        with open(path) as f:
            match = re.search(r"^(?:summary|totals): (\d+)", f.read(), re.M)
        if match is None:
            raise RuntimeError("no callgrind totals")
        return int(match.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modes", default="keyed,partition")
    parser.add_argument("--builds", default="compiled,python")
    parser.add_argument("--short", type=int, default=2_000)
    parser.add_argument("--long", type=int, default=6_000)
    parser.add_argument("--partitions", type=int, default=600)
    parser.add_argument("--compression", default="none", help="none, gzip, snappy, lz4, zstd")
    args = parser.parse_args()
    for mode in args.modes.split(","):
        for build in args.builds.split(","):
            counts = [
                _instructions(mode, build, records, args.partitions, args.compression)
                for records in (args.short, args.long)
            ]
            per_send = (counts[1] - counts[0]) / (args.long - args.short)
            print(
                f"{mode:9} {build:8} partitions={args.partitions}"
                f" compression={args.compression}:"
                f" {per_send:,.0f} instructions per send() that opens a batch",
                flush=True,
            )


if __name__ == "__main__":
    main()
