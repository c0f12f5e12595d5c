"""SASL authentication: the mechanisms as pure state machines, and the Kafka exchange that
carries them.

Two layers, both without I/O:

* a :class:`SaslMechanism` turns the server's challenges into the client's responses (bytes in,
  bytes out): :class:`PlainMechanism` (RFC 4616), :class:`ScramMechanism` (RFC 5802 and 7677:
  SCRAM-SHA-256 and SCRAM-SHA-512; the server's signature is verified) and
  :class:`OAuthBearerMechanism` (RFC 7628 client response, as Kafka's KIP-255 uses it);
* :class:`SaslAuthenticator` wraps a mechanism in Kafka requests for
  :class:`~kafkaline.net.connection.BrokerConnection`, which runs it on each new connection
  after ApiVersions and before the connection is ready::

      client                                   broker
      SaslHandshake v1 (mechanism)      ->
                                        <-     mechanisms enabled (error 33 if not this one)
      SaslAuthenticate (first token)    ->
                                        <-     challenge / error 58 with a message
      SaslAuthenticate (next token)     ->     ... until the mechanism is complete

Every failure is a :class:`~kafkaline.errors.SaslAuthenticationError` (not retriable): the
broker's refusal, a mechanism it does not offer, a SCRAM server signature that does not verify.
Messages name the broker, the mechanism and the user, never a password or a token.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import secrets
from collections.abc import Callable, Mapping
from typing import Protocol

from kafkaline.config import ProducerConfig, Secret, TokenProvider, reveal
from kafkaline.errors import SaslAuthenticationError, error_for_code
from kafkaline.protocol import Response
from kafkaline.protocol.api import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)

_log = logging.getLogger(__name__)

#: SaslHandshake v1 is the first that puts the SASL tokens into SaslAuthenticate requests
#: (KIP-152); v0 sent them as raw frames, which only brokers older than Kafka 1.0 need.
_HANDSHAKE_VERSION = 1

# RFC 5802 section 5.1: the iteration count a client should accept at least. Kafka's own
# minimum is 4096 (ScramMechanism.minIterations); a lower count from a server is a downgrade.
_MIN_SCRAM_ITERATIONS = 4096


class SaslMechanism(Protocol):
    """One SASL mechanism's client side, as a state machine over bytes.

    :meth:`initial_response` is the first token; each server challenge goes to
    :meth:`evaluate_challenge`, which returns the next token, or None once the exchange is
    complete on the client's side (:attr:`is_complete`). Failures raise
    :class:`~kafkaline.errors.SaslAuthenticationError`.
    """

    @property
    def name(self) -> str:
        """The mechanism's registered name, e.g. ``"SCRAM-SHA-256"``."""
        ...

    @property
    def is_complete(self) -> bool:
        """Whether the client expects no further challenge."""
        ...

    def initial_response(self) -> bytes:
        """The client's first token."""
        ...

    def evaluate_challenge(self, challenge: bytes) -> bytes | None:
        """The response to a server challenge, or None when the client has nothing to send."""
        ...


# --------------------------------------------------------------------------- PLAIN (RFC 4616)


class PlainMechanism:
    """SASL PLAIN: one message ``authzid NUL user NUL password``; the server answers with an
    empty token (or an error). Sends the password as it is: use it over TLS (SASL_SSL).

    >>> PlainMechanism("alice", Secret("pw")).initial_response()
    b'\\x00alice\\x00pw'
    """

    name = "PLAIN"

    def __init__(self, username: str, password: Secret) -> None:
        self._username = username
        self._password = password
        self._sent = False
        self._complete = False

    @property
    def is_complete(self) -> bool:
        return self._complete

    def initial_response(self) -> bytes:
        self._sent = True
        return b"\x00" + self._username.encode() + b"\x00" + self._password.reveal().encode()

    def evaluate_challenge(self, challenge: bytes) -> bytes | None:
        if not self._sent:
            raise SaslAuthenticationError("PLAIN: a challenge came before the initial response")
        if challenge:
            raise SaslAuthenticationError("PLAIN: the server sent an unexpected non-empty token")
        self._complete = True
        return None

    def __repr__(self) -> str:
        return f"<PlainMechanism user={self._username!r}>"


