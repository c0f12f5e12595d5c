"""Instruction counts per record (``python -m benchmarks --instructions``): load-independent.

Every client process runs under valgrind's callgrind (``--separate-threads=yes``), which
counts the instructions each thread executed, however busy the machine is. A process's count
includes its start-up (the interpreter, importing the client, connecting, making the input),
so each client runs the workload at two lengths, N1 and N2 records, in processes that make
the same input (N2 records; the first N1 or N2 are sent) and differ only in what they send:

    instructions per record = (count at N2 - count at N1) / (N2 - N1)

for the caller's thread (the one calling ``send()``/``produce()``) and for every other thread
together (the I/O side: kafkaline's Sender, librdkafka's broker and main threads). What is
left at zero records, ``count at N1 - N1 x per record``, is the start-up.

Under callgrind a process runs some 50 times slower, so a linger of milliseconds would send
batches of a record or two that the real run fills; the workload's linger is raised to
:data:`LINGER_MS` so batches fill as in a run at full speed (``flush()`` sends what is left).
Every run is read back and counted like any other.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from benchmarks.clients import REFERENCE_CLIENT
from benchmarks.harness import (
    PROJECT_ROOT,
    BenchRun,
    ChildLaunch,
    Plan,
    Progress,
    available_clients,
    clients_for,
    print_progress,
    run_once,
)
from benchmarks.machine import collect_machine_info
from benchmarks.report import failure_lines, machine_lines, skipped_lines
from benchmarks.result import RunResult, Status
from benchmarks.workloads import Kind, Workload, describe, payload_of
from kafkaline.testing import LocalBroker

#: The two run lengths (records sent) whose difference gives the per-record counts.
DEFAULT_LENGTHS = (10_000, 30_000)
#: The linger of every run under callgrind (see the module's docstring).
LINGER_MS = 5_000
#: Seconds before a run under callgrind is killed (start-up alone takes ~20 s here).
RUN_TIMEOUT_S = 1_200.0
_OUTPUT_NAME = "callgrind.out"


def callgrind_command(output_dir: Path) -> tuple[str, ...]:
    """valgrind's command line, writing one file per thread into ``output_dir``."""
    return (
        "valgrind",
        "--tool=callgrind",
        "--separate-threads=yes",
        f"--callgrind-out-file={output_dir / _OUTPUT_NAME}",
        "--quiet",
    )


def valgrind_unavailable_reason() -> str | None:
    if shutil.which("valgrind") is None:
        return "valgrind is not installed (apt-get install valgrind)"
    return None


@dataclass(frozen=True)
class ThreadCounts:
    """Instructions of one process: its main (caller) thread, and every other thread."""

    caller: int
    io: int


def read_thread_counts(output_dir: Path) -> ThreadCounts:
    """Sum the per-thread files callgrind wrote into ``output_dir`` (``callgrind.out-01``
    is the main thread: valgrind numbers threads from 1 in the order they start)."""
    caller = io = 0
    files = sorted(output_dir.glob(f"{_OUTPUT_NAME}-*"))
    if not files:
        raise RuntimeError(f"callgrind wrote no per-thread files into {output_dir.name}")
    for path in files:
        thread = int(path.name.rsplit("-", 1)[1])
        count = _total_instructions(path)
        if thread == 1:
            caller += count
        else:
            io += count
    return ThreadCounts(caller=caller, io=io)


def _total_instructions(path: Path) -> int:
    with path.open() as lines:
        for line in lines:
            if line.startswith(("summary:", "totals:")):
                return int(line.split()[1])
    raise RuntimeError(f"no instruction total in {path.name}")


@dataclass(frozen=True)
class PerRecord:
    """One workload and client: instructions per record and at start-up, by thread."""

    workload: str
    client: str
    lengths: tuple[int, int]
    #: Median count of the runs at each length.
    short: ThreadCounts
    long: ThreadCounts

    @property
    def caller_per_record(self) -> float:
        return (self.long.caller - self.short.caller) / (self.lengths[1] - self.lengths[0])

    @property
    def io_per_record(self) -> float:
        return (self.long.io - self.short.io) / (self.lengths[1] - self.lengths[0])

    @property
    def start_up(self) -> float:
        """Instructions at zero records, all threads (start-up and shut-down)."""
        per_record = self.caller_per_record + self.io_per_record
        return self.short.caller + self.short.io - self.lengths[0] * per_record


def per_record(bench: BenchRun, lengths: tuple[int, int]) -> list[PerRecord]:
    """Pair each workload and client's runs at the two lengths (medians over rounds)."""
    found = []
    for workload in bench.plan.workloads:
        for client in bench.plan.clients:
            counts = [_median_counts(bench.results, workload.name, client, n) for n in lengths]
            short, long = counts
            if short is not None and long is not None:
                found.append(PerRecord(workload.name, client, lengths, short, long))
    return found


def _median_counts(
    results: Sequence[RunResult], workload: str, client: str, records: int
) -> ThreadCounts | None:
    runs = [
        r
        for r in results
        if r.workload == workload
        and r.client == client
        and r.records_sent == records
        and r.status is Status.OK
        and r.instructions_caller is not None
        and r.instructions_io is not None
    ]
    if not runs:
        return None
    return ThreadCounts(
        caller=round(statistics.median(r.instructions_caller or 0 for r in runs)),
        io=round(statistics.median(r.instructions_io or 0 for r in runs)),
    )


