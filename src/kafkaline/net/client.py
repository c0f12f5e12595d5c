"""NetworkClient: every broker connection of one producer, driven by one I/O thread.

The producer's Sender thread is the I/O thread. Its loop (Java's ``Sender.runOnce``) is::

    now = client.now()
    for node_id in nodes_with_ready_batches:
        if not client.ready(node_id, now):          # starts connecting if it may
            wait = min(wait, client.connection_delay(node_id, now))
    for node_id, request in produce_requests:       # built from drained batches
        client.send(node_id, request, on_complete=handle_produce_response, now=now)
    client.poll(wait, now)                           # I/O; completes requests via callbacks

Other threads never touch sockets: they read the immutable
:attr:`Metadata.cluster <kafkaline.net.metadata.Metadata.cluster>`, block in
:meth:`Metadata.wait_for_topic <kafkaline.net.metadata.Metadata.wait_for_topic>`, and call
:meth:`NetworkClient.wakeup` to interrupt a poll (new data to send, flush, close).

Authentication failures are fatal: once a connection fails with an
:class:`~kafkaline.errors.AuthenticationError` (TLS verification, SASL refusal), :meth:`poll`
raises it, then and on every later call, and the client connects no more. Retrying would fail the
same way; raising lets the Sender stop and fail every pending record with it within seconds,
rather than retrying until ``delivery_timeout_ms``.

The client keeps metadata fresh by itself: each :meth:`NetworkClient.poll` sends a
MetadataRequest to the least loaded node when :class:`~kafkaline.net.metadata.Metadata` says
one is due, and adds or removes connections as the brokers in the metadata change. Before the
first metadata, the bootstrap servers are the nodes (ids -1, -2, ...), tried in turn until one
answers. With ``metadata_recovery_strategy="rebootstrap"`` (the default, KIP-899) the client goes
back to them when no known broker can be reached, or when refreshes have failed for
``metadata_recovery_rebootstrap_trigger_ms`` (KIP-1102).
"""

from __future__ import annotations

import logging
import math
import random
import time
from collections.abc import Callable, Mapping

from kafkaline.config import ProducerConfig, UniformRandom
from kafkaline.errors import AuthenticationError, IllegalStateError, KafkaError
from kafkaline.net.cluster import ClusterMetadata
from kafkaline.net.connection import (
    AuthenticatorFactory,
    BrokerConnection,
    Completion,
    ConnectionState,
)
from kafkaline.net.metadata import Metadata
from kafkaline.net.node_choice import bootstrap_connection_to, least_loaded, should_rebootstrap
from kafkaline.net.poller import Poller, new_poller
from kafkaline.net.response import ClientResponse, InternalCallback, OnComplete, run_callbacks
from kafkaline.net.security import (
    authenticator_factory_from_config,
    transport_factory_from_config,
)
from kafkaline.net.settings import NetworkSettings, shortest_deadline_span
from kafkaline.net.transport import TransportFactory, tcp_transport_factory
from kafkaline.net.wakeup import Wakeup
from kafkaline.protocol import Request
from kafkaline.protocol.api import MetadataResponse

_log = logging.getLogger(__name__)


def monotonic_ms() -> float:
    """The client's default clock: monotonic time in milliseconds."""
    return time.monotonic() * 1000.0