# --------------------------------------------------------------------------- SCRAM (RFC 5802)

#: SCRAM mechanism name -> hashlib name.
SCRAM_HASHES: Mapping[str, str] = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}


def _scram_escape(username: str) -> str:
    # RFC 5802 5.1: "=" and "," in a user name are sent as "=3D" and "=2C" ("=" first).
    return username.replace("=", "=3D").replace(",", "=2C")


def _parse_scram_attributes(message: str, what: str) -> dict[str, str]:
    attributes: dict[str, str] = {}
    for part in message.split(","):
        key, sep, value = part.partition("=")
        if not sep or len(key) != 1:
            raise SaslAuthenticationError(f"SCRAM: malformed {what} (attribute {key[:20]!r})")
        attributes.setdefault(key, value)
    return attributes


class ScramMechanism:
    """SCRAM (RFC 5802) with SHA-256 or SHA-512 (RFC 7677; Kafka's SCRAM-SHA-*):

    1. client-first ``n,,n=user,r=client-nonce``
    2. server-first ``r=client-nonce+server-nonce,s=salt,i=iterations``
    3. client-final ``c=biws,r=nonce,p=proof``, where the proof is
       ``ClientKey XOR HMAC(H(ClientKey), AuthMessage)`` and
       ``ClientKey = HMAC(Hi(password, salt, i), "Client Key")``
    4. server-final ``v=signature``: checked against
       ``HMAC(HMAC(SaltedPassword, "Server Key"), AuthMessage)`` (the server proves it knows
       the password too), or ``e=error``.

    ``hash_name`` is any :mod:`hashlib` name (tests use ``"sha1"`` for RFC 5802's example);
    ``client_nonce`` is random unless given (tests give the RFCs' nonces).
    """

    def __init__(
        self,
        username: str,
        password: Secret,
        *,
        mechanism: str = "SCRAM-SHA-256",
        hash_name: str | None = None,
        client_nonce: str | None = None,
    ) -> None:
        self._name = mechanism
        self._hash_name = hash_name or SCRAM_HASHES[mechanism]
        self._username = username
        self._password = password
        # 24 random bytes as URL-safe base64: printable, and never "," (RFC 5802 "printable").
        self._client_nonce = client_nonce or secrets.token_urlsafe(24)
        self._client_first_bare = f"n={_scram_escape(username)},r={self._client_nonce}"
        self._expected_server_signature: bytes | None = None
        self._state = "initial"

    @property
    def name(self) -> str:
        return self._name

    @property
    def is_complete(self) -> bool:
        return self._state == "complete"

    def initial_response(self) -> bytes:
        if self._state != "initial":
            raise SaslAuthenticationError(f"{self._name}: the exchange was already started")
        self._state = "client-first-sent"
        # GS2 header "n,,": no channel binding, no authorization identity.
        return f"n,,{self._client_first_bare}".encode()

    def evaluate_challenge(self, challenge: bytes) -> bytes | None:
        if self._state == "client-first-sent":
            final = self._client_final(challenge)
            self._state = "client-final-sent"
            return final
        if self._state == "client-final-sent":
            self._verify_server_final(challenge)
            self._state = "complete"
            return None
        raise SaslAuthenticationError(f"{self._name}: unexpected challenge in state {self._state}")

    def _decode(self, challenge: bytes, what: str) -> str:
        try:
            return challenge.decode("utf-8")
        except UnicodeDecodeError:
            raise SaslAuthenticationError(f"{self._name}: {what} is not UTF-8") from None

    def _client_final(self, challenge: bytes) -> bytes:
        server_first = self._decode(challenge, "server-first message")
        attributes = _parse_scram_attributes(server_first, "server-first message")
        if "e" in attributes:
            raise SaslAuthenticationError(f"{self._name}: the server refused: {attributes['e']}")
        try:
            nonce, salt_text, iterations_text = attributes["r"], attributes["s"], attributes["i"]
        except KeyError as missing:
            raise SaslAuthenticationError(
                f"{self._name}: server-first message has no {missing.args[0]!r} attribute"
            ) from None
        if not nonce.startswith(self._client_nonce) or len(nonce) == len(self._client_nonce):
            raise SaslAuthenticationError(
                f"{self._name}: the server's nonce does not extend the client's (possible "
                "replay or man in the middle)"
            )
        try:
            salt = base64.b64decode(salt_text, validate=True)
            iterations = int(iterations_text)
        except ValueError:
            raise SaslAuthenticationError(
                f"{self._name}: server-first message has a malformed salt or iteration count"
            ) from None
        if iterations < _MIN_SCRAM_ITERATIONS:
            raise SaslAuthenticationError(
                f"{self._name}: the server asks for {iterations} iterations, below the minimum "
                f"{_MIN_SCRAM_ITERATIONS} (a downgrade)"
            )
        hash_name = self._hash_name
        salted = hashlib.pbkdf2_hmac(
            hash_name, self._password.reveal().encode("utf-8"), salt, iterations
        )
        client_key = hmac.digest(salted, b"Client Key", hash_name)
        stored_key = hashlib.new(hash_name, client_key).digest()
        # "biws" is base64("n,,"): the GS2 header of the first message, bound into the proof.
        without_proof = f"c=biws,r={nonce}"
        auth_message = f"{self._client_first_bare},{server_first},{without_proof}".encode()
        client_signature = hmac.digest(stored_key, auth_message, hash_name)
        proof = bytes(a ^ b for a, b in zip(client_key, client_signature, strict=True))
        server_key = hmac.digest(salted, b"Server Key", hash_name)
        self._expected_server_signature = hmac.digest(server_key, auth_message, hash_name)
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def _verify_server_final(self, challenge: bytes) -> None:
        server_final = self._decode(challenge, "server-final message")
        attributes = _parse_scram_attributes(server_final, "server-final message")
        if "e" in attributes:
            raise SaslAuthenticationError(f"{self._name}: the server refused: {attributes['e']}")
        signature_text = attributes.get("v")
        if signature_text is None:
            raise SaslAuthenticationError(f"{self._name}: server-final message has no signature")
        try:
            signature = base64.b64decode(signature_text, validate=True)
        except ValueError:
            raise SaslAuthenticationError(
                f"{self._name}: the server signature is not base64"
            ) from None
        expected = self._expected_server_signature
        if expected is None or not hmac.compare_digest(signature, expected):
            raise SaslAuthenticationError(
                f"{self._name}: the server signature does not verify: the server does not know "
                "the password (wrong server, or a man in the middle)"
            )

    def __repr__(self) -> str:
        return f"<ScramMechanism {self._name} user={self._username!r} state={self._state}>"


