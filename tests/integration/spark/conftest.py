"""One local Spark session for all Spark tests (starting one takes 10-20 s), with the
kafkaline data source registered. Python workers run the venv's interpreter, so they import
this checkout's kafkaline."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

from pyspark.sql import SparkSession

import kafkaline.spark


def restore_active_session(spark: SparkSession) -> None:
    """Make ``spark`` the JVM's active session for this thread again.

    Spark looks a Python data source up in the *active* session of the JVM thread serving the
    call; starting a LocalBroker (or creating a topic) moves this Python thread onto another
    py4j connection, whose JVM thread has no active session, and the next write fails with
    DATA_SOURCE_NOT_FOUND. PySpark's own createDataFrame re-sets it the same way."""
    jvm = spark._jvm  # private: no public API sets the JVM-side active session
    if jvm is None:
        raise RuntimeError("the Spark session has no JVM gateway (Spark Connect?)")
    jvm.org.apache.spark.sql.SparkSession.setActiveSession(spark._jsparkSession)


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    session = (
        SparkSession.builder.master("local[2]")
        .appName("kafkaline-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        # A failed task is not retried in local mode unless asked; keep it so: one try
        # shows the task's own error.
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    kafkaline.spark.register(session)
    yield session
    session.stop()
