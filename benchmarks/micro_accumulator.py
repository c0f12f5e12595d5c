"""Micro-benchmark of RecordAccumulator.append(): us per record on the hot path, and why.

Records: 100-byte values, 10-byte keys, 64 KiB batches, partition given (keyed records), one
partition or six in turn; the future of every record is made (it is part of append). Every
~450 records a new batch is made, with its buffer-pool accounting: that cost is included,
spread over the records. Run:

    .venv/bin/python benchmarks/micro_accumulator.py [--records N] [--repeats R]
        [--breakdown] [--threads] [--profile]

Reports the best and the median of R runs, in process CPU time (the machines are shared and
noisy: read the best as "what the code costs"). ``--breakdown`` times the pieces of the hot
path on their own (what dominates); ``--threads`` compares one lock per partition queue with one
lock for the whole accumulator under 4 appending threads and a draining thread (a model of
both, same work inside the locks); ``--profile`` prints a cProfile of one run.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import statistics
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import NamedTuple

from kafkaline.producer.accumulator import RecordAccumulator
from kafkaline.producer.buffer_pool import BufferPool
from kafkaline.producer.futures import FutureRecordMetadata, ProduceRequestResult
from kafkaline.record import RecordBatchBuilder

BATCH_SIZE = 64 * 1024
TIMESTAMP = 1_700_000_000_000


def make_records(count: int) -> tuple[list[bytes], list[bytes]]:
    keys = [os.urandom(10) for _ in range(count)]
    values = [os.urandom(100) for _ in range(count)]
    return keys, values


def new_accumulator() -> RecordAccumulator:
    return RecordAccumulator(
        batch_size=BATCH_SIZE, buffer_pool=BufferPool(1 << 30, BATCH_SIZE), linger_ms=5
    )


def append_loop(keys: list[bytes], values: list[bytes], partitions: int) -> float:
    """Append every record; return the process CPU seconds it took."""
    accumulator = new_accumulator()
    append = accumulator.append
    for partition in range(partitions):  # queues exist: measure steady state, not creation
        append("bench", partition, TIMESTAMP, keys[0], values[0], None, 0.0, 0.0)
    plan = [(keys[i], values[i], i % partitions) for i in range(len(values))]
    start = time.process_time()
    for key, value, partition in plan:
        append("bench", partition, TIMESTAMP, key, value, None, 1000.0, 1.0)
    return time.process_time() - start


def report(name: str, runs: list[float], records: int) -> None:
    per_record = [run / records * 1e6 for run in runs]
    print(
        f"{name:58s} best {min(per_record):6.3f} us/record   "
        f"median {statistics.median(per_record):6.3f}"
    )


# --------------------------------------------------------------------------- breakdown


def best_ns(loop: Callable[[int], None], count: int = 20_000, rounds: int = 40) -> float:
    """Best ns per iteration of ``loop(count)`` over ``rounds``, less an empty loop's."""

    def empty(n: int) -> None:
        for _ in range(n):
            pass

    def best(fn: Callable[[int], None]) -> float:
        result = float("inf")
        for _ in range(rounds):
            start = time.perf_counter_ns()
            fn(count)
            result = min(result, time.perf_counter_ns() - start)
        return result / count

    return best(loop) - best(empty)


class _NamedResult(NamedTuple):
    future: FutureRecordMetadata
    batch_is_full: bool
    new_batch_created: bool


