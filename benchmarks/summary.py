"""Runs grouped per workload and client: medians and spreads of the good runs.

Only runs whose read-back count was right enter a statistic; failed runs are kept apart so the
report can list them with why.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from benchmarks.clients import REFERENCE_CLIENT
from benchmarks.harness import BenchRun
from benchmarks.result import RunResult, Status
from benchmarks.workloads import Workload

MIB = 2**20


@dataclass(frozen=True)
class Stat:
    """The median of the good runs' values, and their lowest and highest."""

    median: float
    low: float
    high: float

    @classmethod
    def of(cls, values: Sequence[float]) -> Stat | None:
        if not values:
            return None
        return cls(statistics.median(values), min(values), max(values))


@dataclass(frozen=True)
class Summary:
    workload: Workload
    client: str
    good: list[RunResult]
    failed: list[RunResult]

    def stat(self, value: Callable[[RunResult], float | None]) -> Stat | None:
        return Stat.of([v for v in map(value, self.good) if v is not None])


def summarise(bench: BenchRun) -> list[Summary]:
    """One summary per workload and client that ran, in plan order."""
    summaries = []
    for workload in bench.plan.workloads:
        for client in bench.plan.clients:
            runs = [r for r in bench.results if r.workload == workload.name and r.client == client]
            if runs:
                summaries.append(
                    Summary(
                        workload=workload,
                        client=client,
                        good=[r for r in runs if r.status is Status.OK],
                        failed=[r for r in runs if r.status is Status.FAILED],
                    )
                )
    return summaries


def find(summaries: Sequence[Summary], workload: str, client: str) -> Summary | None:
    for summary in summaries:
        if summary.workload.name == workload and summary.client == client:
            return summary
    return None


def reference_for(summaries: Sequence[Summary], workload: str) -> Summary | None:
    """confluent-kafka's summary for ``workload``: what ratios divide by."""
    return find(summaries, workload, REFERENCE_CLIENT)


def rate(value: float) -> str:
    """A rate with three significant digits: 1.01 M, 316 k, 7.22 k."""
    if value >= 1e6:
        return f"{value / 1e6:.2f} M"
    if value >= 1e5:
        return f"{value / 1e3:.0f} k"
    if value >= 1e4:
        return f"{value / 1e3:.1f} k"
    if value >= 1e3:
        return f"{value / 1e3:.2f} k"
    return f"{value:.0f}"


# What the tables and targets take from a run.


def records_per_s(run: RunResult) -> float:
    return run.records_per_s


def mb_per_s(run: RunResult) -> float:
    return run.megabytes_per_s


def cpu_per_million(run: RunResult) -> float:
    return run.cpu_s_per_million


def caller_cpu_per_million(run: RunResult) -> float | None:
    return run.cpu_caller_s_per_million


def io_cpu_per_million(run: RunResult) -> float | None:
    return run.cpu_io_s_per_million


def rss_above_idle_mib(run: RunResult) -> float:
    return run.rss_above_idle / MIB


def idle_mib(run: RunResult) -> float:
    return run.idle_rss / MIB


def p99_ms(run: RunResult) -> float | None:
    return run.latency_p99_ms
