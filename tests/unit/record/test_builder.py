"""RecordBatchBuilder: golden bytes, CRC span, attributes, producer state, size limits."""

from __future__ import annotations

import os
import random
import struct

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder

from kafkaline.errors import IllegalStateError, RecordTooLargeError, UnsupportedCodecError
from kafkaline.record import (
    CompressionType,
    RecordBatchBuilder,
    TimestampType,
    build_record_batch,
    crc32c,
    read_record_batches,
)
from kafkaline.record.batch_format import BATCH_HEADER, BATCH_HEADER_SIZE, Headers

BASE_TS = 1_600_000_000_000

# Two records in a transactional batch, checked field by field against the layout table.
GOLDEN = bytes.fromhex(
    "0000000000000000"  # base_offset 0
    "0000004e"  # batch_length 78
    "ffffffff"  # partition_leader_epoch -1
    "02"  # magic
    "036d88d5"  # crc
    "0010"  # attributes: transactional
    "00000001"  # last_offset_delta
    "00000174876e8000"  # base_timestamp 1600000000000
    "00000174876e8005"  # max_timestamp
    "00000000000003e8"  # producer_id 1000
    "0002"  # producer_epoch
    "00000007"  # base_sequence
    "00000002"  # record_count
    # record 0: length 21, attributes, ts delta 0, offset delta 0, key "key", value "value",
    # 2 headers: ("h", b"v"), ("n", null)
    "2a" "00" "00" "00" "06" "6b6579" "0a" "76616c7565" "04" "02" "68" "02" "76" "02" "6e" "01"
    # record 1: length 6, attributes, ts delta 5, offset delta 1, null key, null value, 0 headers
    "0c" "00" "0a" "02" "01" "01" "00"
)  # fmt: skip


def golden_builder() -> RecordBatchBuilder:
    builder = RecordBatchBuilder(is_transactional=True)
    builder.append(BASE_TS, b"key", b"value", [("h", b"v"), ("n", None)])
    builder.append(BASE_TS + 5, None, None)
    builder.set_producer_state(1000, 2, 7)
    return builder


def test_golden_bytes() -> None:
    assert golden_builder().build() == GOLDEN


def test_golden_crc_covers_attributes_to_the_end() -> None:
    (stored,) = struct.unpack_from(">I", GOLDEN, 17)
    assert stored == crc32c(GOLDEN[21:])
    # The leader epoch is outside the span: brokers rewrite it without touching the CRC.
    rewritten = GOLDEN[:12] + struct.pack(">i", 42) + GOLDEN[16:]
    assert read_record_batches(rewritten)[0].partition_leader_epoch == 42


Record = tuple[int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]


def kafka_python_bytes(
    records: list[Record], *, codec: int = 0, producer: tuple[int, int, int] = (-1, -1, -1),
    transactional: bool = False,
) -> bytes:  # fmt: skip
    builder = DefaultRecordBatchBuilder(
        2, codec, transactional, producer[0], producer[1], producer[2], batch_size=1 << 30
    )
    for offset, (timestamp, key, value, headers) in enumerate(records):
        builder.append(offset, timestamp, key, value, headers)
    return bytes(builder.build())


def our_bytes(
    records: list[Record], *, codec: int = 0, producer: tuple[int, int, int] = (-1, -1, -1),
    transactional: bool = False, bulk: bool = False,
) -> bytes:  # fmt: skip
    # kafka-python writes partition leader epoch 0 where Java's producer writes -1.
    builder = RecordBatchBuilder(
        compression=codec,
        batch_size_limit=1 << 30,
        partition_leader_epoch=0,
        is_transactional=transactional,
    )
    if bulk:
        headers: list[Headers | None] = [r[3] for r in records]
        assert builder.append_many(
            [r[1] for r in records], [r[2] for r in records], [r[0] for r in records], headers
        ) == len(records)
    else:
        for timestamp, key, value, record_headers in records:
            assert builder.append(timestamp, key, value, record_headers) is not None
    builder.set_producer_state(*producer)
    return builder.build()


