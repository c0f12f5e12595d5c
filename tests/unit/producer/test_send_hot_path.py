"""The pieces of send()'s hot path, against the general path they stand in for: the compiled
core's open-batch sender and BuiltInPartitioner.switch_due.
Each either does exactly what append() would do, or does nothing and says so (None)."""

from __future__ import annotations

import random
from typing import Any

import pytest

from kafkaline.net.cluster import BrokerNode, ClusterMetadata, PartitionMetadata
from kafkaline.producer import batch as batch_module
from kafkaline.producer.accumulator import RecordAccumulator
from kafkaline.producer.buffer_pool import BufferPool
from kafkaline.producer.builtin_partitioner import BuiltInPartitioner, StickyPartition
from kafkaline.producer.murmur2 import murmur2, to_positive
from kafkaline.producer.partitioner import StaticCluster
from kafkaline.record import core_build
from kafkaline.record.builder import RecordBatchBuilder as PythonBuilder

TS = 1_700_000_000_000
CLUSTER = ClusterMetadata(
    [BrokerNode(1, "b1", 9092)], [PartitionMetadata("t", p, leader=1) for p in range(4)]
)


def new_accumulator(batch_size: int = 1024, seed: int = 7) -> RecordAccumulator:
    return RecordAccumulator(
        batch_size=batch_size,
        linger_ms=5.0,
        buffer_pool=BufferPool(1 << 20, batch_size),
        rng=random.Random(seed),
    )


def test_switch_due_mirrors_update_partition_info_for_a_batch_not_full() -> None:
    partitioner = BuiltInPartitioner("t", 1000, adaptive=False, rng=random.Random(1))
    cluster = StaticCluster({"t": 4})
    sticky = partitioner.peek_current(cluster)
    for appended in (100, 500, 1000, 1399, 1400, 2000):
        copy = StickyPartition(sticky.partition)
        copy.produced_bytes = 600
        partitioner._current = copy  # a private hook of this test only: the state to compare
        due = partitioner.switch_due(copy, appended)
        partitioner.update_partition_info(copy, appended, cluster, enable_switch=False)
        assert due == (partitioner.current is not copy), appended
    stale = StickyPartition(0)
    assert partitioner.switch_due(stale, 1)  # no longer current


def test_a_batch_refuses_a_record_once_then_appends_go_to_the_next(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Large records through send()'s general path: the batch that refuses one closes for
    # appends, so the refusal is measured once per batch (it was about three times, each by
    # the builder's slow path: 9,976 refusals for 3,338 batches of 10 KB records).
    # Counted in the pure-Python builder, so the batches use that builder here.
    measured = 0
    slow = PythonBuilder._try_append

    def counting(self: PythonBuilder, *args: Any) -> int | None:
        nonlocal measured
        was_open = not self.is_closed
        delta = slow(self, *args)
        measured += delta is None and was_open
        return delta

    monkeypatch.setattr(PythonBuilder, "_try_append", counting)
    monkeypatch.setattr(batch_module, "RecordBatchBuilder", PythonBuilder)
    accumulator = new_accumulator(batch_size=1024)
    futures = [accumulator.append("t", 0, TS, b"k", b"v" * 300)[0] for _ in range(30)]
    results = list(dict.fromkeys(f.batch_result for f in futures))
    assert len(results) > 5
    assert measured == len(results) - 1
    assert [f.offset_delta for f in futures[:6]] == [0, 1, 2, 0, 1, 2]


def test_open_batch_sender_does_what_append_does() -> None:
    """The compiled core's one-call send() against the accumulator's append for a keyed
    record: the same futures (batch, offset delta, sizes, timestamp), the same None where
    nothing is done, the same batch bytes."""
    senders = RecordAccumulator().open_batch_sender
    if core_build() != "compiled":
        assert senders(1000) is None
        return
    key = b"key-3"
    partition = to_positive(murmur2(key)) % 4
    batches = []
    filled = 0  # records the sender put into the open batch before saying None
    for use_sender in (True, False):
        accumulator = new_accumulator(batch_size=300)
        sender = accumulator.open_batch_sender(1000)
        assert sender is not None
        sender.partition_counts = {"t": 4}
        sender.open = True

        def hot(
            value: bytes, ts: int, s: Any = sender, acc: Any = accumulator, c: bool = use_sender
        ) -> Any:
            if c:
                return s("t", value, key, None, None, ts)
            if not acc.queue_sizes("t").get(partition):
                return None  # append() would make a batch: the sender does nothing
            future, _, created = acc.append("t", partition, ts, key, value)
            assert not created  # the sender took it into the open batch: append() too
            return future

        assert hot(b"v", TS) is None  # no queue yet
        first, _, _ = accumulator.append("t", partition, TS, key, b"v0")
        futures = [hot(b"v%d" % i, TS + i) for i in range(1, 4)]
        assert [(f.offset_delta, f.timestamp) for f in futures] == [
            (1, TS + 1),
            (2, TS + 2),
            (3, TS + 3),
        ]
        assert all(f.batch_result is first.batch_result for f in futures)
        assert all(type(f) is type(first) for f in futures)
        if use_sender:
            while hot(b"x" * 40, TS) is not None:
                filled += 1
            assert filled > 0
        else:  # append() takes the same records into the same open batch
            for _ in range(filled):
                assert hot(b"x" * 40, TS) is not None
        (batch,) = accumulator.drain(CLUSTER, {1}, 1 << 20, 0.0).get(1, [])
        assert hot(b"y", TS) is None  # the batch it filled is drained: no open batch
        batch.builder.set_producer_state(-1, -1, -1)
        batches.append(bytes(batch.builder.build()))
    assert batches[0] == batches[1]
    closed = RecordAccumulator().open_batch_sender(1000)
    assert closed is not None
    assert closed("t", b"v", key, None, None, TS) is None  # not open
