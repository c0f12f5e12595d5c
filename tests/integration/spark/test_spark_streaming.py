"""The kafkaline sink in Structured Streaming: micro-batches from a file source, restarted
from the checkpoint without writing a micro-batch twice or losing one; and the streaming
example (a rate source) stopped while running and restarted without losing a micro-batch."""

from __future__ import annotations

import importlib.util
import json
import time
import uuid
from pathlib import Path
from types import ModuleType

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

from confluent_kafka import Consumer, TopicPartition
from pyspark.sql import SparkSession
from pyspark.sql.streaming.query import StreamingQuery

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


def _example() -> ModuleType:
    """examples/spark_streaming.py (examples/ is not a package: loaded from its file)."""
    path = Path(__file__).resolve().parents[3] / "examples" / "spark_streaming.py"
    spec = importlib.util.spec_from_file_location("kafkaline_spark_streaming_example", path)
    if spec is None or spec.loader is None:
        raise AssertionError(f"cannot load {path.name}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _all_values(bootstrap: str, topic: str, partitions: int, expected: int) -> list[int]:
    """Every record's value as an int, from every partition: reads until at least
    ``expected`` are in hand and then until quiet, so that more would be seen too."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"spark-stream-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 50,
        }
    )
    values: list[int] = []
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        quiet = 0
        for _ in range(300):
            messages = consumer.consume(num_messages=1000, timeout=0.2)
            for message in messages:
                if message.error() is not None:
                    raise AssertionError(f"confluent-kafka consumer error: {message.error()}")
                values.append(int(message.value() or b"-1"))
            quiet = quiet + 1 if len(values) >= expected and not messages else 0
            if quiet == 5:
                break
        return values
    finally:
        consumer.close()


def _run_until_batches(query: StreamingQuery, batches: int, timeout: float = 120.0) -> int:
    """Let the query commit ``batches`` micro-batches with rows, then stop it while it runs;
    return the rows of the micro-batches it completed (all of them are in Kafka)."""
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            error = query.exception()
            if error is not None:
                raise AssertionError(f"the streaming query failed: {error}")
            with_rows = [p for p in query.recentProgress if p["numInputRows"] > 0]
            if len(with_rows) >= batches:
                break
            time.sleep(0.3)
        else:
            raise AssertionError(f"fewer than {batches} micro-batches with rows in {timeout} s")
    finally:
        query.stop()
    return sum(int(p["numInputRows"]) for p in query.recentProgress)


def test_rate_stream_stopped_and_restarted_loses_no_micro_batch(
    spark: SparkSession, broker: LocalBroker, make_topic: TopicFactory, tmp_path: Path
) -> None:
    """The example's query, stopped while running and restarted from its checkpoint: the rate
    source's counter reads back without a gap (at-least-once: duplicates are allowed, and
    counted), and the second run went on past what the first wrote."""
    example = _example()
    topic = make_topic(partitions=3)
    checkpoint = str(tmp_path / "checkpoint")
    servers = broker.bootstrap_servers

    restore_active_session(spark)
    first_rows = _run_until_batches(example.start_query(spark, servers, topic, checkpoint, 200), 2)
    first = _all_values(servers, topic, 3, first_rows)
    restore_active_session(spark)
    second_rows = _run_until_batches(example.start_query(spark, servers, topic, checkpoint, 200), 2)
    both = _all_values(servers, topic, 3, first_rows + second_rows)

    distinct, duplicates, missing = example.counter_gaps(both)
    assert first, "the first run wrote nothing"
    assert max(both) > max(first), "the restarted query wrote nothing new"
    assert missing == [], f"values lost across the restart: {missing[:10]}"
    # At-least-once: a micro-batch cut by stop() is written again on restart.
    assert distinct + duplicates == len(both)
    print(f"read back {len(both)} records, {distinct} distinct, {duplicates} duplicates")
