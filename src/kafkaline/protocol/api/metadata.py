"""Metadata (API key 3): brokers, topics, partitions and their leaders.

MetadataRequest
  topics             nullable [MetadataRequestTopic] (v1+: null = all topics)
    topic_id         uuid (v10+)
    name             string (nullable v10+)
  allow_auto_topic_creation            bool (v4+)
  include_cluster_authorized_operations bool (v8-10)
  include_topic_authorized_operations   bool (v8+)

MetadataResponse
  throttle_time_ms   int32 (v3+)
  brokers            [MetadataResponseBroker] node_id, host, port, rack (v1+)
  cluster_id         nullable string (v2+)
  controller_id      int32 (v1+)
  topics             [MetadataResponseTopic]
    error_code, name, topic_id (v10+), is_internal (v1+),
    partitions       [MetadataResponsePartition]
      error_code, partition_index, leader_id, leader_epoch (v7+),
      replica_nodes, isr_nodes, offline_replicas (v5+)
    topic_authorized_operations int32 (v8+)
  cluster_authorized_operations int32 (v8-10)
"""

from __future__ import annotations

import uuid

from kafkaline.protocol.schema import (
    BOOL,
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

# Kafka's "no authorized operations were requested" marker.
_AUTHORIZED_OPERATIONS_OMITTED = -2147483648

# --------------------------------------------------------------------------- response


class MetadataResponseBroker(Struct):
    """A broker in the cluster."""

    node_id: int = kafka_field(INT32, "0+")
    host: str = kafka_field(STRING, "0+")
    port: int = kafka_field(INT32, "0+")
    rack: str | None = kafka_field(STRING, "1+", nullable="1+", default=None)


class MetadataResponsePartition(Struct):
    """A partition: its leader and replicas."""

    error_code: int = kafka_field(INT16, "0+")
    partition_index: int = kafka_field(INT32, "0+")
    leader_id: int = kafka_field(INT32, "0+")
    leader_epoch: int = kafka_field(INT32, "7+", default=-1)
    replica_nodes: list[int] = kafka_field(array_of(INT32), "0+")
    isr_nodes: list[int] = kafka_field(array_of(INT32), "0+")
    offline_replicas: list[int] = kafka_field(array_of(INT32), "5+")


class MetadataResponseTopic(Struct):
    """A topic and its partitions."""

    error_code: int = kafka_field(INT16, "0+")
    name: str | None = kafka_field(STRING, "0+", nullable="12+")
    topic_id: uuid.UUID = kafka_field(UUID, "10+")
    is_internal: bool = kafka_field(BOOL, "1+", default=False)
    partitions: list[MetadataResponsePartition] = kafka_field(
        array_of(MetadataResponsePartition), "0+"
    )
    topic_authorized_operations: int = kafka_field(
        INT32, "8+", default=_AUTHORIZED_OPERATIONS_OMITTED
    )


class MetadataResponse(Response):
    """The cluster's brokers and the requested topics' partition leaders."""

    API_KEY = 3
    VALID_VERSIONS = Versions.parse("0-12")
    FLEXIBLE_VERSIONS = Versions.parse("9+")

    throttle_time_ms: int = kafka_field(INT32, "3+")
    brokers: list[MetadataResponseBroker] = kafka_field(array_of(MetadataResponseBroker), "0+")
    cluster_id: str | None = kafka_field(STRING, "2+", nullable="2+", default=None)
    controller_id: int = kafka_field(INT32, "1+", default=-1)
    topics: list[MetadataResponseTopic] = kafka_field(array_of(MetadataResponseTopic), "0+")
    cluster_authorized_operations: int = kafka_field(
        INT32, "8-10", default=_AUTHORIZED_OPERATIONS_OMITTED
    )


# --------------------------------------------------------------------------- request


class MetadataRequestTopic(Struct):
    """A topic to describe, by name (or by id from v10)."""

    topic_id: uuid.UUID = kafka_field(UUID, "10+")
    name: str | None = kafka_field(STRING, "0+", nullable="10+")


class MetadataRequest(Request):
    """Describe topics (``topics=None``: all topics, v1+)."""

    API_KEY = 3
    VALID_VERSIONS = Versions.parse("0-12")
    FLEXIBLE_VERSIONS = Versions.parse("9+")
    RESPONSE_TYPE = MetadataResponse

    topics: list[MetadataRequestTopic] | None = kafka_field(
        array_of(MetadataRequestTopic), "0+", nullable="1+"
    )
    allow_auto_topic_creation: bool = kafka_field(BOOL, "4+", default=True)
    include_cluster_authorized_operations: bool = kafka_field(BOOL, "8-10")
    include_topic_authorized_operations: bool = kafka_field(BOOL, "8+")
