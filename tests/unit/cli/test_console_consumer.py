"""The console consumer's pure parts: read_committed from control batches, the formatter."""

from __future__ import annotations

import pytest

from kafkaline.cli.console_consumer import (
    MessageFormat,
    ReadUncommitted,
    TransactionFilter,
    visible_records,
)
from kafkaline.cli.errors import UsageError
from kafkaline.record import (
    ControlRecordType,
    Record,
    RecordBatch,
    RecordBatchBuilder,
    read_record_batches,
)
from kafkaline.record.control import encode_transaction_marker


def data_batch(base: int, values: list[bytes], producer_id: int = -1) -> RecordBatch:
    transactional = producer_id >= 0
    builder = RecordBatchBuilder(
        base_offset=base, producer_id=producer_id, producer_epoch=0 if transactional else -1,
        base_sequence=0 if transactional else -1, is_transactional=transactional,
    )  # fmt: skip
    for value in values:
        builder.append(1000, None, value, [])
    [batch] = read_record_batches(builder.build())
    return batch


def marker(base: int, producer_id: int, kind: ControlRecordType) -> RecordBatch:
    builder = RecordBatchBuilder(
        base_offset=base, producer_id=producer_id, producer_epoch=0, base_sequence=-1,
        is_transactional=True, is_control=True,
    )  # fmt: skip
    key, value = encode_transaction_marker(kind == ControlRecordType.COMMIT, 0)
    builder.append(1000, key, value, [])
    [batch] = read_record_batches(builder.build())
    return batch


def values(records: list[Record]) -> list[bytes | None]:
    return [record.value for record in records]


def test_committed_records_come_out_at_the_commit_in_offset_order() -> None:
    reader = TransactionFilter()
    assert reader.add(data_batch(0, [b"t1", b"t2"], producer_id=7)) == []
    # A plain record after the open transaction waits too (the last stable offset).
    assert reader.add(data_batch(2, [b"plain"])) == []
    released = reader.add(marker(3, 7, ControlRecordType.COMMIT))
    assert values(released) == [b"t1", b"t2", b"plain"]


def test_aborted_records_are_dropped() -> None:
    reader = TransactionFilter()
    reader.add(data_batch(0, [b"gone"], producer_id=7))
    reader.add(data_batch(1, [b"kept"], producer_id=8))
    assert values(reader.add(marker(2, 7, ControlRecordType.ABORT))) == []
    assert values(reader.add(marker(3, 8, ControlRecordType.COMMIT))) == [b"kept"]
    assert values(reader.add(data_batch(4, [b"after"]))) == [b"after"]


def test_read_uncommitted_shows_everything_but_markers() -> None:
    reader = ReadUncommitted()
    assert values(reader.add(data_batch(0, [b"a"], producer_id=7))) == [b"a"]
    assert reader.add(marker(1, 7, ControlRecordType.ABORT)) == []


def test_records_before_the_start_offset_are_not_shown_but_held_ones_are() -> None:
    reader = TransactionFilter()
    reader.add(data_batch(0, [b"t0"], producer_id=7))
    shown = visible_records(
        [data_batch(1, [b"p1", b"p2"]), marker(3, 7, ControlRecordType.COMMIT)], 2, reader
    )
    assert [(record.value, kind) for record, kind in shown] == [
        (b"t0", "CreateTime"),
        (b"p2", "CreateTime"),
    ]


def test_the_formatter_prints_the_java_tools_fields_in_its_order() -> None:
    fmt = MessageFormat.from_properties(
        {
            "print.timestamp": "true",
            "print.partition": "true",
            "print.offset": "true",
            "print.headers": "true",
            "print.key": "true",
            "key.separator": "|",
        }
    )
    record = Record(5, 1000, None, b"v", (("h", b"1"), ("n", None)))
    assert fmt.render(2, record, "CreateTime") == (
        b"CreateTime:1000|Partition:2|Offset:5|h:1,n:null|null|v\n"
    )


def test_separators_take_shell_escapes() -> None:
    fmt = MessageFormat.from_properties({"print.key": "true", "key.separator": "\\t"})
    assert fmt.render(0, Record(0, 0, b"k", b"v", ()), "CreateTime") == b"k\tv\n"


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("print.keys", "true", "not a formatter property"),
        ("print.key", "yes", "must be true or false"),
    ],
)
def test_bad_formatter_properties_are_refused(name: str, value: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        MessageFormat.from_properties({name: value})
