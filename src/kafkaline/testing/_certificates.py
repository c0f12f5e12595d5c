"""Test certificates with the ``cryptography`` package: a CA, leaves it signs, PEM files.

Imported only by :func:`kafkaline.testing.tls_terminator.make_test_certificates`, so that
importing kafkaline.testing does not need ``cryptography``. EC P-256 keys, SHA-256
signatures, valid from a day before ``now`` for 30 days.
"""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Sequence
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

SERVER_AUTH = ExtendedKeyUsageOID.SERVER_AUTH
CLIENT_AUTH = ExtendedKeyUsageOID.CLIENT_AUTH

Key = ec.EllipticCurvePrivateKey
Signed = tuple[x509.Certificate, Key]

_VALID_BEFORE_NOW = datetime.timedelta(days=1)
_VALID_AFTER_NOW = datetime.timedelta(days=30)

# A CA signs certificates (and revocation lists), nothing else.
_CA_KEY_USAGE = x509.KeyUsage(
    digital_signature=True,
    content_commitment=False,
    key_encipherment=False,
    data_encipherment=False,
    key_agreement=False,
    key_cert_sign=True,
    crl_sign=True,
    encipher_only=False,
    decipher_only=False,
)


def _common_name(name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])


def _builder(
    subject: x509.Name, issuer: x509.Name, key: Key, now: datetime.datetime
) -> x509.CertificateBuilder:
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _VALID_BEFORE_NOW)
        .not_valid_after(now + _VALID_AFTER_NOW)
    )


def make_ca(common_name: str, now: datetime.datetime) -> Signed:
    """A self-signed CA certificate (it signs leaves only: path length 0) and its key."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = _common_name(common_name)
    cert = (
        _builder(name, name, key, now)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_CA_KEY_USAGE, critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return cert, key


def _alternative_names(names: Sequence[str]) -> list[x509.GeneralName]:
    """``names`` as subject alternative names: IP addresses where they parse as one."""
    alternative: list[x509.GeneralName] = []
    for entry in names:
        try:
            alternative.append(x509.IPAddress(ipaddress.ip_address(entry)))
        except ValueError:
            alternative.append(x509.DNSName(entry))
    return alternative


def make_leaf(
    common_name: str,
    names: Sequence[str],
    usage: x509.ObjectIdentifier,
    ca: Signed,
    now: datetime.datetime,
) -> Signed:
    """A certificate for ``usage`` (server or client auth) and ``names``, signed by ``ca``."""
    ca_cert, ca_key = ca
    key = ec.generate_private_key(ec.SECP256R1())
    builder = (
        _builder(_common_name(common_name), ca_cert.subject, key, now)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
    )
    alternative = _alternative_names(names)
    if alternative:
        builder = builder.add_extension(x509.SubjectAlternativeName(alternative), critical=False)
    return builder.sign(ca_key, hashes.SHA256()), key


def write_key(key: Key, path: Path) -> Path:
    """``key`` as unencrypted PKCS#8 PEM at ``path``."""
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return path


def write_cert(cert: x509.Certificate, path: Path) -> Path:
    """``cert`` as PEM at ``path``."""
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return path
