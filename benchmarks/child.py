"""One run in its own process: ``python -m benchmarks.child --client C --workload W ...``.

Started by the harness (:mod:`benchmarks.harness`) once per client, workload and round, so
that no client shares an interpreter, a GIL or a heap with another, and each one's CPU time
and memory are its own. It writes one :class:`~benchmarks.result.RunResult` as JSON to
``--result``. What it does, in order:

1. check the client is available (else report "unavailable") and does the workload;
2. make the records, open the producer, learn the topic's partitions, prepare the input;
3. note the idle RSS and reset the peak, start the clock;
4. produce everything and wait for every acknowledgement (or measure each record's latency);
5. stop the clock, read the peak RSS and each thread's CPU time, close the producer (not
   timed).

The harness passes the workload whole, as JSON (``--workload-json``), so variants (another
partition count, another record count) need no name here; ``--workload NAME`` is for running
a child by hand. ``--input-records M`` makes M records and sends the first N (the workload's
count): the instruction-count mode runs two lengths that must do the same work apart from
sending, so making the input must cost the same in both.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import traceback
from pathlib import Path

from benchmarks.clients import ClientUnavailable, client_environment, make_adapter
from benchmarks.measure import (
    Stopwatch,
    current_rss,
    peak_rss,
    percentile,
    reset_peak_rss,
    split_thread_cpu,
    thread_cpu_ns,
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
    workload = parser.add_mutually_exclusive_group(required=True)
    workload.add_argument("--workload", help="a workload by name (of --sizes)")
    workload.add_argument("--workload-json", help="a whole workload, as Workload.to_json gives")
    parser.add_argument("--bootstrap-servers", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--result", required=True, type=Path, help="where to write the JSON")
    parser.add_argument(
        "--sizes", type=Sizes, default=Sizes.DEFAULT, help="which record counts (see workloads)"
    )
    parser.add_argument(
        "--input-records", type=int, default=None, help="records to make (default: as sent)"
    )
    parser.add_argument("--raw-connections", type=int, default=None)
    parser.add_argument("--raw-in-flight", type=int, default=None)
    return parser.parse_args(argv)


def resolve_workload(args: argparse.Namespace) -> Workload:
    if args.workload_json is not None:
        return Workload.from_json(json.loads(args.workload_json))
    return workload_by_name(args.workload, workloads_for(args.sizes))


def check_environment(client: str) -> None:
    """Refuse to run a client whose process lacks the environment it must have (a child
    started by hand as kafkaline-pure without KAFKALINE_PURE_PYTHON=1 would measure the
    compiled build under the pure build's name)."""
    missing = {
        name: value
        for name, value in client_environment(client).items()
        if os.environ.get(name) != value
    }
    if missing:
        wanted = " ".join(f"{name}={value}" for name, value in missing.items())
        raise RuntimeError(f"{client} must run with {wanted} (the harness sets it)")


def run(args: argparse.Namespace) -> RunResult:
    check_environment(args.client)
    workload = resolve_workload(args)
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

    made = max(args.input_records or 0, workload.expected_records)
    records = make_records(workload, count=made)
    if made > workload.expected_records:
        records = Records(
            keys=records.keys[: workload.expected_records],
            values=records.values[: workload.expected_records],
        )
    # The input is the bench's, not the client's: frozen, the collector's passes skip it (under
    # callgrind, walking it counted as every client's instructions per record).
    gc.freeze()
    stopwatch = Stopwatch()
    adapter.open(args.bootstrap_servers, args.topic)
    try:
        adapter.prepare(records)
        gc.collect()  # garbage from making the input must not count as the client's memory
        gc.freeze()  # nor the input as the adapter prepared it
        result.idle_rss = current_rss()
        result.peak_rss_reset = reset_peak_rss()
        threads_before = thread_cpu_ns()
        stopwatch.start()
        if workload.kind is Kind.LATENCY:
            timings = adapter.latencies(records, workload.warmup_records)
        else:
            adapter.produce_all(records)
        span = stopwatch.stop()
        threads_after = thread_cpu_ns()
        result.peak_rss = peak_rss()
    finally:
        adapter.close()

    # The payload's bytes are the harness's to count (workloads.payload_of).
    result.records_sent = len(records.values) - workload.warmup_records
    result.wall_s = span.wall_s
    result.cpu_user_s = span.cpu_user_s
    result.cpu_sys_s = span.cpu_sys_s
    if threads_before is not None and threads_after is not None:
        split = split_thread_cpu(threads_before, threads_after)
        result.cpu_caller_s, result.cpu_io_s = split.caller_s, split.others_s
    if workload.kind is Kind.LATENCY:
        if len(timings) != result.records_sent:
            raise RuntimeError(f"{len(timings)} latencies for {result.records_sent} records")
        ordered = sorted(timings)
        result.latency_p50_ms = percentile(ordered, 0.50) * 1e3
        result.latency_p99_ms = percentile(ordered, 0.99) * 1e3
        result.latency_p999_ms = percentile(ordered, 0.999) * 1e3
        result.latency_max_ms = ordered[-1] * 1e3
    return result


def _workload_name(args: argparse.Namespace) -> str:
    if args.workload is not None:
        return str(args.workload)
    try:
        return str(json.loads(args.workload_json)["name"])
    except (ValueError, KeyError, TypeError):
        return "(unreadable --workload-json)"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        result = run(args)
    except Exception as exc:  # reported as a failed run; the traceback goes to the log
        traceback.print_exc(file=sys.stderr)
        result = RunResult(
            client=args.client,
            workload=_workload_name(args),
            status=Status.FAILED,
            detail=f"{type(exc).__name__}: {exc}",
        )
    args.result.write_text(result.dumps())
    return 0


if __name__ == "__main__":
    status = main()
    # Without the interpreter's teardown: freeing the input record by record would count as
    # the client's instructions per record under callgrind. The client is closed by now.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)
