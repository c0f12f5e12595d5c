"""TLS settings without a broker: the SSLContext a configuration makes (verification on by
default, hostname checking off only with a warning), client certificates and their password
(never shown), and the transports the network client gets."""

from __future__ import annotations

import logging
import ssl
from pathlib import Path

import pytest

from kafkaline.config import ProducerConfig
from kafkaline.errors import ConfigError
from kafkaline.net.client import NetworkClient
from kafkaline.net.security import ssl_context_from_config, transport_factory_from_config
from kafkaline.net.transport import ResolvedAddress, TcpTransport, TlsTransport
from kafkaline.testing.tls_terminator import TestCertificates, make_test_certificates

KEY_PASSWORD = "key-Pa55word-not-in-messages"
ADDRESS = ResolvedAddress(2, ("127.0.0.1", 9093))


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> TestCertificates:
    return make_test_certificates(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def encrypted_key(pki: TestCertificates, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from cryptography.hazmat.primitives import serialization

    key = serialization.load_pem_private_key(pki.client_key.read_bytes(), password=None)
    path = tmp_path_factory.mktemp("encrypted") / "client-encrypted.key"
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(KEY_PASSWORD.encode()),
        )
    )
    return path


def config(**settings: object) -> ProducerConfig:
    return ProducerConfig.from_kwargs(bootstrap_servers="broker:9093", **settings)


def test_plaintext_has_no_context_and_tcp_transports() -> None:
    assert ssl_context_from_config(config()) is None
    transport = transport_factory_from_config(config())("broker", 9093, ADDRESS)
    assert type(transport) is TcpTransport


def test_tls_verifies_certificates_and_host_names_by_default(pki: TestCertificates) -> None:
    context = ssl_context_from_config(config(security_protocol="SSL", ssl_cafile=str(pki.ca_cert)))
    assert context is not None
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert context.minimum_version >= ssl.TLSVersion.TLSv1_2
    [only_ca] = context.get_ca_certs()  # the CA given, not the system's
    assert "kafkaline test CA" in str(only_ca["subject"])
    transport = transport_factory_from_config(config(security_protocol="SASL_SSL",
                                                     sasl_mechanism="PLAIN",
                                                     sasl_plain_username="u",
                                                     sasl_plain_password="p"))(
        "broker", 9093, ADDRESS
    )  # fmt: skip
    assert isinstance(transport, TlsTransport)


def test_hostname_checking_off_is_logged(
    pki: TestCertificates, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="kafkaline.net.security"):
        context = ssl_context_from_config(
            config(security_protocol="SSL", ssl_cafile=str(pki.ca_cert), ssl_check_hostname=False)
        )
    assert context is not None and not context.check_hostname
    assert context.verify_mode == ssl.CERT_REQUIRED  # certificates are still verified
    assert any("ssl_check_hostname=False" in r.getMessage() for r in caplog.records)


def test_a_given_context_is_used_as_is_and_weak_ones_are_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    strict = ssl.create_default_context()
    with caplog.at_level(logging.WARNING, logger="kafkaline.net.security"):
        assert (
            ssl_context_from_config(config(security_protocol="SSL", ssl_context=strict)) is strict
        )
    assert caplog.records == []
    no_hostname = ssl.create_default_context()
    no_hostname.check_hostname = False
    unverified = ssl.create_default_context()
    unverified.check_hostname = False
    unverified.verify_mode = ssl.CERT_NONE
    with caplog.at_level(logging.WARNING, logger="kafkaline.net.security"):
        ssl_context_from_config(config(security_protocol="SSL", ssl_context=no_hostname))
        ssl_context_from_config(config(security_protocol="SSL", ssl_context=unverified))
    messages = [r.getMessage() for r in caplog.records]
    assert "does not check host names" in messages[0]
    assert "does not verify broker certificates (CERT_NONE)" in messages[1]


def test_client_certificate_with_an_encrypted_key(
    pki: TestCertificates, encrypted_key: Path
) -> None:
    context = ssl_context_from_config(
        config(
            security_protocol="SSL",
            ssl_cafile=str(pki.ca_cert),
            ssl_certfile=str(pki.client_cert),
            ssl_keyfile=str(encrypted_key),
            ssl_password=KEY_PASSWORD,
        )
    )
    assert context is not None


def test_a_wrong_key_password_is_a_config_error_that_does_not_show_it(
    pki: TestCertificates, encrypted_key: Path
) -> None:
    wrong = "wrong-" + KEY_PASSWORD
    with pytest.raises(ConfigError) as caught:
        ssl_context_from_config(
            config(
                security_protocol="SSL",
                ssl_certfile=str(pki.client_cert),
                ssl_keyfile=str(encrypted_key),
                ssl_password=wrong,
            )
        )
    message = str(caught.value)
    assert "could not be loaded" in message and str(encrypted_key) in message
    assert KEY_PASSWORD not in message and wrong not in message


def test_a_file_that_is_not_pem_is_a_config_error(tmp_path: Path) -> None:
    bogus = tmp_path / "ca.pem"
    bogus.write_text("not a certificate\n")
    with pytest.raises(ConfigError, match="could not be loaded as PEM CA certificates"):
        ssl_context_from_config(config(security_protocol="SSL", ssl_cafile=str(bogus)))


def test_network_client_from_config_raises_the_config_error_before_any_socket(
    tmp_path: Path,
) -> None:
    bogus = tmp_path / "ca.pem"
    bogus.write_text("not a certificate\n")
    with pytest.raises(ConfigError, match="ssl_cafile"):
        NetworkClient.from_config(config(security_protocol="SSL", ssl_cafile=str(bogus)))
