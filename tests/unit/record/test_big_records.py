"""Records of 8 KiB to 1 MiB beside small ones, nulls and negative deltas: the record encoder
bit-exact against a reference written from the record layout, field by field."""

from __future__ import annotations

import random

import pytest

from kafkaline.record.record_encoder import encode_records
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
        sizes[0] = rng.choice(SIZES)  # a big one first ...
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
    stamps: list[int] | int = BASE + 3 if one_timestamp else timestamps
    assert encode_records(keys, values, stamps, base_timestamp=BASE, first_offset_delta=first) == (
        expected
    )


def test_nulls_and_negative_deltas_beside_big_records() -> None:
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