class NetworkClient:
    """Connections to every broker, multiplexed with epoll (or :mod:`selectors` where there is
    no epoll) in the I/O thread.

    Thread safety: only the I/O thread calls :meth:`poll`, :meth:`send`, :meth:`ready`,
    :meth:`close` and the other methods; :meth:`wakeup` and :attr:`metadata`
    (:class:`Metadata`) are safe from any thread. To close from another thread, tell the I/O
    thread (and :meth:`wakeup` it) so that it closes the client and stops.

    Every method deciding something by time takes ``now`` (monotonic milliseconds,
    :func:`monotonic_ms`), so tests can use a fake clock.

    Example (single-threaded: the poll loop stands in for the Sender)::

        client = NetworkClient.from_config(ProducerConfig(bootstrap_servers="127.0.0.1:9092"))
        client.metadata.add_topic("events", client.now())
        while not client.metadata.cluster.has_topic("events"):
            client.poll(100)
        leader = client.metadata.cluster.leader_for(TopicPartition("events", 0))
        while not client.ready(leader.node_id, client.now()):
            client.poll(100)
        client.send(leader.node_id, produce_request, on_complete=print)
        while client.in_flight_request_count():
            client.poll(100)                        # calls print(ClientResponse(...))
        client.close()
    """

    def __init__(
        self,
        settings: NetworkSettings,
        *,
        clock: Callable[[], float] = monotonic_ms,
        transport_factory: TransportFactory | None = None,
        authenticator_factory: AuthenticatorFactory | None = None,
        rng: UniformRandom | None = None,
    ) -> None:
        self._settings = settings
        self._clock = clock
        #: The client's clock: ``now()`` is monotonic milliseconds. The clock itself rather
        #: than a method calling it: the Sender reads it once per pass, twice per record sent
        #: one at a time.
        self.now: Callable[[], float] = clock
        self._rng: UniformRandom = rng if rng is not None else random.Random()
        self._transport_factory = transport_factory or tcp_transport_factory(
            settings.socket_options
        )
        self._authenticator_factory = authenticator_factory
        self._connections: dict[int, BrokerConnection] = {}
        # Connections to nodes the metadata no longer names, closed once their requests end.
        self._retiring: list[BrokerConnection] = []
        # Connection -> (file descriptor, events) as registered with the selector.
        self._registered: dict[BrokerConnection, tuple[int, int]] = {}
        self._completed: list[Completion] = []
        self._metadata_callback = InternalCallback(self._handle_metadata_response)
        self._next_node_offset = 0
        self._closed = False
        #: How often the client went back to the bootstrap servers (KIP-899).
        self.rebootstrap_count = 0
        self._fatal_error: AuthenticationError | None = None
        # No connection deadline (setup, request or idle timeout) comes before this time: see
        # _deadline_bound_at. Every deadline made at time t is at least t + _deadline_span.
        self._deadline_bound = -math.inf
        self._deadline_span = shortest_deadline_span(settings)
        self._poller: Poller = new_poller()
        try:
            self._wakeup = Wakeup(self._poller)
        except BaseException:
            self._poller.close()
            raise
        #: Interrupt a :meth:`poll` that is waiting (or make the next one return at once).
        #: Safe from any thread; cheap when a wakeup is already pending. The wakeup's own
        #: method rather than one calling it: send() may call it once per record.
        self.wakeup: Callable[[], None] = self._wakeup.wakeup
        self.metadata = Metadata(
            ClusterMetadata.bootstrap(settings.bootstrap_servers),
            max_age_ms=settings.metadata_max_age_ms,
            refresh_backoff=settings.metadata_refresh_backoff,
            topic_expiry_ms=settings.topic_expiry_ms,
            allow_auto_topic_creation=settings.allow_auto_topic_creation,
            clock=clock,
            rng=self._rng,
            wakeup=self.wakeup,
        )
        self._sync_nodes(self.metadata.cluster, clock())

    @classmethod
    def from_config(
        cls,
        config: ProducerConfig,
        *,
        clock: Callable[[], float] = monotonic_ms,
        transport_factory: TransportFactory | None = None,
        authenticator_factory: AuthenticatorFactory | None = None,
    ) -> NetworkClient:
        """A client for a producer configuration (see :meth:`NetworkSettings.from_config`).

        Its transports (TCP or TLS) and SASL authenticator follow the configuration's
        ``security_protocol`` unless given here. Raises ConfigError if the TLS files cannot be
        loaded.
        """
        if transport_factory is None:
            transport_factory = transport_factory_from_config(config)
        if authenticator_factory is None:
            authenticator_factory = authenticator_factory_from_config(config)
        return cls(
            NetworkSettings.from_config(config),
            clock=clock,
            transport_factory=transport_factory,
            authenticator_factory=authenticator_factory,
        )

    # ------------------------------------------------------------------ queries

    @property
    def settings(self) -> NetworkSettings:
        """The settings the client was made with."""
        return self._settings

    @property
    def node_ids(self) -> tuple[int, ...]:
        """The nodes the client may connect to (the brokers in the metadata, or before it
        the bootstrap addresses as -1, -2, ...)."""
        return tuple(self._connections)

    def connection_state(self, node_id: int) -> ConnectionState:
        """The state of the connection to ``node_id``."""
        return self._connection(node_id).state

    def connection_error(self, node_id: int) -> KafkaError | None:
        """Why the last connection to ``node_id`` failed (None if it did not)."""
        return self._connection(node_id).last_error

    @property
    def fatal_error(self) -> AuthenticationError | None:
        """The authentication failure that stopped the client (see the module docstring)."""
        return self._fatal_error

    def api_versions(self, node_id: int) -> Mapping[int, int]:
        """API key -> version chosen for ``node_id`` (empty until it is READY)."""
        return self._connection(node_id).api_versions

    def in_flight_request_count(self, node_id: int | None = None) -> int:
        """Requests in flight to ``node_id``, or to every node."""
        if node_id is not None:
            return self._connection(node_id).in_flight_count
        return sum(conn.in_flight_count for conn in self._all_connections())

    def is_ready(self, node_id: int, now: float) -> bool:
        """Whether a request may be sent to ``node_id`` now: connected, below the in-flight
        limit (``can_send``), and no metadata refresh is due (it goes first, as in Java)."""
        return self._connection(node_id).can_send() and not self.metadata.is_update_due(now)

    def ready(self, node_id: int, now: float) -> bool:
        """:meth:`is_ready`, and if the node is disconnected and out of backoff, start
        connecting to it."""
        conn = self._connections.get(node_id)
        if conn is None:
            # A broker first named by a leader hint (KIP-951) rather than by a refresh.
            self._sync_nodes(self.metadata.cluster, now)
            conn = self._connection(node_id)  # raises naming the known nodes
        # is_ready(), written out: the Sender asks once per node with a ready batch.
        if conn.can_send() and self.metadata.time_to_next_update(now) != 0:
            return True
        if conn.can_connect(now):
            self._connect(conn, now)
        return False

    def connection_delay(self, node_id: int, now: float) -> float:
        """Milliseconds before a connection to ``node_id`` may be attempted (0: now);
        infinity while connecting or connected (wait for socket events)."""
        return self._connection(node_id).connection_delay(now)

    def least_loaded_node(self, now: float) -> int | None:
        """The node to send a request any broker can answer (metadata): a ready node with the
        fewest requests in flight, else one that is connecting, else one that may connect
        now. None when every node is in reconnect backoff. The search starts at a rotating
        offset so that the bootstrap servers are tried in turn."""
        nodes = list(self._connections.values())
        if not nodes:
            return None
        offset = self._next_node_offset % len(nodes)
        self._next_node_offset += 1
        chosen = least_loaded(nodes, offset, now)
        return chosen.node_id if chosen is not None else None

    # ------------------------------------------------------------------ sending

    def send(
        self,
        node_id: int,
        request: Request,
        on_complete: OnComplete | None = None,
        now: float | None = None,
        *,
        version: int | None = None,
    ) -> int:
        """Send ``request`` to ``node_id`` (which must be :meth:`ready`) at the version chosen
        for that broker (or ``version``). Returns the correlation id.

        The request is written at once if the socket takes it. ``on_complete`` is called in
        the I/O thread, during a later :meth:`poll`, with the :class:`ClientResponse`: the
        response, a connection or timeout error, or (for a request without response, acks=0)
        neither once it is written. Raises IllegalStateError if the node cannot take a
        request now, NoCompatibleVersionError or EncodeError if the request cannot be
        encoded for that broker.
        """
        if self._closed:
            self._check_open()  # raises
        if now is None:
            now = self._clock()
        conn = self._connections.get(node_id)
        if conn is None:
            conn = self._connection(node_id)  # raises naming the known nodes
        if now + self._deadline_span < self._deadline_bound:
            self._deadline_bound = now + self._deadline_span  # a clock that went back (tests)
        correlation_id = conn.send(request, now, self._completed, on_complete, version=version)
        self._after_io(conn)
        return correlation_id

    # ------------------------------------------------------------------ polling

    def poll(self, timeout_ms: float, now: float | None = None) -> list[ClientResponse]:
        """Do the network I/O: refresh metadata if due, wait up to ``timeout_ms`` for socket
        events (less if a timeout or refresh comes sooner; a :meth:`wakeup` cuts it short),
        finish connections, write requests, read responses, expire timed-out requests and
        close idle connections. Then call the completed requests' callbacks and return
        their responses (the client's own metadata requests excluded).

        If callbacks raise, every callback still runs; the first exception is raised after.
        Raises the :class:`~kafkaline.errors.AuthenticationError` that made the client fatal,
        once it is (after running the callbacks of that poll).
        """
        if self._closed:
            self._check_open()
        if self._fatal_error is not None:
            raise self._fatal_error
        if now is None:
            now = self._clock()
        # Comparisons rather than min() here and in _next_deadline: a min() call costs more
        # than the comparisons, twice per record sent one at a time.
        timeout = self.metadata.time_to_next_update(now)
        if timeout <= 0:
            timeout = self._maybe_update_metadata(now)
        if timeout_ms < timeout:
            timeout = timeout_ms
        # The connections are scanned for timeouts only once the earliest deadline may have passed,
        # and their deadlines are looked up only when the bound found last time has passed: a scan
        # per poll was a visible share of the I/O thread's work (see docs/performance.md, Notes
        # moved from the code).
        deadline = self._deadline_bound
        if now >= deadline:
            deadline = self._deadline_bound_at(now)
        if deadline - now < timeout:
            timeout = deadline - now
        if self._completed or timeout <= 0:
            timeout = 0
        events = self._poller.select(timeout)
        now = self._clock()
        completed = self._completed
        for conn, mask in events:
            if conn is None:
                self._wakeup.drain()
            else:
                conn.handle_events(mask, now, completed)
                self._after_io(conn)
        if now >= deadline or self._retiring:
            self._handle_timeouts(now)
        if self._completed:
            completed, self._completed = self._completed, []
            responses = run_callbacks(completed)
        else:
            responses = []
        if self._fatal_error is not None:
            raise self._fatal_error
        return responses

    def _raise_if_fatal(self) -> None:
        if self._fatal_error is not None:
            raise self._fatal_error

    # ------------------------------------------------------------------ closing

    def close(self) -> list[ClientResponse]:
        """Close every connection and socket (no file descriptor is left open) and wake
        threads waiting for metadata. Requests in flight fail with a KafkaConnectionError;
        their callbacks run, and their responses are returned. Idempotent."""
        if not self._wakeup.stop():
            return []
        self._closed = True
        now = self._clock()
        try:
            for conn in self._all_connections():
                conn.close(now, self._completed)
                self._after_io(conn)
            self._connections.clear()
            self._retiring.clear()
            self.metadata.close()
        finally:
            self._release_os_resources()
        completed, self._completed = self._completed, []
        return run_callbacks(completed)

    def _release_os_resources(self) -> None:
        self._poller.close()
        self._wakeup.close()

    def __enter__(self) -> NetworkClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ------------------------------------------------------------------ internals

    def _check_open(self) -> None:
        if self._closed:
            raise IllegalStateError("the network client is closed")

    def _connection(self, node_id: int) -> BrokerConnection:
        try:
            return self._connections[node_id]
        except KeyError:
            known = ", ".join(str(node) for node in self._connections) or "none"
            raise IllegalStateError(
                f"node {node_id} is not in the cluster metadata (known nodes: {known})"
            ) from None

    def _all_connections(self) -> list[BrokerConnection]:
        return [*self._connections.values(), *self._retiring]

    def _connect(self, conn: BrokerConnection, now: float) -> None:
        if self._fatal_error is not None:
            return  # authentication failed: connecting again would fail the same way
        if now + self._deadline_span < self._deadline_bound:
            self._deadline_bound = now + self._deadline_span  # a clock that went back (tests)
        conn.connect(now, self._completed)
        self._after_io(conn)

    def _after_io(self, conn: BrokerConnection) -> None:
        """Keep the selector registration in step with what ``conn`` waits for. Must run
        after anything that may close a connection and before any new socket is made, so
        a reused file descriptor number is never confused with the closed one."""
        events = conn.interest()
        registered = self._registered.get(conn)
        if registered is not None and events and registered == (conn.socket_fd, events):
            # Open, same socket, same interest: the common case after a read or a write. (A
            # connection that failed is closed, interest 0, and reaches the checks below.)
            return
        error = conn.last_error
        if isinstance(error, AuthenticationError) and self._fatal_error is None:
            self._fatal_error = error
        if events == 0:
            if registered is not None:
                del self._registered[conn]
                # Also fine after the socket was closed: the selector forgets the fd.
                self._poller.unregister(registered[0])
                if conn.last_error is not None:
                    # A broker went away: the cluster may have changed (Java does the same).
                    self.metadata.request_update()
            return
        fd = conn.fileno()
        if registered is None:
            self._poller.register(fd, events, conn)
        elif registered[0] != fd:
            self._poller.unregister(registered[0])
            self._poller.register(fd, events, conn)
        elif registered[1] != events:
            self._poller.modify(fd, events, conn)
        else:
            return
        self._registered[conn] = (fd, events)

    def _deadline_bound_at(self, now: float) -> float:
        """A time no connection deadline comes before, as late as is known at ``now``: the
        earliest deadline now, or ``now + _deadline_span``, which every deadline made from
        now on (a request sent, a connection started, activity) is at least. Kept in
        ``_deadline_bound``; a clock that goes back (tests) lowers it when a request is sent
        or a connection is started."""
        deadline = self._next_deadline()
        if now + self._deadline_span < deadline:
            deadline = now + self._deadline_span
        self._deadline_bound = deadline
        return deadline

    def _next_deadline(self) -> float:
        deadline = math.inf
        for conn in (*self._connections.values(), *self._retiring):
            conn_deadline = conn.next_deadline()
            if conn_deadline < deadline:
                deadline = conn_deadline
        return deadline

    def _handle_timeouts(self, now: float) -> None:
        for conn in self._all_connections():
            conn.check_timeouts(now, self._completed)
            if conn.is_idle(now):
                _log.debug("closing %s: idle for connections_max_idle_ms", conn.description)
                conn.close(now, self._completed)
            self._after_io(conn)
        if self._retiring:
            for conn in [conn for conn in self._retiring if conn.in_flight_count == 0]:
                conn.close(now, self._completed)
                self._after_io(conn)
                self._retiring.remove(conn)

    # ------------------------------------------------------------------ metadata

    def _maybe_update_metadata(self, now: float) -> float:
        """Send a metadata request if one is due; the time until the next is due."""
        wait = self.metadata.time_to_next_update(now)
        if wait > 0:
            return wait
        if now + self._deadline_span < self._deadline_bound:
            self._deadline_bound = now + self._deadline_span  # a clock that went back (tests)
        if self._should_rebootstrap(now, unreachable=False):
            failing = self.metadata.failing_for_ms(now)
            self._rebootstrap(now, f"metadata refreshes have failed for {failing:.0f} ms")
        wait = self._send_metadata_request(now)
        if wait != math.inf and self._should_rebootstrap(now, unreachable=True):
            # No known broker can be reached: go back to the bootstrap servers (KIP-899).
            self._rebootstrap(now, "no known broker is reachable")
            wait = self._send_metadata_request(now)
        return wait

    def _should_rebootstrap(self, now: float, *, unreachable: bool) -> bool:
        """Whether to forget the known brokers for the bootstrap servers: every one of them
        is in reconnect backoff (``unreachable``), or refreshes have failed for
        ``metadata_recovery_rebootstrap_trigger_ms`` (KIP-1102). Never from the bootstrap
        view itself: its connections keep their backoff."""
        return should_rebootstrap(self._settings, self.metadata, now, unreachable=unreachable)

    def _rebootstrap(self, now: float, reason: str) -> None:
        known = ", ".join(
            f"{conn.node_id}@{conn.host}:{conn.port}" for conn in self._connections.values()
        )
        _log.warning(
            "%s (known: %s): going back to the bootstrap servers %s",
            reason,
            known,
            ", ".join(f"{host}:{port}" for host, port in self._settings.bootstrap_servers),
        )
        self.rebootstrap_count += 1
        bootstrap = self.metadata.cluster.rebootstrapped(self._settings.bootstrap_servers)
        self.metadata.rebootstrap(bootstrap, now)
        self._sync_nodes(bootstrap, now)

    def _send_metadata_request(self, now: float) -> float:
        """Send the due metadata request to the least loaded node, connecting if needed;
        the time to wait (infinity: until socket events) or, when every node is in
        reconnect backoff, until the first may connect again."""
        # A connection that fails at once (refused) goes into backoff; try the next node.
        for _ in range(len(self._connections)):
            node_id = self.least_loaded_node(now)
            if node_id is None:
                break
            conn = self._connections[node_id]
            if conn.can_send():
                conn.send(
                    self.metadata.new_request(now), now, self._completed, self._metadata_callback
                )
                self._after_io(conn)
                return math.inf
            if not conn.can_connect(now):
                return math.inf  # connecting, or busy: socket events come first
            self._connect(conn, now)
            if not conn.is_disconnected:
                return math.inf
        # Every node is in reconnect backoff: wait for the first to come out of it.
        return min(
            (conn.connection_delay(now) for conn in self._connections.values()),
            default=math.inf,
        )

    def _handle_metadata_response(self, response: ClientResponse) -> None:
        if response.error is not None:
            self.metadata.failed_update(response.completed_at_ms, response.error)
            return
        metadata_response = response.response_as(MetadataResponse)
        cluster = self.metadata.update(metadata_response, response.completed_at_ms)
        self._sync_nodes(cluster, response.completed_at_ms)

    def _sync_nodes(self, cluster: ClusterMetadata, now: float) -> None:
        """Add a connection per new broker; retire those of brokers that left (or moved)."""
        brokers = cluster.brokers
        removed: list[BrokerConnection] = []
        for node_id, conn in list(self._connections.items()):
            broker = brokers.get(node_id)
            if broker is None or (broker.host, broker.port) != (conn.host, conn.port):
                del self._connections[node_id]
                removed.append(conn)
        for node_id, broker in brokers.items():
            if node_id in self._connections:
                continue
            # The bootstrap connection usually reaches a broker at its advertised address:
            # keep it under the broker's id rather than connect again (saves a connect and
            # an ApiVersions round trip at start).
            reusable = bootstrap_connection_to(removed, broker.host, broker.port)
            if reusable is not None:
                removed.remove(reusable)
                reusable.adopt_node_id(node_id)
                self._connections[node_id] = reusable
                continue
            self._connections[node_id] = BrokerConnection(
                node_id,
                broker.host,
                broker.port,
                self._settings,
                self._transport_factory,
                rng=self._rng,
                authenticator_factory=self._authenticator_factory,
            )
        for conn in removed:
            if conn.in_flight_count == 0:
                conn.close(now, self._completed)
                self._after_io(conn)
            else:
                self._retiring.append(conn)

    def __repr__(self) -> str:
        states = ", ".join(
            f"{node_id}:{conn.state.value}" for node_id, conn in self._connections.items()
        )
        return f"<NetworkClient {'closed' if self._closed else 'open'} nodes=[{states}]>"
