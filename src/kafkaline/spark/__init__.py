"""kafkaline on Spark: a Python Data Source (short name ``kafkaline``) that writes DataFrames
to Kafka through kafkaline's producer, in batch and Structured Streaming.

    >>> import kafkaline.spark                                            # doctest: +SKIP
    >>> kafkaline.spark.register(spark)                                   # doctest: +SKIP
    >>> (df.write.format("kafkaline")                                     # doctest: +SKIP
    ...    .option("kafka.bootstrap.servers", "127.0.0.1:9092")
    ...    .option("topic", "events").mode("append").save())

Columns are those of Spark's Kafka sink: ``value`` (string or binary, required), ``key``,
``topic``, ``partition``, ``headers`` (array<struct<key:string,value:binary>>) and
``timestamp``. Delivery is at-least-once: a task fails unless all its records were
acknowledged, and Spark retries a failed task from its start, so a retried task may write
some records twice (enable ``kafka.enable.idempotence`` to avoid duplicates from the
producer's own retries; it cannot remove those of a retried Spark task).

Needs pyspark >= 4.0 and pyarrow (kafkaline's ``spark`` extra). Importing this package does
not import pyspark; :func:`register` and :class:`KafkalineDataSource` do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["SHORT_NAME", "KafkalineDataSource", "register"]

SHORT_NAME = "kafkaline"


def register(spark: SparkSession) -> None:
    """Register the ``kafkaline`` data source with ``spark`` (the same as
    ``spark.dataSource.register(kafkaline.spark.KafkalineDataSource)``).

    With a local master, first checks that the Python Spark starts for its workers can
    import kafkaline; raises ConfigError saying to set ``PYSPARK_PYTHON`` (or
    ``spark.pyspark.python``) if not."""
    from kafkaline.spark.data_source import KafkalineDataSource
    from kafkaline.spark.worker_python import check_worker_python

    check_worker_python(spark)
    spark.dataSource.register(KafkalineDataSource)


def __getattr__(name: str) -> Any:
    # The data source class imports pyspark: load it only when asked for, so that
    # `import kafkaline.spark` works (and fails with a clear error later) without pyspark.
    if name == "KafkalineDataSource":
        from kafkaline.spark.data_source import KafkalineDataSource

        return KafkalineDataSource
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
