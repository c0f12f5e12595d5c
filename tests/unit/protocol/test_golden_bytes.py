"""Byte-exact encodings written out by hand from the protocol guide, so the codec cannot agree
with itself while disagreeing with Kafka."""

from __future__ import annotations

from kafkaline.protocol import ClientProtocol
from kafkaline.protocol.api.api_versions import ApiVersionsRequest, ApiVersionsResponse
from kafkaline.protocol.api.produce import (
    LeaderIdAndEpoch,
    PartitionProduceData,
    PartitionProduceResponse,
    ProduceRequest,
    ProduceResponse,
    TopicProduceData,
    TopicProduceResponse,
)

RECORDS = bytes.fromhex("01020304")


def produce_request() -> ProduceRequest:
    return ProduceRequest(
        transactional_id=None,
        acks=-1,
        timeout_ms=30_000,
        topic_data=[
            TopicProduceData(
                name="topic", partition_data=[PartitionProduceData(index=0, records=RECORDS)]
            )
        ],
    )


def test_api_versions_v0_request_frame() -> None:
    frame = ClientProtocol("kafkaline").send(ApiVersionsRequest(), 0)
    assert bytes(frame) == bytes.fromhex(
        "00000013"  # size 19
        "0012"  # api key 18
        "0000"  # api version 0
        "00000000"  # correlation id 0
        "0009" + b"kafkaline".hex()  # client id, int16 length
        # v0 body is empty
    )


def test_api_versions_v3_request_frame() -> None:
    request = ApiVersionsRequest(client_software_name="kafkaline", client_software_version="0.1")
    frame = ClientProtocol("kafkaline", first_correlation_id=7).send(request, 3)
    assert (
        bytes(frame)
        == bytes.fromhex(
            "00000023"  # size 35
            "0012"  # api key 18
            "0003"  # api version 3
            "00000007"  # correlation id 7
            "0009" + b"kafkaline".hex() + "00"  # client id stays int16-length; header tagged fields
            "0a" + b"kafkaline".hex() + "04" + b"0.1".hex() + "00"  # compact strings, tagged fields
        )
    )


def test_produce_v3_request_body() -> None:
    assert (
        produce_request().encode(3)
        == bytes.fromhex(
            "ffff"  # transactional id: null
            "ffff"  # acks -1
            "00007530"  # timeout 30000
            "00000001"  # one topic
            "0005" + b"topic".hex() + "00000001"  # name, one partition
            "00000000"  # partition 0
            "00000004" + RECORDS.hex()  # records, int32 length
        )
    )


def test_produce_v9_request_body_is_compact_with_tagged_sections() -> None:
    assert (
        produce_request().encode(9)
        == bytes.fromhex(
            "00"  # transactional id: compact null
            "ffff00007530"  # acks, timeout
            "02"  # compact array: one topic
            "06" + b"topic".hex() + "02"  # compact string, compact array: one partition
            "00000000"  # partition 0
            "05" + RECORDS.hex() + "00"  # compact records, partition tagged fields
            "00"  # topic tagged fields
            "00"  # request tagged fields
        )
    )


def test_produce_v3_request_frame_copies_records_into_one_buffer() -> None:
    frame = ClientProtocol("c").send(produce_request(), 3)
    header = bytes.fromhex("00000003000000000001") + b"c"
    body = produce_request().encode(3)
    assert bytes(frame) == (len(header) + len(body)).to_bytes(4, "big") + header + body


def test_produce_v10_response_with_tagged_current_leader_decodes() -> None:
    body = bytes.fromhex(
        "02"  # one topic
        "06" + b"topic".hex() + "02"  # name, one partition
        "00000001"  # index 1
        "0006"  # error NOT_LEADER_OR_FOLLOWER
        "ffffffffffffffff"  # base offset -1
        "ffffffffffffffff"  # log append time -1
        "ffffffffffffffff"  # log start offset -1
        "01"  # record errors: empty compact array
        "00"  # error message: null
        "01"
        "00"
        "09"  # tagged fields: one, tag 0 (current leader), 9 bytes:
        "00000003"
        "00000005"
        "00"  # leader 3, epoch 5, the struct's own tagged fields
        "00"  # topic tagged fields
        "00000000"  # throttle time
        "00"  # response tagged fields (no node endpoints)
    )
    assert ProduceResponse.decode(body, 10) == ProduceResponse(
        responses=[
            TopicProduceResponse(
                name="topic",
                partition_responses=[
                    PartitionProduceResponse(
                        index=1,
                        error_code=6,
                        base_offset=-1,
                        current_leader=LeaderIdAndEpoch(leader_id=3, leader_epoch=5),
                    )
                ],
            )
        ]
    )
    assert ProduceResponse.decode(body, 10).encode(10) == body


def test_unknown_tagged_fields_are_skipped() -> None:
    # ApiVersions v3 response: no error, empty api keys, throttle 0, then tag 9 (unknown, 2 bytes)
    # and tag 1 (finalized features epoch, 8 bytes).
    body = bytes.fromhex("00000100000000020902abcd0108000000000000002a")
    response = ApiVersionsResponse.decode(body, 3)
    assert response.finalized_features_epoch == 42
    assert response.api_keys == []


def test_api_versions_response_falls_back_to_v0_body() -> None:
    # A broker that does not know v3 answers UNSUPPORTED_VERSION (35) with a v0 body.
    v0_body = bytes.fromhex("002300000001001200000002")
    response = ApiVersionsResponse.decode(v0_body, 3)
    assert response.error_code == 35
    assert [(key.api_key, key.min_version, key.max_version) for key in response.api_keys] == [
        (18, 0, 2)
    ]


def test_records_may_be_any_bytes_like_object() -> None:
    request = produce_request()
    expected = request.encode(9)
    for records in (bytearray(RECORDS), memoryview(RECORDS)):
        request.topic_data[0].partition_data[0].records = records
        assert request.encode(9) == expected