def breakdown() -> None:
    key, value = os.urandom(10), os.urandom(100)
    result = ProduceRequestResult("bench", 0)
    lock = threading.Lock()
    new_tuple = tuple.__new__

    def builder_append(n: int) -> None:
        builder = RecordBatchBuilder(batch_size_limit=1 << 30)
        append = builder.append
        for _ in range(n):
            append(TIMESTAMP, key, value, None)

    def builder_append_full_batches(n: int) -> None:
        builder = RecordBatchBuilder(batch_size_limit=BATCH_SIZE)
        for _ in range(n):
            if builder.append(TIMESTAMP, key, value, None) is None:
                builder = RecordBatchBuilder(batch_size_limit=BATCH_SIZE)
                builder.append(TIMESTAMP, key, value, None)

    def lock_with(n: int) -> None:
        for _ in range(n):
            with lock:
                pass

    def lock_acquire_finally(n: int) -> None:
        for _ in range(n):
            lock.acquire()
            try:
                pass
            finally:
                lock.release()

    def future_tuple_new(n: int) -> None:
        for i in range(n):
            new_tuple(FutureRecordMetadata, (result, i, 10, 100, TIMESTAMP))

    def future_class_call(n: int) -> None:
        for i in range(n):
            FutureRecordMetadata(result, i, 10, 100, TIMESTAMP)

    def result_plain_tuple(n: int) -> None:
        for i in range(n):
            (result, i > 1, False)  # noqa: B018 - the tuple is what is measured

    def result_named_tuple(n: int) -> None:
        future = new_tuple(FutureRecordMetadata, (result, 0, 10, 100, TIMESTAMP))
        for i in range(n):
            new_tuple(_NamedResult, (future, i > 1, False))

    def event(n: int) -> None:
        for _ in range(n):
            threading.Event()

    accumulator = new_accumulator()
    accumulator.append("bench", 0, TIMESTAMP, key, value, None, 0.0, 0.0)

    def full_append(n: int) -> None:
        append = accumulator.append
        for _ in range(n):
            append("bench", 0, TIMESTAMP, key, value, None, 1000.0, 1.0)

    for name, loop in [
        ("RecordBatchBuilder.append, no size limit reached", builder_append),
        (
            "RecordBatchBuilder.append, 64 KiB batches (encodes at limit)",
            builder_append_full_batches,
        ),
        ("lock: with", lock_with),
        ("lock: acquire / try / finally release", lock_acquire_finally),
        ("future: tuple.__new__(FutureRecordMetadata, ...)", future_tuple_new),
        ("future: FutureRecordMetadata(...) (NamedTuple __new__)", future_class_call),
        ("append result: plain tuple", result_plain_tuple),
        ("append result: NamedTuple via tuple.__new__", result_named_tuple),
        ("threading.Event() (why no Event per record)", event),
        ("RecordAccumulator.append, whole (incl. new batches)", full_append),
    ]:
        print(f"  {name:58s} {best_ns(loop):7.0f} ns")


# --------------------------------------------------------------------------- locking model


def locking_model(per_partition: bool, records_per_thread: int, threads: int = 4) -> float:
    """Wall seconds for ``threads`` threads to append ``records_per_thread`` records each over
    6 partitions while a drainer thread takes every full batch each millisecond, the queues
    guarded by one lock each or by one shared lock (held by the drainer for its whole pass, as
    a single accumulator lock would be)."""
    partitions = 6
    shared = threading.Lock()
    locks = [threading.Lock() if per_partition else shared for _ in range(partitions)]
    queues: list[deque[RecordBatchBuilder]] = [
        deque([RecordBatchBuilder(batch_size_limit=BATCH_SIZE)]) for _ in range(partitions)
    ]
    key, value = os.urandom(10), os.urandom(100)
    stop = threading.Event()

    def appender(offset: int) -> None:
        for i in range(records_per_thread):
            p = (i + offset) % partitions
            lock = locks[p]
            with lock:
                queue = queues[p]
                if queue[-1].append(TIMESTAMP, key, value) is None:
                    builder = RecordBatchBuilder(batch_size_limit=BATCH_SIZE)
                    builder.append(TIMESTAMP, key, value)
                    queue.append(builder)

    def drain_pass() -> list[RecordBatchBuilder]:
        taken: list[RecordBatchBuilder] = []
        for p in range(partitions):
            queue = queues[p]
            while len(queue) > 1:
                taken.append(queue.popleft())
        return taken

    def drainer() -> None:
        while not stop.wait(0.001):
            if per_partition:
                taken = []
                for p in range(partitions):
                    with locks[p]:
                        queue = queues[p]
                        while len(queue) > 1:
                            taken.append(queue.popleft())
            else:
                with shared:
                    taken = drain_pass()
            for builder in taken:
                builder.seal()  # outside the lock in both models, as drain() does

    workers = [threading.Thread(target=appender, args=(i,)) for i in range(threads)]
    sender = threading.Thread(target=drainer)
    sender.start()
    start = time.perf_counter()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    elapsed = time.perf_counter() - start
    stop.set()
    sender.join()
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--breakdown", action="store_true")
    parser.add_argument("--threads", action="store_true")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    keys, values = make_records(args.records)
    for partitions in (1, 6):
        runs = [append_loop(keys, values, partitions) for _ in range(args.repeats)]
        report(f"append(), keyed, {partitions} partition(s)", runs, args.records)
    if args.breakdown:
        print("hot path pieces (best ns per call, empty loop subtracted):")
        breakdown()
    if args.threads:
        per_thread = args.records // 4
        for per_partition in (True, False):
            runs = [locking_model(per_partition, per_thread) for _ in range(args.repeats)]
            name = "one lock per queue" if per_partition else "one shared lock"
            report(f"4 threads + drainer, {name} (wall)", runs, per_thread * 4)
    if args.profile:
        profiler = cProfile.Profile()
        profiler.runcall(append_loop, keys, values, 6)
        pstats.Stats(profiler).sort_stats("tottime").print_stats(8)


if __name__ == "__main__":
    main()
