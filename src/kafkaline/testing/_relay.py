"""The framed TCP relay under FaultProxy and LocalCluster's node fronts.

A listener on loopback; per accepted client a :class:`RelayConnection` (the client's socket
and one to the upstream broker); per connection two pumps, one a direction, that cut the
byte stream into Kafka frames (a 4-byte size, then that many bytes) and hand each whole
frame to a handler, which decides what reaches the other side. Blocking calls wake every
:data:`POLL_INTERVAL` to look at the closing flags, so every thread can be joined.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from kafkaline.testing._ports import LOOPBACK

# How often blocked threads look at the closing flags; also the accept loops' timeout.
POLL_INTERVAL = 0.05
_RECV_SIZE = 1 << 16
_CONNECT_TIMEOUT = 5.0
SIZE = struct.Struct(">i")
REQUEST_HEAD = struct.Struct(">hhi")  # api_key, api_version, correlation_id
CORRELATION_ID = struct.Struct(">i")

_T = TypeVar("_T")


class Closing(Exception):
    """Raised inside a pump when its connection (or its owner) is being torn down."""


@dataclass(eq=False)
class RelayConnection(Generic[_T]):
    """A client's connection and the relay's connection upstream for it; torn down once,
    from any thread. ``pending`` maps a request's correlation id to what its owner will do
    with that request's response (guarded by ``lock``)."""

    client: socket.socket
    upstream: socket.socket
    closed: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)
    pending: dict[int, _T] = field(default_factory=dict)

    def tear_down(self) -> None:
        with self.lock:
            if self.closed.is_set():
                return
            self.closed.set()
        for sock in (self.client, self.upstream):
            # shutdown wakes a thread blocked in recv on the other side at once
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()


class ThreadGroup:
    """The daemon threads of one relay owner, named ``prefix + name``, joined together."""

    def __init__(self, prefix: str) -> None:
        self._prefix = prefix
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []

    def spawn(self, target: Callable[[], None], name: str) -> threading.Thread:
        thread = threading.Thread(target=target, name=self._prefix + name, daemon=True)
        with self._lock:
            self._threads = [t for t in self._threads if t.is_alive()]
            self._threads.append(thread)
        thread.start()
        return thread

    def join(self, timeout: float) -> list[str]:
        """Join every thread (also those spawned meanwhile, but not the calling one) within
        ``timeout`` seconds; return the names of those still alive."""
        deadline = time.monotonic() + timeout
        while True:
            with self._lock:
                threads = [t for t in self._threads if t is not threading.current_thread()]
                self._threads = []
            if not threads:
                return []
            for thread in threads:
                thread.join(max(deadline - time.monotonic(), 0.0))
            alive = [thread.name for thread in threads if thread.is_alive()]
            if alive:
                return alive


def listen(port: int) -> socket.socket:
    """A listening socket on loopback ``port`` (0: a free one), polling for accept()."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((LOOPBACK, port))
        listener.listen(64)
        listener.settimeout(POLL_INTERVAL)
    except BaseException:
        listener.close()
        raise
    return listener


def stop_listening(listener: socket.socket) -> None:
    # close() alone leaves the port listening while the accept thread's poll holds the file:
    # shutdown stops it at once (Linux), so the very next connect is refused.
    with contextlib.suppress(OSError):
        listener.shutdown(socket.SHUT_RDWR)
    listener.close()


def accept_loop(
    listener: socket.socket,
    upstream: tuple[str, int],
    closing: threading.Event,
    on_connection: Callable[[RelayConnection[_T]], bool],
) -> None:
    """Accept clients until ``closing`` is set or ``listener`` is closed; connect each to
    ``upstream`` and hand the pair to ``on_connection``, which starts its pumps, or returns
    False to refuse it and end the loop. A client whose upstream connect fails is closed."""
    while not closing.is_set():
        try:
            client, _ = listener.accept()
        except TimeoutError:
            continue
        except OSError:  # the listener was closed
            return
        try:
            upstream_socket = socket.create_connection(upstream, timeout=_CONNECT_TIMEOUT)
        except OSError:  # broker down: the client sees its connection closed
            client.close()
            continue
        for sock in (client, upstream_socket):
            sock.settimeout(POLL_INTERVAL)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        connection: RelayConnection[_T] = RelayConnection(client, upstream_socket)
        if not on_connection(connection):
            connection.tear_down()
            return


def _no_hold() -> None:
    return None


def pump_frames(
    connection: RelayConnection[_T],
    requests: bool,
    on_frame: Callable[[socket.socket, bytes], None],
    closing: threading.Event,
    hold: Callable[[], None] = _no_hold,
) -> None:
    """Read one direction (client -> upstream when ``requests``, else back) and call
    ``on_frame(sink, frame)`` per whole frame; ``on_frame`` writes to ``sink`` what should
    pass, or raises :class:`Closing`. ``hold`` runs before and after each read (a stall).
    Returns when either side closes; the connection is torn down then."""
    source, sink = (
        (connection.client, connection.upstream)
        if requests
        else (connection.upstream, connection.client)
    )
    buffer = bytearray()
    try:
        while True:
            hold()
            data = _recv(connection, source, closing)
            if not data:
                return
            # A thread already blocked in recv when a stall began holds what it got.
            hold()
            buffer += data
            for frame in _whole_frames(buffer):
                on_frame(sink, frame)
    except (Closing, OSError):
        return
    finally:
        connection.tear_down()


def _recv(
    connection: RelayConnection[_T], source: socket.socket, closing: threading.Event
) -> bytes:
    while True:
        if connection.closed.is_set() or closing.is_set():
            raise Closing
        try:
            return source.recv(_RECV_SIZE)
        except TimeoutError:
            continue


def _whole_frames(buffer: bytearray) -> Iterator[bytes]:
    """Take each whole frame (size prefix included) off the front of ``buffer``."""
    while len(buffer) >= SIZE.size:
        (size,) = SIZE.unpack_from(buffer)
        end = SIZE.size + size
        if len(buffer) < end:
            return
        frame = bytes(buffer[:end])
        del buffer[:end]
        yield frame
