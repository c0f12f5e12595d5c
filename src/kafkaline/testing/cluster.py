"""LocalCluster: several Kafka nodes, each with its own id and port, in front of one broker.

Tansu answers Metadata as one node (111) leading every partition. LocalCluster puts a small
TCP front per node between the clients and one :class:`~kafkaline.testing.LocalBroker`, and
rewrites what the broker says so that clients see a cluster::

    >>> with LocalCluster(brokers=3) as cluster:                   # doctest: +SKIP
    ...     cluster.create_topic("events", partitions=6)
    ...     producer = Producer(bootstrap_servers=cluster.bootstrap_servers)
    ...     cluster.kill_node(2)          # node 2's partitions move to node 3 (and 1)
    ...     cluster.start_node(2)         # ... and back
    ...     cluster.move_leader("events", 0, 3, announce_after=1.0)

What each front does, per request (frames are read with Kafka's 4-byte size prefix):

    Metadata         the broker's answer with the brokers replaced by the live nodes and,
                     per partition, the leader, leader epoch, replicas, ISR and offline
                     replicas from :class:`~kafkaline.testing._leadership.Leadership`
    FindCoordinator  the coordinator replaced by a live node
    ApiVersions      Metadata, Produce and FindCoordinator capped at the versions
                     kafkaline's codecs read (the front decodes their answers)
    Produce          partitions this node leads go to the broker; the others are answered
                     by the front with NOT_LEADER_OR_FOLLOWER, and at v10+ with the
                     KIP-951 hint (the current leader and epoch, the leader's endpoint)
    anything else    passed through (any node serves Fetch and ListOffsets: they all
                     share one log)

Every node forwards to the same broker, so the log is one: a record written through any
node is read back through any other, and idempotence is checked by the one broker.

``metadata_scope="self"`` makes each node name only itself in Metadata, leading every
partition, as separate Tansu brokers on one S3 store do: a client then knows only the node
it asked, which is what re-bootstrapping (KIP-899) is for.

Killing a node closes its listener and every connection to it (clients see the connection
refused); starting it binds the same port again. Threads: one accepting per live node, two
per connection; ``close()`` stops and joins them all and stops the broker.
"""

from __future__ import annotations

import functools
import os
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType

from kafkaline.errors import ConfigError, IllegalStateError
from kafkaline.testing._cluster_front import (
    CAPPED_VERSIONS,
    FIRST_LEADER_HINT_VERSION,
    PRODUCE,
    FrontConnection,
    FrontRewriter,
)
from kafkaline.testing._leadership import Leadership
from kafkaline.testing._ports import LOOPBACK
from kafkaline.testing._relay import (
    ThreadGroup,
    accept_loop,
    listen,
    pump_frames,
    stop_listening,
)
from kafkaline.testing.broker import LocalBroker

__all__ = ["METADATA_SCOPES", "LocalCluster"]

#: What a node's Metadata answer names: every live node ("cluster") or only itself ("self").
METADATA_SCOPES = frozenset({"cluster", "self"})

_FIRST_NODE_ID = 1


@dataclass(eq=False)
class _Node:
    node_id: int
    port: int
    listener: socket.socket | None = None
    connections: set[FrontConnection] = field(default_factory=set)


