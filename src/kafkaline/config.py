"""Producer configuration: one frozen, typed value, validated when it is made.

:class:`ProducerConfig` holds every producer setting as a typed field. Building one validates
every field and the rules between fields, so an invalid configuration cannot exist; a bad value
raises :class:`~kafkaline.errors.ConfigError` naming the key, the value and what is allowed::

    >>> ProducerConfig(bootstrap_servers="localhost:9092", linger_ms=-1)
    Traceback (most recent call last):
    ...
    kafkaline.errors.ConfigError: linger_ms=-1 is invalid: must be an integer >= 0

Three ways in:

* ``ProducerConfig(bootstrap_servers=..., linger_ms=...)``: typed keyword arguments.
* :meth:`ProducerConfig.from_kwargs`: the same, but an unknown key is a ConfigError that
  suggests the closest known key (the dataclass constructor would raise a bare TypeError).
* :meth:`ProducerConfig.from_properties`: Java-style properties (``"linger.ms": "5"``). This is
  the one place where property strings become typed values.

Defaults are the Java producer's (Apache Kafka 4.x ``ProducerConfig``), including the rules
that depend on what the user set: idempotence is on by default but silently turned off when
``acks`` or ``retries`` conflict with it (and is an error when explicitly requested), and
``delivery_timeout_ms`` is raised to ``linger_ms + request_timeout_ms`` when left at its
default. Those fields keep the user's intent (``None`` = not set) so that
:meth:`ProducerConfig.with_changes` re-applies the rules; read the resolved values through
:attr:`ProducerConfig.idempotent`, :attr:`ProducerConfig.effective_delivery_timeout_ms` and
:attr:`ProducerConfig.reconnect_backoff`.

:data:`SETTINGS` lists every setting (name, Java name, default, meaning);
:func:`config_reference_markdown` renders it for the README.

Security settings (TLS, SASL) are not here yet. They will be added as further fields with
their rows in :data:`SETTINGS`; the Java ``ssl.*``/``sasl.*``/``security.protocol`` keys are
refused by name meanwhile rather than ignored, so a plaintext connection is never made by
mistake.
"""

from __future__ import annotations

import difflib
import logging
import math
import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol

from kafkaline.errors import ConfigError

if TYPE_CHECKING:
    from kafkaline.producer.interceptors import ProducerInterceptor
    from kafkaline.producer.partitioner import Partitioner
    from kafkaline.producer.serializers import SerializerLike

__all__ = [
    "ACKS_ALL",
    "COMPRESSION_TYPES",
    "SETTINGS",
    "ExponentialBackoff",
    "ProducerConfig",
    "Setting",
    "UniformRandom",
    "config_reference_markdown",
]

_log = logging.getLogger(__name__)

INT32_MAX: Final = 2**31 - 1
INT64_MAX: Final = 2**63 - 1

#: ``acks=all``: the leader waits for the full set of in-sync replicas.
ACKS_ALL: Final = -1

CompressionTypeName = Literal["none", "gzip", "snappy", "lz4", "zstd"]
COMPRESSION_TYPES: Final[tuple[str, ...]] = ("none", "gzip", "snappy", "lz4", "zstd")

# Levels per codec, as Java's CompressionType defines them (compression.<codec>.level).
# gzip's -1 is Java's "codec default" (Deflater.DEFAULT_COMPRESSION); we store it as None.
_LEVEL_RANGES: Final[dict[str, tuple[int, int]]] = {
    "gzip": (1, 9),
    "lz4": (1, 17),
    "zstd": (-131072, 22),
}

# The broker keeps the last 5 batches per producer for duplicate detection
# (ProducerStateEntry.NUM_BATCHES_TO_RETAIN), so idempotence allows at most 5 in flight.
_MAX_IN_FLIGHT_FOR_IDEMPOTENCE: Final = 5

_DEFAULT_DELIVERY_TIMEOUT_MS: Final = 120_000
_DEFAULT_RECONNECT_BACKOFF_MS: Final = 50
_DEFAULT_RECONNECT_BACKOFF_MAX_MS: Final = 1_000


# --------------------------------------------------------------------------- backoff policy


class UniformRandom(Protocol):
    """A source of uniform random floats; ``random.Random`` is one."""

    def uniform(self, a: float, b: float, /) -> float: ...


