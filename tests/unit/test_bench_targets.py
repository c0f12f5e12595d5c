"""The bench's targets table: send_batch()'s caller CPU per record against send()'s."""

from __future__ import annotations

from benchmarks.result import RunResult, Status
from benchmarks.summary import Summary
from benchmarks.targets import target_lines
from benchmarks.workloads import workload_by_name


def _summary(client: str, caller_s: float) -> Summary:
    run = RunResult(
        client=client,
        workload="small",
        status=Status.OK,
        records_sent=1_000_000,
        cpu_user_s=caller_s + 0.1,
        cpu_caller_s=caller_s,
        cpu_io_s=0.1,
    )
    return Summary(workload=workload_by_name("small"), client=client, good=[run], failed=[])


def _caller_row(send_s: float, batch_s: float) -> str:
    lines = target_lines([_summary("kafkaline", send_s), _summary("kafkaline-batch", batch_s)])
    return next(line for line in lines if line.startswith("| send_batch() caller CPU"))


def test_send_batch_caller_cpu_is_held_to_half_of_send() -> None:
    assert _caller_row(0.40, 0.19).endswith("| 0.19 | 0.20 | caller CPU s/M records | met |")
    assert _caller_row(0.40, 0.21).endswith("| not met |")


def test_without_send_the_row_says_not_measured() -> None:
    # confluent-kafka's run measures the other CPU targets; send()'s is missing
    lines = target_lines([_summary("kafkaline-batch", 0.2), _summary("confluent-kafka", 0.5)])
    row = next(line for line in lines if line.startswith("| send_batch() caller CPU"))
    assert row.endswith("| not measured |")
