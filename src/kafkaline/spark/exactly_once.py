"""The exactly-once sink's logic without Spark: its options, the transactional ids it uses,
the durable commit record and the driver's commit protocol.

Each task attempt writes its rows in a transaction of its own, with the transactional id
``<prefix>-<partition>-<attempt>``, and does not commit: it hands the transaction's
identity (id, producer id, epoch) to the driver in its commit message. The driver completes
the chosen attempts' transactions with :meth:`kafkaline.Producer.complete_transaction` and
fences every other id the write may have used (InitProducerId aborts a transaction left open
by a killed attempt). Attempts never share an id, so no attempt fences another, and only the
driver commits, so two attempts of one task cannot both be committed.

Replays (a streaming micro-batch run again after a restart, a batch write run again with the
same prefix) are made safe by a small state file, written before the first transaction is
completed and after the last (see :class:`TransactionCommitter` and docs/spark.md).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import tempfile
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeVar

from kafkaline import ConfigError

_log = logging.getLogger(__name__)
_T = TypeVar("_T")

AT_LEAST_ONCE = "at-least-once"
EXACTLY_ONCE = "exactly-once"
DELIVERY_GUARANTEES = (AT_LEAST_ONCE, EXACTLY_ONCE)

#: Attempts per task the driver fences at least (Spark's spark.task.maxFailures default);
#: more when a commit message shows a higher attempt number (see leftover_ids).
MIN_ATTEMPTS_FENCED = 4
#: Beyond the highest attempt number seen: speculative copies and retries still starting.
EXTRA_ATTEMPTS_FENCED = 2
#: Parallel requests when the driver completes and fences transactions.
DRIVER_THREADS = 8

#: A transactional id's characters (Kafka allows more; these survive every file system too).
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True)
class ExactlyOnceOptions:
    """The exactly-once options of one write (``None`` where the write is at-least-once)."""

    prefix: str
    state_location: str | None

    @classmethod
    def parse(cls, options: Mapping[str, str], streaming: bool) -> ExactlyOnceOptions | None:
        """``deliveryGuarantee``, ``transactionalIdPrefix``, ``transactionStateLocation``
        (names compared without case, as Spark does)."""
        lowered = {name.lower(): value for name, value in options.items()}
        guarantee = lowered.get("deliveryguarantee", AT_LEAST_ONCE).strip().lower()
        if guarantee not in DELIVERY_GUARANTEES:
            raise ConfigError(
                f"option 'deliveryGuarantee' is {guarantee!r}: use one of "
                + ", ".join(repr(g) for g in DELIVERY_GUARANTEES)
            )
        if guarantee == AT_LEAST_ONCE:
            for name in ("transactionalIdPrefix", "transactionStateLocation"):
                if name.lower() in lowered:
                    raise ConfigError(
                        f"option {name!r} needs .option('deliveryGuarantee', 'exactly-once')"
                    )
            return None
        if "kafka.transactional.id" in lowered:
            raise ConfigError(
                "option 'kafka.transactional.id' cannot be set with exactly-once: each task "
                "attempt gets its own id; set 'transactionalIdPrefix' instead"
            )
        checkpoint = lowered.get("checkpointlocation") or None
        prefix = lowered.get("transactionalidprefix")
        if prefix is not None and not _SAFE.sub("", prefix):
            raise ConfigError(f"option 'transactionalIdPrefix' {prefix!r} has no usable character")
        if prefix is None:
            if streaming:
                if checkpoint is None:
                    raise ConfigError(
                        "exactly-once streaming needs the option 'checkpointLocation' (the "
                        "session's default location is not seen by the sink) or "
                        "'transactionalIdPrefix': the transactional ids must stay the same "
                        "across restarts of the query"
                    )
                digest = hashlib.sha256(checkpoint.encode()).hexdigest()[:16]
                prefix = f"kafkaline-{digest}"
            else:
                # One write, one prefix: two writes at once never fence each other.
                prefix = f"kafkaline-{uuid.uuid4().hex[:16]}"
        state = lowered.get("transactionstatelocation") or None
        if state is None and streaming:
            if checkpoint is None or ("://" in checkpoint and not checkpoint.startswith("file:")):
                raise ConfigError(
                    "exactly-once streaming needs option 'transactionStateLocation' (a "
                    "directory the driver can write, kept across restarts) when "
                    f"'checkpointLocation' is not a local path (it is {checkpoint!r})"
                )
            state = str(Path(checkpoint.removeprefix("file:")) / "kafkaline-sink")
        return cls(_SAFE.sub("_", prefix), state)


def transactional_id(prefix: str, partition: int, attempt: int) -> str:
    """The id of one task attempt's transaction. The same ids serve every micro-batch, so a
    query keeps a bounded number of ids at the coordinator (about partitions x attempts),
    and a task's InitProducerId aborts what the same id left open in an earlier batch."""
    return f"{prefix}-{partition}-{attempt}"


