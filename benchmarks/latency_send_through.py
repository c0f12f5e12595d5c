"""Sync round trips (``send(...).get()``, linger 0, acks=1, 100-byte values) with send-through
on and off, alternating in one process against one LocalBroker.

    python -m benchmarks.latency_send_through [--rounds 16] [--records 400]

Two producers, one with send-through (the default with ``linger_ms=0``) and one with it
turned off (the I/O thread sends every request, as before), take turns: ``--records`` round
trips each per round. Alternating in one process pairs each round of one with a round of the
other made a moment later, so the machine's load (which moves p50 by 2x between single runs
here) hits both alike. Prints each round's p50, the medians of the rounds' p50 and p99, and in
how many rounds send-through's p50 was the lower.
"""

from __future__ import annotations

import argparse
import statistics
import time

from kafkaline import Producer
from kafkaline.testing import LocalBroker

_VALUE = b"v" * 100
_WARMUP = 200


def _round(producer: Producer, topic: str, count: int) -> tuple[float, float]:
    """p50 and p99 in microseconds of ``count`` round trips."""
    latencies = []
    for index in range(count):
        start = time.perf_counter_ns()
        producer.send(topic, _VALUE, b"key-%d" % index).get(timeout=30)
        latencies.append((time.perf_counter_ns() - start) / 1000)
    latencies.sort()
    return latencies[count // 2], latencies[min(count - 1, int(count * 0.99))]


def main() -> None:
    """Command line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=16)
    parser.add_argument("--records", type=int, default=400)
    args = parser.parse_args()
    with LocalBroker() as broker:
        topic = "latency-send-through"
        broker.create_topic(topic, partitions=6)
        producers = {}
        for mode in ("send-through", "I/O thread"):
            producer = Producer(bootstrap_servers=broker.bootstrap_servers, linger_ms=0, acks=1)
            producer.partitions_for(topic)
            if mode == "I/O thread":
                producer._sender.disable_send_through()  # type: ignore[union-attr]
            _round(producer, topic, _WARMUP)
            producers[mode] = producer
        results: dict[str, list[tuple[float, float]]] = {mode: [] for mode in producers}
        for _ in range(args.rounds):
            for mode, producer in producers.items():
                results[mode].append(_round(producer, topic, args.records))
        for producer in producers.values():
            producer.close()
    for mode, rounds in results.items():
        p50s = " ".join(f"{p50:.0f}" for p50, _ in rounds)
        print(
            f"{mode:12s} p50 per round (us): {p50s}\n{'':12s} median p50 "
            f"{statistics.median(p50 for p50, _ in rounds):.0f} us, median p99 "
            f"{statistics.median(p99 for _, p99 in rounds):.0f} us"
        )
    lower = sum(
        through[0] < woken[0]
        for through, woken in zip(results["send-through"], results["I/O thread"], strict=True)
    )
    print(f"send-through's p50 lower in {lower} of {args.rounds} rounds")
    with open("/proc/loadavg") as load:
        print(f"load average after: {' '.join(load.read().split()[:3])}")


if __name__ == "__main__":
    main()
