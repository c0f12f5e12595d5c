"""ProducerBatch: a batch holding pre-encoded records (the bulk paths' ``append_encoded``)
splits, retries and counts like any other."""

from __future__ import annotations

import pytest

from kafkaline.net.cluster import TopicPartition
from kafkaline.producer.batch import ProducerBatch
from kafkaline.producer.futures import SPLIT, FutureRecordMetadata
from kafkaline.record import CompressionType, read_record_batches
from kafkaline.record.record_encoder import encode_records

TP = TopicPartition("events", 0)
TS = 1_700_000_000_000


def _pre_encoded(batch: ProducerBatch, values: list[bytes]) -> list[FutureRecordMetadata]:
    """Add ``values`` (key ``b"k"``, timestamps TS, TS + 1 ...) as a bulk path does: encoded
    by the caller, handed to the builder in one piece; return futures for them."""
    state = batch.builder.open_state()
    first, base = (0, TS) if state is None else (state[1], state[2])
    timestamps = [TS + first + i for i in range(len(values))]
    chunk = encode_records(
        [b"k"] * len(values), values, timestamps, base_timestamp=base, first_offset_delta=first
    )
    batch.builder.append_encoded([chunk], len(values), timestamps[0], timestamps[-1])
    return [
        FutureRecordMetadata(batch.result, first + i, 1, len(value), timestamps[i])
        for i, value in enumerate(values)
    ]


@pytest.mark.parametrize("codec", [CompressionType.NONE, CompressionType.GZIP])
def test_a_split_of_pre_encoded_and_appended_records_keeps_them_and_their_futures(
    codec: CompressionType,
) -> None:
    batch = ProducerBatch(TP, created_ms=0.0, batch_size=64 * 1024, compression=codec)
    values = [bytes([i]) * 150 for i in range(30)]
    futures = _pre_encoded(batch, values[:12])
    # A send() after a bulk call: appended one at a time behind the pre-encoded records.
    for i in range(12, 18):
        future = batch.try_append(TS + i, b"k", values[i])
        assert future is not None
        futures.append(future)
    futures += _pre_encoded(batch, values[18:])
    assert batch.record_count == 30
    batch.set_producer_state(producer_id=5, producer_epoch=1, base_sequence=100)
    batch.close()
    parts = batch.split(1024)  # MESSAGE_TOO_LARGE: the records are read back from the batch
    assert len(parts) > 3 and batch.final_state is SPLIT
    assert sum(p.record_count for p in parts) == 30
    records = [r for p in parts for r in read_record_batches(p.build())[0].records]
    assert [r.value for r in records] == values
    assert [r.timestamp for r in records] == [TS + i for i in range(30)]
    assert {r.key for r in records} == {b"k"}
    sequence = 100
    for part in parts:
        assert part.builder.base_sequence == sequence
        sequence += part.record_count
    offset = 500
    for part in parts:
        part.done(offset)
        offset += part.record_count
    assert [f.get(0).offset for f in futures] == list(range(500, 530))


def test_a_batch_of_pre_encoded_records_is_rebuilt_for_a_retry_with_its_count() -> None:
    batch = ProducerBatch(TP, created_ms=0.0, batch_size=64 * 1024)
    futures = _pre_encoded(batch, [b"a", b"bb", b"ccc"])
    batch.close()
    first = bytes(batch.build())
    batch.set_producer_state(producer_id=9, producer_epoch=0, base_sequence=7)  # a retry
    (decoded,) = read_record_batches(batch.build())
    assert decoded.record_count == batch.record_count == 3
    assert decoded.base_sequence == 7
    assert [r.value for r in decoded.records] == [b"a", b"bb", b"ccc"]
    assert first[-20:] == bytes(batch.build())[-20:]  # the records, not re-encoded
    batch.done(10)
    assert [f.get(0).offset for f in futures] == [10, 11, 12]
