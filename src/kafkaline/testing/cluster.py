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

import collections
import contextlib
import functools
import logging
import os
import socket
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType

from kafkaline.errors import ConfigError, IllegalStateError, KafkaError
from kafkaline.protocol.api import (
    ApiVersionsResponse,
    FindCoordinatorResponse,
    MetadataResponse,
    ProduceRequest,
    ProduceResponse,
)
from kafkaline.protocol.api.metadata import MetadataResponseBroker
from kafkaline.protocol.api.produce import (
    LeaderIdAndEpoch,
    NodeEndpoint,
    PartitionProduceResponse,
    TopicProduceData,
    TopicProduceResponse,
)
from kafkaline.protocol.headers import RequestHeader, ResponseHeader, response_header_version
from kafkaline.protocol.primitives import Reader
from kafkaline.protocol.schema import Message, decode_message, read_message
from kafkaline.testing._leadership import NO_LEADER, LeaderAndEpoch, Leadership
from kafkaline.testing._ports import LOOPBACK
from kafkaline.testing.broker import LocalBroker

__all__ = ["METADATA_SCOPES", "LocalCluster"]

_log = logging.getLogger(__name__)

#: What a node's Metadata answer names: every live node ("cluster") or only itself ("self").
METADATA_SCOPES = frozenset({"cluster", "self"})

_PRODUCE = ProduceRequest.API_KEY
_METADATA = MetadataResponse.API_KEY
_FIND_COORDINATOR = FindCoordinatorResponse.API_KEY
_API_VERSIONS = ApiVersionsResponse.API_KEY
_NOT_LEADER_OR_FOLLOWER = 6
_LEADER_NOT_AVAILABLE = 5
#: The highest version of each API whose answer the front decodes and rewrites.
_CAPPED_VERSIONS: dict[int, int | None] = {
    _PRODUCE: ProduceResponse.VALID_VERSIONS.high,
    _METADATA: MetadataResponse.VALID_VERSIONS.high,
    _FIND_COORDINATOR: FindCoordinatorResponse.VALID_VERSIONS.high,
}
_FIRST_LEADER_HINT_VERSION = 10
_FIRST_NODE_ID = 1

_POLL_INTERVAL = 0.05
_RECV_SIZE = 1 << 16
_SIZE = struct.Struct(">i")
_REQUEST_HEAD = struct.Struct(">hhi")  # api_key, api_version, correlation_id
_CORRELATION_ID = struct.Struct(">i")


class _Closing(Exception):
    """Raised inside a pump when its connection (or its node) is being torn down."""


@dataclass(frozen=True)
class _Refused:
    """A partition of a Produce request that this node does not lead."""

    topic: str
    partition: int
    leader: LeaderAndEpoch


@dataclass(frozen=True)
class _Rewrite:
    """What to do with the broker's answer to one request: ``refused`` partitions are added
    to a Produce answer (``replace``: the broker was sent a stand-in request, its answer is
    dropped)."""

    api_key: int
    version: int
    refused: tuple[_Refused, ...] = ()
    replace: bool = False


@dataclass(eq=False)
class _Connection:
    """A client's connection to a node and the front's connection to the broker for it."""

    client: socket.socket
    upstream: socket.socket
    closed: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)
    rewrites: dict[int, _Rewrite] = field(default_factory=dict)

    def tear_down(self) -> None:
        with self.lock:
            if self.closed.is_set():
                return
            self.closed.set()
        for sock in (self.client, self.upstream):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()


