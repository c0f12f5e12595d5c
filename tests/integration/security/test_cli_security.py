"""The command line gets TLS and SASL through its properties (``--producer.config`` or
``--producer-property``), with Java's key names, as the Java console producer does."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkaline.cli.exit_status import ExitStatus
from kafkaline.testing import LocalBroker
from kafkaline.testing._ports import find_free_port
from kafkaline.testing.tls_terminator import (
    TestCertificates,
    TlsTerminator,
    make_test_certificates,
)
from kafkaline.testing.wire import BlockingConnection, fetch_partition, negotiate_versions

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]

PASSWORD = "cli-Pa55word-never-printed"


def kafkaline(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "kafkaline", *args],
        input=stdin,
        capture_output=True,
        timeout=60,
        check=False,
    )


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> TestCertificates:
    return make_test_certificates(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def tls_broker(
    pki: TestCertificates, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalBroker]:
    broker_port = find_free_port()
    with (
        TlsTerminator(broker_port, certfile=pki.server_cert, keyfile=pki.server_key) as tls,
        LocalBroker(
            port=broker_port,
            advertised_port=tls.port,
            log_dir=tmp_path_factory.mktemp("cli-tls-broker"),
        ) as broker,
    ):
        yield broker


def test_produce_over_tls_with_a_properties_file(
    tls_broker: LocalBroker, pki: TestCertificates, tmp_path: Path
) -> None:
    tls_broker.create_topic("cli-tls", partitions=1)
    properties = tmp_path / "client.properties"
    properties.write_text(f"security.protocol=SSL\nssl.ca.location={pki.ca_cert}\n")
    result = kafkaline(
        "produce", "--topic", "cli-tls",
        "--bootstrap-server", tls_broker.advertised_bootstrap_servers,
        "--producer.config", str(properties),
        stdin=b"one\ntwo\nthree\n",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr.decode()
    with BlockingConnection(tls_broker.host, tls_broker.port) as conn:
        fetch = negotiate_versions(conn)[1]
        batches = fetch_partition(conn, "cli-tls", 0, fetch, expected_records=3)
    values = [record.value for batch in batches for record in batch.records]
    assert values == [b"one", b"two", b"three"]


def run_with_a_wrong_ca(broker: LocalBroker, pki: TestCertificates) -> tuple[float, str, int]:
    started = time.monotonic()
    result = kafkaline(
        "produce", "--topic", "cli-tls-refused",
        "--bootstrap-server", broker.advertised_bootstrap_servers,
        "--producer-property", "security.protocol=SASL_SSL",
        "--producer-property", f"ssl.ca.location={pki.other_ca_cert}",
        "--producer-property", "sasl.mechanism=SCRAM-SHA-256",
        "--producer-property",
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="alice" password="{PASSWORD}";',
        stdin=b"never sent\n",
    )  # fmt: skip
    elapsed = time.monotonic() - started
    output = result.stderr.decode() + result.stdout.decode()
    return elapsed, output, result.returncode


def test_a_wrong_ca_fails_fast_in_one_line_without_secrets(
    tls_broker: LocalBroker, pki: TestCertificates
) -> None:
    elapsed, output, status = run_with_a_wrong_ca(tls_broker, pki)
    assert status == ExitStatus.KAFKA_ERROR
    assert elapsed < 15  # an interpreter start and a refused handshake, not max.block.ms
    assert len([text for text in output.splitlines() if text.startswith("kafkaline: error:")]) == 1
    assert PASSWORD not in output


def test_a_wrong_ca_line_names_the_tls_error(
    tls_broker: LocalBroker, pki: TestCertificates
) -> None:
    _, output, _ = run_with_a_wrong_ca(tls_broker, pki)
    [line] = [text for text in output.splitlines() if text.startswith("kafkaline: error:")]
    # The Sender's SslAuthenticationError, not the metadata wait's "client was closed".
    assert "TLS handshake" in line and "certificate did not verify" in line, line
    assert "closed" not in line, line
