"""Hostile Produce responses into the client's response path (ClientProtocol, what every
BrokerConnection reads through), with Hypothesis: random bodies, valid bodies cut short or with
bytes after them, wrong correlation ids, lying frame sizes, all fed in arbitrary chunks.

What must hold: only a ProtocolError (a KafkaError) ever escapes, so the connection's handler
closes the connection and fails its requests with a retriable connection error (see
tests/integration/faults/test_malformed_responses.py for that, end to end); a malformed frame
is never returned as a response; after an error the protocol refuses to go on; and a valid
response split anywhere decodes to exactly what was sent.
"""

from __future__ import annotations

import itertools
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkaline.errors import CorrelationIdMismatchError, InvalidFrameSizeError, ProtocolError
from kafkaline.protocol import ClientProtocol
from kafkaline.protocol.api import ProduceRequest, ProduceResponse
from kafkaline.protocol.api.produce import (
    PartitionProduceData,
    PartitionProduceResponse,
    TopicProduceData,
    TopicProduceResponse,
)
from kafkaline.protocol.headers import ResponseHeader, response_header_version

VERSIONS = st.integers(ProduceRequest.VALID_VERSIONS.low, 11)


def produce_request() -> ProduceRequest:
    return ProduceRequest(
        acks=-1,
        timeout_ms=1000,
        topic_data=[
            TopicProduceData(
                name="events", partition_data=[PartitionProduceData(index=0, records=b"x" * 64)]
            )
        ],
    )


def produce_response(base_offset: int = 42) -> ProduceResponse:
    return ProduceResponse(
        responses=[
            TopicProduceResponse(
                name="events",
                partition_responses=[
                    PartitionProduceResponse(index=0, error_code=0, base_offset=base_offset)
                ],
            )
        ]
    )


def header_and_body(correlation_id: int, version: int, body: bytes | None = None) -> bytes:
    data = bytearray()
    flexible = ProduceResponse.is_flexible(version)
    ResponseHeader(correlation_id=correlation_id).encode_into(
        data, response_header_version(ProduceRequest.API_KEY, flexible)
    )
    if body is None:
        produce_response().encode_into(data, version)
    else:
        data += body
    return bytes(data)


