"""SaslAuthenticate (API key 36): carry one SASL token each way.

SaslAuthenticateRequest   auth_bytes bytes
SaslAuthenticateResponse  error_code int16, error_message nullable string,
                          auth_bytes bytes, session_lifetime_ms int64 (v1+)
"""

from __future__ import annotations

from kafkaline.protocol.primitives import Buffer
from kafkaline.protocol.schema import (
    BYTES,
    INT16,
    INT64,
    STRING,
    Request,
    Response,
    Versions,
    kafka_field,
)


class SaslAuthenticateResponse(Response):
    """The server's SASL token, or an authentication error."""

    API_KEY = 36
    VALID_VERSIONS = Versions.parse("0-2")
    FLEXIBLE_VERSIONS = Versions.parse("2+")

    error_code: int = kafka_field(INT16, "0+")
    error_message: str | None = kafka_field(STRING, "0+", nullable="0+")
    auth_bytes: Buffer = kafka_field(BYTES, "0+")
    session_lifetime_ms: int = kafka_field(INT64, "1+", default=0)


class SaslAuthenticateRequest(Request):
    """The client's SASL token."""

    API_KEY = 36
    VALID_VERSIONS = Versions.parse("0-2")
    FLEXIBLE_VERSIONS = Versions.parse("2+")
    RESPONSE_TYPE = SaslAuthenticateResponse

    auth_bytes: Buffer = kafka_field(BYTES, "0+")

    def __repr__(self) -> str:
        # The token can hold a password (PLAIN) or a bearer token (OAUTHBEARER): a logged or
        # printed request shows its size only. (A __repr__ defined here wins over Struct's.)
        return f"SaslAuthenticateRequest(auth_bytes=<{len(self.auth_bytes)} bytes>)"
