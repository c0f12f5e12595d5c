"""Reader: concatenated and truncated batches, CRC, control records, timestamps, legacy magic."""

from __future__ import annotations

import struct

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder

from kafkaline.errors import CorruptRecordError, DecodeError, UnsupportedCodecError
from kafkaline.record import (
    CompressionType,
    RecordBatchBuilder,
    TimestampType,
    build_record_batch,
    crc32c,
    iter_record_batches,
    read_record_batches,
)
from kafkaline.record.batch_format import BATCH_HEADER_SIZE
from kafkaline.record.control import (
    ControlRecordType,
    decode_control_record,
    encode_transaction_marker,
)
from kafkaline.record.varint import encode_varint

BASE_TS = 1_700_000_000_000


def batch(
    count: int, *, base_offset: int = 0, codec: int = CompressionType.NONE, first: int = 0
) -> bytes:
    return build_record_batch(
        [b"k%d" % (first + i) for i in range(count)],
        [b"v%d" % (first + i) for i in range(count)],
        [BASE_TS + i for i in range(count)],
        base_offset=base_offset,
        compression=codec,
    )


def with_crc(data: bytes) -> bytes:
    """``data`` with its CRC recomputed, to reach the checks behind the CRC."""
    return data[:17] + struct.pack(">I", crc32c(data[21:])) + data[21:]


def test_several_concatenated_batches_with_offsets_from_their_base() -> None:
    data = (
        batch(3)
        + batch(2, base_offset=3, codec=CompressionType.ZSTD, first=3)
        + batch(1, base_offset=5)
    )
    batches = read_record_batches(data)
    assert [b.base_offset for b in batches] == [0, 3, 5]
    records = [r for b in batches for r in b.records]
    assert [r.offset for r in records] == list(range(6))
    assert [r.key for r in records] == [b"k0", b"k1", b"k2", b"k3", b"k4", b"k0"]
    assert [b.next_offset for b in batches] == [3, 5, 6]
    assert sum(b.size_in_bytes for b in batches) == len(data)


@pytest.mark.parametrize("codec", list(CompressionType), ids=lambda c: c.name)
def test_compressed_batches(codec: CompressionType) -> None:
    (decoded,) = read_record_batches(batch(500, codec=codec))
    assert decoded.compression is codec
    assert [r.value for r in decoded.records] == [b"v%d" % i for i in range(500)]
    assert [r.timestamp for r in decoded.records] == [BASE_TS + i for i in range(500)]


def test_header_fields() -> None:
    builder = RecordBatchBuilder(base_offset=1000, partition_leader_epoch=7, is_transactional=True)
    builder.append(BASE_TS + 10, None, b"a", [("h", None)])
    builder.append(BASE_TS, None, b"b")
    builder.set_producer_state(42, 3, 99)
    (decoded,) = read_record_batches(builder.build())
    assert (decoded.base_offset, decoded.partition_leader_epoch, decoded.magic) == (1000, 7, 2)
    assert (decoded.producer_id, decoded.producer_epoch, decoded.base_sequence) == (42, 3, 99)
    assert (decoded.base_timestamp, decoded.max_timestamp) == (BASE_TS + 10, BASE_TS + 10)
    assert (decoded.last_offset_delta, decoded.record_count) == (1, 2)
    assert decoded.is_transactional and not decoded.is_control
    assert decoded.timestamp_type is TimestampType.CREATE_TIME
    assert decoded.records[0].headers == (("h", None),)
    assert decoded.records[1].timestamp == BASE_TS  # a negative delta
    assert decoded.control_records == ()


def test_log_append_time_gives_every_record_the_batch_max_timestamp() -> None:
    builder = RecordBatchBuilder(
        timestamp_type=TimestampType.LOG_APPEND_TIME, log_append_time=BASE_TS + 5000
    )
    builder.append(BASE_TS, None, b"a")
    builder.append(BASE_TS + 1, None, b"b")
    (decoded,) = read_record_batches(builder.build())
    assert decoded.timestamp_type is TimestampType.LOG_APPEND_TIME
    assert [r.timestamp for r in decoded.records] == [BASE_TS + 5000] * 2