def framed(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def feed(protocol: ClientProtocol, data: bytes, cuts: list[int]) -> list[object]:
    """Feed ``data`` in pieces cut at ``cuts``; return what next_response() gave, or the
    error it raised (then stop, as a connection would)."""
    outcomes: list[object] = []
    points = sorted({cut % (len(data) + 1) for cut in cuts} | {0, len(data)})
    for start, end in itertools.pairwise(points):
        protocol.receive_data(data[start:end])
        try:
            while (item := protocol.next_response()) is not None:
                outcomes.append(item)
        except ProtocolError as error:
            outcomes.append(error)
            return outcomes
    return outcomes


def sent(version: int) -> tuple[ClientProtocol, int]:
    protocol = ClientProtocol("fuzz")
    protocol.send(produce_request(), version)
    return protocol, protocol.last_correlation_id


CUTS = st.lists(st.integers(0, 10_000), max_size=6)


@settings(max_examples=300, deadline=None)
@given(version=VERSIONS, body=st.binary(max_size=120), cuts=CUTS)
def test_a_random_body_raises_protocol_error_or_decodes_but_nothing_else(
    version: int, body: bytes, cuts: list[int]
) -> None:
    protocol, correlation_id = sent(version)
    outcomes = feed(protocol, framed(header_and_body(correlation_id, version, body)), cuts)
    assert len(outcomes) == 1
    (outcome,) = outcomes
    if isinstance(outcome, ProtocolError):
        return
    # The bytes happened to be a well-formed ProduceResponse: then it is exactly that.
    assert isinstance(outcome, tuple)
    assert outcome[0] == correlation_id
    assert isinstance(outcome[1], ProduceResponse)
    assert ProduceResponse.decode(body, version) == outcome[1]


@settings(max_examples=200, deadline=None)
@given(version=VERSIONS, data=st.data(), cuts=CUTS)
def test_a_valid_body_cut_short_is_a_protocol_error_never_a_response(
    version: int, data: st.DataObject, cuts: list[int]
) -> None:
    protocol, correlation_id = sent(version)
    whole = header_and_body(correlation_id, version)
    body_start = len(header_and_body(correlation_id, version, b""))
    keep = data.draw(st.integers(body_start, len(whole) - 1), label="bytes kept")
    outcomes = feed(protocol, framed(whole[:keep]), cuts)
    assert len(outcomes) == 1 and isinstance(outcomes[0], ProtocolError), outcomes


@settings(max_examples=200, deadline=None)
@given(version=VERSIONS, junk=st.binary(min_size=1, max_size=40), cuts=CUTS)
def test_bytes_after_a_valid_body_are_a_protocol_error(
    version: int, junk: bytes, cuts: list[int]
) -> None:
    # Trailing bytes mean the broker used another version than we think: nothing in the
    # response can be trusted, the base offset included.
    protocol, correlation_id = sent(version)
    outcomes = feed(protocol, framed(header_and_body(correlation_id, version) + junk), cuts)
    assert len(outcomes) == 1 and isinstance(outcomes[0], ProtocolError), outcomes


@settings(max_examples=200, deadline=None)
@given(version=VERSIONS, offset=st.integers(1, 2**31 - 1), cuts=CUTS)
def test_a_response_to_another_correlation_id_is_refused(
    version: int, offset: int, cuts: list[int]
) -> None:
    protocol, correlation_id = sent(version)
    wrong = (correlation_id + offset) % 2**31
    outcomes = feed(protocol, framed(header_and_body(wrong, version)), cuts)
    assert len(outcomes) == 1 and isinstance(outcomes[0], CorrelationIdMismatchError), outcomes
    assert str(wrong) in str(outcomes[0])


@settings(max_examples=100, deadline=None)
@given(
    version=VERSIONS,
    size=st.one_of(st.integers(-(2**31), -1), st.integers(200 * 2**20, 2**31 - 1)),
    rest=st.binary(max_size=40),
)
def test_a_lying_frame_size_is_refused_before_anything_is_allocated(
    version: int, size: int, rest: bytes
) -> None:
    protocol, _ = sent(version)
    outcomes = feed(protocol, struct.pack(">i", size) + rest, [])
    assert len(outcomes) == 1 and isinstance(outcomes[0], InvalidFrameSizeError), outcomes
    assert str(size) in str(outcomes[0])


@settings(max_examples=100, deadline=None)
@given(version=VERSIONS, garbage=st.binary(min_size=4, max_size=200))
def test_after_an_error_the_protocol_refuses_to_go_on(version: int, garbage: bytes) -> None:
    protocol, correlation_id = sent(version)
    protocol.receive_data(framed(header_and_body(correlation_id, version) + b"\x00junk"))
    with pytest.raises(ProtocolError):
        protocol.next_response()
    # Even a valid frame after it is not believed: the stream's framing is lost.
    with pytest.raises(ProtocolError, match="unusable"):
        protocol.receive_data(framed(header_and_body(correlation_id + 1, version)) + garbage)
    with pytest.raises(ProtocolError, match="unusable"):
        protocol.next_response()
    with pytest.raises(ProtocolError, match="unusable"):
        protocol.send(produce_request(), version)


@settings(max_examples=200, deadline=None)
@given(version=VERSIONS, base_offset=st.integers(0, 2**62), cuts=CUTS)
def test_a_valid_response_split_anywhere_decodes_to_what_was_sent(
    version: int, base_offset: int, cuts: list[int]
) -> None:
    protocol, correlation_id = sent(version)
    data = bytearray()
    flexible = ProduceResponse.is_flexible(version)
    ResponseHeader(correlation_id=correlation_id).encode_into(
        data, response_header_version(ProduceRequest.API_KEY, flexible)
    )
    expected = produce_response(base_offset)
    expected.encode_into(data, version)
    outcomes = feed(protocol, framed(bytes(data)), cuts)
    assert outcomes == [(correlation_id, expected)]
    assert protocol.awaiting_responses == 0
