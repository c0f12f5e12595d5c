"""The per-record future's fields and life cycle, in both builds: the compiled core keeps
them in its C type (``kafkaline._record_core.RecordFuture``), the pure-Python build in a
tuple; what a user sees must not differ."""

from __future__ import annotations

import copy
import gc
import pickle
import sys
import weakref
from typing import Any

import pytest

from kafkaline.producer.futures import (
    SUCCEEDED,
    FutureRecordMetadata,
    ProduceRequestResult,
    new_future,
)
from kafkaline.record.core import compiled_core

TS = 1_700_000_000_000

needs_core = pytest.mark.skipif(compiled_core() is None, reason="the C record core is not in use")


@pytest.mark.parametrize(
    "fields",
    [
        (0, -1, -1, TS),
        (2**31, 2**31 + 1, 0, -1),
        # Out of any 64-bit range: kept as given, the batch fails on it later (not here).
        (1, 2, 3, 2**63),
        (1, 2, 3, -(2**70)),
        (True, 2, 3, 4),
    ],
)
def test_fields_read_back_as_given(fields: tuple[int, int, int, int]) -> None:
    result = ProduceRequestResult("events", 3)
    future = FutureRecordMetadata(result, *fields)
    read = (
        future.offset_delta,
        future.serialized_key_size,
        future.serialized_value_size,
        future.timestamp,
    )
    assert read == fields
    assert [type(x) for x in read] == [type(x) for x in fields]
    assert future.batch_result is result
    assert (future.topic, future.partition) == ("events", 3)


def test_keywords_make_the_same_future_and_fields_are_read_only() -> None:
    result = ProduceRequestResult("events", 0)
    future = FutureRecordMetadata(
        batch_result=result,
        offset_delta=4,
        serialized_key_size=1,
        serialized_value_size=2,
        timestamp=TS,
    )
    assert (future.offset_delta, future.timestamp) == (4, TS)
    with pytest.raises(AttributeError):
        future.timestamp = 0  # type: ignore[misc]
    with pytest.raises(AttributeError):
        future.other = 0  # type: ignore[attr-defined]
    with pytest.raises(TypeError):
        FutureRecordMetadata(result, 1, 2, 3)  # type: ignore[call-arg]


def test_a_copy_is_a_new_future_of_the_same_record_and_pickling_fails() -> None:
    result = ProduceRequestResult("events", 1)
    future = new_future(result, 2, 3, 4, TS)
    twin = copy.copy(future)
    assert type(twin) is FutureRecordMetadata and twin is not future and twin != future
    assert twin.batch_result is result
    assert (twin.offset_delta, twin.serialized_key_size) == (2, 3)
    assert (twin.serialized_value_size, twin.timestamp) == (4, TS)
    result.complete(SUCCEEDED, base_offset=10)
    assert twin.get(0) == future.get(0)
    # Its batch's result is not picklable: its lock in the pure build, the C type's state in
    # the compiled one.
    with pytest.raises(TypeError, match="cannot pickle"):
        pickle.dumps(future)


def test_a_subclass_with_its_own_attributes_works() -> None:
    class Tagged(FutureRecordMetadata):
        pass

    result = ProduceRequestResult("events", 0)
    tagged = [Tagged(result, i, 1, 1, TS) for i in range(300)]
    for i, future in enumerate(tagged):
        future.tag = i  # type: ignore[attr-defined]
    plain = [new_future(result, i, 1, 1, TS) for i in range(300)]
    del tagged[::2], plain[::2]  # freed in between the others, then made again
    again = [Tagged(result, i, 1, 1, TS) for i in range(300)]
    assert [f.tag for f in tagged] == list(range(1, 300, 2))  # type: ignore[attr-defined]
    assert all(type(f) is Tagged and f.offset_delta == i for i, f in enumerate(again))
    assert all(type(f) is FutureRecordMetadata for f in plain)


def test_a_callback_holding_its_own_future_is_collected() -> None:
    # result -> hook -> (future, callback) -> future -> result: a cycle the GC must see
    # through the future.
    result = ProduceRequestResult("events", 0)
    future = new_future(result, 0, 1, 1, TS)

    def callback(metadata: object, future: FutureRecordMetadata = future) -> None:
        pass

    future.add_callback(callback)
    gone = weakref.ref(callback)
    del result, future, callback
    gc.collect()
    assert gone() is None


@needs_core
def test_the_compiled_future_keeps_its_fields_in_the_core_type() -> None:
    core = compiled_core()
    assert core is not None
    future = new_future(ProduceRequestResult("events", 0), 1, 2, 3, TS)
    assert isinstance(future, core.RecordFuture)
    assert not isinstance(future, tuple)


@needs_core
def test_subclasses_of_the_core_type_registered_or_not_are_freed_once() -> None:
    # Each instance holds a reference to its (heap) class: dropped exactly once, whether
    # the class's dealloc is subtype_dealloc or, registered, the core's.
    core = compiled_core()
    assert core is not None
    base: Any = core.RecordFuture

    class Unregistered(base):  # type: ignore[misc]
        __slots__ = ()

    class Registered(base):  # type: ignore[misc]
        __slots__ = ()

    core.register_future_type(Registered)

    class Below(Registered):
        pass

    result = ProduceRequestResult("events", 0)
    for cls in (Unregistered, Registered, Below, base):
        before = sys.getrefcount(cls)
        made = [cls(result, i, 1, 1, TS) for i in range(1000)]
        del made
        gc.collect()
        assert sys.getrefcount(cls) == before, cls


@needs_core
def test_register_future_type_takes_only_a_subclass_without_slots() -> None:
    core = compiled_core()
    assert core is not None

    class WithDict(FutureRecordMetadata):
        pass

    base: Any = core.RecordFuture

    class Slotted(base):  # type: ignore[misc]
        __slots__ = ("extra",)

    for cls in (WithDict, Slotted, int):
        with pytest.raises(TypeError, match="direct subclass of RecordFuture"):
            core.register_future_type(cls)
    with pytest.raises(TypeError, match="takes a class"):
        core.register_future_type(1)
    with pytest.raises(TypeError, match="future_type must be a subclass of RecordFuture"):
        core.OpenBatchSender(object(), tuple, 1000, 100)
