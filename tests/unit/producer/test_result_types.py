"""The per-batch result over its two bases of state: the pure-Python reference and the
compiled core's ``BatchResult``. test_futures.py runs its behaviour tests against both; these
are the cases where the C type could differ: argument handling, moving callbacks on a split,
the garbage collector, a callback that raises past ``Exception``."""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkaline.producer.futures import (
    ABORTED,
    FAILED,
    SPLIT,
    SUCCEEDED,
    FutureRecordMetadata,
    ProduceRequestResult,
    PythonProduceRequestResult,
    new_future,
)
from kafkaline.producer.record_metadata import RecordMetadata
from kafkaline.record.core import compiled_core

TS = 1_700_000_000_000

RESULT_TYPES = {"python": PythonProduceRequestResult}
if ProduceRequestResult is not PythonProduceRequestResult:
    RESULT_TYPES["compiled"] = ProduceRequestResult


@pytest.fixture(params=sorted(RESULT_TYPES))
def result_type(request: pytest.FixtureRequest) -> type[ProduceRequestResult]:
    return RESULT_TYPES[request.param]


def test_the_build_chooses_the_result_type() -> None:
    core = compiled_core()
    if core is None:
        assert ProduceRequestResult is PythonProduceRequestResult
    else:
        assert issubclass(ProduceRequestResult, core.BatchResult)
        assert not hasattr(ProduceRequestResult("events", 0), "_lock")


def test_complete_takes_its_arguments_by_position_or_name(
    result_type: type[ProduceRequestResult],
) -> None:
    by_name = result_type("events", 1)
    error = ValueError("bad")
    assert by_name.complete(record_errors={0: error}, base_offset=7, state=SUCCEEDED) is None
    assert (by_name.state, by_name.base_offset, by_name.log_append_time) == (SUCCEEDED, 7, -1)
    assert by_name.record_error(0) is error and by_name.record_error(1) is None
    by_position = result_type("events", 1)
    assert by_position.complete(FAILED, 3, 4, error, None) is None
    assert (by_position.base_offset, by_position.log_append_time) == (3, 4)
    assert by_position.error is error and by_position.record_error(9) is error


def test_complete_names_a_wrong_argument(result_type: type[ProduceRequestResult]) -> None:
    result = result_type("events", 1)
    with pytest.raises(TypeError, match="offset"):
        result.complete(SUCCEEDED, offset=3)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="state"):
        result.complete(base_offset=3)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="base_offset"):
        result.complete(SUCCEEDED, 3, base_offset=3)  # type: ignore[misc]
    with pytest.raises(TypeError):
        result.complete(SUCCEEDED, 1, 2, None, None, 6)  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="split"):
        result.complete(SPLIT)
    assert result.state is None and not result.is_done()


def test_a_split_moves_callbacks_in_order_and_to_a_done_target_at_once(
    result_type: type[ProduceRequestResult],
) -> None:
    old = result_type("events", 0)
    futures = [new_future(old, i, 1, 1, TS) for i in range(3)]
    seen: list[tuple[str, int]] = []

    def note(round_: str) -> Callable[[RecordMetadata], None]:
        return lambda metadata: seen.append((round_, metadata.offset))

    for round_ in ("first", "second"):
        for future in futures:
            future.add_callback(note(round_))
    pending, done = result_type("events", 0), result_type("events", 0)
    done.complete(SUCCEEDED, base_offset=100)
    # Records 0 and 2 go to the pending batch (deltas 1 and 0), record 1 to the done one.
    assert old.redirect([(pending, 1), (done, 5), (pending, 0)]) is None
    assert seen == [("first", 105), ("second", 105)]  # run at once, on this thread
    assert old.state is SPLIT and old.is_done() and old.redirected(1) == (done, 5)
    pending.complete(SUCCEEDED, base_offset=10)
    assert seen[2:] == [("first", 11), ("first", 10), ("second", 11), ("second", 10)]
    assert [f.get(0).offset for f in futures] == [11, 105, 10]


