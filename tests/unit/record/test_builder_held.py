"""RecordBatchBuilder: records added by ``append_encoded`` (encoded by the caller).

Every check compares a builder fed pre-encoded records with one fed the same records through
``append``: what callers see (len, offset deltas, ``open_state``, ``is_full``, sizes, the
built bytes) must not tell them apart, also with per-record appends after the pre-encoded
records, compression and a producer state.
"""

from __future__ import annotations

import pytest

from kafkaline.errors import IllegalStateError
from kafkaline.record import CompressionType, RecordBatchBuilder, read_record_batches
from kafkaline.record.record_encoder import encode_records

BASE_TS = 1_600_000_000_000

Record = tuple[int, bytes | None, bytes | None]


def _records(count: int, first: int = 0) -> list[Record]:
    """Records with varied timestamps (the largest neither first nor last), keys and values."""
    return [
        (BASE_TS + (i * 37) % 101, None if i % 5 == 0 else b"k%d" % i, b"v" * (i % 13))
        for i in range(first, first + count)
    ]


def _append_encoded(builder: RecordBatchBuilder, records: list[Record]) -> None:
    """Encode ``records`` as a bulk path does (deltas from ``open_state``) and hand them over."""
    state = builder.open_state()
    if state is None:
        first_delta, base = 0, records[0][0]
    else:
        _, first_delta, base = state
    chunk = encode_records(
        [r[1] for r in records],
        [r[2] for r in records],
        [r[0] for r in records],
        base_timestamp=base,
        first_offset_delta=first_delta,
    )
    # Two pieces, as the bulk paths hand over several.
    builder.append_encoded(
        [chunk[:3], memoryview(chunk)[3:]], len(records), records[0][0], max(r[0] for r in records)
    )


def _append_each(builder: RecordBatchBuilder, records: list[Record]) -> list[int | None]:
    return [builder.append(ts, key, value) for ts, key, value in records]


def _assert_same_view(held: RecordBatchBuilder, listed: RecordBatchBuilder) -> None:
    assert len(held) == len(listed)
    assert held.is_full == listed.is_full
    assert held.is_closed == listed.is_closed
    assert held.open_state() == listed.open_state()
    assert held.estimated_size_in_bytes == listed.estimated_size_in_bytes


def _read_back(builder: RecordBatchBuilder) -> list[Record]:
    (batch,) = read_record_batches(builder.build())
    assert batch.record_count == len(batch.records) == len(builder)
    return [(r.timestamp, r.key, r.value) for r in batch.records]


@pytest.mark.parametrize("codec", [CompressionType.NONE, CompressionType.LZ4])
def test_pre_encoded_records_then_appends_of_every_kind_build_the_same_batch(
    codec: CompressionType,
) -> None:
    held = RecordBatchBuilder(compression=codec, batch_size_limit=1 << 16)
    listed = RecordBatchBuilder(compression=codec, batch_size_limit=1 << 16)
    groups = [_records(7), _records(4, 7), _records(5, 11), _records(3, 16), _records(6, 19)]
    _append_encoded(held, groups[0])
    _append_each(listed, groups[0])
    _assert_same_view(held, listed)
    # One at a time after them: the same offset deltas.
    assert _append_each(held, groups[1]) == _append_each(listed, groups[1]) == [7, 8, 9, 10]
    _assert_same_view(held, listed)
    _append_encoded(held, groups[2])
    _append_encoded(listed, groups[2])
    _append_encoded(held, groups[3])  # two encoded groups in a row
    _append_encoded(listed, groups[3])
    _assert_same_view(held, listed)
    assert _append_each(held, groups[4][:1]) == _append_each(listed, groups[4][:1]) == [19]
    rest = groups[4][1:]
    for builder in (held, listed):
        taken = builder.append_many(
            [r[1] for r in rest], [r[2] for r in rest], [r[0] for r in rest]
        )
        assert taken == len(rest)
    _assert_same_view(held, listed)
    expected = [r for group in groups for r in group]
    assert _read_back(held) == _read_back(listed) == expected
    assert held.build() == listed.build()
    assert len(held) == len(listed) == len(expected)


