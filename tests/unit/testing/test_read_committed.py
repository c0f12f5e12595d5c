"""The read_committed reader against hand-built logs: data batches from our record builder,
control batches with commit and abort markers, decoded by our reader as a fetch would."""

from __future__ import annotations

from kafkaline.record import RecordBatchBuilder, build_record_batch, read_record_batches
from kafkaline.record.control import encode_transaction_marker
from kafkaline.testing.read_committed import CommittedLog, apply_read_committed

TS = 1_700_000_000_000


class LogBuilder:
    """A partition's log built batch by batch, offsets assigned as a broker would."""

    def __init__(self) -> None:
        self.wire = b""
        self.offset = 0

    def data(self, *values: bytes, pid: int = -1, epoch: int = -1) -> LogBuilder:
        transactional = pid >= 0
        self.wire += build_record_batch(
            [None] * len(values),
            list(values),
            TS,
            base_offset=self.offset,
            producer_id=pid,
            producer_epoch=epoch if transactional else -1,
            base_sequence=0 if transactional else -1,
            is_transactional=transactional,
        )
        self.offset += len(values)
        return self

    def marker(self, commit: bool, pid: int, epoch: int = 0) -> LogBuilder:
        key, value = encode_transaction_marker(commit, coordinator_epoch=3)
        builder = RecordBatchBuilder(
            is_transactional=True, is_control=True, base_offset=self.offset
        )
        builder.append(TS, key, value)
        builder.set_producer_state(pid, epoch, -1)
        self.wire += builder.build()
        self.offset += 1
        return self

    def view(self) -> CommittedLog:
        return CommittedLog("t", {0: apply_read_committed(read_record_batches(self.wire))})


def test_non_transactional_records_count_at_once() -> None:
    log = LogBuilder().data(b"a", b"b").data(b"c").view()
    assert log.committed_values() == [b"a", b"b", b"c"]
    assert log.open_producer_ids() == set()


def test_a_transaction_counts_only_after_its_commit_marker() -> None:
    builder = LogBuilder().data(b"t1", b"t2", pid=7, epoch=0)
    assert builder.view().committed_values() == []
    assert builder.view().open_producer_ids() == {7}
    assert builder.view().open_values() == [b"t1", b"t2"]
    log = builder.marker(True, pid=7).view()
    assert log.committed_values() == [b"t1", b"t2"]
    assert log.open_producer_ids() == set()
    assert log.counts() == {
        "committed": 2,
        "aborted": 0,
        "open": 0,
        "commit_markers": 1,
        "abort_markers": 0,
    }


def test_aborted_records_are_never_seen() -> None:
    log = LogBuilder().data(b"x", pid=7).marker(False, pid=7).data(b"y", pid=7).view()
    assert log.committed_values() == []
    assert log.aborted_values() == [b"x"]
    assert log.open_values() == [b"y"]  # a new transaction of the same producer, still open


def test_interleaved_producers_end_independently() -> None:
    log = (
        LogBuilder()
        .data(b"a1", pid=1)
        .data(b"b1", pid=2)
        .data(b"plain")
        .data(b"a2", pid=1)
        .marker(False, pid=2)
        .data(b"b2", pid=2)
        .marker(True, pid=1)
        .marker(True, pid=2)
        .view()
    )
    # Committed records appear when their marker comes: plain first, then a's, then b2.
    assert log.committed_values() == [b"plain", b"a1", b"a2", b"b2"]
    assert log.aborted_values() == [b"b1"]
    assert log.open_producer_ids() == set()


def test_a_marker_with_a_bumped_epoch_ends_the_older_epochs_records() -> None:
    # Fencing: the coordinator aborts the open transaction with the new epoch.
    log = LogBuilder().data(b"zombie", pid=4, epoch=0).marker(False, pid=4, epoch=1).view()
    assert log.aborted_values() == [b"zombie"]
    assert log.open_producer_ids() == set()


def test_a_marker_of_another_producer_does_not_commit_ours() -> None:
    log = LogBuilder().data(b"mine", pid=1).marker(True, pid=2).view()
    assert log.committed_values() == []
    assert log.open_values() == [b"mine"]
