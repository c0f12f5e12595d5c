"""What a connection sends between TCP (and TLS) up and READY: ApiVersions, asked again at a
lower version when the broker refuses ours (KIP-511), then the SASL exchange of an
:class:`~kafkaline.net.connection_types.Authenticator`, if there is one. Sans-I/O: the
:class:`~kafkaline.net.connection.BrokerConnection` sends each step and hands back its answer.

SASL: an :class:`Authenticator` made per connection attempt (:mod:`kafkaline.net.sasl`) runs its
exchange (SaslHandshake, SaslAuthenticate, ...) after ApiVersions, in the AUTHENTICATING state,
before the connection becomes READY. Its failures are
:class:`~kafkaline.errors.AuthenticationError` s, which the client treats as fatal. A broker that
refuses by closing the connection during the exchange (Tansu does, for a mechanism it does not
offer) looks like a lost connection; after a few such closes in a row without ever becoming
READY, the connection reports a SaslAuthenticationError instead (:func:`sasl_refusal`), so a
refusal is not retried until a timeout.
"""

from __future__ import annotations

import logging
from collections.abc import Collection

from kafkaline.errors import (
    AuthenticationError,
    ConnectionSetupTimeoutError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    NoCompatibleVersionError,
    ProtocolError,
    SaslAuthenticationError,
    UnsupportedVersionError,
    error_for_code,
)
from kafkaline.net.connection_types import Authenticator, AuthenticatorFactory, SetupRequest
from kafkaline.net.settings import NetworkSettings
from kafkaline.protocol import (
    CLIENT_VERSIONS,
    Response,
    VersionRange,
    broker_version_ranges,
    choose_versions,
)
from kafkaline.protocol.api import ApiVersionsRequest, ApiVersionsResponse

__all__ = [
    "FIRST_API_VERSIONS_VERSION",
    "ConnectionSetup",
    "api_versions_fallback",
    "chosen_versions",
    "counts_toward_refusal",
    "sasl_refusal",
    "setup_timeout",
]

# The connection's logger: its setup is part of its story.
_log = logging.getLogger("kafkaline.net.connection")

# ApiVersions v3 is the first that names the client (KIP-511) and is understood by every broker
# since Kafka 2.4. v4 changes nothing a producer reads, and starting there would cost older
# brokers an UNSUPPORTED_VERSION round trip on every connection.
FIRST_API_VERSIONS_VERSION = min(3, CLIENT_VERSIONS[ApiVersionsRequest.API_KEY].max)


class ConnectionSetup:
    """The setup exchange of one connection attempt to ``description`` (``host:port``).

    ``first_request()`` gives ApiVersions; each answer goes to ``on_response()``, which
    gives the next request, or None once the connection may become READY. ``versions`` and
    ``broker_versions`` are known once ApiVersions is answered; ``authenticating`` says
    the SASL exchange has begun."""

    def __init__(
        self,
        settings: NetworkSettings,
        description: str,
        authenticator_factory: AuthenticatorFactory | None,
        host: str,
        port: int,
    ) -> None:
        self._settings = settings
        self._description = description
        self._authenticator_factory = authenticator_factory
        self._host = host
        self._port = port
        self._api_versions_version = FIRST_API_VERSIONS_VERSION
        self._authenticator: Authenticator | None = None
        self._authenticating = False
        self.broker_versions: dict[int, VersionRange] = {}
        self.versions: dict[int, int] = {}

    @property
    def authenticating(self) -> bool:
        """Whether the SASL exchange has begun."""
        return self._authenticating

    def first_request(self) -> SetupRequest:
        """ApiVersions, at the version to try first."""
        return self._api_versions_request(FIRST_API_VERSIONS_VERSION)

    def on_response(self, response: Response) -> SetupRequest | None:
        """The next request after ``response``, or None: set up. Raises the broker's or
        the authenticator's error when the setup fails."""
        if self._authenticating:
            if self._authenticator is None:
                raise ProtocolError(f"{self._description}: a SASL answer before the exchange")
            return self._authenticator.on_response(response)
        if not isinstance(response, ApiVersionsResponse):
            raise ProtocolError(f"expected an ApiVersionsResponse, got {type(response).__name__}")
        sent_version = self._api_versions_version
        fallback = api_versions_fallback(response, sent_version)
        if fallback is not None:
            _log.debug(
                "%s does not support ApiVersions v%d; retrying with v%d",
                self._description,
                sent_version,
                fallback,
            )
            return self._api_versions_request(fallback)
        self.broker_versions, self.versions = chosen_versions(
            response, sent_version, self._settings.required_api_keys, self._description
        )
        if self._authenticator_factory is None:
            return None
        self._authenticating = True  # before the factory: what it raises is a SASL failure
        self._authenticator = self._authenticator_factory(self._host, self._port)
        return self._authenticator.first_request(self.versions)

    def _api_versions_request(self, version: int) -> SetupRequest:
        self._api_versions_version = version
        request = ApiVersionsRequest(
            client_software_name=self._settings.client_software_name,
            client_software_version=self._settings.client_software_version,
        )
        return request, version


