"""SASL without a network: the mechanisms against the RFC examples, every way they refuse, and
the SaslHandshake/SaslAuthenticate exchange the connection drives."""

from __future__ import annotations

import base64
import logging
import re
from collections.abc import Callable

import pytest

from kafkaline.config import ProducerConfig, Secret
from kafkaline.errors import (
    SaslAuthenticationError,
    SaslAuthenticationFailedError,
    UnsupportedSaslMechanismError,
)
from kafkaline.net.sasl import (
    OAuthBearerMechanism,
    PlainMechanism,
    SaslAuthenticator,
    SaslMechanism,
    ScramMechanism,
    mechanism_factory,
    resolve_token,
    sasl_authenticator_factory,
)
from kafkaline.protocol import CLIENT_VERSIONS
from kafkaline.protocol.api import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)

PASSWORD = "pencil"

# --------------------------------------------------------------------------- SCRAM test vectors

# RFC 5802 section 5: SCRAM-SHA-1, user "user", password "pencil".
RFC5802_NONCE = "fyko+d2lbbFgONRv9qkxdawL"
RFC5802: dict[str, bytes] = {
    "client_first": b"n,,n=user,r=fyko+d2lbbFgONRv9qkxdawL",
    "server_first": b"r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,s=QSXCR+Q6sek8bf92,i=4096",
    "client_final": b"c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,"
    b"p=v0X8v3Bz2T0CJGbJQyF0X+HI4Ts=",
    "server_final": b"v=rmF9pqV8S7suAoZWja4dJRkFsKQ=",
}
# RFC 7677 section 3: SCRAM-SHA-256, same user and password.
RFC7677_NONCE = "rOprNGfwEbeRWgbNEkqO"
RFC7677: dict[str, bytes] = {
    "client_first": b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO",
    "server_first": b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
    b"s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
    "client_final": b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
    b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
    "server_final": b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=",
}


def rfc5802_sha1() -> ScramMechanism:
    # Our generic SCRAM code with SHA-1, to check it against RFC 5802's own example.
    return ScramMechanism(
        "user",
        Secret(PASSWORD),
        mechanism="SCRAM-SHA-1",
        hash_name="sha1",
        client_nonce=RFC5802_NONCE,
    )


def rfc7677_sha256() -> ScramMechanism:
    return ScramMechanism(
        "user", Secret(PASSWORD), mechanism="SCRAM-SHA-256", client_nonce=RFC7677_NONCE
    )


@pytest.mark.parametrize(
    ("make", "vector"), [(rfc5802_sha1, RFC5802), (rfc7677_sha256, RFC7677)], ids=["5802", "7677"]
)
def test_scram_matches_the_rfc_examples_exactly(
    make: Callable[[], ScramMechanism], vector: dict[str, bytes]
) -> None:
    scram = make()
    assert scram.initial_response() == vector["client_first"]
    assert scram.evaluate_challenge(vector["server_first"]) == vector["client_final"]
    assert not scram.is_complete
    assert scram.evaluate_challenge(vector["server_final"]) is None
    assert scram.is_complete


def test_a_server_signature_that_does_not_verify_is_an_error() -> None:
    scram = rfc7677_sha256()
    scram.initial_response()
    scram.evaluate_challenge(RFC7677["server_first"])
    forged = base64.b64encode(b"\x00" * 32)
    with pytest.raises(SaslAuthenticationError, match="server signature does not verify"):
        scram.evaluate_challenge(b"v=" + forged)
    assert not scram.is_complete


def test_the_right_signature_for_another_password_does_not_verify() -> None:
    # The server computed its signature from a different password: it does not know ours.
    other = ScramMechanism(
        "user", Secret("not-pencil"), mechanism="SCRAM-SHA-256", client_nonce="rOprNGfwEbeRWgbNEkqO"
    )
    other.initial_response()
    other.evaluate_challenge(RFC7677["server_first"])
    with pytest.raises(SaslAuthenticationError, match="does not verify"):
        other.evaluate_challenge(RFC7677["server_final"])


