"""CreateTopics (API key 19): create topics (send to the controller, or any broker on KRaft).

CreateTopicsRequest
  topics [CreatableTopic]
    name string, num_partitions int32 (-1: broker default), replication_factor int16 (-1)
    assignments [CreatableReplicaAssignment] partition_index int32, broker_ids [int32]
    configs [CreatableTopicConfig] name string, value nullable string
  timeout_ms int32
  validate_only bool (v1+)

CreateTopicsResponse
  throttle_time_ms int32 (v2+)
  topics [CreatableTopicResult]
    name, topic_id (v7+), error_code, error_message (v1+),
    topic_config_error_code (tag 0, v5+), num_partitions (v5+), replication_factor (v5+),
    configs nullable [CreatableTopicConfigs] (v5+)
"""

from __future__ import annotations

import uuid

from kafkaline.protocol.schema import (
    BOOL,
    INT8,
    INT16,
    INT32,
    STRING,
    UUID,
    Request,
    Response,
    Struct,
    Versions,
    array_of,
    kafka_field,
)

# --------------------------------------------------------------------------- response


class CreatableTopicConfigs(Struct):
    """A config of a created topic (v5+)."""

    name: str = kafka_field(STRING, "5+")
    value: str | None = kafka_field(STRING, "5+", nullable="5+")
    read_only: bool = kafka_field(BOOL, "5+")
    config_source: int = kafka_field(INT8, "5+", default=-1)
    is_sensitive: bool = kafka_field(BOOL, "5+")


class CreatableTopicResult(Struct):
    """The outcome for one topic."""

    name: str = kafka_field(STRING, "0+")
    topic_id: uuid.UUID = kafka_field(UUID, "7+")
    error_code: int = kafka_field(INT16, "0+")
    error_message: str | None = kafka_field(STRING, "1+", nullable="0+")
    topic_config_error_code: int = kafka_field(INT16, "5+", tagged="5+", tag=0)
    num_partitions: int = kafka_field(INT32, "5+", default=-1)
    replication_factor: int = kafka_field(INT16, "5+", default=-1)
    configs: list[CreatableTopicConfigs] | None = kafka_field(
        array_of(CreatableTopicConfigs), "5+", nullable="5+"
    )


class CreateTopicsResponse(Response):
    """Per-topic outcomes of CreateTopics."""

    API_KEY = 19
    VALID_VERSIONS = Versions.parse("0-7")
    FLEXIBLE_VERSIONS = Versions.parse("5+")

    throttle_time_ms: int = kafka_field(INT32, "2+")
    topics: list[CreatableTopicResult] = kafka_field(array_of(CreatableTopicResult), "0+")


# --------------------------------------------------------------------------- request


class CreatableReplicaAssignment(Struct):
    """A manual replica assignment for one partition."""

    partition_index: int = kafka_field(INT32, "0+")
    broker_ids: list[int] = kafka_field(array_of(INT32), "0+")


class CreatableTopicConfig(Struct):
    """A topic config to set at creation."""

    name: str = kafka_field(STRING, "0+")
    value: str | None = kafka_field(STRING, "0+", nullable="0+")


class CreatableTopic(Struct):
    """A topic to create."""

    name: str = kafka_field(STRING, "0+")
    num_partitions: int = kafka_field(INT32, "0+")
    replication_factor: int = kafka_field(INT16, "0+")
    assignments: list[CreatableReplicaAssignment] = kafka_field(
        array_of(CreatableReplicaAssignment), "0+"
    )
    configs: list[CreatableTopicConfig] = kafka_field(array_of(CreatableTopicConfig), "0+")


class CreateTopicsRequest(Request):
    """Create topics."""

    API_KEY = 19
    VALID_VERSIONS = Versions.parse("0-7")
    FLEXIBLE_VERSIONS = Versions.parse("5+")
    RESPONSE_TYPE = CreateTopicsResponse

    topics: list[CreatableTopic] = kafka_field(array_of(CreatableTopic), "0+")
    timeout_ms: int = kafka_field(INT32, "0+", default=60000)
    validate_only: bool = kafka_field(BOOL, "1+", default=False)
