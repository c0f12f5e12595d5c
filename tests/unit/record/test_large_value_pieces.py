"""encode_record_parts() keeps a value of LARGE_VALUE bytes or more as a piece of its own
(by reference, copied once when the builder seals), with the same bytes as one piece."""

from __future__ import annotations

import pytest

from kafkaline.record import RecordBatchBuilder, read_record_batches
from kafkaline.record.builder import RecordBatchBuilder as PureBuilder
from kafkaline.record.record_encoder import LARGE_VALUE, encode_record_parts
from kafkaline.record.varint import encode_varint, encode_varlong

TS = 1_700_000_000_000


def reference(offset_delta: int, timestamp_delta: int, key: bytes | None, value: bytes) -> bytes:
    """The record's bytes field by field (the wire table in record_encoder's docstring)."""
    body = b"\x00" + encode_varlong(timestamp_delta) + encode_varint(offset_delta)
    body += b"\x01" if key is None else encode_varint(len(key)) + key
    body += encode_varint(len(value)) + value + b"\x00"
    return encode_varint(len(body)) + body


@pytest.mark.parametrize("size", [0, 1, LARGE_VALUE - 1, LARGE_VALUE, 10_000, 70_000])
@pytest.mark.parametrize("key", [None, b"k", b"key" * 50])
def test_the_pieces_join_to_the_record(size: int, key: bytes | None) -> None:
    value = bytes(range(256)) * (size // 256) + b"v" * (size % 256)
    pieces, record_size = encode_record_parts(7, -3, key, value)
    joined = b"".join(pieces)
    assert joined == reference(7, -3, key, value)
    assert record_size == len(joined)
    if size >= LARGE_VALUE:
        assert len(pieces) == 4
        assert pieces[2] is value  # not copied
    else:
        assert len(pieces) == 2


def test_a_null_value_is_one_piece() -> None:
    pieces, record_size = encode_record_parts(0, 0, b"k", None)
    assert len(pieces) == 2
    assert record_size == len(b"".join(pieces))


@pytest.mark.parametrize("compression", [0, 4])
def test_a_batch_of_large_and_small_values_reads_back(compression: int) -> None:
    values = [b"a" * 10, b"b" * LARGE_VALUE, None, b"c" * 20_000, b"d" * (LARGE_VALUE - 1)]
    for builder_class in {PureBuilder, RecordBatchBuilder}:
        builder = builder_class(1 << 20, compression=compression)
        for i, value in enumerate(values):
            assert builder.append(TS + i, b"k%d" % i, value) == i
        (batch,) = read_record_batches(builder.build())
        assert [record.value for record in batch.records] == values
        assert [record.key for record in batch.records] == [b"k%d" % i for i in range(5)]