def mixed_records(count: int, seed: int) -> list[Record]:
    rng = random.Random(seed)
    records: list[Record] = []
    for i in range(count):
        key = None if i % 3 == 0 else rng.randbytes(rng.choice([0, 1, 10, 63, 64, 200]))
        value = None if i % 5 == 0 else rng.randbytes(rng.choice([0, 100, 8191, 8192, 20000]))
        headers: list[tuple[str, bytes | None]] = (
            [("trace", rng.randbytes(8)), ("empty", None), ("ü", b"")] if i % 4 == 0 else []
        )
        records.append((BASE_TS + rng.randint(-10_000, 10_000), key, value, headers))
    return records


CASES: dict[str, list[Record]] = {
    "keyed, rising timestamps": [
        (BASE_TS + i, os.urandom(10), os.urandom(100), []) for i in range(600)
    ],
    "null keys, one timestamp": [(BASE_TS, None, os.urandom(100), []) for _ in range(600)],
    "mixed: nulls, headers, big fields, negative deltas": mixed_records(300, seed=1),
    "offsets past the small varint table": [(BASE_TS, b"k", b"v", []) for _ in range(9000)],
    "timestamp deltas past the small varint table": [
        (BASE_TS + i * 3000, b"k", b"v", []) for i in range(10)
    ],
    "one empty record": [(0, b"", b"", [])],
    # One shape (a send() loop's), runs of timestamps: encoded by runs, not per record.
    "one shape, runs of one timestamp": [
        (BASE_TS + i // 40, os.urandom(9), os.urandom(100), []) for i in range(1200)
    ],
    "null keys, one shape, runs of one timestamp": [
        (BASE_TS + i // 40, None, os.urandom(100), []) for i in range(1200)
    ],
    "one shape, the clock set back midway": [
        (BASE_TS + (i // 40 if i < 600 else i // 40 - 30), b"k" * 9, os.urandom(100), [])
        for i in range(1200)
    ],
}


@pytest.mark.parametrize("records", CASES.values(), ids=CASES.keys())
@pytest.mark.parametrize("bulk", [False, True], ids=["append", "append_many"])
def test_bytes_equal_kafka_python_builder(records: list[Record], bulk: bool) -> None:
    producer = (123456789, 3, 1000)
    expected = kafka_python_bytes(records, producer=producer, transactional=True)
    assert our_bytes(records, producer=producer, transactional=True, bulk=bulk) == expected


def test_gzip_batch_equals_kafka_python_builder_up_to_the_gzip_member() -> None:
    records = CASES["keyed, rising timestamps"]
    ours = read_record_batches(our_bytes(records, codec=CompressionType.GZIP))[0]
    theirs = read_record_batches(kafka_python_bytes(records, codec=CompressionType.GZIP))[0]
    assert ours.records == theirs.records
    assert ours.attributes == theirs.attributes == CompressionType.GZIP


# ---------------------------------------------------------------------------- attributes


@pytest.mark.parametrize("codec", list(CompressionType), ids=lambda c: c.name)
def test_attributes_carry_codec_and_flags(codec: CompressionType) -> None:
    builder = RecordBatchBuilder(
        compression=codec,
        is_transactional=True,
        is_control=True,
        timestamp_type=TimestampType.LOG_APPEND_TIME,
        log_append_time=BASE_TS + 99,
    )
    builder.append(BASE_TS, b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x05")
    fields = BATCH_HEADER.unpack_from(builder.build())
    assert fields[5] == codec | 0x08 | 0x10 | 0x20
    assert fields[8] == BASE_TS + 99  # max timestamp = the log append time


def test_log_append_time_batches_need_the_time() -> None:
    with pytest.raises(ValueError, match="log_append_time"):
        RecordBatchBuilder(timestamp_type=TimestampType.LOG_APPEND_TIME)


def test_unknown_codec_is_refused_at_construction() -> None:
    with pytest.raises(UnsupportedCodecError, match="codec id 6"):
        RecordBatchBuilder(compression=6)


def test_bad_compression_level_is_refused_at_construction() -> None:
    with pytest.raises(ValueError, match="compression level 99"):
        RecordBatchBuilder(compression=CompressionType.GZIP, compression_level=99)


# ------------------------------------------------------------------------ producer state


def test_producer_state_defaults_to_not_idempotent() -> None:
    builder = RecordBatchBuilder()
    builder.append(BASE_TS, None, b"v")
    fields = BATCH_HEADER.unpack_from(builder.build())
    assert fields[9:12] == (-1, -1, -1)
    assert fields[2] == -1  # partition leader epoch, as Java's producer sends


def test_producer_state_can_change_after_sealing_without_reencoding() -> None:
    builder = RecordBatchBuilder(compression=CompressionType.ZSTD)
    for i in range(100):
        builder.append(BASE_TS + i, b"k%d" % i, os.urandom(50))
    first = builder.build()
    assert builder.build() is first  # cached
    builder.set_producer_state(77, 1, 500)
    second = builder.build()
    assert second[BATCH_HEADER_SIZE:] == first[BATCH_HEADER_SIZE:]  # same compressed records
    batch = read_record_batches(second)[0]  # and a valid CRC
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (77, 1, 500)
    assert (builder.producer_id, builder.producer_epoch, builder.base_sequence) == (77, 1, 500)
    assert [r.key for r in batch.records] == [b"k%d" % i for i in range(100)]


@pytest.mark.parametrize(
    ("producer_id", "producer_epoch", "base_sequence", "name"),
    [
        (1 << 63, 0, 0, "producer_id"),
        (0, 1 << 15, 0, "producer_epoch"),
        (0, 0, 1 << 31, "base_sequence"),
    ],
)
def test_producer_state_out_of_range_is_refused(
    producer_id: int, producer_epoch: int, base_sequence: int, name: str
) -> None:
    with pytest.raises(ValueError, match=name):
        RecordBatchBuilder().set_producer_state(producer_id, producer_epoch, base_sequence)


# -------------------------------------------------------------------------- size limits


def fill(builder: RecordBatchBuilder, value_size: int = 100) -> int:
    count = 0
    while builder.append(BASE_TS + count, os.urandom(10), os.urandom(value_size)) is not None:
        count += 1
    return count


@pytest.mark.parametrize("limit", [1024, 16384, 65536])
def test_a_batch_fills_to_within_one_record_of_its_limit(limit: int) -> None:
    builder = RecordBatchBuilder(batch_size_limit=limit)
    count = fill(builder)
    size = len(builder.build())
    assert size <= limit
    # One more 110-byte record (encoded in at most 10 more bytes) would not have fitted.
    assert size + 110 + 10 > limit
    assert len(read_record_batches(builder.build())[0].records) == count == len(builder)


@pytest.mark.parametrize("value_size", [1, 600])
def test_a_record_refused_for_its_size_closes_the_batch_for_appends(value_size: int) -> None:
    # 1-byte values are refused close to the limit (the exact check), 600-byte ones far from
    # it (the bound alone). Either way the batch then refuses every record at once, as Java's
    # accumulator closes a batch that refused one: later sends go straight to a new batch.
    builder = RecordBatchBuilder(batch_size_limit=1000)
    count = 0
    while builder.append(BASE_TS, None, b"v" * value_size) is not None:
        count += 1
    assert builder.is_closed and builder.is_full
    assert builder.append(BASE_TS, None, b"") is None
    assert builder.append_many([None], [b""], BASE_TS) == 0
    records = read_record_batches(builder.build())[0].records
    assert len(records) == count == len(builder)


def test_the_first_record_always_fits() -> None:
    builder = RecordBatchBuilder(batch_size_limit=1000)
    assert builder.append(BASE_TS, None, bytes(5000)) == 0
    assert builder.append(BASE_TS, None, b"x") is None
    assert builder.is_full
    assert len(builder.build()) > 5000


def test_append_returns_offset_deltas() -> None:
    builder = RecordBatchBuilder()
    assert [builder.append(BASE_TS, None, b"v") for _ in range(3)] == [0, 1, 2]
    assert builder.append_many([None] * 2, [b"a", b"b"], BASE_TS) == 2
    assert builder.append(BASE_TS, b"k", b"v", [("h", None)]) == 5


def test_estimate_is_an_upper_bound_until_sealed_then_exact() -> None:
    builder = RecordBatchBuilder(batch_size_limit=1 << 20)
    for i in range(50):
        builder.append(BASE_TS + i, os.urandom(10), os.urandom(100), [("h", b"x")])
    estimate = builder.estimated_size_in_bytes
    size = len(builder.build())
    assert size <= estimate
    assert builder.estimated_size_in_bytes == size
    assert builder.uncompressed_records_size == size - BATCH_HEADER_SIZE


def test_compression_ratio_estimate_lets_more_records_in() -> None:
    plain = RecordBatchBuilder(compression=CompressionType.LZ4, batch_size_limit=16384)
    hopeful = RecordBatchBuilder(
        compression=CompressionType.LZ4, batch_size_limit=16384, estimated_compression_ratio=0.5
    )
    for builder in (plain, hopeful):
        while builder.append(BASE_TS, None, b"a very compressible value " * 4) is not None:
            pass
    assert len(hopeful) > 1.8 * len(plain)
    assert hopeful.estimated_size_in_bytes <= 16384 + 200


@pytest.mark.parametrize("mixed", [False, True], ids=["plain", "nulls-headers-big-fields"])
@pytest.mark.parametrize("limit", [1024, 16384, 65536])
def test_append_many_fills_batches_exactly_as_appends_do(mixed: bool, limit: int) -> None:
    if mixed:
        records = mixed_records(400, seed=limit)
    else:
        records = [(BASE_TS + i, os.urandom(10), os.urandom(100), []) for i in range(3000)]
    count = len(records)
    timestamps = [r[0] for r in records]
    keys = [r[1] for r in records]
    values = [r[2] for r in records]
    headers: list[Headers | None] = [r[3] for r in records]
    read_back: list[bytes | None] = []
    start = 0
    while start < count:
        builder = RecordBatchBuilder(batch_size_limit=limit)
        taken = builder.append_many(keys, values, timestamps, headers, start=start)
        assert taken > 0
        single = RecordBatchBuilder(batch_size_limit=limit)
        for i in range(start, count):
            if single.append(timestamps[i], keys[i], values[i], headers[i]) is None:
                break
        assert taken == len(single)
        data = builder.build()
        assert data == single.build()
        assert len(data) <= limit or taken == 1
        read_back += [r.value for r in read_record_batches(data)[0].records]
        start += taken
    assert read_back == values


def test_append_many_after_appends_and_on_a_full_batch() -> None:
    builder = RecordBatchBuilder(batch_size_limit=2000)
    builder.append(BASE_TS, b"first", b"x" * 100)
    taken = builder.append_many([b"k"] * 100, [b"y" * 100] * 100, BASE_TS + 1)
    assert 0 < taken < 100
    assert builder.append_many([b"k"], [b"y" * 100], BASE_TS) == 0
    assert builder.append(BASE_TS, b"k", b"y" * 100) is None
    records = read_record_batches(builder.build())[0].records
    assert [r.offset for r in records] == list(range(1 + taken))


def test_append_many_first_record_always_fits() -> None:
    builder = RecordBatchBuilder(batch_size_limit=100)
    assert builder.append_many([None, None], [bytes(500), b"x"], BASE_TS) == 1


def test_append_many_checks_its_arguments() -> None:
    builder = RecordBatchBuilder()
    with pytest.raises(ValueError, match="same length"):
        builder.append_many([None], [b"a", b"b"], BASE_TS)
    with pytest.raises(ValueError, match="one per record"):
        builder.append_many([None], [b"a"], [BASE_TS, BASE_TS])
    with pytest.raises(ValueError, match="start"):
        builder.append_many([None], [b"a"], BASE_TS, start=2)
    with pytest.raises(TypeError, match="timestamp must be int"):
        builder.append_many([None], [b"a"], [1.5])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="value must be bytes"):
        builder.append_many([None], ["text"], BASE_TS)  # type: ignore[list-item]


def test_record_too_large_for_any_batch() -> None:
    builder = RecordBatchBuilder()

    class Huge(bytes):
        def __len__(self) -> int:
            return 1 << 31

    with pytest.raises(RecordTooLargeError):
        builder.append(BASE_TS, None, Huge(b"x"))


# --------------------------------------------------------------------------- lifecycle


def test_closed_and_sealed_batches_refuse_appends() -> None:
    builder = RecordBatchBuilder()
    builder.append(BASE_TS, None, b"v")
    builder.close_for_appends()
    assert builder.is_closed and builder.is_full and not builder.is_sealed
    assert builder.append(BASE_TS, None, b"v") is None
    assert builder.append_many([None], [b"v"], BASE_TS) == 0
    builder.seal()
    assert builder.is_sealed
    assert len(builder) == 1


def test_an_empty_batch_cannot_be_sealed() -> None:
    with pytest.raises(IllegalStateError, match="without records"):
        RecordBatchBuilder().build()


def test_sealing_releases_the_records() -> None:
    value = bytearray(b"mutable")
    builder = RecordBatchBuilder()
    builder.append(BASE_TS, None, value)  # type: ignore[arg-type]
    value[:] = b"changed"  # copied at append: later changes do not reach the batch
    builder.seal()
    assert read_record_batches(builder.build())[0].records[0].value == b"mutable"


def test_memoryview_values_are_copied_by_bytes_not_elements() -> None:
    wide = memoryview(bytes(range(8))).cast("I")  # 2 elements of 4 bytes
    builder = RecordBatchBuilder()
    builder.append(BASE_TS, wide, wide)  # type: ignore[arg-type]
    record = read_record_batches(builder.build())[0].records[0]
    assert record.key == record.value == bytes(range(8))


@pytest.mark.parametrize(
    ("key", "value", "headers", "message"),
    [
        ("text", b"v", None, "key must be bytes"),
        (None, "text", None, "value must be bytes"),
        (None, b"v", [(b"k", b"v")], "header key must be str"),
        (None, b"v", [("k", "v")], "header value must be bytes"),
    ],
)
def test_wrong_types_are_refused_at_append(
    key: object, value: object, headers: object, message: str
) -> None:
    with pytest.raises(TypeError, match=message):
        RecordBatchBuilder().append(BASE_TS, key, value, headers)  # type: ignore[arg-type]


def test_non_int_timestamps_are_refused_at_append() -> None:
    with pytest.raises(TypeError, match="timestamp"):
        RecordBatchBuilder().append(1.5, None, b"v")  # type: ignore[arg-type]


def test_timestamps_outside_int64_fail_at_seal() -> None:
    builder = RecordBatchBuilder()
    builder.append(1 << 63, None, b"v")
    with pytest.raises(ValueError, match="timestamp"):
        builder.seal()


def test_constructor_checks_its_limits() -> None:
    with pytest.raises(ValueError, match="batch_size_limit"):
        RecordBatchBuilder(batch_size_limit=10)
    with pytest.raises(ValueError, match="estimated_compression_ratio"):
        RecordBatchBuilder(estimated_compression_ratio=0.0)
    with pytest.raises(ValueError, match="base_offset"):
        RecordBatchBuilder(base_offset=1 << 63)


def test_build_record_batch_holds_everything_given() -> None:
    values: list[bytes | None] = [os.urandom(1000) for _ in range(200)]
    data = build_record_batch([None] * 200, values, BASE_TS, compression=CompressionType.LZ4)
    (batch,) = read_record_batches(data)
    assert [r.value for r in batch.records] == values
    assert batch.compression is CompressionType.LZ4


class Millis:
    """An integer-like timestamp, as numpy's int64 is."""

    def __init__(self, value: int) -> None:
        self.value = value

    def __index__(self) -> int:
        return self.value


def test_integer_like_timestamps_are_accepted_floats_are_not() -> None:
    builder = RecordBatchBuilder()
    builder.append(Millis(BASE_TS), None, b"a")  # type: ignore[arg-type]
    builder.append_many([None], [b"b"], [Millis(BASE_TS + 1)])  # type: ignore[list-item]
    records = read_record_batches(builder.build())[0].records
    assert [r.timestamp for r in records] == [BASE_TS, BASE_TS + 1]
    with pytest.raises(TypeError, match="timestamp must be int"):
        RecordBatchBuilder().append_many([None], [b"b"], [float(BASE_TS)])  # type: ignore[list-item]


def test_build_buffer_is_build_in_place_and_never_changes_once_returned() -> None:
    for codec in (CompressionType.NONE, CompressionType.ZSTD, CompressionType.LZ4):
        builder = RecordBatchBuilder(compression=codec, batch_size_limit=4096)
        for i in range(20):
            builder.append(1_700_000_000_000 + i, b"k%d" % i, b"v" * i)
        first = builder.build_buffer()
        snapshot = bytes(first)
        assert snapshot == builder.build()
        assert builder.build_buffer() is first  # cached
        builder.set_producer_state(7, 1, 40)  # a retry with a sequence: the header changes
        second = builder.build_buffer()
        assert bytes(first) == snapshot  # what was returned before is left as it was
        (batch,) = read_record_batches(bytes(second))
        assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (7, 1, 40)
        assert [r.value for r in batch.records] == [b"v" * i for i in range(20)]
        assert bytes(second) == builder.build()


def test_large_records_kept_as_pieces_encode_the_same_bytes() -> None:
    from kafkaline.record.record_encoder import encode_records

    rng = random.Random(5)
    keys = [rng.randbytes(rng.randint(0, 40)) for _ in range(12)]
    values = [rng.randbytes(rng.randint(1500, 9000)) for _ in range(12)]
    builder = RecordBatchBuilder(batch_size_limit=1 << 20)
    for i in range(12):
        assert builder.append(1_000 + i, keys[i], values[i]) == i
    (batch,) = read_record_batches(builder.build())
    assert [(r.key, r.value) for r in batch.records] == list(zip(keys, values, strict=True))
    expected = encode_records(keys, values, [1_000 + i for i in range(12)])
    assert builder.build().endswith(expected)


def test_a_record_whose_bound_is_over_but_exact_size_fits_goes_in() -> None:
    assert fill(RecordBatchBuilder(batch_size_limit=65536), value_size=10_000) == 6
    # 2 x ~117 bytes fit 240; 2 x (110 + RECORD_OVERHEAD_BOUND) would not.
    tight = RecordBatchBuilder(batch_size_limit=BATCH_HEADER_SIZE + 2 * 120)
    assert tight.append(BASE_TS, None, bytes(110)) == 0
    assert tight.append(BASE_TS, None, bytes(110)) == 1
    assert len(tight.build()) <= BATCH_HEADER_SIZE + 240


def test_batch_size_limit_may_be_passed_by_position() -> None:
    assert RecordBatchBuilder(2048).size_limit == 2048
    assert RecordBatchBuilder(batch_size_limit=2048).size_limit == 2048
    with pytest.raises(ValueError, match="batch_size_limit"):
        RecordBatchBuilder(BATCH_HEADER_SIZE)