@dataclass(eq=False)
class _Node:
    node_id: int
    port: int
    listener: socket.socket | None = None
    connections: set[_Connection] = field(default_factory=set)


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
        self._capped_versions = dict(_CAPPED_VERSIONS)
        if not leader_hints:
            self._capped_versions[_PRODUCE] = _FIRST_LEADER_HINT_VERSION - 1
        self._broker = LocalBroker(storage=storage, log_dir=log_dir)
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._started = False
        self._threads: list[threading.Thread] = []
        self._refused: collections.Counter[int] = collections.Counter()
        self._nodes: dict[int, _Node] = {}
        try:
            for node_id in node_ids:
                listener = _listen(0)
                self._nodes[node_id] = _Node(node_id, listener.getsockname()[1], listener)
        except BaseException:
            self._close_listeners()
            raise

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
            return sum(self._refused.values())

    def refused_by_node(self) -> dict[int, int]:
        """:attr:`refused_produce_requests` per node that refused them."""
        with self._lock:
            return dict(self._refused)

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
            _stop_listening(listener)
        for connection in connections:
            connection.tear_down()

    def start_node(self, node_id: int) -> None:
        """Listen on ``node_id``'s port again; it leads its preferred partitions again.
        A no-op for a live node."""
        node = self._node(node_id)
        with self._lock:
            if node.listener is not None:
                return
        listener = _listen(node.port)
        with self._lock:
            node.listener = listener
            self._leadership.start(node_id)
        if self._started:
            self._spawn(functools.partial(self._accept_loop, node, listener), f"accept-{node_id}")

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
                self._spawn(
                    functools.partial(self._accept_loop, node, listener), f"accept-{node.node_id}"
                )

    def close(self, timeout: float = 5.0) -> None:
        """Close every node and connection, join every thread and stop the broker."""
        self._closing.set()
        self._close_listeners()
        with self._lock:
            connections = [c for node in self._nodes.values() for c in node.connections]
        for connection in connections:
            connection.tear_down()
        deadline = time.monotonic() + timeout
        with self._lock:
            threads, self._threads = self._threads, []
        for thread in threads:
            thread.join(max(deadline - time.monotonic(), 0.0))
        self._broker.close()
        alive = [thread.name for thread in threads if thread.is_alive()]
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
                _stop_listening(listener)

    def _spawn(self, target: Callable[[], None], name: str) -> None:
        thread = threading.Thread(target=target, name=f"kafkaline-cluster-{name}", daemon=True)
        with self._lock:
            self._threads = [t for t in self._threads if t.is_alive()]
            self._threads.append(thread)
        thread.start()

    def _accept_loop(self, node: _Node, listener: socket.socket) -> None:
        while not self._closing.is_set():
            try:
                client, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:  # the listener was closed: the node was killed
                return
            try:
                upstream = socket.create_connection((LOOPBACK, self._broker.port), timeout=5.0)
            except OSError:
                client.close()
                continue
            for sock in (client, upstream):
                sock.settimeout(_POLL_INTERVAL)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            connection = _Connection(client, upstream)
            with self._lock:
                if node.listener is not listener or self._closing.is_set():
                    connection.tear_down()  # killed meanwhile
                    return
                node.connections.add(connection)
            name = f"{node.node_id}-{client.getpeername()[1]}"
            self._spawn(functools.partial(self._pump, node, connection, True), f"c2b-{name}")
            self._spawn(functools.partial(self._pump, node, connection, False), f"b2c-{name}")

    def _pump(self, node: _Node, connection: _Connection, requests: bool) -> None:
        source, sink = (
            (connection.client, connection.upstream)
            if requests
            else (connection.upstream, connection.client)
        )
        buffer = bytearray()
        try:
            while True:
                data = self._recv(connection, source)
                if not data:
                    return
                buffer += data
                while len(buffer) >= _SIZE.size:
                    (size,) = _SIZE.unpack_from(buffer)
                    end = _SIZE.size + size
                    if len(buffer) < end:
                        break
                    frame = bytes(buffer[:end])
                    del buffer[:end]
                    out = (
                        self._on_request(node, connection, frame)
                        if requests
                        else self._on_response(node, connection, frame)
                    )
                    if out is not None:
                        sink.sendall(out)
        except (_Closing, OSError):
            return
        finally:
            connection.tear_down()
            with self._lock:
                node.connections.discard(connection)

    def _recv(self, connection: _Connection, source: socket.socket) -> bytes:
        while True:
            if connection.closed.is_set() or self._closing.is_set():
                raise _Closing
            try:
                return source.recv(_RECV_SIZE)
            except TimeoutError:
                continue

    # ------------------------------------------------------------------ requests

    def _on_request(self, node: _Node, connection: _Connection, frame: bytes) -> bytes | None:
        """The frame to send the broker for a client's request frame (None: nothing)."""
        api_key, version, correlation_id = _REQUEST_HEAD.unpack_from(frame, _SIZE.size)
        if api_key == _PRODUCE and version in ProduceRequest.VALID_VERSIONS:
            try:
                return self._on_produce(node, connection, frame, version)
            except KafkaError as error:  # not ours to judge: the broker answers it
                _log.warning("node %d could not read a Produce request: %s", node.node_id, error)
                return frame
        if api_key in (_METADATA, _FIND_COORDINATOR, _API_VERSIONS):
            with connection.lock:
                connection.rewrites[correlation_id] = _Rewrite(api_key, version)
        return frame

    def _on_produce(
        self, node: _Node, connection: _Connection, frame: bytes, version: int
    ) -> bytes | None:
        flexible = ProduceRequest.is_flexible(version)
        reader = Reader(frame, _SIZE.size)
        header = read_message(RequestHeader, reader, 2 if flexible else 1)
        request = decode_message(ProduceRequest, reader, version)
        refused: list[_Refused] = []
        led: list[TopicProduceData] = []
        with self._lock:
            for topic in request.topic_data:
                mine = []
                for partition in topic.partition_data:
                    leader = self._leadership.leader(topic.name, partition.index)
                    if leader.leader == node.node_id or self._scope == "self":
                        mine.append(partition)
                    else:
                        refused.append(_Refused(topic.name, partition.index, leader))
                if mine:
                    led.append(TopicProduceData(name=topic.name, partition_data=mine))
            if refused:
                self._refused[node.node_id] += 1
        if not refused:
            return frame
        correlation_id = header.correlation_id
        if request.acks == 0:
            # Nobody waits for an answer: write what this node leads, drop the rest.
            return _request_frame(header, request, version, led) if led else None
        if not led:
            # The answer must keep its place among the broker's answers on this connection:
            # the broker is sent a stand-in (ApiVersions v0) with the same correlation id,
            # whose answer is replaced.
            with connection.lock:
                connection.rewrites[correlation_id] = _Rewrite(
                    _PRODUCE, version, tuple(refused), replace=True
                )
            stand_in = RequestHeader(
                request_api_key=_API_VERSIONS,
                request_api_version=0,
                correlation_id=correlation_id,
                client_id=header.client_id,
            ).encode(1)
            return _SIZE.pack(len(stand_in)) + stand_in
        with connection.lock:
            connection.rewrites[correlation_id] = _Rewrite(_PRODUCE, version, tuple(refused))
        return _request_frame(header, request, version, led)

    # ------------------------------------------------------------------ responses

    def _on_response(self, node: _Node, connection: _Connection, frame: bytes) -> bytes:
        (correlation_id,) = _CORRELATION_ID.unpack_from(frame, _SIZE.size)
        with connection.lock:
            rewrite = connection.rewrites.pop(correlation_id, None)
        if rewrite is None:
            return frame
        try:
            return self._rewrite(node, rewrite, correlation_id, frame)
        except KafkaError as error:
            _log.warning(
                "node %d could not rewrite an answer (API %d v%d): %s",
                node.node_id,
                rewrite.api_key,
                rewrite.version,
                error,
            )
            return frame

    def _rewrite(self, node: _Node, rewrite: _Rewrite, correlation_id: int, frame: bytes) -> bytes:
        api_key, version = rewrite.api_key, rewrite.version
        if api_key == _PRODUCE and rewrite.replace:
            body: Message = self._refusal(node, rewrite.refused, version, None)
        else:
            body = _decode_response(api_key, version, frame)
            if isinstance(body, ProduceResponse):
                body = self._refusal(node, rewrite.refused, version, body)
            elif isinstance(body, MetadataResponse):
                self._rewrite_metadata(node, body)
            elif isinstance(body, FindCoordinatorResponse):
                self._rewrite_coordinator(node, body, version)
            elif isinstance(body, ApiVersionsResponse):
                if body.error_code:
                    return frame
                for item in body.api_keys:
                    cap = self._capped_versions.get(item.api_key)
                    if cap is not None and item.max_version > cap:
                        item.max_version = cap
        flexible = type(body).is_flexible(version)
        head = ResponseHeader(correlation_id=correlation_id).encode(
            response_header_version(api_key, flexible)
        )
        payload = head + body.encode(version)
        return _SIZE.pack(len(payload)) + payload

    def _refusal(
        self,
        node: _Node,
        refused: tuple[_Refused, ...],
        version: int,
        answer: ProduceResponse | None,
    ) -> ProduceResponse:
        """``answer`` (or an empty one) with a NOT_LEADER_OR_FOLLOWER answer per refused
        partition, carrying the leader hint from v10."""
        if answer is None:
            answer = ProduceResponse(responses=[])
        by_topic = {topic.name: topic for topic in answer.responses}
        endpoints: dict[int, NodeEndpoint] = {}
        hints = version >= _FIRST_LEADER_HINT_VERSION
        for item in refused:
            leader = item.leader
            partition = PartitionProduceResponse(
                index=item.partition,
                error_code=_NOT_LEADER_OR_FOLLOWER,
                base_offset=-1,
                error_message=f"node {node.node_id} is not the leader of "
                f"{item.topic}-{item.partition}",
            )
            if hints and leader.leader != NO_LEADER:
                partition.current_leader = LeaderIdAndEpoch(
                    leader_id=leader.leader, leader_epoch=leader.epoch
                )
                endpoints[leader.leader] = NodeEndpoint(
                    node_id=leader.leader, host=LOOPBACK, port=self._nodes[leader.leader].port
                )
            topic = by_topic.get(item.topic)
            if topic is None:
                topic = by_topic[item.topic] = TopicProduceResponse(
                    name=item.topic, partition_responses=[]
                )
                answer.responses.append(topic)
            topic.partition_responses.append(partition)
        if hints:
            answer.node_endpoints = [*answer.node_endpoints, *endpoints.values()]
        return answer

    def _broker_entries(self, node: _Node) -> list[MetadataResponseBroker]:
        nodes = [node.node_id] if self._scope == "self" else self._leadership.live
        return [
            MetadataResponseBroker(node_id=node_id, host=LOOPBACK, port=self._nodes[node_id].port)
            for node_id in nodes
        ]

    def _rewrite_metadata(self, node: _Node, response: MetadataResponse) -> None:
        with self._lock:
            response.brokers = self._broker_entries(node)
            response.controller_id = response.brokers[0].node_id
            for topic in response.topics:
                if topic.error_code or topic.name is None:
                    continue
                for partition in topic.partitions:
                    index = partition.partition_index
                    if self._scope == "self":
                        leader = LeaderAndEpoch(node.node_id, 0)
                        replicas: tuple[int, ...] = (node.node_id,)
                        isr = replicas
                        offline: tuple[int, ...] = ()
                    else:
                        leader = self._leadership.announced(topic.name, index)
                        replicas = self._leadership.replicas(index)
                        isr = self._leadership.isr(index)
                        offline = self._leadership.offline(index)
                    partition.leader_id = leader.leader
                    partition.leader_epoch = leader.epoch
                    partition.replica_nodes = list(replicas)
                    partition.isr_nodes = list(isr)
                    partition.offline_replicas = list(offline)
                    if leader.leader == NO_LEADER:
                        partition.error_code = _LEADER_NOT_AVAILABLE

    def _rewrite_coordinator(
        self, node: _Node, response: FindCoordinatorResponse, version: int
    ) -> None:
        with self._lock:
            coordinator = self._broker_entries(node)[0]
        if version < 4:
            if not response.error_code:
                response.node_id = coordinator.node_id
                response.host, response.port = coordinator.host, coordinator.port
            return
        for item in response.coordinators:
            if not item.error_code:
                item.node_id = coordinator.node_id
                item.host, item.port = coordinator.host, coordinator.port