def test_a_result_its_callbacks_and_futures_are_collected_together(
    result_type: type[ProduceRequestResult],
) -> None:
    collected = threading.Event()

    class Callback:
        def __call__(self, metadata: RecordMetadata) -> None:
            pass

        def __del__(self) -> None:
            collected.set()

    result = result_type("events", 0)
    future: FutureRecordMetadata | None = new_future(result, 0, 1, 1, TS)
    assert future is not None
    future.add_callback(Callback())  # a cycle: result -> hook -> future -> result
    del result, future
    gc.collect()
    assert collected.is_set()


def test_a_callback_raising_past_exception_still_releases_the_waiters(
    result_type: type[ProduceRequestResult],
) -> None:
    result = result_type("events", 0)
    future = new_future(result, 0, 1, 1, TS)

    def interrupt(metadata: RecordMetadata) -> None:
        raise KeyboardInterrupt

    future.add_callback(interrupt)
    woke: list[bool] = []
    waiter = threading.Thread(target=lambda: woke.append(result.wait(10)))
    waiter.start()
    while not result._waiters:  # the waiter is kept before completion
        threading.Event().wait(0.001)
    with pytest.raises(KeyboardInterrupt):
        result.complete(SUCCEEDED, base_offset=1)
    waiter.join(10)
    assert woke == [True] and result.is_done() and future.get(0).offset == 1


# An operation on a batch of three records: a hook on a record, completing it, splitting it
# into two new results, or completing one of those.
_OPERATIONS = st.lists(
    st.one_of(
        st.tuples(
            st.just("hook"), st.integers(0, 2), st.sampled_from(["callback", "errback", "both"])
        ),
        st.tuples(
            st.just("complete"),
            st.sampled_from(["succeeded", "failed", "aborted"]),
            st.frozensets(st.integers(0, 2)),
        ),
        st.tuples(st.just("split"), st.permutations([(0, 0), (0, 1), (1, 0)])),
        st.tuples(st.just("complete part"), st.integers(0, 1), st.booleans()),
    ),
    max_size=12,
)


def _run(result_class: type[ProduceRequestResult], operations: list[tuple[Any, ...]]) -> list[Any]:
    """What a user could see of ``operations`` on a result of ``result_class``."""
    errors = {"failed": ValueError("failed"), "aborted": KeyError("aborted")}
    seen: list[Any] = []
    old = result_class("events", 1)
    parts = [result_class("events", 1), result_class("events", 1)]
    futures = [new_future(old, delta, 1, 1, TS) for delta in range(3)]

    def name(error: Exception | None) -> str | None:
        return None if error is None else str(error)

    for index, operation in enumerate(operations):
        if operation[0] == "hook":
            _, delta, kind = operation
            future = futures[delta]
            if kind != "errback":
                future.add_callback(lambda m, i=index: seen.append((i, "ok", m.offset)))
            if kind != "callback":
                future.add_errback(lambda e, i=index: seen.append((i, "error", name(e))))
        elif operation[0] == "complete":
            _, outcome, own_errors = operation
            error = errors.get(outcome)
            state = {"succeeded": SUCCEEDED, "failed": FAILED, "aborted": ABORTED}[outcome]
            record_errors = {delta: IndexError(f"own {delta}") for delta in own_errors}
            seen.append(("complete", old.complete(state, 10, -1, error, record_errors or None)))
        elif operation[0] == "split":
            targets = [(parts[part], delta) for part, delta in operation[1]]
            seen.append(("split", old.redirect(targets)))
        else:
            _, part, succeeded = operation
            error = None if succeeded else errors["failed"]
            state = SUCCEEDED if succeeded else FAILED
            seen.append(("part", parts[part].complete(state, 100 * (part + 1), -1, error)))
    for future in futures:
        done = future.done()
        seen.append(("future", done, name(future.exception(0)) if done else None))
        if done and future.exception(0) is None:
            seen.append(("offset", future.get(0).offset))
    seen.append(("old", old.state, old.is_done(), [name(old.record_error(d)) for d in range(3)]))
    return seen


@pytest.mark.skipif(len(RESULT_TYPES) < 2, reason="the C record core is not in use")
@settings(max_examples=300, deadline=None)
@given(_OPERATIONS)
def test_the_compiled_result_behaves_as_the_python_one(operations: list[tuple[Any, ...]]) -> None:
    python = _run(RESULT_TYPES["python"], operations)
    assert _run(RESULT_TYPES["compiled"], operations) == python
