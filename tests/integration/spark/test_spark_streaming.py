"""The kafkaline sink in Structured Streaming: micro-batches from a file source, restarted
from the checkpoint without writing a micro-batch twice or losing one."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

from confluent_kafka import Consumer, TopicPartition
from pyspark.sql import SparkSession

from kafkaline.testing import LocalBroker, TopicFactory

from .conftest import restore_active_session


def _values(bootstrap: str, topic: str, expected: int) -> list[bytes]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"spark-stream-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 50,
        }
    )
    values: list[bytes] = []
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        quiet = 0
        for _ in range(300):
            messages = consumer.consume(num_messages=1000, timeout=0.2)
            values.extend(message.value() or b"" for message in messages if not message.error())
            quiet = quiet + 1 if len(values) >= expected and not messages else 0
            if quiet == 3:
                break
        return values
    finally:
        consumer.close()


def _run_available(
    spark: SparkSession, source: Path, checkpoint: Path, servers: str, topic: str
) -> None:
    restore_active_session(spark)
    stream = (
        spark.readStream.schema("n long")
        .json(str(source))
        .selectExpr("cast(n as string) as value")
        .writeStream.format("kafkaline")
        .option("kafka.bootstrap.servers", servers)
        .option("topic", topic)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    stream.awaitTermination(120)
    error = stream.exception()
    if error is not None:
        raise AssertionError(f"the streaming query failed: {error}")


def test_stream_restarted_from_checkpoint_writes_each_micro_batch_once(
    spark: SparkSession, broker: LocalBroker, make_topic: TopicFactory, tmp_path: Path
) -> None:
    topic = make_topic(partitions=1)
    source, checkpoint = tmp_path / "in", tmp_path / "checkpoint"
    source.mkdir()
    (source / "a.json").write_text("\n".join(json.dumps({"n": i}) for i in range(50)))
    _run_available(spark, source, checkpoint, broker.bootstrap_servers, topic)

    (source / "b.json").write_text("\n".join(json.dumps({"n": i}) for i in range(50, 80)))
    _run_available(spark, source, checkpoint, broker.bootstrap_servers, topic)

    values = _values(broker.bootstrap_servers, topic, 80)
    assert sorted(int(v) for v in values) == list(range(80))
