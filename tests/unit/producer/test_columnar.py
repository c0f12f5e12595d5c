"""The columnar send_arrow() path without a broker: the vectorised murmur2 against the scalar
one, encoded chunks bit-exact against the per-record encoder (nulls, empty, short and long
keys and values, headers, out-of-order timestamps, open batches, cuts at the room), and
RecordAccumulator.append_encoded (open batches, new batches, sticky groups, a race)."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import pytest

np = pytest.importorskip("numpy")
pa = pytest.importorskip("pyarrow")

from kafkaline.net.cluster import TopicPartition  # noqa: E402
from kafkaline.producer.accumulator import OpenBatch, RecordAccumulator  # noqa: E402
from kafkaline.producer.buffer_pool import BufferPool  # noqa: E402
from kafkaline.producer.bulk import columnar, columns  # noqa: E402
from kafkaline.producer.partitioner import StaticCluster, partition_for_key  # noqa: E402
from kafkaline.record import read_record_batches  # noqa: E402
from kafkaline.record.batch_format import BATCH_HEADER_SIZE  # noqa: E402
from kafkaline.record.record_encoder import encode_headers, encode_records  # noqa: E402

Headers = tuple[tuple[str, bytes | None], ...]


def random_bytes(rng: random.Random, longest: int, nulls: bool) -> bytes | None:
    if nulls and rng.random() < 0.1:
        return None
    return rng.randbytes(rng.choice([0, 1, 3, 4, 5, 11, 12, 13, rng.randint(0, longest)]))


def column(items: Sequence[bytes | None], large: bool = False) -> columns.BinaryColumn:
    return columns.binary_column(pa.array(items, pa.large_binary() if large else pa.binary()))


@pytest.mark.parametrize("seed", range(4))
def test_murmur2_partitions_match_the_scalar_hash(seed: int) -> None:
    rng = random.Random(seed)
    keys = [random_bytes(rng, 300, nulls=True) for _ in range(2000)]
    for count in (1, 6, 7, 1000):
        expected = [-1 if key is None else partition_for_key(key, count) for key in keys]
        assert columns.murmur2_partitions(column(keys), count).tolist() == expected
    sliced = pa.array(keys, pa.binary()).slice(17, 100)  # an array that starts mid-buffer
    expected = [-1 if k is None else partition_for_key(k, 6) for k in keys[17:117]]
    assert columns.murmur2_partitions(columns.binary_column(sliced), 6).tolist() == expected


@pytest.mark.parametrize("length", [1, 2, 3, 4, 5, 9, 12, 13])
def test_murmur2_of_keys_of_one_length_read_in_place(length: int) -> None:
    # Without prefixes wanted, keys of one length are hashed from strided views of the key
    # buffer (the last key's tail is not read past the buffer's end).
    rng = random.Random(length)
    keys = [rng.randbytes(length) for _ in range(300)]
    array = pa.array(keys, pa.binary())
    for part, items in ((array, keys), (array.slice(7, 200), keys[7:207])):
        chosen, prefixes = columns.murmur2_partitions_and_prefixes(
            columns.binary_column(part), 7, prefixes_wanted=False
        )
        assert prefixes is None
        assert chosen.tolist() == [partition_for_key(key, 7) for key in items]


def test_murmur2_partitions_of_very_long_keys_one_by_one() -> None:
    keys: list[bytes | None] = [b"x" * 5000, None, b"y" * 2000, b"x" * 5000]
    expected = [partition_for_key(b"x" * 5000, 5), -1, partition_for_key(b"y" * 2000, 5)]
    assert columns.murmur2_partitions(column(keys), 5).tolist() == [*expected, expected[0]]


Chunk = tuple[bytes, int, int, int, int, bool]


def chunks_bytes(
    source: columnar.ColumnarRecords, group: int, open_batch: OpenBatch | None, room: int
) -> list[Chunk]:
    (chunks,) = source.encode([(group, open_batch)], room)
    out: list[Chunk] = []
    for c in chunks:
        section = b"".join(c.records)
        out.append(
            (
                section,
                c.start,
                c.record_count,
                c.first_timestamp,
                c.max_timestamp,
                c.continues_open,
            )
        )
    return out


@pytest.mark.parametrize("seed", range(6))
def test_chunks_are_bit_exact_against_the_record_encoder(seed: int) -> None:
    rng = random.Random(seed)
    count = rng.choice([1, 50, 700])
    keys = [random_bytes(rng, 40 if seed % 2 else 9, nulls=seed != 1) for _ in range(count)]
    values = [random_bytes(rng, 300, nulls=True) for _ in range(count)]
    with_headers = seed >= 4
    headers: list[Headers | None] = [
        (("h", rng.randbytes(rng.randint(0, 20))), ("n", None)) if rng.random() < 0.3 else None
        for _ in range(count)
    ]
    base = 1_700_000_000_000
    timestamps = np.array(
        [base + rng.randint(-5000, 5000) if seed % 3 else base for _ in range(count)], np.int64
    )
    partitions = np.array([rng.choice([-1, 0, 1, 2]) for _ in range(count)], np.int64)
    blocks = None
    if with_headers:
        blocks = column([b"\x00" if h is None else encode_headers(h) for h in headers])
    source = columnar.ColumnarRecords(
        column(keys) if seed != 2 else None,
        column(values, large=seed == 3),
        blocks,
        timestamps,
        partitions,
    )
    if seed == 2:
        keys = [None] * count
    check_every_group(
        source,
        keys,
        values,
        timestamps,
        headers if with_headers else None,
        OpenBatch(room=900, first_offset_delta=7, base_timestamp=base - 3),
    )


@pytest.mark.parametrize(
    ("key_length", "value_length", "delta", "timestamp", "partitions"),
    [
        (10, 100, 7, None, 3),
        (10, 100, 70, 1_700_000_000_000, 3),
        (0, 5, 0, None, 3),
        (20, 0, 500, None, 2),
        (10, 100, 8150, None, 1),
    ],
)
@pytest.mark.parametrize("prefixes", [False, True])
def test_chunks_of_one_shape_are_bit_exact(
    key_length: int,
    value_length: int,
    delta: int,
    timestamp: int | None,
    partitions: int,
    prefixes: bool,
) -> None:
    # Keys and values of one length and one timestamp for all rows (the usual send_arrow()
    # call): heads are made per offset delta and taken per row. Deltas past 63 and 8191
    # take 2 and 3 bytes; an open batch's base timestamp differs from the rows'.
    rng = random.Random(key_length + value_length + delta)
    count = 9000
    keys: list[bytes | None] = [rng.randbytes(key_length) for _ in range(count)]
    values: list[bytes | None] = [rng.randbytes(value_length) for _ in range(count)]
    now = 1_700_000_000_123
    key_column = column(keys)
    source = columnar.ColumnarRecords(
        key_column,
        column(values),
        None,
        now,
        np.array([rng.randrange(partitions) for _ in range(count)], np.int64),
        # The keys' bytes as murmur2 read them, else read again from the key column.
        columns.murmur2_partitions_and_prefixes(key_column, 3)[1] if prefixes else None,
    )
    timestamps = np.full(count, now, np.int64)
    open_state = OpenBatch(
        room=20_000,
        first_offset_delta=delta,
        base_timestamp=now if timestamp is None else timestamp,
    )
    check_every_group(source, keys, values, timestamps, None, open_state, (200_000, 64_000))


def check_every_group(
    source: columnar.ColumnarRecords,
    keys: Sequence[bytes | None],
    values: Sequence[bytes | None],
    timestamps: Any,
    headers: Sequence[Headers | None] | None,
    open_state: OpenBatch,
    rooms: tuple[int, int] = (2000, 3000),
) -> None:
    """Every group of ``source``, alone, new and after ``open_state``, encoded as chunks
    bit-exact against the per-record encoder, each within its room."""
    for group, (partition, start, stop) in enumerate(source.groups):
        assert partition in (None, 0, 1, 2)
        positions = source.positions(start, stop - start)
        rows = list(range(start, stop)) if positions is None else positions.tolist()
        for open_batch, room in ((None, rooms[0]), (open_state, rooms[1]), (None, 1)):
            chunks = chunks_bytes(source, group, open_batch, room)
            assert sum(c[2] for c in chunks) == len(rows)
            assert chunks[0][1] == start
            taken = 0
            for index, (section, first, n, first_ts, max_ts, continues) in enumerate(chunks):
                picked = rows[taken : taken + n]
                assert first == start + taken
                assert continues == (open_batch is not None and index == 0)
                delta = open_batch.first_offset_delta if continues and open_batch else 0
                ts_base = (
                    open_batch.base_timestamp
                    if continues and open_batch
                    else int(timestamps[picked[0]])
                )
                expected = encode_records(
                    [keys[r] for r in picked],
                    [values[r] for r in picked],
                    [int(timestamps[r]) for r in picked],
                    [headers[r] for r in picked] if headers is not None else None,
                    base_timestamp=ts_base,
                    first_offset_delta=delta,
                )
                assert section == expected
                assert first_ts == int(timestamps[picked[0]])
                assert max_ts == max(int(timestamps[r]) for r in picked)
                limit = open_batch.room if continues and open_batch else room
                assert len(section) <= limit or n == 1  # a new batch takes one record anyway
                taken += n


@pytest.mark.parametrize("one_timestamp", [False, True])
def test_groups_encoded_together_as_each_alone(one_timestamp: bool) -> None:
    # encode() cuts and encodes all requested groups in one pass; groups that are not
    # adjacent (a retry of some groups) and open batches must come out as each group alone
    # (which the tests above check against the per-record encoder).
    rng = random.Random(1)
    count = 3000
    keys = [rng.randbytes(rng.choice([3, 10, 20])) for _ in range(count)]
    values = [rng.randbytes(rng.randint(0, 200)) for _ in range(count)]
    base = 1_700_000_000_000
    timestamps: Any = (
        base if one_timestamp else np.array([base + rng.randint(0, 50) for _ in range(count)])
    )
    partitions = np.array([rng.randrange(4) for _ in range(count)], np.int64)
    source = columnar.ColumnarRecords(column(keys), column(values), None, timestamps, partitions)
    open_batch = OpenBatch(room=5000, first_offset_delta=9, base_timestamp=base + 10)
    requests = [(0, open_batch), (2, None), (3, open_batch)]

    def flat(chunks: Sequence[Any]) -> list[tuple[object, ...]]:
        return [(b"".join(c.records), *c[1:]) for c in chunks]

    together = source.encode(requests, 20_000)
    alone = [source.encode([request], 20_000)[0] for request in requests]
    assert [flat(c) for c in together] == [flat(c) for c in alone]
    assert all(len(chunks) > 1 for chunks in together)


def test_one_partition_and_sticky_keep_input_order() -> None:
    values = column([b"a", b"b", b"c"])
    timestamps = np.array([1, 2, 3], np.int64)
    one = columnar.ColumnarRecords(None, values, None, timestamps, 4)
    assert one.groups == [(4, 0, 3)] and one.positions(0, 3) is None
    sticky = columnar.ColumnarRecords(None, values, None, timestamps, None)
    assert sticky.groups == [(None, 0, 3)]
    same = columnar.ColumnarRecords(None, values, None, timestamps, np.array([2, 2, 2]))
    assert same.groups == [(2, 0, 3)]
    mixed = columnar.ColumnarRecords(None, values, None, timestamps, np.array([1, -1, 1]))
    assert mixed.groups == [(None, 0, 1), (1, 1, 3)]
    positions = mixed.positions(1, 2)
    assert positions is not None and positions.tolist() == [0, 2]


# ------------------------------------------------------------------ append_encoded


def decoded(accumulator: RecordAccumulator, tp: TopicPartition) -> list[tuple[object, ...]]:
    queue = accumulator._existing_queue(tp)
    assert queue is not None
    out: list[tuple[object, ...]] = []
    for batch in queue.batches:
        batch.close()
        for record_batch in read_record_batches(batch.builder.build()):
            out.extend((r.offset, r.timestamp, r.key, r.value) for r in record_batch.records)
    return out


def test_append_encoded_fills_the_open_batch_then_new_ones() -> None:
    accumulator = RecordAccumulator(
        batch_size=1024, linger_ms=5, buffer_pool=BufferPool(1 << 20, 1024)
    )
    accumulator.append("t", 1, 1000, b"first", b"x" * 10)
    keys = [b"k%d" % i for i in range(60)]
    values = [b"v" * (i % 40) for i in range(60)]
    partitions = np.array([1] * 40 + [0] * 20, np.int64)
    timestamps = np.arange(2000, 2060, dtype=np.int64)
    source = columnar.ColumnarRecords(
        column(keys),
        column(values),
        None,
        timestamps,
        partitions,
    )
    runs, wake = accumulator.append_encoded("t", source, 100, 0.0, StaticCluster({"t": 2}))
    assert wake
    assert sum(count for _, _, _, count in runs) == 60
    assert runs[0][1] == 0 or runs[0][1] >= 1  # partition 0's new batch, or the open one
    queued_1 = decoded(accumulator, TopicPartition("t", 1))
    assert [r[2:] for r in queued_1] == [(b"first", b"x" * 10)] + [
        (keys[i], values[i]) for i in range(40)
    ]
    assert [r[1] for r in queued_1] == [1000, *range(2000, 2040)]
    assert [r[2:] for r in decoded(accumulator, TopicPartition("t", 0))] == [
        (keys[i], values[i]) for i in range(40, 60)
    ]
    sizes = accumulator.queue_sizes("t")
    assert sizes[1] > 1  # 40 records did not fit the open 1 KiB batch
    pool = accumulator.buffer_pool
    assert pool.total_memory - pool.available_memory == 1024 * (sizes[0] + sizes[1])


def test_append_encoded_sticky_group_and_a_changed_open_batch() -> None:
    accumulator = RecordAccumulator(
        batch_size=512, linger_ms=5, buffer_pool=BufferPool(1 << 20, 512)
    )
    cluster = StaticCluster({"t": 3})
    values = [b"%03d" % i + b"." * 50 for i in range(40)]
    source = columnar.ColumnarRecords(
        None,
        column(values),
        None,
        np.full(40, 5, np.int64),
        None,
    )

    class RacingSource:
        """Another thread appends to the open batch between reading and appending."""

        groups = source.groups
        calls = 0

        def encode(self, requests, fresh_room):  # type: ignore[no-untyped-def]
            RacingSource.calls += 1
            if RacingSource.calls == 1:
                for partition in range(3):
                    accumulator.append("t", partition, 5, None, b"racer")
            return source.encode(requests, fresh_room)

    accumulator.append("t", None, 5, None, b"opener", cluster=cluster)
    runs, _ = accumulator.append_encoded("t", RacingSource(), 100, 0.0, cluster)
    assert RacingSource.calls == 2  # encoded again, for new batches only
    assert all(first_delta == 0 for _, first_delta, _, _ in runs)
    everything = [
        value
        for partition in range(3)
        if accumulator._existing_queue(TopicPartition("t", partition)) is not None
        for *_, value in decoded(accumulator, TopicPartition("t", partition))
    ]
    assert (
        sorted(
            bytes(v) for v in everything if isinstance(v, bytes) and v not in (b"opener", b"racer")
        )
        == values
    )
    assert everything.count(b"racer") == 3


def test_builder_append_encoded_and_open_state() -> None:
    from kafkaline.record import RecordBatchBuilder

    builder = RecordBatchBuilder(batch_size_limit=4096)
    assert builder.open_state() is None  # empty
    builder.append(100, b"k", b"v")
    room, delta, base = builder.open_state() or (0, 0, 0)
    assert (delta, base) == (1, 100)
    assert room == 4096 - BATCH_HEADER_SIZE - len(encode_records([b"k"], [b"v"], 100))
    records = encode_records([None, b"k2"], [b"a", b"b"], [90, 130], base_timestamp=100,
                             first_offset_delta=1)  # fmt: skip
    builder.append_encoded([records[:3], records[3:]], 2, 90, 130)
    builder.append(140, None, b"after")
    (batch,) = read_record_batches(builder.build())
    assert [(r.offset, r.timestamp, r.key, r.value) for r in batch.records] == [
        (0, 100, b"k", b"v"),
        (1, 90, None, b"a"),
        (2, 130, b"k2", b"b"),
        (3, 140, None, b"after"),
    ]
    assert batch.max_timestamp == 140
    builder2 = RecordBatchBuilder()
    builder2.close_for_appends()
    with pytest.raises(Exception, match="closed"):
        builder2.append_encoded([b"x"], 1, 0, 0)


def test_append_encoded_wakes_the_sender_only_once_memory_runs_short() -> None:
    accumulator = RecordAccumulator(
        batch_size=1024, linger_ms=5, buffer_pool=BufferPool(64 * 1024, 1024)
    )
    values = [b"v" * 100] * 500  # ~55 KiB: ~54 batches of 1 KiB in 64 KiB of memory
    source = columnar.ColumnarRecords(None, column(values), None, np.full(500, 5, np.int64), 0)
    available: list[int] = []

    def wakeup() -> None:
        available.append(accumulator.buffer_pool.available_memory)

    runs, wake = accumulator.append_encoded("t", source, 100, 0.0, None, wakeup)
    assert wake and sum(count for *_, count in runs) == 500
    assert available  # woken during the call, and only with less than half the memory left
    assert all(free < 32 * 1024 for free in available)
    assert len(available) < len(runs)


def test_append_encoded_holds_the_open_batch_while_encoding() -> None:
    from kafkaline.net.cluster import BrokerNode, ClusterMetadata, PartitionMetadata

    cluster = ClusterMetadata([BrokerNode(1, "b1", 9092)], [PartitionMetadata("t", 0, leader=1)])
    accumulator = RecordAccumulator(
        batch_size=1024, linger_ms=5, buffer_pool=BufferPool(1 << 20, 1024)
    )
    accumulator.append("t", 0, 1000, None, b"first")  # the open batch, lingering since 0 ms
    values = [b"v%d" % i for i in range(5)]
    source = columnar.ColumnarRecords(None, column(values), None, np.full(5, 7, np.int64), 0)
    seen: list[object] = []

    class SenderDuringEncoding:
        """The Sender's pass (linger long past) runs while the records are encoded."""

        groups = source.groups

        def encode(self, requests, fresh_room):  # type: ignore[no-untyped-def]
            seen.append(accumulator.ready(cluster, 100.0).ready_nodes)
            seen.append(accumulator.drain(cluster, {1}, 1 << 20, 100.0))
            return source.encode(requests, fresh_room)

    runs, wake = accumulator.append_encoded("t", SenderDuringEncoding(), 100, 0.0, cluster)
    assert seen == [set(), {1: []}]  # held: not ready, not drained
    assert wake  # the Sender skipped it: the caller must wake it
    assert [(first_delta, count) for _, first_delta, _, count in runs] == [(1, 5)]
    # Released after the call: sendable again, holding all six records.
    assert accumulator.ready(cluster, 100.0).ready_nodes == {1}
    (batch,) = accumulator.drain(cluster, {1}, 1 << 20, 100.0)[1]
    (record_batch,) = read_record_batches(batch.builder.build())
    assert [r.value for r in record_batch.records] == [b"first", *values]


