"""Python calls and CPU per sync round trip (``send(...).get()``, linger 0), per thread.

    python -m benchmarks.latency_calls [--records 3000] [--profile-records 1000]
        [--trace-records 300] [--top 25] [--partitions 6] [--by-function]

Starts a LocalBroker and one topic (6 partitions unless told), then runs the `latency`
workload's loop twice after a warm-up: once timed (p50/p99, CPU per round trip of the
caller's thread and of the I/O thread, from ``/proc/self/task/*/schedstat``), once under
cProfile in both threads (Python function calls per round trip, and the busiest functions),
once under sys.settrace (bytecodes executed per round trip in each thread: deterministic,
unlike CPU time on a loaded machine). The side-by-side figures against confluent-kafka come
from ``python -m benchmarks --workloads latency``; this script says where kafkaline's cost
sits.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import threading
import time
from types import FrameType
from typing import Any

from benchmarks.measure import thread_cpu_ns
from kafkaline import Producer
from kafkaline.producer import sender as sender_module
from kafkaline.testing import LocalBroker

_WARMUP = 200
_VALUE = b"v" * 100


def _loop(producer: Producer, topic: str, count: int) -> list[float]:
    timings = []
    for index in range(count):
        start = time.perf_counter()
        producer.send(topic, _VALUE, b"key-%d" % (index % 10_000)).get(timeout=30)
        timings.append(time.perf_counter() - start)
    return timings


def _opcode_counter(counter: list[int], by_function: dict[str, int] | None = None) -> Any:
    """A sys.settrace function adding the bytecodes executed to ``counter[0]`` (and, per
    function, to ``by_function`` when given)."""

    def trace(frame: FrameType, event: str, arg: object) -> Any:
        frame.f_trace_opcodes = True
        if event == "opcode":
            counter[0] += 1
            if by_function is not None:
                code = frame.f_code
                name = f"{code.co_filename.rsplit('/', 1)[-1]}:{code.co_name}"
                by_function[name] = by_function.get(name, 0) + 1
        return trace

    return trace


def _percentile(ordered: list[float], fraction: float) -> float:
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--records", type=int, default=3000)
    parser.add_argument("--profile-records", type=int, default=1000)
    parser.add_argument("--trace-records", type=int, default=300)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--partitions", type=int, default=6, help="of the topic (default 6)")
    parser.add_argument(
        "--by-function",
        action="store_true",
        help="also print each thread's bytecodes per round trip by function",
    )
    args = parser.parse_args()

    io_profile = cProfile.Profile()
    profiling = threading.Event()
    tracing = threading.Event()
    io_opcodes = [0]
    io_by_function: dict[str, int] | None = {} if args.by_function else None
    original_run = sender_module.Sender.run_once

    def profiled_run_once(self: Any, now: float | None = None) -> None:
        # Profiles the I/O thread's passes only while the profiled loop runs.
        if tracing.is_set():
            sys.settrace(_opcode_counter(io_opcodes, io_by_function))
            try:
                original_run(self, now)
            finally:
                sys.settrace(None)
        elif profiling.is_set():
            io_profile.enable()
            try:
                original_run(self, now)
            finally:
                io_profile.disable()
        else:
            original_run(self, now)

    sender_module.Sender.run_once = profiled_run_once  # type: ignore[method-assign]

    with LocalBroker() as broker:
        topic = "latency-calls"
        broker.create_topic(topic, partitions=args.partitions)
        with Producer(bootstrap_servers=broker.bootstrap_servers, linger_ms=0, acks=1) as producer:
            _loop(producer, topic, _WARMUP)
            caller = threading.get_native_id()
            before = thread_cpu_ns() or {}
            timings = _loop(producer, topic, args.records)
            after = thread_cpu_ns() or {}
            used = {tid: ns - before.get(tid, 0) for tid, ns in after.items() if tid in before}
            caller_ns = used.pop(caller, 0)
            io_ns = max(used.values(), default=0)  # the Sender's thread is the busy one

            caller_profile = cProfile.Profile()
            profiling.set()
            caller_profile.enable()
            _loop(producer, topic, args.profile_records)
            caller_profile.disable()
            profiling.clear()

            caller_opcodes = [0]
            caller_by_function: dict[str, int] | None = {} if args.by_function else None
            tracing.set()
            sys.settrace(_opcode_counter(caller_opcodes, caller_by_function))
            _loop(producer, topic, args.trace_records)
            sys.settrace(None)
            tracing.clear()

    ordered = sorted(timings)
    n = args.records
    print(f"round trips: {n} timed, {args.profile_records} profiled")
    p50, p99 = _percentile(ordered, 0.5) * 1e3, _percentile(ordered, 0.99) * 1e3
    print(f"p50 {p50:.3f} ms, p99 {p99:.3f} ms")
    caller_us, io_us = caller_ns / n / 1e3, io_ns / n / 1e3
    print(f"CPU per round trip: caller {caller_us:.1f} us, I/O thread {io_us:.1f} us")
    for name, profile in (("caller", caller_profile), ("I/O thread", io_profile)):
        stats = pstats.Stats(profile)
        calls = stats.total_calls  # type: ignore[attr-defined]
        print(f"{name}: {calls / args.profile_records:.1f} Python calls per round trip")
    for name, count in (("caller", caller_opcodes[0]), ("I/O thread", io_opcodes[0])):
        print(f"{name}: {count / args.trace_records:.0f} bytecodes per round trip")
    for name, profile in (("caller", caller_profile), ("I/O thread", io_profile)):
        _print_functions(name, profile, args.profile_records, args.top)
    for name, by_function in (("caller", caller_by_function), ("I/O thread", io_by_function)):
        if by_function is not None:
            print(f"{name}, bytecodes per round trip by function:")
            for function, count in sorted(by_function.items(), key=lambda item: -item[1]):
                print(f"  {count / args.trace_records:7.1f}  {function}")


def _print_functions(name: str, profile: cProfile.Profile, per: int, top: int) -> None:
    print(f"{name}, calls per round trip by function:")
    stats = pstats.Stats(profile)
    rows = sorted(
        stats.stats.items(),  # type: ignore[attr-defined]
        key=lambda item: -item[1][1],
    )
    for (path, line, func), (_, ncalls, tottime, cumtime, _) in rows[:top]:
        where = "/".join(path.rsplit("/", 2)[-2:])
        print(
            f"  {ncalls / per:6.2f}  {where}:{line}({func})"
            f"  self {tottime / per * 1e6:.1f} us, with callees {cumtime / per * 1e6:.1f} us"
        )


if __name__ == "__main__":
    main()
