"""The compiled core's writer of a ProduceRequest's usual v9+ body against its reference, the
Python ``_write_usual``: the same answer (usual or not), the same bytes, the same record sets
referenced at the same places of a ScatterFrame. Skipped in the pure-Python build."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkaline.protocol.api import produce as produce_module
from kafkaline.protocol.api.produce import (
    PartitionProduceData,
    ProduceRequest,
    TopicProduceData,
)
from kafkaline.protocol.primitives import SCATTER_MIN_BYTES, ScatterFrame
from kafkaline.protocol.schema import RECORDS, Records, WriteFn
from kafkaline.record.core import core_build

pytestmark = pytest.mark.skipif(
    core_build() != "compiled", reason="the pure-Python build has no compiled core"
)

_RECORDS = st.one_of(
    st.none(),
    st.binary(max_size=300),
    st.binary(max_size=50).map(bytearray),
    st.binary(max_size=50).map(lambda data: memoryview(data)),
    st.binary(min_size=SCATTER_MIN_BYTES, max_size=SCATTER_MIN_BYTES + 20_000),
    st.binary(min_size=SCATTER_MIN_BYTES, max_size=SCATTER_MIN_BYTES + 10).map(bytearray),
)

_INDEX = st.one_of(st.integers(-(2**31), 2**31 - 1), st.sampled_from([2**31, -(2**31) - 1]))

_REQUESTS = st.builds(
    ProduceRequest,
    transactional_id=st.one_of(st.none(), st.none(), st.text(max_size=5)),
    acks=st.one_of(st.sampled_from([-1, 0, 1, True]), st.integers(-(2**16), 2**16)),
    timeout_ms=st.one_of(st.integers(0, 2**31 - 1), st.sampled_from([2**31, -(2**31) - 1])),
    topic_data=st.one_of(
        st.lists(
            st.builds(
                TopicProduceData,
                # Past 127 bytes a name's length takes two varint bytes; lone surrogates
                # do not encode.
                name=st.one_of(st.text(max_size=200), st.just("\udc80")),
                partition_data=st.lists(
                    st.builds(PartitionProduceData, index=_INDEX, records=_RECORDS),
                    max_size=140,
                ).map(lambda parts: parts if len(parts) < 4 or len(parts) > 126 else parts[:3]),
            ),
            max_size=3,
        ),
        st.lists(
            st.builds(
                TopicProduceData,
                name=st.text(max_size=5),
                partition_data=st.just(()),
            ),
            max_size=2,
        ).map(tuple),
    ),
)

_RECORDS_WRITER: WriteFn = RECORDS.codec(11, True, True).write


def compiled() -> Callable[..., bool]:
    writer = produce_module.compiled_function("write_produce_request")
    assert writer is not None, "the compiled core has no write_produce_request"
    return writer  # type: ignore[return-value]


def both(request: ProduceRequest, scatter: bool) -> tuple[tuple[object, ...], tuple[object, ...]]:
    """(usual?, bytes, deferred) from the reference and from the compiled writer."""
    results = []
    for write in ("python", "compiled"):
        out: bytearray = ScatterFrame(b"head") if scatter else bytearray(b"head")
        deferred = out.deferred if isinstance(out, ScatterFrame) else None
        if write == "python":
            usual = produce_module._write_usual(out, request, deferred, _RECORDS_WRITER)
        else:
            usual = compiled()(out, request, deferred, _RECORDS_WRITER, SCATTER_MIN_BYTES)
        # Once not usual, what was written is taken back: only the answer counts then.
        kept = (bytes(out), [(p, bytes(d)) for p, d in deferred or ()]) if usual else None
        results.append((usual, kept))
    return tuple(results[0]), tuple(results[1])


def test_the_compiled_writer_is_the_one_in_use() -> None:
    assert produce_module._COMPILED_WRITE is not None


@settings(max_examples=400, deadline=None)
@given(request=_REQUESTS, scatter=st.booleans())
def test_the_compiled_writer_writes_what_the_reference_writes(
    request: ProduceRequest, scatter: bool
) -> None:
    reference, written = both(request, scatter)
    assert written == reference


def test_a_request_of_the_usual_shape_is_written_by_it() -> None:
    # Counts and a name length of two varint bytes, a record set referenced, not copied.
    request = produce_module.new_produce_request(
        None, 1, 30_000, {"t" * 200: [(i, b"b%d" % i) for i in range(300)], "u": [(0, bytes(5000))]}
    )
    reference, written = both(request, scatter=True)
    assert written == reference
    assert written[0] is True


def test_objects_of_another_shape_are_not_usual() -> None:
    class NoTopics:
        transactional_id = None
        acks = 1
        timeout_ms = 1

    assert compiled()(bytearray(), NoTopics(), None, _RECORDS_WRITER, SCATTER_MIN_BYTES) is False
    odd = ProduceRequest(acks=1, timeout_ms=1, topic_data=[object()])  # type: ignore[list-item]
    assert compiled()(bytearray(), odd, None, _RECORDS_WRITER, SCATTER_MIN_BYTES) is False
    float_acks = ProduceRequest(acks=1.0, timeout_ms=1, topic_data=[])  # type: ignore[arg-type]
    assert compiled()(bytearray(), float_acks, None, _RECORDS_WRITER, SCATTER_MIN_BYTES) is False


def test_bad_arguments_are_refused_by_name() -> None:
    request = ProduceRequest(acks=1, timeout_ms=1, topic_data=[])
    with pytest.raises(TypeError, match="out must be a bytearray"):
        compiled()(b"", request, None, _RECORDS_WRITER, SCATTER_MIN_BYTES)
    with pytest.raises(TypeError, match="deferred must be a list or None"):
        compiled()(bytearray(), request, (), _RECORDS_WRITER, SCATTER_MIN_BYTES)
    with pytest.raises(TypeError, match="takes out, request"):
        compiled()(bytearray())


class _PlainPartition:
    """No slots: the writer reads its fields through getattr."""

    def __init__(self, index: int, records: bytes) -> None:
        self.index = index
        self.records = records


class _ShiftedPartition(PartitionProduceData):
    """Its own __getattribute__: the writer must ask it, not read the slots."""

    def __getattribute__(self, name: str) -> object:
        value = object.__getattribute__(self, name)
        return value + 1 if name == "index" else value


def test_partitions_of_any_class_are_read_as_getattr_reads_them() -> None:
    shifted = _ShiftedPartition(index=4, records=b"s")
    unset = object.__new__(PartitionProduceData)  # no field set: not of the usual shape
    request = ProduceRequest(
        acks=1,
        timeout_ms=1,
        topic_data=[
            TopicProduceData(
                name="t",
                partition_data=[
                    PartitionProduceData(index=1, records=b"a"),
                    _PlainPartition(2, b"bb"),  # type: ignore[list-item]
                    shifted,
                    PartitionProduceData(index=3, records=b"c"),
                ],
            )
        ],
    )
    reference, written = both(request, scatter=False)
    assert written == reference
    assert written[0] is True
    kept = written[1]
    assert isinstance(kept, tuple) and b"\x00\x00\x00\x05\x02s\x00" in kept[0]
    request.topic_data[0].partition_data.append(unset)
    reference, written = both(request, scatter=False)
    assert written == reference == (False, None)


def test_the_compiled_partitions_are_the_reference_objects() -> None:
    make = produce_module.compiled_function("new_partition_data")
    assert make is not None and produce_module._COMPILED_PARTITIONS is not None
    pairs: list[tuple[int, Records | None]] = [
        (0, b"a"),
        (2**31 - 1, bytearray(b"b")),
        (5, None),
    ]
    made = make(PartitionProduceData, pairs)
    assert made == produce_module._new_partition_data(pairs)
    assert make(PartitionProduceData, tuple(pairs)) == made
    assert all(type(partition) is PartitionProduceData for partition in made)
    # Not 2-tuples, or not a list or tuple: the Python reference decides.
    assert make(PartitionProduceData, [(0, b"a"), [1, b"b"]]) is None
    assert make(PartitionProduceData, [(0, b"a", 1)]) is None
    assert make(PartitionProduceData, iter(pairs)) is None
    plain = make(_PlainPartition, [(7, b"p")])
    assert isinstance(plain, list) and (plain[0].index, plain[0].records) == (7, b"p")
    with pytest.raises(TypeError, match="takes a class and the pairs"):
        make(object())
