"""Fixtures shared by every test: one real broker per session, a fresh topic per test.

    @pytest.mark.integration
    def test_send(broker: LocalBroker, topic: str) -> None:
        producer = Producer(bootstrap_servers=broker.bootstrap_servers)
        ...

    def test_two_topics(make_topic: TopicFactory) -> None:
        small, wide = make_topic(partitions=1), make_topic(partitions=12)

The broker starts the first time a test asks for it (unit-only runs never start one), and any
test that asks for it is marked ``integration`` automatically, so ``-m "not integration"``
deselects them.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator

import pytest

from kafkaline.testing import LocalBroker, TopicFactory


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "broker" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalBroker]:
    """The session's broker. Its log is kept under pytest's basetemp (``broker0/broker.log``)
    for a look after a failed run."""
    with LocalBroker(log_dir=tmp_path_factory.mktemp("broker")) as session_broker:
        yield session_broker


@pytest.fixture(autouse=True)
def _session_broker_running(request: pytest.FixtureRequest) -> None:
    """A test that stops or kills the session broker and then fails must not take the tests
    after it down too: start it again (a no-op when it runs). Only for tests that use it."""
    if "broker" in request.fixturenames:
        session_broker: LocalBroker = request.getfixturevalue("broker")
        session_broker.start()


@pytest.fixture
def make_topic(broker: LocalBroker, request: pytest.FixtureRequest) -> Iterator[TopicFactory]:
    """A factory for fresh, uniquely named topics (named after the test); deleted after it."""
    prefix = re.sub(r"[^a-zA-Z0-9._-]+", "-", request.node.name)[:200]
    created: list[str] = []

    def make(partitions: int = 3) -> str:
        name = f"{prefix}-{uuid.uuid4().hex[:12]}"
        broker.create_topic(name, partitions=partitions)
        created.append(name)
        return name

    yield make
    # Deleting keeps the session broker small, and its restarts quick (a memory broker's
    # restart re-creates every topic it knows). Skip what the test deleted itself.
    leftovers = [name for name in created if name in broker.topics]
    if leftovers:
        broker.start()  # the test may have left it stopped
        for name in leftovers:
            broker.delete_topic(name)


@pytest.fixture
def topic(make_topic: TopicFactory) -> str:
    """A fresh topic with 3 partitions, for this test only."""
    return make_topic(partitions=3)
