"""What send() returns: a light per-record :class:`FutureRecordMetadata` over one
:class:`ProduceRequestResult` per batch.

A batch of hundreds of records completes once (one produce response), so the completion state
(done, base offset, log-append time, error) lives in one :class:`ProduceRequestResult` per
batch, as in Java. Each record gets only a handle: the batch's result, the record's offset
delta in the batch, its serialized key and value sizes and its timestamp. A record's offset is
``base_offset + offset_delta``.

With the compiled core the handle's fields live in its C base type
(``kafkaline._record_core.RecordFuture``: C ints, a free list), which its send() makes
directly; the pure-Python build's handle is a small class with slots and read-only fields.
The methods are the same Python code on either base. Nothing per record is allocated
besides the handle: callbacks are kept by the batch's result, and a
``threading.Event`` is only made when a thread waits.

The batch's result is built the same way: its state (done, offsets, error, redirection,
callbacks kept, waiters) lives in the compiled core's ``BatchResult`` (no lock: the GIL, and
no Python run between reading and writing the state) or in the pure-Python ``PythonResultState``
(the reference, with a lock); waiting and running callbacks are the same Python on either.

Splitting a batch (MESSAGE_TOO_LARGE, KIP-126) re-appends its records to new batches; the old
result is then *redirected*: it maps each old offset delta to (new result, new offset delta),
and a handle follows the redirection when it resolves, so the handles the user holds stay valid
without being touched. Callbacks waiting on the old result move to the new ones.

Threads: handles may be used from any thread. Callbacks run on the thread that completes the
batch (the Sender's), in the order they were added; one raising is logged and the others still
run. A callback added to a record already done runs at once on the caller's thread.

As in Java, a batch counts as done only once its callbacks ran: ``get()``, ``done()``, ``await``
and the producer's ``flush()`` wait for them, so after ``flush()`` every callback of every record
sent before it has run. The thread running them (and the I/O thread) does not wait for them: a
callback calling ``get()`` on a record of its own batch gets the result at once.

Example (what the Sender does with a response, then what the user sees)::

    >>> result = ProduceRequestResult("events", 2)
    >>> future = FutureRecordMetadata(result, 1, 3, 5, 1_700_000_000_000)
    >>> future.done()
    False
    >>> result.complete(SUCCEEDED, base_offset=41, log_append_time=-1)
    >>> future.get(timeout=1).offset
    42
"""

from __future__ import annotations

import _thread
import logging
import threading
import time
from collections.abc import Generator
from typing import TYPE_CHECKING, Any

from kafkaline.errors import IllegalStateError, KafkaTimeoutError
from kafkaline.producer.loop_waker import LoopWaker
from kafkaline.producer.record_metadata import NO_TIMESTAMP, UNKNOWN_OFFSET, RecordMetadata
from kafkaline.producer.result_state import (
    ABORTED,
    FAILED,
    SPLIT,
    SUCCEEDED,
    BatchState,
    Callback,
    Errback,
    PythonResultState,
)
from kafkaline.record.core import compiled_core

if TYPE_CHECKING:
    import asyncio

__all__ = [
    "ABORTED",
    "FAILED",
    "SPLIT",
    "SUCCEEDED",
    "BatchState",
    "Callback",
    "Errback",
    "FutureRecordMetadata",
    "ProduceRequestResult",
    "PythonProduceRequestResult",
    "new_future",
]

_log = logging.getLogger(__name__)


#: Set on the producers' I/O threads (:func:`mark_io_thread`): a wait there for a record that
#: is not done would wait for the thread that completes it, from inside a callback of it.
_io_thread = threading.local()
_allocate_lock = _thread.allocate_lock
_get_ident = _thread.get_ident


def mark_io_thread() -> None:
    """Mark the calling thread as a producer's I/O thread (the Sender does, when it starts)."""
    _io_thread.active = True


def on_io_thread() -> bool:
    """Whether the calling thread is a producer's I/O thread (so: inside a callback)."""
    return getattr(_io_thread, "active", False) is True


if TYPE_CHECKING:
    _MethodsBase = PythonResultState
else:
    _MethodsBase = object