def test_only_pre_encoded_records_count_and_seal() -> None:
    held = RecordBatchBuilder(batch_size_limit=1 << 16)
    listed = RecordBatchBuilder(batch_size_limit=1 << 16)
    assert held.open_state() is None and len(held) == 0 and not held.is_full
    groups = [_records(3), _records(1, 3), _records(9, 4)]
    for group in groups:
        _append_encoded(held, group)
        _append_each(listed, group)
        _assert_same_view(held, listed)
    held.set_producer_state(producer_id=7, producer_epoch=2, base_sequence=40)
    listed.set_producer_state(producer_id=7, producer_epoch=2, base_sequence=40)
    assert held.build() == listed.build()
    (batch,) = read_record_batches(held.build())
    assert batch.base_sequence == 40 and batch.record_count == 13
    assert batch.base_timestamp == groups[0][0][0]
    assert batch.max_timestamp == max(r[0] for group in groups for r in group)
    assert len(held) == 13


def test_appends_then_pre_encoded_records_then_appends() -> None:
    held = RecordBatchBuilder(batch_size_limit=1 << 16)
    listed = RecordBatchBuilder(batch_size_limit=1 << 16)
    groups = [_records(4), _records(6, 4), _records(2, 10)]
    for builder in (held, listed):
        assert _append_each(builder, groups[0]) == [0, 1, 2, 3]
    _append_encoded(held, groups[1])
    _append_each(listed, groups[1])
    _assert_same_view(held, listed)
    assert _append_each(held, groups[2]) == _append_each(listed, groups[2]) == [10, 11]
    assert held.build() == listed.build()


def test_a_full_batch_of_pre_encoded_records_refuses_more_and_closes_like_any() -> None:
    limit = 200
    held = RecordBatchBuilder(batch_size_limit=limit)
    listed = RecordBatchBuilder(batch_size_limit=limit)
    records = _records(12)
    # As many records as fit (a refusal closes a builder: counted on another one); the same
    # go in listed and pre-encoded.
    scratch = RecordBatchBuilder(batch_size_limit=limit)
    count = sum(1 for delta in _append_each(scratch, records) if delta is not None)
    assert 1 < count < len(records)
    assert _append_each(listed, records[:count]) == list(range(count))
    _append_encoded(held, records[:count])
    _assert_same_view(held, listed)
    ts, key, value = records[count]
    assert held.append(ts, key, value) == listed.append(ts, key, value)
    assert len(held) == len(listed) == count
    for builder in (held, listed):
        builder.close_for_appends()
        assert builder.append(ts, key, value) is None
        assert builder.append_many([key], [value], ts) == 0
    _assert_same_view(held, listed)
    with pytest.raises(IllegalStateError):
        _append_encoded(held, records[count:])
    assert held.build() == listed.build()
    assert len(held) == count


def test_a_closed_batch_with_room_refuses_appends_and_keeps_its_count() -> None:
    held = RecordBatchBuilder(batch_size_limit=1 << 16)
    _append_encoded(held, _records(5))
    held.close_for_appends()
    assert held.append(BASE_TS, b"k", b"v") is None
    assert held.open_state() is None and held.is_full and len(held) == 5
    assert _read_back(held) == _records(5)


@pytest.mark.parametrize(
    "field",
    ["base_offset", "partition_leader_epoch", "producer_id", "producer_epoch", "base_sequence"],
)
def test_the_constructor_refuses_a_default_value_of_the_wrong_type(field: str) -> None:
    # A float equal to the default must still be refused.
    default = 0 if field == "base_offset" else -1
    with pytest.raises(ValueError, match=field):
        RecordBatchBuilder(**{field: float(default)})  # type: ignore[arg-type]
    assert not RecordBatchBuilder(**{field: default}).is_closed  # type: ignore[arg-type]


def test_the_constructor_takes_a_codec_by_its_id() -> None:
    builder = RecordBatchBuilder(compression=3)
    assert builder.compression is CompressionType.LZ4


def test_pieces_of_wider_items_count_and_copy_by_bytes() -> None:
    """A piece may be a memoryview of 4-byte items: its size is its bytes (len() counts items),
    so the batch is the one per-record appends make, with nothing copied past its buffer."""
    records = _records(40)
    chunk = encode_records(
        [r[1] for r in records],
        [r[2] for r in records],
        [r[0] for r in records],
        base_timestamp=records[0][0],
        first_offset_delta=0,
    )
    padded = chunk + bytes(-len(chunk) % 4)  # a whole number of 4-byte items
    wide = memoryview(padded).cast("I")
    assert len(wide) * 4 == len(padded)
    held = RecordBatchBuilder(batch_size_limit=1 << 20)
    held.append_encoded(
        [wide[: len(chunk) // 4], memoryview(chunk)[len(chunk) // 4 * 4 :]],
        len(records),
        records[0][0],
        max(r[0] for r in records),
    )
    listed = RecordBatchBuilder(batch_size_limit=1 << 20)
    _append_each(listed, records)
    _assert_same_view(held, listed)
    assert held.build() == listed.build()
