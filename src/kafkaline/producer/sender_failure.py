"""What the :class:`~kafkaline.producer.sender.Sender` does when its loop raises: log the
error, tell the producer, fail every pending record and close the network client."""

from __future__ import annotations

import logging
from collections.abc import Callable

from kafkaline.errors import AuthenticationError, SenderFailedError
from kafkaline.producer.accumulator import RecordAccumulator
from kafkaline.producer.sender_client import SenderClient

__all__ = ["failure_of", "stop_after_failure"]

# The Sender's logger: these messages are about its thread.
_log = logging.getLogger("kafkaline.producer.sender")


def failure_of(name: str, error: BaseException) -> SenderFailedError:
    """Log ``error``, which stopped the I/O thread ``name``; return the error that pending
    records and later sends fail with."""
    if isinstance(error, AuthenticationError):
        # Expected, not a bug: one line (no traceback) and the records fail with the
        # refusal itself, which names what the broker or the TLS handshake refused.
        _log.error(
            "the producer's I/O thread %r stopped: %s; every pending record fails with it",
            name,
            error,
        )
    else:
        _log.error(
            "the producer's I/O thread %r failed; every pending record fails with this error",
            name,
            exc_info=error,
        )
    failure = SenderFailedError(
        f"the producer's I/O thread stopped on an unexpected error: {error!r}; "
        "close this producer and create a new one"
    )
    failure.__cause__ = error
    return failure


def stop_after_failure(
    failure: SenderFailedError,
    on_failure: Callable[[SenderFailedError], None] | None,
    accumulator: RecordAccumulator,
    client: SenderClient,
) -> None:
    """Call ``on_failure``, fail every incomplete batch and close ``client``."""
    error = failure.__cause__
    # Each step on its own: a failure in one must not skip the next. Failures are logged.
    if on_failure is not None:
        try:
            on_failure(failure)
        except Exception:
            _log.exception("the producer's failure handler raised")
    try:
        accumulator.abort_incomplete_batches(
            error if isinstance(error, AuthenticationError) else failure
        )
    except Exception:
        _log.exception("aborting the batches after the I/O thread failed raised too")
    try:
        client.close()
    except Exception:
        _log.exception("closing the network client after the I/O thread failed raised too")
