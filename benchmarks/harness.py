"""The side-by-side run: one broker, every client in its own process, in turn, round after round.

For each workload, each round runs every client once, in the same order (A B C D A B C D ...),
so a slow patch of the shared machine hits every client alike rather than one client's runs
all together. Every run gets a fresh topic (6 partitions, or the workload's count with
``--partitions``), deleted afterwards (the broker keeps
records in memory: 1 GB runs would otherwise pile up). A run counts only if reading the topic
back finds exactly the records sent, key and value bytes included; otherwise it is failed, and
its timing is not used.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.clients import ClientUnavailable, client_environment, make_adapter
from benchmarks.clients.raw_client import DEFAULT_CONNECTIONS, DEFAULT_IN_FLIGHT
from benchmarks.machine import MachineInfo, collect_machine_info, load_average_1m, scrub_paths
from benchmarks.result import RunResult, Status
from benchmarks.verify import read_back
from benchmarks.workloads import Payload, Sizes, Workload, payload_of
from kafkaline.testing import LocalBroker

#: The directory holding the ``benchmarks`` package: children run with it as their cwd, so
#: ``python -m benchmarks.child`` finds the package wherever the harness was started from.
PROJECT_ROOT = Path(__file__).resolve().parent.parent
_LOG_TAIL_CHARS = 1500


@dataclass(frozen=True)
class Plan:
    """What to run."""

    workloads: tuple[Workload, ...]
    clients: tuple[str, ...]
    rounds: int
    sizes: Sizes = Sizes.DEFAULT
    raw_connections: int = DEFAULT_CONNECTIONS
    raw_in_flight: int = DEFAULT_IN_FLIGHT
    #: A child still running after this many seconds is killed and its run failed.
    run_timeout_s: float = 300.0


@dataclass(frozen=True)
class ChildLaunch:
    """How a child process is started, beyond its client and workload: the instruction-count
    mode runs it under valgrind and makes the same input for both run lengths."""

    #: Put before ``python -m benchmarks.child ...`` (a profiler such as valgrind).
    wrapper: tuple[str, ...] = ()
    #: Records the child makes (it sends the workload's count of them); None: as many as sent.
    input_records: int | None = None
    #: Environment changes for the child: (name, value), or (name, None) to unset it.
    env: tuple[tuple[str, str | None], ...] = ()


@dataclass
class BenchRun:
    """Everything a report needs: the plan, every run, and the machine they ran on."""

    plan: Plan
    machine: MachineInfo
    results: list[RunResult] = field(default_factory=list)
    #: client -> why it did not run at all (library or API missing).
    unavailable: dict[str, str] = field(default_factory=dict)
    #: (workload, client) -> why that client does not do that workload.
    unsupported: dict[tuple[str, str], str] = field(default_factory=dict)
    #: client -> its settings for each workload (the configuration mapping).
    configs: dict[str, dict[str, dict[str, object]]] = field(default_factory=dict)
    duration_s: float = 0.0

    @property
    def failed(self) -> list[RunResult]:
        return [r for r in self.results if r.status is Status.FAILED]


Progress = Callable[[str], None]


def print_progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def run_plan(plan: Plan, progress: Progress = print_progress) -> BenchRun:
    """Start one LocalBroker, run the plan against it, and return every result."""
    started = time.monotonic()
    bench = BenchRun(plan=plan, machine=collect_machine_info(PROJECT_ROOT))
    clients = available_clients(plan, bench, progress)
    with (
        tempfile.TemporaryDirectory(prefix="kafkaline-bench-") as scratch,
        LocalBroker() as broker,
    ):
        progress(f"broker: Tansu on {broker.bootstrap_servers}")
        for workload in plan.workloads:
            runnable = clients_for(workload, clients, bench, progress)
            payload = payload_of(workload)
            for round_index in range(1, plan.rounds + 1):
                for client in runnable:
                    result = run_once(
                        plan, broker, workload, client, round_index, payload, Path(scratch)
                    )
                    bench.results.append(result)
                    progress(_describe(result, plan.rounds))
    bench.machine.load_average_end = os.getloadavg()
    bench.duration_s = time.monotonic() - started
    return bench


def available_clients(plan: Plan, bench: BenchRun, progress: Progress) -> list[str]:
    available = []
    for client in plan.clients:
        bench.configs[client] = {}
        for workload in plan.workloads:
            bench.configs[client][workload.name] = make_adapter(client, workload).config()
        try:
            make_adapter(client, plan.workloads[0]).check_available()
        except ClientUnavailable as exc:
            bench.unavailable[client] = str(exc)
            progress(f"skip {client}: not available: {exc}")
            continue
        available.append(client)
    return available


def clients_for(
    workload: Workload, clients: list[str], bench: BenchRun, progress: Progress
) -> list[str]:
    runnable = []
    for client in clients:
        reason = make_adapter(client, workload).unsupported_reason()
        if reason is not None:
            bench.unsupported[(workload.name, client)] = reason
            progress(f"skip {client} on {workload.name}: {reason}")
        else:
            runnable.append(client)
    return runnable


def run_once(
    plan: Plan,
    broker: LocalBroker,
    workload: Workload,
    client: str,
    round_index: int,
    payload: Payload,
    scratch: Path,
    launch: ChildLaunch = ChildLaunch(),
) -> RunResult:
    """One run of ``client`` on a fresh topic, read back and counted; the topic is deleted."""
    topic = f"bench-{workload.name}-{client}-r{round_index}-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, partitions=workload.partitions)
    try:
        load = load_average_1m()
        started = time.monotonic()
        result = _run_child(plan, broker, workload, client, topic, scratch, launch)
        result.process_s = time.monotonic() - started
        result.round = round_index
        result.load_average_1m = load
        result.records_expected = workload.expected_records
        if result.status is Status.OK:
            result.payload_bytes = payload.measured
            started = time.monotonic()
            _check_read_back(result, broker, workload, topic, payload.total)
            result.read_back_s = time.monotonic() - started
        return result
    finally:
        broker.delete_topic(topic)


def _child_environment(client: str, launch: ChildLaunch) -> dict[str, str]:
    env = {**os.environ, **client_environment(client)}
    for name, value in launch.env:
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env


def _run_child(
    plan: Plan,
    broker: LocalBroker,
    workload: Workload,
    client: str,
    topic: str,
    scratch: Path,
    launch: ChildLaunch,
) -> RunResult:
    result_path = scratch / f"{topic}.json"
    log_path = scratch / f"{topic}.log"
    argv = [
        *launch.wrapper,
        sys.executable,
        "-m",
        "benchmarks.child",
        "--client",
        client,
        "--workload-json",
        json.dumps(workload.to_json()),
        "--bootstrap-servers",
        broker.bootstrap_servers,
        "--topic",
        topic,
        "--result",
        str(result_path),
        "--raw-connections",
        str(plan.raw_connections),
        "--raw-in-flight",
        str(plan.raw_in_flight),
        "--sizes",
        plan.sizes.value,
    ]
    if launch.input_records is not None:
        argv += ["--input-records", str(launch.input_records)]
    failed = RunResult(client=client, workload=workload.name, status=Status.FAILED)
    with log_path.open("wb") as log:
        try:
            completed = subprocess.run(
                argv,
                cwd=PROJECT_ROOT,
                env=_child_environment(client, launch),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                timeout=plan.run_timeout_s,
                check=False,
            )
        except subprocess.TimeoutExpired:
            failed.detail = f"still running after {plan.run_timeout_s:.0f} s: killed"
            return failed
    if completed.returncode != 0 or not result_path.exists():
        failed.detail = f"the client process exited with {completed.returncode}: " + _log_tail(
            log_path
        )
        return failed
    # A failed run's result names the exception; its traceback stays in the (scratch) log.
    return RunResult.from_json_text(result_path.read_text())


def _check_read_back(
    result: RunResult, broker: LocalBroker, workload: Workload, topic: str, expected_payload: int
) -> None:
    """Fail ``result`` unless the topic holds exactly the records (and bytes) sent."""
    try:
        found = read_back(
            broker.host, broker.port, topic, workload.partitions, workload.expected_records
        )
    except Exception as exc:  # a read-back that cannot finish proves nothing: failed
        result.status = Status.FAILED
        result.detail = f"read-back failed: {type(exc).__name__}: {scrub_paths(str(exc))}"
        return
    result.records_read = found.records
    expected = workload.expected_records
    if found.records != expected or found.payload_bytes != expected_payload:
        result.status = Status.FAILED
        result.detail = (
            f"read back {found.records:,} records ({found.payload_bytes:,} key+value bytes), "
            f"expected {expected:,} ({expected_payload:,} bytes)"
        )


def _log_tail(path: Path) -> str:
    text = path.read_text(errors="replace").strip()
    tail = text[-_LOG_TAIL_CHARS:] if text else "(no output)"
    return scrub_paths(tail).replace("\n", " | ")


def _describe(result: RunResult, rounds: int) -> str:
    where = f"[{result.workload} {result.round}/{rounds}] {result.client}:"
    if result.status is not Status.OK:
        status = result.status.value.upper()
        return f"{where} {status}: {result.detail} (process {result.process_s:.1f} s)"
    if result.latency_p99_ms is not None:
        measured = (
            f"p50 {result.latency_p50_ms:.3f} ms, p99 {result.latency_p99_ms:.3f} ms, "
            f"p99.9 {result.latency_p999_ms:.3f} ms"
        )
    else:
        measured = f"{result.records_per_s:,.0f} records/s, {result.megabytes_per_s:,.1f} MB/s"
    return (
        f"{where} {measured}, CPU {result.cpu_s_per_million:.2f} s/M records, "
        f"peak RSS +{result.rss_above_idle / 2**20:.0f} MiB, "
        f"read back {result.records_read:,} (load {result.load_average_1m:.2f}; process "
        f"{result.process_s:.1f} s, read-back {result.read_back_s:.1f} s)"
    )