@pytest.mark.parametrize("commit", [True, False])
def test_control_batch_with_a_transaction_marker(commit: bool) -> None:
    key, value = encode_transaction_marker(commit, coordinator_epoch=17)
    assert key == struct.pack(">hh", 0, 1 if commit else 0)
    assert value == struct.pack(">hi", 0, 17)
    builder = RecordBatchBuilder(is_transactional=True, is_control=True, base_offset=10)
    builder.append(BASE_TS, key, value)
    builder.set_producer_state(5, 0, -1)
    (decoded,) = read_record_batches(builder.build())
    assert decoded.is_control and decoded.is_transactional
    (marker,) = decoded.control_records
    assert marker.is_commit is commit and marker.is_abort is not commit
    assert marker.type == (ControlRecordType.COMMIT if commit else ControlRecordType.ABORT)
    assert (marker.version, marker.coordinator_epoch) == (0, 17)
    assert decoded.records[0].offset == 10


def test_control_records_of_other_types_keep_their_type() -> None:
    marker = decode_control_record(struct.pack(">hh", 0, 3), b"anything")
    assert (marker.type, marker.coordinator_epoch) == (3, None)
    assert not marker.is_commit and not marker.is_abort


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        (None, b"\x00\x00\x00\x00\x00\x01", "key"),
        (b"\x00\x00\x00", b"\x00\x00\x00\x00\x00\x01", "key"),
        (b"\x00\x00\x00\x01", b"\x00\x00", "value"),
        (b"\x00\x00\x00\x00", None, "value"),
    ],
)
def test_malformed_control_records(key: bytes | None, value: bytes | None, message: str) -> None:
    builder = RecordBatchBuilder(is_control=True)
    builder.append(BASE_TS, key, value)
    with pytest.raises(CorruptRecordError, match=message):
        read_record_batches(builder.build())


# ------------------------------------------------------------------------- truncation


def test_a_truncated_last_batch_is_left_out_at_every_cut() -> None:
    first = batch(3)
    second = batch(4, base_offset=3, codec=CompressionType.LZ4)
    data = first + second
    for cut in range(len(first), len(data)):
        batches = read_record_batches(data[:cut])
        assert [b.base_offset for b in batches] == [0], cut
    for cut in range(len(first)):
        assert read_record_batches(data[:cut]) == [], cut
    assert len(read_record_batches(data)) == 2


def test_empty_input_has_no_batches() -> None:
    assert read_record_batches(b"") == []
    assert list(iter_record_batches(memoryview(b""))) == []


def test_records_cut_inside_a_batch_whose_length_fits_are_an_error() -> None:
    data = batch(5)
    # Shrink the declared length and cut the bytes to match: the batch "fits" but its last
    # record is cut short (the CRC is recomputed so the structure checks are reached).
    shorter = with_crc(data[:8] + struct.pack(">i", len(data) - 12 - 3) + data[12:-3])
    with pytest.raises(CorruptRecordError):
        read_record_batches(shorter)


def test_a_record_count_larger_than_the_records_is_an_error() -> None:
    data = batch(5)
    lying = with_crc(data[:57] + struct.pack(">i", 6) + data[61:])
    with pytest.raises(CorruptRecordError):
        read_record_batches(lying)


def test_a_huge_record_count_is_refused_before_looping() -> None:
    data = batch(1)
    lying = with_crc(data[:57] + struct.pack(">i", 2**31 - 1) + data[61:])
    with pytest.raises(CorruptRecordError, match="declares 2147483647 records"):
        read_record_batches(lying)


def test_bytes_left_after_the_records_are_an_error() -> None:
    data = batch(2)
    padded = with_crc(data[:8] + struct.pack(">i", len(data) - 12 + 2) + data[12:] + b"\x00\x00")
    with pytest.raises(CorruptRecordError, match="remain after"):
        read_record_batches(padded)


def test_a_lying_key_length_is_an_error_without_allocating_it() -> None:
    record = b"\x00\x00\x00" + encode_varint(2**31 - 1) + b"key" + b"\x01\x00"
    records = encode_varint(len(record)) + record
    data = build_record_batch([b"key"], [None], BASE_TS)
    forged = data[:8] + struct.pack(">i", BATCH_HEADER_SIZE - 12 + len(records))
    forged = with_crc(forged + data[12:BATCH_HEADER_SIZE] + records)
    with pytest.raises(CorruptRecordError):
        read_record_batches(forged)


def test_a_batch_length_below_any_format_is_an_error() -> None:
    data = batch(1)
    with pytest.raises(CorruptRecordError, match="below the minimum"):
        read_record_batches(data[:8] + struct.pack(">i", 3) + data[12:])
    with pytest.raises(CorruptRecordError, match="below the minimum"):
        read_record_batches(data[:8] + struct.pack(">i", -1) + data[12:])


