"""The security settings of a :class:`~kafkaline.config.ProducerConfig` made into what the
network client uses: an ``ssl.SSLContext`` and a transport factory (TLS or plain TCP), and the
SASL authenticator factory (see :mod:`kafkaline.net.sasl`).

Verification is on by default: ``ssl.create_default_context`` checks the broker's certificate
against ``ssl_cafile`` (or the system's CAs) and the host name it was reached at. Turning host
name checking off (``ssl_check_hostname=False``), or giving an ``ssl_context`` that verifies
less, is allowed but logged as a warning each time a client is made with it.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from kafkaline.config import ProducerConfig, reveal
from kafkaline.errors import ConfigError
from kafkaline.net.connection import AuthenticatorFactory
from kafkaline.net.transport import (
    SocketOptions,
    TransportFactory,
    tcp_transport_factory,
    tls_transport_factory,
)

if TYPE_CHECKING:
    import ssl

_log = logging.getLogger(__name__)

_TLS_PROTOCOLS = frozenset({"SSL", "SASL_SSL"})
_SASL_PROTOCOLS = frozenset({"SASL_PLAINTEXT", "SASL_SSL"})


def ssl_context_from_config(config: ProducerConfig) -> ssl.SSLContext | None:
    """The TLS context for ``config``; None when its ``security_protocol`` has no TLS.

    Raises ConfigError (naming the file, never the password) when the CA file or the client
    certificate and key cannot be loaded.
    """
    if config.security_protocol not in _TLS_PROTOCOLS:
        return None
    import ssl  # here: a plaintext producer never loads it

    given = config.ssl_context
    if given is not None:
        if given.verify_mode == ssl.CERT_NONE:
            _log.warning(
                "the ssl_context given does not verify broker certificates (CERT_NONE): "
                "anyone between the client and the brokers can read and change the traffic"
            )
        elif not given.check_hostname:
            _log.warning(
                "the ssl_context given does not check host names: any certificate signed by "
                "a trusted CA is accepted for any broker"
            )
        return given
    try:
        context = ssl.create_default_context(cafile=config.ssl_cafile)
    except (ssl.SSLError, OSError) as error:
        raise ConfigError(
            f"ssl_cafile={config.ssl_cafile!r} could not be loaded as PEM CA certificates: {error}"
        ) from error
    if config.ssl_certfile is not None:
        try:
            context.load_cert_chain(
                config.ssl_certfile, config.ssl_keyfile, password=reveal(config.ssl_password)
            )
        except (ssl.SSLError, OSError) as error:
            # OpenSSL's message names the problem (bad decrypt, key mismatch), not the password.
            raise ConfigError(
                f"the client certificate ssl_certfile={config.ssl_certfile!r} with "
                f"ssl_keyfile={config.ssl_keyfile!r} could not be loaded (wrong key password, "
                f"or a key that does not match the certificate?): {error}"
            ) from error
    if not config.ssl_check_hostname:
        context.check_hostname = False
        _log.warning(
            "ssl_check_hostname=False: broker certificates are verified, but not that they "
            "name the broker's host; any certificate from the trusted CAs is accepted"
        )
    return context


def transport_factory_from_config(config: ProducerConfig) -> TransportFactory:
    """TLS transports for SSL and SASL_SSL, plain TCP otherwise, with the socket buffer
    settings of ``config``."""
    options = SocketOptions(
        send_buffer_bytes=config.send_buffer_bytes,
        receive_buffer_bytes=config.receive_buffer_bytes,
    )
    context = ssl_context_from_config(config)
    if context is None:
        return tcp_transport_factory(options)
    return tls_transport_factory(options, context)


def authenticator_factory_from_config(config: ProducerConfig) -> AuthenticatorFactory | None:
    """The SASL authenticator per connection for SASL_PLAINTEXT and SASL_SSL; else None."""
    if config.security_protocol not in _SASL_PROTOCOLS:
        return None
    # Imported here: the SASL mechanisms load hashlib, hmac and secrets.
    from kafkaline.net.sasl import sasl_authenticator_factory

    return sasl_authenticator_factory(config)