def test_append_encoded_releases_the_open_batch_when_encoding_fails() -> None:
    accumulator = RecordAccumulator(
        batch_size=1024, linger_ms=5, buffer_pool=BufferPool(1 << 20, 1024)
    )
    accumulator.append("t", 0, 1000, None, b"first")
    source = columnar.ColumnarRecords(None, column([b"v"]), None, np.full(1, 7, np.int64), 0)

    class Failing:
        groups = source.groups

        def encode(self, requests, fresh_room):  # type: ignore[no-untyped-def]
            raise RuntimeError("encoding failed")

    woken: list[bool] = []
    with pytest.raises(RuntimeError, match="encoding failed"):
        accumulator.append_encoded("t", Failing(), 100, 0.0, None, lambda: woken.append(True))
    queue = accumulator._existing_queue(TopicPartition("t", 0))
    assert queue is not None and queue.batches[0].held_by_appenders == 0
    assert woken == [True]  # the Sender skipped the held batch: it must look again


@pytest.mark.parametrize("key_size", [1, 10, 11, 12])
@pytest.mark.parametrize("uniform_values", [True, False])
def test_keys_of_one_length_carry_the_value_length_bit_exact(
    key_size: int, uniform_values: bool
) -> None:
    # Keys of one length up to 12 bytes take the value's length into their inline piece
    # when both fit (1- and 2-byte value lengths; nulls; values inline and referenced).
    rng = random.Random(key_size)
    count = 300
    keys: list[bytes | None] = [rng.randbytes(key_size) for _ in range(count)]
    values: list[bytes | None] = (
        [rng.randbytes(100)] * count
        if uniform_values
        else [
            None if i % 17 == 0 else rng.randbytes(rng.choice([0, 5, 12, 13, 63, 64, 200]))
            for i in range(count)
        ]
    )
    timestamps = np.arange(5000, 5000 + count, dtype=np.int64)
    source = columnar.ColumnarRecords(column(keys), column(values), None, timestamps, 0)
    open_state = OpenBatch(room=2500, first_offset_delta=3, base_timestamp=4990)
    for open_batch in (None, open_state):
        taken = 0
        for section, first, n, _, _, continues in chunks_bytes(source, 0, open_batch, 9000):
            assert first == taken
            expected = encode_records(
                keys[taken : taken + n],
                values[taken : taken + n],
                [int(t) for t in timestamps[taken : taken + n]],
                base_timestamp=open_state.base_timestamp if continues else int(timestamps[taken]),
                first_offset_delta=open_state.first_offset_delta if continues else 0,
            )
            assert section == expected
            taken += n
        assert taken == count


