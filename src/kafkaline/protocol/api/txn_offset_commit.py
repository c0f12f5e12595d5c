"""TxnOffsetCommit (API key 28): commit consumer offsets as part of a transaction.

TxnOffsetCommitRequest
  transactional_id string, group_id string, producer_id int64, producer_epoch int16,
  generation_id int32 (v3+), member_id string (v3+), group_instance_id nullable (v3+)
  topics [TxnOffsetCommitRequestTopic]
    name string
    partitions [TxnOffsetCommitRequestPartition]
      partition_index int32, committed_offset int64,
      committed_leader_epoch int32 (v2+), committed_metadata nullable string

TxnOffsetCommitResponse
  throttle_time_ms int32
  topics [name, partitions [partition_index int32, error_code int16]]
"""

from __future__ import annotations

from kafkaline.protocol.schema import (
    INT16,
    INT32,
    INT64,
    STRING,
    Request,
    Response,
    Struct,
    Versions,
    array_of,
    kafka_field,
)

# --------------------------------------------------------------------------- response


class TxnOffsetCommitResponsePartition(Struct):
    """The outcome for one partition."""

    partition_index: int = kafka_field(INT32, "0+")
    error_code: int = kafka_field(INT16, "0+")


class TxnOffsetCommitResponseTopic(Struct):
    """The outcomes for one topic."""

    name: str = kafka_field(STRING, "0+")
    partitions: list[TxnOffsetCommitResponsePartition] = kafka_field(
        array_of(TxnOffsetCommitResponsePartition), "0+"
    )


class TxnOffsetCommitResponse(Response):
    """Per-partition outcomes of a transactional offset commit."""

    API_KEY = 28
    VALID_VERSIONS = Versions.parse("0-4")
    FLEXIBLE_VERSIONS = Versions.parse("3+")

    throttle_time_ms: int = kafka_field(INT32, "0+")
    topics: list[TxnOffsetCommitResponseTopic] = kafka_field(
        array_of(TxnOffsetCommitResponseTopic), "0+"
    )


# --------------------------------------------------------------------------- request


class TxnOffsetCommitRequestPartition(Struct):
    """An offset to commit for one partition."""

    partition_index: int = kafka_field(INT32, "0+")
    committed_offset: int = kafka_field(INT64, "0+")
    committed_leader_epoch: int = kafka_field(INT32, "2+", default=-1)
    committed_metadata: str | None = kafka_field(STRING, "0+", nullable="0+")


class TxnOffsetCommitRequestTopic(Struct):
    """Offsets to commit for one topic."""

    name: str = kafka_field(STRING, "0+")
    partitions: list[TxnOffsetCommitRequestPartition] = kafka_field(
        array_of(TxnOffsetCommitRequestPartition), "0+"
    )


class TxnOffsetCommitRequest(Request):
    """Commit a consumer group's offsets within the producer's transaction."""

    API_KEY = 28
    VALID_VERSIONS = Versions.parse("0-4")
    FLEXIBLE_VERSIONS = Versions.parse("3+")
    RESPONSE_TYPE = TxnOffsetCommitResponse

    transactional_id: str = kafka_field(STRING, "0+")
    group_id: str = kafka_field(STRING, "0+")
    producer_id: int = kafka_field(INT64, "0+")
    producer_epoch: int = kafka_field(INT16, "0+")
    generation_id: int = kafka_field(INT32, "3+", default=-1)
    member_id: str = kafka_field(STRING, "3+", default="")
    group_instance_id: str | None = kafka_field(STRING, "3+", nullable="3+", default=None)
    topics: list[TxnOffsetCommitRequestTopic] = kafka_field(
        array_of(TxnOffsetCommitRequestTopic), "0+"
    )
