"""encode_uniform_records: records of one shape encoded by runs of one timestamp, bit-exact
against the per-record encoder, and declined (None) whenever they are not its to encode."""

from __future__ import annotations

import os

import pytest

from kafkaline.record import RecordBatchBuilder, read_record_batches
from kafkaline.record.record_encoder import encode_record_chunk, encode_uniform_records

BASE_TS = 1_600_000_000_000


def runs(count: int, per_run: int, start: int = BASE_TS) -> list[int]:
    return [start + i // per_run for i in range(count)]


@pytest.mark.parametrize("keyless", [False, True], ids=["keyed", "keyless"])
@pytest.mark.parametrize("first", [0, 5, 63, 64, 300], ids=lambda f: f"first offset {f}")
@pytest.mark.parametrize("per_run", [20, 100, 1000], ids=lambda r: f"runs of {r}")
def test_same_bytes_as_the_per_record_encoder(keyless: bool, first: int, per_run: int) -> None:
    count = 500
    keys = [None if keyless else os.urandom(9) for _ in range(count)]
    values = [os.urandom(100) for _ in range(count)]
    timestamps = runs(count, per_run, BASE_TS + 3)
    encoded = encode_uniform_records(timestamps, keys, values, BASE_TS, first)
    assert encoded is not None
    assert bytes(encoded) == encode_record_chunk(timestamps, keys, values, None, BASE_TS, first)


def test_fields_of_other_sizes_one_byte_and_two_byte_lengths() -> None:
    for key_size, value_size in [(0, 0), (1, 63), (64, 64), (200, 7000)]:
        keys = [os.urandom(key_size) for _ in range(64)]
        values = [os.urandom(value_size) for _ in range(64)]
        timestamps = runs(64, 32)
        encoded = encode_uniform_records(timestamps, keys, values, BASE_TS, 0)
        assert encoded is not None
        expected = encode_record_chunk(timestamps, keys, values, None, BASE_TS, 0)
        assert bytes(encoded) == expected


def declined(timestamps: list[int], keys: list[bytes | None], values: list[bytes | None]) -> bool:
    return encode_uniform_records(timestamps, keys, values, BASE_TS, 0) is None


def test_declines_what_is_not_one_shape_in_order() -> None:
    count = 200
    keys: list[bytes | None] = [b"k" * 9] * count
    values: list[bytes | None] = [b"v" * 100] * count
    timestamps = runs(count, 50)
    assert not declined(timestamps, keys, values)
    assert declined(timestamps, [*keys[:-1], b"k" * 8], values)  # a key of another size
    assert declined(timestamps, keys, [b"v" * 99, *values[1:]])  # a value of another size
    assert declined(timestamps, [*keys[:-1], None], values)  # null and non-null keys
    assert declined(timestamps, [None, *keys[1:]], values)
    assert declined(timestamps, keys, [*values[:-1], None])  # a null value
    # Out of order: a run that comes back, a step back, below the base timestamp.
    assert declined([*timestamps[:150], *timestamps[:50]], keys, values)
    assert declined([BASE_TS + 2] * 100 + [BASE_TS + 1] * 100, keys, values)
    assert declined([BASE_TS - 1] * count, keys, values)
    assert declined(runs(count, 2), keys, values)  # runs too short to pay for themselves
    assert declined([], [], [])
    # Offsets past the small-varint table.
    assert encode_uniform_records(timestamps, keys, values, BASE_TS, 8100) is None
    # A field past 8 Ki is encoded too (its length's varint made once), bit-exact.
    big_keys: list[bytes | None] = [b"k" * 9000] * count
    encoded = encode_uniform_records(timestamps, big_keys, values, BASE_TS, 0)
    assert encoded is not None
    assert bytes(encoded) == encode_record_chunk(timestamps, big_keys, values, None, BASE_TS, 0)


def test_a_builder_filled_by_appends_holds_every_record_in_order() -> None:
    # 64 KiB batches of a send() loop's records: encoded in rounds as the estimate meets the
    # limit (by runs), the last records at seal.
    builder = RecordBatchBuilder(batch_size_limit=65536)
    records = [(BASE_TS + i // 100, b"key-%05d" % i, os.urandom(100)) for i in range(1000)]
    taken = 0
    for timestamp, key, value in records:
        if builder.append(timestamp, key, value) is None:
            break
        taken += 1
    assert 500 < taken < 1000
    assert len(builder.build()) <= 65536
    (batch,) = read_record_batches(builder.build())
    assert [(r.timestamp, r.key, r.value) for r in batch.records] == records[:taken]
    assert batch.max_timestamp == records[taken - 1][0]
