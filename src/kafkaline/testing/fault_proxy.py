"""FaultProxy: a loopback TCP proxy in front of a broker that breaks connections on purpose.

Start a LocalBroker that advertises the proxy's port, so every connection a client makes goes
through the proxy, then inject faults on command or on a schedule::

    >>> proxy = FaultProxy(upstream_port=broker_port)          # doctest: +SKIP
    >>> with proxy, LocalBroker(port=broker_port, advertised_port=proxy.port) as broker:
    ...     # doctest: +SKIP
    ...     producer = Producer(bootstrap_servers=broker.advertised_bootstrap_servers)
    ...     proxy.inject(Cut(CutPoint.MID_REQUEST))            # the next Produce is cut in two
    ...     proxy.inject(DelayResponse(seconds=1.5))           # past request_timeout_ms=1000
    ...     proxy.start_schedule([(0.5, Stall(seconds=2.0))])  # reads stop for 2 s, later

The proxy reads the Kafka framing (a 4-byte size before every request and response), so a fault
hits a whole request of a chosen API (Produce by default) rather than an arbitrary chunk:

- :class:`Cut` ``MID_REQUEST``: forwards the first half of the request's bytes, then closes
  both sides: the broker sees a truncated request, the client a dropped connection.
- :class:`Cut` ``BEFORE_RESPONSE``: forwards the whole request, then closes both sides when its
  response arrives, dropping it: the broker did the work, the client never hears of it (the
  case idempotence exists for).
- :class:`DelayResponse`: holds the request's response for ``seconds`` (and everything after
  it on that connection, so order is kept), so the client's request timeout fires first.
- :class:`Stall`: stops reading from every connection, both directions, for ``seconds``.
- :class:`CorruptResponse`: forwards the request, then replaces its response with a frame the
  client cannot decode (body cut short, bytes after it, or another correlation id): the broker
  did the work, the client must drop the connection and retry.

A fault is armed until traffic it matches arrives (a response fault is armed again if its
connection closes before the response comes); :attr:`FaultProxy.injected` counts the
faults that actually happened, by kind. Threads: one accepting, two per connection (one per
direction), one for a schedule; ``close()`` stops and joins them all and closes every socket.
Loopback only: it is a test tool, not a network component.

Why it is in the package rather than the test suite: users testing their own retry and
idempotence handling need the same thing, and it pairs with ``LocalBroker(advertised_port=)``.
"""

from __future__ import annotations

import collections
import contextlib
import enum
import functools
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import TracebackType

from kafkaline.errors import ConfigError, IllegalStateError
from kafkaline.testing._ports import LOOPBACK

__all__ = [
    "CorruptResponse",
    "Corruption",
    "Cut",
    "CutPoint",
    "DelayResponse",
    "Fault",
    "FaultProxy",
    "Stall",
]

#: The Produce API's key, the default target of request faults.
PRODUCE_API_KEY = 0
# How often blocked threads look at the closing flag; also the accept loop's timeout.
_POLL_INTERVAL = 0.05
_RECV_SIZE = 1 << 16
_SIZE = struct.Struct(">i")
_REQUEST_HEADER = struct.Struct(">hhi")  # api_key, api_version, correlation_id
_CORRELATION_ID = struct.Struct(">i")


class CutPoint(enum.Enum):
    """Where in a request's life :class:`Cut` drops the connection."""

    MID_REQUEST = "mid-request"
    BEFORE_RESPONSE = "before-response"


@dataclass(frozen=True)
class Cut:
    """Close the connection carrying the next request of ``api_key`` at ``point``."""

    point: CutPoint = CutPoint.MID_REQUEST
    api_key: int | None = PRODUCE_API_KEY

    @property
    def kind(self) -> str:
        return f"cut {self.point.value}"


@dataclass(frozen=True)
class DelayResponse:
    """Hold the response to the next request of ``api_key`` for ``seconds``."""

    seconds: float
    api_key: int | None = PRODUCE_API_KEY

    def __post_init__(self) -> None:
        if not self.seconds > 0:
            raise ConfigError(f"DelayResponse seconds={self.seconds!r} must be > 0")

    @property
    def kind(self) -> str:
        return "delayed response"


@dataclass(frozen=True)
class Stall:
    """Stop reading from every connection (both directions) for ``seconds``."""

    seconds: float

    def __post_init__(self) -> None:
        if not self.seconds > 0:
            raise ConfigError(f"Stall seconds={self.seconds!r} must be > 0")

    @property
    def kind(self) -> str:
        return "stalled reads"


class Corruption(enum.Enum):
    """How :class:`CorruptResponse` spoils a response frame (its size stays consistent, so
    the stream's framing holds and the client fails on decoding, not on framing)."""

    TRUNCATED = "truncated"  # the body cut in half
    TRAILING = "trailing"  # four bytes after the body
    WRONG_CORRELATION_ID = "wrong-correlation-id"  # the header names another request