@pytest.mark.parametrize(
    ("server_first", "message"),
    [
        (b"e=unknown-user", "the server refused: unknown-user"),
        (b"r=someone-elses-nonce,s=QSXCR+Q6sek8bf92,i=4096", "does not extend the client's"),
        (b"r=rOprNGfwEbeRWgbNEkqO,s=QSXCR+Q6sek8bf92,i=4096", "does not extend the client's"),
        (b"r=rOprNGfwEbeRWgbNEkqOabc,s=QSXCR+Q6sek8bf92,i=1024", "below the minimum 4096"),
        (b"r=rOprNGfwEbeRWgbNEkqOabc,s=not base64!,i=4096", "malformed salt"),
        (b"r=rOprNGfwEbeRWgbNEkqOabc,i=4096", "has no 's' attribute"),
        (b"garbage", "malformed server-first message"),
        (b"\xff\xfe", "not UTF-8"),
    ],
)
def test_bad_server_first_messages_are_refused(server_first: bytes, message: str) -> None:
    scram = rfc7677_sha256()
    scram.initial_response()
    with pytest.raises(SaslAuthenticationError, match=message):
        scram.evaluate_challenge(server_first)


@pytest.mark.parametrize(
    ("server_final", "message"),
    [
        (b"e=invalid-proof", "the server refused: invalid-proof"),
        (b"x=1", "has no signature"),
        (b"v=***", "not base64"),
    ],
)
def test_bad_server_final_messages_are_refused(server_final: bytes, message: str) -> None:
    scram = rfc7677_sha256()
    scram.initial_response()
    scram.evaluate_challenge(RFC7677["server_first"])
    with pytest.raises(SaslAuthenticationError, match=message):
        scram.evaluate_challenge(server_final)


def test_scram_escapes_user_names_and_makes_fresh_printable_nonces() -> None:
    first = ScramMechanism("a=b,c", Secret("p")).initial_response()
    assert first.startswith(b"n,,n=a=3Db=2Cc,r=")
    nonces = {
        ScramMechanism("u", Secret("p")).initial_response().split(b"r=")[1] for _ in range(50)
    }
    assert len(nonces) == 50
    assert all(b"," not in nonce and len(nonce) >= 24 for nonce in nonces)


def test_scram_sha512_runs_a_whole_exchange_against_a_server_computation() -> None:
    import hashlib
    import hmac

    salt, iterations = b"salt-of-the-server", 4096
    scram = ScramMechanism("alice", Secret("pw"), mechanism="SCRAM-SHA-512", client_nonce="cn")
    client_first_bare = scram.initial_response()[3:]
    server_first = b"r=cnSERVER,s=" + base64.b64encode(salt) + b",i=4096"
    client_final = scram.evaluate_challenge(server_first)
    assert client_final is not None
    # The server side, written from RFC 5802 independently of the client code.
    salted = hashlib.pbkdf2_hmac("sha512", b"pw", salt, iterations)
    without_proof, proof_text = client_final.rsplit(b",p=", 1)
    auth_message = client_first_bare + b"," + server_first + b"," + without_proof
    client_key = hmac.digest(salted, b"Client Key", "sha512")
    stored_key = hashlib.sha512(client_key).digest()
    signature = hmac.digest(stored_key, auth_message, "sha512")
    recovered = bytes(a ^ b for a, b in zip(base64.b64decode(proof_text), signature, strict=True))
    assert hashlib.sha512(recovered).digest() == stored_key  # the proof is right
    server_signature = hmac.digest(
        hmac.digest(salted, b"Server Key", "sha512"), auth_message, "sha512"
    )
    assert scram.evaluate_challenge(b"v=" + base64.b64encode(server_signature)) is None


# --------------------------------------------------------------------------- PLAIN, OAUTHBEARER


def test_plain_sends_one_message_and_expects_an_empty_answer() -> None:
    plain = PlainMechanism("alice", Secret("pw"))
    assert plain.initial_response() == b"\x00alice\x00pw"
    assert plain.evaluate_challenge(b"") is None and plain.is_complete
    with pytest.raises(SaslAuthenticationError, match="before the initial response"):
        PlainMechanism("a", Secret("b")).evaluate_challenge(b"")
    early = PlainMechanism("a", Secret("b"))
    early.initial_response()
    with pytest.raises(SaslAuthenticationError, match="unexpected non-empty"):
        early.evaluate_challenge(b"x")


