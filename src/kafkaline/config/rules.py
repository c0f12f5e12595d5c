"""The rules between settings of a :class:`~kafkaline.config.ProducerConfig`, checked and
resolved when one is made: compression levels, TLS and SASL, the delivery timeout and Java's
idempotence defaults."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from kafkaline.config.settings import invalid_value
from kafkaline.config.values import (
    ACKS_ALL,
    DEFAULT_DELIVERY_TIMEOUT_MS,
    INT32_MAX,
    LEVEL_RANGES,
    MAX_IN_FLIGHT_FOR_IDEMPOTENCE,
    SASL_MECHANISMS,
)
from kafkaline.errors import ConfigError

if TYPE_CHECKING:
    from kafkaline.config.producer_config import ProducerConfig

__all__ = [
    "check_security",
    "checked_compression_level",
    "resolve_delivery_timeout",
    "resolve_idempotence",
]

# Messages keep the logger of the module this came from.
_log = logging.getLogger("kafkaline.config")


def checked_compression_level(config: ProducerConfig) -> int | None:
    """``compression_level`` checked against ``compression_type``'s range (gzip's -1 is None)."""
    level = config.compression_level
    if level is None:
        return None
    codec = config.compression_type
    if codec not in LEVEL_RANGES:
        raise invalid_value(
            "compression_level", level, f"compression_type={codec!r} has no levels; use None"
        )
    if codec == "gzip" and level == -1:  # Java's spelling of "gzip's default level"
        return None
    low, high = LEVEL_RANGES[codec]
    if not low <= level <= high:
        raise invalid_value(
            "compression_level", level, f"{codec} levels are {low} to {high} (or None)"
        )
    return level


def check_security(config: ProducerConfig) -> None:
    """The TLS and SASL settings agree with ``security_protocol`` and with each other."""
    protocol = config.security_protocol
    _check_tls(config, uses_tls=protocol in ("SSL", "SASL_SSL"))
    _check_sasl(config, uses_sasl=protocol in ("SASL_PLAINTEXT", "SASL_SSL"))


def _check_tls(config: ProducerConfig, *, uses_tls: bool) -> None:
    protocol = config.security_protocol
    ssl_set = [
        name
        for name in ("ssl_context", "ssl_cafile", "ssl_certfile", "ssl_keyfile", "ssl_password")
        if getattr(config, name) is not None
    ]
    if not config.ssl_check_hostname:
        ssl_set.append("ssl_check_hostname")
    if ssl_set and not uses_tls:
        raise ConfigError(
            f"{', '.join(ssl_set)} set, but security_protocol={protocol!r} does not use "
            "TLS: use SSL or SASL_SSL (or remove the ssl_* settings)"
        )
    if config.ssl_context is not None:
        mixed = [name for name in ssl_set if name != "ssl_context"]
        if mixed:
            raise ConfigError(
                f"ssl_context is given together with {', '.join(mixed)}: configure the "
                "context itself (load_verify_locations, load_cert_chain, check_hostname) "
                "or use the ssl_* settings without a context"
            )
    if (config.ssl_keyfile is not None or config.ssl_password is not None) and (
        config.ssl_certfile is None
    ):
        raise ConfigError(
            "ssl_keyfile and ssl_password belong to a client certificate: set ssl_certfile"
        )


def _check_sasl(config: ProducerConfig, *, uses_sasl: bool) -> None:
    protocol = config.security_protocol
    sasl_set = [
        name
        for name in (
            "sasl_mechanism",
            "sasl_plain_username",
            "sasl_plain_password",
            "sasl_oauth_token_provider",
        )
        if getattr(config, name) is not None
    ]
    if not uses_sasl:
        if sasl_set:
            raise ConfigError(
                f"{', '.join(sasl_set)} set, but security_protocol={protocol!r} does not "
                "use SASL: use SASL_PLAINTEXT or SASL_SSL (or remove the sasl_* settings)"
            )
        return
    mechanism = config.sasl_mechanism
    if mechanism is None:
        raise ConfigError(
            f"security_protocol={protocol!r} needs sasl_mechanism: one of "
            f"{', '.join(SASL_MECHANISMS)}"
        )
    if mechanism == "OAUTHBEARER":
        if config.sasl_oauth_token_provider is None:
            raise ConfigError(
                "sasl_mechanism='OAUTHBEARER' needs sasl_oauth_token_provider (a callable "
                "returning the token)"
            )
        wrong: list[str] = [
            name for name in ("sasl_plain_username", "sasl_plain_password") if name in sasl_set
        ]
    else:
        missing = [
            name
            for name in ("sasl_plain_username", "sasl_plain_password")
            if getattr(config, name) is None
        ]
        if missing:
            raise ConfigError(f"sasl_mechanism={mechanism!r} needs {' and '.join(missing)}")
        wrong = ["sasl_oauth_token_provider"] if "sasl_oauth_token_provider" in sasl_set else []
    if wrong:
        raise ConfigError(
            f"{', '.join(wrong)} set, but sasl_mechanism={mechanism!r} does not use it"
        )


def resolve_delivery_timeout(config: ProducerConfig) -> int:
    """``delivery_timeout_ms`` or its default, checked against linger + request timeout."""
    # Java (KafkaProducer.configureDeliveryTimeout): an explicit value below
    # linger + request timeout is an error; the default is raised to that sum.
    floor = min(config.linger_ms + config.request_timeout_ms, INT32_MAX)
    if config.delivery_timeout_ms is None:
        return max(DEFAULT_DELIVERY_TIMEOUT_MS, floor)
    if config.delivery_timeout_ms < floor:
        raise invalid_value(
            "delivery_timeout_ms",
            config.delivery_timeout_ms,
            f"must be >= linger_ms + request_timeout_ms = {config.linger_ms} + "
            f"{config.request_timeout_ms} = {floor}",
        )
    return config.delivery_timeout_ms


def resolve_idempotence(config: ProducerConfig) -> bool:
    """Whether the producer is idempotent, by Java's rules; conflicts raise ConfigError."""
    # Java 4.x (ProducerConfig.postProcessAndValidateIdempotenceConfigs): idempotence is on
    # by default; acks != all or retries == 0 turn a *defaulted* idempotence off and make an
    # *explicit* one an error. More than 5 in flight is an error whenever idempotence is
    # on (Java 4.0 made this an error; 3.x turned idempotence off). Unlike Java, we do not
    # raise for max_in_flight when acks/retries have already turned a defaulted idempotence
    # off: there is no idempotent producer left for the limit to protect.
    requested = config.enable_idempotence
    conflicts: list[str] = []
    if requested is False:
        idempotent = False
    else:
        if config.acks != ACKS_ALL:
            conflicts.append(f"acks={config.acks} (needs 'all')")
        if config.retries == 0:
            conflicts.append("retries=0 (needs > 0)")
        if conflicts and requested:
            raise ConfigError(
                f"enable_idempotence=True conflicts with {' and '.join(conflicts)}; "
                "change them or set enable_idempotence=False"
            )
        if conflicts:
            _log.info("idempotence disabled because of %s", " and ".join(conflicts))
        idempotent = not conflicts
    inflight = config.max_in_flight_requests_per_connection
    if idempotent and inflight > MAX_IN_FLIGHT_FOR_IDEMPOTENCE:
        raise invalid_value(
            "max_in_flight_requests_per_connection",
            inflight,
            f"must be <= {MAX_IN_FLIGHT_FOR_IDEMPOTENCE} with idempotence (the broker "
            "keeps only 5 batches per producer); set enable_idempotence=False to allow more",
        )
    if config.transactional_id is not None and not idempotent:
        why = (
            "enable_idempotence=False"
            if requested is False
            else f"idempotence is off because of {' and '.join(conflicts)}"
        )
        raise ConfigError(
            f"transactional_id={config.transactional_id!r} requires idempotence, but {why}"
        )
    return idempotent
