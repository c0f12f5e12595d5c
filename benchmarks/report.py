"""Turning runs into the results table: medians, spreads, ratios to confluent-kafka.

Only runs whose read-back count was right enter a median; failed runs are listed apart with
why. "Spread" is the lowest and highest value of the good runs. Ratios divide medians: for
throughput higher is better, for latency and memory lower is better (the table says which).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from benchmarks.clients import BROKER_LIMIT_CLIENT
from benchmarks.harness import BenchRun
from benchmarks.machine import scrub_paths
from benchmarks.summary import (
    MIB,
    Stat,
    Summary,
    caller_cpu_per_million,
    cpu_per_million,
    idle_mib,
    io_cpu_per_million,
    mb_per_s,
    rate,
    records_per_s,
    reference_for,
    rss_above_idle_mib,
    summarise,
)
from benchmarks.targets import target_lines
from benchmarks.workloads import Kind, Sizes, Workload, describe

# ---------------------------------------------------------------------------- formatting


def _spread(stat: Stat | None, fmt: Callable[[float], str]) -> str:
    return f"{fmt(stat.low)} - {fmt(stat.high)}" if stat else "-"


def _median(stat: Stat | None, fmt: Callable[[float], str]) -> str:
    return fmt(stat.median) if stat else "-"


def _ratio(stat: Stat | None, reference: Stat | None) -> str:
    if stat is None or reference is None or reference.median == 0:
        return "-"
    return f"{stat.median / reference.median:.2f}x"


def _verified(summary: Summary) -> str:
    """The records read back per good run (each equals what was sent, or the run failed)."""
    counts = sorted({r.records_read for r in summary.good if r.records_read is not None})
    return " / ".join(f"{count:,}" for count in counts) if counts else "-"


def _runs(summary: Summary, rounds: int) -> str:
    text = f"{len(summary.good)}/{rounds}"
    return text + f" ({len(summary.failed)} failed)" if summary.failed else text


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def _throughput_rows(summaries: Sequence[Summary], rounds: int) -> list[list[str]]:
    rows = []
    for summary in summaries:
        if summary.workload.kind is not Kind.THROUGHPUT:
            continue
        reference = reference_for(summaries, summary.workload.name)
        records = summary.stat(records_per_s)
        cpu = summary.stat(cpu_per_million)
        ref_records = reference.stat(records_per_s) if reference else None
        ref_cpu = reference.stat(cpu_per_million) if reference else None
        rows.append(
            [
                summary.workload.name,
                summary.client,
                _runs(summary, rounds),
                _verified(summary),
                _median(records, rate),
                _spread(records, rate),
                _median(summary.stat(mb_per_s), "{:.1f}".format),
                _ratio(records, ref_records),
                _median(cpu, "{:.2f}".format),
                _ratio(cpu, ref_cpu),
            ]
        )
    return rows


def _thread_cpu_rows(summaries: Sequence[Summary]) -> list[list[str]]:
    rows = []
    seconds = "{:.2f}".format
    for summary in summaries:
        if summary.workload.kind is not Kind.THROUGHPUT:
            continue
        caller = summary.stat(caller_cpu_per_million)
        io = summary.stat(io_cpu_per_million)
        if caller is None or io is None:
            continue
        reference = reference_for(summaries, summary.workload.name)
        ref_caller = reference.stat(caller_cpu_per_million) if reference else None
        ref_io = reference.stat(io_cpu_per_million) if reference else None
        rows.append(
            [
                summary.workload.name,
                summary.client,
                _median(caller, seconds),
                _spread(caller, seconds),
                _ratio(caller, ref_caller),
                _median(io, seconds),
                _spread(io, seconds),
                _ratio(io, ref_io),
                _median(summary.stat(cpu_per_million), seconds),
            ]
        )
    return rows


def _apart_from_partitions(workload: Workload) -> Workload:
    return replace(workload, name="", partitions=0)


def _partition_rows(summaries: Sequence[Summary]) -> list[list[str]]:
    """Throughput workloads run at several partition counts: CPU per record by count, and its
    growth from the smallest count, per client (empty when one count ran)."""
    counts = sorted({s.workload.partitions for s in summaries})
    if len(counts) < 2:
        return []
    rows = []
    seconds = "{:.2f}".format
    for summary in summaries:
        if summary.workload.kind is not Kind.THROUGHPUT:
            continue
        base = next(
            (
                s
                for s in summaries
                if s.client == summary.client
                and s.workload.partitions == counts[0]
                and _apart_from_partitions(s.workload) == _apart_from_partitions(summary.workload)
            ),
            None,
        )
        cpu = summary.stat(cpu_per_million)
        records = summary.stat(records_per_s)
        base_cpu = base.stat(cpu_per_million) if base else None
        reference = reference_for(summaries, summary.workload.name)
        ref_records = reference.stat(records_per_s) if reference else None
        ref_cpu = reference.stat(cpu_per_million) if reference else None
        rows.append(
            [
                f"{summary.workload.partitions:,}",
                summary.client,
                _median(records, rate),
                _ratio(records, ref_records),
                _median(cpu, seconds),
                _ratio(cpu, ref_cpu),
                _median(summary.stat(caller_cpu_per_million), seconds),
                _median(summary.stat(io_cpu_per_million), seconds),
                _ratio(cpu, base_cpu),
            ]
        )
    return rows


def _latency_rows(summaries: Sequence[Summary], rounds: int) -> list[list[str]]:
    rows = []
    ms = "{:.3f}".format
    for summary in summaries:
        if summary.workload.kind is not Kind.LATENCY:
            continue
        reference = reference_for(summaries, summary.workload.name)
        p99 = summary.stat(lambda r: r.latency_p99_ms)
        ref_p99 = reference.stat(lambda r: r.latency_p99_ms) if reference else None
        rows.append(
            [
                summary.workload.name,
                summary.client,
                _runs(summary, rounds),
                _verified(summary),
                _median(summary.stat(lambda r: r.latency_p50_ms), ms),
                _median(p99, ms),
                _spread(p99, ms),
                _median(summary.stat(lambda r: r.latency_p999_ms), ms),
                _ratio(p99, ref_p99),
                _median(summary.stat(cpu_per_million), "{:.1f}".format),
            ]
        )
    return rows


def _memory_rows(summaries: Sequence[Summary], rounds: int) -> list[list[str]]:
    rows = []
    mib = "{:.0f}".format
    for summary in summaries:
        if summary.workload.kind is not Kind.MEMORY:
            continue
        reference = reference_for(summaries, summary.workload.name)
        rss = summary.stat(rss_above_idle_mib)
        mb = summary.stat(mb_per_s)
        ref_mb = reference.stat(mb_per_s) if reference else None
        budget = (summary.workload.buffer_memory + 64 * MIB) / MIB
        within = "-" if rss is None else ("yes" if rss.median <= budget else "no")
        rows.append(
            [
                summary.workload.name,
                summary.client,
                _runs(summary, rounds),
                _verified(summary),
                _median(rss, mib),
                _spread(rss, mib),
                within,
                _median(summary.stat(idle_mib), mib),
                _median(mb, "{:.0f}".format),
                _ratio(mb, ref_mb),
                _median(summary.stat(cpu_per_million), "{:.2f}".format),
            ]
        )
    return rows


def machine_lines(bench: BenchRun) -> list[str]:
    machine = bench.machine
    start = ", ".join(f"{x:.2f}" for x in machine.load_average_start)
    end = ", ".join(f"{x:.2f}" for x in machine.load_average_end or ())
    per_run = [r.load_average_1m for r in bench.results if r.load_average_1m is not None]
    versions = ", ".join(f"{name} {version}" for name, version in machine.versions.items())
    lines = [
        f"- When: {machine.started_at}, {bench.duration_s / 60:.1f} min for {len(bench.results)} "
        f"runs ({bench.plan.rounds} round(s), sizes: {bench.plan.sizes.value})",
        f"- Machine: {machine.cpu_count} CPUs ({machine.cpu_model}), "
        f"{machine.memory_gib:.0f} GiB, {machine.system}; {machine.python}",
        f"- Load average (1, 5, 15 min): at start {start}; at end {end}"
        + (
            f"; 1-min load before each run: {min(per_run):.2f} - {max(per_run):.2f}"
            if per_run
            else ""
        ),
        "- The broker (one Tansu process, memory storage) and each client share these CPUs; "
        "other people's jobs may too (that is the load above).",
        f"- Broker: {machine.broker}; kafkaline commit {machine.kafkaline_commit}",
        f"- Versions: {versions}",
    ]
    return lines


def _config_lines(bench: BenchRun) -> list[str]:
    lines = [
        "How the common settings map onto each client (the `small` workload; other workloads "
        "change only the values: compression, `linger 0` for latency). Idempotence is off "
        "everywhere (acks=1 does not allow it); in-flight limits are each client's default.",
        "",
    ]
    rows = []
    small = bench.plan.workloads[0].name
    for client, by_workload in bench.configs.items():
        settings = by_workload.get(small, {})
        rows.append([client, ", ".join(f"`{k}={v}`" for k, v in settings.items())])
    lines += _table(["client", f"settings ({small})"], rows)
    lines += [
        "",
        "- kafka-python 3.x and aiokafka have no buffer-memory setting: kafka-python's "
        "accumulator is unbounded, aiokafka's `send()` waits while a partition's one open "
        "batch is full.",
        "- confluent-kafka: `queue.buffering.max.kbytes` is librdkafka's buffer memory; its "
        "message-count bound is lifted so that only bytes count, as elsewhere. Delivery "
        "reports are served only when the queue is full and by `flush()` (its fastest use).",
        "- kafkaline-batch / kafkaline-arrow hand over 10,000 records per call (Spark's Arrow "
        "batch size), fewer where that would be more than a quarter of buffer_memory (800 "
        "records of 10 KB); the Arrow batches are made before the clock starts.",
    ]
    return lines


def _workload_lines(bench: BenchRun) -> list[str]:
    return [f"- `{w.name}`: {describe(w)}" for w in bench.plan.workloads] + [
        "- Records/s and MB/s are wall-clock, from the first send to the last acknowledgement "
        "(flush); MB = 10^6 bytes of keys and values. CPU is the client process's user+sys "
        "seconds (all its threads) per million records over the same span.",
        "- Every run's topic is read back (kafkaline's Fetch and reader, every record "
        "decoded) and must hold exactly the records and key+value bytes sent; otherwise the "
        "run is failed and not timed.",
    ]


def skipped_lines(bench: BenchRun) -> list[str]:
    lines = [f"- {client}: not available: {why}" for client, why in bench.unavailable.items()]
    lines += [
        f"- {client} on `{workload}`: {why}"
        for (workload, client), why in bench.unsupported.items()
    ]
    return lines


def failure_lines(bench: BenchRun) -> list[str]:
    return [
        f"- {r.client} on `{r.workload}`, round {r.round}: {scrub_paths(r.detail)}"
        for r in bench.failed
    ]


def broker_limit_lines(summaries: Sequence[Summary]) -> list[str]:
    """What the broker accepted from the raw protocol loop, per throughput workload."""
    lines = []
    for summary in summaries:
        if summary.client != BROKER_LIMIT_CLIENT or summary.workload.kind is not Kind.THROUGHPUT:
            continue
        records = summary.stat(records_per_s)
        mb = summary.stat(mb_per_s)
        if records and mb:
            lines.append(
                f"- `{summary.workload.name}`: {rate(records.median)} records/s, "
                f"{mb.median:.0f} MB/s (spread {_spread(records, rate)} records/s)"
            )
    if lines:
        lines.insert(
            0,
            "Broker limit: what Tansu accepted from a raw protocol loop feeding pre-built "
            "batches (kafkaline's record and protocol layers, batches framed before the clock; "
            "median of the rounds):",
        )
    return lines


def render_markdown(bench: BenchRun) -> str:
    summaries = summarise(bench)
    rounds = bench.plan.rounds
    lines = ["# kafkaline producer benchmark", ""]
    lines += [*machine_lines(bench), ""]
    limit = broker_limit_lines(summaries)
    if limit:
        lines += [*limit, ""]
    targets = target_lines(summaries)
    if targets:
        lines += ["## Issue #5 targets", ""]
        if bench.plan.sizes is Sizes.QUICK:
            lines += [
                "Quick sizes: far too small to judge a target; shown to check the report.",
                "",
            ]
        lines += [*targets, ""]
    throughput = _throughput_rows(summaries, rounds)
    if throughput:
        lines += ["## Throughput (higher is better)", ""]
        lines += _table(
            [
                "workload",
                "client",
                "good runs",
                "read back",
                "records/s (median)",
                "spread (min - max)",
                "MB/s",
                "vs confluent-kafka",
                "CPU s / M records",
                "CPU vs confluent-kafka",
            ],
            throughput,
        )
        lines.append("")
    thread_cpu = _thread_cpu_rows(summaries)
    if thread_cpu:
        lines += ["## CPU per thread (s / M records, lower is better)", ""]
        lines += _table(
            [
                "workload",
                "client",
                "caller",
                "caller spread",
                "caller vs confluent-kafka",
                "I/O threads",
                "I/O spread",
                "I/O vs confluent-kafka",
                "whole process",
            ],
            thread_cpu,
        )
        lines += [
            "",
            "Caller: the thread calling send()/produce(); I/O threads: every other thread of the "
            "client's process (kafkaline's Sender, librdkafka's threads), from /proc per thread "
            "over the timed span. Whole process: user+sys of all threads (getrusage).",
            "",
        ]
    partitions = _partition_rows(summaries)
    if partitions:
        lines += ["## CPU per record as the partition count grows", ""]
        lines += _table(
            [
                "partitions",
                "client",
                "records/s",
                "vs confluent-kafka",
                "CPU s / M records",
                "CPU vs confluent-kafka",
                "caller",
                "I/O threads",
                f"CPU vs {min(s.workload.partitions for s in summaries):,} partitions",
            ],
            partitions,
        )
        lines.append("")
    latency = _latency_rows(summaries, rounds)
    if latency:
        lines += ["## Latency, one record at a time (ms, lower is better)", ""]
        lines += _table(
            [
                "workload",
                "client",
                "good runs",
                "read back",
                "p50",
                "p99",
                "p99 spread",
                "p99.9",
                "p99 vs confluent-kafka",
                "CPU s / M records",
            ],
            latency,
        )
        lines.append("")
    memory = _memory_rows(summaries, rounds)
    if memory:
        lines += ["## Memory (MiB, lower is better)", ""]
        lines += _table(
            [
                "workload",
                "client",
                "good runs",
                "read back",
                "peak RSS above idle",
                "spread",
                "<= buffer_memory + 64 MiB",
                "idle RSS",
                "MB/s",
                "MB/s vs confluent-kafka",
                "CPU s / M records",
            ],
            memory,
        )
        lines += [
            "",
            "Idle RSS is taken once the producer is connected and its input made (for "
            "kafkaline-arrow that input is the Arrow batches of every record), so the peak "
            "above idle is what producing cost. kafka-python 3 and aiokafka have no "
            "buffer-memory bound to configure (see Configuration).",
            "",
        ]
    failures = failure_lines(bench)
    if failures:
        lines += ["## Failed runs (not timed)", "", *failures, ""]
    skipped = skipped_lines(bench)
    if skipped:
        lines += ["## Not run", "", *skipped, ""]
    lines += ["## Workloads", "", *_workload_lines(bench), ""]
    lines += ["## Configuration", "", *_config_lines(bench), ""]
    return "\n".join(lines)
