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

A test that leaves a producer's I/O thread running (a ``Producer`` never closed) fails the
session: the check runs after every fixture has been torn down and names the test.
"""

from __future__ import annotations

import re
import threading
import time
import uuid
from collections.abc import Iterator

import pytest

from kafkaline.testing import LocalBroker, TopicFactory


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "broker" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.integration)


#: The I/O thread of every Producer is named so (see kafkaline.producer.lifecycle.thread_name).
PRODUCER_THREAD_PREFIX = "kafkaline-producer-network-thread"

#: How long the session-end check waits for producer threads that are still closing.
THREAD_EXIT_GRACE_S = 5.0

#: Each producer I/O thread seen at a test's teardown, and the first test it was seen after.
_producer_thread_origins: dict[threading.Thread, str] = {}


def producer_threads() -> list[threading.Thread]:
    return [
        thread
        for thread in threading.enumerate()
        if thread.name.startswith(PRODUCER_THREAD_PREFIX) and thread.is_alive()
    ]


@pytest.fixture(autouse=True)
def _note_producer_threads(request: pytest.FixtureRequest) -> Iterator[None]:
    """Remember which test started each producer thread. A thread of a module-scoped producer
    is noted too, but ends when its fixture closes it, before the session-end check."""
    yield
    for thread in producer_threads():
        _producer_thread_origins.setdefault(thread, request.node.nodeid)


def leaked_producer_threads(grace_s: float) -> list[threading.Thread]:
    """The producer threads still alive after ``grace_s`` seconds."""
    deadline = time.monotonic() + grace_s
    while (alive := producer_threads()) and time.monotonic() < deadline:
        time.sleep(0.05)
    return alive


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    leaked = leaked_producer_threads(THREAD_EXIT_GRACE_S)
    if not leaked:
        return
    lines = [
        f"{len(leaked)} producer I/O thread(s) still running at the end of the session: a test "
        "never closed its Producer (use `with Producer(...) as producer:` or close() it)"
    ]
    for thread in leaked:
        origin = _producer_thread_origins.get(thread, "started outside a test")
        lines.append(f"  {thread.name!r}: {origin}")
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.ensure_newline()
        reporter.write_sep("=", "leaked producer threads", red=True)
        for line in lines:
            reporter.write_line(line, red=True)
    else:
        print("\n".join(lines))
    session.exitstatus = pytest.ExitCode.TESTS_FAILED


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
