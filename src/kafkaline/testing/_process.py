"""Child processes that cannot outlive the Python process that started them, and their logs."""

from __future__ import annotations

import ctypes
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import TypeAlias

from kafkaline.errors import KafkaTimeoutError

# From <linux/prctl.h>.
_PR_SET_PDEATHSIG = 1


def _die_with_parent_hook() -> Callable[[], None] | None:
    """A preexec_fn that makes the Linux kernel SIGKILL the child when its parent dies, even
    when the parent is SIGKILLed and no Python cleanup runs. None where that is unavailable.

    The libc lookup happens here, in the parent: between fork and exec the child should do as
    little as possible.
    """
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    prctl.restype = ctypes.c_int
    parent_pid = os.getpid()

    def die_with_parent() -> None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        # The parent may have died between fork and prctl; then no signal will ever come.
        if os.getppid() != parent_pid:
            os._exit(1)

    return die_with_parent


def _setpriv() -> str | None:
    """util-linux's setpriv, which sets PR_SET_PDEATHSIG and then execs the command."""
    return shutil.which("setpriv") if sys.platform.startswith("linux") else None


def spawn_tied_to_parent(
    argv: Sequence[str], *, env: Mapping[str, str], log_path: Path
) -> subprocess.Popen[bytes]:
    """Start ``argv`` with stdout and stderr appended to ``log_path``.

    A file, not a pipe: nobody reads a pipe while the tests run, and a full pipe would block
    the child. The child gets its own session so a Ctrl-C in the terminal reaches Python (which
    then stops the child in order) instead of killing the child behind our back.

    Linux caveat of PR_SET_PDEATHSIG: the signal fires when the *thread* that spawned the child
    exits, so call this from a thread that lives as long as the child should: a SpawnThread.

    With setpriv (util-linux, on every Debian) the death signal is set by ``setpriv
    --pdeathsig KILL``, which then execs the command, so no Python runs in the forked child.
    A ``preexec_fn`` (the fallback) makes CPython clear the other threads' states in the child
    before it runs, and their finalisers act on what the child shares with the parent: py4j's
    thread-local connection shuts its socket down (``SHUT_RDWR`` reaches the parent's socket
    too), and a PySpark session that started this broker lost its active session.
    """
    command = list(argv)
    preexec_fn: Callable[[], None] | None = None
    setpriv = _setpriv()
    if setpriv is not None:
        command = [setpriv, "--pdeathsig", "KILL", "--", *command]
    else:
        preexec_fn = _die_with_parent_hook()
    with open(log_path, "ab") as log_file:  # the child keeps its own descriptor
        return subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            env=dict(env),
            start_new_session=True,
            preexec_fn=preexec_fn,
        )


_SpawnJob: TypeAlias = (
    "tuple[Callable[[], subprocess.Popen[bytes]], Future[subprocess.Popen[bytes]]]"
)


class SpawnThread:
    """Starts child processes from one thread that lives until :meth:`close`.

    Why: PR_SET_PDEATHSIG fires when the *thread* that forked the child exits, not the process.
    A broker started from a short-lived thread (a thread pool, ``asyncio.to_thread``) would be
    SIGKILLed the moment that thread finished. Forked from here, children die with the process
    (or at ``close()``, after which their owner has killed them anyway).
    """

    def __init__(self, name: str) -> None:
        self._jobs: queue.SimpleQueue[_SpawnJob | None] = queue.SimpleQueue()
        # A daemon: it must not keep the interpreter alive; at exit it dies with the process.
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()

    def spawn(
        self, argv: Sequence[str], *, env: Mapping[str, str], log_path: Path
    ) -> subprocess.Popen[bytes]:
        """:func:`spawn_tied_to_parent`, run on this thread; returns once the child runs."""
        if not self._thread.is_alive():
            raise RuntimeError("SpawnThread is closed")
        result: Future[subprocess.Popen[bytes]] = Future()
        self._jobs.put((lambda: spawn_tied_to_parent(argv, env=env, log_path=log_path), result))
        try:
            return result.result()
        except BaseException:
            # Interrupted while waiting (Ctrl-C): nobody will own the child, so kill it as soon
            # as it exists. A no-op when the spawn itself failed.
            result.add_done_callback(_kill_if_spawned)
            raise

    def close(self) -> None:
        """Let the thread finish (after any spawn already asked for). Idempotent."""
        self._jobs.put(None)

    def _serve(self) -> None:
        while (job := self._jobs.get()) is not None:
            spawn, result = job
            if result.set_running_or_notify_cancel():
                try:
                    result.set_result(spawn())
                except BaseException as exc:  # handed to the waiting caller, who re-raises
                    result.set_exception(exc)


def _kill_if_spawned(result: Future[subprocess.Popen[bytes]]) -> None:
    if not result.cancelled() and result.exception() is None:
        kill_and_reap(result.result(), timeout=10.0)


def kill_and_reap(process: subprocess.Popen[bytes], timeout: float) -> None:
    """SIGKILL ``process`` (if still running) and wait until it has exited.

    SIGKILL rather than SIGTERM: Tansu keeps its port for up to 5 s after SIGTERM while it
    drains client connections, and a broker started on that port meanwhile panics.
    """
    process.kill()  # a no-op once Popen has seen the exit
    process.wait(timeout=timeout)


def tail_of_log(log_path: Path, max_lines: int = 40, max_bytes: int = 16_384) -> str:
    """The last lines of a log file, for error messages; a note instead if it is unreadable."""
    try:
        with open(log_path, "rb") as log_file:
            log_file.seek(0, os.SEEK_END)
            size = log_file.tell()
            log_file.seek(max(size - max_bytes, 0))
            data = log_file.read()
    except OSError as exc:
        return f"(log {log_path} unreadable: {exc})"
    lines = data.decode("utf-8", errors="replace").splitlines()
    return "\n".join(lines[-max_lines:])


# How long pause()/resume() wait for the kernel to stop or continue every broker thread.
_SIGNAL_SETTLE_TIMEOUT = 5.0


def wait_for_threads_stopped(pid: int, *, stopped: bool) -> None:
    """Wait until every thread of ``pid`` is stopped (``stopped``) or none is, going by
    /proc/PID/task/*/stat (Linux); elsewhere, return at once."""
    tasks = Path(f"/proc/{pid}/task")
    deadline = time.monotonic() + _SIGNAL_SETTLE_TIMEOUT
    while time.monotonic() < deadline:
        try:
            states = [
                # The state follows the parenthesised command name, which may hold spaces.
                (task / "stat").read_text().rpartition(")")[2].split()[0]
                for task in tasks.iterdir()
            ]
        except (OSError, IndexError):
            return  # no /proc, or the process or a thread just went away
        if all((state in "Tt") == stopped for state in states):
            return
        time.sleep(0.001)
    what = "stop" if stopped else "continue"
    raise KafkaTimeoutError(
        f"the broker process {pid} did not {what} within {_SIGNAL_SETTLE_TIMEOUT} s"
    )
