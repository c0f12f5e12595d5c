"""What LocalCluster's node fronts do to the frames passing them (see kafkaline.testing.cluster
for the rules). No sockets here: a frame in, the frame to forward out."""

from __future__ import annotations

import collections
import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass

from kafkaline.errors import KafkaError
from kafkaline.protocol.api import (
    ApiVersionsResponse,
    FindCoordinatorResponse,
    MetadataResponse,
    ProduceRequest,
    ProduceResponse,
)
from kafkaline.protocol.api.metadata import MetadataResponseBroker, MetadataResponsePartition
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
from kafkaline.testing._relay import CORRELATION_ID, REQUEST_HEAD, SIZE, RelayConnection

_log = logging.getLogger("kafkaline.testing.cluster")

PRODUCE = ProduceRequest.API_KEY
_METADATA = MetadataResponse.API_KEY
_FIND_COORDINATOR = FindCoordinatorResponse.API_KEY
_API_VERSIONS = ApiVersionsResponse.API_KEY
_NOT_LEADER_OR_FOLLOWER = 6
_LEADER_NOT_AVAILABLE = 5
#: The highest version of each API whose answer the front decodes and rewrites.
CAPPED_VERSIONS: dict[int, int | None] = {
    PRODUCE: ProduceResponse.VALID_VERSIONS.high,
    _METADATA: MetadataResponse.VALID_VERSIONS.high,
    _FIND_COORDINATOR: FindCoordinatorResponse.VALID_VERSIONS.high,
}
FIRST_LEADER_HINT_VERSION = 10


@dataclass(frozen=True)
class _Refused:
    """A partition of a Produce request that this node does not lead."""

    topic: str
    partition: int
    leader: LeaderAndEpoch


@dataclass(frozen=True)
class Rewrite:
    """What to do with the broker's answer to one request: ``refused`` partitions are added
    to a Produce answer (``replace``: the broker was sent a stand-in request, its answer is
    dropped)."""

    api_key: int
    version: int
    refused: tuple[_Refused, ...] = ()
    replace: bool = False


#: A client's connection to a node; its pending map holds the answers to rewrite.
FrontConnection = RelayConnection[Rewrite]


