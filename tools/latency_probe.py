"""Where the time of a one-record round trip goes (issue #5's latency workload, outside the
benchmark harness).

Sends records one at a time with ``linger_ms=0`` and waits for each (``send(...).get()``), then
reports the latency percentiles, the CPU time (user and system) and context switches per record
of each thread of this process (the caller and the producer's I/O thread; Linux only, from
``/proc``), and with ``--stages`` the time after ``send()`` was called at which each stage of
the round trip was reached::

    python tools/latency_probe.py                      # starts a LocalBroker of its own
    python tools/latency_probe.py --records 5000 --stages
    python tools/latency_probe.py --bootstrap-servers 127.0.0.1:9092 --topic events

Stages are stamped by wrapping a few methods (the first call of each per round trip counts):
the caller waking the I/O thread, the I/O thread reading the wakeup, the request written to the
socket, the response read, the batch completed, ``get()`` returning. The wrappers cost about a
microsecond each, so with ``--stages`` the round trip is a little slower.

The machine's load average is printed with the results: on a shared machine, compare runs
made one after the other (or alternate two versions), never against old figures.
"""

from __future__ import annotations

import argparse
import os
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kafkaline import Producer
from kafkaline.net import client as network_client
from kafkaline.net import transport as network_transport
from kafkaline.producer import futures as producer_futures
from kafkaline.testing import LocalBroker

#: (class, method name, stage stamped before the call, stage stamped after it)
_STAGES: tuple[tuple[Any, str, str | None, str | None], ...] = (
    (network_client.NetworkClient, "wakeup", "caller wakes the I/O thread", None),
    (network_client.NetworkClient, "_drain_wakeup", "I/O thread reads the wakeup", None),
    (network_transport.TcpTransport, "send", "request write starts", "request written"),
    (network_transport.TcpTransport, "recv_into", None, "response read"),
    (producer_futures.ProduceRequestResult, "complete", None, "batch completed"),
)

_stamps: dict[str, int] = {}


def _stamping(method: Callable[..., Any], before: str | None, after: str | None) -> Any:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if before is not None and before not in _stamps:
            _stamps[before] = time.perf_counter_ns()
        result = method(*args, **kwargs)
        if after is not None and after not in _stamps:
            _stamps[after] = time.perf_counter_ns()
        return result

    return wrapper


@contextmanager
def _stage_stamps() -> Iterator[None]:
    originals = []
    for owner, name, before, after in _STAGES:
        method = getattr(owner, name, None)
        if method is None:
            continue  # renamed since this tool was written: that stage is not reported
        originals.append((owner, name, method))
        setattr(owner, name, _stamping(method, before, after))
    try:
        yield
    finally:
        for owner, name, method in originals:
            setattr(owner, name, method)


def _thread_counters() -> dict[str, tuple[int, int, int, int]]:
    """Thread id -> (user CPU ticks, system CPU ticks, voluntary context switches,
    involuntary ones), from /proc (empty where there is none)."""
    counters: dict[str, tuple[int, int, int, int]] = {}
    tasks = Path("/proc/self/task")
    if not tasks.is_dir():
        return counters
    for task in tasks.iterdir():
        try:
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
            status = (task / "status").read_text()
        except OSError:
            continue  # the thread ended meanwhile
        switches = {
            name: int(value)
            for name, _, value in (line.partition(":") for line in status.splitlines())
            if name in ("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")
        }
        counters[task.name] = (
            int(fields[11]),
            int(fields[12]),
            switches.get("voluntary_ctxt_switches", 0),
            switches.get("nonvoluntary_ctxt_switches", 0),
        )
    return counters


def _percentile(sorted_values: list[float], fraction: float) -> float:
    return sorted_values[min(len(sorted_values) - 1, int(fraction * len(sorted_values)))]


def _load() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


def probe(bootstrap_servers: str, topic: str, records: int, warmup: int, stages: bool) -> None:
    """Run the round trips and print the report."""
    value = b"v" * 100
    producer = Producer(
        bootstrap_servers=bootstrap_servers, acks=1, linger_ms=0, enable_idempotence=False
    )
    try:
        producer.partitions_for(topic)
        for index in range(warmup):
            producer.send(topic, value, str(index).encode()).get(timeout=30)
        main_thread = str(threading.get_native_id())
        load_before = _load()
        counters_before = _thread_counters()
        latencies: list[float] = []
        stage_times: dict[str, list[float]] = {}
        with _stage_stamps() if stages else _no_stamps():
            for index in range(records):
                _stamps.clear()
                start = time.perf_counter_ns()
                producer.send(topic, value, str(index).encode()).get(timeout=30)
                end = time.perf_counter_ns()
                latencies.append((end - start) / 1000)
                for stage, stamp in _stamps.items():
                    stage_times.setdefault(stage, []).append((stamp - start) / 1000)
        counters_after = _thread_counters()
    finally:
        producer.close()

    latencies.sort()
    print(f"{records} records one at a time (after {warmup} warm-up), linger_ms=0, acks=1")
    print(f"load average before: {load_before}; after: {_load()}")
    points = [_percentile(latencies, fraction) for fraction in (0.5, 0.9, 0.99, 0.999)]
    print(
        "latency us: p50 {:.0f}  p90 {:.0f}  p99 {:.0f}  p99.9 {:.0f}".format(*points)
        + f"  mean {statistics.fmean(latencies):.0f}"
    )
    ticks_per_second = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    per_record = 1e6 / ticks_per_second / max(records, 1)
    for thread, before in sorted(counters_before.items()):
        after = counters_after.get(thread)
        if after is None:
            continue
        user, system, voluntary, involuntary = (
            new - old for new, old in zip(after, before, strict=True)
        )
        role = "the caller" if thread == main_thread else "the I/O thread, or another"
        if (user + system) * per_record >= 1:
            print(
                f"per record, thread {thread} ({role}): CPU {(user + system) * per_record:.0f} us"
                f" (user {user * per_record:.0f}, sys {system * per_record:.0f}), context"
                f" switches {voluntary / max(records, 1):.2f} voluntary,"
                f" {involuntary / max(records, 1):.2f} involuntary"
            )
    if stage_times:
        print("stage reached, us after send() was called:   p50     p90     p99")
        ordered = sorted(stage_times.items(), key=lambda item: statistics.median(item[1]))
        for stage, times in [*ordered, ("get() returned", latencies)]:
            times.sort()
            print(
                f"  {stage:42s} {_percentile(times, 0.5):7.0f} "
                f"{_percentile(times, 0.9):7.0f} {_percentile(times, 0.99):7.0f}"
            )


@contextmanager
def _no_stamps() -> Iterator[None]:
    yield


def main() -> None:
    """Command line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=3000)
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--stages", action="store_true", help="stamp the round trip's stages")
    parser.add_argument("--bootstrap-servers", help="a running broker (default: start one)")
    parser.add_argument("--topic", default="latency-probe", help="with --bootstrap-servers")
    args = parser.parse_args()
    if args.bootstrap_servers:
        probe(args.bootstrap_servers, args.topic, args.records, args.warmup, args.stages)
        return
    with LocalBroker() as broker:
        broker.create_topic(args.topic, partitions=6)
        probe(broker.bootstrap_servers, args.topic, args.records, args.warmup, args.stages)


if __name__ == "__main__":
    main()
