"""The exactly-once sink's driver protocol without Spark or a broker: options, the ids it
fences, the state file, and the committer against fake complete/fence functions that record
what a coordinator would have done."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkaline import ConfigError
from kafkaline.spark.exactly_once import (
    CommitState,
    ExactlyOnceOptions,
    FileStateStore,
    SinkTransaction,
    TaskTransaction,
    TransactionCommitter,
    leftover_ids,
    transactional_id,
)


def test_at_least_once_is_the_default() -> None:
    assert ExactlyOnceOptions.parse({"topic": "t"}, streaming=False) is None
    assert ExactlyOnceOptions.parse({"deliveryGuarantee": "at-least-once"}, False) is None


def test_unknown_guarantee_and_stray_options_are_named() -> None:
    with pytest.raises(ConfigError, match=r"deliveryGuarantee.*'exactly_once'"):
        ExactlyOnceOptions.parse({"deliveryGuarantee": "exactly_once"}, False)
    with pytest.raises(ConfigError, match="'transactionalIdPrefix' needs"):
        ExactlyOnceOptions.parse({"transactionalIdPrefix": "p"}, False)
    with pytest.raises(ConfigError, match=r"kafka\.transactional\.id"):
        ExactlyOnceOptions.parse(
            {"deliveryGuarantee": "exactly-once", "kafka.transactional.id": "x"}, False
        )


def test_batch_writes_get_a_prefix_of_their_own() -> None:
    first = ExactlyOnceOptions.parse({"deliveryGuarantee": "exactly-once"}, False)
    second = ExactlyOnceOptions.parse({"deliveryGuarantee": "exactly-once"}, False)
    assert first is not None and second is not None
    assert first.prefix != second.prefix and first.prefix.startswith("kafkaline-")
    assert first.state_location is None


def test_streaming_prefix_and_state_follow_the_checkpoint(tmp_path: Path) -> None:
    options = {"deliveryguarantee": "EXACTLY-ONCE", "checkpointLocation": str(tmp_path / "cp")}
    first = ExactlyOnceOptions.parse(options, streaming=True)
    again = ExactlyOnceOptions.parse(options, streaming=True)
    assert first == again and first is not None
    assert first.state_location == str(tmp_path / "cp" / "kafkaline-sink")
    other = ExactlyOnceOptions.parse({**options, "checkpointLocation": "/elsewhere"}, True)
    assert other is not None and other.prefix != first.prefix
    named = ExactlyOnceOptions.parse({**options, "transactionalIdPrefix": "orders/eu"}, True)
    assert named is not None and named.prefix == "orders_eu"


def test_streaming_without_a_durable_place_is_refused() -> None:
    with pytest.raises(ConfigError, match="checkpointLocation"):
        ExactlyOnceOptions.parse({"deliveryGuarantee": "exactly-once"}, streaming=True)
    with pytest.raises(ConfigError, match="transactionStateLocation"):
        ExactlyOnceOptions.parse(
            {"deliveryGuarantee": "exactly-once", "checkpointLocation": "s3a://b/cp"}, True
        )
    given = ExactlyOnceOptions.parse(
        {
            "deliveryGuarantee": "exactly-once",
            "checkpointLocation": "s3a://b/cp",
            "transactionStateLocation": "/mnt/state",
        },
        True,
    )
    assert given is not None and given.state_location == "/mnt/state"


def task(partition: int, attempt: int, pid: int | None = None) -> TaskTransaction:
    name = transactional_id("p", partition, attempt)
    transaction = None if pid is None else SinkTransaction(name, pid, 0)
    return TaskTransaction(partition, attempt, transaction)


def test_leftover_ids_cover_other_attempts_but_never_the_chosen_ones() -> None:
    tasks = [task(0, 0, 10), task(1, 5, 11), None]
    ids = leftover_ids("p", tasks, 3)
    assert "p-0-0" not in ids and "p-1-5" not in ids
    assert {"p-0-1", "p-0-3", "p-1-4", "p-1-6", "p-1-7", "p-2-0"} <= set(ids)
    # Attempts 0..5+2 for every partition, but the two chosen ones.
    assert len(ids) == 3 * 8 - 2


class FakeCluster:
    """What the coordinator did, in order: ("commit"|"abort", id) and ("fence", id)."""

    def __init__(self, fail_commit_after: int | None = None) -> None:
        self.calls: list[tuple[str, str]] = []
        self.fail_commit_after = fail_commit_after

    def complete(self, transaction: SinkTransaction, commit: bool) -> None:
        commits = sum(1 for kind, _ in self.calls if kind == "commit")
        if commit and self.fail_commit_after is not None and commits >= self.fail_commit_after:
            raise ConnectionError("driver died")
        self.calls.append(("commit" if commit else "abort", transaction.transactional_id))

    def fence(self, name: str) -> None:
        self.calls.append(("fence", name))

    def of(self, kind: str) -> set[str]:
        return {name for k, name in self.calls if k == kind}


def committer(cluster: FakeCluster, store: FileStateStore | None) -> TransactionCommitter:
    return TransactionCommitter("p", cluster.complete, cluster.fence, store, threads=1)


def test_commit_records_the_batch_before_and_after(tmp_path: Path) -> None:
    store, cluster = FileStateStore(str(tmp_path)), FakeCluster()
    tasks = [task(0, 0, 10), task(1, 1, 11)]
    assert committer(cluster, store).commit(7, tasks)
    assert cluster.of("commit") == {"p-0-0", "p-1-1"}
    assert cluster.of("abort") == set()
    assert "p-1-0" in cluster.of("fence") and "p-0-0" not in cluster.of("fence")
    state = store.load("p")
    assert state is not None and (state.batch, state.phase) == (7, "committed")


def test_a_replay_of_a_committed_batch_is_aborted(tmp_path: Path) -> None:
    store = FileStateStore(str(tmp_path))
    committer(FakeCluster(), store).commit(7, [task(0, 0, 10)])
    replay = FakeCluster()
    assert not committer(replay, store).commit(7, [task(0, 0, 20)])
    assert replay.of("commit") == set() and replay.of("abort") == {"p-0-0"}
    assert committer(FakeCluster(), store).commit(8, [task(0, 0, 30)])


def test_a_commit_cut_off_half_way_is_finished_by_recover(tmp_path: Path) -> None:
    store = FileStateStore(str(tmp_path))
    dying = FakeCluster(fail_commit_after=1)
    tasks = [task(0, 0, 10), task(1, 0, 11)]
    with pytest.raises(ConnectionError):
        committer(dying, store).commit(7, tasks)
    state = store.load("p")
    assert state is not None and state.phase == "committing"
    assert len(dying.of("commit")) == 1
    restarted = FakeCluster()
    recovered = committer(restarted, store).recover()
    assert recovered is not None and recovered.phase == "committed"
    # Both again (completing a completed transaction changes nothing), no abort, no fence.
    assert restarted.calls == [("commit", "p-0-0"), ("commit", "p-1-0")]
    # Spark then replays batch 7: the replay's transactions are aborted.
    replay = FakeCluster()
    assert not committer(replay, store).commit(7, [task(0, 0, 20), task(1, 0, 21)])
    assert replay.of("abort") == {"p-0-0", "p-1-0"} and replay.of("commit") == set()


def test_abort_after_a_cut_off_commit_goes_forward(tmp_path: Path) -> None:
    store = FileStateStore(str(tmp_path))
    tasks = [task(0, 0, 10), task(1, 0, 11)]
    with pytest.raises(ConnectionError):
        committer(FakeCluster(fail_commit_after=1), store).commit(7, tasks)
    after = FakeCluster()
    committer(after, store).abort(7, tasks)
    assert after.of("commit") == {"p-0-0", "p-1-0"} and after.of("abort") == set()


def test_abort_aborts_and_fences(tmp_path: Path) -> None:
    cluster = FakeCluster()
    committer(cluster, None).abort(7, [task(0, 1, 10), None])
    assert cluster.of("abort") == {"p-0-1"}
    assert {"p-0-0", "p-1-0", "p-1-3"} <= cluster.of("fence")
    assert "p-0-1" not in cluster.of("fence")


def test_without_a_store_commit_just_commits() -> None:
    cluster = FakeCluster()
    assert committer(cluster, None).commit(7, [task(0, 0, 10)])
    assert cluster.of("commit") == {"p-0-0"}


def test_state_file_round_trip_and_damage(tmp_path: Path) -> None:
    store = FileStateStore(str(tmp_path / "new"))
    assert store.load("p") is None
    state = CommitState(3, "committing", (SinkTransaction("p-3-0-0", 5, 1),))
    store.save("p", state)
    assert store.load("p") == state
    assert list((tmp_path / "new").iterdir()) == [tmp_path / "new" / "p.json"]
    (tmp_path / "new" / "p.json").write_text("{not json")
    with pytest.raises(ValueError, match="damaged"):
        store.load("p")


def test_abort_when_the_cut_off_commit_cannot_be_finished_fences_and_raises(
    tmp_path: Path,
) -> None:
    store = FileStateStore(str(tmp_path))
    tasks = [task(0, 0, 10), task(1, 0, 11)]
    with pytest.raises(ConnectionError):
        committer(FakeCluster(fail_commit_after=0), store).commit(7, tasks)
    still_failing = FakeCluster(fail_commit_after=0)
    with pytest.raises(ConnectionError):
        committer(still_failing, store).abort(7, tasks)
    # Nothing of the batch aborted (a later recovery may still commit it); the rest fenced.
    assert still_failing.of("abort") == set() and "p-0-1" in still_failing.of("fence")
    state = store.load("p")
    assert state is not None and state.phase == "committing"
