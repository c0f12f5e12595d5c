"""EndTxn (API key 26): commit or abort a transaction.

EndTxnRequest
  transactional_id string, producer_id int64, producer_epoch int16, committed bool
EndTxnResponse
  throttle_time_ms int32, error_code int16,
  producer_id int64 (v5+), producer_epoch int16 (v5+)   (KIP-890 epoch bump)
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
    Versions,
    kafka_field,
)


class EndTxnResponse(Response):
    """The outcome of ending a transaction."""

    API_KEY = 26
    VALID_VERSIONS = Versions.parse("0-5")
    FLEXIBLE_VERSIONS = Versions.parse("3+")

    throttle_time_ms: int = kafka_field(INT32, "0+")
    error_code: int = kafka_field(INT16, "0+")
    producer_id: int = kafka_field(INT64, "5+", default=-1)
    producer_epoch: int = kafka_field(INT16, "5+", default=-1)


class EndTxnRequest(Request):
    """Commit (``committed=True``) or abort the producer's transaction."""

    API_KEY = 26
    VALID_VERSIONS = Versions.parse("0-5")
    FLEXIBLE_VERSIONS = Versions.parse("3+")
    RESPONSE_TYPE = EndTxnResponse

    transactional_id: str = kafka_field(STRING, "0+")
    producer_id: int = kafka_field(INT64, "0+")
    producer_epoch: int = kafka_field(INT16, "0+")
    committed: bool = kafka_field(BOOL, "0+")
