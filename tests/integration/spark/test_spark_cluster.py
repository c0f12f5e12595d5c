"""The kafkaline sink on ``local-cluster[2,1,1024]``: tasks in two executor JVMs, each with
its own Python workers and producers, write one DataFrame; read back by confluent-kafka.

The cluster runs in a child process (cluster_job.py): one Python process holds one
SparkContext, and the other Spark tests share a ``local[2]`` one. Skipped, with the reason,
where the cluster cannot start."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

from confluent_kafka import Consumer, TopicPartition

from kafkaline.testing import LocalBroker, TopicFactory

_JOB = Path(__file__).with_name("cluster_job.py")
_CANNOT_START = 3  # cluster_job.CANNOT_START
_TIMEOUT_S = 280  # under pytest-timeout's 300 s: a hang kills the child, not the test run


def _values(bootstrap: str, topic: str, partitions: int) -> list[bytes]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"spark-cluster-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 50,
        }
    )
    values: list[bytes] = []
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        quiet = 0
        for _ in range(300):
            messages = consumer.consume(num_messages=1000, timeout=0.2)
            for message in messages:
                if message.error() is not None:
                    raise AssertionError(f"confluent-kafka consumer error: {message.error()}")
                values.append(message.value() or b"")
            quiet = quiet + 1 if not messages else 0
            if quiet == 5:
                break
        return values
    finally:
        consumer.close()


def test_write_from_two_executor_jvms(broker: LocalBroker, make_topic: TopicFactory) -> None:
    topic = make_topic(partitions=3)
    rows = 20_000
    job = subprocess.run(
        [sys.executable, str(_JOB), broker.bootstrap_servers, topic, str(rows)],
        capture_output=True,
        text=True,
        timeout=_TIMEOUT_S,
        check=False,
    )
    if job.returncode == _CANNOT_START:
        pytest.skip(job.stderr.strip().splitlines()[-1])
    assert job.returncode == 0, f"the cluster job failed:\n{job.stderr[-3000:]}"
    report = json.loads(job.stdout.strip().splitlines()[-1])
    assert len(report["executor_jvms"]) == 2, report

    values = _values(broker.bootstrap_servers, topic, 3)
    assert sorted(int(v) for v in values) == list(range(rows))
