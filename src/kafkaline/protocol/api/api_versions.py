"""ApiVersions (API key 18): which versions of which APIs the broker speaks.

    ApiVersionsRequest v0-2: empty body
                       v3+:  client_software_name, client_software_version (compact strings)

    ApiVersionsResponse
      error_code         int16
      api_keys           [ApiVersion]   api_key int16, min_version int16, max_version int16
      throttle_time_ms   int32 (v1+)
      supported_features, finalized_features_epoch, finalized_features, zk_migration_ready
                         tagged fields 0-3 (v3+)

The response header is always v0. A broker that does not know the requested version answers
with a v0 body and error UNSUPPORTED_VERSION (35), listing its own ApiVersions range; decoding
falls back to v0 for that case, as the Java client does.
"""

from __future__ import annotations

from kafkaline.errors import DecodeError
from kafkaline.protocol.primitives import Buffer, Reader
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
    decode_message,
    kafka_field,
)

# --------------------------------------------------------------------------- response


class ApiVersion(Struct):
    """The range of versions the broker supports for one API."""

    api_key: int = kafka_field(INT16, "0+")
    min_version: int = kafka_field(INT16, "0+")
    max_version: int = kafka_field(INT16, "0+")


class SupportedFeatureKey(Struct):
    """A feature the broker supports (KIP-584)."""

    name: str = kafka_field(STRING, "3+")
    min_version: int = kafka_field(INT16, "3+")
    max_version: int = kafka_field(INT16, "3+")


class FinalizedFeatureKey(Struct):
    """A feature finalized cluster-wide (KIP-584)."""

    name: str = kafka_field(STRING, "3+")
    max_version_level: int = kafka_field(INT16, "3+")
    min_version_level: int = kafka_field(INT16, "3+")


class ApiVersionsResponse(Response):
    """The APIs and version ranges the broker supports."""

    API_KEY = 18
    VALID_VERSIONS = Versions.parse("0-4")
    FLEXIBLE_VERSIONS = Versions.parse("3+")

    error_code: int = kafka_field(INT16, "0+")
    api_keys: list[ApiVersion] = kafka_field(array_of(ApiVersion), "0+")
    throttle_time_ms: int = kafka_field(INT32, "1+")
    supported_features: list[SupportedFeatureKey] = kafka_field(
        array_of(SupportedFeatureKey), "3+", tagged="3+", tag=0
    )
    finalized_features_epoch: int = kafka_field(INT64, "3+", tagged="3+", tag=1, default=-1)
    finalized_features: list[FinalizedFeatureKey] = kafka_field(
        array_of(FinalizedFeatureKey), "3+", tagged="3+", tag=2
    )
    zk_migration_ready: bool = kafka_field(BOOL, "3+", tagged="3+", tag=3, default=False)

    @classmethod
    def decode(cls, data: Buffer, version: int) -> ApiVersionsResponse:
        """Decode at ``version``, falling back to v0: a broker that does not support the
        requested version answers UNSUPPORTED_VERSION with a v0 body."""
        try:
            return decode_message(cls, Reader(data), version)
        except DecodeError as error:
            if version == 0:
                raise
            try:
                return decode_message(cls, Reader(data), 0)
            except DecodeError:
                raise error from None


# --------------------------------------------------------------------------- request


class ApiVersionsRequest(Request):
    """Ask the broker which API versions it supports; the first request on a connection."""

    API_KEY = 18
    VALID_VERSIONS = Versions.parse("0-4")
    FLEXIBLE_VERSIONS = Versions.parse("3+")
    RESPONSE_TYPE = ApiVersionsResponse

    client_software_name: str = kafka_field(STRING, "3+")
    client_software_version: str = kafka_field(STRING, "3+")
