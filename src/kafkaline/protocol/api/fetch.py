"""Fetch (API key 1): read record batches (used by tests and tools to read back what we wrote).

kafkaline implements v4+ only: v4 is the first version that returns record batch v2.

    FetchRequest
      cluster_id (tag 0, v12+), replica_id int32 (v0-14), replica_state (tag 1, v15+),
      max_wait_ms int32, min_bytes int32, max_bytes int32 (v3+), isolation_level int8 (v4+),
      session_id int32 (v7+), session_epoch int32 (v7+)
      topics [FetchTopic]
        topic string (v0-12) | topic_id uuid (v13+)
        partitions [FetchPartition]
          partition, current_leader_epoch (v9+), fetch_offset, last_fetched_epoch (v12+),
          log_start_offset (v5+), partition_max_bytes, replica_directory_id (tag 0, v17+)
      forgotten_topics_data [ForgottenTopic] (v7+)
      rack_id string (v11+)

    FetchResponse
      throttle_time_ms int32, error_code int16 (v7+), session_id int32 (v7+)
      responses [FetchableTopicResponse]
        topic string (v0-12) | topic_id uuid (v13+)
        partitions [PartitionData]
          partition_index, error_code, high_watermark, last_stable_offset (v4+),
          log_start_offset (v5+), diverging_epoch/current_leader/snapshot_id (tags 0-2, v12+),
          aborted_transactions nullable [AbortedTransaction] (v4+),
          preferred_read_replica (v11+), records nullable bytes
      node_endpoints [NodeEndpoint] (tag 0, v16+)
"""

from __future__ import annotations

import uuid

from kafkaline.protocol.schema import (
    INT8,
    INT16,
    INT32,
    INT64,
    RECORDS,
    STRING,
    UUID,
    Records,
    Request,
    Response,
    Struct,
    Versions,
    array_of,
    kafka_field,
    struct_of,
)

# --------------------------------------------------------------------------- response


class EpochEndOffset(Struct):
    """Where the follower's log diverges from the leader's (v12+)."""

    epoch: int = kafka_field(INT32, "12+", default=-1)
    end_offset: int = kafka_field(INT64, "12+", default=-1)


class LeaderIdAndEpoch(Struct):
    """The partition's current leader (v12+)."""

    leader_id: int = kafka_field(INT32, "12+", default=-1)
    leader_epoch: int = kafka_field(INT32, "12+", default=-1)


class SnapshotId(Struct):
    """The snapshot to fetch instead (KRaft; v12+)."""

    end_offset: int = kafka_field(INT64, "0+", default=-1)
    epoch: int = kafka_field(INT32, "0+", default=-1)


class AbortedTransaction(Struct):
    """An aborted transaction whose records lie in the fetched range."""

    producer_id: int = kafka_field(INT64, "4+")
    first_offset: int = kafka_field(INT64, "4+")


class PartitionData(Struct):
    """Fetched data for one partition."""

    partition_index: int = kafka_field(INT32, "0+")
    error_code: int = kafka_field(INT16, "0+")
    high_watermark: int = kafka_field(INT64, "0+")
    last_stable_offset: int = kafka_field(INT64, "4+", default=-1)
    log_start_offset: int = kafka_field(INT64, "5+", default=-1)
    diverging_epoch: EpochEndOffset = kafka_field(
        struct_of(EpochEndOffset), "12+", tagged="12+", tag=0
    )
    current_leader: LeaderIdAndEpoch = kafka_field(
        struct_of(LeaderIdAndEpoch), "12+", tagged="12+", tag=1
    )
    snapshot_id: SnapshotId = kafka_field(struct_of(SnapshotId), "12+", tagged="12+", tag=2)
    aborted_transactions: list[AbortedTransaction] | None = kafka_field(
        array_of(AbortedTransaction), "4+", nullable="4+"
    )
    preferred_read_replica: int = kafka_field(INT32, "11+", default=-1)
    records: Records | None = kafka_field(RECORDS, "0+", nullable="0+", default=None)


