"""What a client process measures about itself: wall time, CPU time, resident memory.

CPU time is the whole process's (every thread: librdkafka's, kafka-python's sender, ...), as
``getrusage(RUSAGE_SELF)`` reports it. Resident memory comes from ``/proc/self/status``
where there is one: ``VmHWM`` is the peak, and writing ``5`` to ``/proc/self/clear_refs``
resets it, so the peak covers the produce phase only. Elsewhere ``getrusage`` gives the
lifetime peak.

CPU time per thread (:func:`thread_cpu_ns`) comes from ``/proc/self/task/*/schedstat``
(nanoseconds on CPU), or ``/proc/self/task/*/stat`` (clock ticks) where there is no schedstat:
it splits the process's CPU between the caller's thread and the client's own threads (the
I/O threads: kafkaline's Sender, librdkafka's broker threads), which says where a change moved
the cost without depending on how busy the machine's other CPUs are.
"""

from __future__ import annotations

import math
import os
import resource
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

_STATUS = Path("/proc/self/status")
_CLEAR_REFS = Path("/proc/self/clear_refs")
_RESET_PEAK_RSS = "5"  # clear_refs: reset the peak resident set size (Linux 4.0+)
_TASKS = Path("/proc/self/task")
# /proc/PID/stat's utime and stime, counted from the field after the ")" closing the name.
_STAT_UTIME, _STAT_STIME = 11, 12


def _status_kib(field_name: str) -> int | None:
    try:
        text = _STATUS.read_text()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith(field_name + ":"):
            return int(line.split()[1])
    return None


def _lifetime_peak_rss() -> int:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024  # bytes there, KiB on Linux


def current_rss() -> int:
    """Resident set size now, in bytes."""
    kib = _status_kib("VmRSS")
    return kib * 1024 if kib is not None else _lifetime_peak_rss()


def reset_peak_rss() -> bool:
    """Make the peak start from now; False where the platform cannot (the peak is then the
    process's lifetime peak)."""
    try:
        _CLEAR_REFS.write_text(_RESET_PEAK_RSS)
    except OSError:
        return False
    return True


def peak_rss() -> int:
    """Peak resident set size, in bytes (since the last successful :func:`reset_peak_rss`)."""
    kib = _status_kib("VmHWM")
    return kib * 1024 if kib is not None else _lifetime_peak_rss()


@dataclass(frozen=True)
class Span:
    """Wall and CPU seconds between :meth:`Stopwatch.start` and :meth:`Stopwatch.stop`."""

    wall_s: float
    cpu_user_s: float
    cpu_sys_s: float


class Stopwatch:
    """Wall clock and process CPU time together. CPU time comes from ``getrusage``, which
    counts every thread of the process in microseconds (``os.times()`` counts in clock ticks
    of 10 ms: too coarse for short runs)."""

    def __init__(self) -> None:
        self._wall = 0.0
        self._usage = resource.getrusage(resource.RUSAGE_SELF)

    def start(self) -> None:
        self._usage = resource.getrusage(resource.RUSAGE_SELF)
        self._wall = time.perf_counter()

    def stop(self) -> Span:
        wall = time.perf_counter() - self._wall
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return Span(
            wall_s=wall,
            cpu_user_s=usage.ru_utime - self._usage.ru_utime,
            cpu_sys_s=usage.ru_stime - self._usage.ru_stime,
        )


def percentile(sorted_values: list[float], fraction: float) -> float:
    """Nearest-rank percentile of already sorted values (``fraction`` 0.99 for p99): the
    smallest value at least ``fraction`` of the values are at or below. Of 5,000 samples,
    p99.9 is the 4,995th: the sixth slowest."""
    if not sorted_values:
        raise ValueError("no values")
    rank = max(1, math.ceil(fraction * len(sorted_values)))
    return sorted_values[rank - 1]


def _task_cpu_ns(task: Path, tick_ns: int) -> int | None:
    try:
        return int((task / "schedstat").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        pass
    try:
        fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None  # the thread ended meanwhile
    return (int(fields[_STAT_UTIME]) + int(fields[_STAT_STIME])) * tick_ns


def thread_cpu_ns() -> dict[int, int] | None:
    """Native thread id -> CPU nanoseconds it has used, for every live thread of this process
    (None where there is no /proc)."""
    if not _TASKS.is_dir():
        return None
    tick_ns = 1_000_000_000 // os.sysconf("SC_CLK_TCK")
    threads = {}
    for task in _TASKS.iterdir():
        used = _task_cpu_ns(task, tick_ns)
        if used is not None:
            threads[int(task.name)] = used
    return threads


@dataclass(frozen=True)
class ThreadSplit:
    """CPU seconds between two :func:`thread_cpu_ns` samples: the caller's thread, and every
    other thread (threads started in between count from zero; threads that ended are lost,
    which is why the child samples before it closes the producer)."""

    caller_s: float
    others_s: float


def split_thread_cpu(
    before: dict[int, int], after: dict[int, int], caller: int | None = None
) -> ThreadSplit:
    """Split the CPU used between ``before`` and ``after`` into the ``caller`` thread's
    (default: this thread) and the others'."""
    caller = threading.get_native_id() if caller is None else caller
    used = {tid: ns - before.get(tid, 0) for tid, ns in after.items()}
    caller_ns = used.pop(caller, 0)
    return ThreadSplit(caller_s=caller_ns / 1e9, others_s=sum(used.values()) / 1e9)
