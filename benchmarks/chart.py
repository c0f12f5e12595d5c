"""The results as one PNG: throughput per workload, latency percentiles, memory.

matplotlib is optional (the ``bench`` extra): without it the harness says so and writes no
chart. It is imported by name so the rest of the harness type-checks and runs without it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchmarks.result import RunResult
from benchmarks.summary import MIB, Summary
from benchmarks.workloads import Kind

_FIGURE_SIZE = (15, 5.5)


def chart_unavailable_reason() -> str | None:
    try:
        importlib.import_module("matplotlib")
    except ImportError:
        return "matplotlib is not installed (pip install -e '.[bench]'): no chart written"
    return None


def _pyplot() -> Any:
    matplotlib = importlib.import_module("matplotlib")
    matplotlib.use("Agg")  # files only: no display on CI machines
    return importlib.import_module("matplotlib.pyplot")


def _grouped_bars(
    axes: Any,
    groups: Sequence[str],
    series: dict[str, dict[str, Summary]],
    value: Callable[[RunResult], float | None],
) -> None:
    """One group of bars per entry of ``groups``, one bar per series; whiskers = spread."""
    width = 0.8 / max(1, len(series))
    for index, (label, by_group) in enumerate(series.items()):
        xs, heights, low_err, high_err = [], [], [], []
        for position, group in enumerate(groups):
            summary = by_group.get(group)
            stat = summary.stat(value) if summary else None
            if stat is None:
                continue
            xs.append(position + index * width - 0.4 + width / 2)
            heights.append(stat.median)
            low_err.append(stat.median - stat.low)
            high_err.append(stat.high - stat.median)
        if xs:
            axes.bar(xs, heights, width, label=label, yerr=[low_err, high_err], capsize=2)
    axes.set_xticks(range(len(groups)), groups)


def write_chart(summaries: Sequence[Summary], path: Path, title: str) -> None:
    pyplot = _pyplot()
    figure, (throughput, latency, memory) = pyplot.subplots(1, 3, figsize=_FIGURE_SIZE)
    figure.suptitle(title)

    by_client: dict[str, dict[str, Summary]] = {}
    for summary in summaries:
        if summary.workload.kind is Kind.THROUGHPUT:
            by_client.setdefault(summary.client, {})[summary.workload.name] = summary
    workloads = list(
        dict.fromkeys(s.workload.name for s in summaries if s.workload.kind is Kind.THROUGHPUT)
    )
    _grouped_bars(throughput, workloads, by_client, lambda r: r.records_per_s)
    throughput.set_yscale("log")
    throughput.set_ylabel("records/s (median, whiskers: min-max; log scale)")
    throughput.set_title("Throughput")
    throughput.legend(fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.07), ncol=3)

    lat = [s for s in summaries if s.workload.kind is Kind.LATENCY]
    percentiles: dict[str, Callable[[RunResult], float | None]] = {
        "p50": lambda r: r.latency_p50_ms,
        "p99": lambda r: r.latency_p99_ms,
        "p99.9": lambda r: r.latency_p999_ms,
    }
    series = {name: {s.client: s for s in lat} for name in percentiles}
    width = 0.8 / len(percentiles)
    clients = [s.client for s in lat]
    for index, (name, value) in enumerate(percentiles.items()):
        points = [(i, s.stat(value)) for i, s in enumerate(series[name].values())]
        latency.bar(
            [i + index * width - 0.4 + width / 2 for i, stat in points if stat],
            [stat.median for _, stat in points if stat],
            width,
            label=name,
        )
    latency.set_xticks(range(len(clients)), clients, rotation=20, fontsize="small")
    latency.set_ylabel("ms per record, send to acknowledgement (median of runs)")
    latency.set_title("Latency, one record at a time")
    latency.legend(fontsize="small")

    mem = [s for s in summaries if s.workload.kind is Kind.MEMORY]
    mem_stats = [(s.client, s.stat(lambda r: r.rss_above_idle / MIB)) for s in mem]
    shown = [(client, stat) for client, stat in mem_stats if stat]
    memory.bar(
        range(len(shown)),
        [stat.median for _, stat in shown],
        yerr=[
            [stat.median - stat.low for _, stat in shown],
            [stat.high - stat.median for _, stat in shown],
        ],
        capsize=3,
    )
    if mem:
        budget = (mem[0].workload.buffer_memory + 64 * MIB) / MIB
        memory.axhline(budget, linestyle="--", color="grey", label="buffer_memory + 64 MiB")
        memory.legend(fontsize="small")
    memory.set_xticks(range(len(shown)), [c for c, _ in shown], rotation=20, fontsize="small")
    memory.set_ylabel("peak RSS above idle, MiB")
    if mem:
        produced = mem[0].workload.records * mem[0].workload.value_size
        memory.set_title(f"Memory while producing {produced / 1e6:,.0f} MB")

    figure.tight_layout()
    figure.savefig(path, dpi=90)
    pyplot.close(figure)