def test_groups_encoded_together_in_any_order_cut_as_each_alone() -> None:
    # Sizes and cuts are computed for all requested groups at once; a subset, or groups out
    # of order, must cut exactly as each group encoded alone.
    rng = random.Random(7)
    count = 900
    keys = [random_bytes(rng, 20, nulls=True) for _ in range(count)]
    values = [random_bytes(rng, 200, nulls=True) for _ in range(count)]
    timestamps = np.array([10_000 + rng.randint(-300, 300) for _ in range(count)], np.int64)
    partitions = np.array([rng.choice([-1, 0, 1, 2, 3]) for _ in range(count)], np.int64)
    source = columnar.ColumnarRecords(column(keys), column(values), None, timestamps, partitions)
    open_state = OpenBatch(room=700, first_offset_delta=4, base_timestamp=9_000)
    groups = range(len(source.groups))
    alone = {
        (group, open_batch is None): chunks_bytes(source, group, open_batch, 3000)
        for group in groups
        for open_batch in (None, open_state)
    }
    for order in (list(groups), list(groups)[::-1], [1, 3], [2]):
        for with_open in (False, True):
            requests = [(g, open_state if with_open and g % 2 else None) for g in order]
            together = source.encode(requests, 3000)
            for (group, open_batch), chunks in zip(requests, together, strict=True):
                got = [
                    (b"".join(c.records), c.start, c.record_count, c.first_timestamp,
                     c.max_timestamp, c.continues_open)
                    for c in chunks
                ]  # fmt: skip
                assert got == alone[(group, open_batch is None)]


