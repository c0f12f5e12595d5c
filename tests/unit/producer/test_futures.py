"""Per-batch ProduceRequestResult and per-record FutureRecordMetadata: get, timeouts,
errors, callbacks, redirection after a split, and awaiting from asyncio."""

from __future__ import annotations

import asyncio
import doctest
import logging
import sys
import threading
import time
import traceback

import pytest

import kafkaline.producer.futures as futures_module
from kafkaline.errors import (
    IllegalStateError,
    InvalidRecordError,
    KafkaTimeoutError,
    NotLeaderOrFollowerError,
)
from kafkaline.producer.futures import (
    ABORTED,
    FAILED,
    SPLIT,
    SUCCEEDED,
    Callback,
    FutureRecordMetadata,
    ProduceRequestResult,
    PythonProduceRequestResult,
    new_future,
)
from kafkaline.producer.record_metadata import RecordMetadata

TS = 1_700_000_000_000

# Every test here runs against the pure-Python result (the reference) and, with the compiled
# core, against the result over its C state too: the same behaviour is required of both.
RESULT_TYPES = {"python": PythonProduceRequestResult}
if ProduceRequestResult is not PythonProduceRequestResult:
    RESULT_TYPES["compiled"] = ProduceRequestResult


@pytest.fixture(autouse=True, params=sorted(RESULT_TYPES))
def result_type(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> type:
    result_class: type = RESULT_TYPES[request.param]
    monkeypatch.setattr(sys.modules[__name__], "ProduceRequestResult", result_class)
    return result_class


def handles(result: ProduceRequestResult, count: int) -> list[FutureRecordMetadata]:
    return [new_future(result, i, 3, 10 + i, TS + i) for i in range(count)]


def complete_later(result: ProduceRequestResult, delay: float, **kwargs: object) -> None:
    def run() -> None:
        time.sleep(delay)
        result.complete(SUCCEEDED, **kwargs)  # type: ignore[arg-type]

    threading.Thread(target=run, daemon=True).start()


def test_module_docstring_examples() -> None:
    results = doctest.testmod(futures_module)
    assert results.attempted > 0 and results.failed == 0


# --------------------------------------------------------------------------- get


def test_get_gives_base_offset_plus_delta_sizes_and_create_time() -> None:
    result = ProduceRequestResult("events", 3)
    first, second = handles(result, 2)
    result.complete(SUCCEEDED, base_offset=100)
    assert first.get(0) == RecordMetadata("events", 3, 100, TS, 3, 10)
    assert type(first.get()) is RecordMetadata and first.get().offset == 100
    assert second.get(0) == RecordMetadata("events", 3, 101, TS + 1, 3, 11)
    assert first.done() and first.is_done and first.exception(0) is None
    assert (first.topic, first.partition) == ("events", 3)


def test_log_append_time_replaces_the_create_time() -> None:
    result = ProduceRequestResult("events", 0)
    (future,) = handles(result, 1)
    result.complete(SUCCEEDED, base_offset=7, log_append_time=TS + 999)
    assert future.get(0).timestamp == TS + 999


def test_acks_0_gives_no_offset() -> None:
    result = ProduceRequestResult("events", 0)
    future = new_future(result, 5, -1, 4, TS)
    result.complete(SUCCEEDED)  # base offset -1: the broker does not answer
    metadata = future.get(0)
    assert metadata.offset == -1 and not metadata.has_offset()
    assert metadata.serialized_key_size == -1


def test_the_class_constructor_makes_the_same_future() -> None:
    result = ProduceRequestResult("events", 0)
    future = FutureRecordMetadata(result, 2, 1, 1, TS)
    result.complete(SUCCEEDED, base_offset=10)
    assert future.get(0).offset == 12


def test_get_waits_for_completion_from_another_thread() -> None:
    result = ProduceRequestResult("events", 0)
    (future,) = handles(result, 1)
    complete_later(result, 0.05, base_offset=5)
    assert future.get(timeout=10).offset == 5


def test_get_times_out_with_a_named_error() -> None:
    result = ProduceRequestResult("events", 1)
    (future,) = handles(result, 1)
    start = time.monotonic()
    with pytest.raises(KafkaTimeoutError, match=r"events-1 .*0\.1 s timeout"):
        future.get(timeout=0.1)
    assert time.monotonic() - start >= 0.1
    with pytest.raises(TimeoutError):  # also the builtin
        future.exception(timeout=0)
    assert not future.done()


def test_many_threads_waiting_all_wake_on_completion() -> None:
    result = ProduceRequestResult("events", 0)
    woke: list[bool] = []
    waiters = [
        threading.Thread(target=lambda: woke.append(result.wait(timeout=10))) for _ in range(5)
    ]
    for thread in waiters:
        thread.start()
    time.sleep(0.05)  # let them block
    result.complete(SUCCEEDED, base_offset=1)
    for thread in waiters:
        thread.join(10)
    assert woke == [True] * 5


def test_a_wait_that_timed_out_leaves_no_waiter_behind_and_a_later_wait_succeeds() -> None:
    result = ProduceRequestResult("events", 0)
    assert not result.wait(timeout=0.02)
    assert not result.wait(timeout=0)
    assert not result.wait(timeout=-1)  # as Event.wait: a negative timeout does not wait
    assert not result._waiters  # timed-out waiters removed themselves
    complete_later(result, 0.02, base_offset=3)
    assert result.wait(timeout=10)
    assert result.wait(timeout=0)


# --------------------------------------------------------------------------- errors


def test_a_failed_batch_raises_the_same_named_error_for_every_record() -> None:
    result = ProduceRequestResult("events", 0)
    records = handles(result, 3)
    error = NotLeaderOrFollowerError("from node 1")
    result.complete(FAILED, error=error)
    for future in records:
        with pytest.raises(NotLeaderOrFollowerError) as raised:
            future.get(0)
        assert raised.value is error
        assert future.exception(0) is error


def test_raising_a_shared_error_many_times_does_not_grow_its_traceback() -> None:
    result = ProduceRequestResult("events", 0)
    records = handles(result, 200)
    result.complete(FAILED, error=NotLeaderOrFollowerError())
    depths = []
    for future in records:
        try:
            future.get(0)
        except NotLeaderOrFollowerError as error:
            depths.append(len(traceback.extract_tb(error.__traceback__)))
    assert max(depths) == min(depths) < 10


def test_per_record_errors_override_the_batch_error() -> None:
    result = ProduceRequestResult("events", 0)
    first, second = handles(result, 2)
    bad = InvalidRecordError("record 1 is invalid")
    batch_error = InvalidRecordError("another record of the batch was invalid")
    result.complete(FAILED, error=batch_error, record_errors={1: bad})
    assert first.exception(0) is batch_error
    assert second.exception(0) is bad


def test_completing_twice_returns_the_first_state_and_changes_nothing() -> None:
    result = ProduceRequestResult("events", 0)
    (future,) = handles(result, 1)
    assert result.complete(SUCCEEDED, base_offset=1) is None
    assert result.complete(FAILED, error=NotLeaderOrFollowerError()) is SUCCEEDED
    assert result.redirect([(ProduceRequestResult("events", 0), 0)]) is SUCCEEDED
    assert future.get(0).offset == 1


def test_state_and_error_must_agree() -> None:
    result = ProduceRequestResult("events", 0)
    with pytest.raises(ValueError):
        result.complete(SUCCEEDED, error=NotLeaderOrFollowerError())
    with pytest.raises(ValueError):
        result.complete(ABORTED)
    with pytest.raises(ValueError):
        result.complete(SPLIT)
    assert result.state is None


# --------------------------------------------------------------------------- callbacks


def test_callbacks_run_on_the_completing_thread_in_the_order_added() -> None:
    result = ProduceRequestResult("events", 0)
    records = handles(result, 3)
    calls: list[tuple[str, int, str]] = []

    def callback(tag: str) -> Callback:
        return lambda metadata: calls.append(
            (tag, metadata.offset, threading.current_thread().name)
        )

    records[2].add_callback(callback("a"))
    records[0].add_callback(callback("b")).add_callback(callback("c"))
    records[1].add_errback(lambda error: calls.append(("never", -1, "")))
    completer = threading.Thread(target=result.complete, args=(SUCCEEDED, 10), name="sender-thread")
    completer.start()
    completer.join()
    assert calls == [
        ("a", 12, "sender-thread"),
        ("b", 10, "sender-thread"),
        ("c", 10, "sender-thread"),
    ]


def test_errbacks_get_the_exception_and_callbacks_are_not_called() -> None:
    result = ProduceRequestResult("events", 0)
    (future,) = handles(result, 1)
    seen: list[object] = []
    future.add_callback(seen.append).add_errback(seen.append)
    error = NotLeaderOrFollowerError()
    result.complete(FAILED, error=error)
    assert seen == [error]


def test_a_raising_callback_is_logged_and_the_others_still_run(
    caplog: pytest.LogCaptureFixture,
) -> None:
    result = ProduceRequestResult("events", 4)
    first, second = handles(result, 2)
    seen: list[int] = []

    def broken(metadata: RecordMetadata) -> None:
        raise RuntimeError("user bug")

    first.add_callback(broken)
    second.add_callback(lambda metadata: seen.append(metadata.offset))
    with caplog.at_level(logging.ERROR, logger="kafkaline.producer.futures"):
        assert result.complete(SUCCEEDED, base_offset=0) is None
    assert seen == [1]
    assert "events-4" in caplog.text and "user bug" in caplog.text


def test_a_callback_added_after_completion_runs_at_once() -> None:
    result = ProduceRequestResult("events", 0)
    (future,) = handles(result, 1)
    result.complete(SUCCEEDED, base_offset=3)
    seen: list[int] = []
    future.add_callback(lambda metadata: seen.append(metadata.offset))
    assert seen == [3]


def test_many_threads_adding_callbacks_while_it_completes_each_run_once() -> None:
    result = ProduceRequestResult("events", 0)
    records = handles(result, 50)
    counts = [0] * 50
    lock = threading.Lock()

    def add_all() -> None:
        for future in records:

            def count(metadata: RecordMetadata) -> None:
                with lock:
                    counts[metadata.offset] += 1

            future.add_callback(count)

    threads = [threading.Thread(target=add_all) for _ in range(4)]
    for thread in threads:
        thread.start()
    result.complete(SUCCEEDED, base_offset=0)
    for thread in threads:
        thread.join()
    assert counts == [4] * 50


# ----------------------------------------------------------------- callbacks before waiters


def complete_with_a_blocked_callback(
    result: ProduceRequestResult, record: FutureRecordMetadata, io_thread: bool = False
) -> tuple[threading.Event, threading.Thread, list[object]]:
    """Complete ``result`` on another thread (an I/O thread or not) whose callback of
    ``record`` blocks until the returned event is set; returns once that callback is running,
    with what it saw of its own record first (done(), get(), wait(0))."""
    entered, release = threading.Event(), threading.Event()
    seen: list[object] = []

    def block(_: RecordMetadata) -> None:
        # The completing thread must not wait for the callbacks it runs itself.
        seen.extend((record.done(), record.get().offset, record.batch_result.wait(0)))
        entered.set()
        release.wait(10)

    def complete() -> None:
        if io_thread:
            futures_module.mark_io_thread()
        result.complete(SUCCEEDED, base_offset=7)

    record.add_callback(block)
    completer = threading.Thread(target=complete, daemon=True)
    completer.start()
    assert entered.wait(10)
    return release, completer, seen


@pytest.mark.parametrize("io_thread", [False, True])
def test_get_and_wait_return_only_after_the_batchs_callbacks_ran(io_thread: bool) -> None:
    # Java's semantics: flush() and get() see every callback of the batch done. A waiter
    # arriving while they run (the state already set) waits too; the completing thread (the
    # I/O thread, or a user thread aborting batches on close) does not.
    result = ProduceRequestResult("events", 0)
    records = handles(result, 2)
    seen: list[int] = []
    records[1].add_callback(lambda metadata: seen.append(metadata.offset))
    release, completer, seen_in_callback = complete_with_a_blocked_callback(
        result, records[0], io_thread
    )
    assert seen_in_callback == [True, 7, True]
    assert result.state is SUCCEEDED  # completed, its callbacks running
    assert not records[1].done() and not result.is_done()
    assert not result.wait(timeout=0.02)
    with pytest.raises(KafkaTimeoutError):
        records[1].get(timeout=0.02)
    # Another I/O thread (a callback) reading it gets it at once: it never blocks.
    on_io: list[int] = []

    def read_on_an_io_thread() -> None:
        futures_module.mark_io_thread()
        on_io.append(records[1].get().offset)

    reader = threading.Thread(target=read_on_an_io_thread, daemon=True)
    reader.start()
    reader.join(10)
    assert on_io == [8]
    got: list[int] = []
    waiter = threading.Thread(target=lambda: got.append(records[1].get().offset), daemon=True)
    waiter.start()
    waiter.join(0.05)
    assert waiter.is_alive() and not got
    release.set()
    waiter.join(10)
    completer.join(10)
    assert got == [8] and seen == [8]  # the other callback ran before get() returned
    assert records[0].done() and result.wait(timeout=0)


def test_get_through_a_split_waits_for_the_new_batchs_callbacks() -> None:
    old = ProduceRequestResult("events", 0)
    (future,) = handles(old, 1)
    part = ProduceRequestResult("events", 0)
    old.redirect([(part, 0)])
    release, completer, _ = complete_with_a_blocked_callback(part, future)
    assert not future.done() and not old.wait_final(time.monotonic() + 0.02)
    with pytest.raises(KafkaTimeoutError):
        future.get(timeout=0.02)
    release.set()
    completer.join(10)
    assert future.get(0).offset == 7 and old.wait_final(time.monotonic())


def test_await_returns_only_after_the_batchs_callbacks_ran() -> None:
    result = ProduceRequestResult("events", 0)
    records = handles(result, 2)
    task_done_early: list[bool] = []

    async def main() -> int:
        task = asyncio.ensure_future(_await(records[1]))
        await asyncio.sleep(0)  # the task waits now
        release, completer, _ = complete_with_a_blocked_callback(result, records[0])
        await asyncio.sleep(0.05)
        task_done_early.append(task.done())
        release.set()
        metadata = await asyncio.wait_for(task, timeout=10)
        completer.join(10)
        return metadata.offset

    assert asyncio.run(main()) == 8
    assert task_done_early == [False]


# --------------------------------------------------------------------------- redirection


def test_a_redirected_record_follows_to_its_new_batch_with_its_callbacks() -> None:
    old = ProduceRequestResult("events", 0)
    records = handles(old, 3)
    seen: list[int] = []
    records[2].add_callback(lambda metadata: seen.append(metadata.offset))
    first, second = ProduceRequestResult("events", 0), ProduceRequestResult("events", 0)
    assert old.redirect([(first, 0), (first, 1), (second, 0)]) is None
    assert old.state is SPLIT and not records[0].done()
    records[0].add_callback(lambda metadata: seen.append(metadata.offset))
    first.complete(SUCCEEDED, base_offset=50)
    second.complete(SUCCEEDED, base_offset=52)
    assert [future.get(0).offset for future in records] == [50, 51, 52]
    assert seen == [50, 52]  # in completion order of the new batches
    assert old.wait_final(deadline=None)


def test_wait_final_times_out_while_a_split_part_is_pending() -> None:
    old = ProduceRequestResult("events", 0)
    part = ProduceRequestResult("events", 0)
    old.redirect([(part, 0)])
    assert not old.wait_final(deadline=time.monotonic() + 0.05)
    part.complete(SUCCEEDED, base_offset=0)
    assert old.wait_final(deadline=time.monotonic())


@pytest.mark.parametrize("timeout", [10.0, None])
def test_get_waits_across_a_redirection(timeout: float | None) -> None:
    old = ProduceRequestResult("events", 0)
    (future,) = handles(old, 1)
    part = ProduceRequestResult("events", 0)

    def split_then_complete() -> None:
        time.sleep(0.02)
        old.redirect([(part, 0)])
        time.sleep(0.02)
        part.complete(SUCCEEDED, base_offset=9)

    threading.Thread(target=split_then_complete).start()
    assert future.get(timeout=timeout).offset == 9


# --------------------------------------------------------------------------- asyncio


def test_await_from_asyncio_wakes_when_another_thread_completes() -> None:
    result = ProduceRequestResult("events", 0)
    (future,) = handles(result, 1)

    async def main() -> RecordMetadata:
        complete_later(result, 0.05, base_offset=77)
        return await asyncio.wait_for(future, timeout=10)

    assert asyncio.run(main()).offset == 77


def test_await_a_done_future_and_a_failed_one() -> None:
    done_result = ProduceRequestResult("events", 0)
    (done_future,) = handles(done_result, 1)
    done_result.complete(SUCCEEDED, base_offset=1)
    failed_result = ProduceRequestResult("events", 0)
    (failed_future,) = handles(failed_result, 1)

    async def main() -> int:
        offset = (await done_future).offset
        threading.Timer(
            0.02, failed_result.complete, args=(FAILED,), kwargs={"error": IllegalStateError("x")}
        ).start()
        with pytest.raises(IllegalStateError):
            await failed_future
        return offset

    assert asyncio.run(main()) == 1


def test_a_cancelled_await_leaves_the_record_alone() -> None:
    result = ProduceRequestResult("events", 0)
    (future,) = handles(result, 1)

    async def main() -> None:
        task = asyncio.ensure_future(_await(future))
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    result.complete(SUCCEEDED, base_offset=4)  # the loop is closed now: nothing breaks
    assert future.get(0).offset == 4


async def _await(future: FutureRecordMetadata) -> RecordMetadata:
    return await future


# --------------------------------------------------------------------------- identity


def test_futures_compare_by_identity() -> None:
    result = ProduceRequestResult("events", 0)
    first = new_future(result, 0, 1, 1, TS)
    twin = new_future(result, 0, 1, 1, TS)
    assert first == first and first != twin and len({first, twin}) == 2
    assert "events-0 #0 pending" in repr(first)