@dataclass(frozen=True)
class SinkTransaction:
    """An open transaction a task left for the driver: what ``complete_transaction`` needs."""

    transactional_id: str
    producer_id: int
    producer_epoch: int

    def as_tuple(self) -> tuple[str, int, int]:
        return (self.transactional_id, self.producer_id, self.producer_epoch)


@dataclass(frozen=True)
class TaskTransaction:
    """What the driver learns from one task: its partition and attempt, and its transaction
    (``None`` when the task had no rows: it committed nothing and left nothing open)."""

    partition: int
    attempt: int
    transaction: SinkTransaction | None


Phase = Literal["committing", "committed"]


@dataclass(frozen=True)
class CommitState:
    """The durable record: the newest batch the sink began to commit, and how far it got."""

    batch: int
    phase: Phase
    transactions: tuple[SinkTransaction, ...]

    def to_json(self) -> str:
        return json.dumps(
            {
                "batch": self.batch,
                "phase": self.phase,
                "transactions": [t.as_tuple() for t in self.transactions],
            }
        )

    @classmethod
    def from_json(cls, text: str) -> CommitState:
        data = json.loads(text)
        phase = data["phase"]
        if phase not in ("committing", "committed"):
            raise ValueError(f"unknown phase {phase!r}")
        transactions = tuple(
            SinkTransaction(str(t), int(p), int(e)) for t, p, e in data["transactions"]
        )
        return cls(int(data["batch"]), phase, transactions)


class FileStateStore:
    """One JSON file per prefix in a directory; replaced atomically (write, fsync, rename), so
    a reader sees the old record or the new one, never half of one."""

    def __init__(self, directory: str) -> None:
        self.directory = Path(directory)

    def path(self, prefix: str) -> Path:
        return self.directory / f"{prefix}.json"

    def load(self, prefix: str) -> CommitState | None:
        try:
            text = self.path(prefix).read_text()
        except FileNotFoundError:
            return None
        try:
            return CommitState.from_json(text)
        except (ValueError, KeyError, TypeError) as error:
            raise ValueError(
                f"the sink's state file {self.path(prefix)} is damaged: {error}"
            ) from error

    def save(self, prefix: str, state: CommitState) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        target = self.path(prefix)
        handle, temporary = tempfile.mkstemp(dir=self.directory, prefix=f".{prefix}.")
        try:
            with os.fdopen(handle, "w") as file:
                file.write(state.to_json())
                file.flush()
                os.fsync(file.fileno())
            os.replace(temporary, target)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
        directory = os.open(self.directory, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)


#: complete(transaction, commit) ends a transaction from its identity.
Complete = Callable[[SinkTransaction, bool], None]
#: fence(transactional_id) aborts whatever that id left open (InitProducerId).
Fence = Callable[[str], None]


def leftover_ids(
    prefix: str, tasks: Sequence[TaskTransaction | None], partitions: int
) -> list[str]:
    """Every id this batch's attempts may have used, but the chosen attempts' ids. Attempt
    numbers grow one by one per task (retries, speculative copies), so the ids of attempts
    up to a little beyond the highest one seen cover the attempts Spark started."""
    chosen = {transactional_id(prefix, t.partition, t.attempt) for t in tasks if t}
    highest = max((t.attempt for t in tasks if t), default=0)
    attempts = max(MIN_ATTEMPTS_FENCED, highest + 1 + EXTRA_ATTEMPTS_FENCED)
    return [
        name
        for partition in range(partitions)
        for attempt in range(attempts)
        if (name := transactional_id(prefix, partition, attempt)) not in chosen
    ]