@dataclass(frozen=True, slots=True)
class ExponentialBackoff:
    """Exponential backoff with jitter, as Java's ``ExponentialBackoff``: a pure policy value.

    ``next_delay(attempt)`` is ``initial_ms * multiplier ** attempt`` times a random factor in
    ``[1 - jitter, 1 + jitter)``, capped at ``max_ms``. When ``max_ms <= initial_ms`` the
    delay is the constant ``max_ms`` (Java's rule: a base above the cap disables the growth).
    The same policy serves retries (``retry_backoff_ms``) and reconnects
    (``reconnect_backoff_ms``)::

        >>> import random
        >>> no_jitter = ExponentialBackoff(initial_ms=100, max_ms=1000, jitter=0.0)
        >>> [no_jitter.next_delay(attempt, random.Random()) for attempt in range(6)]
        [100, 200, 400, 800, 1000, 1000]
        >>> jittered = ExponentialBackoff(initial_ms=100, max_ms=1000)
        >>> 80 <= jittered.next_delay(0, random.Random()) < 120
        True
    """

    initial_ms: int
    max_ms: int
    multiplier: int = 2
    jitter: float = 0.2
    # Largest useful exponent, computed once: beyond it the cap applies anyway.
    _exp_max: float = field(init=False, repr=False, compare=False, default=0.0)

    def __post_init__(self) -> None:
        _check_int("initial_ms", self.initial_ms, 0, INT64_MAX)
        _check_int("max_ms", self.max_ms, 0, INT64_MAX)
        _check_int("multiplier", self.multiplier, 2, INT32_MAX)
        if not isinstance(self.jitter, (int, float)) or not 0.0 <= self.jitter <= 1.0:
            raise ConfigError(
                f"jitter={self.jitter!r} is invalid: must be a number between 0.0 and 1.0"
            )
        initial = min(self.initial_ms, self.max_ms)
        exp_max = (
            math.log(self.max_ms / max(initial, 1)) / math.log(self.multiplier)
            if self.max_ms > initial
            else 0.0
        )
        object.__setattr__(self, "_exp_max", exp_max)

    def next_delay(self, attempt: int, rng: UniformRandom) -> int:
        """The delay in ms before try number ``attempt + 1``; ``attempt`` counts from 0."""
        initial = min(self.initial_ms, self.max_ms)
        if self._exp_max == 0.0:
            return initial
        term = initial * self.multiplier ** min(max(attempt, 0), self._exp_max)
        factor = rng.uniform(1.0 - self.jitter, 1.0 + self.jitter) if self.jitter else 1.0
        return min(int(factor * term), self.max_ms)


# --------------------------------------------------------------------------- field validators
#
# A validator takes the key as the user wrote it (so messages name *their* key: "linger.ms" from
# properties, "linger_ms" from keyword arguments) and the value, and returns the normalised
# value or raises ConfigError.

_Validator = Callable[[str, object], object]


def _invalid(key: str, value: object, allowed: str) -> ConfigError:
    return ConfigError(f"{key}={value!r} is invalid: {allowed}")


def _check_int(key: str, value: object, low: int, high: int) -> int:
    # bool is an int subclass but never a valid count; other integer types (numpy's, IntEnum)
    # are accepted through __index__ and stored as plain ints.
    number = None if isinstance(value, bool) else _as_index(value)
    if number is None:
        bounds = f">= {low}" if high >= INT64_MAX else f"between {low} and {high}"
        raise _invalid(key, value, f"must be an integer {bounds}")
    value = number
    if value < low:
        raise _invalid(key, value, f"must be an integer >= {low}")
    if value > high:
        raise _invalid(key, value, f"must be an integer <= {high}")
    return value


def _as_index(value: object) -> int | None:
    try:
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        return None


def _int_in(low: int, high: int) -> _Validator:
    return lambda key, value: _check_int(key, value, low, high)


def _bool(key: str, value: object) -> bool:
    if type(value) is not bool:
        raise _invalid(key, value, "must be True or False")
    return value


def _optional_bool(key: str, value: object) -> bool | None:
    return None if value is None else _bool(key, value)


def _str(key: str, value: object) -> str:
    if not isinstance(value, str):
        raise _invalid(key, value, "must be a string")
    return value


