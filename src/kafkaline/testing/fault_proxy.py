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
import enum
import functools
import socket
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from types import TracebackType

from kafkaline.errors import ConfigError, IllegalStateError
from kafkaline.testing._ports import LOOPBACK
from kafkaline.testing._relay import (
    CORRELATION_ID,
    POLL_INTERVAL,
    REQUEST_HEAD,
    SIZE,
    Closing,
    RelayConnection,
    ThreadGroup,
    accept_loop,
    listen,
    pump_frames,
    stop_listening,
)

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
    payload = frame[SIZE.size :]
    if how is Corruption.TRUNCATED:
        header, body = payload[: CORRELATION_ID.size], payload[CORRELATION_ID.size :]
        payload = header + body[: len(body) // 2]
    elif how is Corruption.TRAILING:
        payload = payload + b"\x00\xff\x00\xff"
    else:
        (correlation_id,) = CORRELATION_ID.unpack_from(payload)
        payload = CORRELATION_ID.pack((correlation_id + 1) % 2**31) + payload[4:]
    return SIZE.pack(len(payload)) + payload


# A connection's pending map: correlation id -> the fault to apply to that response.
_Connection = RelayConnection[_RequestFault]


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
        self._listener = listen(port)
        self._port: int = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._armed: collections.deque[_RequestFault] = collections.deque()
        self._stalled_until = 0.0
        self._injected: collections.Counter[str] = collections.Counter()
        self._connections: set[_Connection] = set()
        self._connections_made = 0
        self._threads = ThreadGroup("kafkaline-fault-proxy-")
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

        return self._threads.spawn(run, "schedule")

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Start accepting connections. Does nothing if already started."""
        if self._closing.is_set():
            raise IllegalStateError("a closed FaultProxy cannot start again; make a new one")
        if self._acceptor is None:
            accept = functools.partial(
                accept_loop, self._listener, self._upstream, self._closing, self._on_connection
            )
            self._acceptor = self._threads.spawn(accept, "accept")

    def close(self, timeout: float = 5.0) -> None:
        """Stop accepting, close every connection and join every thread. Idempotent."""
        self._closing.set()
        stop_listening(self._listener)
        with self._lock:
            connections = list(self._connections)
        for connection in connections:
            connection.tear_down()
        alive = self._threads.join(timeout)
        if alive:
            raise TimeoutError(f"FaultProxy threads did not stop: {alive}")

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

    def _on_connection(self, connection: _Connection) -> bool:
        with self._lock:
            if self._closing.is_set():
                return False
            self._connections.add(connection)
            self._connections_made += 1
        self._threads.spawn(functools.partial(self._pump, connection, True), "c2b")
        self._threads.spawn(functools.partial(self._pump, connection, False), "b2c")
        return True

    def _pump(self, connection: _Connection, requests: bool) -> None:
        """Forward frames one way: client -> broker when ``requests``, else broker -> client."""
        forward = self._forward_request if requests else self._forward_response
        try:
            pump_frames(
                connection,
                requests,
                functools.partial(forward, connection),
                self._closing,
                hold=functools.partial(self._wait_while_stalled, connection),
            )
        finally:
            # A response fault whose request went up but whose response never came back
            # (the connection closed first) did not happen: it is armed again, first in line.
            with connection.lock:
                unapplied = list(connection.pending.values())
                connection.pending.clear()
            with self._lock:
                self._connections.discard(connection)
                self._armed.extendleft(reversed(unapplied))

    def _wait_while_stalled(self, connection: _Connection) -> None:
        while True:
            with self._lock:
                remaining = self._stalled_until - time.monotonic()
            if remaining <= 0:
                return
            if connection.closed.wait(min(remaining, POLL_INTERVAL)) or self._closing.is_set():
                raise Closing

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
        api_key, _, correlation_id = REQUEST_HEAD.unpack_from(frame, SIZE.size)
        fault = self._take_fault(api_key)
        if isinstance(fault, Cut) and fault.point is CutPoint.MID_REQUEST:
            sink.sendall(frame[: len(frame) // 2])
            self._count(fault.kind)
            raise Closing
        if fault is not None:
            with connection.lock:
                connection.pending[correlation_id] = fault
        sink.sendall(frame)

    def _forward_response(self, connection: _Connection, sink: socket.socket, frame: bytes) -> None:
        (correlation_id,) = CORRELATION_ID.unpack_from(frame, SIZE.size)
        with connection.lock:
            fault = connection.pending.pop(correlation_id, None)
        if isinstance(fault, Cut):
            self._count(fault.kind)
            raise Closing
        if isinstance(fault, DelayResponse):
            self._count(fault.kind)
            if connection.closed.wait(fault.seconds) or self._closing.is_set():
                raise Closing
        if isinstance(fault, CorruptResponse):
            self._count(fault.kind)
            frame = _corrupt(frame, fault.how)
        sink.sendall(frame)
