"""One run in its own process: ``python -m benchmarks.child --client C --workload W ...``.

Started by the harness (:mod:`benchmarks.harness`) once per client, workload and round, so
that no client shares an interpreter, a GIL or a heap with another, and each one's CPU time
and memory are its own. It writes one :class:`~benchmarks.result.RunResult` as JSON to
``--result``. What it does, in order:

1. check the client is available (else report "unavailable") and does the workload;
2. make the records, open the producer, learn the topic's partitions, prepare the input;
3. note the idle RSS and reset the peak, start the clock;
4. produce everything and wait for every acknowledgement (or measure each record's latency);
5. stop the clock, read the peak RSS, close the producer (not timed).
"""

from __future__ import annotations

import argparse
import gc
import sys
import traceback
from pathlib import Path

from benchmarks.clients import ClientUnavailable, make_adapter
from benchmarks.measure import (
    Stopwatch,
    current_rss,
    peak_rss,
    percentile,
    reset_peak_rss,
)
from benchmarks.result import RunResult, Status
from benchmarks.workloads import (
    Kind,
    Records,
    Sizes,
    Workload,
    make_records,
    workload_by_name,
    workloads_for,
)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.child", description=__doc__)
    parser.add_argument("--client", required=True)
    parser.add_argument("--workload", required=True)
    parser.add_argument("--bootstrap-servers", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--result", required=True, type=Path, help="where to write the JSON")
    parser.add_argument(
        "--sizes", type=Sizes, default=Sizes.DEFAULT, help="which record counts (see workloads)"
    )
    parser.add_argument("--raw-connections", type=int, default=None)
    parser.add_argument("--raw-in-flight", type=int, default=None)
    return parser.parse_args(argv)


def resolve_workload(name: str, sizes: Sizes) -> Workload:
    return workload_by_name(name, workloads_for(sizes))


def _measured_part(records: Records, warmup: int) -> Records:
    return Records(keys=records.keys[warmup:], values=records.values[warmup:])


def run(args: argparse.Namespace) -> RunResult:
    workload = resolve_workload(args.workload, args.sizes)
    result = RunResult(client=args.client, workload=workload.name, status=Status.OK)
    adapter = make_adapter(
        args.client,
        workload,
        raw_connections=args.raw_connections,
        raw_in_flight=args.raw_in_flight,
    )
    try:
        adapter.check_available()
    except ClientUnavailable as exc:
        result.status, result.detail = Status.UNAVAILABLE, str(exc)
        return result
    reason = adapter.unsupported_reason()
    if reason is not None:
        result.status, result.detail = Status.UNSUPPORTED, reason
        return result

    records = make_records(workload, count=workload.expected_records)
    measured = _measured_part(records, workload.warmup_records)
    stopwatch = Stopwatch()
    adapter.open(args.bootstrap_servers, args.topic)
    try:
        adapter.prepare(records)
        gc.collect()  # garbage from making the input must not count as the client's memory
        result.idle_rss = current_rss()
        result.peak_rss_reset = reset_peak_rss()
        stopwatch.start()
        if workload.kind is Kind.LATENCY:
            timings = adapter.latencies(records, workload.warmup_records)
        else:
            adapter.produce_all(records)
        span = stopwatch.stop()
        result.peak_rss = peak_rss()
    finally:
        adapter.close()

    result.records_sent = len(measured.values)
    result.payload_bytes = measured.payload_bytes
    result.wall_s = span.wall_s
    result.cpu_user_s = span.cpu_user_s
    result.cpu_sys_s = span.cpu_sys_s
    if workload.kind is Kind.LATENCY:
        if len(timings) != result.records_sent:
            raise RuntimeError(f"{len(timings)} latencies for {result.records_sent} records")
        ordered = sorted(timings)
        result.latency_p50_ms = percentile(ordered, 0.50) * 1e3
        result.latency_p99_ms = percentile(ordered, 0.99) * 1e3
        result.latency_p999_ms = percentile(ordered, 0.999) * 1e3
        result.latency_max_ms = ordered[-1] * 1e3
    return result


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        result = run(args)
    except Exception as exc:  # reported as a failed run; the traceback goes to the log
        traceback.print_exc(file=sys.stderr)
        result = RunResult(
            client=args.client,
            workload=args.workload,
            status=Status.FAILED,
            detail=f"{type(exc).__name__}: {exc}",
        )
    args.result.write_text(result.dumps())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
