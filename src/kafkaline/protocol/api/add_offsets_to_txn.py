"""AddOffsetsToTxn (API key 25): add a consumer group's offsets to a transaction.

AddOffsetsToTxnRequest
  transactional_id string, producer_id int64, producer_epoch int16, group_id string
AddOffsetsToTxnResponse
  throttle_time_ms int32, error_code int16
"""

from __future__ import annotations

from kafkaline.protocol.schema import (
    INT16,
    INT32,
    INT64,
    STRING,
    Request,
    Response,
    Versions,
    kafka_field,
)


class AddOffsetsToTxnResponse(Response):
    """Whether the group was added to the transaction."""

    API_KEY = 25
    VALID_VERSIONS = Versions.parse("0-4")
    FLEXIBLE_VERSIONS = Versions.parse("3+")

    throttle_time_ms: int = kafka_field(INT32, "0+")
    error_code: int = kafka_field(INT16, "0+")


class AddOffsetsToTxnRequest(Request):
    """Add ``group_id``'s offsets to the transaction (before TxnOffsetCommit)."""

    API_KEY = 25
    VALID_VERSIONS = Versions.parse("0-4")
    FLEXIBLE_VERSIONS = Versions.parse("3+")
    RESPONSE_TYPE = AddOffsetsToTxnResponse

    transactional_id: str = kafka_field(STRING, "0+")
    producer_id: int = kafka_field(INT64, "0+")
    producer_epoch: int = kafka_field(INT16, "0+")
    group_id: str = kafka_field(STRING, "0+")