def test_binary_column_knows_its_shortest_and_longest_rows() -> None:
    same = column([b"abc", b"def", b"ghi"])
    assert (same.shortest, same.longest, same.one_length) == (3, 3, 3)
    mixed = column([b"ab", None, b"defg"])
    assert (mixed.shortest, mixed.longest) == (-1, 4)
    assert mixed.one_length is mixed.lengths and mixed.lengths.tolist() == [2, -1, 4]
    empty = column([])
    assert (empty.shortest, empty.longest, empty.one_length) == (0, 0, 0)


@pytest.mark.parametrize("length", range(10))
def test_murmur2_partitions_of_keys_of_one_length(length: int) -> None:
    # Keys of one length take the path without per-row masks: every tail size, no nulls,
    # and an array that starts mid-buffer (its first key's bytes are not at offset 0).
    rng = random.Random(length)
    keys = [rng.randbytes(length) for _ in range(300)]
    for count in (1, 6, 1000):
        expected = [partition_for_key(key, count) for key in keys]
        assert columns.murmur2_partitions(column(keys), count).tolist() == expected
    sliced = pa.array(keys, pa.binary()).slice(3, 200)
    expected = [partition_for_key(key, 6) for key in keys[3:203]]
    assert columns.murmur2_partitions(columns.binary_column(sliced), 6).tolist() == expected


