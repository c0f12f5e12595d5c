"""Hostile bytes into every decoder: only DecodeError may escape, quickly and without huge
allocations (lying lengths and counts are checked against the bytes left)."""

from __future__ import annotations

import contextlib
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkaline.errors import DecodeError
from kafkaline.protocol.api import REQUEST_TYPES
from kafkaline.protocol.api.fetch import FetchResponse
from kafkaline.protocol.api.metadata import MetadataResponse
from kafkaline.protocol.api.produce import ProduceResponse
from kafkaline.protocol.headers import RequestHeader, ResponseHeader
from kafkaline.protocol.primitives import Reader
from kafkaline.protocol.schema import Message


def all_messages() -> list[type[Message]]:
    messages: list[type[Message]] = [RequestHeader, ResponseHeader]
    for request_type in REQUEST_TYPES:
        messages += [request_type, request_type.RESPONSE_TYPE]
    return messages


MESSAGES = all_messages()

# Small values for lengths and counts are where decoders go wrong, so bias towards them.
_HOSTILE_BYTES = st.one_of(
    st.binary(max_size=64),
    st.lists(st.sampled_from([0, 1, 2, 0x7F, 0x80, 0xFF]), max_size=64).map(bytes),
)


@pytest.mark.parametrize("message", MESSAGES, ids=lambda message: message.__name__)
@settings(max_examples=150, deadline=None)
@given(data=_HOSTILE_BYTES, version_seed=st.integers(0, 1000))
def test_random_bytes_raise_only_decode_error(
    message: type[Message], data: bytes, version_seed: int
) -> None:
    versions = message.VALID_VERSIONS
    assert versions.high is not None
    version = versions.low + version_seed % (versions.high - versions.low + 1)
    with contextlib.suppress(DecodeError):
        message.decode(data, version)


@pytest.mark.parametrize(
    "primitive",
    [
        Reader.int8,
        Reader.int16,
        Reader.int32,
        Reader.int64,
        Reader.uint16,
        Reader.uint32,
        Reader.float64,
        Reader.boolean,
        Reader.uuid,
        Reader.unsigned_varint,
        Reader.varint,
        Reader.varlong,
        Reader.string,
        Reader.nullable_string,
        Reader.compact_string,
        Reader.compact_nullable_string,
        Reader.bytes_,
        Reader.nullable_bytes,
        Reader.compact_bytes,
        Reader.compact_nullable_bytes,
        Reader.tagged_fields,
    ],
    ids=lambda function: function.__name__,
)
@settings(max_examples=100, deadline=None)
@given(data=_HOSTILE_BYTES)
def test_primitives_raise_only_decode_error(primitive: object, data: bytes) -> None:
    assert callable(primitive)
    with contextlib.suppress(DecodeError):
        primitive(Reader(data))


@pytest.mark.parametrize(
    ("message", "version", "body"),
    [
        # responses: [TopicProduceResponse] count 2**31-1 with nothing behind it
        (ProduceResponse, 3, b"\x7f\xff\xff\xff"),
        # flexible: compact array count 2**32-2
        (ProduceResponse, 9, b"\xff\xff\xff\xff\x0f"),
        # throttle, brokers count 2**31-1
        (MetadataResponse, 3, b"\x00\x00\x00\x00\x7f\xff\xff\xff"),
        # records length 2**31-1 after a valid prefix
        (
            FetchResponse,
            4,
            b"\x00\x00\x00\x00"  # throttle_time_ms
            b"\x00\x00\x00\x01\x00\x01t"  # one topic "t"
            b"\x00\x00\x00\x01"  # one partition
            + b"\x00" * 30  # index, error, high watermark, last stable offset
            + b"\xff\xff\xff\xff"  # aborted transactions: null
            + b"\x7f\xff\xff\xff",  # records: claims 2 GiB
        ),
    ],
    ids=["produce-v3-count", "produce-v9-compact-count", "metadata-brokers", "fetch-records"],
)
def test_lying_lengths_fail_fast(message: type[Message], version: int, body: bytes) -> None:
    started = time.perf_counter()
    with pytest.raises(DecodeError):
        message.decode(body, version)
    assert time.perf_counter() - started < 0.1
