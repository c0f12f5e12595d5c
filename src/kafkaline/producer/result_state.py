"""The state of a batch's completion, in pure Python: how a batch ended (:class:`BatchState`)
and :class:`PythonResultState`, the pure-Python base of
:class:`~kafkaline.producer.futures.ProduceRequestResult`.

It is the reference for the compiled core's ``BatchResult``, which keeps the same fields and
has the same methods without a lock (see :mod:`kafkaline.producer.futures`). Waiting and
running callbacks are not here: they are the same Python over either base.
"""

from __future__ import annotations

import _thread
import enum
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kafkaline.producer.loop_waker import LoopWaker
from kafkaline.producer.record_metadata import NO_TIMESTAMP, UNKNOWN_OFFSET, RecordMetadata

if TYPE_CHECKING:
    from kafkaline.producer.futures import FutureRecordMetadata, ProduceRequestResult

__all__ = [
    "ABORTED",
    "FAILED",
    "SPLIT",
    "SUCCEEDED",
    "BatchState",
    "Callback",
    "Errback",
    "Hook",
    "PythonResultState",
    "Waiter",
]


class BatchState(enum.Enum):
    """How a batch ended (Java's ``ProducerBatch.FinalState``, plus SPLIT)."""

    #: The broker acknowledged it.
    SUCCEEDED = "succeeded"
    #: The broker or the client failed it (error response, delivery timeout, ...).
    FAILED = "failed"
    #: Given up without an answer (forced close, aborted transaction).
    ABORTED = "aborted"
    #: Split into smaller batches that carry its records on (MESSAGE_TOO_LARGE).
    SPLIT = "split"


SUCCEEDED = BatchState.SUCCEEDED
FAILED = BatchState.FAILED
ABORTED = BatchState.ABORTED
SPLIT = BatchState.SPLIT

#: Called with a record's metadata when it succeeded.
Callback = Callable[[RecordMetadata], object]
#: Called with a record's exception when it failed.
Errback = Callable[[Exception], object]

Waiter = _thread.LockType
_get_ident = _thread.get_ident

# A hook kept by a result until it completes: (offset delta in that result, the record's
# handle, on success, on failure). Either function may be None.
Hook = tuple[int, "FutureRecordMetadata", Callback | None, Errback | None]


