"""The sink's option parsing (pure logic, no Spark session or broker)."""

from __future__ import annotations

import pytest

pytest.importorskip("pyspark")

from kafkaline import ConfigError, KafkaError
from kafkaline.spark.sink_options import SINK_PRODUCER_DEFAULTS, SinkOptions
from kafkaline.spark.sink_schema import SinkSchemaError


def test_kafka_options_become_properties_with_the_sink_defaults() -> None:
    options = SinkOptions.parse(
        {"kafka.bootstrap.servers": "h:1", "kafka.linger.ms": "7", "topic": "t", "other": "x"}
    )
    assert options.topic == "t"
    assert dict(options.properties) == {
        "bootstrap.servers": "h:1",
        "linger.ms": "7",
        **SINK_PRODUCER_DEFAULTS,
    }


def test_a_given_batch_size_wins_over_the_sink_default() -> None:
    options = SinkOptions.parse({"kafka.bootstrap.servers": "h:1", "kafka.batch.size": "1000"})
    assert dict(options.properties)["batch.size"] == "1000"
    assert options.topic is None


def test_bootstrap_servers_are_required() -> None:
    with pytest.raises(ConfigError, match=r"kafka\.bootstrap\.servers"):
        SinkOptions.parse({"topic": "t"})


def test_sink_schema_error_is_a_kafkaline_error() -> None:
    assert issubclass(SinkSchemaError, KafkaError)
    assert issubclass(SinkSchemaError, ValueError)


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("kafka.linger.ms", "abc", r"linger\.ms='abc' is invalid: must be an integer"),
        ("kafka.foo.bar", "1", r"'foo\.bar' is not a producer setting"),
    ],
)
def test_bad_kafka_options_fail_while_planning(option: str, value: str, message: str) -> None:
    # On the driver side of the write, before any task runs.
    with pytest.raises(ConfigError, match=message):
        SinkOptions.parse({"kafka.bootstrap.servers": "h:1", option: value, "topic": "t"})


def test_the_drivers_write_summary_is_printed_not_only_logged(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # The package logger prints nothing unless the application configures logging; the
    # summary of a write goes to the driver's console as well.
    from kafkaline.spark.arrow_records import PartitionCount
    from kafkaline.spark.writers import KafkalineCommitMessage, KafkalineRowWriter

    writer = KafkalineRowWriter(SinkOptions.parse({"kafka.bootstrap.servers": "h:1"}), None, None)  # type: ignore[arg-type]
    done = KafkalineCommitMessage((PartitionCount("events", 0, 7, 0, 6),))
    writer.commit([done, done])
    assert capsys.readouterr().err == (
        "kafkaline: write committed: 14 records from 2 tasks (events-0: 14)\n"
    )
    writer.abort([done, None])
    assert capsys.readouterr().err == (
        "kafkaline: write aborted (1 tasks failed); 1 tasks had written 7 records, which stay "
        "in Kafka (events-0: 7)\n"
    )
