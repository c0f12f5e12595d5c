"""Where send() and send_batch() spend their instructions: a per-function callgrind diff.

The small workload's records (or small-lz4's: ``--compression lz4``) are sent by one process
under ``valgrind --tool=callgrind --separate-threads=yes``, at two lengths that make the same
input (``--long`` records) and differ only in what they send, with ``send()`` per record in a
function (``--mode send``) or ``send_batch()`` per 10,000 (``--mode send_batch``); linger 5 s,
so that batches fill under callgrind as at full speed. For the caller's thread and for the
others (the I/O side) it prints the instructions per record, in total and per function
(``callgrind_annotate``'s self cost, two lengths differenced), largest first: what a change
to the per-record path should move. Functions the compiler inlined are named after the
function they were inlined into, and a source line's file, so one function can show several
times. Run it from the repository root (the child imports ``benchmarks.workloads``):

    .venv/bin/python -m benchmarks.callgrind_functions [--mode send|send_batch]
        [--compression none|lz4] [--short 10000] [--long 30000] [--top 40]

``PYTHONPATH=<an older checkout>/src:.`` measures that checkout instead.
"""

from __future__ import annotations

import argparse
import collections
import glob
import os
import re
import subprocess
import sys
import tempfile
import uuid

from kafkaline.testing import LocalBroker

# The measured program: argv is bootstrap, topic, mode, compression, records, input records.
CHILD = r"""
import sys
from benchmarks.workloads import ISSUE_WORKLOADS, make_records
from kafkaline import Producer
bootstrap, topic, mode, compression = sys.argv[1:5]
count, made = int(sys.argv[5]), int(sys.argv[6])
records = make_records(ISSUE_WORKLOADS[0], made)
keys, values = records.keys[:count], records.values[:count]
producer = Producer(bootstrap_servers=bootstrap, linger_ms=5000, batch_size=65536, acks=1,
                    compression_type=compression, enable_idempotence=False)
producer.partitions_for(topic)
def run():
    if mode == "send":
        send = producer.send
        for key, value in zip(keys, values):
            send(topic, value, key)
    else:
        for start in range(0, count, 10_000):
            producer.send_batch(topic, values[start:start + 10_000],
                                keys=keys[start:start + 10_000])
run()
producer.flush(timeout=600)
producer.close()
"""

_LINE = re.compile(r"\s*([\d,]+) \([^)]*\)\s+(\S.*)$")


def _self_costs(path: str) -> collections.Counter[str]:
    """Instructions per function (``file:function``, without directories) in one thread's
    output file."""
    text = subprocess.run(
        ["callgrind_annotate", "--inclusive=no", "--auto=no", "--tree=none", path],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    costs: collections.Counter[str] = collections.Counter()
    for line in text.splitlines():
        match = _LINE.match(line)
        if match and ":" in match.group(2):
            name = match.group(2).split(" [")[0].rsplit("/", 1)[-1]
            costs[name] += int(match.group(1).replace(",", ""))
    return costs


def _run(args: argparse.Namespace, broker: LocalBroker, records: int, out: str) -> None:
    topic = f"functions-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, partitions=6)
    subprocess.run(
        [
            "valgrind",
            "--tool=callgrind",
            "--separate-threads=yes",
            "--quiet",
            f"--callgrind-out-file={out}",
            sys.executable,
            "-c",
            CHILD,
            broker.bootstrap_servers,
            topic,
            args.mode,
            args.compression,
            str(records),
            str(args.long),
        ],
        env={**os.environ, "PYTHONHASHSEED": "0"},
        check=True,
    )


def _report(directory: str, args: argparse.Namespace, caller: bool) -> None:
    per_length = {}
    for records in (args.short, args.long):
        costs: collections.Counter[str] = collections.Counter()
        for path in glob.glob(os.path.join(directory, f"cg{records}-*")):
            if (int(path.rsplit("-", 1)[1]) == 1) == caller:
                costs.update(_self_costs(path))
        per_length[records] = costs
    span = args.long - args.short
    diff = {
        name: (per_length[args.long][name] - per_length[args.short][name]) / span
        for name in per_length[args.long] | per_length[args.short]
    }
    print(f"== {'caller' if caller else 'I/O threads'}: {sum(diff.values()):,.0f} per record")
    for name, cost in sorted(diff.items(), key=lambda item: -item[1])[: args.top]:
        print(f"{cost:9.1f}  {name[:140]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=("send", "send_batch"), default="send")
    parser.add_argument("--compression", choices=("none", "lz4"), default="none")
    parser.add_argument("--short", type=int, default=10_000)
    parser.add_argument("--long", type=int, default=30_000)
    parser.add_argument("--top", type=int, default=40)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory, LocalBroker() as broker:
        for records in (args.short, args.long):
            _run(args, broker, records, os.path.join(directory, f"cg{records}"))
        _report(directory, args, caller=True)
        _report(directory, args, caller=False)


if __name__ == "__main__":
    main()