def api_versions_fallback(response: ApiVersionsResponse, sent_version: int) -> int | None:
    """The ApiVersions version to ask again with when the broker answered
    UNSUPPORTED_VERSION to ``sent_version``; None when it did not (or v0 was refused)."""
    if response.error_code != UnsupportedVersionError.code or sent_version <= 0:
        return None
    # Since Kafka 2.4 (KIP-511) the broker lists its own ApiVersions range in this answer;
    # older brokers list nothing, and v0 is the safe fallback (Java does this).
    theirs = next(
        (
            entry.max_version
            for entry in response.api_keys
            if entry.api_key == ApiVersionsRequest.API_KEY
        ),
        0,
    )
    return max(0, min(theirs, sent_version - 1))  # strictly lower: no loop


def chosen_versions(
    response: ApiVersionsResponse,
    sent_version: int,
    required: Collection[int],
    description: str,
) -> tuple[dict[int, VersionRange], dict[int, int]]:
    """The broker's version ranges and the version chosen per API. Raises the broker's
    error if it refused, NoCompatibleVersionError (naming ``description``, the connection)
    if a ``required`` API has no version both sides speak."""
    if response.error_code:
        raise error_for_code(response.error_code)(
            f"ApiVersions v{sent_version} refused by {description}"
        )
    broker_versions = broker_version_ranges(response)
    try:
        versions = choose_versions(broker_versions, required=required)
    except NoCompatibleVersionError as error:
        raise NoCompatibleVersionError(f"{description}: {error}") from None
    return broker_versions, versions


# Closes by the broker during the SASL exchange, in a row, before that counts as a refusal.
# One can be a broker restarting; three in a row within the reconnect backoff (~0.4 s at the
# defaults) is a broker that does not want this client.
_AUTHENTICATION_CLOSES_BEFORE_REFUSAL = 3


def counts_toward_refusal(reason: KafkaError) -> bool:
    """Whether a connection closed during SASL for ``reason`` may be the broker refusing
    (a lost connection), rather than a failure of its own (authentication, a timeout)."""
    return isinstance(reason, KafkaConnectionError) and not isinstance(
        reason, (AuthenticationError, KafkaTimeoutError)
    )


def sasl_refusal(description: str, closes: int, reason: KafkaError) -> KafkaError:
    """``reason``, or a SaslAuthenticationError once ``closes`` closes in a row during SASL
    say the broker at ``description`` refuses this client."""
    if closes < _AUTHENTICATION_CLOSES_BEFORE_REFUSAL:
        return reason
    refusal = SaslAuthenticationError(
        f"{description} closed the connection during SASL authentication {closes} "
        "times in a row: it refuses this client (a mechanism it does not offer, or "
        f"credentials it rejects without an answer); last: {reason}"
    )
    refusal.__cause__ = reason
    return refusal


def setup_timeout(description: str, timeout_ms: int) -> KafkaError:
    """Why the connection to ``description`` closes: not READY within ``timeout_ms``."""
    return ConnectionSetupTimeoutError(
        f"connection to {description} was not set up within {timeout_ms} ms "
        "(connection setup timeout)"
    )
