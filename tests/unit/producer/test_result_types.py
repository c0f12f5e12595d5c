"""The per-batch result over its two bases of state: the pure-Python reference and the
compiled core's ``BatchResult``. test_futures.py runs its behaviour tests against both; these
are the cases where the C type could differ: argument handling, moving callbacks on a split,
the garbage collector, a callback that raises past ``Exception``."""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable

import pytest

from kafkaline.producer.futures import (
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
