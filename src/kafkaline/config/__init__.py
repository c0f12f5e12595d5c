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

The package's modules: :mod:`~kafkaline.config.values` (limits, names, the backoff policy,
:class:`Secret`), :mod:`~kafkaline.config.settings` (the table and the validators),
:mod:`~kafkaline.config.rules` (rules between settings),
:mod:`~kafkaline.config.properties` (Java-style properties) and
:mod:`~kafkaline.config.producer_config` (:class:`ProducerConfig`).
"""

from kafkaline.config.producer_config import ProducerConfig
from kafkaline.config.properties import ignored_java_properties
from kafkaline.config.settings import (
    BULK_ENCODERS,
    JAVA_KEYS_WITHOUT_MEANING,
    METADATA_RECOVERY_STRATEGIES,
    SETTINGS,
    Setting,
    config_reference_markdown,
    split_servers,
)
from kafkaline.config.values import (
    ACKS_ALL,
    COMPRESSION_TYPES,
    INT32_MAX,
    INT64_MAX,
    SASL_MECHANISMS,
    SECURITY_PROTOCOLS,
    CompressionTypeName,
    ExponentialBackoff,
    SaslMechanismName,
    Secret,
    SecurityProtocolName,
    TokenProvider,
    UniformRandom,
    reveal,
)

__all__ = [
    "ACKS_ALL",
    "BULK_ENCODERS",
    "COMPRESSION_TYPES",
    "INT32_MAX",
    "INT64_MAX",
    "JAVA_KEYS_WITHOUT_MEANING",
    "METADATA_RECOVERY_STRATEGIES",
    "SASL_MECHANISMS",
    "SECURITY_PROTOCOLS",
    "SETTINGS",
    "CompressionTypeName",
    "ExponentialBackoff",
    "ProducerConfig",
    "SaslMechanismName",
    "Secret",
    "SecurityProtocolName",
    "Setting",
    "TokenProvider",
    "UniformRandom",
    "config_reference_markdown",
    "ignored_java_properties",
    "reveal",
    "split_servers",
]