def test_oauthbearer_message_and_error_status() -> None:
    mechanism = OAuthBearerMechanism(Secret("tok"))
    assert mechanism.initial_response() == b"n,,\x01auth=Bearer tok\x01\x01"
    assert mechanism.evaluate_challenge(b'{"status":"invalid_token"}') == b"\x01"
    assert mechanism.server_error == '{"status":"invalid_token"}'
    accepted = OAuthBearerMechanism(Secret("tok"))
    assert accepted.evaluate_challenge(b"") is None and accepted.is_complete


def test_token_providers_callable_or_object_and_their_failures() -> None:
    class Provider:
        def token(self) -> str:
            return "from-object"

    assert resolve_token(lambda: "from-callable").reveal() == "from-callable"
    assert resolve_token(Provider()).reveal() == "from-object"

    def leaky() -> str:
        raise RuntimeError("could not refresh token SECRET-TOKEN-VALUE")

    with pytest.raises(SaslAuthenticationError) as caught:
        resolve_token(leaky)
    assert "RuntimeError" in str(caught.value) and "SECRET-TOKEN-VALUE" not in str(caught.value)
    with pytest.raises(SaslAuthenticationError, match="returned NoneType"):
        resolve_token(lambda: None)  # type: ignore[arg-type, return-value]


# --------------------------------------------------------------------------- the Kafka exchange

VERSIONS = {key: CLIENT_VERSIONS[key].max for key in (17, 36)}


def authenticator(mechanism: SaslMechanism, user: str | None = "alice") -> SaslAuthenticator:
    return SaslAuthenticator(mechanism.name, lambda: mechanism, where="b1:9092", user=user)


def test_handshake_then_tokens_until_complete() -> None:
    auth = authenticator(rfc7677_sha256(), user="user")
    request, version = auth.first_request(VERSIONS) or (None, 0)
    assert isinstance(request, SaslHandshakeRequest) and version == 1
    assert request.mechanism == "SCRAM-SHA-256"
    step = auth.on_response(SaslHandshakeResponse(error_code=0, mechanisms=["SCRAM-SHA-256"]))
    assert step is not None
    first, version = step
    assert isinstance(first, SaslAuthenticateRequest) and version == VERSIONS[36]
    assert bytes(first.auth_bytes) == RFC7677["client_first"]
    step = auth.on_response(
        SaslAuthenticateResponse(error_code=0, auth_bytes=RFC7677["server_first"])
    )
    assert step is not None and bytes(step[0].auth_bytes) == RFC7677["client_final"]  # type: ignore[union-attr]
    done = auth.on_response(
        SaslAuthenticateResponse(error_code=0, auth_bytes=RFC7677["server_final"])
    )
    assert done is None


def test_a_mechanism_the_broker_does_not_offer() -> None:
    auth = authenticator(PlainMechanism("alice", Secret("pw")))
    auth.first_request(VERSIONS)
    with pytest.raises(SaslAuthenticationError) as caught:
        auth.on_response(
            SaslHandshakeResponse(error_code=33, mechanisms=["SCRAM-SHA-256", "SCRAM-SHA-512"])
        )
    message = str(caught.value)
    assert "SASL PLAIN as user 'alice' with broker at b1:9092 failed" in message
    assert "it offers: SCRAM-SHA-256, SCRAM-SHA-512" in message
    assert "UNSUPPORTED_SASL_MECHANISM, error code 33" in message
    assert isinstance(caught.value.__cause__, UnsupportedSaslMechanismError)
    assert not caught.value.retriable


def test_the_brokers_refusal_names_its_error_and_never_the_password() -> None:
    auth = authenticator(PlainMechanism("alice", Secret("hunter2")))
    auth.first_request(VERSIONS)
    auth.on_response(SaslHandshakeResponse(error_code=0, mechanisms=["PLAIN"]))
    with pytest.raises(SaslAuthenticationError) as caught:
        auth.on_response(
            SaslAuthenticateResponse(
                error_code=58, error_message="Authentication failed: Invalid username or password"
            )
        )
    assert "the broker refused: Authentication failed" in str(caught.value)
    assert isinstance(caught.value.__cause__, SaslAuthenticationFailedError)
    assert "hunter2" not in str(caught.value) and "hunter2" not in repr(auth)


