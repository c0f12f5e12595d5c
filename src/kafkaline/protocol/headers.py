"""Request and response headers, and which header version goes with which API version.

    RequestHeader v1                        RequestHeader v2 (flexible APIs)
      request_api_key      int16              same as v1, then
      request_api_version  int16              tagged fields (uvarint count, usually 0)
      correlation_id       int32
      client_id            nullable string (int16 length, never compact, even in v2)

    ResponseHeader v0                       ResponseHeader v1 (flexible APIs)
      correlation_id       int32              correlation_id int32, tagged fields

Every frame on the wire is ``int32 size`` followed by ``size`` bytes of header + body.
ApiVersions responses always use header v0, so a client that sent a version the broker does
not know can still read the broker's answer.
"""

from __future__ import annotations

from kafkaline.protocol.schema import INT16, INT32, STRING, Message, Versions, kafka_field

API_VERSIONS_KEY = 18


class RequestHeader(Message):
    """The header before every request body (v1, or v2 for flexible request versions)."""

    # Header v0 (no client id) is only used by ControlledShutdown v0, which we never send.
    VALID_VERSIONS = Versions.parse("1-2")
    FLEXIBLE_VERSIONS = Versions.parse("2+")

    request_api_key: int = kafka_field(INT16, "0+")
    request_api_version: int = kafka_field(INT16, "0+")
    correlation_id: int = kafka_field(INT32, "0+")
    client_id: str | None = kafka_field(STRING, "1+", nullable="1+", flexible="none")


class ResponseHeader(Message):
    """The header before every response body (v0, or v1 for flexible response versions)."""

    VALID_VERSIONS = Versions.parse("0-1")
    FLEXIBLE_VERSIONS = Versions.parse("1+")

    correlation_id: int = kafka_field(INT32, "0+")


def request_header_version(flexible: bool) -> int:
    """Header version for a request body: 2 for flexible versions, else 1."""
    return 2 if flexible else 1


def response_header_version(api_key: int, flexible: bool) -> int:
    """Header version for a response body: 1 for flexible versions, else 0; always 0 for
    ApiVersions (KIP-511), so the broker's answer is readable whatever version was asked."""
    if api_key == API_VERSIONS_KEY:
        return 0
    return 1 if flexible else 0
