"""send() right after what changes its topic's state: the compiled core keeps the last topic's
partition count, sticky partitioner and queues between sends (see ``_core_sender_call.c``),
so each change below must be seen by the very next send(). The pure-Python build keeps
nothing; the same tests hold there."""

from __future__ import annotations

import random
import threading
from collections.abc import Iterator

import pytest

from kafkaline import Producer
from kafkaline.errors import ProducerClosedError, ProducerForkedError
from kafkaline.net.cluster import BrokerNode, ClusterMetadata, PartitionMetadata
from kafkaline.producer.murmur2 import murmur2, to_positive
from kafkaline.record import core_build

TS = 1_700_000_000_000


def _cluster(counts: dict[str, int]) -> ClusterMetadata:
    return ClusterMetadata(
        [BrokerNode(1, "b1", 9092)],
        [PartitionMetadata(t, p, leader=1) for t, n in counts.items() for p in range(n)],
    )


@pytest.fixture
def producer() -> Iterator[Producer]:
    """An open producer that knows topics "t" (2 partitions) and "u" (3), without a broker
    or a thread: test-only hooks into its state, so that send() is all that runs."""
    producer = Producer(bootstrap_servers="127.0.0.1:1")
    producer._accumulator._rng = random.Random(3)
    producer._topics.cluster = _cluster({"t": 2, "u": 3})
    producer._topics.counts.update({"t": 2, "u": 3})
    producer._set_gate(None)
    if core_build() == "compiled":
        assert producer._core_send is not None  # the cache under test is in use
    try:
        yield producer
    finally:
        producer.close(0)


def _key_whose_partition_changes(before: int, after: int) -> bytes:
    """A key that murmur2 puts in different partitions for the two partition counts."""
    for i in range(1000):
        key = b"key-%d" % i
        h = to_positive(murmur2(key))
        if h % before != h % after:
            return key
    raise AssertionError("no such key")  # pragma: no cover


def test_a_metadata_update_changing_the_count_is_seen_by_the_next_send(
    producer: Producer,
) -> None:
    key = _key_whose_partition_changes(2, 5)
    h = to_positive(murmur2(key))
    assert producer.send("t", b"v", key=key, timestamp_ms=TS).partition == h % 2
    producer._on_metadata_update(_cluster({"t": 5, "u": 3}))
    assert producer.send("t", b"v", key=key, timestamp_ms=TS).partition == h % 5
    assert producer.send("t", b"v", partition=4, timestamp_ms=TS).partition == 4
    producer._on_metadata_update(_cluster({"t": 2, "u": 3}))
    assert producer.send("t", b"v", key=key, timestamp_ms=TS).partition == h % 2
    with pytest.raises(ValueError, match="partition"):
        producer.send("t", b"v", partition=4, timestamp_ms=TS)


def test_each_topic_keeps_its_own_count_when_sends_alternate(producer: Producer) -> None:
    key = _key_whose_partition_changes(2, 3)
    h = to_positive(murmur2(key))
    same_name = "".join(["u"])  # equal to "u", another object
    for topic, count in (("t", 2), ("u", 3), ("t", 2), (same_name, 3), ("u", 3)):
        assert producer.send(topic, b"v", key=key, timestamp_ms=TS).partition == h % count


def test_a_queue_made_by_another_thread_is_used_by_the_next_send(producer: Producer) -> None:
    first = producer.send("t", b"a", partition=0, timestamp_ms=TS)
    assert first.partition == 0
    core_send = producer._core_send
    if core_send is not None:
        # Without its fallbacks, so that what the core does itself shows: it looks for
        # partition 1's queue and finds none (nothing done).
        core_send.fallback = core_send.new_batch = None
        assert core_send("t", b"z", None, None, 1, TS) is None
    made: list[object] = []

    def append_elsewhere() -> None:
        future = producer._accumulator.append("t", 1, TS, None, b"b")[0]
        made.append(future.batch_result)

    thread = threading.Thread(target=append_elsewhere)
    thread.start()
    thread.join()
    # Partition 1's queue and batch were made on the other thread: this record joins it.
    if core_send is not None:
        second = core_send("t", b"c", None, None, 1, TS)
    else:
        second = producer.send("t", b"c", partition=1, timestamp_ms=TS)
    assert second is not None
    assert second.batch_result is made[0]
    assert second.offset_delta == 1


def test_a_new_topic_after_a_cached_one_is_sent_to_its_own_queues(producer: Producer) -> None:
    assert producer.send("t", b"a", partition=1, timestamp_ms=TS).partition == 1
    producer._topics.counts["w"] = 4  # the first wait for a new topic adds it in place
    future = producer.send("w", b"b", partition=3, timestamp_ms=TS)
    assert (future.topic, future.partition) == ("w", 3)
    again = producer.send("t", b"c", partition=1, timestamp_ms=TS)
    assert (again.topic, again.partition) == ("t", 1)


def test_keyless_sends_follow_the_sticky_partition_after_a_switch(producer: Producer) -> None:
    # The sticky partitioner is kept; its current partition is read on every send.
    partitioner = producer._accumulator._sticky_partitioner("t")
    futures = [producer.send("t", b"x" * 100, timestamp_ms=TS) for _ in range(3)]
    assert len({f.partition for f in futures}) == 1
    current = partitioner.current
    assert current is not None and current.partition == futures[0].partition
    with producer._accumulator._queue("t", current.partition).lock:
        partitioner._current = None  # a test-only hook: as after a switch, nothing current
    after = producer.send("t", b"x" * 100, timestamp_ms=TS)
    assert partitioner.current is not None
    assert after.partition == partitioner.current.partition


def test_send_after_fork_raises_even_with_a_warm_cache(producer: Producer) -> None:
    producer.send("t", b"a", key=b"k", timestamp_ms=TS)
    producer._forked()  # what the at-fork handler calls in the child
    with pytest.raises(ProducerForkedError):
        producer.send("t", b"b", key=b"k", timestamp_ms=TS)


def test_send_after_close_raises_even_with_a_warm_cache(producer: Producer) -> None:
    producer.send("t", b"a", key=b"k", timestamp_ms=TS)
    producer.close(0)
    with pytest.raises(ProducerClosedError):
        producer.send("t", b"b", key=b"k", timestamp_ms=TS)


def test_a_topic_gone_from_the_metadata_is_waited_for_again(producer: Producer) -> None:
    producer.send("u", b"a", key=b"k", timestamp_ms=TS)
    producer._on_metadata_update(_cluster({"t": 2}))
    assert "u" not in producer._topics.counts
    if producer._core_send is not None:
        # Declined: the general path then waits for the topic's metadata.
        producer._core_send.fallback = None
        assert producer._core_send("u", b"b", b"k", None, None, TS) is None
