"""examples/spark_exactly_once.py's query, stopped while it runs and restarted from its
checkpoint, in the tests' shared Spark session: a read_committed reader sees the rate
source's counter without a gap and without a duplicate, and no transaction is left open."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

from pyspark.sql import SparkSession

from kafkaline.testing import LocalBroker, TopicFactory, read_committed_log

from .conftest import restore_active_session

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]


def _example() -> ModuleType:
    path = Path(__file__).resolve().parents[3] / "examples" / "spark_exactly_once.py"
    spec = importlib.util.spec_from_file_location("kafkaline_spark_exactly_once_example", path)
    if spec is None or spec.loader is None:
        raise AssertionError(f"cannot load {path.name}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_exactly_once_stream_stopped_and_restarted(
    spark: SparkSession, broker: LocalBroker, make_topic: TopicFactory, tmp_path: Path
) -> None:
    example = _example()
    topic = make_topic(partitions=3)
    checkpoint = str(tmp_path / "checkpoint")
    servers = broker.bootstrap_servers
    highest = []
    for _run in range(2):
        restore_active_session(spark)
        example.run_for(example.start_query(spark, servers, topic, checkpoint, 200), 6.0)
        log = read_committed_log(servers, topic)
        highest.append(max((int(v or b"-1") for v in log.committed_values()), default=-1))
    values = [int(v or b"-1") for v in log.committed_values()]
    distinct, duplicates, missing = example.check(values)
    print(f"exactly-once example: {log.counts()}, {distinct} distinct")
    assert highest[0] >= 0 and highest[1] > highest[0], "a run wrote nothing"
    assert duplicates == 0 and missing == 0
    assert log.open_producer_ids() == set()
