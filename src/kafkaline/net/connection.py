"""One broker connection as an explicit state machine, driven by the client's I/O thread.

::

    DISCONNECTED --connect()--> CONNECTING --TCP (and later TLS) up--> CHECKING_API_VERSIONS
         ^                                                                   |
         |                              (an authenticator is set: SASL) AUTHENTICATING
         |                                                                   |
         +----- any failure, timeout, close() ------------------------ READY <+

:class:`BrokerConnection` owns a :class:`~kafkaline.net.transport.Transport` (bytes) and a
:class:`~kafkaline.protocol.ClientProtocol` (framing), tracks the requests in flight with their
deadlines, and decides when it may reconnect. It never blocks and never reads a clock: every
method that depends on time takes ``now`` (monotonic milliseconds), so a fake clock drives it in
tests. The selector lives in :class:`~kafkaline.net.client.NetworkClient`, which asks each
connection which events it waits for (:meth:`BrokerConnection.interest`) and hands them back
(:meth:`BrokerConnection.handle_events`).

Completed requests are not called back from here: they are appended to a ``completed`` list the
caller passes in, and the client runs the callbacks once its I/O is done.

SASL: an :class:`Authenticator` made per connection attempt (:mod:`kafkaline.net.sasl`) runs its
exchange (SaslHandshake, SaslAuthenticate, ...) after ApiVersions, in the AUTHENTICATING state,
before the connection becomes READY. Its failures are
:class:`~kafkaline.errors.AuthenticationError` s, which the client treats as fatal. A broker that
refuses by closing the connection during the exchange (Tansu does, for a mechanism it does not
offer) looks like a lost connection; after a few such closes in a row without ever becoming
READY, the connection reports a SaslAuthenticationError instead, so a refusal is not retried
until a timeout.
"""

from __future__ import annotations

import logging
import math
from collections import deque
from collections.abc import Callable, Mapping

from kafkaline.config import UniformRandom
from kafkaline.errors import (
    AuthenticationError,
    ConnectionSetupTimeoutError,
    CorrelationIdMismatchError,
    IllegalStateError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    NoCompatibleVersionError,
    RequestTimeoutError,
    SaslAuthenticationError,
)
from kafkaline.net.connection_setup import ConnectionSetup
from kafkaline.net.connection_types import (
    Authenticator,
    AuthenticatorFactory,
    Completion,
    ConnectionState,
    OutgoingFrame,
    SentRequest,
    SetupRequest,
)
from kafkaline.net.response import ClientResponse, OnComplete
from kafkaline.net.settings import NetworkSettings
from kafkaline.net.transport import (
    EVENT_READ,
    EVENT_WRITE,
    ResolvedAddress,
    Transport,
    TransportFactory,
    resolve_broker_address,
)
from kafkaline.protocol import (
    ClientProtocol,
    Request,
    Response,
    VersionRange,
)
from kafkaline.protocol.versions import api_name

# The types moved to connection_types are still imported from here.
__all__ = [
    "Authenticator",
    "AuthenticatorFactory",
    "BrokerConnection",
    "Completion",
    "ConnectionState",
    "SetupRequest",
]

_log = logging.getLogger(__name__)

# One read is usually a whole response; a few more drain a burst without starving others.
_RECEIVE_CHUNK_SIZE = 256 * 1024
_MAX_READS_PER_EVENT = 8
_MAX_BUFFERS_PER_WRITE = 64
# Closes by the broker during the SASL exchange, in a row, before that counts as a refusal.
# One can be a broker restarting; three in a row within the reconnect backoff (~0.4 s at the
# defaults) is a broker that does not want this client.
_AUTHENTICATION_CLOSES_BEFORE_REFUSAL = 3


# The states as module globals, for the checks the I/O thread makes several times per pass
# (next_deadline, interest, can_send, handle_events): on Python 3.11 reading a member from its enum
# class goes through EnumType.__getattr__'s lookup hook, much slower than a global, and there are
# many such reads per record sent one at a time (docs/performance.md, Notes moved from the code).
_DISCONNECTED = ConnectionState.DISCONNECTED
_CONNECTING = ConnectionState.CONNECTING
_AUTHENTICATING = ConnectionState.AUTHENTICATING
_READY = ConnectionState.READY