# --------------------------------------------------------------------------- OAUTHBEARER


def resolve_token(provider: Callable[[], str] | TokenProvider) -> Secret:
    """Ask a token provider for the current token: an object's ``.token()``, or the callable
    itself. Raises SaslAuthenticationError (without the token) if it fails or returns no str."""
    try:
        token_method = getattr(provider, "token", None)
        token = token_method() if callable(token_method) else provider()  # type: ignore[operator]
    except Exception as error:
        # The provider's own message is kept out: it may quote the token.
        raise SaslAuthenticationError(
            f"OAUTHBEARER: the token provider raised {type(error).__name__}"
        ) from error
    if isinstance(token, Secret):
        return token
    if not isinstance(token, str) or not token:
        raise SaslAuthenticationError(
            f"OAUTHBEARER: the token provider returned {type(token).__name__}, not a non-empty str"
        )
    return Secret(token)


class OAuthBearerMechanism:
    """OAUTHBEARER (RFC 7628) as Kafka uses it (KIP-255): one client message,
    ``n,,\\x01auth=Bearer <token>\\x01\\x01``; the server answers empty (accepted) or with a
    JSON error status, to which the client sends ``\\x01`` and the server then fails the
    exchange.

    >>> OAuthBearerMechanism(Secret("abc")).initial_response()
    b'n,,\\x01auth=Bearer abc\\x01\\x01'
    """

    name = "OAUTHBEARER"

    def __init__(self, token: Secret) -> None:
        self._token = token
        self._complete = False
        #: The server's JSON error status, once it sent one (not secret: no token in it).
        self.server_error: str | None = None

    @property
    def is_complete(self) -> bool:
        return self._complete

    def initial_response(self) -> bytes:
        return b"n,,\x01auth=Bearer " + self._token.reveal().encode() + b"\x01\x01"

    def evaluate_challenge(self, challenge: bytes) -> bytes | None:
        if not challenge:
            self._complete = True
            return None
        if self.server_error is not None:
            raise SaslAuthenticationError("OAUTHBEARER: a second challenge after an error")
        # RFC 7628 3.2.2: an error status; answer with a single %x01 to end the exchange.
        self.server_error = challenge.decode("utf-8", "replace")[:500]
        return b"\x01"

    def __repr__(self) -> str:
        return "<OAuthBearerMechanism>"


