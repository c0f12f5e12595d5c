"""Build then read, with Hypothesis, for every codec: what goes in comes out."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kafkaline.record import (
    CompressionType,
    RecordBatchBuilder,
    read_record_batches,
)
from kafkaline.record.batch_format import Header
from kafkaline.record.varint import INT64_MAX, INT64_MIN

BASE_TS = 1_700_000_000_000

payloads = st.one_of(
    st.none(),
    st.just(b""),
    st.binary(max_size=40),
    # Around the small-varint table's edge; built from a size, as random 8 KiB is too much
    # entropy for Hypothesis.
    st.builds(
        lambda size, fill: bytes([fill]) * size, st.integers(8180, 8200), st.integers(0, 255)
    ),
)
headers_lists = st.lists(
    st.tuples(st.text(max_size=10), st.one_of(st.none(), st.binary(max_size=20))), max_size=3
)
records = st.lists(
    st.tuples(
        st.integers(-20_000, 20_000),  # timestamp offsets: negative deltas included
        payloads,
        payloads,
        headers_lists,
    ),
    min_size=1,
    max_size=30,
)


@settings(max_examples=60, deadline=None)
@given(
    records=records,
    codec=st.sampled_from(list(CompressionType)),
    bulk=st.booleans(),
)
def test_build_then_read_returns_the_records(
    records: list[tuple[int, bytes | None, bytes | None, list[Header]]],
    codec: CompressionType,
    bulk: bool,
) -> None:
    builder = RecordBatchBuilder(compression=codec, batch_size_limit=1 << 30)
    timestamps = [BASE_TS + r[0] for r in records]
    if bulk:
        taken = builder.append_many(
            [r[1] for r in records], [r[2] for r in records], timestamps, [r[3] for r in records]
        )
        assert taken == len(records)
    else:
        for timestamp, (_, key, value, headers) in zip(timestamps, records, strict=True):
            builder.append(timestamp, key, value, headers)
    (batch,) = read_record_batches(builder.build())
    assert batch.compression is codec
    assert batch.record_count == len(records)
    assert batch.base_timestamp == timestamps[0]
    assert batch.max_timestamp == max(timestamps)
    assert [r.offset for r in batch.records] == list(range(len(records)))
    assert [r.timestamp for r in batch.records] == timestamps
    assert [r.key for r in batch.records] == [r[1] for r in records]
    assert [r.value for r in batch.records] == [r[2] for r in records]
    assert [list(r.headers) for r in batch.records] == [r[3] for r in records]


def test_extreme_timestamps_round_trip() -> None:
    for timestamps in ([INT64_MIN, INT64_MIN + 1], [INT64_MAX, 0], [0, INT64_MAX]):
        builder = RecordBatchBuilder()
        for timestamp in timestamps:
            builder.append(timestamp, None, b"v")
        (batch,) = read_record_batches(builder.build())
        assert [r.timestamp for r in batch.records] == timestamps
