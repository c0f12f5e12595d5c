"""The compiled core's reader of a ProduceResponse's usual shape against its reference, the
Python ``_decode_usual_flexible``: equal objects for every body, None for the same bodies
(damaged, cut, or of another shape). Skipped in the pure-Python build, which has no core."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkaline.protocol.api import produce as produce_module
from kafkaline.protocol.api.produce import (
    LeaderIdAndEpoch,
    PartitionProduceResponse,
    ProduceResponse,
    TopicProduceResponse,
)
from kafkaline.record.core import core_build

pytestmark = pytest.mark.skipif(
    core_build() != "compiled", reason="the pure-Python build has no compiled core"
)

_INT64 = st.integers(-(2**63), 2**63 - 1)

_USUAL_PARTITIONS = st.builds(
    PartitionProduceResponse,
    index=st.integers(-(2**31), 2**31 - 1),
    error_code=st.integers(-(2**15), 2**15 - 1),
    base_offset=_INT64,
    log_append_time_ms=_INT64,
    log_start_offset=_INT64,
    record_errors=st.just([]),
)

_RESPONSES = st.builds(
    ProduceResponse,
    responses=st.lists(
        st.builds(
            TopicProduceResponse,
            # Past 127 characters a name's length takes two varint bytes.
            name=st.text(max_size=200),
            partition_responses=st.lists(_USUAL_PARTITIONS, max_size=4),
        ),
        max_size=3,
    ),
    throttle_time_ms=st.integers(0, 2**31 - 1),
)


def compiled() -> Callable[[bytes | bytearray], ProduceResponse | None]:
    decoder = produce_module.compiled_decoder()
    assert decoder is not None, "the compiled core has no decode_produce_response"

    def decode(data: bytes | bytearray) -> ProduceResponse | None:
        return decoder(
            data, ProduceResponse, TopicProduceResponse, PartitionProduceResponse, LeaderIdAndEpoch
        )

    return decode


def test_the_compiled_reader_is_the_one_in_use() -> None:
    assert produce_module._COMPILED_DECODE is not None


def test_the_pure_python_switch_turns_the_compiled_reader_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("KAFKALINE_PURE_PYTHON", "1")
    assert produce_module.compiled_decoder() is None


@settings(max_examples=300, deadline=None)
@given(response=_RESPONSES, version=st.sampled_from([9, 10, 11]))
def test_the_compiled_reader_gives_the_reference_objects(
    response: ProduceResponse, version: int
) -> None:
    data = response.encode(version)
    reference = produce_module._decode_usual_flexible(data)
    assert reference is not None
    decoded = compiled()(data)
    assert decoded == reference
    assert decoded == response
    # A bytearray (the framing's buffer type) reads alike.
    assert compiled()(bytearray(data)) == reference


@settings(max_examples=500, deadline=None)
@given(
    response=_RESPONSES,
    version=st.sampled_from([9, 10, 11]),
    position=st.integers(0, 10_000),
    value=st.integers(0, 255),
    cut=st.booleans(),
)
def test_damaged_bytes_read_alike(
    response: ProduceResponse, version: int, position: int, value: int, cut: bool
) -> None:
    data = bytearray(response.encode(version))
    position %= len(data)
    if cut:
        del data[position:]
    else:
        data[position] = value
    assert compiled()(bytes(data)) == produce_module._decode_usual_flexible(bytes(data))


def test_partitions_of_one_topic_share_one_default_leader_as_the_reference_does() -> None:
    response = ProduceResponse(
        responses=[
            TopicProduceResponse(
                name="t" * 130,
                partition_responses=[
                    PartitionProduceResponse(index=i, error_code=0, base_offset=i, record_errors=[])
                    for i in range(300)  # a count of two varint bytes
                ],
            )
        ],
        throttle_time_ms=0,
    )
    decoded = compiled()(response.encode(11))
    assert decoded == response
    leaders = {id(p.current_leader) for p in decoded.responses[0].partition_responses}
    assert len(leaders) == 1


def test_not_a_buffer_or_not_a_class_is_refused_by_name() -> None:
    decoder = produce_module.compiled_decoder()
    assert decoder is not None
    with pytest.raises(TypeError, match="argument 2 must be a class"):
        decoder(b"\x01", 1, TopicProduceResponse, PartitionProduceResponse, LeaderIdAndEpoch)
    with pytest.raises(TypeError):
        decoder(
            "text",
            ProduceResponse,
            TopicProduceResponse,
            PartitionProduceResponse,
            LeaderIdAndEpoch,
        )
    with pytest.raises(TypeError, match="takes data"):
        decoder(b"\x01")


class _Plain:
    """A class without slots: the reader sets its fields through setattr."""


_SET_FIELDS: list[str] = []


class _CountingPartition(PartitionProduceResponse):
    """A subclass with its own __setattr__: the reader must call it, not write the slots."""

    def __setattr__(self, name: str, value: object) -> None:
        _SET_FIELDS.append(name)
        object.__setattr__(self, name, value)


def test_classes_without_plain_slots_are_set_through_setattr_and_then_slots_again() -> None:
    decoder = produce_module.compiled_decoder()
    assert decoder is not None
    response = ProduceResponse(
        responses=[
            TopicProduceResponse(
                name="t",
                partition_responses=[
                    PartitionProduceResponse(index=3, error_code=0, base_offset=7, record_errors=[])
                ],
            )
        ],
        throttle_time_ms=5,
    )
    data = response.encode(11)
    plain = decoder(data, _Plain, _Plain, _Plain, _Plain)
    assert isinstance(plain, _Plain)
    (topic,) = plain.responses
    assert topic.name == "t" and plain.throttle_time_ms == 5
    (partition,) = topic.partition_responses
    assert (partition.index, partition.base_offset, partition.current_leader.leader_id) == (
        3,
        7,
        -1,
    )
    _SET_FIELDS.clear()
    counted = decoder(
        data, ProduceResponse, TopicProduceResponse, _CountingPartition, LeaderIdAndEpoch
    )
    (counted_partition,) = counted.responses[0].partition_responses
    assert isinstance(counted_partition, _CountingPartition)
    assert (counted_partition.index, counted_partition.base_offset) == (3, 7)
    assert "base_offset" in _SET_FIELDS
    # Back to the usual classes: their slots are written again, the same objects come out.
    assert compiled()(data) == response