# --------------------------------------------------------------------------- the Kafka exchange

#: A setup request for the connection and its version (see kafkaline.net.connection).
_Step = tuple[SaslHandshakeRequest | SaslAuthenticateRequest, int]


class SaslAuthenticator:
    """Runs one mechanism over SaslHandshake and SaslAuthenticate on one connection; an
    :class:`~kafkaline.net.connection.Authenticator`.

    ``make_mechanism`` is called once, when the exchange starts, so an OAUTHBEARER token is
    fetched per connection. ``where`` (``host:port``) and ``user`` only go into messages.
    """

    def __init__(
        self,
        mechanism_name: str,
        make_mechanism: Callable[[], SaslMechanism],
        *,
        where: str,
        user: str | None = None,
    ) -> None:
        self._mechanism_name = mechanism_name
        self._make_mechanism = make_mechanism
        self._mechanism: SaslMechanism | None = None
        self._where = where
        self._user = user
        self._authenticate_version = 0
        self._state = "initial"

    def describe(self) -> str:
        """``SASL <mechanism> [as user 'u'] with broker at host:port``, for messages."""
        who = f" as user {self._user!r}" if self._user is not None else ""
        return f"SASL {self._mechanism_name}{who} with broker at {self._where}"

    def first_request(self, api_versions: Mapping[int, int]) -> _Step | None:
        """SaslHandshake v1 proposing the mechanism."""
        handshake = api_versions.get(SaslHandshakeRequest.API_KEY)
        authenticate = api_versions.get(SaslAuthenticateRequest.API_KEY)
        if handshake is None or authenticate is None or handshake < _HANDSHAKE_VERSION:
            raise SaslAuthenticationError(
                f"{self.describe()} failed: the broker does not support SaslHandshake v1 and "
                "SaslAuthenticate (Kafka 1.0+ brokers do); is it configured for SASL?"
            )
        self._authenticate_version = authenticate
        self._state = "handshake"
        return SaslHandshakeRequest(mechanism=self._mechanism_name), _HANDSHAKE_VERSION

    def on_response(self, response: Response) -> _Step | None:
        """The next request, or None once authenticated."""
        if self._state == "handshake":
            return self._after_handshake(response)
        if self._state == "authenticating":
            return self._after_authenticate(response)
        raise SaslAuthenticationError(
            f"{self.describe()} failed: unexpected {type(response).__name__} in state {self._state}"
        )

    def _after_handshake(self, response: Response) -> _Step | None:
        if not isinstance(response, SaslHandshakeResponse):
            raise SaslAuthenticationError(
                f"{self.describe()} failed: expected a SaslHandshakeResponse, got "
                f"{type(response).__name__}"
            )
        if response.error_code:
            offered = ", ".join(response.mechanisms) or "none"
            raise self._broker_error(
                response.error_code,
                f"the broker does not accept this mechanism (it offers: {offered})",
            )
        try:
            mechanism = self._make_mechanism()
        except SaslAuthenticationError as error:
            raise SaslAuthenticationError(f"{self.describe()} failed: {error}") from error
        self._mechanism = mechanism
        self._state = "authenticating"
        return self._authenticate(mechanism.initial_response())

    def _after_authenticate(self, response: Response) -> _Step | None:
        if not isinstance(response, SaslAuthenticateResponse):
            raise SaslAuthenticationError(
                f"{self.describe()} failed: expected a SaslAuthenticateResponse, got "
                f"{type(response).__name__}"
            )
        mechanism = self._mechanism
        if mechanism is None:  # pragma: no cover - set with the state
            raise SaslAuthenticationError(f"{self.describe()} failed: no mechanism")
        if response.error_code:
            detail = response.error_message or "no message"
            server_error = getattr(mechanism, "server_error", None)
            if server_error:
                detail += f"; server status: {server_error}"
            raise self._broker_error(response.error_code, f"the broker refused: {detail}")
        try:
            token = mechanism.evaluate_challenge(bytes(response.auth_bytes))
        except SaslAuthenticationError as error:
            raise SaslAuthenticationError(f"{self.describe()} failed: {error}") from error
        if token is not None:
            return self._authenticate(token)
        if not mechanism.is_complete:
            raise SaslAuthenticationError(
                f"{self.describe()} failed: the mechanism has nothing to send but is not done"
            )
        self._state = "complete"
        _log.debug("authenticated: %s", self.describe())
        return None

    def _authenticate(self, token: bytes) -> _Step:
        return SaslAuthenticateRequest(auth_bytes=token), self._authenticate_version

    def _broker_error(self, code: int, detail: str) -> SaslAuthenticationError:
        cause = error_for_code(code)(f"{detail} (from {self._where})")
        error = SaslAuthenticationError(
            f"{self.describe()} failed: {detail} ({cause.name}, error code {code})"
        )
        error.__cause__ = cause
        return error

    def __repr__(self) -> str:
        return f"<SaslAuthenticator {self.describe()} state={self._state}>"


