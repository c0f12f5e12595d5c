"""A LocalBroker started while a Spark session is active leaves that session active.

Starting a child with a Python ``preexec_fn`` made CPython clear the other threads' states in
the forked child; py4j's thread-local connection was finalised there and shut down the
socket it shares with the parent, so the next JVM call from this thread went through a new
connection whose JVM thread had no active session, and a write through the data source failed
with DATA_SOURCE_NOT_FOUND. LocalBroker now sets the death signal with setpriv (no Python in
the child), so nothing needs restoring."""

from __future__ import annotations

import shutil

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

from confluent_kafka import Consumer, TopicPartition
from pyspark.sql import SparkSession

from kafkaline.testing import LocalBroker

from .conftest import restore_active_session

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]


def _count(bootstrap: str, topic: str, expected: int) -> int:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "check", "enable.auto.commit": False}
    )
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        seen = 0
        for _ in range(100):
            if seen >= expected:
                break
            seen += len([m for m in consumer.consume(1000, timeout=0.2) if m.error() is None])
        return seen
    finally:
        consumer.close()


@pytest.mark.skipif(shutil.which("setpriv") is None, reason="no setpriv: the preexec_fn fallback")
def test_a_broker_started_after_the_session_keeps_it_active(spark: SparkSession) -> None:
    restore_active_session(spark)  # whatever earlier tests did, start from an active session
    with LocalBroker() as late_broker:
        late_broker.create_topic("late", partitions=1)
        # No restore_active_session() here: the write must find the data source as it is.
        (
            spark.range(100)
            .selectExpr("CAST(id AS STRING) AS value")
            .write.format("kafkaline")
            .option("kafka.bootstrap.servers", late_broker.bootstrap_servers)
            .option("topic", "late")
            .mode("append")
            .save()
        )
        assert _count(late_broker.bootstrap_servers, "late", 100) == 100
