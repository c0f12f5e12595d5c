"""Bytecodes the producer's I/O thread runs per record, function by function, on a bench
workload (default ``large``), against a LocalBroker.

Instruction counts (callgrind) give the interpreter's loop as one function; this says which
Python functions of the Sender, the network client and the protocol run it. The Sender's
thread is traced with ``sys.settrace`` opcode events (the caller's thread is not), so it runs
several times slower than usual: the counts and calls are what to read, not the time. The
linger is the workload's (5 ms), as in the timed bench. Run from the repository root, either
build::

    python -m benchmarks.io_thread_bytecodes [--workload large] [--records 6000] [--top 30]
    KAFKALINE_PURE_PYTHON=1 python -m benchmarks.io_thread_bytecodes
"""

from __future__ import annotations

import argparse
import collections
import sys
import uuid
from types import FrameType
from typing import Any

from benchmarks.workloads import ISSUE_WORKLOADS, make_records
from kafkaline import Producer
from kafkaline.producer import sender as sender_module
from kafkaline.testing import LocalBroker

_OPCODES: collections.Counter[str] = collections.Counter()
_CALLS: collections.Counter[str] = collections.Counter()


def _tracer(frame: FrameType, event: str, arg: Any) -> Any:
    if event != "call":
        return None
    code = frame.f_code
    key = f"{code.co_filename.rsplit('src/', 1)[-1]}:{code.co_name}"
    _CALLS[key] += 1
    frame.f_trace_opcodes = True

    def local(frame: FrameType, event: str, arg: Any) -> Any:
        if event == "opcode":
            _OPCODES[key] += 1
        return local

    return local


def _traced_sender_thread() -> None:
    run = sender_module.Sender._run

    def traced(self: sender_module.Sender) -> None:
        sys.settrace(_tracer)
        try:
            run(self)
        finally:
            sys.settrace(None)

    sender_module.Sender._run = traced  # type: ignore[method-assign]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", default="large")
    parser.add_argument("--records", type=int, default=6000)
    parser.add_argument("--top", type=int, default=30)
    args = parser.parse_args()
    workload = next(w for w in ISSUE_WORKLOADS if w.name == args.workload)
    records = make_records(workload, args.records)
    _traced_sender_thread()
    with LocalBroker() as broker:
        topic = f"io-bytecodes-{uuid.uuid4().hex[:8]}"
        broker.create_topic(topic, partitions=workload.partitions)
        producer = Producer(
            bootstrap_servers=broker.bootstrap_servers,
            acks=workload.acks,
            linger_ms=workload.linger_ms,
            batch_size=workload.batch_size,
            compression_type=workload.compression,
            buffer_memory=workload.buffer_memory,
            enable_idempotence=False,
        )
        keys = records.keys
        for index, value in enumerate(records.values):
            producer.send(topic, value=value, key=keys[index] if keys else None)
        producer.flush()
        metrics = producer.metrics()
        producer.close()
    total = sum(_OPCODES.values())
    print(
        f"I/O thread: {total / args.records:,.1f} bytecodes a record; "
        f"{metrics['records-per-batch-avg']:.1f} records a batch, "
        f"{metrics['records-per-request-avg']:.1f} a request"
    )
    for key, count in _OPCODES.most_common(args.top):
        per_call = count / _CALLS[key]
        print(f"{count / args.records:8.1f} a record {_CALLS[key]:7d} calls {per_call:7.1f}  {key}")


if __name__ == "__main__":
    main()