def test_arrow_slices_bound_rows_and_bytes() -> None:
    from kafkaline.producer.bulk.arrow import arrow_slices

    values = [bytes([i % 256]) * 100 for i in range(1000)]
    batch = pa.record_batch({"value": pa.array(values, pa.binary())})

    def rows(slices: list[Any]) -> list[bytes]:
        return [v for s in slices for v in s.values.to_pylist()]

    whole = arrow_slices(batch, None, "value", None, None, None)
    assert len(whole) == 1 and rows(whole) == values
    by_rows = arrow_slices(batch, None, "value", None, None, None, max_rows=300)
    assert [len(s.values) for s in by_rows] == [300, 300, 300, 100] and rows(by_rows) == values
    by_bytes = arrow_slices(batch, None, "value", None, None, None, max_bytes=26_000)
    assert 4 <= len(by_bytes) <= 6 and rows(by_bytes) == values
    # A small slice of a large batch: its own bytes count, not the whole buffers'.
    part = batch.slice(100, 200)
    sliced = arrow_slices(part, None, "value", None, None, None, max_bytes=26_000)
    assert len(sliced) == 1 and rows(sliced) == values[100:300]


@pytest.mark.parametrize(
    ("key_length", "value_length", "since", "first_delta"),
    [
        (9, 100, 3, 40),  # the small workload: one-byte offset deltas, then two
        (None, 100, 0, 60),  # no key column
        (-1, 8, 70, 62),  # every key null; the shortest value; a two-byte timestamp delta
        (0, 30, 2, 8180),  # empty keys; offset deltas crossing 8191 (three bytes)
        (64, 200, 9000, 5),  # a two-byte key length and timestamp delta: 16-byte heads
    ],
)
def test_one_shape_all_groups_together_bit_exact(
    key_length: int | None, value_length: int, since: int, first_delta: int
) -> None:
    # Records of one shape take the one-shape encoder: all groups at once (each value written
    # from its input row), open batches first, then new batches cut by the table of sizes.
    rng = random.Random(value_length)
    count = 4000
    now = 1_700_000_000_321
    keys: list[bytes | None] = [
        None if key_length is None or key_length < 0 else rng.randbytes(key_length)
        for _ in range(count)
    ]
    values: list[bytes | None] = [rng.randbytes(value_length) for _ in range(count)]
    partitions = np.array([rng.choice([-1, 0, 1, 2]) for _ in range(count)], np.int64)
    source = columnar.ColumnarRecords(
        None if key_length is None else column(keys), column(values), None, now, partitions
    )
    assert source.one_shape
    taken: list[str | None] = []
    open_state = OpenBatch(room=3000, first_offset_delta=first_delta, base_timestamp=now - since)
    requests = [(g, open_state if g % 2 == 0 else None) for g in range(len(source.groups))]
    rows_in_order: list[int] = []
    for _, start, stop in source.groups:
        positions = source.positions(start, stop - start)
        rows_in_order += list(range(start, stop)) if positions is None else positions.tolist()
    fresh_room = 10_000
    for group_requests in (requests, requests[1:3]):  # every row, and a subset of groups
        encoded = source.encode(group_requests, fresh_room)
        taken.append(source.last_encoding)
        for (group, open_batch), chunks in zip(group_requests, encoded, strict=True):
            _, start, stop = source.groups[group]
            assert chunks[0].start == start and sum(c.record_count for c in chunks) == stop - start
            for index, chunk in enumerate(chunks):
                continues = open_batch is not None and index == 0
                assert chunk.continues_open == continues
                picked = rows_in_order[chunk.start : chunk.start + chunk.record_count]
                expected = encode_records(
                    [keys[r] for r in picked],
                    [values[r] for r in picked],
                    [now] * len(picked),
                    base_timestamp=now - since if continues else now,
                    first_offset_delta=first_delta if continues else 0,
                )
                section = b"".join(chunk.records)
                assert section == expected and chunk.size == len(expected)
                assert (chunk.first_timestamp, chunk.max_timestamp) == (now, now)
                limit = open_state.room if continues else fresh_room
                assert len(section) <= limit
                if index + 1 < len(chunks):  # cut exactly: the next record would not fit
                    assert len(section) + len(expected) // len(picked) > limit
    assert taken == ["one shape", "one shape"]


