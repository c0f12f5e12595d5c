"""AddPartitionsToTxn (API key 24): add partitions to an ongoing transaction.

AddPartitionsToTxnRequest v0-3 (what a producer sends)
  v3_and_below_transactional_id  string
  v3_and_below_producer_id       int64
  v3_and_below_producer_epoch    int16
  v3_and_below_topics            [AddPartitionsToTxnTopic] name string, partitions [int32]
v4+ (broker to broker, batched)
  transactions [AddPartitionsToTxnTransaction]
    transactional_id, producer_id, producer_epoch, verify_only, topics

AddPartitionsToTxnResponse
  throttle_time_ms int32, error_code int16 (v4+),
  results_by_transaction [AddPartitionsToTxnResult] (v4+),
  results_by_topic_v3_and_below [AddPartitionsToTxnTopicResult] (v0-3)
    name, results_by_partition [partition_index int32, partition_error_code int16]
"""

from __future__ import annotations

from kafkaline.protocol.schema import (
    BOOL,
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


class AddPartitionsToTxnPartitionResult(Struct):
    """The outcome for one partition."""

    partition_index: int = kafka_field(INT32, "0+")
    partition_error_code: int = kafka_field(INT16, "0+")


class AddPartitionsToTxnTopicResult(Struct):
    """The outcomes for one topic."""

    name: str = kafka_field(STRING, "0+")
    results_by_partition: list[AddPartitionsToTxnPartitionResult] = kafka_field(
        array_of(AddPartitionsToTxnPartitionResult), "0+"
    )


class AddPartitionsToTxnResult(Struct):
    """The outcomes for one transaction (v4+)."""

    transactional_id: str = kafka_field(STRING, "4+")
    topic_results: list[AddPartitionsToTxnTopicResult] = kafka_field(
        array_of(AddPartitionsToTxnTopicResult), "4+"
    )


class AddPartitionsToTxnResponse(Response):
    """Per-partition outcomes of adding partitions to transactions."""

    API_KEY = 24
    VALID_VERSIONS = Versions.parse("0-5")
    FLEXIBLE_VERSIONS = Versions.parse("3+")

    throttle_time_ms: int = kafka_field(INT32, "0+")
    error_code: int = kafka_field(INT16, "4+")
    results_by_transaction: list[AddPartitionsToTxnResult] = kafka_field(
        array_of(AddPartitionsToTxnResult), "4+"
    )
    results_by_topic_v3_and_below: list[AddPartitionsToTxnTopicResult] = kafka_field(
        array_of(AddPartitionsToTxnTopicResult), "0-3"
    )


# --------------------------------------------------------------------------- request


class AddPartitionsToTxnTopic(Struct):
    """Partitions of one topic to add."""

    name: str = kafka_field(STRING, "0+")
    partitions: list[int] = kafka_field(array_of(INT32), "0+")


class AddPartitionsToTxnTransaction(Struct):
    """One transaction's partitions (v4+, sent by brokers)."""

    transactional_id: str = kafka_field(STRING, "4+")
    producer_id: int = kafka_field(INT64, "4+")
    producer_epoch: int = kafka_field(INT16, "4+")
    verify_only: bool = kafka_field(BOOL, "4+", default=False)
    topics: list[AddPartitionsToTxnTopic] = kafka_field(array_of(AddPartitionsToTxnTopic), "4+")


class AddPartitionsToTxnRequest(Request):
    """Add partitions to a transaction. Producers use v0-3 and the ``v3_and_below_*`` fields."""

    API_KEY = 24
    VALID_VERSIONS = Versions.parse("0-5")
    FLEXIBLE_VERSIONS = Versions.parse("3+")
    RESPONSE_TYPE = AddPartitionsToTxnResponse

    transactions: list[AddPartitionsToTxnTransaction] = kafka_field(
        array_of(AddPartitionsToTxnTransaction), "4+"
    )
    v3_and_below_transactional_id: str = kafka_field(STRING, "0-3")
    v3_and_below_producer_id: int = kafka_field(INT64, "0-3")
    v3_and_below_producer_epoch: int = kafka_field(INT16, "0-3")
    v3_and_below_topics: list[AddPartitionsToTxnTopic] = kafka_field(
        array_of(AddPartitionsToTxnTopic), "0-3"
    )
