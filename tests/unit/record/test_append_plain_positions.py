"""``append_many()`` as send_batch() calls it over lists (one timestamp for all, no headers,
the records taken by their input positions): the compiled builder's loop for that call gives
the same batches as the pure-Python builder, whatever the keys and values are."""

from __future__ import annotations

import array
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkaline.record.builder import RecordBatchBuilder as PythonBuilder

try:
    from kafkaline import _record_core
except ImportError:  # pragma: no cover - the pure-Python build
    _record_core = None  # type: ignore[assignment]

needs_core = pytest.mark.skipif(_record_core is None, reason="the C record core is not built")


class _Key(bytes):
    """A bytes subclass: not the loop's usual record, converted as the reference does."""


_item = st.one_of(
    st.none(),
    st.binary(max_size=300),
    st.binary(max_size=40).map(bytearray),
    st.binary(max_size=40).map(_Key),
)


def _batches(make: Any, keys: list[Any], values: list[Any], positions: Any, count: int,
             limit: int, timestamp: int) -> list[bytes]:  # fmt: skip
    """Every batch the builders fill from ``positions`` (``count`` of them), one at a time."""
    got: list[bytes] = []
    start = 0
    while start < count:
        builder = make(limit)
        start += builder.append_many(
            keys, values, timestamp, None, start=start, positions=positions
        )
        builder.set_producer_state(7, 1, start)
        got.append(bytes(builder.build()))
    return got


@needs_core
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    pairs=st.lists(st.tuples(_item, _item), max_size=40),
    data=st.data(),
    limit=st.sampled_from([62, 200, 1024, 16384]),
    compact=st.booleans(),
    timestamp=st.sampled_from([0, 1_700_000_000_000, -5, 2**62]),
)
def test_one_timestamp_without_headers_matches_the_reference(
    pairs: list[tuple[Any, Any]],
    data: st.DataObject,
    limit: int,
    compact: bool,
    timestamp: int,
) -> None:
    keys = [key for key, _ in pairs]
    values = [value for _, value in pairs]
    top = max(len(pairs) - 1, 0)
    order = data.draw(st.lists(st.integers(0, top), max_size=len(pairs))) if pairs else []
    positions: Any = order
    if compact:  # as group_positions() gives them
        positions = memoryview(array.array("q", order).tobytes()).cast("n")  # type: ignore[call-overload]
    expected = _batches(PythonBuilder, keys, values, order, len(order), limit, timestamp)
    got = _batches(_record_core.RecordBatchBuilder, keys, values, positions, len(order), limit,
                   timestamp)  # fmt: skip
    assert got == expected


@needs_core
@pytest.mark.parametrize("bad", [-1, 2, 99])
def test_a_buffer_position_out_of_range_is_named(bad: int) -> None:
    positions = memoryview(array.array("q", [0, bad]).tobytes()).cast("n")  # type: ignore[call-overload]
    builder = _record_core.RecordBatchBuilder(1024)
    with pytest.raises(IndexError, match=rf"position {bad} is outside 0\.\.1"):
        builder.append_many([None, b"k"], [b"a", b"b"], 0, None, positions=positions)


@needs_core
def test_a_record_not_bytes_fails_in_both_builders() -> None:
    values: list[Any] = [b"a", 3]
    for make in (PythonBuilder, _record_core.RecordBatchBuilder):
        with pytest.raises(TypeError):
            make(1024).append_many([None, None], values, 0, None, positions=[0, 1])


@needs_core
def test_a_bad_position_further_on_is_named_when_reached() -> None:
    order = [0, 1] * 10
    order[15] = -7
    positions = memoryview(array.array("q", order).tobytes()).cast("n")  # type: ignore[call-overload]
    for each in (order, positions):
        builder = _record_core.RecordBatchBuilder(16384)
        with pytest.raises(IndexError, match=r"position -7 is outside 0\.\.1"):
            builder.append_many([b"k", None], [b"a", b"b"], 0, None, positions=each)