class FetchableTopicResponse(Struct):
    """Fetched data for one topic."""

    topic: str = kafka_field(STRING, "0-12")
    topic_id: uuid.UUID = kafka_field(UUID, "13+")
    partitions: list[PartitionData] = kafka_field(array_of(PartitionData), "0+")


class NodeEndpoint(Struct):
    """Where to reach a new leader named in ``current_leader`` (v16+)."""

    node_id: int = kafka_field(INT32, "16+")
    host: str = kafka_field(STRING, "16+")
    port: int = kafka_field(INT32, "16+")
    rack: str | None = kafka_field(STRING, "16+", nullable="16+", default=None)


class FetchResponse(Response):
    """Record batches per partition."""

    API_KEY = 1
    VALID_VERSIONS = Versions.parse("4-17")
    FLEXIBLE_VERSIONS = Versions.parse("12+")

    throttle_time_ms: int = kafka_field(INT32, "1+")
    error_code: int = kafka_field(INT16, "7+")
    session_id: int = kafka_field(INT32, "7+", default=0)
    responses: list[FetchableTopicResponse] = kafka_field(array_of(FetchableTopicResponse), "0+")
    node_endpoints: list[NodeEndpoint] = kafka_field(
        array_of(NodeEndpoint), "16+", tagged="16+", tag=0
    )


# --------------------------------------------------------------------------- request


class ReplicaState(Struct):
    """The fetching replica (brokers only; v15+)."""

    replica_id: int = kafka_field(INT32, "15+", default=-1)
    replica_epoch: int = kafka_field(INT64, "15+", default=-1)


class FetchPartition(Struct):
    """Where to fetch from in one partition."""

    partition: int = kafka_field(INT32, "0+")
    current_leader_epoch: int = kafka_field(INT32, "9+", default=-1)
    fetch_offset: int = kafka_field(INT64, "0+")
    last_fetched_epoch: int = kafka_field(INT32, "12+", default=-1)
    log_start_offset: int = kafka_field(INT64, "5+", default=-1)
    partition_max_bytes: int = kafka_field(INT32, "0+")
    replica_directory_id: uuid.UUID = kafka_field(UUID, "17+", tagged="17+", tag=0)


class FetchTopic(Struct):
    """Partitions of one topic to fetch (by name before v13, by id from v13)."""

    topic: str = kafka_field(STRING, "0-12")
    topic_id: uuid.UUID = kafka_field(UUID, "13+")
    partitions: list[FetchPartition] = kafka_field(array_of(FetchPartition), "0+")


class ForgottenTopic(Struct):
    """Partitions to drop from an incremental fetch session (v7+)."""

    topic: str = kafka_field(STRING, "7-12")
    topic_id: uuid.UUID = kafka_field(UUID, "13+")
    partitions: list[int] = kafka_field(array_of(INT32), "7+")


class FetchRequest(Request):
    """Fetch record batches. Clients leave ``replica_id`` at -1."""

    API_KEY = 1
    VALID_VERSIONS = Versions.parse("4-17")
    FLEXIBLE_VERSIONS = Versions.parse("12+")
    RESPONSE_TYPE = FetchResponse

    cluster_id: str | None = kafka_field(
        STRING, "12+", nullable="12+", tagged="12+", tag=0, default=None
    )
    replica_id: int = kafka_field(INT32, "0-14", default=-1)
    replica_state: ReplicaState = kafka_field(struct_of(ReplicaState), "15+", tagged="15+", tag=1)
    max_wait_ms: int = kafka_field(INT32, "0+")
    min_bytes: int = kafka_field(INT32, "0+")
    max_bytes: int = kafka_field(INT32, "3+", default=0x7FFFFFFF)
    isolation_level: int = kafka_field(INT8, "4+", default=0)
    session_id: int = kafka_field(INT32, "7+", default=0)
    session_epoch: int = kafka_field(INT32, "7+", default=-1)
    topics: list[FetchTopic] = kafka_field(array_of(FetchTopic), "0+")
    forgotten_topics_data: list[ForgottenTopic] = kafka_field(array_of(ForgottenTopic), "7+")
    rack_id: str = kafka_field(STRING, "11+", default="")
