"""The producer's life cycle parts that need none of its state: the gate's states and
errors, what a producer builds for idempotence, starting and stopping the Sender's thread,
and closing the user's objects (see :class:`~kafkaline.producer.producer.Producer`).

Life cycle decisions:

* ``close()`` sends what is buffered and waits; ``close(timeout)`` waits up to ``timeout``
  seconds, then aborts what is left; ``close(0)`` aborts at once: unsent records fail with
  :class:`~kafkaline.errors.ProducerClosedError`. ``close()`` is idempotent; ``send()``
  afterwards raises ProducerClosedError; ``flush()`` afterwards returns at once.
* If the Sender's thread dies, every pending record fails with
  :class:`~kafkaline.errors.SenderFailedError` (its ``__cause__`` is the error), and so do
  later ``send()`` and ``flush()`` calls.
* After ``os.fork()``, a producer that was started in the parent raises
  :class:`~kafkaline.errors.ProducerForkedError` from ``send()``, ``flush()`` and
  ``partitions_for()`` in the child: its thread and connections stay in the parent. (A
  producer that was never started may be used in the child.) ``close()`` in the child only
  marks the child's copy closed. Detected with ``os.register_at_fork``, so the hot path pays
  nothing; each started producer leaves one small weak callback registered.
"""

from __future__ import annotations

import enum
import functools
import logging
import os
import weakref
from collections.abc import Callable, Iterable

from kafkaline.config import ProducerConfig
from kafkaline.errors import (
    AuthenticationError,
    IllegalStateError,
    KafkaError,
    ProducerClosedError,
    ProducerForkedError,
    SenderFailedError,
)
from kafkaline.net.client import NetworkClient
from kafkaline.net.cluster import ClusterMetadata
from kafkaline.producer.accumulator import RecordAccumulator
from kafkaline.producer.interceptors import InterceptorChain
from kafkaline.producer.metrics import SenderCounters
from kafkaline.producer.sender import Sender
from kafkaline.producer.transactions.idempotence import IdempotenceManager
from kafkaline.producer.transactions.manager import TransactionManager

__all__ = [
    "CLOSE_GRACE_S",
    "Gate",
    "close_user_objects",
    "gate_error",
    "nothing",
    "register_fork_handler",
    "start_sender",
    "stop_sender",
    "thread_name",
    "transactions_for",
]

# The producer's logger: these messages are about its close().
_log = logging.getLogger("kafkaline.producer.producer")

#: How long close(timeout) waits for the I/O thread after aborting, past its timeout.
CLOSE_GRACE_S = 0.5


class Gate(enum.Enum):
    """Why send() cannot go straight on (the producer's ``_gate``; None when it can)."""

    NOT_STARTED = "not started"
    CLOSED = "closed"
    FAILED = "failed"
    FORKED = "forked"
    #: The idempotent producer was fenced, or could not get a producer id.
    FATAL = "fatal"


def gate_error(
    gate: Gate,
    *,
    owner_pid: int,
    sender: Sender | None,
    transactions: IdempotenceManager | None,
) -> Exception:
    """The error send() raises while the gate is ``gate``."""
    if gate is Gate.CLOSED:
        return ProducerClosedError("the producer is closed: create a new one to send")
    if gate is Gate.FORKED:
        return ProducerForkedError(
            f"this producer was started in process {owner_pid} and is used in process "
            f"{os.getpid()}, a child made by os.fork(): its I/O thread and connections "
            "exist only in the parent, so records sent here would never leave. Create the "
            "producer in the child process (records buffered in the parent are not sent "
            "by the child)"
        )
    if gate is Gate.FAILED:
        failure = sender.failure if sender is not None else None
        cause = failure.__cause__ if failure is not None else None
        if isinstance(cause, AuthenticationError):
            # A refused TLS handshake or SASL exchange: say that, not "the thread failed".
            refusal = type(cause)(str(cause))
            refusal.__cause__ = cause
            return refusal
        error = SenderFailedError(
            f"the producer's I/O thread failed earlier ({cause!r}); pending records failed "
            "with it. Close this producer and create a new one"
        )
        error.__cause__ = cause
        return error
    if gate is Gate.FATAL:
        fatal = transactions.fatal_error if transactions is not None else None
        if fatal is not None:
            again = type(fatal)(str(fatal))
            again.__cause__ = fatal
            return again
    return IllegalStateError(f"the producer is {gate.value}")  # pragma: no cover


