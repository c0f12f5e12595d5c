"""A bad ``kafka.*`` option fails the write once, while Spark plans it, not in every task."""

from __future__ import annotations

import pytest

pytest.importorskip("pyspark")

from pyspark.sql import SparkSession

from kafkaline.testing import LocalBroker, TopicFactory

from .conftest import restore_active_session


def test_a_bad_kafka_option_fails_the_write_while_planning(
    spark: SparkSession, broker: LocalBroker, make_topic: TopicFactory
) -> None:
    topic = make_topic(partitions=1)
    restore_active_session(spark)
    df = spark.range(10, numPartitions=2).selectExpr("cast(id as string) as value")
    with pytest.raises(Exception) as raised:
        (
            df.write.format("kafkaline")
            .option("kafka.bootstrap.servers", broker.bootstrap_servers)
            .option("topic", topic)
            .option("kafka.linger.ms", "abc")
            .mode("append")
            .save()
        )
    text = str(raised.value)
    # Spark's wording for a failure while it creates the writer on the driver side, before
    # any task (a task's failure reads "Job aborted due to stage failure").
    assert "Failed to initialize Python data source writer" in text
    assert "linger.ms='abc' is invalid: must be an integer" in text
    assert "stage failure" not in text