def _optional_nonempty_str(key: str, value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise _invalid(key, value, "must be a non-empty string or None")
    return value


def _acks(key: str, value: object) -> int:
    if value == "all":
        return ACKS_ALL
    number = None if isinstance(value, bool) else _as_index(value)
    if number in (0, 1, -1):
        return number
    raise _invalid(key, value, "must be one of 0, 1, -1 or 'all'")


def _compression_type(key: str, value: object) -> str:
    if value is None:  # kafka-python spells "no compression" as None
        return "none"
    if isinstance(value, str) and value in COMPRESSION_TYPES:
        return value
    raise _invalid(key, value, f"must be one of {', '.join(COMPRESSION_TYPES)}")


def _optional_int(key: str, value: object) -> int | None:
    if value is None:
        return None
    number = None if isinstance(value, bool) else _as_index(value)
    if number is None:
        raise _invalid(key, value, "must be an integer or None")
    return number


def _optional_int_in(low: int, high: int) -> _Validator:
    return lambda key, value: None if value is None else _check_int(key, value, low, high)


def _split_host_port(key: str, value: object, server: str) -> tuple[str, int]:
    host, sep, port_text = server.rpartition(":")
    if host.startswith("[") and host.endswith("]"):  # IPv6 literal: [::1]:9092
        host = host[1:-1]
    if not sep or not host or not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise _invalid(
            key, value, f"{server!r} is not host:port (e.g. 'localhost:9092', '[::1]:9092')"
        )
    return host, int(port_text)


def split_servers(text: str) -> list[str]:
    """Split a ``"host1:port1,host2:port2"`` list, trimming spaces and dropping empty items."""
    return [item.strip() for item in text.split(",") if item.strip()]


def _bootstrap_servers(key: str, value: object) -> tuple[str, ...]:
    if isinstance(value, str):
        servers = split_servers(value)
    elif isinstance(value, Sequence) and all(isinstance(item, str) for item in value):
        servers = [item.strip() for item in value]
    else:
        raise _invalid(key, value, "must be 'host:port,...' or a list of 'host:port' strings")
    if not servers:
        raise _invalid(key, value, "must name at least one host:port")
    for server in servers:
        _split_host_port(key, value, server)
    if len(set(servers)) != len(servers):
        raise _invalid(key, value, "must not list a server twice")
    return tuple(servers)


def _serializer(key: str, value: object) -> object:
    if value is None or callable(getattr(value, "serialize", None)) or callable(value):
        return value
    raise _invalid(
        key, value, "must be None, a Serializer (with .serialize) or a callable value -> bytes"
    )


def _partitioner(key: str, value: object) -> object:
    if value is None or callable(getattr(value, "partition", None)):
        return value
    raise _invalid(key, value, "must be None or a Partitioner (an object with .partition())")


def _interceptors(key: str, value: object) -> tuple[object, ...]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise _invalid(key, value, "must be a list of ProducerInterceptor objects")
    for item in value:
        if not (
            callable(getattr(item, "on_send", None))
            and callable(getattr(item, "on_acknowledgement", None))
        ):
            raise _invalid(
                key,
                value,
                f"{item!r} is not a ProducerInterceptor (needs on_send and on_acknowledgement)",
            )
    return tuple(value)


# --------------------------------------------------------------------------- the settings table

_Kind = Literal[
    "servers",
    "str",
    "optional_str",
    "int",
    "optional_int",
    "bool",
    "optional_bool",
    "acks",
    "compression_type",
    "compression_level",
    "serializer",
    "partitioner",
    "interceptors",
]


@dataclass(frozen=True, slots=True)
class Setting:
    """One row of the configuration reference: how a setting is named, parsed and explained."""

    name: str
    java_name: str
    kind: _Kind
    validate: _Validator
    default: str
    meaning: str


def _row(
    name: str, java_name: str, kind: _Kind, validate: _Validator, default: str, meaning: str
) -> Setting:
    return Setting(name, java_name, kind, validate, default, meaning)


_I32 = _int_in(0, INT32_MAX)
_I64 = _int_in(0, INT64_MAX)

#: Every producer setting, in the order of the README's reference table.
SETTINGS: Final[tuple[Setting, ...]] = (
    _row("bootstrap_servers", "bootstrap.servers", "servers", _bootstrap_servers, "(required)",
         "Brokers to contact first, 'host:port,...' or a list; the rest are discovered."),
    _row("client_id", "client.id", "str", _str, '""',
         "Name sent with every request, for the brokers' logs and quotas."),
    _row("acks", "acks", "acks", _acks, "all (-1)",
         "Acknowledgements a write needs: 0 none, 1 the leader, all (-1) every in-sync "
         "replica."),
    _row("compression_type", "compression.type", "compression_type", _compression_type, "none",
         "Codec for record batches: none, gzip, snappy, lz4 or zstd."),
    _row("compression_level", "compression.<codec>.level", "compression_level", _optional_int,
         "codec default", "Level for gzip (1-9), lz4 (1-17) or zstd (-131072-22)."),
    _row("batch_size", "batch.size", "int", _I32, "16384",
         "Target size in bytes of one partition's batch; 0 disables batching."),
    _row("linger_ms", "linger.ms", "int", _I64, "5",
         "How long a batch waits for more records before it is sendable."),
    _row("buffer_memory", "buffer.memory", "int", _I64, "33554432",
         "Bytes the producer may hold for unsent records; send() blocks when they are used."),
    _row("max_block_ms", "max.block.ms", "int", _I64, "60000",
         "How long send() may block for metadata or buffer memory before it fails."),
    _row("max_request_size", "max.request.size", "int", _I32, "1048576",
         "Largest produce request in bytes, and so the largest uncompressed record."),
    _row("request_timeout_ms", "request.timeout.ms", "int", _I32, "30000",
         "How long to wait for a broker's response before the request is retried or fails."),
    _row("delivery_timeout_ms", "delivery.timeout.ms", "optional_int",
         _optional_int_in(0, INT32_MAX), "120000",
         "Upper bound from send() to success or failure, retries included; must be >= "
         "linger_ms + request_timeout_ms (the default is raised to that sum)."),
    _row("retries", "retries", "int", _I32, "2147483647",
         "Retries of a retriable failure; delivery_timeout_ms is the usual bound."),
    _row("retry_backoff_ms", "retry.backoff.ms", "int", _I64, "100",
         "First wait before retrying a failed request; doubles per attempt (+-20% jitter)."),
    _row("retry_backoff_max_ms", "retry.backoff.max.ms", "int", _I64, "1000",
         "Cap on the retry wait."),
    _row("reconnect_backoff_ms", "reconnect.backoff.ms", "int", _I64, "50",
         "First wait before reconnecting to a broker; doubles per failure (+-20% jitter)."),
    _row("reconnect_backoff_max_ms", "reconnect.backoff.max.ms", "optional_int",
         _optional_int_in(0, INT64_MAX), "1000",
         "Cap on the reconnect wait; if unset while reconnect_backoff_ms is set, the wait "
         "stays at reconnect_backoff_ms (as in Java)."),
    _row("max_in_flight_requests_per_connection", "max.in.flight.requests.per.connection",
         "int", _int_in(1, INT32_MAX), "5",
         "Unacknowledged requests per broker connection; at most 5 with idempotence."),
    _row("metadata_max_age_ms", "metadata.max.age.ms", "int", _I64, "300000",
         "Refresh cluster metadata at least this often."),
    _row("connections_max_idle_ms", "connections.max.idle.ms", "int", _int_in(-1, INT64_MAX),
         "540000", "Close connections idle this long; -1 never closes them."),
    _row("send_buffer_bytes", "send.buffer.bytes", "int", _int_in(-1, INT32_MAX), "131072",
         "Socket send buffer (SO_SNDBUF); -1 keeps the OS default."),
    _row("receive_buffer_bytes", "receive.buffer.bytes", "int", _int_in(-1, INT32_MAX),
         "32768", "Socket receive buffer (SO_RCVBUF); -1 keeps the OS default."),
    _row("key_serializer", "key.serializer", "serializer", _serializer, "None (bytes only)",
         "Turns keys into bytes: a Serializer or a callable; without one keys must be bytes."),
    _row("value_serializer", "value.serializer", "serializer", _serializer,
         "None (bytes only)",
         "Turns values into bytes: a Serializer or a callable; without one values must be "
         "bytes."),
    _row("partitioner", "partitioner.class", "partitioner", _partitioner,
         "None (built-in)",
         "Custom Partitioner; by default keyed records hash with murmur2 and keyless records "
         "use the uniform sticky partitioner (KIP-794)."),
    _row("partitioner_adaptive_partitioning_enable",
         "partitioner.adaptive.partitioning.enable", "bool", _bool, "True",
         "Sticky partitioner favours partitions with shorter queues (faster brokers)."),
    _row("partitioner_availability_timeout_ms", "partitioner.availability.timeout.ms", "int",
         _I64, "0",
         "Sticky partitioner skips partitions whose leader has not taken data for this long; "
         "0 disables (needs adaptive partitioning)."),
    _row("partitioner_ignore_keys", "partitioner.ignore.keys", "bool", _bool, "False",
         "Ignore keys when choosing partitions: keyed records go sticky too."),
    _row("interceptors", "interceptor.classes", "interceptors", _interceptors, "()",
         "ProducerInterceptor objects that see each record before sending and each "
         "acknowledgement."),
    _row("enable_idempotence", "enable.idempotence", "optional_bool", _optional_bool,
         "True (off if acks/retries conflict)",
         "Exactly one copy per record per partition; needs acks=all, retries > 0 and at most "
         "5 in flight."),
    _row("transactional_id", "transactional.id", "optional_str", _optional_nonempty_str,
         "None", "Enables transactions under this id; needs idempotence."),
    _row("transaction_timeout_ms", "transaction.timeout.ms", "int", _int_in(1, INT32_MAX),
         "60000", "How long the coordinator lets a transaction stay open before aborting it."),
)  # fmt: skip

_BY_NAME: Final[dict[str, Setting]] = {setting.name: setting for setting in SETTINGS}
_BY_JAVA_NAME: Final[dict[str, Setting]] = {
    setting.java_name: setting for setting in SETTINGS if "<" not in setting.java_name
}
_JAVA_LEVEL_KEYS: Final[dict[str, str]] = {
    f"compression.{codec}.level": codec for codec in _LEVEL_RANGES
}

# Java producer keys we know but do not implement. Refusing them by name beats ignoring them:
# silently dropping security.protocol=SSL would connect in plaintext.
_JAVA_KEYS_NOT_SUPPORTED: Final[frozenset[str]] = frozenset(
    {
        "client.dns.lookup",
        "config.providers",
        "enable.metrics.push",
        "metadata.max.idle.ms",
        "metadata.recovery.rebootstrap.trigger.ms",
        "metadata.recovery.strategy",
        "metric.reporters",
        "metrics.num.samples",
        "metrics.recording.level",
        "metrics.sample.window.ms",
        "security.protocol",
        "security.providers",
        "socket.connection.setup.timeout.max.ms",
        "socket.connection.setup.timeout.ms",
        "transaction.two.phase.commit.enable",
    }
)
_JAVA_PREFIXES_NOT_SUPPORTED: Final[tuple[str, ...]] = ("ssl.", "sasl.")


def _unknown_key_error(key: str, *, java_names_allowed: bool) -> ConfigError:
    if key in _JAVA_KEYS_NOT_SUPPORTED or key.startswith(_JAVA_PREFIXES_NOT_SUPPORTED):
        return ConfigError(f"{key} is a Java producer setting that kafkaline does not support yet")
    if not java_names_allowed and key in _BY_JAVA_NAME:
        return ConfigError(
            f"{key!r} is a Java property name: use {_BY_JAVA_NAME[key].name!r} here, or "
            "ProducerConfig.from_properties() for Java names"
        )
    known = [*_BY_NAME, *_BY_JAVA_NAME, *_JAVA_LEVEL_KEYS] if java_names_allowed else [*_BY_NAME]
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return ConfigError(f"{key!r} is not a producer setting{hint}")


def config_reference_markdown() -> str:
    """The configuration reference as a Markdown table: name, Java name, default, meaning."""
    lines = ["| Name | Java name | Default | Meaning |", "| --- | --- | --- | --- |"]
    for setting in SETTINGS:
        lines.append(
            f"| `{setting.name}` | `{setting.java_name}` | {setting.default} | {setting.meaning} |"
        )
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- the config value


@dataclass(frozen=True, slots=True, kw_only=True)
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
    reconnect_backoff_ms: int = _DEFAULT_RECONNECT_BACKOFF_MS
    #: None: 1000, or reconnect_backoff_ms when that was changed (Java's rule).
    reconnect_backoff_max_ms: int | None = None
    max_in_flight_requests_per_connection: int = 5
    metadata_max_age_ms: int = 5 * 60 * 1000
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
    #: None: on, unless acks or retries conflict with it (then off, as in Java).
    enable_idempotence: bool | None = None
    transactional_id: str | None = None
    transaction_timeout_ms: int = 60_000

    # Resolved from the fields above once, in __post_init__.
    _idempotent: bool = field(init=False, repr=False, compare=False, default=False)
    _delivery_timeout_ms: int = field(init=False, repr=False, compare=False, default=0)

    def __post_init__(self) -> None:
        for setting in SETTINGS:
            value = setting.validate(setting.name, getattr(self, setting.name))
            object.__setattr__(self, setting.name, value)
        self._check_compression_level()
        object.__setattr__(self, "_delivery_timeout_ms", self._resolve_delivery_timeout())
        object.__setattr__(self, "_idempotent", self._resolve_idempotence())
        if self.retry_backoff_ms > self.retry_backoff_max_ms:
            _log.warning(
                "retry_backoff_ms=%d is above retry_backoff_max_ms=%d: retries wait a constant "
                "%d ms",
                self.retry_backoff_ms,
                self.retry_backoff_max_ms,
                self.retry_backoff_max_ms,
            )

    # ----------------------------------------------------------------- cross-field rules

    def _check_compression_level(self) -> None:
        level = self.compression_level
        if level is None:
            return
        codec = self.compression_type
        if codec not in _LEVEL_RANGES:
            raise _invalid(
                "compression_level", level, f"compression_type={codec!r} has no levels; use None"
            )
        if codec == "gzip" and level == -1:  # Java's spelling of "gzip's default level"
            object.__setattr__(self, "compression_level", None)
            return
        low, high = _LEVEL_RANGES[codec]
        if not low <= level <= high:
            raise _invalid(
                "compression_level", level, f"{codec} levels are {low} to {high} (or None)"
            )

    def _resolve_delivery_timeout(self) -> int:
        # Java (KafkaProducer.configureDeliveryTimeout): an explicit value below
        # linger + request timeout is an error; the default is raised to that sum.
        floor = min(self.linger_ms + self.request_timeout_ms, INT32_MAX)
        if self.delivery_timeout_ms is None:
            return max(_DEFAULT_DELIVERY_TIMEOUT_MS, floor)
        if self.delivery_timeout_ms < floor:
            raise _invalid(
                "delivery_timeout_ms",
                self.delivery_timeout_ms,
                f"must be >= linger_ms + request_timeout_ms = {self.linger_ms} + "
                f"{self.request_timeout_ms} = {floor}",
            )
        return self.delivery_timeout_ms

    def _resolve_idempotence(self) -> bool:
        # Java 4.x (ProducerConfig.postProcessAndValidateIdempotenceConfigs): idempotence is on
        # by default; acks != all or retries == 0 turn a *defaulted* idempotence off and make an
        # *explicit* one an error. More than 5 in flight is an error whenever idempotence is
        # on (Java 4.0 made this an error; 3.x turned idempotence off). Unlike Java, we do not
        # raise for max_in_flight when acks/retries have already turned a defaulted idempotence
        # off: there is no idempotent producer left for the limit to protect.
        requested = self.enable_idempotence
        conflicts: list[str] = []
        if requested is False:
            idempotent = False
        else:
            if self.acks != ACKS_ALL:
                conflicts.append(f"acks={self.acks} (needs 'all')")
            if self.retries == 0:
                conflicts.append("retries=0 (needs > 0)")
            if conflicts and requested:
                raise ConfigError(
                    f"enable_idempotence=True conflicts with {' and '.join(conflicts)}; "
                    "change them or set enable_idempotence=False"
                )
            if conflicts:
                _log.info("idempotence disabled because of %s", " and ".join(conflicts))
            idempotent = not conflicts
        inflight = self.max_in_flight_requests_per_connection
        if idempotent and inflight > _MAX_IN_FLIGHT_FOR_IDEMPOTENCE:
            raise _invalid(
                "max_in_flight_requests_per_connection",
                inflight,
                f"must be <= {_MAX_IN_FLIGHT_FOR_IDEMPOTENCE} with idempotence (the broker "
                "keeps only 5 batches per producer); set enable_idempotence=False to allow more",
            )
        if self.transactional_id is not None and not idempotent:
            why = (
                "enable_idempotence=False"
                if requested is False
                else f"idempotence is off because of {' and '.join(conflicts)}"
            )
            raise ConfigError(
                f"transactional_id={self.transactional_id!r} requires idempotence, but {why}"
            )
        return idempotent

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
        if self.reconnect_backoff_ms != _DEFAULT_RECONNECT_BACKOFF_MS:
            return self.reconnect_backoff_ms
        return _DEFAULT_RECONNECT_BACKOFF_MAX_MS

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
            _split_host_port("bootstrap_servers", server, server)
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
            if key not in _BY_NAME:
                raise _unknown_key_error(key, java_names_allowed=False)
        if "bootstrap_servers" not in kwargs:
            raise ConfigError("bootstrap_servers is required: e.g. 'localhost:9092'")
        return cls(**kwargs)  # type: ignore[arg-type]

    def with_changes(self, **changes: object) -> ProducerConfig:
        """A copy with some settings changed, validated like :meth:`from_kwargs`."""
        for key in changes:
            if key not in _BY_NAME:
                raise _unknown_key_error(key, java_names_allowed=False)
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
        values: dict[str, Any] = {}
        given_as: dict[str, str] = {}
        levels: dict[str, object] = {}
        for key, raw in properties.items():
            if not isinstance(key, str):
                raise ConfigError(f"{key!r} is not a producer setting: keys are strings")
            if key in _JAVA_LEVEL_KEYS:
                levels[_JAVA_LEVEL_KEYS[key]] = _parse_property(key, "optional_int", raw)
                continue
            setting = _BY_JAVA_NAME.get(key) or _BY_NAME.get(key)
            if setting is None:
                raise _unknown_key_error(key, java_names_allowed=True)
            if setting.name in given_as:
                raise ConfigError(
                    f"{setting.name} is given twice, as {given_as[setting.name]!r} and {key!r}"
                )
            given_as[setting.name] = key
            values[setting.name] = setting.validate(key, _parse_property(key, setting.kind, raw))
        codec = values.get("compression_type", "none")
        for level_codec, level in levels.items():
            # Java validates every codec's level but only uses the one of compression.type.
            key = f"compression.{level_codec}.level"
            if level is not None and not (level_codec == "gzip" and level == -1):
                low, high = _LEVEL_RANGES[level_codec]
                _check_int(key, level, low, high)
            if level_codec == codec and "compression_level" not in values:
                values["compression_level"] = level
        if "bootstrap_servers" not in values:
            raise ConfigError("bootstrap.servers is required: e.g. 'localhost:9092'")
        return cls(**values)


# --------------------------------------------------------------------------- property parsing

_TRUE_FALSE: Final = {"true": True, "false": False}


def _parse_property(key: str, kind: _Kind, raw: object) -> object:
    """Turn one property value into its typed form; typed values pass through unchanged."""
    if not isinstance(raw, str):
        return raw
    text = raw.strip()
    if kind in ("int", "optional_int", "compression_level"):
        if kind == "optional_int" and text == "":
            return None
        try:
            return int(text)
        except ValueError:
            raise _invalid(key, raw, "must be an integer") from None
    if kind in ("bool", "optional_bool"):
        if text.lower() in _TRUE_FALSE:
            return _TRUE_FALSE[text.lower()]
        raise _invalid(key, raw, "must be true or false")
    if kind == "acks":
        if text.lower() == "all":
            return "all"
        if text in ("0", "1", "-1"):
            return int(text)
        raise _invalid(key, raw, "must be one of 0, 1, -1 or all")
    if kind == "compression_type":
        return text.lower()
    if kind == "optional_str":
        return text or None
    if kind == "serializer":
        from kafkaline.producer.serializers import serializer_for_name

        return _resolve_name(key, raw, serializer_for_name)
    if kind == "partitioner":
        from kafkaline.producer.partitioner import partitioner_for_name

        return _resolve_name(key, raw, partitioner_for_name)
    if kind == "interceptors":
        if text:
            raise _invalid(key, raw, "interceptors must be given as objects, not class names")
        return ()
    if kind == "str":
        return text  # Java trims string settings
    return raw  # "servers": the validator splits and trims


def _resolve_name(key: str, raw: str, lookup: Callable[[str], object]) -> object:
    try:
        return lookup(raw.strip())
    except LookupError as error:
        raise _invalid(key, raw, str(error.args[0])) from None
