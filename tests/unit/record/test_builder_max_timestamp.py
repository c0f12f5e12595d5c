"""RecordBatchBuilder: the header's max timestamp is the largest record's, through every
append path."""

from __future__ import annotations

import pytest

from kafkaline.record import RecordBatchBuilder, read_record_batches
from kafkaline.record.batch_format import BATCH_HEADER_SIZE

BASE_TS = 1_600_000_000_000


def _mixed_paths_builder(path: str) -> tuple[RecordBatchBuilder, list[int]]:
    """A builder filled through one append path with timestamps whose largest is neither the
    first nor the last record's; returns it and the timestamps the records carry."""
    timestamps = [BASE_TS + 5, BASE_TS + 90, BASE_TS, BASE_TS + 40, BASE_TS + 7]
    builder = RecordBatchBuilder(batch_size_limit=1 << 20)
    if path == "append":
        for ts in timestamps:
            assert builder.append(ts, b"k", b"v") is not None
    elif path == "append_headers":
        for ts in timestamps:
            assert builder.append(ts, b"k", b"v", [("h", b"x")]) is not None
    elif path == "append_many":
        n = len(timestamps)
        assert builder.append_many([b"k"] * n, [b"v"] * n, timestamps) == n
    elif path == "append_many_one_int":
        timestamps = [BASE_TS + 3] * 3
        assert builder.append_many([b"k"] * 3, [b"v"] * 3, BASE_TS + 3) == 3
    elif path == "mixed":  # appends, a bulk append, appends
        builder.append(timestamps[0], b"k", b"v")
        builder.append(timestamps[1], b"k", b"v")
        builder.append_many([b"k"] * 2, [b"v"] * 2, timestamps[2:4])
        builder.append(timestamps[4], b"k", b"v")
    elif path == "append_encoded":
        source = RecordBatchBuilder(batch_size_limit=1 << 20)
        source.append_many([b"k"] * 3, [b"v"] * 3, timestamps[:3])
        (decoded,) = read_record_batches(source.build())
        records = source.build()[BATCH_HEADER_SIZE:]
        builder.append_encoded([records], 3, timestamps[0], decoded.max_timestamp)
        # Then records appended one at a time after the pre-encoded ones.
        builder.append(timestamps[3], b"k", b"v")
        builder.append(timestamps[4], b"k", b"v")
    else:  # pragma: no cover - a typo in the parametrisation
        raise AssertionError(path)
    return builder, timestamps


@pytest.mark.parametrize(
    "path",
    [
        "append",
        "append_headers",
        "append_many",
        "append_many_one_int",
        "mixed",
        "append_encoded",
    ],
)
def test_the_header_s_max_timestamp_is_the_largest_record_s_whatever_the_append_path(
    path: str,
) -> None:
    builder, timestamps = _mixed_paths_builder(path)
    (batch,) = read_record_batches(builder.build())
    assert batch.base_timestamp == timestamps[0]
    assert batch.max_timestamp == max(timestamps)
    assert [record.timestamp for record in batch.records] == timestamps


def test_a_record_that_fits_only_exactly_counts_in_the_max_timestamp() -> None:
    # Records up to the limit, the last of which fits only just: its timestamp counts too.
    builder = RecordBatchBuilder(batch_size_limit=BATCH_HEADER_SIZE + 60)
    taken = []
    ts = BASE_TS
    while (delta := builder.append(ts, None, b"v" * 5)) is not None:
        taken.append(ts)
        ts += 1000
        assert delta == len(taken) - 1
    (batch,) = read_record_batches(builder.build())
    assert batch.max_timestamp == max(taken) == taken[-1]
