"""SASL against the real broker started with ``--authentication``, as far as it goes.

This Tansu build negotiates SCRAM-SHA-256/512 and OAUTHBEARER but stores no users, so no client
can log in. What it shows, and what is checked here:

- SCRAM: the handshake is accepted, the broker answers the client-first message with a
  server-first one (a made-up salt, 16384 iterations), then ends with ``e=unknown-user`` (in a
  SaslAuthenticate answer without error code): the client reports the server's error.
- OAUTHBEARER: the broker answers SASL_AUTHENTICATION_FAILED (58).
- PLAIN: not offered; the broker closes the connection instead of answering
  UNSUPPORTED_SASL_MECHANISM, so the client calls it a refusal after 3 closes in a row.

Each refusal must surface as a SaslAuthenticationError (not retriable) within seconds, with a
bounded number of connection attempts (counted by a FaultProxy in front of the broker), every
waiting send() failed with it, close() returning, and no password or token in any log line or
error message.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from kafkaline import Producer, ProducerConfig
from kafkaline.errors import (
    SaslAuthenticationError,
    SaslAuthenticationFailedError,
)
from kafkaline.net.client import NetworkClient
from kafkaline.testing import FaultProxy, LocalBroker
from kafkaline.testing._ports import find_free_port
from kafkaline.testing.tls_terminator import TlsTerminator, make_test_certificates

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

PASSWORD = "never-logged-Pa55word"
TOKEN = "eyJhbGciOiJub25lIn0.never-logged-token."
FAST_S = 5.0


class AuthBroker:
    def __init__(self, broker: LocalBroker, proxy: FaultProxy) -> None:
        self.broker = broker
        self.proxy = proxy

    @property
    def bootstrap(self) -> str:
        return self.broker.advertised_bootstrap_servers


@pytest.fixture(scope="module")
def auth_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AuthBroker]:
    """A broker requiring SASL, behind a FaultProxy that counts connections."""
    broker_port = find_free_port()
    log_dir: Path = tmp_path_factory.mktemp("auth-broker")
    with (
        FaultProxy(upstream_port=broker_port) as proxy,
        LocalBroker(
            port=broker_port, advertised_port=proxy.port, authentication=True, log_dir=log_dir
        ) as broker,
    ):
        yield AuthBroker(broker, proxy)


def sasl_settings(mechanism: str) -> dict[str, object]:
    settings: dict[str, object] = {
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": mechanism,
    }
    if mechanism == "OAUTHBEARER":
        settings["sasl_oauth_token_provider"] = lambda: TOKEN
    else:
        settings["sasl_plain_username"] = "alice"
        settings["sasl_plain_password"] = PASSWORD
    return settings


def client_refusal(cluster: AuthBroker, mechanism: str) -> tuple[SaslAuthenticationError, int]:
    """Poll a NetworkClient until it raises; the error and the connections it made."""
    before = cluster.proxy.connections_made
    config = ProducerConfig.from_kwargs(
        bootstrap_servers=cluster.bootstrap, **sasl_settings(mechanism)
    )
    started = time.monotonic()
    with NetworkClient.from_config(config) as client:
        with pytest.raises(SaslAuthenticationError) as caught:
            while time.monotonic() - started < FAST_S:
                client.poll(100)
        assert client.fatal_error is caught.value
        # Fatal means fatal: later polls raise it again and connect no more.
        with pytest.raises(SaslAuthenticationError):
            client.poll(300)
    assert time.monotonic() - started < FAST_S
    return caught.value, cluster.proxy.connections_made - before


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_refusal_is_reported_with_the_servers_error(
    auth_broker: AuthBroker, mechanism: str
) -> None:
    error, connections = client_refusal(auth_broker, mechanism)
    assert connections == 1
    message = str(error)
    assert f"SASL {mechanism} as user 'alice'" in message
    assert "the server refused: unknown-user" in message
    assert not error.retriable and isinstance(error, PermissionError)


def test_oauthbearer_refusal_carries_the_broker_error(auth_broker: AuthBroker) -> None:
    error, connections = client_refusal(auth_broker, "OAUTHBEARER")
    assert connections == 1
    assert "SASL_AUTHENTICATION_FAILED, error code 58" in str(error)
    assert isinstance(error.__cause__, SaslAuthenticationFailedError)
    assert TOKEN not in str(error)


def test_plain_is_not_offered_and_the_closes_become_a_refusal(
    auth_broker: AuthBroker, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="kafkaline.net.sasl"):
        error, connections = client_refusal(auth_broker, "PLAIN")
    assert connections == 3
    assert "closed the connection during SASL authentication 3 times in a row" in str(error)
    assert any(
        "SASL PLAIN over a plaintext connection" in record.getMessage() for record in caplog.records
    )


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-512", "OAUTHBEARER", "PLAIN"])
def test_producer_fails_every_waiting_send_fast_and_closes(
    auth_broker: AuthBroker, mechanism: str, caplog: pytest.LogCaptureFixture
) -> None:
    before = auth_broker.proxy.connections_made
    producer = Producer(
        bootstrap_servers=auth_broker.bootstrap, max_block_ms=60_000, **sasl_settings(mechanism)
    )
    started = time.monotonic()
    errors: list[BaseException] = []
    with caplog.at_level(logging.DEBUG, logger="kafkaline"), ThreadPoolExecutor(4) as pool:

        def send(index: int) -> None:
            try:
                producer.send("secured-topic", f"value-{index}".encode())
            except BaseException as error:  # collected and checked below
                errors.append(error)

        list(pool.map(send, range(4)))
    elapsed = time.monotonic() - started
    assert elapsed < FAST_S, f"the refusal took {elapsed:.1f} s"
    assert len(errors) == 4
    for error in errors:
        # The Sender stops on the authentication error; every send waiting for metadata fails
        # with that error itself (not "the I/O thread failed", not "the client was closed").
        assert isinstance(error, SaslAuthenticationError), repr(error)
    # The Sender logs the refusal in one line (an expected failure: no traceback).
    refusals = [
        r
        for r in caplog.records
        if "SaslAuthenticationError" in r.getMessage()
        or ("SASL" in r.getMessage() and r.levelname == "ERROR")
    ]
    assert refusals, "the refusal was not logged"
    assert all(r.exc_info is None for r in refusals if r.levelname == "ERROR")
    closing = time.monotonic()
    producer.close(timeout=5)
    assert time.monotonic() - closing < 2
    time.sleep(0.5)  # room for a retry storm, had there been one
    assert auth_broker.proxy.connections_made - before <= 3
    # Secrets never reach a log line or an error message.
    text = "\n".join(record.getMessage() for record in caplog.records)
    text += "\n".join(f"{record.exc_info[1]!r}" for record in caplog.records if record.exc_info)
    for error in errors:
        chain: BaseException | None = error
        while chain is not None:
            text += f"\n{chain!s} {chain!r}"
            chain = chain.__cause__ or chain.__context__
    assert "SaslAuthenticationError" in text
    assert PASSWORD not in text and TOKEN not in text


def test_refusal_threads_and_sockets_are_released(auth_broker: AuthBroker) -> None:
    def producer_threads() -> int:
        return sum(1 for t in threading.enumerate() if "kafkaline-producer" in t.name)

    before = producer_threads()
    with (
        Producer(
            bootstrap_servers=auth_broker.bootstrap,
            max_block_ms=60_000,
            **sasl_settings("SCRAM-SHA-256"),
        ) as producer,
        pytest.raises(SaslAuthenticationError),
    ):
        producer.send("secured-topic", b"x")
    assert producer_threads() == before


def test_sasl_over_tls_reaches_the_same_refusal(tmp_path_factory: pytest.TempPathFactory) -> None:
    # SASL_SSL: the SASL exchange runs inside TLS (a terminator in front of the broker).
    pki = make_test_certificates(tmp_path_factory.mktemp("sasl-ssl-pki"))
    broker_port = find_free_port()
    with (
        TlsTerminator(broker_port, certfile=pki.server_cert, keyfile=pki.server_key) as tls,
        LocalBroker(
            port=broker_port,
            advertised_port=tls.port,
            authentication=True,
            log_dir=tmp_path_factory.mktemp("sasl-ssl-broker"),
        ) as broker,
    ):
        config = ProducerConfig.from_kwargs(
            bootstrap_servers=broker.advertised_bootstrap_servers,
            security_protocol="SASL_SSL",
            ssl_cafile=str(pki.ca_cert),
            sasl_mechanism="SCRAM-SHA-512",
            sasl_plain_username="alice",
            sasl_plain_password=PASSWORD,
        )
        started = time.monotonic()
        with (
            NetworkClient.from_config(config) as client,
            pytest.raises(SaslAuthenticationError, match="the server refused: unknown-user"),
        ):
            while time.monotonic() - started < FAST_S:
                client.poll(100)
        assert tls.accepted == 1 and tls.handshake_failures == 0