def instruction_workload(workload: Workload) -> Workload:
    """``workload`` as the instruction-count runs send it (the long linger)."""
    if workload.kind is not Kind.THROUGHPUT:
        raise ValueError(f"instruction counts are for throughput workloads, not {workload.name}")
    return replace(workload, linger_ms=LINGER_MS)


def steady_environment() -> tuple[tuple[str, str | None], ...]:
    """Environment changes that make the two lengths' processes start alike: one hash seed
    (the dicts' layouts, and so their probing, are the same in both) and this project's
    bytecode compiled beforehand into its ``__pycache__`` directories (git ignores them; the
    installed libraries have theirs): with PYTHONDONTWRITEBYTECODE set, every process would
    compile kafkaline and the benchmarks anew, and the counts carry it."""
    env: tuple[tuple[str, str | None], ...] = (
        ("PYTHONHASHSEED", "0"),
        ("PYTHONDONTWRITEBYTECODE", None),
    )
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", "src/kafkaline", "benchmarks"],
        cwd=PROJECT_ROOT,
        stdout=subprocess.DEVNULL,
        check=True,
    )
    return env


def run_instruction_counts(
    plan: Plan, lengths: tuple[int, int], progress: Progress = print_progress
) -> BenchRun:
    """Run every client at both lengths under callgrind, for every workload and round."""
    if not 0 < lengths[0] < lengths[1]:
        raise ValueError(f"the two lengths must grow: {lengths}")
    started = time.monotonic()
    workloads = tuple(replace(instruction_workload(w), records=lengths[1]) for w in plan.workloads)
    plan = replace(plan, workloads=workloads, run_timeout_s=max(plan.run_timeout_s, RUN_TIMEOUT_S))
    bench = BenchRun(plan=plan, machine=collect_machine_info(PROJECT_ROOT))
    clients = available_clients(plan, bench, progress)
    with (
        tempfile.TemporaryDirectory(prefix="kafkaline-instructions-") as scratch,
        LocalBroker() as broker,
    ):
        progress(f"broker: Tansu on {broker.bootstrap_servers}")
        steady = steady_environment()
        for workload in workloads:
            runnable = clients_for(workload, clients, bench, progress)
            for round_index in range(1, plan.rounds + 1):
                for records in lengths:
                    sized = replace(workload, records=records)
                    payload = payload_of(sized)
                    for client in runnable:
                        output_dir = Path(scratch) / f"{workload.name}-{client}-{records}"
                        output_dir.mkdir()
                        launch = ChildLaunch(
                            wrapper=callgrind_command(output_dir),
                            input_records=lengths[1],
                            env=steady,
                        )
                        result = run_once(
                            plan, broker, sized, client, round_index, payload, Path(scratch), launch
                        )
                        if result.ok:
                            counts = read_thread_counts(output_dir)
                            result.instructions_caller = counts.caller
                            result.instructions_io = counts.io
                        shutil.rmtree(output_dir)
                        bench.results.append(result)
                        progress(_describe(result, records))
    bench.machine.load_average_end = os.getloadavg()
    bench.duration_s = time.monotonic() - started
    return bench


def _describe(result: RunResult, records: int) -> str:
    where = f"[{result.workload} {records:,} records, round {result.round}] {result.client}:"
    if not result.ok:
        return f"{where} {result.status.value.upper()}: {result.detail}"
    return (
        f"{where} caller {result.instructions_caller:,} instructions, other threads "
        f"{result.instructions_io:,} (process {result.process_s:.0f} s)"
    )


def render_instructions_markdown(bench: BenchRun, lengths: tuple[int, int]) -> str:
    """The per-record table, confluent-kafka's row the reference."""
    rows = per_record(bench, lengths)
    reference = {r.workload: r for r in rows if r.client == REFERENCE_CLIENT}
    lines = ["# kafkaline producer benchmark: instructions per record (callgrind)", ""]
    lines += [*machine_lines(bench), ""]
    lines += [
        "| workload | client | caller / record | I/O threads / record | both / record | "
        "both vs confluent-kafka | start-up (M, all threads) |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        both = row.caller_per_record + row.io_per_record
        ref = reference.get(row.workload)
        ref_both = ref.caller_per_record + ref.io_per_record if ref else None
        ratio = f"{both / ref_both:.2f}x" if ref_both else "-"
        lines.append(
            f"| {row.workload} | {row.client} | {row.caller_per_record:,.0f} | "
            f"{row.io_per_record:,.0f} | {both:,.0f} | {ratio} | {row.start_up / 1e6:,.0f} |"
        )
    lines += [
        "",
        f"Counted by valgrind's callgrind (`--separate-threads=yes`) over each client "
        f"process's whole life, at {lengths[0]:,} and {lengths[1]:,} records sent: per record "
        "is the difference divided by the difference in records, so start-up cancels; "
        "start-up is what is left at zero records. Caller: the thread calling send()/"
        "produce(); I/O threads: every other thread of the process. Both runs make the same "
        f"input ({lengths[1]:,} records). Linger is {LINGER_MS:,} ms under callgrind so "
        "batches fill as at full speed. Counts do not depend on the machine's load.",
        "",
    ]
    lines += [
        f"- `{w.name}` (and the same with {lengths[0]:,} records): {describe(w)}"
        for w in bench.plan.workloads
    ]
    failures = failure_lines(bench)
    if failures:
        lines += ["", "## Failed runs", "", *failures]
    skipped = skipped_lines(bench)
    if skipped:
        lines += ["", "## Not run", "", *skipped]
    return "\n".join(lines) + "\n"
