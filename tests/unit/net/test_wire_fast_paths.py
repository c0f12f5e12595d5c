"""The shortcuts the network path takes in framing and decoding (see the comments in
kafkaline.protocol.framing and Reader.unsigned_varint) give the bytes and messages the
declarative schemas give."""

from __future__ import annotations

import struct

import pytest

from kafkaline.errors import DecodeError, EncodeError
from kafkaline.protocol import ClientProtocol
from kafkaline.protocol.api.api_versions import (
    ApiVersion,
    ApiVersionsRequest,
    ApiVersionsResponse,
)
from kafkaline.protocol.api.metadata import MetadataRequest
from kafkaline.protocol.api.produce import (
    PartitionProduceData,
    PartitionProduceResponse,
    ProduceRequest,
    ProduceResponse,
    TopicProduceData,
    TopicProduceResponse,
)
from kafkaline.protocol.headers import RequestHeader, ResponseHeader
from kafkaline.protocol.primitives import Reader, write_tagged_fields, write_unsigned_varint


def produce_request() -> ProduceRequest:
    return ProduceRequest(
        acks=1,
        timeout_ms=30_000,
        topic_data=[
            TopicProduceData(
                name="events", partition_data=[PartitionProduceData(index=2, records=b"r" * 70)]
            )
        ],
    )


PRODUCED = ProduceResponse(
    responses=[
        TopicProduceResponse(
            name="events",
            partition_responses=[PartitionProduceResponse(index=2, error_code=0, base_offset=41)],
        )
    ]
)


@pytest.mark.parametrize("version", [3, 8, 9, 11])
def test_request_frames_are_the_declared_header_and_body(version: int) -> None:
    protocol = ClientProtocol("client-1")
    for correlation_id in range(2):  # the second one is framed from the cached encoder
        request = produce_request()
        frame = protocol.send(request, version)
        header = bytearray()
        flexible = request.is_flexible(version)
        RequestHeader(
            request_api_key=0,
            request_api_version=version,
            correlation_id=correlation_id,
            client_id="client-1",
        ).encode_into(header, 2 if flexible else 1)
        body = header + request.encode(version)
        assert bytes(frame) == struct.pack(">i", len(body)) + body


def test_a_version_the_request_does_not_implement_is_refused_every_time() -> None:
    protocol = ClientProtocol("me")
    for _ in range(2):
        with pytest.raises(EncodeError, match="version 2 is not supported"):
            protocol.send(produce_request(), 2)
    assert protocol.in_flight == ()


def response_frame(correlation_id: int, body: bytes, header_tags: bytes | None) -> bytes:
    """A frame with header v0 (``header_tags`` None) or v1 with these tagged-field bytes."""
    header = struct.pack(">i", correlation_id) + (header_tags if header_tags is not None else b"")
    return struct.pack(">i", len(header) + len(body)) + header + body


def tags(*fields: tuple[int, bytes]) -> bytes:
    out = bytearray()
    write_tagged_fields(out, list(fields))
    return bytes(out)


@pytest.mark.parametrize(
    ("version", "header_tags"),
    [
        (8, None),  # header v0
        (9, tags()),  # header v1, no tagged fields: the common case
        (11, tags((0, b"abc"), (7, b""))),  # header v1 with tagged fields: the general reader
    ],
)
def test_response_headers_of_every_shape_give_the_declared_response(
    version: int, header_tags: bytes | None
) -> None:
    protocol = ClientProtocol("me")
    protocol.send(produce_request(), version)
    protocol.receive_data(response_frame(0, PRODUCED.encode(version), header_tags))
    assert protocol.next_response() == (0, PRODUCED)


def test_a_response_with_trailing_bytes_is_refused_naming_the_message() -> None:
    protocol = ClientProtocol("me")
    protocol.send(produce_request(), 9)
    protocol.receive_data(response_frame(0, PRODUCED.encode(9) + b"\x00", tags()))
    with pytest.raises(DecodeError, match="trailing bytes after ProduceResponse v9"):
        protocol.next_response()


def test_a_frame_too_short_for_a_correlation_id_is_a_decode_error() -> None:
    protocol = ClientProtocol("me")
    protocol.send(MetadataRequest(topics=None), 12)
    protocol.receive_data(struct.pack(">i", 2) + b"\x00\x00")
    with pytest.raises(DecodeError, match="truncated"):
        protocol.next_response()


def test_a_class_with_its_own_decode_keeps_it() -> None:
    # ApiVersionsResponse reads an UNSUPPORTED_VERSION answer as v0, whatever was asked.
    protocol = ClientProtocol("me")
    protocol.send(ApiVersionsRequest(), 3)
    answer = ApiVersionsResponse(
        error_code=35, api_keys=[ApiVersion(api_key=18, min_version=0, max_version=2)]
    )
    header = bytearray()
    ResponseHeader(correlation_id=0).encode_into(header, 0)
    body = bytes(header) + answer.encode(0)
    protocol.receive_data(struct.pack(">i", len(body)) + body)
    assert protocol.next_response() == (0, answer)


@pytest.mark.parametrize("value", [0, 1, 0x7F, 0x80, 0x3FFF, 0x4000, 2**32 - 1])
def test_unsigned_varints_read_back_around_the_one_byte_boundary(value: int) -> None:
    out = bytearray()
    write_unsigned_varint(out, value)
    reader = Reader(bytes(out) + b"\x01")
    assert reader.unsigned_varint() == value
    assert reader.position == len(out)
    assert reader.unsigned_varint() == 1


def test_a_varint_at_the_end_of_a_sub_reader_is_truncated() -> None:
    # The one-byte path must respect the reader's end, not the buffer's.
    reader = Reader(b"\x05\x05", 0, 1)
    assert reader.unsigned_varint() == 5
    with pytest.raises(DecodeError, match="truncated varint"):
        reader.unsigned_varint()
