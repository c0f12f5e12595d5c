"""Issue #5's targets, checked against the medians of this run.

Each target compares a kafkaline median with confluent-kafka's (or the broker limit's) from
the same bench, so machine load hits both sides alike. A target whose numbers are missing
(a client not run, or every run failed) says so instead of passing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from benchmarks.clients import BROKER_LIMIT_CLIENT, REFERENCE_CLIENT
from benchmarks.result import RunResult
from benchmarks.summary import (
    MIB,
    Summary,
    caller_cpu_per_million,
    cpu_per_million,
    find,
    mb_per_s,
    p99_ms,
    rate,
    records_per_s,
    rss_above_idle_mib,
)

_Metric = Callable[[RunResult], float | None]


@dataclass(frozen=True)
class _Target:
    what: str
    workload: str
    client: str
    metric: _Metric
    #: The bound as a function of the reference medians (confluent-kafka, broker limit).
    bound: Callable[[float | None, float | None], float | None]
    higher_is_better: bool
    bound_text: str
    unit: str
    #: The client whose median is the reference (confluent-kafka unless said).
    reference_client: str = REFERENCE_CLIENT


def _times_reference(factor: float) -> Callable[[float | None, float | None], float | None]:
    return lambda reference, _limit: None if reference is None else reference * factor


def _batch_bound(reference: float | None, limit: float | None) -> float | None:
    # "at least 1.5x confluent-kafka, or 90% of the broker's limit if lower"
    if reference is None or limit is None:
        return None
    return min(1.5 * reference, 0.9 * limit)


def _arrow_bound(_reference: float | None, limit: float | None) -> float | None:
    return None if limit is None else 0.9 * limit


def _targets(buffer_memory_mib: float) -> list[_Target]:
    memory_budget = buffer_memory_mib + 64
    return [
        _Target("send() throughput", "small", "kafkaline", records_per_s,
                _times_reference(1.0), True, ">= 1.0x confluent-kafka", "records/s"),
        _Target("send_batch() throughput", "small", "kafkaline-batch", records_per_s,
                _batch_bound, True, ">= min(1.5x confluent-kafka, 90% broker limit)",
                "records/s"),
        _Target("send_arrow() throughput", "small", "kafkaline-arrow", records_per_s,
                _arrow_bound, True, ">= 90% broker limit", "records/s"),
        _Target("send() CPU", "small", "kafkaline", cpu_per_million,
                _times_reference(1.0), False, "<= confluent-kafka", "CPU s/M records"),
        _Target("send_batch() CPU", "small", "kafkaline-batch", cpu_per_million,
                _times_reference(0.5), False, "<= 0.5x confluent-kafka", "CPU s/M records"),
        # Issue 17: send_batch() over lists at most half send()'s cost per record, in the
        # caller's thread (where the two differ; the I/O side is the same Sender).
        _Target("send_batch() caller CPU", "small", "kafkaline-batch", caller_cpu_per_million,
                _times_reference(0.5), False, "<= 0.5x send()'s (kafkaline)",
                "caller CPU s/M records", "kafkaline"),
        _Target("send_arrow() CPU", "small", "kafkaline-arrow", cpu_per_million,
                _times_reference(0.5), False, "<= 0.5x confluent-kafka", "CPU s/M records"),
        _Target("large MB/s", "large", "kafkaline", mb_per_s,
                _times_reference(1.0), True, ">= 1.0x confluent-kafka", "MB/s"),
        _Target("latency p99", "latency", "kafkaline", p99_ms,
                _times_reference(1.0), False, "<= confluent-kafka", "ms"),
        _Target("memory", "memory", "kafkaline", rss_above_idle_mib,
                lambda _r, _l: memory_budget, False,
                f"<= buffer_memory + 64 MiB ({memory_budget:.0f})", "MiB above idle"),
    ]  # fmt: skip


def _format_for(unit: str) -> Callable[[float], str]:
    return rate if unit == "records/s" else "{:,.2f}".format


def _median(summary: Summary | None, metric: _Metric) -> float | None:
    stat = summary.stat(metric) if summary else None
    return stat.median if stat else None


def target_lines(summaries: Sequence[Summary]) -> list[str]:
    """A Markdown table of the targets (empty when no target could be measured)."""
    if not any(s.client.startswith("kafkaline") for s in summaries):
        return []
    memory = next((s for s in summaries if s.workload.name == "memory"), None)
    buffer_memory_mib = memory.workload.buffer_memory / MIB if memory else 32.0
    rows = []
    measured_any = False
    for target in _targets(buffer_memory_mib):
        measured = _median(find(summaries, target.workload, target.client), target.metric)
        reference = _median(
            find(summaries, target.workload, target.reference_client), target.metric
        )
        limit = _median(find(summaries, target.workload, BROKER_LIMIT_CLIENT), target.metric)
        bound = target.bound(reference, limit)
        if measured is None or bound is None:
            verdict, measured_text, bound_value = "not measured", "-", "-"
        else:
            measured_any = True
            met = measured >= bound if target.higher_is_better else measured <= bound
            verdict = "met" if met else "not met"
            fmt = _format_for(target.unit)
            measured_text, bound_value = fmt(measured), fmt(bound)
        rows.append(
            f"| {target.what} | `{target.workload}`, {target.client} | {target.bound_text} | "
            f"{measured_text} | {bound_value} | {target.unit} | {verdict} |"
        )
    if not measured_any:
        return []  # none of these workloads ran (a --partitions run, say)
    return [
        "| target | workload, client | bound | measured (median) | bound here | unit | |",
        "|---|---|---|---|---|---|---|",
        *rows,
    ]
