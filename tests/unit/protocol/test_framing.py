"""ClientProtocol: framing requests, reassembling responses from arbitrary chunks, and refusing
streams that are out of step or hostile."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkaline.errors import (
    CorrelationIdMismatchError,
    DecodeError,
    EncodeError,
    InvalidFrameSizeError,
    ProtocolError,
)
from kafkaline.protocol import ClientProtocol
from kafkaline.protocol.api.api_versions import (
    ApiVersion,
    ApiVersionsRequest,
    ApiVersionsResponse,
)
from kafkaline.protocol.api.metadata import MetadataRequest, MetadataResponse
from kafkaline.protocol.api.produce import (
    PartitionProduceData,
    ProduceRequest,
    ProduceResponse,
    TopicProduceData,
)
from kafkaline.protocol.headers import RequestHeader, ResponseHeader
from kafkaline.protocol.primitives import SCATTER_MIN_BYTES, Reader
from kafkaline.protocol.schema import Response, read_message


def response_frame(correlation_id: int, response: Response, version: int, header: int) -> bytes:
    """A frame as a broker would send it."""
    data = bytearray()
    ResponseHeader(correlation_id=correlation_id).encode_into(data, header)
    response.encode_into(data, version)
    return struct.pack(">i", len(data)) + bytes(data)


METADATA = MetadataResponse(controller_id=1, cluster_id="c")


def produce(acks: int) -> ProduceRequest:
    return ProduceRequest(
        acks=acks,
        timeout_ms=1000,
        topic_data=[
            TopicProduceData(name="t", partition_data=[PartitionProduceData(index=0, records=b"x")])
        ],
    )


def test_send_frames_header_and_body_and_assigns_increasing_correlation_ids() -> None:
    protocol = ClientProtocol("me")
    first = protocol.send(MetadataRequest(topics=None), 12)
    second = protocol.send(MetadataRequest(topics=None), 1)
    assert protocol.last_correlation_id == 1
    for frame, correlation_id, version, header_version in ((first, 0, 12, 2), (second, 1, 1, 1)):
        (size,) = struct.unpack_from(">i", frame)
        assert size == len(frame) - 4
        reader = Reader(frame, 4)
        header = read_message(RequestHeader, reader, header_version)
        assert header == RequestHeader(
            request_api_key=3,
            request_api_version=version,
            correlation_id=correlation_id,
            client_id="me",
        )
        assert MetadataRequest.decode(bytes(frame[reader.position :]), version) == MetadataRequest(
            topics=None
        )
    assert [request.correlation_id for request in protocol.in_flight] == [0, 1]


def test_response_is_returned_with_its_correlation_id() -> None:
    protocol = ClientProtocol("me")
    protocol.send(MetadataRequest(topics=None), 12)
    assert protocol.next_response() is None
    protocol.receive_data(response_frame(0, METADATA, 12, header=1))
    assert protocol.next_response() == (0, METADATA)
    assert protocol.next_response() is None
    assert protocol.in_flight == ()


@settings(max_examples=50, deadline=None)
@given(cuts=st.lists(st.integers(0, 200), max_size=8))
def test_partial_and_coalesced_frames(cuts: list[int]) -> None:
    protocol = ClientProtocol("me")
    protocol.send(MetadataRequest(topics=None), 9)
    protocol.send(produce(acks=1), 3)
    protocol.send(MetadataRequest(topics=None), 4)
    produced = ProduceResponse(throttle_time_ms=5)
    stream = (
        response_frame(0, METADATA, 9, header=1)
        + response_frame(1, produced, 3, header=0)
        + response_frame(2, METADATA, 4, header=0)
    )
    # Deliver the stream in arbitrary chunks, collecting whatever is complete after each.
    responses = []
    start = 0
    for cut in [*sorted(cuts), len(stream)]:
        protocol.receive_data(stream[start:cut] if cut >= start else b"")
        start = max(start, cut)
        while (item := protocol.next_response()) is not None:
            responses.append(item)
    assert responses == [(0, METADATA), (1, produced), (2, METADATA)]
    assert protocol.buffered_bytes == 0


def test_byte_by_byte() -> None:
    protocol = ClientProtocol("me")
    protocol.send(MetadataRequest(topics=None), 12)
    frame = response_frame(0, METADATA, 12, header=1)
    for index in range(len(frame) - 1):
        protocol.receive_data(frame[index : index + 1])
        assert protocol.next_response() is None
    protocol.receive_data(frame[-1:])
    assert protocol.next_response() == (0, METADATA)


def test_unexpected_correlation_id_is_an_error_and_the_connection_is_unusable_after() -> None:
    protocol = ClientProtocol("me")
    protocol.send(MetadataRequest(topics=None), 12)
    protocol.receive_data(response_frame(5, METADATA, 12, header=1))
    with pytest.raises(CorrelationIdMismatchError, match="correlation id 5, expected 0"):
        protocol.next_response()
    with pytest.raises(ProtocolError, match="unusable"):
        protocol.next_response()
    with pytest.raises(ProtocolError, match="unusable"):
        protocol.send(MetadataRequest(topics=None), 12)


def test_response_without_request_is_an_error() -> None:
    protocol = ClientProtocol("me")
    protocol.receive_data(response_frame(0, METADATA, 12, header=1))
    with pytest.raises(CorrelationIdMismatchError, match="no request is waiting"):
        protocol.next_response()


@pytest.mark.parametrize("size", [-1, -(2**31), 1025])
def test_hostile_frame_size_is_refused_before_the_body_arrives(size: int) -> None:
    protocol = ClientProtocol("me", max_frame_size=1024)
    protocol.send(MetadataRequest(topics=None), 12)
    protocol.receive_data(struct.pack(">i", size))
    with pytest.raises(InvalidFrameSizeError):
        protocol.next_response()


def test_undecodable_body_raises_decode_error() -> None:
    protocol = ClientProtocol("me")
    protocol.send(MetadataRequest(topics=None), 12)
    protocol.receive_data(struct.pack(">ii", 6, 0) + b"\x00\xff")
    with pytest.raises(DecodeError):
        protocol.next_response()


def test_frame_too_short_for_a_correlation_id_raises_decode_error() -> None:
    protocol = ClientProtocol("me")
    protocol.send(MetadataRequest(topics=None), 12)
    protocol.receive_data(struct.pack(">i", 2) + b"\x00\x00")
    with pytest.raises(DecodeError):
        protocol.next_response()


def test_acks_zero_expects_no_response() -> None:
    protocol = ClientProtocol("me")
    protocol.send(produce(acks=0), 9)
    assert protocol.awaiting_responses == 0
    protocol.send(MetadataRequest(topics=None), 12)
    assert protocol.awaiting_responses == 1
    # A Kafka broker answers only the metadata request.
    protocol.receive_data(response_frame(1, METADATA, 12, header=1))
    assert protocol.next_response() == (1, METADATA)
    assert protocol.in_flight == ()


def test_last_sent_is_the_request_framed_last_and_whether_it_expects_a_response() -> None:
    # The connection reads it rather than ask the request a second time.
    protocol = ClientProtocol("me")
    assert protocol.last_sent.correlation_id == -1
    protocol.send(produce(acks=0), 9)
    produce_sent = protocol.last_sent
    protocol.send_buffers(MetadataRequest(topics=None), 12)
    metadata_sent = protocol.last_sent
    assert metadata_sent.correlation_id == protocol.last_correlation_id
    assert produce_sent == (0, ProduceRequest.API_KEY, 9, ProduceResponse, False)
    assert metadata_sent == (1, MetadataRequest.API_KEY, 12, MetadataResponse, True)


def test_acks_zero_answer_from_a_broker_that_sends_one_anyway_is_dropped() -> None:
    # Tansu 0.6 answers Produce with acks=0; Kafka does not.
    protocol = ClientProtocol("me")
    protocol.send(produce(acks=0), 9)
    protocol.send(MetadataRequest(topics=None), 12)
    protocol.receive_data(
        response_frame(0, ProduceResponse(), 9, header=1)
        + response_frame(1, METADATA, 12, header=1)
    )
    assert protocol.next_response() == (1, METADATA)
    assert protocol.next_response() is None


def test_api_versions_response_always_uses_header_v0() -> None:
    protocol = ClientProtocol("me")
    protocol.send(ApiVersionsRequest(client_software_name="k", client_software_version="1"), 3)
    answer = ApiVersionsResponse(api_keys=[ApiVersion(api_key=0, min_version=0, max_version=11)])
    protocol.receive_data(response_frame(0, answer, 3, header=0))
    assert protocol.next_response() == (0, answer)


def test_api_versions_unsupported_version_answer_is_read_as_v0() -> None:
    protocol = ClientProtocol("me")
    protocol.send(ApiVersionsRequest(), 4)
    answer = ApiVersionsResponse(
        error_code=35, api_keys=[ApiVersion(api_key=18, min_version=0, max_version=3)]
    )
    protocol.receive_data(response_frame(0, answer, 0, header=0))
    assert protocol.next_response() == (0, answer)


def test_encode_error_leaves_no_trace() -> None:
    protocol = ClientProtocol("me")
    with pytest.raises(EncodeError, match="version 2 is not supported"):
        protocol.send(produce(acks=1), 2)
    with pytest.raises(EncodeError, match=r"TopicProduceData\.name"):
        protocol.send(
            ProduceRequest(acks=1, topic_data=[TopicProduceData(name=None)]),  # type: ignore[arg-type]
            3,
        )
    assert protocol.in_flight == ()
    assert protocol.last_correlation_id == -1
    protocol.send(MetadataRequest(topics=None), 12)
    assert protocol.last_correlation_id == 0


def test_correlation_ids_wrap_to_zero() -> None:
    protocol = ClientProtocol("me", first_correlation_id=2**31 - 1)
    protocol.send(MetadataRequest(topics=None), 12)
    protocol.send(MetadataRequest(topics=None), 12)
    assert [request.correlation_id for request in protocol.in_flight] == [2**31 - 1, 0]


def test_null_client_id() -> None:
    frame = ClientProtocol(None).send(ApiVersionsRequest(), 0)
    assert bytes(frame[-2:]) == b"\xff\xff"


@pytest.mark.parametrize("version", [3, 8, 9, 11])  # records last in the frame before v9
def test_send_buffers_reference_large_record_sets_and_frame_the_same_bytes(version: int) -> None:
    big = [bytearray(b"%d" % index) * 5000 for index in range(3)]  # >= SCATTER_MIN_BYTES
    small = b"s" * 100  # copied into the frame
    request = ProduceRequest(
        acks=1,
        timeout_ms=1000,
        topic_data=[
            TopicProduceData(
                name="t",
                partition_data=[
                    PartitionProduceData(index=0, records=big[0]),
                    PartitionProduceData(index=1, records=small),
                    PartitionProduceData(index=2, records=memoryview(big[1])),
                ],
            ),
            TopicProduceData(
                name="u", partition_data=[PartitionProduceData(index=0, records=big[2])]
            ),
        ],
    )
    copied = ClientProtocol("c").send(request, version)
    scattered = ClientProtocol("c")
    buffers = scattered.send_buffers(request, version)
    assert b"".join(buffers) == copied  # the size too: it counts the referenced bytes
    assert all(len(buffer) > 0 and buffer.format == "B" for buffer in buffers)
    referenced = [buffer.obj for buffer in buffers if len(buffer) >= len(big[0]) - 10]
    assert [id(obj) for obj in referenced] == [id(b) for b in big]  # not copied
    assert scattered.last_correlation_id == 0 and scattered.awaiting_responses == 1
    small_only = ProduceRequest(
        acks=1,
        timeout_ms=1000,
        topic_data=[
            TopicProduceData(
                name="t", partition_data=[PartitionProduceData(index=0, records=small)]
            )
        ],
    )
    (whole,) = scattered.send_buffers(small_only, version)  # one buffer, correlation id 1
    assert bytes(whole[8:12]) == b"\x00\x00\x00\x01"
    assert bytes(whole)[12:] == bytes(ClientProtocol("c").send(small_only, version))[12:]


@pytest.mark.parametrize("version", [9, 11])
@pytest.mark.parametrize("kind", [bytes, bytearray])
def test_the_usual_produce_writer_references_batches_from_the_scatter_threshold_on(
    version: int, kind: type[bytes] | type[bytearray]
) -> None:
    # The flexible writer's own fast path for referenced batches: sizes on both sides of
    # the threshold, and a length whose compact varint takes 3 bytes.
    sizes = [SCATTER_MIN_BYTES - 1, SCATTER_MIN_BYTES, 70_000, 1]
    records = [kind(bytes([65 + index])) * size for index, size in enumerate(sizes)]
    request = ProduceRequest(
        acks=-1,
        timeout_ms=30_000,
        topic_data=[
            TopicProduceData(
                name="topic",
                partition_data=[
                    PartitionProduceData(index=index, records=batch)
                    for index, batch in enumerate(records)
                ],
            )
        ],
    )
    copied = ClientProtocol("c").send(request, version)
    buffers = ClientProtocol("c").send_buffers(request, version)
    assert b"".join(buffers) == copied
    referenced = {id(buffer.obj) for buffer in buffers}
    assert [id(batch) in referenced for batch in records] == [False, True, True, False]
