"""The settings table (:data:`SETTINGS`): every producer setting's name, Java name, kind,
validator, default and meaning, with the validators themselves and the Java names kafkaline
knows. docs/producer.md's configuration reference is rendered from it
(:func:`config_reference_markdown`; a test keeps the two alike)."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Final, Literal, NamedTuple

from kafkaline.config.values import (
    ACKS_ALL,
    COMPRESSION_TYPES,
    INT32_MAX,
    INT64_MAX,
    LEVEL_RANGES,
    SASL_MECHANISMS,
    SECURITY_PROTOCOLS,
    Secret,
    as_index,
    check_int,
    invalid_value,
)
from kafkaline.errors import ConfigError

if TYPE_CHECKING:
    import ssl

__all__ = [
    "BULK_ENCODERS",
    "METADATA_RECOVERY_STRATEGIES",
    "SETTINGS",
    "Setting",
    "check_int",
    "config_reference_markdown",
    "invalid_value",
    "split_servers",
]

# --------------------------------------------------------------------------- field validators
#
# A validator takes the key as the user wrote it (so messages name *their* key: "linger.ms" from
# properties, "linger_ms" from keyword arguments) and the value, and returns the normalised
# value or raises ConfigError.

Validator = Callable[[str, object], object]


def _int_in(low: int, high: int) -> Validator:
    return lambda key, value: check_int(key, value, low, high)


def _request_timeout(key: str, value: object) -> int:
    number = check_int(key, value, 0, INT32_MAX)
    if number == 0:
        # Every request would time out at once, and every send fail far from the cause.
        raise invalid_value(key, value, "every request would time out at once; must be >= 1")
    return number


def _connections_max_idle(key: str, value: object) -> int:
    number = check_int(key, value, -1, INT64_MAX)
    if number == 0:
        raise invalid_value(
            key,
            value,
            "every connection would close as soon as it is idle, before its first request; "
            "use -1 to keep idle connections open, or a time >= 1",
        )
    return number


def _bool(key: str, value: object) -> bool:
    if type(value) is not bool:
        raise invalid_value(key, value, "must be True or False")
    return value


def _optional_bool(key: str, value: object) -> bool | None:
    return None if value is None else _bool(key, value)


def _str(key: str, value: object) -> str:
    if not isinstance(value, str):
        raise invalid_value(key, value, "must be a string")
    return value


def _optional_nonempty_str(key: str, value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise invalid_value(key, value, "must be a non-empty string or None")
    return value


def _acks(key: str, value: object) -> int:
    if value == "all":
        return ACKS_ALL
    number = None if isinstance(value, bool) else as_index(value)
    if number in (0, 1, -1):
        return number
    raise invalid_value(key, value, "must be one of 0, 1, -1 or 'all'")


def _compression_type(key: str, value: object) -> str:
    if value is None:  # kafka-python spells "no compression" as None
        return "none"
    if isinstance(value, str) and value in COMPRESSION_TYPES:
        return value
    raise invalid_value(key, value, f"must be one of {', '.join(COMPRESSION_TYPES)}")


def _optional_int(key: str, value: object) -> int | None:
    if value is None:
        return None
    number = None if isinstance(value, bool) else as_index(value)
    if number is None:
        raise invalid_value(key, value, "must be an integer or None")
    return number


def _optional_int_in(low: int, high: int) -> Validator:
    return lambda key, value: None if value is None else check_int(key, value, low, high)


def split_host_port(key: str, value: object, server: str) -> tuple[str, int]:
    host, sep, port_text = server.rpartition(":")
    if host.startswith("[") and host.endswith("]"):  # IPv6 literal: [::1]:9092
        host = host[1:-1]
    if not sep or not host or not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise invalid_value(
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
    raise invalid_value(key, value, f"must be one of {', '.join(METADATA_RECOVERY_STRATEGIES)}")


#: How send_batch() and send_arrow() encode their records (``Producer``'s bulk_encoder):
#: "records" one by one into the batch (the compiled core's loop, or the Python builder),
#: "columnar" send_arrow()'s columns by numpy (not with a custom partitioner or interceptors:
#: ProducerConfig refuses the pair), "auto" columnar where numpy and pyarrow 16+ are installed
#: and neither is set.
BULK_ENCODERS: Final[tuple[str, ...]] = ("auto", "records", "columnar")


def _bulk_encoder(key: str, value: object) -> str:
    if isinstance(value, str) and value in BULK_ENCODERS:
        return value
    raise invalid_value(key, value, f"must be one of {', '.join(BULK_ENCODERS)}")


def _bootstrap_servers(key: str, value: object) -> tuple[str, ...]:
    if isinstance(value, str):
        servers = split_servers(value)
    elif isinstance(value, Sequence) and all(isinstance(item, str) for item in value):
        servers = [item.strip() for item in value]
    else:
        raise invalid_value(key, value, "must be 'host:port,...' or a list of 'host:port' strings")
    if not servers:
        raise invalid_value(key, value, "must name at least one host:port")
    for server in servers:
        split_host_port(key, value, server)
    if len(set(servers)) != len(servers):
        raise invalid_value(key, value, "must not list a server twice")
    return tuple(servers)


def _serializer(key: str, value: object) -> object:
    if value is None or callable(getattr(value, "serialize", None)) or callable(value):
        return value
    raise invalid_value(
        key, value, "must be None, a Serializer (with .serialize) or a callable value -> bytes"
    )


def _partitioner(key: str, value: object) -> object:
    # A str has a .partition() method too (str.partition): a name given as a keyword argument
    # must not pass for a Partitioner object. Names are for from_properties().
    if isinstance(value, (str, bytes)):
        raise invalid_value(
            key,
            value,
            "must be None or a Partitioner object; a partitioner's name (e.g. "
            "'RoundRobinPartitioner') works only through from_properties()",
        )
    if value is None or callable(getattr(value, "partition", None)):
        return value
    raise invalid_value(key, value, "must be None or a Partitioner (an object with .partition())")


def _interceptors(key: str, value: object) -> tuple[object, ...]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise invalid_value(key, value, "must be a list of ProducerInterceptor objects")
    for item in value:
        if not (
            callable(getattr(item, "on_send", None))
            and callable(getattr(item, "on_acknowledgement", None))
        ):
            raise invalid_value(
                key,
                value,
                f"{item!r} is not a ProducerInterceptor (needs on_send and on_acknowledgement)",
            )
    return tuple(value)


def _security_protocol(key: str, value: object) -> str:
    if isinstance(value, str) and value.upper() in SECURITY_PROTOCOLS:
        return value.upper()
    raise invalid_value(key, value, f"must be one of {', '.join(SECURITY_PROTOCOLS)}")


def _sasl_mechanism(key: str, value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, str) and value.upper() in SASL_MECHANISMS:
        return value.upper()
    if value == "GSSAPI":
        raise invalid_value(
            key,
            value,
            f"Kerberos (GSSAPI) is not supported; use one of {', '.join(SASL_MECHANISMS)}",
        )
    raise invalid_value(key, value, f"must be one of {', '.join(SASL_MECHANISMS)} (or None)")


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
        raise invalid_value(key, value, "must be the path of a PEM file, or None")
    if not os.path.isfile(value):
        raise invalid_value(key, value, "no such file (give the path of a PEM file)")
    return value


def _ssl_context(key: str, value: object) -> ssl.SSLContext | None:
    if value is None:
        return None
    import ssl  # only a TLS configuration pays for loading it

    if isinstance(value, ssl.SSLContext):
        return value
    raise invalid_value(key, value, "must be an ssl.SSLContext or None")


def _token_provider(key: str, value: object) -> object:
    if value is None or callable(value) or callable(getattr(value, "token", None)):
        return value
    raise invalid_value(
        key, value, "must be a callable returning a token str, an object with .token(), or None"
    )


# --------------------------------------------------------------------------- the settings table

Kind = Literal[
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
    kind: Kind
    validate: Validator
    default: str
    meaning: str


def _row(
    name: str, java_name: str, kind: Kind, validate: Validator, default: str, meaning: str
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
         "(numpy over whole columns; a ConfigError with a custom partitioner or interceptors) "
         "or auto (columnar where numpy and pyarrow 16+ are installed and neither is set)."),
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

BY_NAME: Final[dict[str, Setting]] = {setting.name: setting for setting in SETTINGS}
BY_JAVA_NAME: Final[dict[str, Setting]] = {
    setting.java_name: setting
    for setting in SETTINGS
    # Names with "<" are patterns; "(none: ...)" marks settings only an object can give.
    if not setting.java_name.startswith("(") and "<" not in setting.java_name
}
JAVA_LEVEL_KEYS: Final[dict[str, str]] = {
    f"compression.{codec}.level": codec for codec in LEVEL_RANGES
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
LIBRDKAFKA_NAMES: Final[dict[str, tuple[str, int]]] = {
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


def unknown_key_error(key: str, *, java_names_allowed: bool) -> ConfigError:
    if key in _JAVA_KEYS_NOT_SUPPORTED or key.startswith(_JAVA_PREFIXES_NOT_SUPPORTED):
        hint = _NOT_SUPPORTED_HINTS.get(key, " yet")
        return ConfigError(
            f"{key} is a Java producer setting that kafkaline does not support{hint}"
        )
    if not java_names_allowed and key in BY_JAVA_NAME:
        return ConfigError(
            f"{key!r} is a Java property name: use {BY_JAVA_NAME[key].name!r} here, or "
            "ProducerConfig.from_properties() for Java names"
        )
    known = (
        [
            *BY_NAME,
            *BY_JAVA_NAME,
            *JAVA_LEVEL_KEYS,
            *LIBRDKAFKA_NAMES,
            *JAVA_KEYS_WITHOUT_MEANING,
            *_JAVA_KEYS_NOT_SUPPORTED,
        ]
        if java_names_allowed
        else [*BY_NAME]
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