class LocalCluster:
    """``brokers`` nodes on loopback ports in front of one :class:`LocalBroker`; see the
    module docstring.

    Parameters:
        brokers: how many nodes (ids 1, 2, ...).
        replication: replicas per partition (default: every node, at most 3).
        metadata_scope: one of :data:`METADATA_SCOPES`.
        storage: the broker's storage ("memory" or "s3", see LocalBroker).
        log_dir: where the broker's log goes (default: a temporary directory).
        leader_hints: False caps Produce at v9 in ApiVersions, the last version without
            KIP-951's leader hints (to compare a client with and without them).
    """

    def __init__(
        self,
        brokers: int = 3,
        *,
        replication: int | None = None,
        metadata_scope: str = "cluster",
        storage: str = "memory",
        log_dir: str | os.PathLike[str] | None = None,
        leader_hints: bool = True,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if isinstance(brokers, bool) or not isinstance(brokers, int) or brokers < 1:
            raise ConfigError(f"brokers={brokers!r} must be an int >= 1")
        if metadata_scope not in METADATA_SCOPES:
            raise ConfigError(
                f"metadata_scope={metadata_scope!r}: choose one of {sorted(METADATA_SCOPES)}"
            )
        node_ids = range(_FIRST_NODE_ID, _FIRST_NODE_ID + brokers)
        self._leadership = Leadership(
            node_ids,
            replication=min(brokers, 3) if replication is None else replication,
            clock=clock,
        )
        self._scope = metadata_scope
        self._broker = LocalBroker(storage=storage, log_dir=log_dir)
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._started = False
        self._threads = ThreadGroup("kafkaline-cluster-")
        self._nodes: dict[int, _Node] = {}
        try:
            for node_id in node_ids:
                listener = listen(0)
                self._nodes[node_id] = _Node(node_id, listener.getsockname()[1], listener)
        except BaseException:
            self._close_listeners()
            raise
        capped_versions = dict(CAPPED_VERSIONS)
        if not leader_hints:
            capped_versions[PRODUCE] = FIRST_LEADER_HINT_VERSION - 1
        self._front = FrontRewriter(
            self._leadership,
            scope=metadata_scope,
            ports={node_id: node.port for node_id, node in self._nodes.items()},
            capped_versions=capped_versions,
            lock=self._lock,
        )

    # ------------------------------------------------------------------ what clients need

    @property
    def node_ids(self) -> tuple[int, ...]:
        """Every node id, live or not."""
        return self._leadership.nodes

    @property
    def live_nodes(self) -> tuple[int, ...]:
        """The node ids that accept connections now."""
        with self._lock:
            return self._leadership.live

    def port(self, node_id: int) -> int:
        """The loopback port of ``node_id`` (it keeps it across kills and starts)."""
        return self._node(node_id).port

    def address(self, node_id: int) -> str:
        """``"127.0.0.1:PORT"`` of ``node_id``."""
        return f"{LOOPBACK}:{self.port(node_id)}"

    @property
    def bootstrap_servers(self) -> str:
        """Every node's address, comma-separated, for a client's bootstrap.servers."""
        return ",".join(self.address(node_id) for node_id in self.node_ids)

    @property
    def broker(self) -> LocalBroker:
        """The one broker behind every node (its own port bypasses the fronts)."""
        return self._broker

    def leader(self, topic: str, partition: int) -> int:
        """The node leading ``topic``/``partition`` now (-1: none is live)."""
        with self._lock:
            return self._leadership.leader(topic, partition).leader

    def replicas(self, partition: int) -> tuple[int, ...]:
        """The replicas of a partition with this index, its preferred leader first."""
        return self._leadership.replicas(partition)

    @property
    def refused_produce_requests(self) -> int:
        """Produce requests answered NOT_LEADER_OR_FOLLOWER (for at least one partition)."""
        with self._lock:
            return sum(self._front.refused.values())

    def refused_by_node(self) -> dict[int, int]:
        """:attr:`refused_produce_requests` per node that refused them."""
        with self._lock:
            return dict(self._front.refused)

    def connection_count(self, node_id: int) -> int:
        """Client connections open to ``node_id`` now."""
        node = self._node(node_id)
        with self._lock:
            return len(node.connections)

    # ------------------------------------------------------------------ faults

    def kill_node(self, node_id: int) -> None:
        """Close ``node_id``'s listener and every connection to it; its partitions move to
        their next live replica."""
        node = self._node(node_id)
        with self._lock:
            self._leadership.kill(node_id)
            listener, node.listener = node.listener, None
            connections = list(node.connections)
        if listener is not None:
            stop_listening(listener)
        for connection in connections:
            connection.tear_down()

    def start_node(self, node_id: int) -> None:
        """Listen on ``node_id``'s port again; it leads its preferred partitions again.
        A no-op for a live node."""
        node = self._node(node_id)
        with self._lock:
            if node.listener is not None:
                return
        listener = listen(node.port)
        with self._lock:
            node.listener = listener
            self._leadership.start(node_id)
        if self._started:
            self._start_accepting(node, listener)

    def move_leader(
        self, topic: str, partition: int, node_id: int, *, announce_after: float = 0.0
    ) -> None:
        """Make ``node_id`` lead ``topic``/``partition``. For ``announce_after`` seconds
        Metadata still names the old leader (Produce there is refused with the hint)."""
        with self._lock:
            self._leadership.move(topic, partition, node_id, announce_after=announce_after)

    # ------------------------------------------------------------------ topics

    def create_topic(self, name: str, partitions: int = 1) -> None:
        """Create a topic on the broker (see :meth:`LocalBroker.create_topic`)."""
        self._broker.create_topic(name, partitions=partitions)

    def delete_topic(self, name: str) -> None:
        """Delete a topic on the broker."""
        self._broker.delete_topic(name)

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Start the broker and accept connections on every live node."""
        if self._closing.is_set():
            raise IllegalStateError("a closed LocalCluster cannot start again; make a new one")
        if self._started:
            return
        self._broker.start()
        self._started = True
        with self._lock:
            nodes = [(node, node.listener) for node in self._nodes.values()]
        for node, listener in nodes:
            if listener is not None:
                self._start_accepting(node, listener)

    def close(self, timeout: float = 5.0) -> None:
        """Close every node and connection, join every thread and stop the broker."""
        self._closing.set()
        self._close_listeners()
        with self._lock:
            connections = [c for node in self._nodes.values() for c in node.connections]
        for connection in connections:
            connection.tear_down()
        alive = self._threads.join(timeout)
        self._broker.close()
        if alive:
            raise TimeoutError(f"LocalCluster threads did not stop: {alive}")

    def __enter__(self) -> LocalCluster:
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        nodes = ", ".join(
            f"{node_id}@{node.port}{'' if node.listener is not None else ' (down)'}"
            for node_id, node in self._nodes.items()
        )
        return f"<LocalCluster [{nodes}] scope={self._scope} broker={self._broker!r}>"

    # ------------------------------------------------------------------ internals

    def _node(self, node_id: int) -> _Node:
        try:
            return self._nodes[node_id]
        except KeyError:
            raise ConfigError(
                f"node {node_id!r} is not in the cluster (nodes: {list(self._nodes)})"
            ) from None

    def _close_listeners(self) -> None:
        with self._lock:
            listeners = [node.listener for node in self._nodes.values()]
            for node in self._nodes.values():
                node.listener = None
        for listener in listeners:
            if listener is not None:
                stop_listening(listener)

    def _start_accepting(self, node: _Node, listener: socket.socket) -> None:
        upstream = (LOOPBACK, self._broker.port)
        on_connection = functools.partial(self._on_connection, node, listener)
        accept = functools.partial(accept_loop, listener, upstream, self._closing, on_connection)
        self._threads.spawn(accept, f"accept-{node.node_id}")

    def _on_connection(
        self, node: _Node, listener: socket.socket, connection: FrontConnection
    ) -> bool:
        with self._lock:
            if node.listener is not listener or self._closing.is_set():
                return False  # killed meanwhile
            node.connections.add(connection)
        name = f"{node.node_id}-{connection.client.getpeername()[1]}"
        self._threads.spawn(functools.partial(self._pump, node, connection, True), f"c2b-{name}")
        self._threads.spawn(functools.partial(self._pump, node, connection, False), f"b2c-{name}")
        return True

    def _pump(self, node: _Node, connection: FrontConnection, requests: bool) -> None:
        rewrite = self._front.on_request if requests else self._front.on_response

        def forward(sink: socket.socket, frame: bytes) -> None:
            out = rewrite(node.node_id, connection, frame)
            if out is not None:
                sink.sendall(out)

        try:
            pump_frames(connection, requests, forward, self._closing)
        finally:
            with self._lock:
                node.connections.discard(connection)