class _ResultMethods(_MethodsBase):
    """What a :class:`ProduceRequestResult` does besides keeping its state: waiting, the
    callbacks, the records' metadata. The same Python over either base of the state."""

    __slots__ = ()

    def _waits_for_itself(self) -> bool:
        """Whether a wait on this thread for this batch's callbacks could wait for itself:
        this thread runs them (a callback waiting for its own batch), or it is an I/O thread
        (whose callbacks must never block on another thread's)."""
        return self._completer == _get_ident() or on_io_thread()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until done (its callbacks ran) or ``timeout`` seconds passed; return
        whether done. On the thread running the batch's callbacks, or on an I/O thread, it
        returns once the batch completed, without waiting for the callbacks."""
        if self._final:
            return True
        if self._state is not None and self._waits_for_itself():
            return True
        if timeout is not None and timeout <= 0:
            return False  # as Event.wait(0): no waiting
        if on_io_thread():
            raise IllegalStateError(
                f"a record sent to {self.topic}-{self.partition} is not acknowledged yet, and "
                "get() (or another wait for it) was called from a callback on the producer's "
                "I/O thread: it would wait for itself, as that thread completes the record. "
                "Wait in another thread, or use add_callback()"
            )
        # A bare lock rather than a threading.Event, whose wait/set run Condition's Python
        # code (see docs/performance.md, Notes moved from the code). No `with`: acquired here, it is
        # released by the completing thread, and the second acquire waits for that.
        waiter = _allocate_lock()
        waiter.acquire()
        if not self.add_waiter(waiter):
            return True
        if waiter.acquire(True, -1.0 if timeout is None else timeout):
            return True
        # Timed out, unless completion released it between the acquire and the drop.
        return not self._drop_waiter(waiter)

    def wait_final(self, deadline: float | None) -> bool:
        """Block until this batch, and after a split every batch its records went to, are
        done, or until the ``time.monotonic()`` ``deadline``; return whether all are."""
        pending: list[_ResultMethods] = [self]
        while pending:
            result = pending.pop()
            timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not result.wait(timeout):
                return False
            redirects = result._redirects  # same class: its own state, not another object's
            if redirects is not None:
                pending.extend({id(target): target for target, _ in redirects}.values())
        return True

    def add_hook(
        self,
        offset_delta: int,
        future: FutureRecordMetadata,
        on_success: Callback | None,
        on_error: Errback | None,
    ) -> None:
        """Call ``on_success(metadata)`` or ``on_error(exception)`` when the record at
        ``offset_delta`` completes; at once, on this thread, if it already has."""
        result, delta = self, offset_delta
        while not result._keep_hook(delta, future, on_success, on_error):
            # Completed: its state no longer changes, so the redirection read here holds.
            target = result.redirected(delta)
            if target is None:
                result._run_hook(delta, future, on_success, on_error)
                return
            result, delta = target

    def metadata(self, offset_delta: int, future: FutureRecordMetadata) -> RecordMetadata:
        """The record's metadata once the batch succeeded."""
        base = self.base_offset
        log_append_time = self.log_append_time
        return RecordMetadata(
            self.topic,
            self.partition,
            base + offset_delta if base != UNKNOWN_OFFSET else UNKNOWN_OFFSET,
            log_append_time if log_append_time != NO_TIMESTAMP else future.timestamp,
            future.serialized_key_size,
            future.serialized_value_size,
        )

    def raise_error(self, error: Exception) -> None:
        """Raise a record's exception. The batch's exception object is shared by all its
        records: its traceback is reset to the original each time, so it does not grow by
        one frame per record that raises it."""
        if error is self._error:
            raise error.with_traceback(self._error_traceback)
        raise error

    def _run_hook(
        self,
        offset_delta: int,
        future: FutureRecordMetadata,
        on_success: Callback | None,
        on_error: Errback | None,
    ) -> None:
        error = self.record_error(offset_delta)
        try:
            if error is None:
                if on_success is not None:
                    on_success(self.metadata(offset_delta, future))
            elif on_error is not None:
                on_error(error)
        except Exception:
            # A user's callback must not kill the thread completing batches (the Sender).
            _log.exception(
                "a callback of a record sent to %s-%d raised; the other callbacks still run",
                self.topic,
                self.partition,
            )

    def __repr__(self) -> str:
        state = "pending" if self._state is None else self._state.value
        return f"<ProduceRequestResult {self.topic}-{self.partition} {state}>"


