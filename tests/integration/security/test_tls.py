"""TLS against a real broker: Tansu has no TLS of its own, so a TlsTerminator (stdlib, in
kafkaline.testing) sits in front of it, with certificates the test makes, and the broker
advertises the terminator's port so every connection is a TLS one.

Checked: a good CA connects and produces (read back over the broker's plain port); a wrong CA
and a certificate for other host names fail fast with SslAuthenticationError, after exactly one
connection attempt; turning host name checking off connects and logs a warning; mutual TLS.
"""

from __future__ import annotations

import logging
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from pathlib import Path

import pytest

from kafkaline import Producer, ProducerConfig
from kafkaline.errors import SslAuthenticationError
from kafkaline.net.client import NetworkClient
from kafkaline.testing import LocalBroker
from kafkaline.testing._ports import find_free_port
from kafkaline.testing.tls_terminator import (
    TestCertificates,
    TlsTerminator,
    make_test_certificates,
)
from kafkaline.testing.wire import BlockingConnection, fetch_partition, negotiate_versions

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

# Failures must show in seconds, far below these (which would be the slow, retrying path).
FAST_S = 5.0
MAX_BLOCK_MS = 30_000


class TlsCluster:
    """A broker behind a TLS terminator; the broker advertises the terminator's port."""

    def __init__(self, broker: LocalBroker, terminator: TlsTerminator) -> None:
        self.broker = broker
        self.terminator = terminator

    @property
    def bootstrap(self) -> str:
        return self.broker.advertised_bootstrap_servers


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> TestCertificates:
    return make_test_certificates(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def wrong_names_pki(tmp_path_factory: pytest.TempPathFactory) -> TestCertificates:
    return make_test_certificates(tmp_path_factory.mktemp("pki-wrong-names"), ["broker.invalid"])


@pytest.fixture
def tls_cluster(tmp_path: Path) -> Iterator[Callable[..., TlsCluster]]:
    """Start a broker behind a terminator serving ``pki``'s server certificate."""
    with ExitStack() as stack:

        def start(pki: TestCertificates, client_cafile: Path | None = None) -> TlsCluster:
            broker_port = find_free_port()
            terminator = stack.enter_context(
                TlsTerminator(
                    broker_port,
                    certfile=pki.server_cert,
                    keyfile=pki.server_key,
                    client_cafile=client_cafile,
                )
            )
            broker = stack.enter_context(
                LocalBroker(
                    port=broker_port,
                    advertised_port=terminator.port,
                    log_dir=tmp_path / f"broker-{broker_port}",
                )
            )
            return TlsCluster(broker, terminator)

        yield start


def read_values(broker: LocalBroker, topic: str, partitions: int, expected: int) -> list[bytes]:
    """Every value in ``topic``, read over the broker's own (plain) port."""
    values: list[bytes] = []
    with BlockingConnection(broker.host, broker.port, timeout=10) as conn:
        fetch_version = negotiate_versions(conn)[1]
        for partition in range(partitions):
            for batch in fetch_partition(conn, topic, partition, fetch_version):
                values.extend(bytes(record.value or b"") for record in batch.records)
    assert len(values) == expected
    return values


def produce_and_read_back(cluster: TlsCluster, **security: object) -> None:
    cluster.broker.create_topic("tls-events", partitions=2)
    sent = [f"record-{i}".encode() for i in range(200)]
    with Producer(
        bootstrap_servers=cluster.bootstrap, max_block_ms=MAX_BLOCK_MS, **security
    ) as producer:
        futures = [producer.send("tls-events", value) for value in sent]
        producer.flush(timeout=30)
        offsets = [future.get(timeout=0).offset for future in futures]
    assert all(offset >= 0 for offset in offsets)
    assert sorted(read_values(cluster.broker, "tls-events", 2, len(sent))) == sorted(sent)


def expect_fast_ssl_failure(cluster: TlsCluster, **security: object) -> SslAuthenticationError:
    """Send through a producer that cannot verify the broker: send() fails within seconds with
    the Sender's failure naming the SslAuthenticationError; one connection attempt only."""
    cluster.broker.create_topic("tls-refused", partitions=1)
    started = time.monotonic()
    with Producer(
        bootstrap_servers=cluster.bootstrap, max_block_ms=MAX_BLOCK_MS, **security
    ) as producer:
        with pytest.raises(SslAuthenticationError) as caught:
            producer.send("tls-refused", b"never delivered")
        elapsed = time.monotonic() - started
    assert elapsed < FAST_S, f"the TLS failure took {elapsed:.1f} s"
    assert "certificate did not verify" in str(caught.value)
    # The network client itself raises the named error.
    config = ProducerConfig.from_kwargs(bootstrap_servers=cluster.bootstrap, **security)
    with NetworkClient.from_config(config) as client:
        deadline = time.monotonic() + FAST_S
        with pytest.raises(SslAuthenticationError) as direct:
            while time.monotonic() < deadline:
                client.poll(100)
        assert client.fatal_error is direct.value
    time.sleep(0.5)  # room for a retry storm, had there been one
    assert cluster.terminator.accepted == 2  # one attempt by the producer, one by the client
    assert cluster.terminator.handshake_failures == 2
    return direct.value


def test_a_trusted_certificate_connects_and_produces(
    tls_cluster: Callable[..., TlsCluster], pki: TestCertificates
) -> None:
    cluster = tls_cluster(pki)
    produce_and_read_back(cluster, security_protocol="SSL", ssl_cafile=str(pki.ca_cert))
    assert cluster.terminator.accepted >= 1
    assert cluster.terminator.handshake_failures == 0


def test_a_ready_ssl_context_is_used_as_given(
    tls_cluster: Callable[..., TlsCluster], pki: TestCertificates
) -> None:
    cluster = tls_cluster(pki)
    context = ssl.create_default_context(cafile=str(pki.ca_cert))
    produce_and_read_back(cluster, security_protocol="SSL", ssl_context=context)


def test_a_certificate_from_another_ca_fails_fast_with_a_named_error(
    tls_cluster: Callable[..., TlsCluster], pki: TestCertificates
) -> None:
    cluster = tls_cluster(pki)
    error = expect_fast_ssl_failure(
        cluster, security_protocol="SSL", ssl_cafile=str(pki.other_ca_cert)
    )
    assert "certificate verify failed" in str(error) or "unable to get" in str(error)
    assert f"127.0.0.1:{cluster.terminator.port}" in str(error)
    assert not error.retriable and isinstance(error, PermissionError)


def test_system_cas_do_not_trust_a_private_ca(
    tls_cluster: Callable[..., TlsCluster], pki: TestCertificates
) -> None:
    cluster = tls_cluster(pki)
    expect_fast_ssl_failure(cluster, security_protocol="SSL")


def test_a_certificate_for_other_names_fails_with_hostname_checking_on(
    tls_cluster: Callable[..., TlsCluster], wrong_names_pki: TestCertificates
) -> None:
    cluster = tls_cluster(wrong_names_pki)
    error = expect_fast_ssl_failure(
        cluster, security_protocol="SSL", ssl_cafile=str(wrong_names_pki.ca_cert)
    )
    assert "Hostname mismatch" in str(error) or "IP address mismatch" in str(error)


def test_hostname_checking_off_connects_and_logs_a_warning(
    tls_cluster: Callable[..., TlsCluster],
    wrong_names_pki: TestCertificates,
    caplog: pytest.LogCaptureFixture,
) -> None:
    cluster = tls_cluster(wrong_names_pki)
    with caplog.at_level(logging.WARNING, logger="kafkaline.net.security"):
        produce_and_read_back(
            cluster,
            security_protocol="SSL",
            ssl_cafile=str(wrong_names_pki.ca_cert),
            ssl_check_hostname=False,
        )
    warnings = [r.getMessage() for r in caplog.records if r.name == "kafkaline.net.security"]
    assert any("ssl_check_hostname=False" in message for message in warnings)


def test_mutual_tls_with_a_client_certificate(
    tls_cluster: Callable[..., TlsCluster], pki: TestCertificates
) -> None:
    cluster = tls_cluster(pki, client_cafile=pki.ca_cert)
    produce_and_read_back(
        cluster,
        security_protocol="SSL",
        ssl_cafile=str(pki.ca_cert),
        ssl_certfile=str(pki.client_cert),
        ssl_keyfile=str(pki.client_key),
    )


def test_mutual_tls_without_a_client_certificate_is_refused(
    tls_cluster: Callable[..., TlsCluster], pki: TestCertificates
) -> None:
    cluster = tls_cluster(pki, client_cafile=pki.ca_cert)
    config = ProducerConfig.from_kwargs(
        bootstrap_servers=cluster.bootstrap, security_protocol="SSL", ssl_cafile=str(pki.ca_cert)
    )
    started = time.monotonic()
    with (
        NetworkClient.from_config(config) as client,
        pytest.raises(SslAuthenticationError, match="certificate"),
    ):
        while time.monotonic() - started < FAST_S:
            client.poll(100)
    assert time.monotonic() - started < FAST_S
    # With TLS 1.3 the server refuses the client's certificate after the client's side of the
    # handshake is done: the refusal is an alert the client reads with its first response.
    # (The terminator reads what the client sent before closing, or the close would be a
    # reset that can overtake the alert, and the client would see a lost connection.)
    # The terminator counts the failure after its handshake call has sent the alert, so the
    # client can raise first: wait for its thread (a full run once asserted before it counted).
    counted_by = time.monotonic() + FAST_S
    while cluster.terminator.handshake_failures == 0 and time.monotonic() < counted_by:
        time.sleep(0.01)
    assert cluster.terminator.handshake_failures == 1, cluster.terminator.handshake_errors
    assert all("CERTIFICATE" in reason for reason in cluster.terminator.handshake_errors)


def test_terminator_leaves_no_thread_behind(pki: TestCertificates) -> None:
    def terminator_threads() -> Sequence[threading.Thread]:
        return [t for t in threading.enumerate() if "tls-terminator" in t.name]

    before = len(terminator_threads())
    with TlsTerminator(find_free_port(), certfile=pki.server_cert, keyfile=pki.server_key) as tls:
        context = ssl.create_default_context(cafile=str(pki.ca_cert))
        # The broker behind it is not there: the terminator closes after the handshake.
        with (
            socket.create_connection(("127.0.0.1", tls.port), timeout=5) as raw,
            context.wrap_socket(raw, server_hostname="127.0.0.1") as wrapped,
        ):
            assert wrapped.recv(10) == b""
    assert len(terminator_threads()) == before


def test_large_requests_cross_tls_whole(
    tls_cluster: Callable[..., TlsCluster], pki: TestCertificates
) -> None:
    # ~1 MiB produce requests span many TLS records each way and fill socket buffers: partial
    # writes and reads of several records per event must lose and reorder nothing.
    cluster = tls_cluster(pki)
    cluster.broker.create_topic("tls-large", partitions=1)
    sent = [index.to_bytes(4, "big") * 256 for index in range(5000)]  # 1 KiB each
    with Producer(
        bootstrap_servers=cluster.bootstrap,
        security_protocol="SSL",
        ssl_cafile=str(pki.ca_cert),
        linger_ms=20,
        batch_size=1 << 20,
        max_request_size=4 << 20,
    ) as producer:
        futures = [producer.send("tls-large", value) for value in sent]
        producer.flush(timeout=60)
    assert [future.get(timeout=0).offset for future in futures] == list(range(len(sent)))
    with BlockingConnection(cluster.broker.host, cluster.broker.port, timeout=10) as conn:
        version = negotiate_versions(conn)[1]
        batches = fetch_partition(conn, "tls-large", 0, version, expected_records=len(sent))
    assert [bytes(record.value or b"") for batch in batches for record in batch.records] == sent


def test_pending_records_fail_fast_when_a_reconnect_fails_verification(
    tls_cluster: Callable[..., TlsCluster],
    pki: TestCertificates,
    wrong_names_pki: TestCertificates,
) -> None:
    # A producer that worked, then the broker's certificate changes to one from a CA the
    # client does not trust and every connection drops: the reconnect fails verification, and
    # the records waiting for it fail with it at once (not after delivery_timeout_ms).
    cluster = tls_cluster(pki)
    cluster.broker.create_topic("tls-pending", partitions=1)
    with Producer(
        bootstrap_servers=cluster.bootstrap,
        security_protocol="SSL",
        ssl_cafile=str(pki.ca_cert),
        delivery_timeout_ms=120_000,
    ) as producer:
        producer.send("tls-pending", b"before").get(timeout=10)
        cluster.terminator.replace_certificate(
            wrong_names_pki.server_cert, wrong_names_pki.server_key
        )
        accepted_before = cluster.terminator.accepted
        assert cluster.terminator.drop_connections() > 0
        started = time.monotonic()
        futures = [producer.send("tls-pending", f"after-{i}".encode()) for i in range(100)]
        failures: list[BaseException] = []
        for future in futures:
            with pytest.raises(SslAuthenticationError) as caught:
                future.get(timeout=FAST_S)
            failures.append(caught.value)
        elapsed = time.monotonic() - started
    assert elapsed < FAST_S, f"pending records failed after {elapsed:.1f} s"
    assert "certificate did not verify" in str(failures[0])
    time.sleep(0.5)  # room for a retry storm, had there been one
    assert cluster.terminator.accepted - accepted_before == 1
    assert cluster.terminator.handshake_failures == 1
