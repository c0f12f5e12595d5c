""":class:`BufferPool`: bounds the memory of records waiting to be sent by ``buffer_memory``.

Memory is accounted by the bytes batches hold (as librdkafka counts the bytes of queued
messages), not by a whole ``batch_size`` per open batch (as Java does): a batch takes a first
few KiB when it is created, takes more as it fills, and gives all back when it completes. So
many partitions with a record or two each do not use up the pool. When the pool is used up,
send() blocks in :meth:`BufferPool.allocate` until enough is given back or ``max_block_ms``
passes, then raises
:class:`~kafkaline.errors.BufferExhaustedError` naming ``buffer_memory``.

Why it only counts bytes and does not recycle buffers like Java's: making a buffer is a
tiny part of filling the batch it serves, and the record builder produces fresh ``bytes``
anyway, so copying them into a recycled buffer would cost more than it saves (see
docs/performance.md, Notes moved from the code). What the pool must guarantee is the bound.

Fairness is first come, first served, as in Java: each waiting thread has its own condition
in a queue; memory given back wakes the first one only, which takes what it can (so it is
not starved by later small requests) and wakes the next when it is done. A thread that asks
while others wait queues behind them even if its request would fit.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING

from kafkaline.errors import BufferExhaustedError, ProducerClosedError, RecordTooLargeError
from kafkaline.producer.futures import on_io_thread
from kafkaline.record.core import compiled_core

__all__ = ["BufferPool", "PythonPoolState", "new_lock"]


def _lock_factory() -> Callable[[], threading.Lock]:
    core = compiled_core()
    if core is None:
        return threading.Lock
    factory: Callable[[], threading.Lock] = core.QueueLock
    return factory


#: A lock for the pool and the accumulator's locks taken once per batch: threading.Lock's
#: interface, the compiled core's QueueLock when it is in use, whose ``with`` costs less
#: than threading.Lock's on Python 3.11 (see docs/performance.md, newbatch2).
new_lock = _lock_factory()


class PythonPoolState:
    """The pool's state in the pure-Python build: bytes free, closed, its lock and the
    threads waiting. In the compiled build the core's ``PoolState`` holds the same four
    fields, where its new-batch step takes a new batch's first memory without a call (when
    the lock is free and nobody waits, what :meth:`BufferPool.try_allocate` does)."""

    __slots__ = ("_available", "_closed", "_lock", "_waiters")

    _available: int
    _closed: bool
    _lock: threading.Lock
    _waiters: deque[threading.Condition]


_core = compiled_core()
if TYPE_CHECKING:
    _PoolState = PythonPoolState
else:
    _PoolState = PythonPoolState if _core is None else _core.PoolState


class BufferPool(_PoolState):
    """Memory accounting for ``total_memory`` bytes (``buffer_memory``).

    ``poolable_size`` is the usual request (``batch_size``), kept for metrics and messages.
    ``on_wait(ms)`` is called after every wait for memory (successful or not) with the time
    waited, for the ``bufferpool-wait-time`` metrics (with the pool's lock held: keep it
    cheap); :attr:`wait_time_total_ms` sums it too.

    >>> pool = BufferPool(total_memory=1024, poolable_size=256)
    >>> pool.allocate(256, max_time_to_block_ms=0)
    0.0
    >>> pool.available_memory
    768
    >>> pool.deallocate(256)
    >>> pool.available_memory
    1024
    """

    __slots__ = (
        "_clock",
        "_on_wait",
        "_wait_time_total_ms",
        "poolable_size",
        "total_memory",
    )

    def __init__(
        self,
        total_memory: int,
        poolable_size: int,
        *,
        on_wait: Callable[[float], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if total_memory < 1:
            raise ValueError(f"total_memory must be at least 1 byte, got {total_memory}")
        self.total_memory = total_memory
        self.poolable_size = poolable_size
        self._available = total_memory
        self._lock = new_lock()
        self._waiters: deque[threading.Condition] = deque()
        self._closed = False
        self._wait_time_total_ms = 0.0
        self._on_wait = on_wait
        #: Seconds, monotonic: how long a wait lasts (a fake clock in tests).
        self._clock = clock

    # ------------------------------------------------------------------ allocating

    def allocate(self, size: int, max_time_to_block_ms: float) -> float:
        """Take ``size`` bytes, waiting up to ``max_time_to_block_ms`` for them; return how
        many milliseconds it waited (0.0 when there was room), so the caller can advance its
        clock.

        Raises :class:`~kafkaline.errors.RecordTooLargeError` at once if ``size`` exceeds
        ``buffer_memory`` (waiting could never help),
        :class:`~kafkaline.errors.BufferExhaustedError` after waiting in vain, and
        :class:`~kafkaline.errors.ProducerClosedError` if the pool is (or gets) closed.
        """
        if size > self.total_memory:
            raise RecordTooLargeError(
                f"a batch of {size} bytes cannot fit buffer_memory={self.total_memory} bytes, "
                "the memory for all records waiting to be sent; raise buffer_memory"
            )
        with self._lock:
            if self._closed:
                raise ProducerClosedError("the producer was closed while allocating memory")
            if not self._waiters and self._available >= size:
                self._available -= size
                return 0.0
            return self._wait_for(size, max_time_to_block_ms)

    def try_allocate(self, size: int) -> bool:
        """Take ``size`` bytes if they are free now and nobody waits; else take nothing
        and return ``False`` (the caller then calls :meth:`allocate`, with no lock held)."""
        with self._lock:
            if self._closed or self._waiters or self._available < size:
                return False
            self._available -= size
            return True

    def _wait_for(self, size: int, max_time_to_block_ms: float) -> float:
        # Called with the lock held; Condition.wait releases it while waiting.
        if on_io_thread():
            raise BufferExhaustedError(
                f"buffer_memory={self.total_memory} bytes are used up ({self._available} bytes "
                f"free, {size} needed), and send() was called from a callback on the producer's "
                "I/O thread, which frees memory by sending: it cannot wait there (every "
                "delivery would stall for max_block_ms). Send from another thread, or raise "
                "buffer_memory"
            )
        turn = threading.Condition(self._lock)
        self._waiters.append(turn)
        taken = 0
        clock = self._clock
        start = clock()
        deadline = start + max_time_to_block_ms / 1000.0
        try:
            while True:
                if self._waiters[0] is turn:
                    # First in line: take what there is, so later requests cannot starve it.
                    got = min(size - taken, self._available)
                    self._available -= got
                    taken += got
                    if taken == size:
                        taken = 0  # now the caller's
                        break
                remaining = deadline - clock()
                if remaining <= 0:
                    raise BufferExhaustedError(
                        f"failed to allocate {size} bytes of buffer_memory within "
                        f"{max_time_to_block_ms:.0f} ms (max_block_ms; waited "
                        f"{(clock() - start) * 1000.0:.0f} ms): "
                        f"buffer_memory={self.total_memory} bytes are held by records waiting "
                        f"to be sent ({self._available + taken} bytes free, "
                        f"{len(self._waiters) - 1} other sends waiting). Records are sent "
                        "slower than they are produced: raise buffer_memory or max_block_ms, "
                        "or check that the brokers are reachable"
                    )
                turn.wait(remaining)
                if self._closed:
                    raise ProducerClosedError("the producer was closed while allocating memory")
        finally:
            self._available += taken  # given back if the wait failed
            self._waiters.remove(turn)
            if self._available > 0 and self._waiters:
                self._waiters[0].notify()
            waited_ms = (clock() - start) * 1000.0
            self._wait_time_total_ms += waited_ms
            if self._on_wait is not None:
                self._on_wait(waited_ms)
        return waited_ms

    def deallocate(self, size: int) -> None:
        """Give back ``size`` bytes taken by :meth:`allocate`, waking the first waiter."""
        with self._lock:
            self._available += size
            if self._waiters:
                self._waiters[0].notify()

    def close(self) -> None:
        """Refuse further allocations; threads waiting raise ProducerClosedError."""
        with self._lock:
            self._closed = True
            for turn in self._waiters:
                turn.notify()

    # ------------------------------------------------------------------ metrics

    @property
    def available_memory(self) -> int:
        """Bytes free now (``buffer-available-bytes``)."""
        return self._available

    @property
    def queued(self) -> int:
        """Threads waiting for memory (``waiting-threads``). Non-zero means the pool is
        exhausted: the accumulator then sends every batch at once."""
        return len(self._waiters)

    @property
    def wait_time_total_ms(self) -> float:
        """Milliseconds threads spent waiting for memory, summed
        (``bufferpool-wait-time-total``)."""
        return self._wait_time_total_ms

    @property
    def is_closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    def __repr__(self) -> str:
        return (
            f"<BufferPool {self._available}/{self.total_memory} bytes free, "
            f"{len(self._waiters)} waiting>"
        )