def test_a_batch_length_below_the_v2_header_is_an_error() -> None:
    data = batch(1)
    with pytest.raises(CorruptRecordError, match="batch header"):
        read_record_batches(data[:8] + struct.pack(">i", 30) + data[12:42])


# --------------------------------------------------------------------------------- CRC


def test_crc_mismatch_names_expected_and_actual() -> None:
    data = bytearray(batch(3))
    data[-1] ^= 0xFF
    (stored,) = struct.unpack_from(">I", data, 17)
    actual = crc32c(bytes(data[21:]))
    with pytest.raises(CorruptRecordError) as caught:
        read_record_batches(bytes(data))
    assert f"expected 0x{stored:08x}" in str(caught.value)
    assert f"actual 0x{actual:08x}" in str(caught.value)


def test_crc_check_can_be_skipped() -> None:
    data = bytearray(batch(3))
    data[-2:] = b"x\x00"  # the last value's last byte changes, the structure does not
    assert read_record_batches(bytes(data), verify_crc=False)[0].records[2].value == b"vx"


def test_a_bit_flip_in_any_covered_byte_fails_the_crc() -> None:
    data = batch(2)
    for position in range(21, len(data)):
        flipped = bytearray(data)
        flipped[position] ^= 0x10
        with pytest.raises(CorruptRecordError, match="CRC"):
            read_record_batches(bytes(flipped))


# ------------------------------------------------------------------- unsupported input


@pytest.mark.parametrize("magic", [0, 1])
def test_legacy_message_sets_are_refused_by_name(magic: int) -> None:
    # A v0/v1 message: offset, size, crc, magic, attributes, (timestamp), key, value.
    body = struct.pack(">bb", magic, 0) + (struct.pack(">q", 0) if magic else b"")
    body += struct.pack(">ii", -1, 1) + b"v"
    message = struct.pack(">qi", 0, 4 + len(body)) + struct.pack(">I", 0) + body
    with pytest.raises(DecodeError, match=f"magic {magic}.*legacy"):
        read_record_batches(message)


def test_an_unknown_codec_in_a_batch_is_named() -> None:
    data = batch(1)
    (attributes,) = struct.unpack_from(">h", data, 21)
    forged = with_crc(data[:21] + struct.pack(">h", attributes | 0x06) + data[23:])
    with pytest.raises(UnsupportedCodecError, match="codec id 6"):
        read_record_batches(forged)


def test_a_decompression_bomb_is_capped() -> None:
    data = build_record_batch([None], [bytes(8 << 20)], BASE_TS, compression=CompressionType.ZSTD)
    assert len(data) < 10_000
    with pytest.raises(CorruptRecordError, match="allowed"):
        read_record_batches(data, max_decompressed_size=1 << 20)
    assert len(read_record_batches(data)[0].records[0].value or b"") == 8 << 20


# ------------------------------------------------------------------ other clients' bytes


@pytest.mark.parametrize("codec", [0, 1, 2, 3, 4], ids=["none", "gzip", "snappy", "lz4", "zstd"])
def test_reads_batches_built_by_kafka_python(codec: int) -> None:
    from kafka import codec as kafka_python_codec

    available = {2: kafka_python_codec.has_snappy, 3: kafka_python_codec.has_lz4,
                 4: kafka_python_codec.has_zstd}.get(codec)  # fmt: skip
    if available is not None and not available():
        pytest.skip("kafka-python lacks this codec's library")
    builder = DefaultRecordBatchBuilder(2, codec, False, 9, 1, 5, batch_size=1 << 30)
    for i in range(300):
        headers = [("h", b"%d" % i), ("n", None)] if i % 2 else []
        builder.append(i, BASE_TS - i, b"k%d" % i if i % 3 else None, b"v%d" % i * 10, headers)
    (decoded,) = read_record_batches(bytes(builder.build()))
    assert decoded.compression == codec
    assert (decoded.producer_id, decoded.producer_epoch, decoded.base_sequence) == (9, 1, 5)
    for i, record in enumerate(decoded.records):
        assert record.offset == i
        assert record.timestamp == BASE_TS - i
        assert record.key == (b"k%d" % i if i % 3 else None)
        assert record.value == b"v%d" % i * 10
        assert record.headers == ((("h", b"%d" % i), ("n", None)) if i % 2 else ())
