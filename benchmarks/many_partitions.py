"""A keyed send() loop on a topic of many partitions with a bounded buffer_memory.

100-byte values, keys drawn in turn from 10,000, linger 5 ms, batch 64 KiB, acks=1, one
LocalBroker; prints records/s and process CPU seconds per million records of the loop and
its flush (one run; the machine's load decides much of it).

    .venv/bin/python benchmarks/many_partitions.py [--records N] [--partitions P]
        [--buffer-memory-mib M] [--accumulator-only]

``--accumulator-only`` leaves out the broker and the producer: the new-batch path alone, as a
topic of many partitions sees it (every record opens a batch). Each round appends one keyed
record to every partition (through the compiled core's open-batch sender first, when built, as
send() does), then drains and completes every batch. Run it under callgrind at two record
counts and difference them for instructions per record without start-up::

    valgrind --tool=callgrind --callgrind-out-file=/dev/null .venv/bin/python \
        benchmarks/many_partitions.py --accumulator-only --records 30000 --partitions 3000
"""

from __future__ import annotations

import argparse
import os
import resource
import time
import uuid

from kafkaline import Producer
from kafkaline.net.cluster import TopicPartition
from kafkaline.producer.accumulator import RecordAccumulator
from kafkaline.producer.buffer_pool import BufferPool
from kafkaline.testing import LocalBroker

TIMESTAMP = 1_700_000_000_000


class _Leader:
    node_id = 0


class _OneBrokerCluster:
    """Every partition of one topic led by node 0 (the accumulator's cluster protocol)."""

    def __init__(self, topic: str, partitions: int) -> None:
        self._topic = topic
        self._parts = [TopicPartition(topic, p) for p in range(partitions)]

    def partition_count(self, topic: str) -> int:
        return len(self._parts)

    def available_partitions(self, topic: str) -> list[int]:
        return list(range(len(self._parts)))

    def leader_for(self, tp: TopicPartition) -> _Leader:
        return _Leader()

    def partitions_for_node(self, node_id: int) -> list[TopicPartition]:
        return self._parts


def accumulator_only(records: int, partitions: int, buffer_memory: int) -> None:
    """The new-batch path without broker or producer (see the module's docstring)."""
    topic = "many"
    value = os.urandom(100)
    keys = [b"key-%06d" % i for i in range(partitions)]
    accumulator = RecordAccumulator(
        batch_size=65536, linger_ms=5, buffer_pool=BufferPool(buffer_memory, 65536)
    )
    cluster = _OneBrokerCluster(topic, partitions)
    core_send = accumulator.open_batch_sender(1 << 20)
    if core_send is not None:
        core_send.open = True
        core_send.partition_counts = {topic: partitions}
    append = accumulator.append
    start = time.process_time()
    sent = 0
    while sent < records:
        for partition in range(min(partitions, records - sent)):
            key = keys[partition]
            if (
                core_send is None
                or core_send(topic, value, key, None, partition, TIMESTAMP) is None
            ):
                append(topic, partition, TIMESTAMP, key, value, None, 1000.0, 1.0)
        sent += partitions
        for batches in accumulator.drain(cluster, [0], 1 << 30, 10.0).values():
            accumulator.deallocate_batches(batches)
    cpu = time.process_time() - start
    print(
        f"accumulator only, partitions={partitions}: {cpu / records * 1e6:.2f} CPU us/record "
        f"({records} records)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--partitions", type=int, default=600)
    parser.add_argument("--buffer-memory-mib", type=int, default=32)
    parser.add_argument("--accumulator-only", action="store_true")
    args = parser.parse_args()
    if args.accumulator_only:
        accumulator_only(args.records, args.partitions, args.buffer_memory_mib << 20)
        return
    value = os.urandom(100)
    keys = [b"key-%06d" % i for i in range(10_000)]
    with LocalBroker() as broker:
        topic = f"many-{uuid.uuid4().hex[:8]}"
        broker.create_topic(topic, partitions=args.partitions)
        with Producer(
            bootstrap_servers=broker.bootstrap_servers,
            linger_ms=5,
            batch_size=65536,
            acks=1,
            buffer_memory=args.buffer_memory_mib << 20,
        ) as producer:
            producer.partitions_for(topic)
            before = resource.getrusage(resource.RUSAGE_SELF)
            start = time.monotonic()
            for i in range(args.records):
                producer.send(topic, value, keys[i % 10_000])
            producer.flush(timeout=600)
            elapsed = time.monotonic() - start
            after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    print(
        f"partitions={args.partitions} buffer_memory={args.buffer_memory_mib} MiB: "
        f"{args.records / elapsed:,.0f} records/s, {cpu / args.records * 1e6:.1f} CPU s/M, "
        f"load {os.getloadavg()[0]:.1f}"
    )


if __name__ == "__main__":
    main()