class BrokerConnection:
    """The connection to one broker node (or one bootstrap address).

    Not thread-safe: only the client's I/O thread uses it. Typical life, driven by
    :class:`~kafkaline.net.client.NetworkClient`::

        conn = BrokerConnection(1, "broker1", 9092, settings, transport_factory, rng=rng)
        conn.connect(now, completed)                 # CONNECTING
        ...  conn.handle_events(events, now, completed)  (selector says the socket is ready)
        conn.is_ready                                # True once ApiVersions is done
        conn.send(request, now, completed, on_complete)
    """

    def __init__(
        self,
        node_id: int,
        host: str,
        port: int,
        settings: NetworkSettings,
        transport_factory: TransportFactory,
        *,
        rng: UniformRandom,
        authenticator_factory: AuthenticatorFactory | None = None,
        resolver: Callable[[str, int], list[ResolvedAddress]] = resolve_broker_address,
    ) -> None:
        self.node_id = node_id
        self.host = host
        self.port = port
        self._settings = settings
        self._transport_factory = transport_factory
        self._authenticator_factory = authenticator_factory
        self._resolver = resolver
        self._rng = rng

        self._state = ConnectionState.DISCONNECTED
        self._transport: Transport | None = None
        #: The socket's file descriptor, -1 without one: fileno() without its two calls,
        #: for the client's check after every read and write that the selector still
        #: watches this socket.
        self.socket_fd = -1
        self._transport_connected = False
        self._handshake_events = 0
        self._protocol: ClientProtocol | None = None
        self._setup: ConnectionSetup | None = None
        self._broker_versions: dict[int, VersionRange] = {}
        self._versions: dict[int, int] = {}

        # Requests that expect a response, oldest first (Kafka answers in order).
        self._awaiting: deque[SentRequest] = deque()
        self._outgoing: deque[OutgoingFrame] = deque()
        # Requests without response (acks=0) still being written: in flight until written.
        self._unwritten_without_response = 0

        self._addresses: list[ResolvedAddress] = []
        self._next_address = 0
        self._setup_deadline = math.inf
        self._last_activity = 0.0
        self._failed_attempts = 0
        self._closes_while_authenticating = 0
        self._reconnect_at = -math.inf
        self._last_error: KafkaError | None = None
        self._receive_buffer = bytearray(_RECEIVE_CHUNK_SIZE)
        self._receive_view = memoryview(self._receive_buffer)

    # ------------------------------------------------------------------ state

    @property
    def state(self) -> ConnectionState:
        """The current :class:`ConnectionState`."""
        return self._state

    @property
    def description(self) -> str:
        """``node N at host:port``, for messages."""
        return f"node {self.node_id} at {self.host}:{self.port}"

    @property
    def is_ready(self) -> bool:
        """Whether the connection is set up (READY)."""
        return self._state is _READY

    @property
    def is_disconnected(self) -> bool:
        """Whether there is no connection (DISCONNECTED)."""
        return self._state is _DISCONNECTED

    @property
    def in_flight_count(self) -> int:
        """Requests sent and not completed (awaiting a response, or still being written)."""
        return len(self._awaiting) + self._unwritten_without_response

    @property
    def last_error(self) -> KafkaError | None:
        """Why the last connection attempt or connection failed; None after a success."""
        return self._last_error

    @property
    def failed_attempts(self) -> int:
        """Failures since the connection was last READY (drives the reconnect backoff)."""
        return self._failed_attempts

    @property
    def api_versions(self) -> Mapping[int, int]:
        """API key -> the version chosen for this broker (empty until READY)."""
        return self._versions

    @property
    def broker_api_versions(self) -> Mapping[int, VersionRange]:
        """API key -> the version range the broker advertised (empty until ApiVersions)."""
        return self._broker_versions

    def can_send(self) -> bool:
        """Whether a request may be sent now: READY and below
        ``max_in_flight_requests_per_connection``."""
        return (
            self._state is _READY
            and len(self._awaiting) + self._unwritten_without_response  # in_flight_count
            < self._settings.max_in_flight_requests_per_connection
        )

    def can_connect(self, now: float) -> bool:
        """Whether :meth:`connect` may be called: DISCONNECTED and the reconnect backoff over."""
        return self._state is _DISCONNECTED and now >= self._reconnect_at

    def connection_delay(self, now: float) -> float:
        """Milliseconds until :meth:`connect` is allowed (0: now). While connecting or
        connected there is nothing to wait for but socket events: infinity."""
        if self._state is not _DISCONNECTED:
            return math.inf
        return max(self._reconnect_at - now, 0.0)

    def is_idle(self, now: float) -> bool:
        """Whether a READY connection has had nothing in flight and no traffic for
        ``connections_max_idle_ms`` (never, when that is -1)."""
        idle_ms = self._settings.connections_max_idle_ms
        return (
            idle_ms >= 0
            and self._state is _READY
            and self.in_flight_count == 0
            and now - self._last_activity >= idle_ms
        )

    def next_deadline(self) -> float:
        """The earliest time something happens without a socket event: the connection setup
        timeout, a request timeout or the idle close. Infinity if none."""
        state = self._state
        if state is _DISCONNECTED:
            return math.inf
        # Asked once per poll: comparisons rather than min() (a call costs more) and
        # in_flight_count written out.
        deadline = self._setup_deadline if state is _CONNECTING else math.inf
        awaiting = self._awaiting
        if awaiting and awaiting[0].deadline < deadline:
            deadline = awaiting[0].deadline
        outgoing = self._outgoing
        if outgoing and outgoing[0].in_flight.deadline < deadline:
            deadline = outgoing[0].in_flight.deadline
        if state is _READY and not awaiting and not self._unwritten_without_response:
            idle_ms = self._settings.connections_max_idle_ms
            if idle_ms >= 0 and self._last_activity + idle_ms < deadline:
                deadline = self._last_activity + idle_ms
        return deadline

    def interest(self) -> int:
        """The selector events this connection waits for (0: not registered)."""
        state = self._state
        if state is _DISCONNECTED:
            return 0
        if state is _CONNECTING:
            return self._handshake_events if self._transport_connected else EVENT_WRITE
        return EVENT_READ | EVENT_WRITE if self._outgoing else EVENT_READ

    def fileno(self) -> int:
        """The socket's file descriptor (only while not DISCONNECTED)."""
        if self._transport is None:
            raise IllegalStateError(f"{self.description} has no socket: it is disconnected")
        return self._transport.fileno()

    def adopt_node_id(self, node_id: int) -> None:
        """Give a bootstrap connection (negative id) the id of the broker the metadata says
        it reaches, so it is used as that broker's connection."""
        if self.node_id >= 0:
            raise IllegalStateError(f"{self.description} is not a bootstrap connection")
        self.node_id = node_id

    # ------------------------------------------------------------------ connecting

    def connect(self, now: float, completed: list[Completion]) -> None:
        """Start connecting (DISCONNECTED -> CONNECTING). Never raises for network trouble:
        a failure is recorded in :attr:`last_error` and the connection stays DISCONNECTED,
        in backoff."""
        if not self.can_connect(now):
            raise IllegalStateError(
                f"cannot connect {self.description}: state {self._state.value}, "
                f"reconnect allowed in {self.connection_delay(now):.0f} ms"
            )
        self._state = ConnectionState.CONNECTING
        self._setup_deadline = now + self._settings.connection_setup_timeout_ms
        self._last_activity = now
        try:
            address = self._next_resolved_address()
            self._transport = self._transport_factory(self.host, self.port, address)
            _log.debug("connecting to %s (%s)", self.description, address)
            connected = self._transport.connect()
            self.socket_fd = self._transport.fileno()
            if connected:
                self._on_transport_connected(now)
                self._write_if_queued(now, completed)
        except KafkaError as error:
            self._close(now, completed, error)

    def _next_resolved_address(self) -> ResolvedAddress:
        # Each attempt takes the next address the name resolved to (so a host whose first
        # address is unreachable, e.g. IPv6 "localhost" to an IPv4-only broker, still
        # connects); once all were tried, resolve again (the broker may have moved).
        if self._next_address >= len(self._addresses):
            self._addresses = self._resolver(self.host, self.port)
            self._next_address = 0
        address = self._addresses[self._next_address]
        self._next_address += 1
        return address

    def _on_transport_connected(self, now: float) -> None:
        self._transport_connected = True
        self._continue_handshake(now)

    def _continue_handshake(self, now: float) -> None:
        transport = self._require_transport()
        self._handshake_events = transport.handshake()
        if self._handshake_events:
            return  # TLS wants more socket events
        self._state = ConnectionState.CHECKING_API_VERSIONS
        self._protocol = ClientProtocol(
            self._settings.client_id, max_frame_size=self._settings.max_response_frame_size
        )
        self._setup = ConnectionSetup(
            self._settings, self.description, self._authenticator_factory, self.host, self.port
        )
        self._send_setup_step(self._setup.first_request(), now)

    def _on_setup_response(self, response: Response, now: float) -> None:
        setup = self._setup
        if setup is None:
            raise IllegalStateError(f"{self.description}: a setup response after the setup")
        try:
            step = setup.on_response(response)
        finally:
            # Also when it raised: a SASL failure closes from AUTHENTICATING (a refusal).
            self._broker_versions = setup.broker_versions
            self._versions = setup.versions
            if setup.authenticating:
                self._state = ConnectionState.AUTHENTICATING
        self._send_setup_step(step, now)

    def _send_setup_step(self, step: SetupRequest | None, now: float) -> None:
        if step is None:
            self._become_ready(now)
            return
        request, version = step
        self._enqueue(request, version, now, None, self._on_setup_response)

    def _become_ready(self, now: float) -> None:
        self._state = ConnectionState.READY
        self._setup = None
        self._setup_deadline = math.inf
        self._failed_attempts = 0
        self._closes_while_authenticating = 0
        self._last_error = None
        self._last_activity = now
        _log.debug("%s is ready (versions: %s)", self.description, self._versions)

    # ------------------------------------------------------------------ sending

    def send(
        self,
        request: Request,
        now: float,
        completed: list[Completion],
        on_complete: OnComplete | None = None,
        *,
        version: int | None = None,
    ) -> int:
        """Queue ``request`` (at the version chosen for this broker unless ``version`` is
        given) and write as much of it as the socket takes. Returns its correlation id.

        Its outcome is appended to ``completed`` later (or at once for a request without
        response that was written whole). Raises IllegalStateError unless :meth:`can_send`,
        NoCompatibleVersionError if the broker supports no version of the API, and
        EncodeError if the request does not encode at that version.
        """
        if not (  # can_send(), written out: once per request
            self._state is _READY
            and len(self._awaiting) + self._unwritten_without_response
            < self._settings.max_in_flight_requests_per_connection
        ):
            raise IllegalStateError(
                f"cannot send {api_name(request.API_KEY)} to {self.description}: "
                f"state {self._state.value}, {self.in_flight_count} of "
                f"{self._settings.max_in_flight_requests_per_connection} requests in flight"
            )
        if version is None:
            chosen = self._versions.get(request.API_KEY)
            if chosen is None:
                raise NoCompatibleVersionError(
                    f"{api_name(request.API_KEY)}: {self.description} shares no version of "
                    "this API with kafkaline"
                )
            version = chosen
        in_flight = self._enqueue(request, version, now, on_complete, None)
        if self._outgoing[0].in_flight is in_flight:
            # Nothing was queued before: write now rather than after the next select.
            # (_write_or_close(), written out: once per request.)
            try:
                self._write(now, completed)
            except KafkaConnectionError as error:
                self._close(now, completed, error)
        return in_flight.correlation_id

    def _enqueue(
        self,
        request: Request,
        version: int,
        now: float,
        on_complete: OnComplete | None,
        setup_handler: Callable[[Response, float], None] | None,
    ) -> SentRequest:
        protocol = self._protocol
        if protocol is None:
            protocol = self._require_protocol()  # raises
        buffers = protocol.send_buffers(request, version)
        in_flight = SentRequest(
            request,
            version,
            protocol.last_correlation_id,
            now,
            now + self._settings.request_timeout_ms,
            on_complete,
            setup_handler,
        )
        if in_flight.expects_response:
            self._awaiting.append(in_flight)
        else:
            self._unwritten_without_response += 1
        # Views: the frame's bytes (and the record batches it references) are never copied
        # again, only sliced as written.
        self._outgoing.append(OutgoingFrame(buffers, in_flight))
        self._last_activity = now
        return in_flight

    def _write_or_close(self, now: float, completed: list[Completion]) -> None:
        try:
            self._write(now, completed)
        except KafkaConnectionError as error:
            self._close(now, completed, error)

    def _write(self, now: float, completed: list[Completion]) -> None:
        transport = self._transport
        if transport is None:
            transport = self._require_transport()  # raises
        outgoing = self._outgoing
        if len(outgoing) == 1 and len(outgoing[0].views) == 1 and not outgoing[0].first:
            # One request of one buffer, none of it written (records sent one at a time):
            # _write_frames() written out for it, the I/O thread's usual write.
            frame = outgoing[0]
            views = frame.views
            view = views[0]
            written = transport.send(views)
            if written == 0:
                return
            self._last_activity = now
            if written < len(view):
                views[0] = view[written:]
                return  # the socket took less than offered: its buffer is full
            view.release()
            outgoing.popleft()
            in_flight = frame.in_flight
            if not in_flight.expects_response:
                self._unwritten_without_response -= 1
                completed.append(self._completion(in_flight, None, None, now))
            return
        self._write_frames(transport, now, completed)

    def _write_frames(self, transport: Transport, now: float, completed: list[Completion]) -> None:
        """Write queued requests, several buffers each (scattered batches) or several
        requests, until the socket takes no more."""
        outgoing = self._outgoing
        while outgoing:
            if len(outgoing) == 1:
                buffers = outgoing[0].unwritten()
            else:
                buffers = []
                for frame in outgoing:
                    buffers += frame.unwritten()
                    if len(buffers) >= _MAX_BUFFERS_PER_WRITE:
                        del buffers[_MAX_BUFFERS_PER_WRITE:]
                        break
            written = transport.send(buffers)
            if written == 0:
                return
            self._last_activity = now
            while written:
                frame = outgoing[0]
                views = frame.views
                index = frame.first
                count = len(views)
                while index < count and written:
                    view = views[index]
                    size = len(view)
                    if written < size:
                        views[index] = view[written:]
                        frame.first = index
                        return  # the socket took less than offered: its buffer is full
                    written -= size
                    view.release()
                    index += 1
                frame.first = index
                if index < count:
                    break  # all that was offered was taken: offer the rest
                outgoing.popleft()
                in_flight = frame.in_flight
                if not in_flight.expects_response:
                    self._unwritten_without_response -= 1
                    completed.append(self._completion(in_flight, None, None, now))

    # ------------------------------------------------------------------ events

    def handle_events(self, events: int, now: float, completed: list[Completion]) -> None:
        """Act on selector ``events`` for this connection's socket: finish connecting, write
        queued requests, read responses. Failures close the connection (in-flight requests
        fail with a connection error); they are not raised."""
        try:
            state = self._state
            if state is _DISCONNECTED:
                return
            if state is _CONNECTING:
                if self._transport_connected:
                    self._continue_handshake(now)
                else:
                    self._require_transport().finish_connect()
                    self._on_transport_connected(now)
            elif events & EVENT_READ:
                self._read(now, completed)
            # Also writes what setup just queued (ApiVersions, the next SASL step) at once,
            # rather than one select later. (_write_if_queued(), written out: once per read.)
            if self._outgoing:
                state = self._state
                if state is not _DISCONNECTED and state is not _CONNECTING:
                    self._write(now, completed)
        except KafkaError as error:
            self._close(now, completed, error)

    def _write_if_queued(self, now: float, completed: list[Completion]) -> None:
        state = self._state
        if self._outgoing and state is not _DISCONNECTED and state is not _CONNECTING:
            self._write(now, completed)

    def _read(self, now: float, completed: list[Completion]) -> None:
        transport = self._transport
        if transport is None:
            transport = self._require_transport()  # raises
        protocol = self._protocol
        if protocol is None:
            protocol = self._require_protocol()  # raises
        view = self._receive_view
        for _ in range(_MAX_READS_PER_EVENT):
            count = transport.recv_into(view)
            if count == 0:
                return
            self._last_activity = now
            protocol.receive_data(view[:count])
            while (item := protocol.next_response()) is not None:
                self._dispatch_response(item[0], item[1], now, completed)
                if self._state is _DISCONNECTED:
                    return
            if count < len(view):
                return  # the socket had no more

    def _dispatch_response(
        self, correlation_id: int, response: Response, now: float, completed: list[Completion]
    ) -> None:
        if not self._awaiting or self._awaiting[0].correlation_id != correlation_id:
            # ClientProtocol checks the order already; this guards our own bookkeeping.
            raise CorrelationIdMismatchError(
                f"{self.description}: response with correlation id {correlation_id} matches "
                "no request awaiting one"
            )
        in_flight = self._awaiting.popleft()
        if in_flight.setup_handler is not None:
            in_flight.setup_handler(response, now)
        else:
            completed.append(self._completion(in_flight, response, None, now))

    # ------------------------------------------------------------------ timeouts, closing

    def check_timeouts(self, now: float, completed: list[Completion]) -> None:
        """Close the connection if its setup or its oldest request ran out of time. Every
        request in flight then fails with a timeout error naming the one that expired."""
        state = self._state
        if state is _DISCONNECTED:
            return
        if state is _CONNECTING and now >= self._setup_deadline:
            timeout = self._settings.connection_setup_timeout_ms
            self._close(
                now,
                completed,
                ConnectionSetupTimeoutError(
                    f"connection to {self.description} was not set up within {timeout} ms "
                    "(connection setup timeout)"
                ),
            )
            return
        expired = self._oldest_expired_request(now)
        if expired is not None:
            self._close(
                now,
                completed,
                RequestTimeoutError(
                    f"{expired.describe()} got no response within request_timeout_ms="
                    f"{self._settings.request_timeout_ms}; closed the connection to "
                    f"{self.description}"
                ),
            )

    def _oldest_expired_request(self, now: float) -> SentRequest | None:
        candidates = []
        if self._awaiting:
            candidates.append(self._awaiting[0])
        if self._outgoing:
            candidates.append(self._outgoing[0].in_flight)
        expired = [in_flight for in_flight in candidates if in_flight.deadline <= now]
        return min(expired, key=lambda in_flight: in_flight.deadline) if expired else None

    def close(self, now: float, completed: list[Completion]) -> None:
        """Close the connection on purpose (idle, removed from the cluster, client closing):
        not a failure, so no reconnect backoff. Requests in flight fail with a
        KafkaConnectionError."""
        self._close(now, completed, None)

    def _close(self, now: float, completed: list[Completion], reason: KafkaError | None) -> None:
        if self._transport is not None:
            self._transport.close()
        previous_state = self._state
        self._transport = None
        self.socket_fd = -1
        self._transport_connected = False
        self._handshake_events = 0
        self._protocol = None
        self._setup = None
        self._state = ConnectionState.DISCONNECTED
        self._setup_deadline = math.inf
        if previous_state is not _READY:
            self._versions = {}
        in_flight = [
            frame.in_flight for frame in self._outgoing if not frame.in_flight.expects_response
        ]
        in_flight.extend(self._awaiting)
        in_flight.sort(key=lambda request: request.sent_at)
        for frame in self._outgoing:
            for view in frame.unwritten():
                view.release()
        self._outgoing.clear()
        self._awaiting.clear()
        self._unwritten_without_response = 0
        for request in in_flight:
            if request.setup_handler is None:
                error = self._request_error(request, reason)
                completed.append(self._completion(request, None, error, now))
        if reason is None:
            self._reconnect_at = now
            _log.debug("closed %s", self.description)
            return
        if previous_state is _AUTHENTICATING:
            reason = self._maybe_refusal(reason)
        # A failure: back off exponentially, with jitter, before the next attempt.
        delay = self._settings.reconnect_backoff.next_delay(self._failed_attempts, self._rng)
        self._failed_attempts += 1
        self._reconnect_at = now + delay
        self._last_error = reason
        if isinstance(reason, AuthenticationError):
            _log.error("connection to %s refused: %s", self.description, reason)
            return
        _log.warning(
            "connection to %s failed (%s, %d request(s) in flight); reconnecting in %d ms: %s",
            self.description,
            previous_state.value,
            len(in_flight),
            delay,
            reason,
        )

    def _maybe_refusal(self, reason: KafkaError) -> KafkaError:
        """A close by the broker during SASL, the Nth in a row: a refusal, not bad luck."""
        if isinstance(reason, (AuthenticationError, KafkaTimeoutError)) or not isinstance(
            reason, KafkaConnectionError
        ):
            return reason
        self._closes_while_authenticating += 1
        count = self._closes_while_authenticating
        if count < _AUTHENTICATION_CLOSES_BEFORE_REFUSAL:
            return reason
        refusal = SaslAuthenticationError(
            f"{self.description} closed the connection during SASL authentication {count} "
            "times in a row: it refuses this client (a mechanism it does not offer, or "
            f"credentials it rejects without an answer); last: {reason}"
        )
        refusal.__cause__ = reason
        return refusal

    def _request_error(self, request: SentRequest, reason: KafkaError | None) -> KafkaError:
        # One exception object per request: each may be raised in a different thread.
        what = f"{request.describe()} to {self.description}"
        if reason is None:
            return KafkaConnectionError(f"{what} failed: the connection was closed by the client")
        error: KafkaError
        if isinstance(reason, RequestTimeoutError):
            error = RequestTimeoutError(f"{what} failed: {reason}")
        else:
            error = KafkaConnectionError(f"{what} failed: connection lost: {reason}")
        error.__cause__ = reason
        return error

    # ------------------------------------------------------------------ helpers

    def _completion(
        self,
        in_flight: SentRequest,
        response: Response | None,
        error: KafkaError | None,
        now: float,
    ) -> Completion:
        # By position (ClientResponse's field order): keywords are slower, once per response
        # (see docs/performance.md, Notes moved from the code).
        return (
            ClientResponse(
                self.node_id,
                in_flight.request,
                in_flight.version,
                in_flight.correlation_id,
                response,
                error,
                in_flight.sent_at,
                now,
            ),
            in_flight.on_complete,
        )

    # The per-request paths (_enqueue, _write, _read) read the attribute themselves and call
    # these only to raise: a Python call less each, on the I/O thread.
    def _require_transport(self) -> Transport:
        if self._transport is None:
            raise KafkaConnectionError(f"{self.description} is not connected")
        return self._transport

    def _require_protocol(self) -> ClientProtocol:
        if self._protocol is None:
            raise KafkaConnectionError(f"{self.description} is not connected")
        return self._protocol

    def __repr__(self) -> str:
        return (
            f"<BrokerConnection {self.description} {self._state.value} "
            f"in_flight={self.in_flight_count}>"
        )
