"""The producer's configuration value, :class:`ProducerConfig` (see :mod:`kafkaline.config`)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import field, replace
from typing import TYPE_CHECKING, Literal

from kafkaline.config.frozen_settings import frozen_settings
from kafkaline.config.properties import settings_from_properties
from kafkaline.config.rules import (
    check_security,
    checked_compression_level,
    resolve_delivery_timeout,
    resolve_idempotence,
)
from kafkaline.config.settings import BY_NAME, SETTINGS, split_host_port, unknown_key_error
from kafkaline.config.values import (
    ACKS_ALL,
    DEFAULT_RECONNECT_BACKOFF_MAX_MS,
    DEFAULT_RECONNECT_BACKOFF_MS,
    INT32_MAX,
    CompressionTypeName,
    ExponentialBackoff,
    SaslMechanismName,
    Secret,
    SecurityProtocolName,
    TokenProvider,
)
from kafkaline.errors import ConfigError

if TYPE_CHECKING:
    import ssl

    from kafkaline.producer.interceptors import ProducerInterceptor
    from kafkaline.producer.partitioner import Partitioner
    from kafkaline.producer.serializers import SerializerLike

__all__ = ["ProducerConfig"]

# Messages keep the logger of the module this came from.
_log = logging.getLogger("kafkaline.config")


def check_bulk_encoder(config: ProducerConfig) -> None:
    """``bulk_encoder="columnar"`` asked for explicitly cannot be had with a custom partitioner
    (asked record by record) or interceptors (they see every record through ``send()``): a
    ConfigError names the conflict rather than send_arrow() quietly taking another encoder."""
    if config.bulk_encoder != "columnar":
        return
    conflicts = []
    if config.partitioner is not None:
        conflicts.append("a custom partitioner (partitioner=...)")
    if config.interceptors:
        conflicts.append("interceptors (interceptors=...)")
    if conflicts:
        raise ConfigError(
            f"bulk_encoder='columnar' cannot be used with {' and '.join(conflicts)}: the "
            "columnar encoder partitions whole columns without calling them; set "
            "bulk_encoder='auto' (send_arrow() then takes the records encoder, or one send() "
            "per record with interceptors) or 'records'"
        )


# --------------------------------------------------------------------------- the config value


@frozen_settings
class ProducerConfig:
    """Every producer setting, typed and validated; see :data:`SETTINGS` for their meaning.

    >>> config = ProducerConfig(bootstrap_servers="a:9092,b:9092", acks="all", linger_ms=10)
    >>> config.bootstrap_servers, config.acks, config.idempotent
    (('a:9092', 'b:9092'), -1, True)
    >>> ProducerConfig(bootstrap_servers="a:9092", acks=1).idempotent  # defaulted: turned off
    False
    """

    bootstrap_servers: tuple[str, ...]
    client_id: str = ""
    acks: int = ACKS_ALL
    compression_type: CompressionTypeName = "none"
    #: None: the codec's default level.
    compression_level: int | None = None
    batch_size: int = 16_384
    linger_ms: int = 5
    buffer_memory: int = 32 * 1024 * 1024
    max_block_ms: int = 60_000
    max_request_size: int = 1024 * 1024
    request_timeout_ms: int = 30_000
    #: None: 120000, raised to linger_ms + request_timeout_ms when that is larger.
    delivery_timeout_ms: int | None = None
    retries: int = INT32_MAX
    retry_backoff_ms: int = 100
    retry_backoff_max_ms: int = 1_000
    reconnect_backoff_ms: int = DEFAULT_RECONNECT_BACKOFF_MS
    #: None: 1000, or reconnect_backoff_ms when that was changed (Java's rule).
    reconnect_backoff_max_ms: int | None = None
    max_in_flight_requests_per_connection: int = 5
    metadata_max_age_ms: int = 5 * 60 * 1000
    metadata_recovery_strategy: Literal["none", "rebootstrap"] = "rebootstrap"
    metadata_recovery_rebootstrap_trigger_ms: int = 5 * 60 * 1000
    connections_max_idle_ms: int = 9 * 60 * 1000
    send_buffer_bytes: int = 128 * 1024
    receive_buffer_bytes: int = 32 * 1024
    key_serializer: SerializerLike | None = None
    value_serializer: SerializerLike | None = None
    partitioner: Partitioner | None = None
    partitioner_adaptive_partitioning_enable: bool = True
    partitioner_availability_timeout_ms: int = 0
    partitioner_ignore_keys: bool = False
    interceptors: tuple[ProducerInterceptor, ...] = ()
    bulk_encoder: Literal["auto", "records", "columnar"] = "auto"
    #: None: on, unless acks or retries conflict with it (then off, as in Java).
    enable_idempotence: bool | None = None
    transactional_id: str | None = None
    transaction_timeout_ms: int = 60_000
    security_protocol: SecurityProtocolName = "PLAINTEXT"
    ssl_context: ssl.SSLContext | None = None
    ssl_cafile: str | None = None
    ssl_certfile: str | None = None
    ssl_keyfile: str | None = None
    #: A str is stored as a :class:`Secret`.
    ssl_password: Secret | str | None = None
    ssl_check_hostname: bool = True
    sasl_mechanism: SaslMechanismName | None = None
    sasl_plain_username: str | None = None
    #: A str is stored as a :class:`Secret`.
    sasl_plain_password: Secret | str | None = None
    #: ``() -> str``, or an object with ``.token() -> str``: the OAUTHBEARER token.
    sasl_oauth_token_provider: Callable[[], str] | TokenProvider | None = None

    # Resolved from the fields above once, in __post_init__.
    _idempotent: bool = field(init=False, repr=False, compare=False, default=False)
    _delivery_timeout_ms: int = field(init=False, repr=False, compare=False, default=0)

    def __post_init__(self) -> None:
        for setting in SETTINGS:
            value = setting.validate(setting.name, getattr(self, setting.name))
            object.__setattr__(self, setting.name, value)
        object.__setattr__(self, "compression_level", checked_compression_level(self))
        check_security(self)
        check_bulk_encoder(self)
        object.__setattr__(self, "_delivery_timeout_ms", resolve_delivery_timeout(self))
        object.__setattr__(self, "_idempotent", resolve_idempotence(self))
        if self.retry_backoff_ms > self.retry_backoff_max_ms:
            _log.warning(
                "retry_backoff_ms=%d is above retry_backoff_max_ms=%d: retries wait a constant "
                "%d ms",
                self.retry_backoff_ms,
                self.retry_backoff_max_ms,
                self.retry_backoff_max_ms,
            )

    # ----------------------------------------------------------------- resolved values

    @property
    def idempotent(self) -> bool:
        """Whether this producer is idempotent, after Java's defaulting rules."""
        return self._idempotent

    @property
    def transactional(self) -> bool:
        """Whether a ``transactional_id`` is set."""
        return self.transactional_id is not None

    @property
    def effective_delivery_timeout_ms(self) -> int:
        """``delivery_timeout_ms``, or its default raised to ``linger_ms + request_timeout_ms``."""
        return self._delivery_timeout_ms

    @property
    def effective_reconnect_backoff_max_ms(self) -> int:
        """``reconnect_backoff_max_ms``, defaulted as Java does.

        Java: if ``reconnect.backoff.ms`` is set but ``reconnect.backoff.max.ms`` is not, the
        reconnect backoff stays constant at ``reconnect.backoff.ms``. We cannot tell "set to
        50" from "left at 50", so a changed ``reconnect_backoff_ms`` counts as set.
        """
        if self.reconnect_backoff_max_ms is not None:
            return self.reconnect_backoff_max_ms
        if self.reconnect_backoff_ms != DEFAULT_RECONNECT_BACKOFF_MS:
            return self.reconnect_backoff_ms
        return DEFAULT_RECONNECT_BACKOFF_MAX_MS

    @property
    def retry_backoff(self) -> ExponentialBackoff:
        """The retry policy: ``retry_backoff_ms`` doubling up to ``retry_backoff_max_ms``."""
        return ExponentialBackoff(self.retry_backoff_ms, self.retry_backoff_max_ms)

    @property
    def reconnect_backoff(self) -> ExponentialBackoff:
        """The reconnect policy: ``reconnect_backoff_ms`` doubling up to its maximum."""
        return ExponentialBackoff(
            self.reconnect_backoff_ms, self.effective_reconnect_backoff_max_ms
        )

    @property
    def bootstrap_addresses(self) -> tuple[tuple[str, int], ...]:
        """``bootstrap_servers`` as ``(host, port)`` pairs (IPv6 brackets removed)."""
        return tuple(
            split_host_port("bootstrap_servers", server, server)
            for server in self.bootstrap_servers
        )

    # ----------------------------------------------------------------- construction

    @classmethod
    def from_kwargs(cls, **kwargs: object) -> ProducerConfig:
        """Build from keyword arguments; an unknown key is a ConfigError suggesting a known one.

        >>> ProducerConfig.from_kwargs(bootstrap_servers="h:1", lingr_ms=5)
        Traceback (most recent call last):
        ...
        kafkaline.errors.ConfigError: 'lingr_ms' is not a producer setting; did you mean \
'linger_ms'?
        """
        for key in kwargs:
            if key not in BY_NAME:
                raise unknown_key_error(key, java_names_allowed=False)
        if "bootstrap_servers" not in kwargs:
            raise ConfigError("bootstrap_servers is required: e.g. 'localhost:9092'")
        return cls(**kwargs)  # type: ignore[arg-type]

    def with_changes(self, **changes: object) -> ProducerConfig:
        """A copy with some settings changed, validated like :meth:`from_kwargs`."""
        for key in changes:
            if key not in BY_NAME:
                raise unknown_key_error(key, java_names_allowed=False)
        return replace(self, **changes)  # type: ignore[arg-type]

    @classmethod
    def from_properties(cls, properties: Mapping[str, object]) -> ProducerConfig:
        """Build from Java-style properties: the one place where property strings become types.

        Keys may be Java names (``"linger.ms"``) or our names (``"linger_ms"``); values may be
        strings as in a ``.properties`` file (``"5"``, ``"true"``, ``"all"``, ``"a:1,b:2"``)
        or already typed. Serializers and partitioners may be objects or the names of
        built-ins (``"str"``, ``"json"``, ``"bytes"``, Java's ``StringSerializer`` and
        ``ByteArraySerializer`` class names, ``RoundRobinPartitioner``).

        >>> config = ProducerConfig.from_properties(
        ...     {"bootstrap.servers": "a:1,b:2", "linger.ms": "20", "acks": "1",
        ...      "enable.idempotence": "false", "compression.type": "zstd",
        ...      "compression.zstd.level": "6"})
        >>> config.bootstrap_servers, config.linger_ms, config.acks, config.compression_level
        (('a:1', 'b:2'), 20, 1, 6)
        """
        return cls(**settings_from_properties(properties))
