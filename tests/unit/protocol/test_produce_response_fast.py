"""ProduceResponse.decode reads flexible versions in their usual shape by hand: it must give
exactly what the generic schema decoder gives, for every shape and for damaged bytes."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kafkaline.errors import DecodeError
from kafkaline.protocol.api import produce as produce_module
from kafkaline.protocol.api.produce import (
    BatchIndexAndErrorMessage,
    LeaderIdAndEpoch,
    PartitionProduceResponse,
    ProduceResponse,
    TopicProduceResponse,
)
from kafkaline.protocol.primitives import Reader
from kafkaline.protocol.schema import decode_message

_INT64 = st.integers(-(2**63), 2**63 - 1)

_PARTITIONS = st.builds(
    PartitionProduceResponse,
    index=st.integers(-(2**31), 2**31 - 1),
    error_code=st.integers(-(2**15), 2**15 - 1),
    base_offset=_INT64,
    log_append_time_ms=_INT64,
    log_start_offset=_INT64,
    record_errors=st.one_of(
        st.just([]),
        st.lists(
            st.builds(
                BatchIndexAndErrorMessage,
                batch_index=st.integers(0, 100),
                batch_index_error_message=st.none() | st.text(max_size=5),
            ),
            max_size=2,
        ),
    ),
    error_message=st.none() | st.text(max_size=5),
    current_leader=st.one_of(
        st.just(LeaderIdAndEpoch()), st.builds(LeaderIdAndEpoch, leader_id=st.integers(0, 9))
    ),
)

_RESPONSES = st.builds(
    ProduceResponse,
    responses=st.lists(
        st.builds(
            TopicProduceResponse,
            # Up to 200 characters: names past the one-byte length go the generic way.
            name=st.text(max_size=200),
            partition_responses=st.lists(_PARTITIONS, max_size=3),
        ),
        max_size=3,
    ),
    throttle_time_ms=st.integers(0, 2**31 - 1),
)


def generic(data: bytes, version: int) -> ProduceResponse:
    return decode_message(ProduceResponse, Reader(data), version)


@settings(max_examples=300, deadline=None)
@given(response=_RESPONSES, version=st.sampled_from([9, 10, 11]))
def test_the_fast_decoder_agrees_with_the_generic_one(
    response: ProduceResponse, version: int
) -> None:
    data = response.encode(version)
    decoded = ProduceResponse.decode(memoryview(data), version)
    assert decoded == generic(data, version)
    assert ProduceResponse.decode(data, version) == decoded


def test_the_usual_answer_to_one_record_takes_the_fast_path() -> None:
    usual = ProduceResponse(
        responses=[
            TopicProduceResponse(
                name="events",
                partition_responses=[
                    PartitionProduceResponse(
                        index=3, error_code=0, base_offset=41, record_errors=[]
                    )
                ],
            )
        ],
        throttle_time_ms=0,
    )
    for version in (9, 10, 11):
        data = usual.encode(version)
        assert produce_module._decode_usual_flexible(memoryview(data)) == usual
        # Trailing bytes: not the usual shape (the generic decoder names the error).
        assert produce_module._decode_usual_flexible(data + b"\x00") is None


@settings(max_examples=300, deadline=None)
@given(
    response=_RESPONSES,
    version=st.sampled_from([9, 10, 11]),
    position=st.integers(0, 10_000),
    value=st.integers(0, 255),
    cut=st.booleans(),
)
def test_damaged_bytes_decode_alike_or_fail_alike(
    response: ProduceResponse, version: int, position: int, value: int, cut: bool
) -> None:
    data = bytearray(response.encode(version))
    position %= len(data)
    if cut:
        del data[position:]
    else:
        data[position] = value
    try:
        expected: ProduceResponse | None = generic(bytes(data), version)
    except DecodeError:
        expected = None
    try:
        decoded: ProduceResponse | None = ProduceResponse.decode(bytes(data), version)
    except DecodeError:
        decoded = None
    assert decoded == expected


def test_an_answer_for_thousands_of_partitions_takes_the_fast_path() -> None:
    # A topic of 3,000 partitions: counts of two varint bytes, and a long topic name.
    many = ProduceResponse(
        responses=[
            TopicProduceResponse(
                name="t" * 200,
                partition_responses=[
                    PartitionProduceResponse(
                        index=index, error_code=0, base_offset=index * 3, record_errors=[]
                    )
                    for index in range(3_000)
                ],
            ),
            TopicProduceResponse(name="other", partition_responses=[]),
        ],
        throttle_time_ms=5,
    )
    for version in (9, 10, 11):
        data = many.encode(version)
        fast = produce_module._decode_usual_flexible(memoryview(data))
        assert fast == many == generic(data, version)
