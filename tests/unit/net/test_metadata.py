"""The metadata refresh policy with a fake clock, and waiting for a topic from another thread."""

from __future__ import annotations

import math
import threading
import time

import pytest

from kafkaline.config import ExponentialBackoff
from kafkaline.errors import (
    IllegalStateError,
    KafkaConnectionError,
    KafkaTimeoutError,
    ProtocolError,
    TopicAuthorizationFailedError,
)
from kafkaline.net.cluster import BrokerNode, ClusterMetadata, TopicPartition
from kafkaline.net.metadata import Metadata
from kafkaline.protocol.api import MetadataResponse
from kafkaline.protocol.api.metadata import (
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)

MAX_AGE = 60_000


class NoJitter:
    def uniform(self, a: float, b: float, /) -> float:
        return (a + b) / 2


def make_metadata(
    *,
    clock: float | None = None,
    wakeups: list[int] | None = None,
    allow_auto_topic_creation: bool = False,
    topic_expiry_ms: int = 300_000,
) -> Metadata:
    def wakeup() -> None:
        if wakeups is not None:
            wakeups.append(1)

    return Metadata(
        ClusterMetadata.bootstrap([("b", 9092)]),
        max_age_ms=MAX_AGE,
        refresh_backoff=ExponentialBackoff(initial_ms=100, max_ms=1_000, jitter=0.0),
        topic_expiry_ms=topic_expiry_ms,
        allow_auto_topic_creation=allow_auto_topic_creation,
        clock=(lambda: clock) if clock is not None else (lambda: time.monotonic() * 1000),
        rng=NoJitter(),
        wakeup=wakeup,
    )


def metadata_response(
    topics: dict[str, int], errors: dict[str, int] | None = None, leader: int = 1
) -> MetadataResponse:
    items = [
        MetadataResponseTopic(
            error_code=0,
            name=name,
            partitions=[
                MetadataResponsePartition(
                    partition_index=index, leader_id=leader, replica_nodes=[1], isr_nodes=[1]
                )
                for index in range(count)
            ],
        )
        for name, count in topics.items()
    ]
    items += [
        MetadataResponseTopic(error_code=code, name=name, partitions=[])
        for name, code in (errors or {}).items()
    ]
    return MetadataResponse(
        brokers=[MetadataResponseBroker(node_id=1, host="b", port=9092)], topics=items
    )


def refresh(metadata: Metadata, now: float, response: MetadataResponse) -> None:
    metadata.new_request(now)
    metadata.update(response, now)


def test_a_refresh_is_due_at_once_at_start_then_every_max_age() -> None:
    metadata = make_metadata()
    assert metadata.time_to_next_update(0) == 0
    refresh(metadata, 0, metadata_response({}))
    assert metadata.time_to_next_update(1) == MAX_AGE - 1
    assert not metadata.is_update_due(MAX_AGE - 1)
    assert metadata.is_update_due(MAX_AGE)


def test_in_flight_refresh_is_waited_for() -> None:
    metadata = make_metadata()
    metadata.new_request(0)
    assert metadata.time_to_next_update(10**9) == math.inf
    with pytest.raises(IllegalStateError, match="already in flight"):
        metadata.new_request(0)


def test_requested_update_waits_for_the_refresh_backoff() -> None:
    metadata = make_metadata()
    refresh(metadata, 1_000, metadata_response({}))
    assert metadata.request_update() == 1
    assert metadata.update_requested
    assert metadata.time_to_next_update(1_050) == 50  # 100 ms after the last refresh
    assert metadata.time_to_next_update(1_100) == 0


def test_failures_back_off_exponentially_and_a_success_resets() -> None:
    metadata = make_metadata()
    now = 0.0
    waits = []
    for _ in range(6):
        metadata.new_request(now)
        metadata.failed_update(now, KafkaConnectionError("lost"))
        wait = metadata.time_to_next_update(now)
        waits.append(wait)
        now += wait
    assert waits == [100, 200, 400, 800, 1000, 1000]
    assert isinstance(metadata.last_error, KafkaConnectionError)
    refresh(metadata, now, metadata_response({}))
    metadata.request_update()
    assert metadata.time_to_next_update(now) == 100
    assert metadata.last_error is None