def _listen(port: int) -> socket.socket:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((LOOPBACK, port))
        listener.listen(64)
        listener.settimeout(_POLL_INTERVAL)
    except BaseException:
        listener.close()
        raise
    return listener


def _stop_listening(listener: socket.socket) -> None:
    # close() alone leaves the port listening while the accept thread's poll holds the file:
    # shutdown stops it at once (Linux), so a killed node refuses the very next connect.
    with contextlib.suppress(OSError):
        listener.shutdown(socket.SHUT_RDWR)
    listener.close()


def _request_frame(
    header: RequestHeader, request: ProduceRequest, version: int, topics: list[TopicProduceData]
) -> bytes:
    """``request`` with only ``topics``, framed with ``header``."""
    flexible = ProduceRequest.is_flexible(version)
    subset = ProduceRequest(
        transactional_id=request.transactional_id,
        acks=request.acks,
        timeout_ms=request.timeout_ms,
        topic_data=topics,
    )
    payload = header.encode(2 if flexible else 1) + subset.encode(version)
    return _SIZE.pack(len(payload)) + payload


_RESPONSE_TYPES: dict[int, type[Message]] = {
    _PRODUCE: ProduceResponse,
    _METADATA: MetadataResponse,
    _FIND_COORDINATOR: FindCoordinatorResponse,
    _API_VERSIONS: ApiVersionsResponse,
}


def _decode_response(api_key: int, version: int, frame: bytes) -> Message:
    response_type = _RESPONSE_TYPES[api_key]
    flexible = response_type.is_flexible(version)
    reader = Reader(frame, _SIZE.size)
    read_message(ResponseHeader, reader, response_header_version(api_key, flexible))
    return response_type.decode(bytes(frame[reader.position :]), version)
