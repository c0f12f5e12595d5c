"""The local errors of the producer, its transactions, the security layer and the Spark sink."""

from __future__ import annotations

from typing import Any

from kafkaline.errors.base import IllegalStateError, KafkaError, KafkaTimeoutError
from kafkaline.errors.broker_codes_to_59 import InvalidTimestampError, InvalidTopicError

# --------------------------------------------------------------------------- producer errors
# Appended by the record accumulator: the local errors a send can end with.


class ProducerClosedError(IllegalStateError):
    """The producer was closed: a send waiting for buffer memory, or a record still buffered
    when the producer was closed forcefully, fails with this error."""


class BufferExhaustedError(KafkaTimeoutError):
    """``buffer_memory`` stayed used up by records waiting to be sent for longer than
    ``max_block_ms``: send() gave up waiting for room (Java's ``BufferExhaustedException``).

    Raised by ``send_batch()`` or ``send_arrow()`` part way, it says which of the call's
    records were queued before it: :attr:`queued` maps their input indices to their futures
    (they are sent as usual); the others were not queued. Empty when raised by ``send()``."""

    def __init__(self, *args: object) -> None:
        super().__init__(*args)
        #: Input index -> future of the records a bulk call queued before running out.
        self.queued: dict[int, Any] = {}


class DeliveryTimeoutError(KafkaTimeoutError):
    """A record was not acknowledged within ``delivery_timeout_ms`` of being added to its
    batch; the message says how old the batch was and the limit."""


class DeliveryOutcomeUnknownError(KafkaError):
    """An idempotent producer's record whose delivery cannot be proven either way: a try got
    no definite answer (a lost connection, a request timeout, an error the broker may give
    after writing), and the producer then had to take a new producer id or epoch. Sending it
    again under the new one could write it twice, so it fails instead: it may or may not be
    in the log. ``__cause__`` is the last uncertain answer (Java fails such batches too,
    before it bumps the epoch)."""


# --------------------------------------------------------------------------- producer errors
# Appended by the Producer and its Sender: argument checks in send(), and the producer's life
# (its I/O thread failing, a fork).


class InvalidTopicNameError(InvalidTopicError, ValueError):
    """A topic name Kafka would refuse (empty, longer than 249 characters, ``.`` or ``..``,
    or a character outside ``[a-zA-Z0-9._-]``), caught by send() before asking any broker,
    as Java's ``Topic.validate`` does. Also an :class:`InvalidTopicError` and a ValueError."""


class InvalidRecordTimestampError(InvalidTimestampError, ValueError):
    """A record timestamp that is not integer milliseconds in ``[0, 2**63 - 1]``, caught by
    send(). Also an :class:`InvalidTimestampError` and a ValueError."""


class SenderFailedError(KafkaError, RuntimeError):
    """The producer's I/O thread (the Sender) stopped on an unexpected error.

    Every record it had not completed fails with this error, and the producer refuses further
    sends and flushes with it; ``__cause__`` is the original exception (also logged, with its
    traceback, by the ``kafkaline.producer.sender`` logger). Close the producer and make a new
    one."""


class ProducerForkedError(IllegalStateError):
    """A producer started in one process was used in a child made by ``os.fork()``.

    The child has a copy of the producer but not its I/O thread, so records sent there would
    never leave. Create the producer in the child instead."""


# --------------------------------------------------------------------------- transactions
# Appended by the transactional producer (kafkaline.producer.transactions).


class TransactionStateError(IllegalStateError):
    """A transactional call made in the wrong order (e.g. ``send()`` before
    ``begin_transaction()``, ``commit_transaction()`` after an abortable error), or on a
    producer without ``transactional_id``. The message names the producer's transaction
    state; :attr:`state` holds it (``"UNINITIALIZED"``, ``"READY"``, ...)."""

    def __init__(self, message: str, state: str | None = None) -> None:
        super().__init__(message)
        self.state = state


class TransactionAbortedError(KafkaError):
    """A record that was still buffered when its transaction was aborted: it was never
    sent."""


# --------------------------------------------------------------------------- security errors
# Appended by the security layer (kafkaline.net.security for TLS, kafkaline.net.sasl for SASL).
# Java's AuthenticationException family: trying again with the same settings fails again, so
# the client stops connecting and reports it instead of retrying until a timeout.


class AuthenticationError(KafkaError, PermissionError):
    """The client and a broker could not establish who the other is: TLS verification or SASL
    authentication failed. Not retriable (the same settings fail the same way); the network
    client stops with it. Messages never contain passwords, tokens or key passwords."""


class SslAuthenticationError(AuthenticationError):
    """The TLS handshake with a broker failed: its certificate is not signed by a trusted CA,
    does not name the host it was reached at (with ``ssl_check_hostname``), has expired, or
    the broker refused the client's certificate or TLS version. The message names the broker
    and the reason OpenSSL gave."""


class SaslAuthenticationError(AuthenticationError):
    """The SASL exchange with a broker failed: it does not offer the mechanism, it rejected
    the credentials (``__cause__`` is the broker's error, e.g.
    :class:`SaslAuthenticationFailedError`, when it sent an error code), or its SCRAM server
    signature did not verify."""


# --------------------------------------------------------------------------- Spark sink errors
# Appended by the Spark integration (kafkaline.spark).


class SinkSchemaError(KafkaError, ValueError):
    """The kafkaline Spark sink cannot write the DataFrame as it is: a missing ``value``
    column or topic, a column of a type the sink cannot write (the message names the column
    and its type), a null ``topic`` in a row with no ``topic`` option, or overwrite mode.
    Schema mistakes are raised on the driver, before any task runs."""
