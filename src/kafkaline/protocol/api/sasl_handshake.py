"""SaslHandshake (API key 17): pick a SASL mechanism. Never flexible.

    SaslHandshakeRequest   mechanism string
    SaslHandshakeResponse  error_code int16, mechanisms [string]

v1 means the SASL tokens that follow are wrapped in SaslAuthenticate requests (KIP-152);
v0 sent them as raw length-prefixed frames.
"""

from __future__ import annotations

from kafkaline.protocol.schema import (
    INT16,
    STRING,
    Request,
    Response,
    Versions,
    array_of,
    kafka_field,
)


class SaslHandshakeResponse(Response):
    """Whether the mechanism is enabled, and which ones are."""

    API_KEY = 17
    VALID_VERSIONS = Versions.parse("0-1")
    FLEXIBLE_VERSIONS = Versions.parse("none")

    error_code: int = kafka_field(INT16, "0+")
    mechanisms: list[str] = kafka_field(array_of(STRING), "0+")


class SaslHandshakeRequest(Request):
    """Propose a SASL mechanism, e.g. ``"PLAIN"`` or ``"SCRAM-SHA-512"``."""

    API_KEY = 17
    VALID_VERSIONS = Versions.parse("0-1")
    FLEXIBLE_VERSIONS = Versions.parse("none")
    RESPONSE_TYPE = SaslHandshakeResponse

    mechanism: str = kafka_field(STRING, "0+")
