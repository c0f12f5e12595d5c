"""Proof of the exactly-once sink with real Spark and the real broker: known rows are written
while tasks fail, workers and drivers are killed and jobs abort; then the topic is read raw
and read_committed is applied from its control batches (kafkaline.testing.read_committed_log,
since Tansu does not filter aborted records itself). Every case expects each row exactly once
among committed records (nothing from an aborted attempt, no duplicate) and no transaction
left open. Counts per case are printed (pytest -s).

The drivers run as child processes (eos_job.py): retries need ``local[2,3]``, and a driver
must be SIGKILLable. Spark speculation launches no copy in local mode (a copy never runs on
the host of its original), so duplicate attempts are shown here by retries after a task that
wrote and failed, and by a worker killed with its transaction open; a real speculative copy
runs on a two-host standalone cluster in test_spark_speculation.py."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

from kafkaline.testing import CommittedLog, LocalBroker, TopicFactory, read_committed_log

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

_JOB = Path(__file__).with_name("eos_job.py")
ROWS = 2_000


def _run(servers: str, cases: list[dict[str, Any]], kill_on: Path | None = None) -> dict[str, Any]:
    """Run eos_job.py with ``cases``; with ``kill_on``, SIGKILL the whole driver (its process
    group: JVM, Python workers) once that file appears. Returns {case: error or None}."""
    spec = json.dumps({"servers": servers, "cases": cases})
    child = subprocess.Popen(
        [sys.executable, str(_JOB), spec],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    try:
        if kill_on is not None:
            deadline = time.monotonic() + 400
            while not kill_on.exists():
                if child.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"the driver never reached {kill_on.name}")
                time.sleep(0.2)
            os.killpg(child.pid, signal.SIGKILL)
            child.wait(30)
            return {"killed": True}
        out, _ = child.communicate(timeout=600)
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait(30)
    results = {}
    for line in out.splitlines():
        if line.startswith("{"):
            found = json.loads(line)
            results[found["case"]] = found["error"]
    return results


def _check(name: str, log: CommittedLog, expected: list[int]) -> dict[str, int]:
    counts = log.counts()
    print(f"{name}: {counts}, transactions open: {len(log.open_producer_ids())}")
    values = sorted(int(v or b"-1") for v in log.committed_values())
    assert len(values) == len(set(values)), f"{name}: committed duplicates"
    assert values == expected, f"{name}: {len(values)} committed rows, expected {len(expected)}"
    assert log.open_producer_ids() == set(), f"{name}: transactions left open"
    return counts


def test_batch_write_retries_kills_and_aborts(
    broker: LocalBroker, make_topic: TopicFactory
) -> None:
    servers = broker.bootstrap_servers
    topics = {name: make_topic(partitions=2) for name in ("plain", "retry", "killed", "abort")}
    faults = {"plain": "", "retry": "raise-p0a0", "killed": "kill-p0a0", "abort": "raise-p1"}
    cases = [
        {"name": name, "topic": topics[name], "rows": ROWS, "fault": faults[name]}
        for name in topics
    ]
    results = _run(servers, cases)
    assert results == {
        "plain": None,
        "retry": None,
        "killed": None,
        "abort": results.get("abort"),
    }
    assert results["abort"] is not None and "injected fault" in results["abort"]
    everything = list(range(ROWS))
    _check("plain", read_committed_log(servers, topics["plain"]), everything)
    retry = _check("retry", read_committed_log(servers, topics["retry"]), everything)
    assert retry["aborted"] > 0, "the failed attempt wrote nothing: the case proves nothing"
    killed = _check("killed", read_committed_log(servers, topics["killed"]), everything)
    assert killed["aborted"] > 0, "the killed attempt wrote nothing: the case proves nothing"
    aborted = _check("abort", read_committed_log(servers, topics["abort"]), [])
    assert aborted["aborted"] > 0


@pytest.mark.parametrize("fault", ["die-before-commit", "die-mid-commit"])
def test_batch_driver_killed_then_the_write_run_again(
    broker: LocalBroker, make_topic: TopicFactory, tmp_path: Path, fault: str
) -> None:
    servers = broker.bootstrap_servers
    topic = make_topic(partitions=2)
    marker = tmp_path / "marker"
    case = {
        "name": fault,
        "topic": topic,
        "rows": ROWS,
        "prefix": f"proof-{uuid.uuid4().hex[:8]}",
        "state": str(tmp_path / "state"),
    }
    _run(servers, [{**case, "fault": fault, "marker": str(marker)}], kill_on=marker)
    dead = read_committed_log(servers, topic)
    print(f"{fault}, after the kill: {dead.counts()}")
    if fault == "die-mid-commit":
        assert 0 < len(dead.committed_values()) < ROWS, "not cut off half way"
    else:
        assert dead.committed_values() == []
    assert _run(servers, [case]) == {fault: None}
    _check(f"{fault}, run again", read_committed_log(servers, topic), list(range(ROWS)))


@pytest.mark.parametrize("fault", ["die-before-commit", "die-mid-commit"])
def test_stream_restarted_after_the_driver_was_killed(
    broker: LocalBroker, make_topic: TopicFactory, tmp_path: Path, fault: str
) -> None:
    servers = broker.bootstrap_servers
    topic = make_topic(partitions=2)
    source = tmp_path / "in"
    source.mkdir()
    for file in range(3):  # one file per micro-batch (maxFilesPerTrigger 1)
        rows = range(file * 200, (file + 1) * 200)
        (source / f"{file}.json").write_text("\n".join(json.dumps({"n": n}) for n in rows))
    marker = tmp_path / "marker"
    case = {
        "name": fault,
        "topic": topic,
        "source": str(source),
        "checkpoint": str(tmp_path / "checkpoint"),
    }
    _run(servers, [{**case, "fault": fault, "marker": str(marker), "fault_batch": 1}], marker)
    dead = read_committed_log(servers, topic)
    print(f"stream {fault}, after the kill: {dead.counts()}")
    committed = len(dead.committed_values())
    if fault == "die-mid-commit":  # micro-batch 0, and one of micro-batch 1's two tasks
        assert 200 < committed < 400 and dead.open_producer_ids(), "not cut off half way"
    else:
        assert committed == 200 and dead.open_producer_ids()
    assert _run(servers, [case]) == {fault: None}
    _check(f"stream {fault}, restarted", read_committed_log(servers, topic), list(range(600)))
