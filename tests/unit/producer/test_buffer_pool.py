"""BufferPool: memory bounded by buffer_memory, blocking up to max_block_ms, FIFO waiters."""

from __future__ import annotations

import doctest
import threading
import time
from collections.abc import Callable

import pytest

import kafkaline.producer.buffer_pool as buffer_pool_module
from kafkaline.errors import (
    BufferExhaustedError,
    KafkaTimeoutError,
    ProducerClosedError,
    RecordTooLargeError,
)
from kafkaline.producer.buffer_pool import BufferPool


def test_module_docstring_examples() -> None:
    results = doctest.testmod(buffer_pool_module)
    assert results.attempted > 0 and results.failed == 0


def wait_until(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(0.002)


def in_thread(target: Callable[[], object]) -> tuple[threading.Thread, list[object]]:
    """Run ``target`` in a thread; its result or exception lands in the returned list."""
    outcome: list[object] = []

    def run() -> None:
        try:
            outcome.append(target())
        except Exception as error:
            outcome.append(error)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, outcome


def test_allocations_are_accounted_until_given_back() -> None:
    pool = BufferPool(1000, 100)
    assert pool.allocate(100, 0) == 0.0
    assert pool.allocate(600, 0) == 0.0
    assert pool.available_memory == 300
    pool.deallocate(600)
    pool.deallocate(100)
    assert pool.available_memory == 1000
    assert pool.queued == 0 and pool.wait_time_total_ms == 0.0


def test_a_request_larger_than_buffer_memory_fails_at_once_naming_it() -> None:
    pool = BufferPool(1000, 100)
    start = time.monotonic()
    with pytest.raises(RecordTooLargeError, match=r"1001 bytes .*buffer_memory=1000"):
        pool.allocate(1001, max_time_to_block_ms=10_000)
    assert time.monotonic() - start < 5
    assert pool.available_memory == 1000


def test_blocks_up_to_max_block_ms_then_raises_naming_buffer_memory() -> None:
    waits: list[float] = []
    pool = BufferPool(1000, 100, on_wait=waits.append)
    pool.allocate(950, 0)
    start = time.monotonic()
    with pytest.raises(BufferExhaustedError) as raised:
        pool.allocate(100, max_time_to_block_ms=100)
    assert time.monotonic() - start >= 0.1
    message = str(raised.value)
    assert "buffer_memory=1000" in message and "max_block_ms" in message
    assert "100 bytes" in message
    assert isinstance(raised.value, KafkaTimeoutError) and isinstance(raised.value, TimeoutError)
    # The 50 bytes it took while waiting went back; the wait was counted.
    assert pool.available_memory == 50 and pool.queued == 0
    assert len(waits) == 1 and waits[0] >= 100 and pool.wait_time_total_ms == waits[0]


def test_zero_max_block_ms_fails_without_waiting() -> None:
    pool = BufferPool(100, 100)
    pool.allocate(100, 0)
    with pytest.raises(BufferExhaustedError):
        pool.allocate(1, 0)


def test_a_blocked_allocation_proceeds_when_memory_is_given_back() -> None:
    pool = BufferPool(1000, 100)
    pool.allocate(1000, 0)
    thread, outcome = in_thread(lambda: pool.allocate(300, max_time_to_block_ms=10_000))
    wait_until(lambda: pool.queued == 1)
    time.sleep(0.02)
    pool.deallocate(200)
    time.sleep(0.02)
    assert not outcome  # 200 of 300: still waiting
    pool.deallocate(200)
    thread.join(5)
    (waited,) = outcome
    assert isinstance(waited, float) and waited >= 40
    assert pool.available_memory == 100


def test_waiters_are_served_first_come_first_served() -> None:
    pool = BufferPool(100, 10)
    pool.allocate(100, 0)
    order: list[str] = []

    def take(name: str, size: int) -> Callable[[], object]:
        def run() -> object:
            waited = pool.allocate(size, max_time_to_block_ms=10_000)
            order.append(name)
            return waited

        return run

    big, _ = in_thread(take("big", 60))
    wait_until(lambda: pool.queued == 1)
    small, _ = in_thread(take("small", 10))
    wait_until(lambda: pool.queued == 2)
    pool.deallocate(40)  # enough for the small one, not the big one: nobody jumps the queue
    time.sleep(0.05)
    assert order == [] and pool.available_memory == 0  # the first waiter holds the 40
    pool.deallocate(60)
    big.join(5)
    small.join(5)
    assert order == ["big", "small"]
    assert pool.available_memory == 30


def test_close_wakes_waiters_with_a_named_error_and_refuses_new_requests() -> None:
    pool = BufferPool(100, 100)
    pool.allocate(100, 0)
    thread, outcome = in_thread(lambda: pool.allocate(50, max_time_to_block_ms=10_000))
    wait_until(lambda: pool.queued == 1)
    pool.close()
    thread.join(5)
    (error,) = outcome
    assert isinstance(error, ProducerClosedError)
    with pytest.raises(ProducerClosedError):
        pool.allocate(1, 0)
    assert pool.is_closed and pool.queued == 0


def test_many_threads_never_exceed_buffer_memory() -> None:
    pool = BufferPool(1000, 100)
    held = 0
    peak = 0
    lock = threading.Lock()

    def worker() -> None:
        nonlocal held, peak
        for _ in range(200):
            pool.allocate(300, max_time_to_block_ms=10_000)
            with lock:
                held += 300
                peak = max(peak, held)
            with lock:
                held -= 300
            pool.deallocate(300)

    threads = [threading.Thread(target=worker) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert peak <= 1000
    assert pool.available_memory == 1000 and pool.queued == 0


def test_invalid_total_memory() -> None:
    with pytest.raises(ValueError):
        BufferPool(0, 1)