@dataclass(frozen=True)
class CorruptResponse:
    """Replace the response to the next request of ``api_key`` with an undecodable one."""

    how: Corruption = Corruption.TRUNCATED
    api_key: int | None = PRODUCE_API_KEY

    @property
    def kind(self) -> str:
        return f"corrupt response {self.how.value}"


Fault = Cut | DelayResponse | Stall | CorruptResponse
_RequestFault = Cut | DelayResponse | CorruptResponse


def _corrupt(frame: bytes, how: Corruption) -> bytes:
    """``frame`` (size, correlation id, rest) spoiled ``how``, re-framed."""
    payload = frame[_SIZE.size :]
    if how is Corruption.TRUNCATED:
        header, body = payload[: _CORRELATION_ID.size], payload[_CORRELATION_ID.size :]
        payload = header + body[: len(body) // 2]
    elif how is Corruption.TRAILING:
        payload = payload + b"\x00\xff\x00\xff"
    else:
        (correlation_id,) = _CORRELATION_ID.unpack_from(payload)
        payload = _CORRELATION_ID.pack((correlation_id + 1) % 2**31) + payload[4:]
    return _SIZE.pack(len(payload)) + payload


class _Closing(Exception):
    """Raised inside a pump when its connection (or the proxy) is being torn down."""


class _Connection:
    """One client connection and its upstream connection; torn down once, from any thread."""

    def __init__(self, client: socket.socket, upstream: socket.socket) -> None:
        self.client = client
        self.upstream = upstream
        self.closed = threading.Event()
        # Correlation id -> the fault to apply to that request's response.
        self.response_faults: dict[int, _RequestFault] = {}
        self.lock = threading.Lock()
        self.threads: list[threading.Thread] = []

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


class FaultProxy:
    """A threaded TCP proxy on ``127.0.0.1`` that forwards to ``upstream_port`` and injects
    :data:`Fault` s. See the module docstring for the faults.

    Parameters:
        upstream_port: the broker's port (it may start later: the proxy connects per client).
        upstream_host: the broker's host; loopback.
        port: the port to listen on; default a free one, bound in the constructor so
            :attr:`port` can be given to the broker before either starts.
    """

    def __init__(self, upstream_port: int, *, upstream_host: str = LOOPBACK, port: int = 0) -> None:
        self._upstream = (upstream_host, upstream_port)
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind((LOOPBACK, port))
        self._listener.listen(64)
        self._listener.settimeout(_POLL_INTERVAL)
        self._port: int = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._armed: collections.deque[_RequestFault] = collections.deque()
        self._stalled_until = 0.0
        self._injected: collections.Counter[str] = collections.Counter()
        self._connections: set[_Connection] = set()
        self._connections_made = 0
        self._threads: list[threading.Thread] = []
        self._acceptor: threading.Thread | None = None

    # ------------------------------------------------------------------ commands

    @property
    def port(self) -> int:
        """The port clients connect to (advertise it from the broker)."""
        return self._port

    @property
    def injected(self) -> dict[str, int]:
        """Faults that happened so far, by kind (an armed fault counts once it hit traffic)."""
        with self._lock:
            return dict(self._injected)

    @property
    def pending(self) -> int:
        """Request faults armed but not yet met by matching traffic."""
        with self._lock:
            return len(self._armed)

    @property
    def connections_made(self) -> int:
        """Client connections accepted so far."""
        with self._lock:
            return self._connections_made

    def inject(self, fault: Fault) -> None:
        """Apply ``fault``: a :class:`Stall` at once, the others to the next matching request
        (armed faults are taken in the order injected)."""
        with self._lock:
            if isinstance(fault, Stall):
                self._stalled_until = max(self._stalled_until, time.monotonic() + fault.seconds)
                self._injected[fault.kind] += 1
            else:
                self._armed.append(fault)

    def cut_all(self) -> int:
        """Close every open connection now (both sides); returns how many were closed."""
        with self._lock:
            connections = list(self._connections)
            self._injected["cut all"] += 1
        for connection in connections:
            connection.tear_down()
        return len(connections)

    def start_schedule(self, steps: Iterable[tuple[float, Fault]]) -> threading.Thread:
        """Inject each fault after waiting its delay (seconds since the previous step), on a
        thread of the proxy's; ``close()`` stops it. Returns the thread (join it to wait)."""
        planned = list(steps)

        def run() -> None:
            for delay, fault in planned:
                if self._closing.wait(delay):
                    return
                self.inject(fault)

        return self._spawn(run, "kafkaline-fault-proxy-schedule")

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Start accepting connections. Does nothing if already started."""
        if self._closing.is_set():
            raise IllegalStateError("a closed FaultProxy cannot start again; make a new one")
        if self._acceptor is None:
            self._acceptor = self._spawn(self._accept_loop, "kafkaline-fault-proxy-accept")

    def close(self, timeout: float = 5.0) -> None:
        """Stop accepting, close every connection and join every thread. Idempotent."""
        self._closing.set()
        self._listener.close()
        with self._lock:
            connections = list(self._connections)
        for connection in connections:
            connection.tear_down()
        deadline = time.monotonic() + timeout
        while True:
            with self._lock:
                threads = [t for t in self._threads if t is not threading.current_thread()]
                self._threads = []
            if not threads:
                break
            for thread in threads:
                thread.join(max(deadline - time.monotonic(), 0.0))
                if thread.is_alive():
                    raise TimeoutError(f"FaultProxy thread {thread.name} did not stop")

    def __enter__(self) -> FaultProxy:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return (
            f"<FaultProxy {LOOPBACK}:{self._port} -> {self._upstream[0]}:{self._upstream[1]} "
            f"injected={self.injected}>"
        )

    # ------------------------------------------------------------------ internals

    def _spawn(self, target: Callable[[], None], name: str) -> threading.Thread:
        thread = threading.Thread(target=target, name=name, daemon=True)
        with self._lock:
            self._threads = [t for t in self._threads if t.is_alive()]
            self._threads.append(thread)
        thread.start()
        return thread

    def _accept_loop(self) -> None:
        while not self._closing.is_set():
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:  # the listener was closed
                return
            try:
                upstream = socket.create_connection(self._upstream, timeout=5.0)
            except OSError:  # broker down: the client sees its connection refused-ish
                client.close()
                continue
            for sock in (client, upstream):
                sock.settimeout(_POLL_INTERVAL)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            connection = _Connection(client, upstream)
            with self._lock:
                if self._closing.is_set():
                    connection.tear_down()
                    return
                self._connections.add(connection)
                self._connections_made += 1
            self._spawn(functools.partial(self._pump, connection, True), "fault-proxy-c2b")
            self._spawn(functools.partial(self._pump, connection, False), "fault-proxy-b2c")

    def _pump(self, connection: _Connection, requests: bool) -> None:
        """Forward frames one way: client -> broker when ``requests``, else broker -> client."""
        source, sink = (
            (connection.client, connection.upstream)
            if requests
            else (connection.upstream, connection.client)
        )
        buffer = bytearray()
        try:
            while True:
                self._wait_while_stalled(connection)
                data = self._recv(connection, source)
                if not data:
                    return
                # A thread already blocked in recv when the stall began holds what it got.
                self._wait_while_stalled(connection)
                buffer += data
                while len(buffer) >= _SIZE.size:
                    (size,) = _SIZE.unpack_from(buffer)
                    end = _SIZE.size + size
                    if len(buffer) < end:
                        break
                    frame = bytes(buffer[:end])
                    del buffer[:end]
                    if requests:
                        self._forward_request(connection, sink, frame)
                    else:
                        self._forward_response(connection, sink, frame)
        except (_Closing, OSError):
            return
        finally:
            connection.tear_down()
            # A response fault whose request went up but whose response never came back
            # (the connection closed first) did not happen: it is armed again, first in line.
            with connection.lock:
                unapplied = list(connection.response_faults.values())
                connection.response_faults.clear()
            with self._lock:
                self._connections.discard(connection)
                self._armed.extendleft(reversed(unapplied))

    def _recv(self, connection: _Connection, source: socket.socket) -> bytes:
        while True:
            if connection.closed.is_set() or self._closing.is_set():
                raise _Closing
            try:
                return source.recv(_RECV_SIZE)
            except TimeoutError:
                continue

    def _wait_while_stalled(self, connection: _Connection) -> None:
        while True:
            with self._lock:
                remaining = self._stalled_until - time.monotonic()
            if remaining <= 0:
                return
            if connection.closed.wait(min(remaining, _POLL_INTERVAL)) or self._closing.is_set():
                raise _Closing

    def _take_fault(self, api_key: int) -> _RequestFault | None:
        with self._lock:
            for fault in self._armed:
                if fault.api_key is None or fault.api_key == api_key:
                    self._armed.remove(fault)
                    return fault
        return None

    def _count(self, kind: str) -> None:
        with self._lock:
            self._injected[kind] += 1

    def _forward_request(self, connection: _Connection, sink: socket.socket, frame: bytes) -> None:
        api_key, _, correlation_id = _REQUEST_HEADER.unpack_from(frame, _SIZE.size)
        fault = self._take_fault(api_key)
        if isinstance(fault, Cut) and fault.point is CutPoint.MID_REQUEST:
            sink.sendall(frame[: len(frame) // 2])
            self._count(fault.kind)
            raise _Closing
        if fault is not None:
            with connection.lock:
                connection.response_faults[correlation_id] = fault
        sink.sendall(frame)

    def _forward_response(self, connection: _Connection, sink: socket.socket, frame: bytes) -> None:
        (correlation_id,) = _CORRELATION_ID.unpack_from(frame, _SIZE.size)
        with connection.lock:
            fault = connection.response_faults.pop(correlation_id, None)
        if isinstance(fault, Cut):
            self._count(fault.kind)
            raise _Closing
        if isinstance(fault, DelayResponse):
            self._count(fault.kind)
            if connection.closed.wait(fault.seconds) or self._closing.is_set():
                raise _Closing
        if isinstance(fault, CorruptResponse):
            self._count(fault.kind)
            frame = _corrupt(frame, fault.how)
        sink.sendall(frame)
