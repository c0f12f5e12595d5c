"""A real speculative copy against the exactly-once sink: one task's first attempt sleeps in
its row iterator after its first batch reached the broker, Spark (speculation on, eager
settings) launches a copy of it on the other executor, the copy wins, and the driver commits.
Checked with read_committed_log: every row once among the committed records, the slow
attempt's records aborted (so both attempts wrote), no transaction left open.

Spark never runs a speculative copy on the host of its original (TaskSetManager skips hosts
that hold an attempt of the task). ``local[...]`` has one executor, and ``local-cluster[...]``
starts every worker on the same host name, so neither launches a copy (tried: a 30 s slow
attempt on local-cluster[2,1,1024] ran alone). So this test starts a small standalone cluster
of its own: a master and two workers whose host names are two loopback addresses
(127.0.0.2, 127.0.0.3), i.e. two hosts as far as Spark can tell. Skipped, with the reason,
where that cluster does not start or Spark launches no copy."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

import pyspark

from kafkaline.testing import LocalBroker, TopicFactory, read_committed_log

pytestmark = [pytest.mark.integration, pytest.mark.timeout(280)]

_JOB = Path(__file__).with_name("speculation_job.py")
_CANNOT_START = 3  # speculation_job.CANNOT_START
ROWS = 2_000
PARTITIONS = 4
SLOW_PARTITION = 1
SLOW_S = 30.0  # how long Spark has to launch the copy: past it the first attempt goes on
WORKER_HOSTS = ("127.0.0.2", "127.0.0.3")
START_S = 90.0
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
WORKER_ARGS = ("--webui-port", "0")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _stop(process: subprocess.Popen[bytes]) -> None:
    """The process and its children (a worker's executor JVM) are one process group."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(30)


@pytest.fixture
def standalone_cluster(tmp_path: Path) -> Iterator[str]:
    """``spark://...`` of a master and one-core workers on two loopback host names."""
    home = Path(pyspark.__file__).parent
    spark_class = home / "bin" / "spark-class"
    if not spark_class.exists():
        pytest.skip(f"no {spark_class.name} in this pyspark: cannot start a standalone cluster")
    env = {
        **os.environ,
        "SPARK_HOME": str(home),
        "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false",
    }
    port = _free_port()
    master_url = f"spark://127.0.0.1:{port}"
    logs: list[Path] = []
    processes: list[subprocess.Popen[bytes]] = []

    def start(name: str, args: list[str], local_ip: str) -> None:
        log = tmp_path / f"{name}.log"
        logs.append(log)
        with log.open("wb") as out:
            processes.append(
                subprocess.Popen(
                    [str(spark_class), *args],
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    env={**env, "SPARK_LOCAL_IP": local_ip},
                    start_new_session=True,
                )
            )

    try:
        start(
            "master",
            [MASTER_CLASS, "--host", "127.0.0.1", "--port", str(port), "--webui-port", "0"],
            "127.0.0.1",
        )
        for host in WORKER_HOSTS:
            work = str(tmp_path / host)
            args = [WORKER_CLASS, "--host", host, "--cores", "1", "--memory", "1g"]
            start(f"worker-{host}", [*args, *WORKER_ARGS, "--work-dir", work, master_url], host)
        deadline = time.monotonic() + START_S
        while sum("registered with master" in log.read_text() for log in logs[1:]) < 2:
            if time.monotonic() > deadline or any(p.poll() is not None for p in processes):
                tail = "".join(log.read_text()[-500:] for log in logs)
                pytest.skip(f"the standalone cluster did not start within {START_S:.0f} s: {tail}")
            time.sleep(0.5)
        yield master_url
    finally:
        for process in processes:
            _stop(process)


def test_speculative_copy_of_a_slow_task(
    broker: LocalBroker, make_topic: TopicFactory, standalone_cluster: str, tmp_path: Path
) -> None:
    servers = broker.bootstrap_servers
    topic = make_topic(partitions=2)
    attempts = tmp_path / "attempts"
    attempts.mkdir()
    spec = {
        "master": standalone_cluster,
        "servers": servers,
        "topic": topic,
        "rows": ROWS,
        "partitions": PARTITIONS,
        "slow_partition": SLOW_PARTITION,
        "slow_s": SLOW_S,
        "attempts": str(attempts),
        "prefix": f"spec-{uuid.uuid4().hex[:8]}",
        # The executors (on the workers' addresses) reach the driver here.
        "conf": {"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"},
    }
    started = time.monotonic()
    job = subprocess.run(
        [sys.executable, str(_JOB), json.dumps(spec)],
        capture_output=True,
        text=True,
        timeout=170,  # with START_S, under the test's 280 s
        check=False,
    )
    seconds = time.monotonic() - started
    if job.returncode == _CANNOT_START:
        pytest.skip(job.stderr.strip().splitlines()[-1])
    assert job.returncode == 0, f"the speculation job failed:\n{job.stderr[-3000:]}"
    assert json.loads(job.stdout.strip().splitlines()[-1]) == {"error": None}
    seen = sorted(p.name for p in attempts.iterdir() if p.name != "chosen.json")
    chosen = json.loads((attempts / "chosen.json").read_text())
    log = read_committed_log(servers, topic)
    counts = log.counts()
    print(
        f"speculation: attempts started {seen}, committed attempts {chosen}, {counts}, "
        f"transactions open: {len(log.open_producer_ids())}, job {seconds:.0f} s"
    )
    if f"p{SLOW_PARTITION}-a1" not in seen:
        pytest.skip(f"Spark launched no speculative copy of the slow task within {SLOW_S:.0f} s")

    values = sorted(int(v or b"-1") for v in log.committed_values())
    assert len(values) == len(set(values)), "committed duplicates"
    assert values == list(range(ROWS)), f"{len(values)} committed rows, expected {ROWS}"
    assert log.open_producer_ids() == set(), "transactions left open"
    # One commit message per partition: attempt 0, but for the slow task whichever won.
    assert [p for p, _ in chosen] == list(range(PARTITIONS)), chosen
    assert all(a == 0 for p, a in chosen if p != SLOW_PARTITION), chosen
    woke = f"p{SLOW_PARTITION}-a0-woke" in seen
    print(
        f"the driver committed attempt {chosen[SLOW_PARTITION][1]} of the slow task; its "
        f"first attempt {'woke up' if woke else 'was killed asleep'}"
    )
    # Both attempts of the slow task wrote: the loser's rows are in the log, aborted.
    assert counts["aborted"] > 0, "the losing attempt wrote nothing: the case proves nothing"
    assert counts["open"] == 0
