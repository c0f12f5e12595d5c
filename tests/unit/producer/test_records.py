"""ProducerRecord and RecordMetadata: what they check and carry."""

from __future__ import annotations

import dataclasses
import pickle

import pytest

from kafkaline.producer.partitioner import InvalidPartitionError
from kafkaline.producer.record import ProducerRecord
from kafkaline.producer.record_metadata import RecordMetadata


def test_record_defaults_and_headers_are_kept_as_a_tuple() -> None:
    headers = [("trace", b"1"), ("empty", None)]
    record: ProducerRecord[bytes, bytes] = ProducerRecord("events", b"v", headers=headers)
    headers.append(("late", b"x"))
    assert record.headers == (("trace", b"1"), ("empty", None))
    assert (record.key, record.partition, record.timestamp_ms) == (None, None, None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.value = b"w"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"topic": ""}, ValueError, "topic='' is invalid: must be a non-empty string"),
        ({"partition": -1}, InvalidPartitionError, "partition=-1 is invalid"),
        ({"partition": True}, InvalidPartitionError, "partition=True is invalid"),
        ({"timestamp_ms": -1}, ValueError, "timestamp_ms=-1 is invalid"),
        ({"headers": [("h", "text")]}, TypeError, "must be a (str, bytes or None) pair"),
        ({"headers": [(b"h", b"v")]}, TypeError, "must be a (str, bytes or None) pair"),
    ],
)
def test_record_checks_what_java_checks(
    kwargs: dict[str, object], error: type[Exception], message: str
) -> None:
    arguments: dict[str, object] = {"topic": "events", "value": b"v", **kwargs}
    with pytest.raises(error) as caught:
        ProducerRecord(**arguments)  # type: ignore[arg-type]
    assert message in str(caught.value)


def test_record_metadata_is_a_named_tuple() -> None:
    metadata = RecordMetadata("events", 2, 41, 1_700_000_000_000, 6, -1)
    assert metadata.serialized_value_size == -1
    assert metadata.has_offset() and metadata.has_timestamp()
    assert not RecordMetadata("events", 2, -1, -1, -1, -1).has_offset()
    assert not RecordMetadata("events", 2, -1, -1, -1, -1).has_timestamp()
    assert tuple(metadata) == ("events", 2, 41, 1_700_000_000_000, 6, -1)


def test_records_and_metadata_survive_pickling() -> None:
    record: ProducerRecord[bytes, bytes] = ProducerRecord("t", b"v", b"k", [("h", b"1")], 2, 5)
    assert pickle.loads(pickle.dumps(record)) == record
    metadata = RecordMetadata("t", 2, 41, 5, 1, 1)
    assert pickle.loads(pickle.dumps(metadata)) == metadata