class PythonProduceRequestResult(_ResultMethods, PythonResultState):
    """The pure-Python build's :class:`ProduceRequestResult`, and the compiled one's reference
    (a test runs the same behaviour tests against both)."""

    __slots__ = ()


_core = compiled_core()
if TYPE_CHECKING or _core is None:
    ProduceRequestResult = PythonProduceRequestResult
else:
    _core.register_result_states(SUCCEEDED, SPLIT)

    class ProduceRequestResult(_ResultMethods, _core.BatchResult):
        """The completion of one batch: done or not, base offset, log-append time, error.

        Completed exactly once, by :meth:`complete` or :meth:`redirect`; both return ``None``
        when they completed it, else the state it already had, so the caller decides whether a
        second completion is a bug (see :meth:`ProducerBatch.done
        <kafkaline.producer.batch.ProducerBatch.done>`). The compiled build's: its state is
        the compiled core's ``BatchResult`` (no lock, no Python per completion), the pure
        build's is :class:`PythonProduceRequestResult`; both behave the same.
        """

        __slots__ = ()


class _RecordHandle:
    """The pure-Python build's record handle: the five fields, read-only. A plain class with
    slots: made once per record, it costs less than a NamedTuple, whose ``__new__`` builds an
    argument tuple and copies it (docs/performance.md, "purefast")."""

    __slots__ = (
        "_batch_result",
        "_offset_delta",
        "_serialized_key_size",
        "_serialized_value_size",
        "_timestamp",
    )

    def __init__(
        self,
        batch_result: ProduceRequestResult,
        offset_delta: int,
        serialized_key_size: int,
        serialized_value_size: int,
        timestamp: int,
    ) -> None:
        self._batch_result = batch_result
        self._offset_delta = offset_delta
        self._serialized_key_size = serialized_key_size
        self._serialized_value_size = serialized_value_size
        self._timestamp = timestamp

    @property
    def batch_result(self) -> ProduceRequestResult:
        return self._batch_result

    @property
    def offset_delta(self) -> int:
        return self._offset_delta

    @property
    def serialized_key_size(self) -> int:
        return self._serialized_key_size

    @property
    def serialized_value_size(self) -> int:
        return self._serialized_value_size

    @property
    def timestamp(self) -> int:
        return self._timestamp


if TYPE_CHECKING:
    _HandleBase = _RecordHandle
else:
    # Compiled: the same fields, read-only, as C ints (see the module docstring).
    _HandleBase = _RecordHandle if _core is None else _core.RecordFuture


