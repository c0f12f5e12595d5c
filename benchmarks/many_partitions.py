"""A keyed send() loop on a topic of many partitions with a bounded buffer_memory.

100-byte values, keys drawn in turn from 10,000, linger 5 ms, batch 64 KiB, acks=1, one
LocalBroker; prints records/s and process CPU seconds per million records of the loop and
its flush (one run; the machine's load decides much of it).

    .venv/bin/python benchmarks/many_partitions.py [--records N] [--partitions P]
        [--buffer-memory-mib M]
"""

from __future__ import annotations

import argparse
import os
import resource
import time
import uuid

from kafkaline import Producer
from kafkaline.testing import LocalBroker


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--partitions", type=int, default=600)
    parser.add_argument("--buffer-memory-mib", type=int, default=32)
    args = parser.parse_args()
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
