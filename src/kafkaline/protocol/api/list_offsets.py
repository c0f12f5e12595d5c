"""ListOffsets (API key 2): look up offsets by timestamp (-1 latest, -2 earliest).

ListOffsetsRequest
  replica_id int32 (-1 for clients), isolation_level int8 (v2+)
  topics [ListOffsetsTopic]
    name string
    partitions [ListOffsetsPartition]
      partition_index int32, current_leader_epoch int32 (v4+), timestamp int64,
      max_num_offsets int32 (v0 only)
  timeout_ms int32 (v10+)

ListOffsetsResponse
  throttle_time_ms int32 (v2+)
  topics [ListOffsetsTopicResponse]
    name string
    partitions [ListOffsetsPartitionResponse]
      partition_index, error_code, old_style_offsets [int64] (v0), timestamp (v1+),
      offset (v1+), leader_epoch (v4+)
"""

from __future__ import annotations

from kafkaline.protocol.schema import (
    INT8,
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

#: Special ``timestamp`` values.
LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2

# --------------------------------------------------------------------------- response


class ListOffsetsPartitionResponse(Struct):
    """The offset found for one partition."""

    partition_index: int = kafka_field(INT32, "0+")
    error_code: int = kafka_field(INT16, "0+")
    old_style_offsets: list[int] = kafka_field(array_of(INT64), "0")
    timestamp: int = kafka_field(INT64, "1+", default=-1)
    offset: int = kafka_field(INT64, "1+", default=-1)
    leader_epoch: int = kafka_field(INT32, "4+", default=-1)


class ListOffsetsTopicResponse(Struct):
    """The offsets found for one topic."""

    name: str = kafka_field(STRING, "0+")
    partitions: list[ListOffsetsPartitionResponse] = kafka_field(
        array_of(ListOffsetsPartitionResponse), "0+"
    )


class ListOffsetsResponse(Response):
    """Per-partition offsets."""

    API_KEY = 2
    VALID_VERSIONS = Versions.parse("0-10")
    FLEXIBLE_VERSIONS = Versions.parse("6+")

    throttle_time_ms: int = kafka_field(INT32, "2+")
    topics: list[ListOffsetsTopicResponse] = kafka_field(array_of(ListOffsetsTopicResponse), "0+")


# --------------------------------------------------------------------------- request


class ListOffsetsPartition(Struct):
    """A partition and the timestamp to look up."""

    partition_index: int = kafka_field(INT32, "0+")
    current_leader_epoch: int = kafka_field(INT32, "4+", default=-1)
    timestamp: int = kafka_field(INT64, "0+")
    max_num_offsets: int = kafka_field(INT32, "0", default=1)


class ListOffsetsTopic(Struct):
    """Partitions of one topic to look up."""

    name: str = kafka_field(STRING, "0+")
    partitions: list[ListOffsetsPartition] = kafka_field(array_of(ListOffsetsPartition), "0+")


class ListOffsetsRequest(Request):
    """Look up offsets by timestamp."""

    API_KEY = 2
    VALID_VERSIONS = Versions.parse("0-10")
    FLEXIBLE_VERSIONS = Versions.parse("6+")
    RESPONSE_TYPE = ListOffsetsResponse

    replica_id: int = kafka_field(INT32, "0+")
    isolation_level: int = kafka_field(INT8, "2+")
    topics: list[ListOffsetsTopic] = kafka_field(array_of(ListOffsetsTopic), "0+")
    timeout_ms: int = kafka_field(INT32, "10+")
