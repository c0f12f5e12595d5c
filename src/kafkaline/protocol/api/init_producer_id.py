"""InitProducerId (API key 22): get a producer id and epoch (idempotence, transactions).

InitProducerIdRequest
  transactional_id        nullable string (null: idempotent producer)
  transaction_timeout_ms  int32
  producer_id             int64 (v3+, -1 for a new producer)
  producer_epoch          int16 (v3+, -1 for a new producer)

InitProducerIdResponse
  throttle_time_ms int32, error_code int16, producer_id int64, producer_epoch int16
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


class InitProducerIdResponse(Response):
    """The producer id and epoch to stamp on record batches."""

    API_KEY = 22
    VALID_VERSIONS = Versions.parse("0-5")
    FLEXIBLE_VERSIONS = Versions.parse("2+")

    throttle_time_ms: int = kafka_field(INT32, "0+")
    error_code: int = kafka_field(INT16, "0+")
    producer_id: int = kafka_field(INT64, "0+", default=-1)
    producer_epoch: int = kafka_field(INT16, "0+")


class InitProducerIdRequest(Request):
    """Ask for a producer id (and, for transactions, bump the epoch of an existing one)."""

    API_KEY = 22
    VALID_VERSIONS = Versions.parse("0-5")
    FLEXIBLE_VERSIONS = Versions.parse("2+")
    RESPONSE_TYPE = InitProducerIdResponse

    transactional_id: str | None = kafka_field(STRING, "0+", nullable="0+")
    transaction_timeout_ms: int = kafka_field(INT32, "0+")
    producer_id: int = kafka_field(INT64, "3+", default=-1)
    producer_epoch: int = kafka_field(INT16, "3+", default=-1)
