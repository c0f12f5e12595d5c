"""Instructions per send() into open batches (callgrind), offline, pure-Python or compiled.

The small workload's records (100-byte values, keys drawn in turn from 10,000 distinct keys,
or none with ``--keyless``), 64 KiB batches, into ``--partitions`` partitions of topic "t".
The producer is offline, as in benchmarks/new_batch.py: told the topic's partitions and
opened without a broker or an I/O thread (private hooks, as the unit tests do), so the count
is send()'s alone. Both lengths first send 10,000 records (every key's hash memoised, every
partition's batch open), so the difference is the steady state. Buffer memory is 256 MiB, so
no batch waits for the Sender. Two run lengths are differenced, so that start-up cancels:
instructions per send = (I(long) - I(short)) / (long - short). ``--compression`` sets the
codec (records are then compressed at seal, which never runs here: the count is send()'s).

    .venv/bin/python benchmarks/pure_send.py [--builds python,compiled]
        [--short 5000] [--long 20000] [--partitions 6] [--keyless] [--profile N]

``--profile N`` prints a cProfile of N pure-Python sends instead (call counts, where the time
goes). ``PYTHONPATH=<another checkout>/src`` measures that checkout instead.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile

# The measured program: argv is records, partitions, keyed (0/1), compression, profile (0/1).
CHILD = r"""
import os, random, sys
from kafkaline import Producer
from kafkaline.net.cluster import BrokerNode, ClusterMetadata, PartitionMetadata
from kafkaline.record import core_build
records, partitions, keyed = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "1"
compression, profile = sys.argv[4], sys.argv[5] == "1"
value = os.urandom(100)
keys = [b"key-%06d" % i for i in range(10_000)]
producer = Producer(
    bootstrap_servers="127.0.0.1:1",
    linger_ms=5000,
    batch_size=65536,
    buffer_memory=256 << 20,
    compression_type=compression,
)
producer._accumulator._rng = random.Random(1)
producer._topics.cluster = ClusterMetadata(
    [BrokerNode(1, "b1", 9092)], [PartitionMetadata("t", p, leader=1) for p in range(partitions)]
)
producer._topics.counts["t"] = partitions
producer._set_gate(None)
send = producer.send


def run():
    if keyed:
        for i in range(records):
            send("t", value, keys[i % 10_000])
    else:
        for i in range(records):
            send("t", value)


for i in range(10_000):  # both lengths: every key hashed, every partition's batch open
    send("t", value, keys[i] if keyed else None)
if profile:
    import cProfile, pstats
    cProfile.run("run()", sort="tottime")
else:
    run()
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


def _child_args(records: int, args: argparse.Namespace, profile: bool) -> list[str]:
    keyed = "0" if args.keyless else "1"
    return [str(records), str(args.partitions), keyed, args.compression, "1" if profile else "0"]


def _instructions(build: str, records: int, args: argparse.Namespace) -> int:
    """The instructions of one run under callgrind."""
    with tempfile.TemporaryDirectory() as out:
        path = os.path.join(out, "cg.out")
        command = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={path}"]
        command += [sys.executable, "-c", CHILD, *_child_args(records, args, False)]
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
    parser.add_argument("--builds", default="python,compiled")
    parser.add_argument("--short", type=int, default=5_000)
    parser.add_argument("--long", type=int, default=20_000)
    parser.add_argument("--partitions", type=int, default=6)
    parser.add_argument("--keyless", action="store_true")
    parser.add_argument("--compression", default="none")
    parser.add_argument("--profile", type=int, default=0, metavar="N")
    args = parser.parse_args()
    if args.profile:
        command = [sys.executable, "-c", CHILD, *_child_args(args.profile, args, True)]
        subprocess.run(command, env=_env("python"), check=True)
        return
    for build in args.builds.split(","):
        counts = [_instructions(build, records, args) for records in (args.short, args.long)]
        per_send = (counts[1] - counts[0]) / (args.long - args.short)
        print(f"{build:8}: {per_send:,.0f} instructions per send()", flush=True)


if __name__ == "__main__":
    main()