def test_oauthbearer_refusal_includes_the_server_status() -> None:
    auth = authenticator(OAuthBearerMechanism(Secret("tok")), user=None)
    auth.first_request(VERSIONS)
    auth.on_response(SaslHandshakeResponse(error_code=0, mechanisms=["OAUTHBEARER"]))
    step = auth.on_response(
        SaslAuthenticateResponse(error_code=0, auth_bytes=b'{"status":"invalid_token"}')
    )
    assert step is not None and bytes(step[0].auth_bytes) == b"\x01"  # type: ignore[union-attr]
    with pytest.raises(
        SaslAuthenticationError, match=re.escape('server status: {"status":"invalid_token"}')
    ):
        auth.on_response(SaslAuthenticateResponse(error_code=58, error_message="refused"))


def test_a_broker_without_sasl_apis_is_refused_before_sending() -> None:
    auth = authenticator(PlainMechanism("alice", Secret("pw")))
    with pytest.raises(SaslAuthenticationError, match="does not support SaslHandshake v1"):
        auth.first_request({17: 0})


def test_unexpected_responses_are_errors() -> None:
    auth = authenticator(PlainMechanism("alice", Secret("pw")))
    auth.first_request(VERSIONS)
    with pytest.raises(SaslAuthenticationError, match="expected a SaslHandshakeResponse"):
        auth.on_response(SaslAuthenticateResponse(error_code=0))


# --------------------------------------------------------------------------- from a config


def sasl_config(mechanism: str, protocol: str = "SASL_SSL") -> ProducerConfig:
    settings: dict[str, object] = {
        "bootstrap_servers": "b1:9092",
        "security_protocol": protocol,
        "sasl_mechanism": mechanism,
    }
    if mechanism == "OAUTHBEARER":
        settings["sasl_oauth_token_provider"] = lambda: "tok"
    else:
        settings |= {"sasl_plain_username": "alice", "sasl_plain_password": "pw"}
    return ProducerConfig.from_kwargs(**settings)


@pytest.mark.parametrize(
    ("mechanism", "kind"),
    [
        ("PLAIN", PlainMechanism),
        ("SCRAM-SHA-256", ScramMechanism),
        ("SCRAM-SHA-512", ScramMechanism),
        ("OAUTHBEARER", OAuthBearerMechanism),
    ],
)
def test_config_picks_the_mechanism(mechanism: str, kind: type) -> None:
    made = mechanism_factory(sasl_config(mechanism))()
    assert isinstance(made, kind) and made.name == mechanism
    factory = sasl_authenticator_factory(sasl_config(mechanism))
    assert factory is not None
    assert factory("b2", 9093).describe().startswith(f"SASL {mechanism}")


def test_no_sasl_without_a_sasl_protocol() -> None:
    assert sasl_authenticator_factory(ProducerConfig.from_kwargs(bootstrap_servers="b:1")) is None


def test_plain_over_plaintext_logs_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="kafkaline.net.sasl"):
        sasl_authenticator_factory(sasl_config("PLAIN", "SASL_PLAINTEXT"))
        sasl_authenticator_factory(sasl_config("PLAIN", "SASL_SSL"))
        sasl_authenticator_factory(sasl_config("SCRAM-SHA-256", "SASL_PLAINTEXT"))
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1 and "SASL PLAIN over a plaintext connection" in warnings[0]
    assert "pw" not in warnings[0].split("password")[0]


def test_a_sasl_token_request_never_shows_its_bytes() -> None:
    auth = authenticator(PlainMechanism("alice", Secret("hunter2")))
    auth.first_request(VERSIONS)
    step = auth.on_response(SaslHandshakeResponse(error_code=0, mechanisms=["PLAIN"]))
    assert step is not None
    request = step[0]
    assert b"hunter2" in bytes(request.auth_bytes)  # type: ignore[union-attr]
    assert "hunter2" not in repr(request) and "hunter2" not in str(request)
    assert repr(request) == "SaslAuthenticateRequest(auth_bytes=<14 bytes>)"