@pytest.mark.parametrize(
    ("values", "timestamps"),
    [
        ([b"v" * 100, None, b"w" * 100], 5),  # a null value
        ([b"", b"", b""], 5),  # empty values: shorter than the value length's 8-byte write
        ([b"v" * 100, b"w" * 99, b"x" * 100], 5),  # values of two lengths
        ([b"v" * 100] * 3, np.array([5, 6, 5], np.int64)),  # timestamps differ
    ],
)
def test_records_of_other_shapes_take_the_general_encoder(
    values: list[bytes | None], timestamps: Any
) -> None:
    keys: list[bytes | None] = [b"k1", b"k2", b"k3"]
    source = columnar.ColumnarRecords(column(keys), column(values), None, timestamps, 0)
    assert not source.one_shape
    (chunks,) = source.encode([(0, None)], 10_000)
    assert source.last_encoding == "general"
    expected = encode_records(
        keys,
        values,
        [int(t) for t in np.broadcast_to(timestamps, (3,))],
        base_timestamp=int(np.broadcast_to(timestamps, (3,))[0]),
    )
    assert b"".join(b"".join(c.records) for c in chunks) == expected


def test_one_shape_in_batches_of_very_many_records_takes_the_general_encoder() -> None:
    # A batch room for more records than a shape table holds (its memory is bounded).
    values: list[bytes | None] = [b"%08d" % i for i in range(50)]
    source = columnar.ColumnarRecords(None, column(values), None, 7, 0)
    assert source.one_shape
    (chunks,) = source.encode([(0, None)], 8_000_000)
    assert source.last_encoding == "general"
    assert b"".join(b"".join(c.records) for c in chunks) == encode_records(
        [None] * 50, values, [7] * 50, base_timestamp=7
    )


