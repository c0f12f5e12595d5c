"""``kafkaline demo --bootstrap-server`` checks the topic before starting Spark."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from kafkaline.cli.exit_status import ExitStatus
from kafkaline.testing import LocalBroker, TopicFactory

pytestmark = pytest.mark.timeout(120)


def test_demo_without_the_topic_says_how_to_create_it(broker: LocalBroker) -> None:
    assert "flights" not in broker.topics
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "kafkaline", "demo", "--bootstrap-server", broker.bootstrap_servers],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert time.monotonic() - started < 30  # no Spark session was started
    assert result.returncode == ExitStatus.UNKNOWN_TOPIC, result.stderr
    assert result.stderr.splitlines() == [
        f"kafkaline: error: topic 'flights' does not exist on {broker.bootstrap_servers}; "
        "create it first: kafkaline topics create flights --partitions 6 --bootstrap-server "
        f"{broker.bootstrap_servers}"
    ]


def test_demo_asks_the_cluster_how_many_partitions_the_topic_has(
    broker: LocalBroker, make_topic: TopicFactory
) -> None:
    # The read-back then counts these partitions, not the demo's own six.
    from kafkaline.cli import demo_command

    assert demo_command.topic_partitions(broker.bootstrap_servers, make_topic(2), 6) == 2
