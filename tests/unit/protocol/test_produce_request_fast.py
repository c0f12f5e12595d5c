"""ProduceRequest's hand-written body writer for flexible versions in their usual shape: it
must write exactly the bytes of the generic schema encoder, and leave everything else
(transactional ids, null records, long names, bad values) to it."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkaline.errors import EncodeError
from kafkaline.protocol.api import produce as produce_module
from kafkaline.protocol.api.produce import (
    PartitionProduceData,
    ProduceRequest,
    TopicProduceData,
    new_produce_request,
)
from kafkaline.protocol.framing import ClientProtocol
from kafkaline.protocol.primitives import SCATTER_MIN_BYTES, ScatterFrame
from kafkaline.protocol.schema import Records, compile_struct

_RECORDS = st.one_of(
    st.none(),
    st.binary(max_size=300),
    st.binary(max_size=50).map(bytearray),
    st.binary(max_size=50).map(lambda data: memoryview(data)),
)

_REQUESTS = st.builds(
    ProduceRequest,
    transactional_id=st.one_of(st.none(), st.none(), st.text(max_size=5)),
    acks=st.sampled_from([-1, 0, 1]),
    timeout_ms=st.integers(0, 2**31 - 1),
    topic_data=st.lists(
        st.builds(
            TopicProduceData,
            # Up to 200 characters: names past the one-byte length go the generic way.
            name=st.text(max_size=200),
            partition_data=st.lists(
                st.builds(
                    PartitionProduceData,
                    index=st.integers(-(2**31), 2**31 - 1),
                    records=_RECORDS,
                ),
                max_size=3,
            ),
        ),
        max_size=3,
    ),
)


def generic_body(request: ProduceRequest, version: int) -> bytes:
    out = bytearray()
    compile_struct(ProduceRequest, version, version >= 9).write(out, request)
    return bytes(out)


def body(request: ProduceRequest, version: int) -> bytes:
    out = bytearray()
    ProduceRequest.body_writer(version).write(out, request)
    return bytes(out)


@settings(max_examples=300, deadline=None)
@given(request=_REQUESTS, version=st.sampled_from([3, 8, 9, 10, 11]))
def test_the_body_writer_writes_what_the_generic_encoder_writes(
    request: ProduceRequest, version: int
) -> None:
    assert body(request, version) == generic_body(request, version)


@settings(max_examples=200, deadline=None)
@given(request=_REQUESTS)
def test_new_produce_request_makes_what_the_constructors_make(request: ProduceRequest) -> None:
    topic_data: dict[str, list[tuple[int, Records | None]]] = {}
    for topic in request.topic_data:
        # Names may repeat in the generated requests: the dict groups them, as the Sender's.
        topic_data.setdefault(topic.name, []).extend(
            (partition.index, partition.records) for partition in topic.partition_data
        )
    made = new_produce_request(
        request.transactional_id, request.acks, request.timeout_ms, topic_data
    )
    expected = ProduceRequest(
        transactional_id=request.transactional_id,
        acks=request.acks,
        timeout_ms=request.timeout_ms,
        topic_data=[
            TopicProduceData(
                name=name,
                partition_data=[
                    PartitionProduceData(index=index, records=records)
                    for index, records in partitions
                ],
            )
            for name, partitions in topic_data.items()
        ],
    )
    assert type(made) is ProduceRequest and made == expected
    for version in (8, 9):
        assert body(made, version) == generic_body(expected, version)


# Record sets large enough to be referenced by a ScatterFrame, small ones, and null ones
# (which send the whole request to the generic encoder after the hand writer has written, and
# deferred, part of it: what it wrote must be taken back).
_SCATTER_REQUESTS = st.builds(
    ProduceRequest,
    transactional_id=st.none(),
    acks=st.sampled_from([-1, 1]),
    timeout_ms=st.integers(0, 2**31 - 1),
    topic_data=st.lists(
        st.builds(
            TopicProduceData,
            name=st.text(max_size=3),
            partition_data=st.lists(
                st.builds(
                    PartitionProduceData,
                    index=st.integers(0, 100),
                    records=st.one_of(
                        st.binary(min_size=SCATTER_MIN_BYTES, max_size=SCATTER_MIN_BYTES + 300),
                        st.binary(max_size=200),
                        st.none(),
                    ),
                ),
                max_size=3,
            ),
        ),
        max_size=3,
    ),
)


def assembled(frame: ScatterFrame) -> bytes:
    """The bytes a frame stands for: its own, with the deferred record sets in their places."""
    out = bytearray()
    start = 0
    for position, data in frame.deferred:
        out += frame[start:position]
        out += data
        start = position
    out += frame[start:]
    return bytes(out)


@settings(max_examples=200, deadline=None)
@given(request=_SCATTER_REQUESTS, version=st.sampled_from([9, 11]))
def test_into_a_scatter_frame_it_writes_what_the_generic_encoder_writes(
    request: ProduceRequest, version: int
) -> None:
    frame = ScatterFrame(b"head")
    ProduceRequest.body_writer(version).write(frame, request)
    assert assembled(frame) == b"head" + generic_body(request, version)
    assert all(len(data) >= SCATTER_MIN_BYTES for _, data in frame.deferred)


def test_a_request_it_cannot_finish_is_written_by_the_generic_encoder_alone() -> None:
    big = bytes(SCATTER_MIN_BYTES)
    request = ProduceRequest(
        acks=1,
        timeout_ms=1,
        topic_data=[
            TopicProduceData(
                name="t",
                partition_data=[
                    PartitionProduceData(index=0, records=big),
                    PartitionProduceData(index=1, records=None),
                ],
            )
        ],
    )
    frame = ScatterFrame(b"head")
    ProduceRequest.body_writer(11).write(frame, request)
    generic = ScatterFrame(b"head")
    compile_struct(ProduceRequest, 11, True).write(generic, request)
    # Only what the generic encoder wrote and deferred (the big set once, at its place).
    assert bytes(frame) == bytes(generic)
    assert frame.deferred == generic.deferred and len(frame.deferred) == 1
    assert assembled(frame) == b"head" + generic_body(request, 11)


def test_framing_uses_it_and_the_frame_matches_the_generic_encoding() -> None:
    request = ProduceRequest(
        acks=1,
        timeout_ms=30_000,
        topic_data=[
            TopicProduceData(
                name="events", partition_data=[PartitionProduceData(index=2, records=b"batch")]
            )
        ],
    )
    frame = ClientProtocol("client").send(request, 11)
    assert bytes(frame).endswith(request.encode(11))
    assert type(ProduceRequest.body_writer(11)).__name__ == "_UsualFlexibleRequestWriter"


@pytest.mark.parametrize(
    ("request_", "named"),
    [
        (ProduceRequest(acks=1 << 20, timeout_ms=1, topic_data=[]), "acks"),
        (
            ProduceRequest(
                acks=1,
                timeout_ms=1,
                topic_data=[
                    TopicProduceData(
                        name="t", partition_data=[PartitionProduceData(index=1 << 40, records=b"")]
                    )
                ],
            ),
            "index",
        ),
        (
            ProduceRequest(
                acks=1,
                timeout_ms=1,
                topic_data=[TopicProduceData(name=7, partition_data=[])],  # type: ignore[arg-type]
            ),
            "name",
        ),
    ],
)
def test_a_bad_value_gets_the_generic_encoders_named_error(
    request_: ProduceRequest, named: str
) -> None:
    out = bytearray(b"head")
    with pytest.raises(EncodeError, match=named):
        ProduceRequest.body_writer(11).write(out, request_)


def test_a_request_for_thousands_of_partitions_is_written_by_hand() -> None:
    # Counts and a name length of two varint bytes: still the usual shape.
    request = new_produce_request(
        None,
        1,
        30_000,
        {
            "t" * 200: [(index, b"batch-%d" % index) for index in range(3_000)],
            "other": [(0, bytes(20_000))],
        },
    )
    written = bytearray()
    assert produce_module._write_usual(written, request, None, _unused_records_writer)
    assert bytes(written) == generic_body(request, 11) == body(request, 11)


def _unused_records_writer(out: bytearray, records: object) -> None:
    raise AssertionError("only views go to the generic records writer")


def test_new_produce_request_takes_pairs_of_any_sequence_shape() -> None:
    made = new_produce_request(None, 1, 10, {"t": [[0, b"x"], (1, None)]})  # type: ignore[list-item]
    assert made == ProduceRequest(
        acks=1,
        timeout_ms=10,
        topic_data=[
            TopicProduceData(
                name="t",
                partition_data=[
                    PartitionProduceData(index=0, records=b"x"),
                    PartitionProduceData(index=1, records=None),
                ],
            )
        ],
    )


@pytest.mark.parametrize(
    "size",
    [0x7E, 0x7F, 0x3FFE, 0x3FFF, 0x4000, 10 * 6_000, 0x1FFFFE, 0x1FFFFF, 0x200000],
)
@pytest.mark.parametrize("scatter", [False, True])
def test_record_sets_around_each_length_width_match_the_generic_encoder(
    size: int, scatter: bool
) -> None:
    # The compact length of a record set is one to five varint bytes; the hand writer spells
    # out the short ones.
    partition = PartitionProduceData(index=3, records=bytes(size))
    request = ProduceRequest(
        transactional_id=None,
        acks=1,
        timeout_ms=30_000,
        topic_data=[TopicProduceData(name="t", partition_data=[partition])],
    )
    frame = ScatterFrame(b"head") if scatter else bytearray(b"head")
    ProduceRequest.body_writer(11).write(frame, request)
    written = assembled(frame) if isinstance(frame, ScatterFrame) else bytes(frame)
    assert written == b"head" + generic_body(request, 11)