class FrontRewriter:
    """The rules every node's front applies, over the cluster's shared state: its
    ``leadership`` and ``ports`` (node id -> port), guarded by the cluster's ``lock``.
    :attr:`refused` counts Produce requests refused, per node (read it under ``lock``)."""

    def __init__(
        self,
        leadership: Leadership,
        *,
        scope: str,
        ports: Mapping[int, int],
        capped_versions: Mapping[int, int | None],
        lock: threading.Lock,
    ) -> None:
        self._leadership = leadership
        self._scope = scope
        self._ports = ports
        self._capped_versions = capped_versions
        self._lock = lock
        self.refused: collections.Counter[int] = collections.Counter()

    # ------------------------------------------------------------------ requests

    def on_request(self, node_id: int, connection: FrontConnection, frame: bytes) -> bytes | None:
        """The frame to send the broker for a client's request frame (None: nothing)."""
        api_key, version, correlation_id = REQUEST_HEAD.unpack_from(frame, SIZE.size)
        if api_key == PRODUCE and version in ProduceRequest.VALID_VERSIONS:
            try:
                return self._on_produce(node_id, connection, frame, version)
            except KafkaError as error:  # not ours to judge: the broker answers it
                _log.warning("node %d could not read a Produce request: %s", node_id, error)
                return frame
        if api_key in (_METADATA, _FIND_COORDINATOR, _API_VERSIONS):
            with connection.lock:
                connection.pending[correlation_id] = Rewrite(api_key, version)
        return frame

    def _on_produce(
        self, node_id: int, connection: FrontConnection, frame: bytes, version: int
    ) -> bytes | None:
        flexible = ProduceRequest.is_flexible(version)
        reader = Reader(frame, SIZE.size)
        header = read_message(RequestHeader, reader, 2 if flexible else 1)
        request = decode_message(ProduceRequest, reader, version)
        led, refused = self._split_by_leader(node_id, request)
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
                connection.pending[correlation_id] = Rewrite(
                    PRODUCE, version, tuple(refused), replace=True
                )
            stand_in = RequestHeader(
                request_api_key=_API_VERSIONS,
                request_api_version=0,
                correlation_id=correlation_id,
                client_id=header.client_id,
            ).encode(1)
            return SIZE.pack(len(stand_in)) + stand_in
        with connection.lock:
            connection.pending[correlation_id] = Rewrite(PRODUCE, version, tuple(refused))
        return _request_frame(header, request, version, led)

    def _split_by_leader(
        self, node_id: int, request: ProduceRequest
    ) -> tuple[list[TopicProduceData], list[_Refused]]:
        """The partitions of ``request`` that ``node_id`` leads, and the others."""
        refused: list[_Refused] = []
        led: list[TopicProduceData] = []
        with self._lock:
            for topic in request.topic_data:
                mine = []
                for partition in topic.partition_data:
                    leader = self._leadership.leader(topic.name, partition.index)
                    if leader.leader == node_id or self._scope == "self":
                        mine.append(partition)
                    else:
                        refused.append(_Refused(topic.name, partition.index, leader))
                if mine:
                    led.append(TopicProduceData(name=topic.name, partition_data=mine))
            if refused:
                self.refused[node_id] += 1
        return led, refused

    # ------------------------------------------------------------------ responses

    def on_response(self, node_id: int, connection: FrontConnection, frame: bytes) -> bytes:
        """The frame to send the client for the broker's answer frame."""
        (correlation_id,) = CORRELATION_ID.unpack_from(frame, SIZE.size)
        with connection.lock:
            rewrite = connection.pending.pop(correlation_id, None)
        if rewrite is None:
            return frame
        try:
            return self._rewrite(node_id, rewrite, correlation_id, frame)
        except KafkaError as error:
            _log.warning(
                "node %d could not rewrite an answer (API %d v%d): %s",
                node_id,
                rewrite.api_key,
                rewrite.version,
                error,
            )
            return frame

    def _rewrite(self, node_id: int, rewrite: Rewrite, correlation_id: int, frame: bytes) -> bytes:
        api_key, version = rewrite.api_key, rewrite.version
        if api_key == PRODUCE and rewrite.replace:
            body: Message = self._refusal(node_id, rewrite.refused, version, None)
        else:
            body = _decode_response(api_key, version, frame)
            if isinstance(body, ProduceResponse):
                body = self._refusal(node_id, rewrite.refused, version, body)
            elif isinstance(body, MetadataResponse):
                self._rewrite_metadata(node_id, body)
            elif isinstance(body, FindCoordinatorResponse):
                self._rewrite_coordinator(node_id, body, version)
            elif isinstance(body, ApiVersionsResponse):
                if body.error_code:
                    return frame
                self._cap_versions(body)
        flexible = type(body).is_flexible(version)
        head = ResponseHeader(correlation_id=correlation_id).encode(
            response_header_version(api_key, flexible)
        )
        payload = head + body.encode(version)
        return SIZE.pack(len(payload)) + payload

    def _cap_versions(self, response: ApiVersionsResponse) -> None:
        for item in response.api_keys:
            cap = self._capped_versions.get(item.api_key)
            if cap is not None and item.max_version > cap:
                item.max_version = cap

    def _refusal(
        self,
        node_id: int,
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
        hints = version >= FIRST_LEADER_HINT_VERSION
        for item in refused:
            leader = item.leader
            partition = PartitionProduceResponse(
                index=item.partition,
                error_code=_NOT_LEADER_OR_FOLLOWER,
                base_offset=-1,
                error_message=f"node {node_id} is not the leader of {item.topic}-{item.partition}",
            )
            if hints and leader.leader != NO_LEADER:
                partition.current_leader = LeaderIdAndEpoch(
                    leader_id=leader.leader, leader_epoch=leader.epoch
                )
                endpoints[leader.leader] = NodeEndpoint(
                    node_id=leader.leader, host=LOOPBACK, port=self._ports[leader.leader]
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

    def _broker_entries(self, node_id: int) -> list[MetadataResponseBroker]:
        nodes = [node_id] if self._scope == "self" else self._leadership.live
        return [
            MetadataResponseBroker(node_id=node, host=LOOPBACK, port=self._ports[node])
            for node in nodes
        ]

    def _rewrite_metadata(self, node_id: int, response: MetadataResponse) -> None:
        with self._lock:
            response.brokers = self._broker_entries(node_id)
            response.controller_id = response.brokers[0].node_id
            for topic in response.topics:
                if topic.error_code or topic.name is None:
                    continue
                for partition in topic.partitions:
                    self._rewrite_partition(node_id, topic.name, partition)

    def _rewrite_partition(
        self, node_id: int, topic: str, partition: MetadataResponsePartition
    ) -> None:
        index = partition.partition_index
        if self._scope == "self":
            leader = LeaderAndEpoch(node_id, 0)
            replicas: tuple[int, ...] = (node_id,)
            isr = replicas
            offline: tuple[int, ...] = ()
        else:
            leader = self._leadership.announced(topic, index)
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
        self, node_id: int, response: FindCoordinatorResponse, version: int
    ) -> None:
        with self._lock:
            coordinator = self._broker_entries(node_id)[0]
        if version < 4:
            if not response.error_code:
                response.node_id = coordinator.node_id
                response.host, response.port = coordinator.host, coordinator.port
            return
        for item in response.coordinators:
            if not item.error_code:
                item.node_id = coordinator.node_id
                item.host, item.port = coordinator.host, coordinator.port


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
    return SIZE.pack(len(payload)) + payload


_RESPONSE_TYPES: dict[int, type[Message]] = {
    PRODUCE: ProduceResponse,
    _METADATA: MetadataResponse,
    _FIND_COORDINATOR: FindCoordinatorResponse,
    _API_VERSIONS: ApiVersionsResponse,
}


def _decode_response(api_key: int, version: int, frame: bytes) -> Message:
    response_type = _RESPONSE_TYPES[api_key]
    flexible = response_type.is_flexible(version)
    reader = Reader(frame, SIZE.size)
    read_message(ResponseHeader, reader, response_header_version(api_key, flexible))
    return response_type.decode(bytes(frame[reader.position :]), version)