class PythonResultState:
    """The completion state of one batch, under a lock: the pure-Python base of
    :class:`ProduceRequestResult` and the reference for the compiled core's ``BatchResult``.

    The compiled base has the same fields and methods and no lock: its methods run under the
    GIL without running Python code between reading and writing the state.
    """

    __slots__ = (
        "_completer",
        "_error",
        "_error_traceback",
        "_final",
        "_hooks",
        "_lock",
        "_record_errors",
        "_redirects",
        "_state",
        "_waiters",
        "base_offset",
        "log_append_time",
        "partition",
        "topic",
    )

    def __init__(self, topic: str, partition: int) -> None:
        self.topic = topic
        self.partition = partition
        #: The first record's offset; -1 until done, and with acks=0 or on failure.
        self.base_offset = UNKNOWN_OFFSET
        #: The broker's log-append time, -1 when the topic uses create time.
        self.log_append_time = NO_TIMESTAMP
        # _state is set when the batch completes, _final once its callbacks ran after it: the
        # threads waiting for it are released then (Java counts its latch down after them).
        self._state: BatchState | None = None
        self._final = False
        # The thread that completed it (running its callbacks), which must not wait for them.
        self._completer: int | None = None
        self._error: Exception | None = None
        self._error_traceback: Any = None
        self._record_errors: Mapping[int, Exception] | None = None
        self._redirects: Sequence[tuple[ProduceRequestResult, int]] | None = None
        self._hooks: list[Hook] = []
        self._lock = threading.Lock()
        # One held lock per waiting thread, released on completion (see wait()).
        self._waiters: list[Waiter | LoopWaker] | None = None

    @property
    def state(self) -> BatchState | None:
        """How the batch ended, or ``None`` while pending (set before its callbacks run)."""
        return self._state

    @property
    def error(self) -> Exception | None:
        """The batch's exception, ``None`` unless it failed or was aborted."""
        return self._error

    def is_done(self) -> bool:
        """Whether the batch completed and its callbacks ran (or it was split): whether
        :meth:`wait` would return at once."""
        return self._final or (self._state is not None and self._waits_for_itself())

    def _waits_for_itself(self) -> bool:
        raise NotImplementedError  # _ResultMethods' (one Python over either base)

    def _run_hook(
        self,
        offset_delta: int,
        future: FutureRecordMetadata,
        on_success: Callback | None,
        on_error: Errback | None,
    ) -> None:
        raise NotImplementedError  # _ResultMethods' (one Python over either base)

    def add_hook(
        self,
        offset_delta: int,
        future: FutureRecordMetadata,
        on_success: Callback | None,
        on_error: Errback | None,
    ) -> None:
        raise NotImplementedError  # _ResultMethods' (one Python over either base)

    def record_error(self, offset_delta: int) -> Exception | None:
        """The exception of the record at ``offset_delta``: its own (a broker's per-record
        error, KIP-467) or the batch's; ``None`` if it succeeded."""
        errors = self._record_errors
        if errors is not None and offset_delta in errors:
            return errors[offset_delta]
        return self._error

    def redirected(self, offset_delta: int) -> tuple[ProduceRequestResult, int] | None:
        """Where the record at ``offset_delta`` went when this batch was split, or ``None``."""
        redirects = self._redirects
        return None if redirects is None else redirects[offset_delta]

    def add_waiter(self, waiter: Waiter | LoopWaker) -> bool:
        """Have ``waiter.release()`` called once the batch is done (its callbacks ran, or it
        was split); return ``False``, keeping nothing, if it is already."""
        with self._lock:
            if self._final:
                return False
            if self._waiters is None:
                self._waiters = [waiter]
            else:
                self._waiters.append(waiter)
        return True

    def _drop_waiter(self, waiter: Waiter | LoopWaker) -> bool:
        """Forget a waiter whose wait timed out; ``False`` if completion took it first."""
        with self._lock:
            waiters = self._waiters
            if waiters is not None and any(kept is waiter for kept in waiters):
                waiters.remove(waiter)
                return True
        return False

    def _keep_hook(
        self,
        offset_delta: int,
        future: FutureRecordMetadata,
        on_success: Callback | None,
        on_error: Errback | None,
    ) -> bool:
        """Keep a hook for completion; ``False``, keeping nothing, if completed already."""
        with self._lock:
            if self._state is not None:
                return False
            self._hooks.append((offset_delta, future, on_success, on_error))
        return True

    def complete(
        self,
        state: BatchState,
        base_offset: int = UNKNOWN_OFFSET,
        log_append_time: int = NO_TIMESTAMP,
        error: Exception | None = None,
        record_errors: Mapping[int, Exception] | None = None,
    ) -> BatchState | None:
        """Complete the batch and run its records' callbacks on this thread.

        ``state`` is SUCCEEDED (``error`` must be None), FAILED or ABORTED (``error``
        required). ``record_errors`` maps offset deltas to their own exceptions (a broker's
        per-record errors), the others get ``error``. Returns ``None`` if this call completed
        the batch, else the state it already had (nothing changes then).
        """
        if state is SPLIT:
            raise ValueError("a split completes through redirect()")
        if (error is None) != (state is SUCCEEDED):
            raise ValueError(f"a {state.value} batch needs an error exactly when it failed")
        with self._lock:
            if self._state is not None:
                return self._state
            self.base_offset = base_offset
            self.log_append_time = log_append_time
            self._error = error
            self._error_traceback = None if error is None else error.__traceback__
            self._record_errors = record_errors
            self._state = state
            hooks = self._hooks
            if hooks:
                self._completer = _get_ident()
                self._hooks = []
                waiters = None
            else:  # no callbacks to wait for: done now, one lock as before
                self._final = True
                waiters = self._waiters
                self._waiters = None
        if hooks:
            try:
                for offset_delta, future, on_success, on_error in hooks:
                    self._run_hook(offset_delta, future, on_success, on_error)
            finally:
                # Only now are the waiters released (flush(), get()): after the callbacks,
                # as Java's producer does, so that what a callback did is seen once they
                # return.
                with self._lock:
                    self._final = True
                    waiters = self._waiters
                    self._waiters = None
                if waiters is not None:
                    _release(waiters)
        elif waiters is not None:
            _release(waiters)
        return None

    def redirect(self, targets: Sequence[tuple[ProduceRequestResult, int]]) -> BatchState | None:
        """Complete the batch as SPLIT: the record at offset delta ``i`` now lives in
        ``targets[i]`` = (new batch's result, offset delta there). Callbacks move to the new
        results before any thread can see the redirection, so their order is kept.

        Returns ``None`` if this call completed the batch, else the state it already had.
        """
        with self._lock:
            if self._state is not None:
                return self._state
            for offset_delta, future, on_success, on_error in self._hooks:
                target, target_delta = targets[offset_delta]
                target.add_hook(target_delta, future, on_success, on_error)
            self._hooks = []
            self._redirects = tuple(targets)
            self._state = SPLIT
            # No callbacks run here (they moved): the waiters go on to the new results.
            self._final = True
            waiters = self._waiters
            self._waiters = None
        if waiters is not None:
            _release(waiters)
        return None


def _release(waiters: list[Waiter | LoopWaker]) -> None:
    for waiter in waiters:
        waiter.release()
