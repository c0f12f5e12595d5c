"""What the :class:`~kafkaline.producer.sender.Sender` needs of the network client and its
metadata, as protocols: the real ones are :class:`~kafkaline.net.NetworkClient` and
:class:`~kafkaline.net.Metadata`; the Sender's unit tests pass fakes."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Protocol

from kafkaline.net.cluster import BrokerNode, ClusterMetadata, TopicPartition
from kafkaline.net.response import ClientResponse, OnComplete
from kafkaline.protocol import Request

__all__ = ["SenderClient", "SenderMetadata"]


class SenderMetadata(Protocol):
    """What the Sender uses of the client's metadata (:class:`~kafkaline.net.Metadata`)."""

    @property
    def cluster(self) -> ClusterMetadata: ...

    def add_topic(self, topic: str, now: float) -> None: ...

    def request_update(self) -> int: ...

    def update_leaders(
        self,
        leaders: Mapping[TopicPartition, tuple[int, int]],
        endpoints: Iterable[BrokerNode] = (),
    ) -> bool: ...


class SenderClient(Protocol):
    """What the Sender uses of the network client (:class:`~kafkaline.net.NetworkClient`);
    unit tests pass a fake."""

    @property
    def metadata(self) -> SenderMetadata: ...

    def now(self) -> float: ...

    def ready(self, node_id: int, now: float) -> bool: ...

    def connection_delay(self, node_id: int, now: float) -> float: ...

    def send(
        self,
        node_id: int,
        request: Request,
        on_complete: OnComplete | None = None,
        now: float | None = None,
        *,
        version: int | None = None,
    ) -> int: ...

    def api_versions(self, node_id: int) -> Mapping[int, int]: ...

    def poll(self, timeout_ms: float, now: float | None = None) -> list[ClientResponse]: ...

    def in_flight_request_count(self, node_id: int | None = None) -> int: ...

    def least_loaded_node(self, now: float) -> int | None: ...

    def wakeup(self) -> None: ...

    def close(self) -> list[ClientResponse]: ...
