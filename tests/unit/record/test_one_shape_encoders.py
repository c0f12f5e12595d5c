"""The record encoder's helpers for records of one shape, bit-exact against the per-record
encoder: ``UniformShape`` (used by ``encode_uniform_records``, the builder's path for a
send() loop's batches of one shape) and ``encode_one_key_size``. Kept from the removed
producer/list_records tests: the helpers are still in record_encoder."""

from __future__ import annotations

import random

import pytest

from kafkaline.record.record_encoder import UniformShape, encode_one_key_size, encode_records

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
