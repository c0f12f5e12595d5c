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

Requests on their way out and in flight are kept in a
:class:`~kafkaline.net.request_queue.RequestQueue`; what is sent between TCP up and READY
(ApiVersions, SASL) is decided by a :class:`~kafkaline.net.connection_setup.ConnectionSetup`.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping

from kafkaline.config import UniformRandom
from kafkaline.errors import (
    AuthenticationError,
    IllegalStateError,
    KafkaConnectionError,
    KafkaError,
    NoCompatibleVersionError,
)
from kafkaline.net.connection_setup import (
    ConnectionSetup,
    counts_toward_refusal,
    sasl_refusal,
    setup_timeout,
)
from kafkaline.net.connection_types import (
    Authenticator,
    AuthenticatorFactory,
    Completion,
    ConnectionState,
    SentRequest,
    SetupRequest,
)
from kafkaline.net.request_queue import RequestQueue, request_timeout, unmatched_response
from kafkaline.net.response import OnComplete
from kafkaline.net.settings import NetworkSettings
from kafkaline.net.transport import (
    EVENT_READ,
    EVENT_WRITE,
    AddressRotation,
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


# The states as module globals for the I/O thread's checks (next_deadline, interest, can_send,
# handle_events): on Python 3.11 reading an enum member from its class goes through
# EnumType.__getattr__, much slower than a global (docs/performance.md, Notes moved from the code).
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

        self._requests = RequestQueue()

        self._addresses = AddressRotation(host, port, resolver)
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
        return self._requests.in_flight_count

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
        requests = self._requests
        return (
            self._state is _READY
            and len(requests.awaiting) + requests.unwritten_without_response  # in_flight_count
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
        requests = self._requests
        awaiting = requests.awaiting
        if awaiting and awaiting[0].deadline < deadline:
            deadline = awaiting[0].deadline
        outgoing = requests.outgoing
        if outgoing and outgoing[0].deadline < deadline:
            deadline = outgoing[0].deadline
        if state is _READY and not awaiting and not requests.unwritten_without_response:
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
        return EVENT_READ | EVENT_WRITE if self._requests.outgoing else EVENT_READ

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
            address = self._addresses.next_address()
            self._transport = self._transport_factory(self.host, self.port, address)
            _log.debug("connecting to %s (%s)", self.description, address)
            connected = self._transport.connect()
            self.socket_fd = self._transport.fileno()
            if connected:
                self._on_transport_connected(now)
                self._write_if_queued(now, completed)
        except KafkaError as error:
            self._close(now, completed, error)

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
        requests = self._requests
        if not (  # can_send(), written out: once per request
            self._state is _READY
            and len(requests.awaiting) + requests.unwritten_without_response
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
        if requests.outgoing[0] is in_flight:
            # Nothing was queued before: write now rather than after the next select.
            # (_write_or_close() and _write(), written out: once per request; _enqueue()
            # already set the activity time to now.)
            try:
                transport = self._transport
                if transport is None:
                    transport = self._require_transport()  # raises
                requests.write(transport, self.node_id, now, completed)
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
        sent = protocol.last_sent
        in_flight = SentRequest(
            request,
            version,
            sent.correlation_id,
            now,
            now + self._settings.request_timeout_ms,
            on_complete,
            setup_handler,
            sent.expects_response,
            # Views: the frame's bytes (and the record batches it references) are never
            # copied again, only sliced as written.
            buffers,
        )
        requests = self._requests
        if in_flight.expects_response:
            requests.awaiting.append(in_flight)
        else:
            requests.unwritten_without_response += 1
        requests.outgoing.append(in_flight)
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
        if self._requests.write(transport, self.node_id, now, completed):
            self._last_activity = now

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
            if self._requests.outgoing:
                state = self._state
                if state is not _DISCONNECTED and state is not _CONNECTING:
                    self._write(now, completed)
        except KafkaError as error:
            self._close(now, completed, error)

    def _write_if_queued(self, now: float, completed: list[Completion]) -> None:
        state = self._state
        if self._requests.outgoing and state is not _DISCONNECTED and state is not _CONNECTING:
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
                if not self._requests.dispatch(item[0], item[1], self.node_id, now, completed):
                    raise unmatched_response(self.description, item[0])
                if self._state is _DISCONNECTED:
                    return
            if count < len(view):
                return  # the socket had no more

    # ------------------------------------------------------------------ timeouts, closing

    def check_timeouts(self, now: float, completed: list[Completion]) -> None:
        """Close the connection if its setup or its oldest request ran out of time. Every
        request in flight then fails with a timeout error naming the one that expired."""
        state = self._state
        if state is _DISCONNECTED:
            return
        if state is _CONNECTING and now >= self._setup_deadline:
            timeout = self._settings.connection_setup_timeout_ms
            self._close(now, completed, setup_timeout(self.description, timeout))
            return
        expired = self._requests.oldest_expired(now)
        if expired is not None:
            timeout = self._settings.request_timeout_ms
            self._close(now, completed, request_timeout(expired, timeout, self.description))

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
        in_flight_count = self._requests.fail_all(
            self.node_id, self.description, reason, now, completed
        )
        if reason is None:
            self._reconnect_at = now
            _log.debug("closed %s", self.description)
            return
        if previous_state is _AUTHENTICATING and counts_toward_refusal(reason):
            # A close by the broker during SASL, the Nth in a row: a refusal, not bad luck.
            self._closes_while_authenticating += 1
            reason = sasl_refusal(self.description, self._closes_while_authenticating, reason)
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
            in_flight_count,
            delay,
            reason,
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
