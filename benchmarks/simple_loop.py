"""First side-by-side: a per-record send() loop, kafkaline against confluent-kafka.

Workload (issue 5's "small"): 300,000 records of 100-byte values, keys drawn in turn from
10,000 distinct 10-byte keys, linger 5 ms, batch size 64 KiB, acks=1, no compression, a fresh
6-partition topic per run on one LocalBroker. Each run is its own process (so its CPU time is
its own); runs alternate between clients for ``--rounds`` rounds, and the medians are reported.
Every run is checked: the records are read back from every partition and counted (never from
the broker's end offsets, which Tansu reports wrong).

    .venv/bin/python benchmarks/simple_loop.py [--records N] [--rounds R] [--profile]

``--profile`` also runs kafkaline's loop once under cProfile and prints the top functions by
own time. The full ``make bench`` harness (more clients and workloads) is issue 5's.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import resource
import statistics
import subprocess
import sys
import time
import uuid
from typing import Any

from kafkaline.testing import LocalBroker
from kafkaline.testing.wire import BlockingConnection, fetch_partition, negotiate_versions

PARTITIONS = 6
VALUE_SIZE = 100
DISTINCT_KEYS = 10_000
CLIENTS = ("kafkaline", "confluent-kafka")


def _workload(records: int) -> tuple[bytes, list[bytes]]:
    value = os.urandom(VALUE_SIZE)
    keys = [b"key-%06d" % i for i in range(DISTINCT_KEYS)]
    return value, keys


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def run_kafkaline(bootstrap: str, topic: str, records: int) -> dict[str, float]:
    from kafkaline import Producer

    value, keys = _workload(records)
    nkeys = len(keys)
    producer = Producer(
        bootstrap_servers=bootstrap,
        linger_ms=5,
        batch_size=65536,
        acks=1,
        compression_type="none",
    )
    producer.partitions_for(topic)  # connect and fetch metadata outside the timing
    cpu = _cpu_seconds()
    start = time.perf_counter()
    send = producer.send
    for i in range(records):
        send(topic, value, keys[i % nkeys])
    producer.flush()
    elapsed = time.perf_counter() - start
    cpu = _cpu_seconds() - cpu
    producer.close()
    return {"seconds": elapsed, "cpu_seconds": cpu}


def run_confluent(bootstrap: str, topic: str, records: int) -> dict[str, float]:
    from confluent_kafka import Producer as ConfluentProducer

    value, keys = _workload(records)
    nkeys = len(keys)
    producer = ConfluentProducer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 5,
            "batch.size": 65536,
            "acks": 1,
            "compression.type": "none",
            "partitioner": "murmur2_random",
        }
    )
    producer.list_topics(topic, timeout=10)  # connect and fetch metadata outside the timing
    cpu = _cpu_seconds()
    start = time.perf_counter()
    produce = producer.produce
    poll = producer.poll
    for i in range(records):
        try:
            produce(topic, value, keys[i % nkeys])
        except BufferError:  # local queue full: serve delivery reports, then retry
            poll(0.05)
            produce(topic, value, keys[i % nkeys])
        if i % 1000 == 0:
            poll(0)
    remaining = producer.flush(60)
    elapsed = time.perf_counter() - start
    cpu = _cpu_seconds() - cpu
    if remaining:
        raise RuntimeError(f"confluent-kafka: {remaining} records not delivered")
    return {"seconds": elapsed, "cpu_seconds": cpu}


def profile_kafkaline(bootstrap: str, topic: str, records: int, top: int) -> None:
    from kafkaline import Producer

    value, keys = _workload(records)
    producer = Producer(bootstrap_servers=bootstrap, linger_ms=5, batch_size=65536, acks=1)
    producer.partitions_for(topic)
    send = producer.send
    profiler = cProfile.Profile()
    profiler.enable()
    for i in range(records):
        send(topic, value, keys[i % len(keys)])
    producer.flush()
    profiler.disable()
    producer.close()
    print(f"\ncProfile of the send() loop + flush, {records} records (caller's thread only):")
    pstats.Stats(profiler).sort_stats("tottime").print_stats(top)


def count_records(broker: LocalBroker, topic: str, expected: int) -> int:
    with BlockingConnection(broker.host, broker.port, client_id="bench-check") as conn:
        version = negotiate_versions(conn)[1]
        total = 0
        for partition in range(PARTITIONS):
            batches = fetch_partition(conn, topic, partition, version, max_wait_ms=50)
            total += sum(len(batch.records) for batch in batches)
    if total != expected:
        raise RuntimeError(f"{topic}: read back {total} records, expected {expected}")
    return total


def _child(args: argparse.Namespace) -> None:
    runner = run_kafkaline if args.client == "kafkaline" else run_confluent
    print(json.dumps(runner(args.bootstrap, args.topic, args.records)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--client", choices=CLIENTS, help=argparse.SUPPRESS)
    parser.add_argument("--bootstrap", help=argparse.SUPPRESS)
    parser.add_argument("--topic", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.client:
        _child(args)
        return

    results: dict[str, list[dict[str, Any]]] = {client: [] for client in CLIENTS}
    with LocalBroker() as broker:
        for round_number in range(1, args.rounds + 1):
            for client in CLIENTS:
                topic = f"bench-{client}-{uuid.uuid4().hex[:8]}"
                broker.create_topic(topic, partitions=PARTITIONS)
                output = subprocess.run(
                    [sys.executable, __file__, "--client", client, "--records",
                     str(args.records), "--bootstrap", broker.bootstrap_servers,
                     "--topic", topic],
                    check=True, capture_output=True, text=True,
                ).stdout  # fmt: skip
                run = json.loads(output.strip().splitlines()[-1])
                count_records(broker, topic, args.records)
                broker.delete_topic(topic)
                run["rate"] = args.records / run["seconds"]
                results[client].append(run)
                print(
                    f"round {round_number} {client:16s} {run['rate']:>10,.0f} records/s  "
                    f"{run['seconds']:.2f} s  cpu {run['cpu_seconds']:.2f} s",
                    flush=True,
                )
        if args.profile:
            topic = f"bench-profile-{uuid.uuid4().hex[:8]}"
            broker.create_topic(topic, partitions=PARTITIONS)
            profile_kafkaline(broker.bootstrap_servers, topic, args.records, args.top)

    print(f"\n{args.records:,} records x {VALUE_SIZE} B, {args.rounds} rounds, median (min-max):")
    medians: dict[str, float] = {}
    for client, runs in results.items():
        rates = [run["rate"] for run in runs]
        cpu = [run["cpu_seconds"] * 1e6 / args.records for run in runs]
        medians[client] = statistics.median(rates)
        print(
            f"  {client:16s} {medians[client]:>10,.0f} records/s ({min(rates):,.0f}-"
            f"{max(rates):,.0f}); cpu {statistics.median(cpu):.2f} s per million records"
        )
    print(f"  ratio kafkaline / confluent-kafka: {medians['kafkaline'] / medians[CLIENTS[1]]:.2f}")


if __name__ == "__main__":
    main()