class TransactionCommitter:
    """The driver's side of the protocol, for one prefix (one query or one write).

    ===========================  =================================================  ===========
    state record (before)        commit(batch B, the tasks' transactions T)         after
    ===========================  =================================================  ===========
    none, or an older batch      save (B, committing, T); commit T; fence leftovers  (B, committed)
    (B, committing, T0)          commit T0 again; abort T; fence leftovers           (B, committed)
    (B or newer, committed)      abort T; fence leftovers (a replay)                 unchanged
    ===========================  =================================================  ===========

    :meth:`recover` (run before any task writes, when the writer is made) turns a
    ``committing`` record into ``committed`` by committing its transactions again: Spark's
    replay of that batch must not fence them (the replay's ids are the same). Completing a
    completed transaction again changes nothing, so every step may be repeated.
    """

    def __init__(
        self,
        prefix: str,
        complete: Complete,
        fence: Fence,
        store: FileStateStore | None,
        threads: int = DRIVER_THREADS,
    ) -> None:
        self.prefix = prefix
        self._complete = complete
        self._fence = fence
        self._store = store
        self._threads = threads

    def recover(self) -> CommitState | None:
        """Finish a commit that was cut off; return the state record as it is now."""
        if self._store is None:
            return None
        state = self._store.load(self.prefix)
        if state is not None and state.phase == "committing":
            _log.warning(
                "kafkaline: finishing the commit of batch %d (%d transactions) that was cut off",
                state.batch,
                len(state.transactions),
            )
            self._each(lambda t: self._complete(t, True), state.transactions)
            state = CommitState(state.batch, "committed", state.transactions)
            self._store.save(self.prefix, state)
        return state

    def commit(self, batch: int, tasks: Sequence[TaskTransaction | None]) -> bool:
        """Commit the tasks' transactions (True), or abort them when the state record shows
        the batch was committed before (False: a replay)."""
        transactions = tuple(t.transaction for t in tasks if t and t.transaction)
        state = self.recover()
        if state is not None and state.batch >= batch:
            _log.warning(
                "kafkaline: batch %d was committed before (state: batch %d); aborting the "
                "replay's %d transactions",
                batch,
                state.batch,
                len(transactions),
            )
            self._each(lambda t: self._complete(t, False), transactions)
            self._fence_leftovers(tasks)
            return False
        if self._store is not None:
            self._store.save(self.prefix, CommitState(batch, "committing", transactions))
        self._each(lambda t: self._complete(t, True), transactions)
        self._fence_leftovers(tasks)
        if self._store is not None:
            self._store.save(self.prefix, CommitState(batch, "committed", transactions))
        return True

    def abort(self, batch: int, tasks: Sequence[TaskTransaction | None]) -> None:
        """Abort the tasks' transactions and fence the leftovers. A commit of this batch that
        began (state ``committing``) is finished instead: part of it may be visible already,
        so only going forward leaves each row once. When that cannot be done now (one of
        its transactions was fenced or timed out, or the broker is unreachable), the other
        ids are fenced and the error raised: the state file stays ``committing``."""
        try:
            state = self.recover()
        except Exception:
            self._fence_leftovers(tasks)
            raise
        transactions = tuple(t.transaction for t in tasks if t and t.transaction)
        if (
            state is not None
            and state.batch == batch
            and set(state.transactions) == set(transactions)
        ):
            _log.warning("kafkaline: batch %d was committed before Spark aborted it", batch)
            self._fence_leftovers(tasks)
            return
        self._each(lambda t: self._complete(t, False), transactions)
        self._fence_leftovers(tasks)

    def _fence_leftovers(self, tasks: Sequence[TaskTransaction | None]) -> None:
        self._each(self._fence, leftover_ids(self.prefix, tasks, len(tasks)))

    def _each(self, action: Callable[[_T], None], items: Iterable[_T]) -> None:
        """Run ``action`` on every item, in parallel; raise the first failure after all ran."""
        items = list(items)
        if not items:
            return
        with ThreadPoolExecutor(min(self._threads, len(items))) as pool:
            futures = [pool.submit(action, item) for item in items]
        errors = [f.exception() for f in futures if f.exception() is not None]
        if errors:
            raise errors[0]  # type: ignore[misc]
