"""The records the accumulator's append protocol appends: their size bounds."""

from __future__ import annotations

import pytest

from kafkaline.producer.pending_records import OneRecord, record_size_bound
from kafkaline.record import Headers
from kafkaline.record.batch_format import BATCH_HEADER_SIZE


@pytest.mark.parametrize(
    ("key", "value", "headers"),
    [
        (b"key", b"v" * 100, None),
        (None, b"v" * 100, None),
        (b"key", None, None),
        (None, None, None),
        (b"", b"", None),
        (bytearray(b"key"), b"v", None),
        (b"key", memoryview(b"v" * 10), None),
        (b"key", b"v", [("h", b"x" * 20)]),
        (b"key", b"v", []),
    ],
)
def test_one_record_bounds_its_size_as_record_size_bound_does(
    key: bytes | None, value: bytes | None, headers: Headers | None
) -> None:
    record = OneRecord(0, key, value, headers)
    assert record.size_bound() == BATCH_HEADER_SIZE + record_size_bound(key, value, headers)
    assert not record.fills_batch and not record.done


def test_one_record_names_a_bad_value_type() -> None:
    with pytest.raises(TypeError, match="record value must be bytes or None, not str"):
        OneRecord(0, None, "text", None)  # type: ignore[arg-type]
