"""Records of 8 KiB to 1 MiB (lengths past the small-varint table): the fast loops with
memoized big lengths, and UniformShape's shapes of big fields (joined and as pieces),
bit-exact against a reference encoder written from the record layout, field by field."""

from __future__ import annotations

import random

import pytest

from kafkaline.record.record_encoder import (
    UniformShape,
    _record_pieces_general,
    encode_record_pieces,
    encode_records,
)
from kafkaline.record.varint import encode_varint, encode_varlong

BASE = 1_700_000_000_000
SIZES = [8191, 8192, 10_000, 65_535, 300_000, 1 << 20]


def reference(
    keys: list[bytes | None],
    values: list[bytes | None],
    timestamps: list[int],
    base: int,
    first: int,
) -> bytes:
    """The records section, one field at a time (record_encoder's layout table)."""
    out = bytearray()
    for i, (key, value, timestamp) in enumerate(zip(keys, values, timestamps, strict=True)):
        body = bytearray(b"\x00")  # attributes
        body += encode_varlong(timestamp - base)
        body += encode_varint(first + i)
        for field in (key, value):
            if field is None:
                body += encode_varint(-1)
            else:
                body += encode_varint(len(field)) + field
        body += encode_varint(0)  # no headers
        out += encode_varint(len(body)) + body
    return bytes(out)


def general(
    keys: list[bytes | None],
    values: list[bytes | None],
    timestamps: list[int],
    base: int,
    first: int,
) -> bytes:
    """The general path's bytes (one record at a time, no fast loop)."""
    return b"".join(
        b"".join(_record_pieces_general(first + i, t, base, k, v, b"\x00"))
        for i, (k, v, t) in enumerate(zip(keys, values, timestamps, strict=True))
    )


def field(rng: random.Random, size: int) -> bytes:
    # Random head and tail around a run: cheap for 1 MiB, and a misplaced byte still shows.
    if size < 64:
        return rng.randbytes(size)
    return rng.randbytes(16) + bytes([rng.randrange(256)]) * (size - 32) + rng.randbytes(16)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("keys_kind", ["keyed", "keyless", "big keys"])
@pytest.mark.parametrize("one_timestamp", [True, False])
def test_big_and_mixed_records_are_bit_exact(
    seed: int, keys_kind: str, one_timestamp: bool
) -> None:
    rng = random.Random(seed)
    count = rng.choice([1, 2, 6, 40])
    sizes = [rng.choice([*SIZES, 0, 10, 100, 2047, 2048]) for _ in range(count)]
    if seed % 2:
        sizes[0] = rng.choice(SIZES)  # the fast loop meets a big one first ...
    else:
        sizes[-1] = rng.choice(SIZES)  # ... or after small ones
    values: list[bytes | None] = [field(rng, size) for size in sizes]
    keys: list[bytes | None]
    if keys_kind == "keyless":
        keys = [None] * count
    elif keys_kind == "big keys":
        keys = [field(rng, rng.choice([9, 9000, 20_000])) for _ in range(count)]
    else:
        keys = [field(rng, 9) for _ in range(count)]
    first = rng.choice([0, 1, 63, 64, 500])
    if one_timestamp:
        timestamps = [BASE + 3] * count
    else:
        timestamps = sorted(BASE + rng.randrange(0, 200) for _ in range(count))
    expected = reference(keys, values, timestamps, BASE, first)
    assert general(keys, values, timestamps, BASE, first) == expected
    stamps: list[int] | int = BASE + 3 if one_timestamp else timestamps
    assert encode_records(keys, values, stamps, base_timestamp=BASE, first_offset_delta=first) == (
        expected
    )
    # The pieces cut after any record are that many records (the trailer closes them), and
    # the values are among them by reference (not copied).
    pieces, per_record, trailer = encode_record_pieces(stamps, keys, values, None, BASE, first)
    assert per_record in (6, 7)  # the fast loop's pieces (the general path's are 4)
    for cut in {1, count // 2, count} - {0}:
        assert b"".join(pieces[: cut * per_record]) + trailer == reference(
            keys[:cut], values[:cut], timestamps[:cut], BASE, first
        )
    assert any(piece is values[-1] for piece in pieces)


def test_nulls_and_negative_deltas_beside_big_records_take_the_general_path() -> None:
    big = field(random.Random(1), 10_000)
    keys: list[bytes | None] = [b"k" * 9, None, b"k"]
    values: list[bytes | None] = [big, big, None]
    for timestamps in ([BASE] * 3, [BASE, BASE - 5, BASE + 1]):
        expected = reference(keys, values, timestamps, BASE, 0)
        assert encode_records(keys, values, timestamps, base_timestamp=BASE) == expected
    # Deltas past the small table (timestamps 10 s apart, offsets past 8 Ki) beside big ones.
    expected = reference([None, None], [big, big], [BASE, BASE + 10_000], BASE, 9000)
    assert (
        encode_records(
            [None, None],
            [big, big],
            [BASE, BASE + 10_000],
            base_timestamp=BASE,
            first_offset_delta=9000,
        )
        == expected
    )
    with pytest.raises(TypeError, match="timestamp must be int"):
        encode_records([None], [big], [1.5])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="value must be bytes"):
        encode_records([None], [str(big)], 0)  # type: ignore[list-item]


def test_many_distinct_big_sizes_do_not_grow_the_memos_without_bound() -> None:
    from kafkaline.record.record_encoder import _BIG_LENGTHS, _MEMO_ENTRIES

    values: list[bytes | None] = [b"x" * (8192 + i) for i in range(_MEMO_ENTRIES + 100)]
    keys: list[bytes | None] = [None] * len(values)
    timestamps = [BASE] * len(values)
    encoded = encode_records(keys, values, BASE, base_timestamp=BASE)
    assert encoded == reference(keys, values, timestamps, BASE, 0)
    assert all(len(memo) <= _MEMO_ENTRIES for memo in _BIG_LENGTHS)


@pytest.mark.parametrize("keyless", [False, True])
@pytest.mark.parametrize("key_size", [9, 9000])
@pytest.mark.parametrize("value_size", [8192, 10_000, 1 << 20])
def test_uniform_shape_of_big_fields_joined_and_as_pieces(
    keyless: bool, key_size: int, value_size: int
) -> None:
    rng = random.Random(value_size + key_size)
    count = 8 if value_size < 1 << 20 else 3
    keys = None if keyless else [field(rng, key_size) for _ in range(count)]
    values = [field(rng, value_size) for _ in range(count)]
    shape = UniformShape.of(key_size, value_size, keyless)
    assert shape is not None
    # A batch continuing an open one (offset 63, 5 ms later), then new batches.
    batches = [(2, 63, 5), (5, 0, 0), (count - 7, 0, 0)] if count == 8 else [(1, 63, 5), (2, 0, 0)]
    joined = shape.encode_batches(keys, values, batches)
    pieces = shape.encode_batch_pieces(keys, values, batches)
    assert joined is not None and pieces is not None
    taken = 0
    for (size, first, delta), section, (batch_pieces, span) in zip(
        batches, joined, pieces, strict=True
    ):
        batch_keys: list[bytes | None] = (
            [None] * size if keys is None else list(keys[taken : taken + size])
        )
        expected = reference(
            batch_keys, list(values[taken : taken + size]), [BASE + delta] * size, BASE, first
        )
        assert bytes(section) == expected
        assert b"".join(batch_pieces) == expected and span == len(expected)
        assert any(piece is values[taken] for piece in batch_pieces)  # by reference
        assert shape.fitting(len(expected), first, delta) == size
        assert shape.fitting(len(expected) - 1, first, delta) == size - 1
        taken += size
