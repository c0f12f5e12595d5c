"""send_batch()'s path over Python lists without a broker: the encoder of records of one
shape (``UniformShape``) bit-exact against the per-record encoder, ListRecords'
chunks bit-exact against it (one shape or not, nulls, headers, open batches, cuts at the
room, kept pieces of large records), and ListRecords through
RecordAccumulator.append_encoded read back record by record."""

from __future__ import annotations

import itertools
import random
from collections.abc import Sequence

import pytest

from kafkaline.net.cluster import TopicPartition
from kafkaline.producer.accumulator import OpenBatch, RecordAccumulator
from kafkaline.producer.buffer_pool import BufferPool
from kafkaline.producer.list_records import KeyPartitions, ListRecords
from kafkaline.producer.partitioner import StaticCluster, partition_for_key
from kafkaline.record import read_record_batches
from kafkaline.record.record_encoder import UniformShape, encode_one_key_size, encode_records

Headers = tuple[tuple[str, bytes | None], ...]
BASE = 1_700_000_000_000


@pytest.mark.parametrize("seed", range(8))
def test_uniform_shape_is_bit_exact_against_the_record_encoder(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(40):
        count = rng.choice([1, 2, 63, 64, 65, 300, 1000])
        key_size = rng.choice([0, 1, 10, 63, 64, 200])
        value_size = rng.choice([0, 1, 100, 127, 128, 2000])
        keyless = rng.random() < 0.3
        keys = None if keyless else [rng.randbytes(key_size) for _ in range(count)]
        values = [rng.randbytes(value_size) for _ in range(count)]
        shape = UniformShape.of(key_size, value_size, keyless)
        assert shape is not None
        # Batches of random sizes, the first continuing an open batch (offset, delta).
        batches: list[tuple[int, int, int]] = []
        taken = 0
        while taken < count:
            size = min(count - taken, rng.choice([1, 5, 63, 64, 65, 400]))
            first = rng.choice([0, 1, 62, 63, 64, 65, 500]) if not batches else 0
            delta = rng.choice([0, 0, 1, 63, 64, 5000]) if not batches else 0
            batches.append((size, first, delta))
            taken += size
        sections = shape.encode_batches(keys, values, batches)
        assert sections is not None
        taken = 0
        for (size, first, delta), section in zip(batches, sections, strict=True):
            expected = encode_records(
                [None] * size if keys is None else keys[taken : taken + size],
                values[taken : taken + size],
                BASE + delta,
                base_timestamp=BASE,
                first_offset_delta=first,
            )
            assert bytes(section) == expected
            # What fits is exactly what the sizes say: room for these, not for one more.
            assert shape.fitting(len(expected), first, delta) >= size  # type: ignore[operator]
            fitted = shape.fitting(len(expected) - 1, first, delta)
            assert fitted is not None and fitted < size
            taken += size


def test_uniform_shape_declines_what_it_does_not_encode() -> None:
    assert UniformShape.of(0, 1 << 31, keyless=True) is None  # past an int32
    assert UniformShape.of(-1, 10, keyless=False) is None
    shape = UniformShape.of(10, 10, keyless=False)
    assert shape is not None
    assert shape.fitting(1000, 0, -1) is None  # negative timestamp delta
    assert shape.fitting(1000, 0, 1 << 20) is None  # a delta past the table
    assert shape.fitting(1 << 30, 8000, 0) == 8192 - 8000  # offsets stop at the table's end
    keys, values = [b"k" * 10] * 3, [b"v" * 10] * 3
    assert shape.encode_batches(keys, values, [(3, 8190, 0)]) is None  # offsets past 8 Ki
    assert shape.encode_batches(keys, values, [(3, 0, -5)]) is None
    with pytest.raises(ValueError, match="batches of 2 records for 3"):
        shape.encode_batches(keys, values, [(2, 0, 0)])


def random_field(rng: random.Random, longest: int, nulls: bool) -> bytes | None:
    if nulls and rng.random() < 0.1:
        return None
    return rng.randbytes(rng.choice([0, 1, 10, rng.randint(0, longest)]))


def expected_chunks(
    source: ListRecords,
    keys: list[bytes | None],
    values: list[bytes | None],
    headers: list[Headers | None] | None,
    open_batch: OpenBatch | None,
    room: int,
) -> None:
    """Every group's chunks decode to the group's records, in order, each within its room."""
    for group, (_, start, stop) in enumerate(source.groups):
        positions = source.positions(start, stop - start)
        rows = list(range(start, stop)) if positions is None else positions
        (chunks,) = source.encode([(group, open_batch)], room)
        assert sum(chunk.record_count for chunk in chunks) == len(rows)
        taken = 0
        for index, chunk in enumerate(chunks):
            picked = rows[taken : taken + chunk.record_count]
            continues = open_batch is not None and index == 0 and chunk.continues_open
            assert chunk.continues_open == continues
            assert chunk.start == start + taken
            section = b"".join(chunk.records)
            assert len(section) == chunk.size
            expected = encode_records(
                [keys[r] for r in picked],
                [values[r] for r in picked],
                BASE,
                None if headers is None else [headers[r] for r in picked],
                base_timestamp=open_batch.base_timestamp if continues and open_batch else BASE,
                first_offset_delta=open_batch.first_offset_delta if continues and open_batch else 0,
            )
            assert section == expected
            assert chunk.first_timestamp == chunk.max_timestamp == BASE
            limit = open_batch.room if continues and open_batch else room
            assert chunk.size <= limit or (chunk.record_count == 1 and not continues)
            taken += chunk.record_count


@pytest.mark.parametrize("shape", ["one shape", "keyless one shape", "mixed", "nulls", "headers"])
@pytest.mark.parametrize("seed", range(3))
def test_chunks_are_bit_exact_and_fit_their_room(shape: str, seed: int) -> None:
    rng = random.Random(seed)
    count = rng.choice([1, 40, 900])
    keys: list[bytes | None]
    values: list[bytes | None]
    if shape in ("one shape", "keyless one shape"):
        keys = [rng.randbytes(9) for _ in range(count)]
        values = [rng.randbytes(100) for _ in range(count)]
    else:
        keys = [random_field(rng, 30, shape == "nulls") for _ in range(count)]
        values = [random_field(rng, 300, shape == "nulls") for _ in range(count)]
    headers: list[Headers | None] | None = None
    if shape == "headers":
        headers = [
            (("h", rng.randbytes(rng.randint(0, 9))), ("n", None)) if rng.random() < 0.4 else None
            for _ in range(count)
        ]
    keyless = shape == "keyless one shape"
    if keyless:
        keys = [None] * count
    chosen = [rng.choice([-1, 0, 1, 2]) for _ in range(count)]
    one_shape = shape in ("one shape", "keyless one shape")
    source = ListRecords(
        values,
        None if keyless else keys,
        headers,
        BASE,
        chosen,
        3,
        9 if one_shape and not keyless else None,
        100 if one_shape else None,
    )
    assert [p for p, _, _ in source.groups] == sorted({p for p in chosen if p >= 0}) + (
        [None] if -1 in chosen else []
    )
    open_state = OpenBatch(room=700, first_offset_delta=70, base_timestamp=BASE - 3)
    for open_batch, room in ((None, 4000), (open_state, 2500), (None, 1), (open_state, 20)):
        expected_chunks(source, keys, values, headers, open_batch, room)


def test_large_records_keep_their_pieces_and_one_partition_keeps_input_order() -> None:
    values: list[bytes | None] = [bytes([i]) * 3000 for i in range(30)]
    keys: list[bytes | None] = [b"k%d" % i for i in range(30)]
    source = ListRecords(values, keys, None, BASE, 4)
    assert source.groups == [(4, 0, 30)] and source.positions(0, 30) is None
    (chunks,) = source.encode([(0, None)], 10_000)
    # Records of ~3 KB are not joined: the values themselves are among the pieces.
    assert any(piece is values[0] for piece in chunks[0].records)
    expected_chunks(source, keys, values, None, None, 10_000)
    empty = ListRecords([], None, None, BASE, None)
    assert empty.groups == []


@pytest.mark.parametrize("one_shape", [True, False])
@pytest.mark.parametrize("keyless", [False, True])
def test_big_records_are_bit_exact_kept_by_reference_and_not_overshot(
    one_shape: bool, keyless: bool
) -> None:
    rng = random.Random(5)
    count = 40
    sizes = (
        [10_000] * count
        if one_shape
        else [rng.choice([8192, 10_000, 30_000]) for _ in range(count)]
    )
    values: list[bytes | None] = [rng.randbytes(size) for size in sizes]
    keys: list[bytes | None] = [None if keyless else b"key-%05d" % i for i in range(count)]
    chosen = [i % 2 for i in range(count)]
    source = ListRecords(
        values,
        None if keyless else keys,
        None,
        BASE,
        chosen,
        2,
        None if keyless else 9,
        10_000 if one_shape else None,
    )
    open_state = OpenBatch(room=25_000, first_offset_delta=3, base_timestamp=BASE - 2)
    for open_batch, room in ((None, 65_475), (open_state, 65_475), (None, 1), (open_state, 5)):
        expected_chunks(source, keys, values, None, open_batch, room)
    (chunks,) = source.encode([(0, None)], 65_475)
    assert any(piece is values[0] for piece in chunks[0].records)  # not joined, not copied
    if not one_shape:
        # A window takes no more records than can fit by their least size.
        calls: list[int] = []
        encode = source._encode_window

        def counting(group: int, first: int, count: int, *args: object, **kw: object) -> object:
            calls.append(count)
            return encode(group, first, count, *args, **kw)  # type: ignore[arg-type]

        source._encode_window = counting  # type: ignore[method-assign,assignment]
        (chunks,) = source.encode([(0, None)], 65_475)
        assert sum(calls) == sum(chunk.record_count for chunk in chunks)


def decoded(accumulator: RecordAccumulator, tp: TopicPartition) -> list[tuple[object, ...]]:
    queue = accumulator._existing_queue(tp)
    assert queue is not None
    out: list[tuple[object, ...]] = []
    for batch in queue.batches:
        batch.close()
        for record_batch in read_record_batches(batch.builder.build()):
            out.extend((r.offset, r.timestamp, r.key, r.value) for r in record_batch.records)
    return out


@pytest.mark.parametrize("one_shape", [True, False])
def test_append_encoded_of_list_records_continues_open_batches_in_key_partitions(
    one_shape: bool,
) -> None:
    accumulator = RecordAccumulator(
        batch_size=2048, linger_ms=5, buffer_pool=BufferPool(1 << 22, 2048)
    )
    cluster = StaticCluster({"t": 3})
    keys = [b"key-%04d" % (i % 50) for i in range(600)]
    values = [b"%05d" % i + (b"." * (95 if one_shape else i % 150)) for i in range(600)]
    calls = [(0, 250), (250, 600)]
    for number, (start, stop) in enumerate(calls):
        chosen = [partition_for_key(key, 3) for key in keys[start:stop]]
        source = ListRecords(
            values[start:stop],
            keys[start:stop],
            None,
            BASE + number,  # the second call continues batches with an older base timestamp
            chosen,
            3,
            8 if one_shape else None,
            100 if one_shape else None,
        )
        runs, wake = accumulator.append_encoded("t", source, 100, 0.0, cluster)
        assert wake and sum(count for *_, count in runs) == stop - start
        if number:
            assert any(first_delta > 0 for _, first_delta, _, _ in runs)  # open batches
    for partition in range(3):
        records = decoded(accumulator, TopicPartition("t", partition))
        mine = [i for i in range(600) if partition_for_key(keys[i], 3) == partition]
        assert [r[2:] for r in records] == [(keys[i], values[i]) for i in mine]
        assert [r[1] for r in records] == [BASE + (i >= 250) for i in mine]


@pytest.mark.parametrize("with_headers", [False, True])
def test_groups_and_positions_follow_the_partitions_in_input_order(with_headers: bool) -> None:
    values: list[bytes | None] = [b"a", b"b", b"c", b"d", b"e"]
    headers: list[Headers | None] | None = None
    if with_headers:
        headers = [None, (("h", b"1"),), None, None, (("h", None),)]
    source = ListRecords(values, None, headers, BASE, [1, -1, 1, 0, -1], 2)
    assert source.groups == [(0, 0, 1), (1, 1, 3), (None, 3, 5)]
    assert list(source.positions(0, 5) or []) == [3, 0, 2, 1, 4]
    run = source.positions(1, 2)
    assert run is not None and len(run) == 2 and run[1] == 2 and run[0:2] == [0, 2]
    expected_chunks(source, [None] * 5, values, headers, None, 1000)
    later = source.positions(3, 2)
    source.drop_records()  # once queued: the positions are still known
    assert list(later or []) == [1, 4]
    same = ListRecords(values, None, headers, BASE, [1, 1, 1, 1, 1], 2)
    assert same.groups == [(1, 0, 5)] and same.positions(0, 5) is None
    sticky = ListRecords(values, None, headers, BASE, [-1] * 5, 2)
    assert sticky.groups == [(None, 0, 5)] and sticky.positions(2, 3) is None
    last_apart = ListRecords(values, None, headers, BASE, [1, 1, 1, 1, 0], 2)
    assert last_apart.groups == [(0, 0, 1), (1, 1, 5)]
    assert list(last_apart.positions(0, 5) or []) == [4, 0, 1, 2, 3]


def test_list_slices_bound_a_call_by_records_and_bytes() -> None:
    from kafkaline.producer import producer as producer_module

    assert producer_module._list_slices([], 0) == []
    small: list[bytes | None] = [b"x" * 100] * 1000
    assert producer_module._list_slices(small, 100) == [(0, 1000)]
    big: list[bytes | None] = [b"x" * 1_000_000] * 40
    big += [None, b""]
    slices = producer_module._list_slices(big, 1_000_000)
    assert slices[0] == (0, 16) and slices[-1][1] == 42
    assert all(a < b for a, b in slices) and all(
        b == c for (_, b), (c, _) in itertools.pairwise(slices)
    )
    many = producer_module._list_slices([b"v"] * 200_000, 1)
    assert many[0] == (0, 65536) and many[-1] == (196608, 200000)
    mixed: list[bytes | None] = [b"v" * 100] * 100_000
    mixed.append(b"x" * 5_000_000)
    slices = producer_module._list_slices(mixed, 5_000_000)
    assert slices[0] == (0, 65536) and slices[-1] == (65536, 100_001)


def test_key_partitions_group_by_the_memo_or_by_all_keys_looked_up() -> None:
    keys: list[bytes | None] = [b"key-%03d" % (i % 40) for i in range(200)]
    values: list[bytes | None] = [b"%05d" % i + b"." * 95 for i in range(200)]
    chosen = [partition_for_key(key, 3) for key in keys]  # type: ignore[arg-type]
    looked_up: list[int] = []

    def partitions_of(some: Sequence[bytes | None]) -> list[int]:
        looked_up.append(len(some))
        return [-1 if key is None else partition_for_key(key, 3) for key in some]

    memo: dict[bytes, int] = {k: p for k, p in zip(keys, chosen, strict=True) if k is not None}
    expected = ListRecords(values, keys, None, BASE, chosen, 3, 7, 100)
    by_memo = ListRecords(values, keys, None, BASE, KeyPartitions(memo, partitions_of), 3, 7, 100)
    assert by_memo.groups == expected.groups and not looked_up  # every key in the memo
    assert list(by_memo.positions(0, 200, 5) or []) == [
        p + 5 for p in expected.positions(0, 200) or []
    ]
    assert looked_up == [200]  # the positions looked the keys up, once asked for
    expected_chunks(by_memo, keys, values, None, None, 3000)
    # A key not in the memo, a None key (sticky), or first keys all in one partition:
    # every key looked up, grouped as by the list of their partitions.
    first = [k for k, p in zip(keys, chosen, strict=True) if p == chosen[0]][:20]
    for case_keys in ([*keys[:-1], b"new"], [*keys[:-1], None], first + keys[20:]):
        looked_up.clear()
        source = ListRecords(values, case_keys, None, BASE, KeyPartitions(memo, partitions_of), 3)
        listed = ListRecords(values, case_keys, None, BASE, partitions_of(case_keys), 3)
        assert looked_up[0] == 200 and source.groups == listed.groups
        assert list(source.positions(0, 200) or []) == list(listed.positions(0, 200) or [])
        expected_chunks(source, case_keys, values, None, None, 3000)
    # With headers, the blocks need the positions: the keys are looked up first.
    headers: list[Headers | None] = [None] * 199 + [(("h", b"1"),)]
    looked_up.clear()
    with_headers = ListRecords(values, keys, headers, BASE, KeyPartitions(memo, partitions_of), 3)
    assert looked_up == [200]
    expected_chunks(with_headers, keys, values, headers, None, 3000)


@pytest.mark.parametrize(
    ("items", "found"),
    [
        ([], (0, None)),
        ([b"abc"] * 40, (3, 3)),
        ([b"abc"] * 20 + [b"abcd"], (4, None)),  # one size in the probe, not after
        ([b"a", b"abc"] * 20, (3, None)),
        ([b"abc"] * 20 + [None], (3, None)),
        ([None, b"ab"], (2, None)),
        ([b"x" * 300] * 30, (300, 300)),  # sizes past the small ints
    ],
)
def test_longest_and_uniform(items: list[bytes | None], found: tuple[int, int | None]) -> None:
    from kafkaline.producer import producer as producer_module

    assert producer_module._longest_and_uniform(items) == found


@pytest.mark.parametrize("keyed", [True, False])
@pytest.mark.parametrize("seed", range(3))
def test_keys_of_one_size_and_values_of_varied_sizes_are_bit_exact(keyed: bool, seed: int) -> None:
    rng = random.Random(seed)
    count = rng.choice([1, 70, 900])
    keys: list[bytes | None] = [rng.randbytes(9) if keyed else None for _ in range(count)]
    values: list[bytes | None] = [rng.randbytes(rng.randint(0, 300)) for _ in range(count)]
    if seed == 2:
        values[-1] = b"x" * 3000  # past the column encoder's tables: the per-record one
    chosen = [rng.choice([-1, 0, 1]) for _ in range(count)]
    source = ListRecords(
        values, keys if keyed else None, None, BASE, chosen, 2, 9 if keyed else None
    )
    open_state = OpenBatch(room=700, first_offset_delta=60, base_timestamp=BASE - 70)
    for open_batch, room in ((None, 4000), (open_state, 2500), (None, 1), (open_state, 20)):
        expected_chunks(source, keys, values, None, open_batch, room)


def test_encode_one_key_size_is_bit_exact_and_cut_after_any_record() -> None:
    rng = random.Random(7)
    for _ in range(300):
        count = rng.choice([1, 2, 63, 64, 65, 200])
        key_size = rng.choice([None, 0, 1, 10, 70])
        first = rng.choice([0, 1, 62, 63, 64, 65, 500])
        delta = rng.choice([0, 1, 63, 64, 5000])
        keys = None if key_size is None else [rng.randbytes(key_size) for _ in range(count)]
        values = [rng.randbytes(rng.choice([0, 1, 63, 64, 127, 128, 2047])) for _ in range(count)]
        found = encode_one_key_size(keys, values, key_size or 0, delta, first)
        assert found is not None and len(found.pieces) == count * found.per_record
        cut = rng.randint(1, count)
        expected = encode_records(
            [None] * cut if keys is None else keys[:cut],
            values[:cut],
            BASE + delta,
            base_timestamp=BASE,
            first_offset_delta=first,
        )
        assert b"".join(found.pieces[: cut * found.per_record]) + found.trailer == expected
    assert encode_one_key_size(None, [b"x" * 2048], 0, 0, 0) is None  # past the tables
    assert encode_one_key_size(None, [b"x"], 0, -1, 0) is None  # a negative delta
    assert encode_one_key_size(None, [b"x"], 0, 0, 8192) is None  # offsets past the table
    with pytest.raises(TypeError):
        encode_one_key_size(None, [b"x", None], 0, 0, 0)  # type: ignore[list-item]