def test_a_new_topic_is_fetched_at_once_whatever_the_backoff() -> None:
    wakeups: list[int] = []
    metadata = make_metadata(wakeups=wakeups)
    metadata.new_request(0)
    metadata.failed_update(0, KafkaConnectionError("lost"))
    assert metadata.time_to_next_update(0) == 100
    metadata.add_topic("events", 0)
    assert metadata.time_to_next_update(0) == 0
    assert wakeups == [1]
    metadata.add_topic("events", 5)  # known topic: no new refresh, no wakeup
    assert wakeups == [1]


def test_request_asks_for_the_topics_in_use_without_auto_creation() -> None:
    metadata = make_metadata()
    metadata.add_topic("b-topic", 0)
    metadata.add_topic("a-topic", 0)
    request = metadata.new_request(0)
    assert [item.name for item in request.topics or []] == ["a-topic", "b-topic"]
    assert request.allow_auto_topic_creation is False
    opted_in = make_metadata(allow_auto_topic_creation=True)
    assert opted_in.new_request(0).allow_auto_topic_creation is True


def test_no_topics_asks_for_an_empty_list_not_for_all_topics() -> None:
    request = make_metadata().new_request(0)
    assert request.topics == []  # None would mean every topic


def test_unused_topics_expire_from_requests() -> None:
    metadata = make_metadata(topic_expiry_ms=1_000)
    metadata.add_topic("old", 0)
    metadata.add_topic("fresh", 0)
    metadata.add_topic("fresh", 900)
    request = metadata.new_request(1_000)
    assert [item.name for item in request.topics or []] == ["fresh"]
    assert metadata.topics == frozenset({"fresh"})


def test_topic_added_while_a_refresh_is_in_flight_is_fetched_next() -> None:
    metadata = make_metadata()
    metadata.new_request(0)
    metadata.add_topic("late", 1)
    metadata.update(metadata_response({}), 2)
    assert metadata.update_requested
    assert metadata.time_to_next_update(2) == 0  # new topic: no backoff


def test_a_retriable_topic_error_or_a_missing_leader_asks_for_another_refresh() -> None:
    metadata = make_metadata()
    metadata.add_topic("missing", 0)
    refresh(metadata, 0, metadata_response({}, errors={"missing": 3}))
    assert metadata.update_requested and metadata.time_to_next_update(0) == 100

    leaderless = make_metadata()
    leaderless.add_topic("t", 0)
    refresh(leaderless, 0, metadata_response({"t": 2}, leader=-1))
    assert leaderless.update_requested

    complete = make_metadata()
    complete.add_topic("t", 0)
    refresh(complete, 0, metadata_response({"t": 2}))
    assert not complete.update_requested


def test_update_installs_a_new_snapshot_and_counts_versions() -> None:
    metadata = make_metadata()
    before = metadata.cluster
    assert before.is_bootstrap
    refresh(metadata, 0, metadata_response({"t": 3}))
    assert metadata.update_version == 1
    assert metadata.cluster is not before
    assert metadata.cluster.leader_for(TopicPartition("t", 2)) is not None


def test_a_response_naming_no_broker_is_a_failed_refresh() -> None:
    metadata = make_metadata()
    metadata.new_request(0)
    empty = MetadataResponse(brokers=[], topics=[])
    cluster = metadata.update(empty, 0)
    assert cluster.is_bootstrap and metadata.update_version == 0
    assert isinstance(metadata.last_error, ProtocolError)
    assert metadata.time_to_next_update(0) == 100


# --------------------------------------------------------------------------- waiting


def test_wait_for_a_known_topic_returns_at_once() -> None:
    metadata = make_metadata(clock=0.0)
    refresh(metadata, 0, metadata_response({"t": 2}))
    assert metadata.wait_for_topic("t", 0).partition_count("t") == 2