class FutureRecordMetadata(_HandleBase):
    """The future of one sent record: ``get()`` returns its :class:`RecordMetadata`.

    Fields: the batch's :class:`ProduceRequestResult`, the record's offset delta in that
    batch, the serialized key and value sizes (-1 when None) and the record's timestamp.
    A small object with slots in the pure-Python build and in C in the compiled one (see
    the module docstring); compared by identity in both. Await it from asyncio code::

        metadata = await producer.send("events", b"v")
    """

    __slots__ = ()

    # ------------------------------------------------------------------ where the record is

    def _resolve(self) -> tuple[ProduceRequestResult, int]:
        """The result and offset delta the record has now: its batch's, or after splits,
        the batch it was re-appended to."""
        result, delta = self.batch_result, self.offset_delta
        while True:
            target = result.redirected(delta)
            if target is None:
                return result, delta
            result, delta = target

    @property
    def topic(self) -> str:
        """The record's topic."""
        return self.batch_result.topic

    @property
    def partition(self) -> int:
        """The record's partition."""
        return self.batch_result.partition

    # ------------------------------------------------------------------ the future API

    def done(self) -> bool:
        """Whether the record's send completed (succeeded or failed)."""
        result, _ = self._resolve()
        return result.is_done()

    @property
    def is_done(self) -> bool:
        """Same as :meth:`done`."""
        return self.done()

    def _wait(self, timeout: float | None) -> tuple[ProduceRequestResult, int]:
        result, delta = self.batch_result, self.offset_delta
        if timeout is None:
            # get() without timeout, the usual case: no clock reads, no remaining time.
            while True:
                result.wait()
                target = result.redirected(delta)
                if target is None:
                    return result, delta
                result, delta = target
        deadline = time.monotonic() + timeout
        while True:
            remaining = max(0.0, deadline - time.monotonic())
            if not result.wait(remaining):
                raise KafkaTimeoutError(
                    f"the record sent to {result.topic}-{result.partition} was not "
                    f"acknowledged within the {timeout} s timeout given to get()"
                )
            target = result.redirected(delta)
            if target is None:
                return result, delta
            result, delta = target

    def get(self, timeout: float | None = None) -> RecordMetadata:
        """Wait up to ``timeout`` seconds (``None``: for ever) and return the record's
        metadata. Raises the send's error (the same error for every record of a failed
        batch), or :class:`~kafkaline.errors.KafkaTimeoutError` if not done in time. Called
        from a callback (on the producer's I/O thread) for a record not done yet, it raises
        :class:`~kafkaline.errors.IllegalStateError` at once: that thread completes it."""
        result, delta = self._wait(timeout)
        error = result.record_error(delta)
        if error is not None:
            result.raise_error(error)
        return result.metadata(delta, self)

    def exception(self, timeout: float | None = None) -> Exception | None:
        """Wait like :meth:`get`; return the send's error, or ``None`` if it succeeded."""
        result, delta = self._wait(timeout)
        return result.record_error(delta)

    def add_callback(self, fn: Callback) -> FutureRecordMetadata:
        """Call ``fn(metadata)`` when the record is acknowledged (on the thread completing
        it, or at once if done); return this future, for chaining."""
        self.batch_result.add_hook(self.offset_delta, self, fn, None)
        return self

    def add_errback(self, fn: Errback) -> FutureRecordMetadata:
        """Call ``fn(exception)`` if the record's send fails (on the thread completing it, or
        at once if done); return this future, for chaining."""
        self.batch_result.add_hook(self.offset_delta, self, None, fn)
        return self

    def add_both(self, on_success: Callback, on_error: Errback) -> FutureRecordMetadata:
        """:meth:`add_callback` and :meth:`add_errback` in one hook (one entry kept)."""
        self.batch_result.add_hook(self.offset_delta, self, on_success, on_error)
        return self

    def __await__(self) -> Generator[Any, None, RecordMetadata]:
        """Wait in an event loop without blocking it: the completing thread wakes the loop
        through ``call_soon_threadsafe``, once the batch's callbacks ran (as :meth:`get`)."""
        result, delta = self.batch_result, self.offset_delta
        while True:
            if not result.is_done():
                # Imported here: only code that awaits needs asyncio, and awaiting code has it
                # loaded already, while importing it costs every other program's start-up.
                import asyncio

                loop = asyncio.get_running_loop()
                waiter: asyncio.Future[None] = loop.create_future()
                if result.add_waiter(LoopWaker(loop, waiter)):
                    yield from waiter
            target = result.redirected(delta)
            if target is None:
                break
            result, delta = target
        return self.get(0)

    # ------------------------------------------------------------------ identity

    def __eq__(self, other: object) -> bool:
        return self is other

    def __ne__(self, other: object) -> bool:
        return self is not other

    def __hash__(self) -> int:
        return id(self)

    def __repr__(self) -> str:
        result, delta = self._resolve()
        state = "pending" if result.state is None else result.state.value
        return f"<FutureRecordMetadata {result.topic}-{result.partition} #{delta} {state}>"


if _core is not None:
    # Freed as its C base is (no slots or __dict__ to look for): a discarded future is the
    # common case.
    _core.register_future_type(FutureRecordMetadata)


def new_future(
    batch_result: ProduceRequestResult,
    offset_delta: int,
    serialized_key_size: int,
    serialized_value_size: int,
    timestamp: int,
) -> FutureRecordMetadata:
    """A record's future (a convenience for code off the hot path)."""
    return FutureRecordMetadata(
        batch_result, offset_delta, serialized_key_size, serialized_value_size, timestamp
    )
