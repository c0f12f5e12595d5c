"""The kafkaline data source writing DataFrames, read back by confluent-kafka."""

from __future__ import annotations

import datetime
import socket
import uuid
from collections import Counter
from typing import cast

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

from confluent_kafka import Consumer, TopicPartition
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from kafkaline.testing import LocalBroker, TopicFactory

from .conftest import restore_active_session

_HEADERS = ArrayType(
    StructType([StructField("key", StringType()), StructField("value", BinaryType())])
)

Header = tuple[str, bytes | None]
Read = tuple[bytes | None, bytes | None, tuple[Header, ...], int]


def _read_partition(bootstrap: str, topic: str, partition: int, expected: int) -> list[Read]:
    """Every record of one partition: reads until ``expected`` are in hand, then a little
    longer so that extra records would be seen too."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"spark-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 50,
        }
    )
    got: list[Read] = []
    try:
        consumer.assign([TopicPartition(topic, partition, 0)])
        empty_polls_after_expected = 0
        for _ in range(300):
            messages = consumer.consume(num_messages=1000, timeout=0.2)
            for message in messages:
                error = message.error()
                if error is not None:
                    raise AssertionError(f"confluent-kafka consumer error: {error}")
                # confluent-kafka types headers as str | bytes; ours are bytes
                headers = tuple(cast(list[Header], message.headers() or []))
                got.append((message.key(), message.value(), headers, message.timestamp()[1]))
            if len(got) >= expected and not messages:
                empty_polls_after_expected += 1
                if empty_polls_after_expected == 3:
                    break
        return got
    finally:
        consumer.close()


def _write(df: DataFrame, broker: LocalBroker, topic: str | None = None) -> None:
    restore_active_session(df.sparkSession)
    writer = df.write.format("kafkaline").option(
        "kafka.bootstrap.servers", broker.bootstrap_servers
    )
    if topic is not None:
        writer = writer.option("topic", topic)
    writer.mode("append").save()


def test_batch_write_reads_back_with_keys_headers_and_timestamps(
    spark: SparkSession, broker: LocalBroker, make_topic: TopicFactory
) -> None:
    topic = make_topic(partitions=3)
    rows = 3000
    df = spark.range(rows, numPartitions=4).selectExpr(
        "concat('k', cast(id % 50 as string)) as key",
        "concat('value-', cast(id as string)) as value",
        "array(named_struct('key', 'n', 'value', cast(cast(id as string) as binary))) as headers",
    )
    _write(df, broker, topic)

    read = [
        record
        for partition in range(3)
        for record in _read_partition(broker.bootstrap_servers, topic, partition, 1)
    ]
    assert len(read) == rows
    by_value = {value: (key, headers) for key, value, headers, _ in read}
    assert by_value[b"value-1234"] == (b"k34", (("n", b"1234"),))
    assert Counter(key for key, _, _, _ in read) == Counter(
        f"k{i % 50}".encode() for i in range(rows)
    )


def test_partition_and_timestamp_columns_are_honoured(
    spark: SparkSession, broker: LocalBroker, make_topic: TopicFactory
) -> None:
    topic = make_topic(partitions=3)
    when = datetime.datetime(2024, 5, 1, 12, 0, 0, 250_000, tzinfo=datetime.timezone.utc)
    schema = StructType(
        [
            StructField("value", BinaryType()),
            StructField("partition", IntegerType()),
            StructField("timestamp", TimestampType()),
        ]
    )
    data = [(f"v{i}".encode(), i % 2, when) for i in range(10)]
    _write(spark.createDataFrame(data, schema), broker, topic)

    counts = {p: _read_partition(broker.bootstrap_servers, topic, p, 5) for p in range(3)}
    assert [len(counts[p]) for p in range(3)] == [5, 5, 0]
    assert {record[3] for p in (0, 1) for record in counts[p]} == {int(when.timestamp() * 1000)}
    assert sorted(record[1] or b"" for record in counts[1]) == sorted(
        f"v{i}".encode() for i in range(1, 10, 2)
    )


def test_partition_with_nulls_and_per_row_timestamps_read_back(
    spark: SparkSession, broker: LocalBroker, make_topic: TopicFactory
) -> None:
    """Every row its own timestamp (milliseconds kept exactly); a null partition lets the
    partitioner choose, a set one is where the record lands. The batch goes to the producer
    whole (send_arrow with partition and timestamp columns), across several Arrow batches."""
    topic = make_topic(partitions=3)
    rows = 3000
    df = spark.range(rows, numPartitions=2).selectExpr(
        "concat('v', cast(id as string)) as value",
        "concat('k', cast(id % 7 as string)) as key",
        "if(id % 3 = 0, 2, cast(null as int)) as partition",
        # 2024-05-01T12:00:00Z plus id milliseconds (and some microseconds, rounded down)
        "timestamp_micros(1714564800000000 + id * 1000 + 999) as timestamp",
    )
    _write(df, broker, topic)

    read = {p: _read_partition(broker.bootstrap_servers, topic, p, 1) for p in range(3)}
    assert sum(len(records) for records in read.values()) == rows
    placed = {int((value or b"v-1")[1:]) for _, value, _, _ in read[2]}
    assert {i for i in range(rows) if i % 3 == 0} <= placed
    for records in read.values():
        for _, value, _, timestamp in records:
            assert timestamp == 1714564800000 + int((value or b"v-1")[1:])


def test_topic_column_routes_rows_to_two_topics(
    spark: SparkSession, broker: LocalBroker, make_topic: TopicFactory
) -> None:
    first, second = make_topic(partitions=1), make_topic(partitions=1)
    df = spark.range(100, numPartitions=2).selectExpr(
        f"if(id % 4 = 0, '{first}', '{second}') as topic", "cast(id as string) as value"
    )
    _write(df, broker)

    got_first = _read_partition(broker.bootstrap_servers, first, 0, 25)
    got_second = _read_partition(broker.bootstrap_servers, second, 0, 75)
    assert sorted(int(value or b"-1") for _, value, _, _ in got_first) == list(range(0, 100, 4))
    assert len(got_second) == 75


def test_missing_value_column_fails_naming_it(spark: SparkSession, broker: LocalBroker) -> None:
    df = spark.range(3).selectExpr("cast(id as string) as key")
    with pytest.raises(Exception, match="'value' column"):
        _write(df, broker, "unused-topic")


def test_value_of_wrong_type_fails_naming_column_and_type(
    spark: SparkSession, broker: LocalBroker
) -> None:
    df = spark.range(3).selectExpr("id as value")
    with pytest.raises(Exception, match=r"column 'value' is of type bigint"):
        _write(df, broker, "unused-topic")


def test_missing_topic_fails_naming_it(spark: SparkSession, broker: LocalBroker) -> None:
    df = spark.range(3).selectExpr("cast(id as string) as value")
    with pytest.raises(Exception, match="no topic"):
        _write(df, broker)


def test_null_topic_without_topic_option_fails_the_task(
    spark: SparkSession, broker: LocalBroker, make_topic: TopicFactory
) -> None:
    topic = make_topic(partitions=1)
    df = spark.range(10, numPartitions=1).selectExpr(
        f"if(id = 7, cast(null as string), '{topic}') as topic", "cast(id as string) as value"
    )
    with pytest.raises(Exception, match=r"SinkSchemaError: column 'topic' is null"):
        _write(df, broker)


def test_undeliverable_records_fail_the_job(spark: SparkSession, broker: LocalBroker) -> None:
    """No broker listens at the address: the task must fail (never report success)."""
    restore_active_session(spark)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        dead = f"127.0.0.1:{probe.getsockname()[1]}"
    df = spark.range(10, numPartitions=1).selectExpr("cast(id as string) as value")
    with pytest.raises(Exception, match="KafkaTimeoutError"):
        (
            df.write.format("kafkaline")
            .option("kafka.bootstrap.servers", dead)
            .option("kafka.max.block.ms", "2000")
            .option("topic", "nowhere")
            .mode("append")
            .save()
        )