def test_wait_returns_when_another_thread_updates() -> None:
    wakeups: list[int] = []
    metadata = make_metadata(wakeups=wakeups)

    def io_thread() -> None:
        while not wakeups:
            time.sleep(0.001)
        refresh(metadata, 0, metadata_response({"t": 4}))

    thread = threading.Thread(target=io_thread)
    thread.start()
    started = time.monotonic()
    cluster = metadata.wait_for_topic("t", 5_000)
    thread.join()
    assert cluster.partition_count("t") == 4
    assert time.monotonic() - started < 2
    assert "t" in metadata.topics


def test_wait_times_out_naming_the_topic_and_the_brokers_answer() -> None:
    metadata = make_metadata()
    refresh(metadata, 0, metadata_response({}, errors={"missing": 3}))
    started = time.monotonic()
    with pytest.raises(KafkaTimeoutError) as caught:
        metadata.wait_for_topic("missing", 50)
    assert 0.04 <= time.monotonic() - started < 1
    message = str(caught.value)
    assert "'missing' not present in metadata after 50 ms" in message
    assert "UNKNOWN_TOPIC_OR_PARTITION" in message


def test_wait_timeout_mentions_the_last_refresh_failure() -> None:
    metadata = make_metadata()
    metadata.new_request(0)
    metadata.failed_update(0, KafkaConnectionError("cannot connect to broker at b:9092"))
    with pytest.raises(KafkaTimeoutError, match="last metadata error: cannot connect"):
        metadata.wait_for_topic("t", 20)


def test_wait_raises_a_non_retriable_topic_error_at_once() -> None:
    metadata = make_metadata()
    refresh(metadata, 0, metadata_response({}, errors={"secret": 29}))
    started = time.monotonic()
    with pytest.raises(TopicAuthorizationFailedError, match="topic secret"):
        metadata.wait_for_topic("secret", 10_000)
    assert time.monotonic() - started < 1


def test_close_wakes_waiters() -> None:
    metadata = make_metadata()
    errors: list[BaseException] = []

    def waiter() -> None:
        try:
            metadata.wait_for_topic("t", 10_000)
        except IllegalStateError as error:
            errors.append(error)

    thread = threading.Thread(target=waiter)
    thread.start()
    time.sleep(0.05)
    metadata.close()
    thread.join(timeout=5)
    assert not thread.is_alive()
    assert "closed while waiting for metadata of topic 't'" in str(errors[0])


def test_a_leader_hint_is_installed_without_a_refresh() -> None:
    metadata = make_metadata(clock=0.0)
    refresh(metadata, 0.0, metadata_response({"t": 2}))
    version = metadata.update_version
    # A newer epoch of the same leader is taken, but is no move.
    assert not metadata.update_leaders({TopicPartition("t", 0): (1, 0)})
    assert metadata.update_leaders({TopicPartition("t", 0): (2, 3)}, [BrokerNode(2, "b2", 9092)])
    leader = metadata.cluster.leader_for(TopicPartition("t", 0))
    assert leader is not None and leader.node_id == 2
    assert metadata.update_version == version  # a hint is not a refresh


def test_rebootstrap_goes_back_to_the_bootstrap_view_and_refreshes_at_once() -> None:
    metadata = make_metadata(clock=0.0)
    refresh(metadata, 0.0, metadata_response({"t": 2}))
    metadata.new_request(10.0)
    metadata.failed_update(10.0, KafkaConnectionError("refused"))
    metadata.failed_update(20.0, KafkaConnectionError("refused"))
    assert metadata.failing_for_ms(510.0) == 500.0
    assert metadata.time_to_next_update(20.0) > 0  # backing off
    metadata.rebootstrap(ClusterMetadata.bootstrap([("b", 9092), ("c", 9092)]), 30.0)
    assert metadata.cluster.is_bootstrap and sorted(metadata.cluster.brokers) == [-2, -1]
    assert metadata.time_to_next_update(30.0) == 0
    assert metadata.failing_for_ms(40.0) == 0.0
    refresh(metadata, 40.0, metadata_response({"t": 2}))
    assert metadata.failing_for_ms(1_000.0) == 0.0
