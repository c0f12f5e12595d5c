"""The bulk paths side by side: kafkaline's send() loop, send_batch() and send_arrow(), and
confluent-kafka's produce() loop, on issue 5's "small" workload.

300,000 records of 100-byte values, keys drawn in turn from 10,000 distinct keys, linger 5 ms,
batch size 64 KiB, acks=1, no compression, a fresh 6-partition topic per run on one
LocalBroker. The bulk calls get the records in chunks of 10,000 (Spark's Arrow batch size),
made before the clock. Each run is its own process (its CPU time, user + sys of all its
threads, is its own); clients alternate for ``--rounds`` rounds; every run is read back and
counted.

    .venv/bin/python benchmarks/bulk_paths.py [--records N] [--rounds R] [--profile CLIENT]
"""

from __future__ import annotations

import argparse
import cProfile
import importlib
import json
import os
import pstats
import statistics
import subprocess
import sys
import time
import uuid
from typing import Any

from kafkaline.testing import LocalBroker

if __package__ in (None, ""):  # run as a script: the repository root makes `benchmarks` importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks.simple_loop import PARTITIONS, _cpu_seconds, count_records, run_confluent

VALUE_SIZE = 100
DISTINCT_KEYS = 10_000
CHUNK = 10_000
CLIENTS = ("send", "send_batch", "send_arrow", "confluent-kafka")


def _records(records: int) -> tuple[list[bytes], list[bytes]]:
    value = os.urandom(VALUE_SIZE)
    distinct = [b"key-%06d" % i for i in range(DISTINCT_KEYS)]
    keys = [distinct[i % DISTINCT_KEYS] for i in range(records)]
    return keys, [value] * records


def run_kafkaline(
    method: str, bootstrap: str, topic: str, records: int, profile: bool = False
) -> dict[str, float]:
    from kafkaline import Producer

    keys, values = _records(records)
    chunks = [
        (values[start : start + CHUNK], keys[start : start + CHUNK])
        for start in range(0, records, CHUNK)
    ]
    batches: list[Any] = []
    if method == "send_arrow":
        pa: Any = importlib.import_module("pyarrow")

        batches = [
            pa.record_batch(
                [pa.array(k, pa.binary()), pa.array(v, pa.binary())], names=["key", "value"]
            )
            for v, k in chunks
        ]
    producer = Producer(
        bootstrap_servers=bootstrap,
        linger_ms=5,
        batch_size=65536,
        acks=1,
        compression_type="none",
        enable_idempotence=False,
    )
    producer.partitions_for(topic)  # connect and fetch metadata outside the timing
    profiler = cProfile.Profile() if profile else None
    cpu = _cpu_seconds()
    start = time.perf_counter()
    if profiler is not None:
        profiler.enable()
    if method == "send":
        send = producer.send
        for key, value in zip(keys, values, strict=True):
            send(topic, value, key)
    elif method == "send_batch":
        for chunk_values, chunk_keys in chunks:
            producer.send_batch(topic, chunk_values, keys=chunk_keys)
    else:
        for batch in batches:
            producer.send_arrow(topic, batch)
    producer.flush()
    if profiler is not None:
        profiler.disable()
    elapsed = time.perf_counter() - start
    cpu = _cpu_seconds() - cpu
    producer.close()
    if profiler is not None:
        print(f"cProfile of {method} + flush, {records} records (caller's thread only):")
        pstats.Stats(profiler).sort_stats("tottime").print_stats(20)
    return {"seconds": elapsed, "cpu_seconds": cpu}


def _child(args: argparse.Namespace) -> dict[str, float]:
    if args.client == "confluent-kafka":
        return run_confluent(str(args.bootstrap), str(args.topic), int(args.records))
    return run_kafkaline(
        str(args.client), str(args.bootstrap), str(args.topic), int(args.records), args.profile_run
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--clients", default=",".join(CLIENTS))
    parser.add_argument("--profile", choices=CLIENTS[:3], help="profile one run of CLIENT")
    parser.add_argument("--client", choices=CLIENTS, help=argparse.SUPPRESS)
    parser.add_argument("--bootstrap", help=argparse.SUPPRESS)
    parser.add_argument("--topic", help=argparse.SUPPRESS)
    parser.add_argument("--profile-run", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.client:
        print(json.dumps(_child(args)))
        return

    clients = args.clients.split(",")
    results: dict[str, list[dict[str, float]]] = {client: [] for client in clients}
    with LocalBroker() as broker:

        def run(client: str, profile: bool = False) -> dict[str, float]:
            topic = f"bench-{client}-{uuid.uuid4().hex[:8]}"
            broker.create_topic(topic, partitions=PARTITIONS)
            command = [
                sys.executable, __file__, "--client", client, "--records", str(args.records),
                "--bootstrap", broker.bootstrap_servers, "--topic", topic,
            ]  # fmt: skip
            if profile:
                command.append("--profile-run")
            output = subprocess.run(command, check=True, capture_output=True, text=True).stdout
            if profile:
                print(output)
            outcome: dict[str, float] = json.loads(output.strip().splitlines()[-1])
            count_records(broker, topic, args.records)  # read back: raises if any is missing
            broker.delete_topic(topic)
            outcome["rate"] = args.records / outcome["seconds"]
            return outcome

        for round_number in range(1, args.rounds + 1):
            for client in clients:
                outcome = run(client)
                results[client].append(outcome)
                print(
                    f"round {round_number} {client:16s} {outcome['rate']:>10,.0f} records/s  "
                    f"{outcome['seconds']:.2f} s  cpu {outcome['cpu_seconds']:.2f} s",
                    flush=True,
                )
        if args.profile:
            run(args.profile, profile=True)

    print(f"\n{args.records:,} records x {VALUE_SIZE} B, {args.rounds} rounds, median (min-max):")
    medians: dict[str, float] = {}
    cpus: dict[str, float] = {}
    for client, runs in results.items():
        rates = [r["rate"] for r in runs]
        medians[client] = statistics.median(rates)
        cpus[client] = statistics.median(r["cpu_seconds"] * 1e6 / args.records for r in runs)
        print(
            f"  {client:16s} {medians[client]:>10,.0f} records/s ({min(rates):,.0f}-"
            f"{max(rates):,.0f}); cpu {cpus[client]:.2f} s per million records"
        )
    reference = "confluent-kafka"
    if reference in medians:
        for client in medians:
            if client != reference:
                print(
                    f"  {client} / {reference}: {medians[client] / medians[reference]:.2f}x "
                    f"rate, {cpus[client] / cpus[reference]:.2f}x cpu"
                )


if __name__ == "__main__":
    main()