@pytest.mark.parametrize("keys_kind", ["keyless", "9-byte", "varied"])
@pytest.mark.parametrize("one_timestamp", [False, True])
@pytest.mark.parametrize("sizes", ["10 KB", "1 KiB-1 MiB", "mixed small"])
def test_big_values_are_bit_exact(keys_kind: str, one_timestamp: bool, sizes: str) -> None:
    # Values of 1 KiB to 1 MiB (lengths past the small varint tables), alone or mixed with
    # small ones, from a sliced array.
    rng = random.Random(len(keys_kind) + len(sizes) + one_timestamp)
    count = 60
    if sizes == "10 KB":
        lengths = [10_000] * count
    elif sizes == "1 KiB-1 MiB":
        lengths = [rng.choice([1024, 8191, 8192, 10_000, 70_000, 1 << 20]) for _ in range(count)]
    else:
        lengths = [rng.choice([10, 10_000]) for _ in range(count)]
    pool = [rng.randbytes(1 << 20)]
    values: list[bytes | None] = [pool[0][i : i + n] for i, n in enumerate(lengths)]
    keys: list[bytes | None]
    if keys_kind == "keyless":
        keys = [None] * count
    elif keys_kind == "9-byte":
        keys = [b"key-%05d" % i for i in range(count)]
    else:
        keys = [rng.randbytes(rng.choice([0, 5, 13, 40])) for _ in range(count)]
    base = 1_700_000_000_000
    timestamps: Any = (
        np.full(count, base, np.int64)
        if one_timestamp
        else np.array([base + rng.randint(0, 50) for _ in range(count)], np.int64)
    )
    # A sliced array: its rows start mid-buffer.
    value_array = pa.array([b"x" * 3000, *values], pa.binary()).slice(1)
    source = columnar.ColumnarRecords(
        None if keys_kind == "keyless" else column(keys),
        columns.binary_column(value_array),
        None,
        base if one_timestamp else timestamps,
        np.array([rng.randrange(3) for _ in range(count)], np.int64),
    )
    # (The open batch's room takes the first record: check_every_group expects it to.)
    open_state = OpenBatch(room=1_500_000, first_offset_delta=70, base_timestamp=base - 3)
    check_every_group(source, keys, values, timestamps, None, open_state, (200_000, 64_000))
    (chunks,) = source.encode([(0, None)], 64_000)
    for chunk in chunks:
        assert chunk.size == len(b"".join(chunk.records))