def transactions_for(
    config: ProducerConfig, on_fatal_error: Callable[[KafkaError], None]
) -> IdempotenceManager | None:
    """The producer's idempotence state: a TransactionManager with a transactional_id, an
    IdempotenceManager with idempotence alone, None without."""
    if config.transactional_id is not None:
        return TransactionManager(
            config.transactional_id,
            config.transaction_timeout_ms,
            retry_backoff=config.retry_backoff,
            on_fatal_error=on_fatal_error,
        )
    if config.idempotent:
        return IdempotenceManager(retry_backoff=config.retry_backoff, on_fatal_error=on_fatal_error)
    return None


def start_sender(
    client: NetworkClient,
    accumulator: RecordAccumulator,
    config: ProducerConfig,
    counters: SenderCounters,
    *,
    on_metadata_update: Callable[[ClusterMetadata], None],
    on_failure: Callable[[SenderFailedError], None],
    transactions: IdempotenceManager | None,
) -> Sender:
    """The producer's Sender, its thread started."""
    sender = Sender(
        client,
        accumulator,
        acks=config.acks,
        request_timeout_ms=config.request_timeout_ms,
        max_request_size=config.max_request_size,
        retries=config.retries,
        guarantee_message_order=config.max_in_flight_requests_per_connection == 1,
        counters=counters,
        name=thread_name(config.client_id),
        on_metadata_update=on_metadata_update,
        on_failure=on_failure,
        transaction_manager=transactions,
    )
    sender.start()
    return sender


def stop_sender(sender: Sender, timeout: float | None) -> None:
    """Stop the Sender's thread as close(timeout) promises: drain and wait, abort what is
    left after ``timeout``, and give up on the thread ``CLOSE_GRACE_S`` later."""
    if sender.is_sender_thread():
        _log.warning(
            "close() was called on the producer's own I/O thread (from a callback): closing "
            "forcefully, without waiting for buffered records"
        )
        sender.force_close()
        return
    if timeout is not None and timeout <= 0:
        sender.force_close()
    else:
        sender.initiate_close()
    if not sender.join(timeout):
        _log.warning(
            "the producer did not finish sending within the %s s close timeout; aborting the "
            "records left",
            timeout,
        )
        sender.force_close()
        # Bounded: a callback that blocks (on the I/O thread) must not hold close() for ever.
        if not sender.join(CLOSE_GRACE_S):
            _log.warning(
                "the producer's I/O thread is still busy %s s after the close timeout (a "
                "callback that does not return?); close() returns without it",
                CLOSE_GRACE_S,
            )


def flush_sender(sender: Sender, accumulator: RecordAccumulator, timeout: float | None) -> None:
    """Producer.flush()'s wait: every batch made sendable now, then every record appended
    before this call completed (``timeout`` in seconds, None for no limit)."""
    if sender.is_sender_thread():
        raise IllegalStateError(
            "flush() was called from a callback on the producer's I/O thread: it would "
            "wait for itself"
        )
    accumulator.begin_flush()
    sender.wakeup()
    accumulator.await_flush_completion(None if timeout is None else timeout * 1000.0)


def close_user_objects(
    interceptors: InterceptorChain | None, named_objects: Iterable[tuple[str, object]]
) -> None:
    """Close the interceptors and each of ``named_objects`` that has a ``close()``; one that
    raises is logged, and the others are still closed."""
    if interceptors is not None:
        interceptors.close()
    for name, obj in named_objects:
        close = getattr(obj, "close", None)
        if close is None:
            continue
        try:
            close()
        except Exception:
            _log.exception("the %s's close() raised; the producer closed anyway", name)


def thread_name(client_id: str) -> str:
    """The name of a producer's I/O thread (tests find leaked threads by it)."""
    return f"kafkaline-producer-network-thread | {client_id or 'producer'}"


def nothing() -> None:
    """The wakeup before the Sender exists."""


def register_fork_handler(on_fork_in_child: Callable[[], None]) -> None:
    """Call the bound method ``on_fork_in_child`` in a child made by os.fork(), as long as
    its object lives (only a weak reference is registered)."""
    if hasattr(os, "register_at_fork"):
        method = weakref.WeakMethod(on_fork_in_child)
        os.register_at_fork(after_in_child=functools.partial(_call_if_alive, method))


def _call_if_alive(method: weakref.WeakMethod[Callable[[], None]]) -> None:
    function = method()
    if function is not None:
        function()
