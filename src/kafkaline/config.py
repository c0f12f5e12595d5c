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
:func:`config_reference_markdown` renders it for the producer guide (docs/producer.md).

Security settings (TLS and SASL) follow kafka-python's names (``security_protocol``,
``ssl_cafile``, ``sasl_mechanism``, ...). Passwords and tokens are held as :class:`Secret`, whose
``repr()`` and ``str()`` never show the value, so a logged or printed configuration leaks
nothing. Java ``ssl.*``/``sasl.*`` keys kafkaline does not implement (JKS key stores, login
classes, ...) are refused by name rather than ignored, so a plaintext connection is never made
by mistake.
"""

from __future__ import annotations

import logging
import math
import operator
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Final, Literal, NamedTuple, Protocol

from kafkaline.errors import ConfigError

if TYPE_CHECKING:
    import ssl

    from kafkaline.producer.interceptors import ProducerInterceptor
    from kafkaline.producer.partitioner import Partitioner
    from kafkaline.producer.serializers import SerializerLike

__all__ = [
    "ACKS_ALL",
    "COMPRESSION_TYPES",
    "METADATA_RECOVERY_STRATEGIES",
    "SASL_MECHANISMS",
    "SECURITY_PROTOCOLS",
    "SETTINGS",
    "ExponentialBackoff",
    "ProducerConfig",
    "Secret",
    "Setting",
    "TokenProvider",
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

SecurityProtocolName = Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"]
#: How connections to brokers are made: TCP or TLS, with or without SASL authentication.
SECURITY_PROTOCOLS: Final[tuple[str, ...]] = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SaslMechanismName = Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"]
#: The SASL mechanisms kafkaline implements (kafkaline.net.sasl).
SASL_MECHANISMS: Final[tuple[str, ...]] = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")

_DEFAULT_DELIVERY_TIMEOUT_MS: Final = 120_000
_DEFAULT_RECONNECT_BACKOFF_MS: Final = 50
_DEFAULT_RECONNECT_BACKOFF_MAX_MS: Final = 1_000


# --------------------------------------------------------------------------- backoff policy


class UniformRandom(Protocol):
    """A source of uniform random floats; ``random.Random`` is one."""

    def uniform(self, a: float, b: float, /) -> float: ...


class TokenProvider(Protocol):
    """An OAUTHBEARER token source (``sasl_oauth_token_provider``): ``token()`` returns the
    current token (e.g. a JWT). A plain callable returning the token works too."""

    def token(self) -> str: ...


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


# --------------------------------------------------------------------------- secrets


class Secret:
    """A password or token that never shows itself: ``repr()`` and ``str()`` are masked, so a
    configuration printed, logged or put into an error message leaks nothing. The value is
    read with :meth:`reveal`, only where it is sent to a broker or used to open a key file.

    >>> password = Secret("hunter2")
    >>> password, str(password), f"{password}"
    (Secret('******'), '******', '******')
    >>> password.reveal()
    'hunter2'
    """

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        if not isinstance(value, str):
            # Never echo the value: a wrongly typed secret is still a secret.
            raise TypeError(f"a Secret holds a str, not a {type(value).__name__}")
        self._value = value

    def reveal(self) -> str:
        """The secret value itself."""
        return self._value

    def __repr__(self) -> str:
        return "Secret('******')"

    def __str__(self) -> str:
        return "******"

    def __format__(self, format_spec: str) -> str:
        return "******"

    def __eq__(self, other: object) -> bool:
        # Constant-time, so equality tests cannot be used to guess a secret byte by byte.
        if not isinstance(other, Secret):
            return NotImplemented
        import hmac  # here, not at import: it loads OpenSSL's hashes

        return hmac.compare_digest(self._value.encode(), other._value.encode())

    def __hash__(self) -> int:
        return hash((Secret, self._value))

    def __reduce__(self) -> tuple[type[Secret], tuple[str]]:
        # Pickling (e.g. Spark shipping a configuration to its executors) keeps the value.
        return (Secret, (self._value,))


def reveal(secret: Secret | str | None) -> str | None:
    """The value of a secret setting (None stays None)."""
    if isinstance(secret, Secret):
        return secret.reveal()
    return secret


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


def _request_timeout(key: str, value: object) -> int:
    number = _check_int(key, value, 0, INT32_MAX)
    if number == 0:
        # Every request would time out at once, and every send fail far from the cause.
        raise _invalid(key, value, "every request would time out at once; must be >= 1")
    return number


def _connections_max_idle(key: str, value: object) -> int:
    number = _check_int(key, value, -1, INT64_MAX)
    if number == 0:
        raise _invalid(
            key,
            value,
            "every connection would close as soon as it is idle, before its first request; "
            "use -1 to keep idle connections open, or a time >= 1",
        )
    return number


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


#: What the client does when no broker it knows is reachable (KIP-899): "rebootstrap" goes
#: back to the bootstrap servers, "none" keeps trying the known brokers.
METADATA_RECOVERY_STRATEGIES: Final[tuple[str, ...]] = ("none", "rebootstrap")


def _metadata_recovery_strategy(key: str, value: object) -> str:
    if isinstance(value, str) and value in METADATA_RECOVERY_STRATEGIES:
        return value
    raise _invalid(key, value, f"must be one of {', '.join(METADATA_RECOVERY_STRATEGIES)}")


#: How send_batch() and send_arrow() encode their records (``Producer``'s bulk_encoder):
#: "records" one by one into the batch (the compiled core's loop, or the Python builder),
#: "columnar" send_arrow()'s columns by numpy, "auto" columnar where numpy and pyarrow 16+
#: are installed.
BULK_ENCODERS: Final[tuple[str, ...]] = ("auto", "records", "columnar")


def _bulk_encoder(key: str, value: object) -> str:
    if isinstance(value, str) and value in BULK_ENCODERS:
        return value
    raise _invalid(key, value, f"must be one of {', '.join(BULK_ENCODERS)}")


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
    # A str has a .partition() method too (str.partition): a name given as a keyword argument
    # must not pass for a Partitioner object. Names are for from_properties().
    if isinstance(value, (str, bytes)):
        raise _invalid(
            key,
            value,
            "must be None or a Partitioner object; a partitioner's name (e.g. "
            "'RoundRobinPartitioner') works only through from_properties()",
        )
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


def _security_protocol(key: str, value: object) -> str:
    if isinstance(value, str) and value.upper() in SECURITY_PROTOCOLS:
        return value.upper()
    raise _invalid(key, value, f"must be one of {', '.join(SECURITY_PROTOCOLS)}")


def _sasl_mechanism(key: str, value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, str) and value.upper() in SASL_MECHANISMS:
        return value.upper()
    if value == "GSSAPI":
        raise _invalid(
            key,
            value,
            f"Kerberos (GSSAPI) is not supported; use one of {', '.join(SASL_MECHANISMS)}",
        )
    raise _invalid(key, value, f"must be one of {', '.join(SASL_MECHANISMS)} (or None)")


def _secret(key: str, value: object) -> Secret | None:
    if value is None or isinstance(value, Secret):
        return value
    if isinstance(value, str):
        return Secret(value)
    # The value is not shown: even a wrongly typed password is a password.
    raise ConfigError(
        f"{key} is invalid: must be a str or a kafkaline.config.Secret, not "
        f"{type(value).__name__} (the value is not shown)"
    )


def _pem_file(key: str, value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str) or not value:
        raise _invalid(key, value, "must be the path of a PEM file, or None")
    if not os.path.isfile(value):
        raise _invalid(key, value, "no such file (give the path of a PEM file)")
    return value


def _ssl_context(key: str, value: object) -> ssl.SSLContext | None:
    if value is None:
        return None
    import ssl  # only a TLS configuration pays for loading it

    if isinstance(value, ssl.SSLContext):
        return value
    raise _invalid(key, value, "must be an ssl.SSLContext or None")


def _token_provider(key: str, value: object) -> object:
    if value is None or callable(value) or callable(getattr(value, "token", None)):
        return value
    raise _invalid(
        key, value, "must be a callable returning a token str, an object with .token(), or None"
    )


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
    "security_protocol",
    "sasl_mechanism",
    "secret",
    "hostname_check",
    "object",
]


class Setting(NamedTuple):
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

#: Every producer setting, in the order of the configuration reference in docs/producer.md.
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
    _row("request_timeout_ms", "request.timeout.ms", "int", _request_timeout, "30000",
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
    _row("metadata_recovery_strategy", "metadata.recovery.strategy", "str",
         _metadata_recovery_strategy, "rebootstrap",
         "When no known broker is reachable: rebootstrap goes back to bootstrap_servers "
         "(KIP-899), none keeps trying the known brokers."),
    _row("metadata_recovery_rebootstrap_trigger_ms",
         "metadata.recovery.rebootstrap.trigger.ms", "int", _I64, "300000",
         "With rebootstrap: also go back to bootstrap_servers when metadata refreshes have "
         "failed for this long (KIP-1102)."),
    _row("connections_max_idle_ms", "connections.max.idle.ms", "int", _connections_max_idle,
         "540000", "Close connections idle this long; -1 never closes them (0 is refused)."),
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
    _row("bulk_encoder", "bulk.encoder", "str", _bulk_encoder, "auto",
         "How send_arrow() encodes: records (one by one, as send_batch() over lists), columnar "
         "(numpy over whole columns) or auto (columnar where numpy and pyarrow 16+ are "
         "installed)."),
    _row("enable_idempotence", "enable.idempotence", "optional_bool", _optional_bool,
         "True (off if acks/retries conflict)",
         "Exactly one copy per record per partition; needs acks=all, retries > 0 and at most "
         "5 in flight."),
    _row("transactional_id", "transactional.id", "optional_str", _optional_nonempty_str,
         "None", "Enables transactions under this id; needs idempotence."),
    _row("transaction_timeout_ms", "transaction.timeout.ms", "int", _int_in(1, INT32_MAX),
         "60000", "How long the coordinator lets a transaction stay open before aborting it."),
    _row("security_protocol", "security.protocol", "security_protocol", _security_protocol,
         "PLAINTEXT", "How to reach brokers: PLAINTEXT, SSL (TLS), SASL_PLAINTEXT or SASL_SSL."),
    _row("ssl_context", "(none: an SSLContext object)", "object", _ssl_context, "None",
         "A ready ssl.SSLContext, used as it is (its own verification settings); not with "
         "the ssl_*file settings."),
    _row("ssl_cafile", "ssl.ca.location", "optional_str", _pem_file, "None (system CAs)",
         "PEM file of the CA certificates that sign the brokers' certificates (property name "
         "as librdkafka's; Java's JKS trust stores are refused)."),
    _row("ssl_certfile", "ssl.certificate.location", "optional_str", _pem_file, "None",
         "PEM file of the client's certificate chain, for brokers that require one "
         "(librdkafka's property name)."),
    _row("ssl_keyfile", "ssl.key.location", "optional_str", _pem_file,
         "None (in ssl_certfile)",
         "PEM file of the client certificate's private key (librdkafka's property name)."),
    _row("ssl_password", "ssl.key.password", "secret", _secret, "None",
         "Password of the client's private key (a Secret: never shown)."),
    _row("ssl_check_hostname", "ssl.endpoint.identification.algorithm", "hostname_check",
         _bool, "True (https)",
         "Check that the broker's certificate names the host connected to; turning it off "
         "logs a warning (Java: '' turns it off)."),
    _row("sasl_mechanism", "sasl.mechanism", "sasl_mechanism", _sasl_mechanism, "None",
         "PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER; required with SASL_*."),
    _row("sasl_plain_username", "sasl.username", "optional_str", _optional_nonempty_str,
         "None",
         "User name for PLAIN and SCRAM (librdkafka's property name; Java's sasl.jaas.config "
         "is read too)."),
    _row("sasl_plain_password", "sasl.password", "secret", _secret, "None",
         "Password for PLAIN and SCRAM (a Secret: never shown; also read from "
         "sasl.jaas.config)."),
    _row("sasl_oauth_token_provider", "(none: a provider object)", "object", _token_provider,
         "None",
         "For OAUTHBEARER: a callable returning the token (str), or an object with .token(); "
         "called for each new connection."),
)  # fmt: skip

_BY_NAME: Final[dict[str, Setting]] = {setting.name: setting for setting in SETTINGS}
_BY_JAVA_NAME: Final[dict[str, Setting]] = {
    setting.java_name: setting
    for setting in SETTINGS
    # Names with "<" are patterns; "(none: ...)" marks settings only an object can give.
    if not setting.java_name.startswith("(") and "<" not in setting.java_name
}
_JAVA_LEVEL_KEYS: Final[dict[str, str]] = {
    f"compression.{codec}.level": codec for codec in _LEVEL_RANGES
}

# Java producer keys we know but do not implement. Refusing them by name beats ignoring them:
# silently dropping security.protocol=SSL would connect in plaintext.
_JAVA_KEYS_NOT_SUPPORTED: Final[frozenset[str]] = frozenset(
    {
        "config.providers",
        "metadata.max.idle.ms",
        "security.providers",
        "socket.connection.setup.timeout.max.ms",
        "socket.connection.setup.timeout.ms",
        "transaction.two.phase.commit.enable",
    }
)
# Documented Java client settings with no meaning here (Java's metrics plumbing, its DNS and
# re-bootstrap policies): a Java client.properties is accepted with a warning naming them, as
# the Java client warns about keys it does not use.
JAVA_KEYS_WITHOUT_MEANING: Final[frozenset[str]] = frozenset(
    {
        "auto.include.jmx.reporter",
        "client.dns.lookup",
        "enable.metrics.push",
        "metric.reporters",
        "metrics.num.samples",
        "metrics.recording.level",
        "metrics.sample.window.ms",
    }
)
# librdkafka's names for Java settings: (Java name, factor from librdkafka's unit to Java's).
_LIBRDKAFKA_NAMES: Final[dict[str, tuple[str, int]]] = {
    "message.timeout.ms": ("delivery.timeout.ms", 1),
    "queue.buffering.max.ms": ("linger.ms", 1),
    "queue.buffering.max.kbytes": ("buffer.memory", 1024),
    "message.max.bytes": ("max.request.size", 1),
    "message.send.max.retries": ("retries", 1),
    "compression.codec": ("compression.type", 1),
}
_JAVA_PREFIXES_NOT_SUPPORTED: Final[tuple[str, ...]] = ("ssl.", "sasl.")


# Why some refused ssl./sasl. keys are refused, and what to use instead.
_KEY_STORE_HINT: Final = (
    ": kafkaline reads PEM files, not JKS/PKCS12 key stores; give ssl.ca.location "
    "(ssl_cafile), ssl.certificate.location (ssl_certfile) and ssl.key.location (ssl_keyfile)"
)
_NOT_SUPPORTED_HINTS: Final[dict[str, str]] = {
    "ssl.truststore.location": _KEY_STORE_HINT,
    "ssl.truststore.password": _KEY_STORE_HINT,
    "ssl.truststore.type": _KEY_STORE_HINT,
    "ssl.truststore.certificates": _KEY_STORE_HINT,
    "ssl.keystore.location": _KEY_STORE_HINT,
    "ssl.keystore.password": _KEY_STORE_HINT,
    "ssl.keystore.type": _KEY_STORE_HINT,
    "ssl.keystore.key": _KEY_STORE_HINT,
    "ssl.keystore.certificate.chain": _KEY_STORE_HINT,
    "sasl.login.callback.handler.class": (
        ": give a token provider object as sasl_oauth_token_provider instead"
    ),
}


def _unknown_key_error(key: str, *, java_names_allowed: bool) -> ConfigError:
    if key in _JAVA_KEYS_NOT_SUPPORTED or key.startswith(_JAVA_PREFIXES_NOT_SUPPORTED):
        hint = _NOT_SUPPORTED_HINTS.get(key, " yet")
        return ConfigError(
            f"{key} is a Java producer setting that kafkaline does not support{hint}"
        )
    if not java_names_allowed and key in _BY_JAVA_NAME:
        return ConfigError(
            f"{key!r} is a Java property name: use {_BY_JAVA_NAME[key].name!r} here, or "
            "ProducerConfig.from_properties() for Java names"
        )
    known = (
        [
            *_BY_NAME,
            *_BY_JAVA_NAME,
            *_JAVA_LEVEL_KEYS,
            *_LIBRDKAFKA_NAMES,
            *JAVA_KEYS_WITHOUT_MEANING,
            *_JAVA_KEYS_NOT_SUPPORTED,
        ]
        if java_names_allowed
        else [*_BY_NAME]
    )
    import difflib  # only a mistyped key pays for it

    close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return ConfigError(f"{key!r} is not a producer setting{hint}")


def config_reference_markdown() -> str:
    """The configuration reference as a Markdown table: name, Java name, default, meaning."""
    lines = ["| Name | Java name | Default | Meaning |", "| --- | --- | --- | --- |"]
    for setting in SETTINGS:
        java_name = setting.java_name
        if not java_name.startswith("("):
            java_name = f"`{java_name}`"
        lines.append(f"| `{setting.name}` | {java_name} | {setting.default} | {setting.meaning} |")
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
        self._check_compression_level()
        self._check_security()
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

    def _check_security(self) -> None:
        protocol = self.security_protocol
        uses_tls = protocol in ("SSL", "SASL_SSL")
        uses_sasl = protocol in ("SASL_PLAINTEXT", "SASL_SSL")
        ssl_set = [
            name
            for name in ("ssl_context", "ssl_cafile", "ssl_certfile", "ssl_keyfile", "ssl_password")
            if getattr(self, name) is not None
        ]
        if not self.ssl_check_hostname:
            ssl_set.append("ssl_check_hostname")
        if ssl_set and not uses_tls:
            raise ConfigError(
                f"{', '.join(ssl_set)} set, but security_protocol={protocol!r} does not use "
                "TLS: use SSL or SASL_SSL (or remove the ssl_* settings)"
            )
        if self.ssl_context is not None:
            mixed = [name for name in ssl_set if name != "ssl_context"]
            if mixed:
                raise ConfigError(
                    f"ssl_context is given together with {', '.join(mixed)}: configure the "
                    "context itself (load_verify_locations, load_cert_chain, check_hostname) "
                    "or use the ssl_* settings without a context"
                )
        if (self.ssl_keyfile is not None or self.ssl_password is not None) and (
            self.ssl_certfile is None
        ):
            raise ConfigError(
                "ssl_keyfile and ssl_password belong to a client certificate: set ssl_certfile"
            )
        sasl_set = [
            name
            for name in (
                "sasl_mechanism",
                "sasl_plain_username",
                "sasl_plain_password",
                "sasl_oauth_token_provider",
            )
            if getattr(self, name) is not None
        ]
        if not uses_sasl:
            if sasl_set:
                raise ConfigError(
                    f"{', '.join(sasl_set)} set, but security_protocol={protocol!r} does not "
                    "use SASL: use SASL_PLAINTEXT or SASL_SSL (or remove the sasl_* settings)"
                )
            return
        mechanism = self.sasl_mechanism
        if mechanism is None:
            raise ConfigError(
                f"security_protocol={protocol!r} needs sasl_mechanism: one of "
                f"{', '.join(SASL_MECHANISMS)}"
            )
        if mechanism == "OAUTHBEARER":
            if self.sasl_oauth_token_provider is None:
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
                if getattr(self, name) is None
            ]
            if missing:
                raise ConfigError(f"sasl_mechanism={mechanism!r} needs {' and '.join(missing)}")
            wrong = ["sasl_oauth_token_provider"] if "sasl_oauth_token_provider" in sasl_set else []
        if wrong:
            raise ConfigError(
                f"{', '.join(wrong)} set, but sasl_mechanism={mechanism!r} does not use it"
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
            if key in JAVA_KEYS_WITHOUT_MEANING:
                continue  # warned about below, all in one line
            if key in _JAVA_LEVEL_KEYS:
                levels[_JAVA_LEVEL_KEYS[key]] = _parse_property(key, "optional_int", raw)
                continue
            if key == _JAAS_KEY:
                for name, value in _parse_jaas_config(raw).items():
                    if name in given_as:
                        raise ConfigError(
                            f"{name} is given twice, as {given_as[name]!r} and {key!r}"
                        )
                    given_as[name] = key
                    values[name] = _BY_NAME[name].validate(key, value)
                continue
            java_key, factor = _LIBRDKAFKA_NAMES.get(key, (key, 1))
            setting = _BY_JAVA_NAME.get(java_key) or _BY_NAME.get(key)
            if setting is None:
                raise _unknown_key_error(key, java_names_allowed=True)
            if setting.name in given_as:
                raise ConfigError(
                    f"{setting.name} is given twice, as {given_as[setting.name]!r} and {key!r}"
                )
            given_as[setting.name] = key
            value = _parse_property(key, setting.kind, raw)
            if factor != 1 and isinstance(value, int) and not isinstance(value, bool):
                value *= factor
            values[setting.name] = setting.validate(key, value)
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
        ignored = ignored_java_properties(properties)
        if ignored:
            _log.warning(
                "ignoring Java client settings that have no meaning in kafkaline: %s",
                ", ".join(ignored),
            )
        return cls(**values)


def ignored_java_properties(properties: Iterable[object]) -> list[str]:
    """The keys among ``properties`` that from_properties() accepts but ignores: documented
    Java client settings with no meaning here (``client.dns.lookup``, ``metric.reporters``...).

    >>> ignored_java_properties(["linger.ms", "client.dns.lookup", "metrics.num.samples"])
    ['client.dns.lookup', 'metrics.num.samples']
    """
    return sorted(
        key for key in properties if isinstance(key, str) and key in JAVA_KEYS_WITHOUT_MEANING
    )


# --------------------------------------------------------------------------- property parsing

_TRUE_FALSE: Final = {"true": True, "false": False}

_JAAS_KEY: Final = "sasl.jaas.config"
# One JAAS entry: `<LoginModule class> <flag> key="value" ...;`. Values are quoted; Java allows
# backslash escapes inside the quotes.
_JAAS_ENTRY = re.compile(r"^\s*(?P<module>[\w.$]+)\s+(?P<flag>\w+)(?P<options>.*?);?\s*$", re.S)
_JAAS_OPTION = re.compile(
    r'\s*(?P<name>[\w.]+)\s*=\s*(?:"(?P<quoted>(?:[^"\\]|\\.)*)"|(?P<bare>[^\s;]+))'
)
_JAAS_MODULES: Final = frozenset(
    {
        "org.apache.kafka.common.security.plain.PlainLoginModule",
        "org.apache.kafka.common.security.scram.ScramLoginModule",
    }
)


def _parse_jaas_config(raw: object) -> dict[str, object]:
    """``sasl.jaas.config`` for PLAIN or SCRAM: the user name and password in it.

    Only the PlainLoginModule/ScramLoginModule options ``username`` and ``password`` are read;
    messages never echo the text, which holds a password.
    """
    if not isinstance(raw, str):
        raise ConfigError(f"{_JAAS_KEY} is invalid: must be a string (the value is not shown)")
    match = _JAAS_ENTRY.match(raw)
    if match is None:
        raise ConfigError(
            f'{_JAAS_KEY} is invalid: expected \'<LoginModule> required username="..." '
            'password="...";\' (the value is not shown)'
        )
    module = match.group("module")
    if module.endswith("OAuthBearerLoginModule"):
        raise ConfigError(
            f"{_JAAS_KEY} with {module} is not supported: give a token provider as "
            "sasl_oauth_token_provider"
        )
    if module not in _JAAS_MODULES:
        raise ConfigError(
            f"{_JAAS_KEY} names {module}; kafkaline supports {' and '.join(sorted(_JAAS_MODULES))}"
        )
    options: dict[str, str] = {}
    rest = match.group("options")
    position = 0
    while rest[position:].strip():
        option = _JAAS_OPTION.match(rest, position)
        if option is None:
            raise ConfigError(
                f'{_JAAS_KEY} is invalid after {module}: options must be name="value" '
                "(the value is not shown)"
            )
        quoted = option.group("quoted")
        value = re.sub(r"\\(.)", r"\1", quoted) if quoted is not None else option.group("bare")
        options[option.group("name")] = value
        position = option.end()
    missing = [name for name in ("username", "password") if name not in options]
    if missing:
        raise ConfigError(f"{_JAAS_KEY} for {module} has no {' and no '.join(missing)}")
    return {"sasl_plain_username": options["username"], "sasl_plain_password": options["password"]}


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
    if kind in ("security_protocol", "sasl_mechanism"):
        return text.upper() if text else None
    if kind == "hostname_check":
        # Java's ssl.endpoint.identification.algorithm: "https" checks, "" does not; our own
        # key (ssl_check_hostname) takes true/false.
        lowered = text.lower()
        if lowered in ("https", "true"):
            return True
        if lowered in ("", "false"):
            return False
        raise _invalid(key, raw, "must be 'https' (check the host name) or '' (do not)")
    if kind == "object":
        raise ConfigError(f"{key} must be given as an object, not a string")
    return raw  # "servers" (the validator splits and trims); "secret" (kept exactly)


def _resolve_name(key: str, raw: str, lookup: Callable[[str], object]) -> object:
    try:
        return lookup(raw.strip())
    except LookupError as error:
        raise _invalid(key, raw, str(error.args[0])) from None
