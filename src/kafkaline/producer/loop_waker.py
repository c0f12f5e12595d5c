"""Wakes a task awaiting a record, in its own event loop, from the thread that completes it.

A :class:`LoopWaker` is one of a :class:`~kafkaline.producer.futures.ProduceRequestResult`'s
waiters, beside the plain locks that blocking waits use: the result calls ``release()`` on
every waiter once the batch is done, and this one hands the wake-up to the loop through
``call_soon_threadsafe`` (the completing thread is the Sender's, never the loop's).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import asyncio

__all__ = ["LoopWaker"]

_log = logging.getLogger(__name__)


def _set_waiter_done(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():  # the awaiting task may have been cancelled
        waiter.set_result(None)


class LoopWaker:
    """Releasing it wakes the task awaiting ``waiter`` in ``loop``."""

    __slots__ = ("_loop", "_waiter")

    def __init__(self, loop: asyncio.AbstractEventLoop, waiter: asyncio.Future[None]) -> None:
        self._loop = loop
        self._waiter = waiter

    def release(self) -> None:
        try:
            self._loop.call_soon_threadsafe(_set_waiter_done, self._waiter)
        except RuntimeError:
            # The loop was closed while the record was in flight: nobody awaits.
            _log.debug("event loop closed before a record it awaited completed")
