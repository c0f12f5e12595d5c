"""Instructions per record of the compiled record core against the pure-Python one (callgrind).

The small workload (issue 17): 100-byte values, keys drawn in turn from 10,000 distinct keys,
acks=1, batch size 64 KiB, on a fresh topic of ``--partitions`` partitions on one LocalBroker.
Each measured run is one process under ``valgrind --tool=callgrind --separate-threads=yes``;
the caller is the main thread, the I/O side every other thread. Mode ``send_keyless`` sends
the same values without keys (the sticky partitioner). Two run lengths are measured
and differenced, so that start-up (imports, metadata, the first batches) cancels:
instructions per record = (I(long) - I(short)) / (long - short). Linger is 5 s by default, so
batches fill under valgrind's slowness as they do at full speed with 5 ms.

    .venv/bin/python benchmarks/core_instructions.py [--modes send,send_batch]
        [--builds compiled,python] [--short 20000] [--long 60000] [--partitions 6]

``--cpu-records N`` also runs the workload outside valgrind (linger 5 ms) ``--cpu-rounds``
times and prints the process CPU seconds (user + sys, all threads, start-up included) per
million records; on a loaded machine trust the instruction counts. ``--cpu-only`` skips
callgrind. ``PYTHONPATH=<an older checkout>/src`` measures that checkout instead.
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import uuid

from kafkaline.testing import LocalBroker

# The measured program: argv is bootstrap, topic, mode, records, linger_ms (see the constants).
CHILD = r"""
import os, sys
from kafkaline import Producer
try:
    from kafkaline.record import core_build
except ImportError:  # a checkout from before the compiled core
    def core_build(): return "python"
bootstrap, topic, mode = sys.argv[1:4]
records, linger = int(sys.argv[4]), int(sys.argv[5])
value = os.urandom(100)
keys = [b"key-%06d" % i for i in range(10_000)]
producer = Producer(bootstrap_servers=bootstrap, linger_ms=linger, batch_size=65536, acks=1)
producer.partitions_for(topic)
if mode == "send":
    send = producer.send
    for i in range(records):
        send(topic, value, keys[i % 10_000])
elif mode == "send_keyless":
    send = producer.send
    for i in range(records):
        send(topic, value)
else:
    values = [value] * 10_000
    done = 0
    while done < records:
        count = min(10_000, records - done)
        producer.send_batch(topic, values[:count], keys=keys[:count])
        done += count
producer.flush(timeout=600)
producer.close()
print(core_build())
"""


def _env(build: str) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("KAFKALINE_PURE_PYTHON", None)
    if build == "python":
        env["KAFKALINE_PURE_PYTHON"] = "1"
    return env


def _callgrind(bootstrap: str, topic: str, mode: str, build: str, records: int) -> tuple[int, int]:
    """(caller, I/O) instructions of one run under callgrind."""
    with tempfile.TemporaryDirectory() as out:
        prefix = os.path.join(out, "cg.out")
        run = subprocess.run(
            [
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
                "5000",
            ],
            env=_env(build),
            capture_output=True,
            text=True,
            check=False,
        )
        if run.returncode != 0 or run.stdout.strip() != build:
            raise RuntimeError(f"run failed ({run.returncode}): {run.stdout} {run.stderr[-2000:]}")
        totals: dict[int, int] = {}
        for path in glob.glob(prefix + "-*"):
            thread = int(path.rsplit("-", 1)[1])
            with open(path) as f:
                text = f.read()
            match = re.search(r"^(?:summary|totals): (\d+)", text, re.M)
            if match:
                totals[thread] = int(match.group(1))
        caller = totals.pop(1)
        return caller, sum(totals.values())


def _cpu(bootstrap: str, topic: str, mode: str, build: str, records: int) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(
        [sys.executable, "-c", CHILD, bootstrap, topic, mode, str(records), "5"],
        env=_env(build),
        check=True,
        capture_output=True,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modes", default="send,send_batch")
    parser.add_argument("--builds", default="compiled,python")
    parser.add_argument("--short", type=int, default=20_000)
    parser.add_argument("--long", type=int, default=60_000)
    parser.add_argument("--partitions", type=int, default=6)
    parser.add_argument("--cpu-records", type=int, default=0)
    parser.add_argument("--cpu-rounds", type=int, default=1)
    parser.add_argument("--cpu-only", action="store_true", help="no callgrind runs")
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()}", flush=True)
    with LocalBroker() as broker:
        for mode in args.modes.split(","):
            for build in args.builds.split(","):
                line = f"{mode:10} {build:8} partitions={args.partitions}:"
                if not args.cpu_only:
                    runs = []
                    for records in (args.short, args.long):
                        topic = f"core-{uuid.uuid4().hex[:8]}"
                        broker.create_topic(topic, partitions=args.partitions)
                        runs.append(
                            _callgrind(broker.bootstrap_servers, topic, mode, build, records)
                        )
                    span = args.long - args.short
                    caller = (runs[1][0] - runs[0][0]) / span
                    io = (runs[1][1] - runs[0][1]) / span
                    line += (
                        f" caller {caller:,.0f} + I/O {io:,.0f} = {caller + io:,.0f}"
                        " instructions/record;"
                    )
                if args.cpu_records:
                    per_million = []
                    for _ in range(args.cpu_rounds):
                        topic = f"core-{uuid.uuid4().hex[:8]}"
                        broker.create_topic(topic, partitions=args.partitions)
                        cpu = _cpu(broker.bootstrap_servers, topic, mode, build, args.cpu_records)
                        per_million.append(cpu / args.cpu_records * 1e6)
                    line += (
                        f" process CPU-s per M records (whole run, start-up included):"
                        f" median {statistics.median(per_million):.2f}"
                        f" of {', '.join(f'{x:.2f}' for x in per_million)}"
                    )
                print(line, flush=True)
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