# --------------------------------------------------------------------------- from a config

#: What :class:`~kafkaline.net.connection.BrokerConnection` calls per connection attempt.
SaslAuthenticatorFactory = Callable[[str, int], SaslAuthenticator]


def mechanism_factory(config: ProducerConfig) -> Callable[[], SaslMechanism]:
    """A function making a fresh mechanism (with a fresh nonce or token) for ``config``."""
    name = config.sasl_mechanism
    if name == "OAUTHBEARER":
        provider = config.sasl_oauth_token_provider
        if provider is None:  # pragma: no cover - ProducerConfig refuses this
            raise SaslAuthenticationError("OAUTHBEARER needs sasl_oauth_token_provider")
        return lambda: OAuthBearerMechanism(resolve_token(provider))
    username = config.sasl_plain_username
    password = reveal(config.sasl_plain_password)
    if username is None or password is None:  # pragma: no cover - ProducerConfig refuses this
        raise SaslAuthenticationError(f"{name} needs sasl_plain_username and sasl_plain_password")
    secret = Secret(password)
    if name == "PLAIN":
        return lambda: PlainMechanism(username, secret)
    if name is not None and name in SCRAM_HASHES:
        scram: str = name
        return lambda: ScramMechanism(username, secret, mechanism=scram)
    raise SaslAuthenticationError(f"SASL mechanism {name!r} is not supported")  # pragma: no cover


def sasl_authenticator_factory(config: ProducerConfig) -> SaslAuthenticatorFactory | None:
    """The per-connection SASL authenticator for ``config``; None without SASL.

    SASL PLAIN without TLS (``SASL_PLAINTEXT``) sends the password readable by anyone on the
    network: that is allowed (test setups do it) but logged as a warning.
    """
    if config.security_protocol not in ("SASL_PLAINTEXT", "SASL_SSL"):
        return None
    name = config.sasl_mechanism
    if name is None:  # pragma: no cover - ProducerConfig refuses this
        raise SaslAuthenticationError(f"{config.security_protocol} needs sasl_mechanism")
    if name == "PLAIN" and config.security_protocol == "SASL_PLAINTEXT":
        _log.warning(
            "SASL PLAIN over a plaintext connection (security_protocol=SASL_PLAINTEXT): the "
            "password crosses the network unencrypted; use SASL_SSL"
        )
    make_mechanism = mechanism_factory(config)
    user = config.sasl_plain_username if name != "OAUTHBEARER" else None

    def make(host: str, port: int) -> SaslAuthenticator:
        return SaslAuthenticator(name, make_mechanism, where=f"{host}:{port}", user=user)

    return make
