"""FindCoordinator (API key 10): which broker coordinates a group or a transactional id.

FindCoordinatorRequest
  key                string (v0-3)
  key_type           int8 (v1+: 0 = group, 1 = transaction)
  coordinator_keys   [string] (v4+, batched lookup)

FindCoordinatorResponse v0-3                 v4+
  throttle_time_ms int32 (v1+)                 throttle_time_ms int32
  error_code int16, error_message (v1+)        coordinators [Coordinator]
  node_id int32, host string, port int32         key, node_id, host, port,
                                                 error_code, error_message
"""

from __future__ import annotations

from kafkaline.protocol.schema import (
    INT8,
    INT16,
    INT32,
    STRING,
    Request,
    Response,
    Struct,
    Versions,
    array_of,
    kafka_field,
)

#: ``key_type`` values.
KEY_TYPE_GROUP = 0
KEY_TYPE_TRANSACTION = 1


class Coordinator(Struct):
    """The coordinator for one key (v4+)."""

    key: str = kafka_field(STRING, "4+")
    node_id: int = kafka_field(INT32, "4+")
    host: str = kafka_field(STRING, "4+")
    port: int = kafka_field(INT32, "4+")
    error_code: int = kafka_field(INT16, "4+")
    error_message: str | None = kafka_field(STRING, "4+", nullable="4+")


class FindCoordinatorResponse(Response):
    """Where the coordinator lives (one key before v4, a list from v4)."""

    API_KEY = 10
    VALID_VERSIONS = Versions.parse("0-6")
    FLEXIBLE_VERSIONS = Versions.parse("3+")

    throttle_time_ms: int = kafka_field(INT32, "1+")
    error_code: int = kafka_field(INT16, "0-3")
    error_message: str | None = kafka_field(STRING, "1-3", nullable="1-3")
    node_id: int = kafka_field(INT32, "0-3")
    host: str = kafka_field(STRING, "0-3")
    port: int = kafka_field(INT32, "0-3")
    coordinators: list[Coordinator] = kafka_field(array_of(Coordinator), "4+")


class FindCoordinatorRequest(Request):
    """Find the group or transaction coordinator for a key (``key`` before v4,
    ``coordinator_keys`` from v4)."""

    API_KEY = 10
    VALID_VERSIONS = Versions.parse("0-6")
    FLEXIBLE_VERSIONS = Versions.parse("3+")
    RESPONSE_TYPE = FindCoordinatorResponse

    key: str = kafka_field(STRING, "0-3")
    key_type: int = kafka_field(INT8, "1+", default=KEY_TYPE_GROUP)
    coordinator_keys: list[str] = kafka_field(array_of(STRING), "4+")
