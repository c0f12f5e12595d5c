"""The plain values of the producer configuration: limits, allowed names, the backoff policy
(:class:`ExponentialBackoff`) and :class:`Secret`, the holder of passwords and tokens."""

from __future__ import annotations

import math
import operator
from dataclasses import field
from typing import Final, Literal, Protocol

from kafkaline.config.frozen_settings import frozen_settings
from kafkaline.errors import ConfigError

__all__ = [
    "ACKS_ALL",
    "COMPRESSION_TYPES",
    "SASL_MECHANISMS",
    "SECURITY_PROTOCOLS",
    "ExponentialBackoff",
    "Secret",
    "TokenProvider",
    "UniformRandom",
    "as_index",
    "check_int",
    "invalid_value",
    "reveal",
]

INT32_MAX: Final = 2**31 - 1
INT64_MAX: Final = 2**63 - 1

#: ``acks=all``: the leader waits for the full set of in-sync replicas.
ACKS_ALL: Final = -1

CompressionTypeName = Literal["none", "gzip", "snappy", "lz4", "zstd"]
COMPRESSION_TYPES: Final[tuple[str, ...]] = ("none", "gzip", "snappy", "lz4", "zstd")

# Levels per codec, as Java's CompressionType defines them (compression.<codec>.level).
# gzip's -1 is Java's "codec default" (Deflater.DEFAULT_COMPRESSION); we store it as None.
LEVEL_RANGES: Final[dict[str, tuple[int, int]]] = {
    "gzip": (1, 9),
    "lz4": (1, 17),
    "zstd": (-131072, 22),
}

# The broker keeps the last 5 batches per producer for duplicate detection
# (ProducerStateEntry.NUM_BATCHES_TO_RETAIN), so idempotence allows at most 5 in flight.
MAX_IN_FLIGHT_FOR_IDEMPOTENCE: Final = 5

SecurityProtocolName = Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"]
#: How connections to brokers are made: TCP or TLS, with or without SASL authentication.
SECURITY_PROTOCOLS: Final[tuple[str, ...]] = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SaslMechanismName = Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"]
#: The SASL mechanisms kafkaline implements (kafkaline.net.sasl).
SASL_MECHANISMS: Final[tuple[str, ...]] = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")

DEFAULT_DELIVERY_TIMEOUT_MS: Final = 120_000
DEFAULT_RECONNECT_BACKOFF_MS: Final = 50
DEFAULT_RECONNECT_BACKOFF_MAX_MS: Final = 1_000


def invalid_value(key: str, value: object, allowed: str) -> ConfigError:
    return ConfigError(f"{key}={value!r} is invalid: {allowed}")


def check_int(key: str, value: object, low: int, high: int) -> int:
    # bool is an int subclass but never a valid count; other integer types (numpy's, IntEnum)
    # are accepted through __index__ and stored as plain ints.
    number = None if isinstance(value, bool) else as_index(value)
    if number is None:
        bounds = f">= {low}" if high >= INT64_MAX else f"between {low} and {high}"
        raise invalid_value(key, value, f"must be an integer {bounds}")
    value = number
    if value < low:
        raise invalid_value(key, value, f"must be an integer >= {low}")
    if value > high:
        raise invalid_value(key, value, f"must be an integer <= {high}")
    return value


def as_index(value: object) -> int | None:
    try:
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        return None


# --------------------------------------------------------------------------- backoff policy


class UniformRandom(Protocol):
    """A source of uniform random floats; ``random.Random`` is one."""

    def uniform(self, a: float, b: float, /) -> float: ...


class TokenProvider(Protocol):
    """An OAUTHBEARER token source (``sasl_oauth_token_provider``): ``token()`` returns the
    current token (e.g. a JWT). A plain callable returning the token works too."""

    def token(self) -> str: ...


@frozen_settings(kw_only=False)
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
        check_int("initial_ms", self.initial_ms, 0, INT64_MAX)
        check_int("max_ms", self.max_ms, 0, INT64_MAX)
        check_int("multiplier", self.multiplier, 2, INT32_MAX)
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
