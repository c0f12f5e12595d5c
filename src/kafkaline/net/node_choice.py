"""Choices the network client makes among its connections: the least loaded node (for
requests any broker answers), whether to go back to the bootstrap servers (KIP-899,
KIP-1102), and which bootstrap connection a broker reuses. Pure: they read the connections and
the metadata, and change nothing."""

from __future__ import annotations

from collections.abc import Sequence

from kafkaline.net.connection import BrokerConnection
from kafkaline.net.metadata import Metadata
from kafkaline.net.settings import NetworkSettings

__all__ = ["bootstrap_connection_to", "least_loaded", "should_rebootstrap"]


def least_loaded(
    nodes: Sequence[BrokerConnection], offset: int, now: float
) -> BrokerConnection | None:
    """A ready connection with the fewest requests in flight, else one that is connecting,
    else one that may connect now; the search starts at ``offset`` so that the bootstrap
    servers are tried in turn. None when every one is in reconnect backoff."""
    best_ready: BrokerConnection | None = None
    connecting: BrokerConnection | None = None
    connectable: BrokerConnection | None = None
    for index in range(len(nodes)):
        conn = nodes[(offset + index) % len(nodes)]
        if conn.is_ready:
            if conn.in_flight_count == 0:
                return conn
            if conn.can_send() and (
                best_ready is None or conn.in_flight_count < best_ready.in_flight_count
            ):
                best_ready = conn
        elif not conn.is_disconnected:
            connecting = connecting or conn
        elif conn.can_connect(now):
            connectable = connectable or conn
    return best_ready or connecting or connectable


def should_rebootstrap(
    settings: NetworkSettings, metadata: Metadata, now: float, *, unreachable: bool
) -> bool:
    """Whether to forget the known brokers for the bootstrap servers: every one of them is
    in reconnect backoff (``unreachable``), or refreshes have failed for
    ``metadata_recovery_rebootstrap_trigger_ms`` (KIP-1102). Never from the bootstrap view
    itself: its connections keep their backoff."""
    if settings.metadata_recovery_strategy != "rebootstrap" or metadata.cluster.is_bootstrap:
        return False
    return (
        unreachable
        or metadata.failing_for_ms(now) >= settings.metadata_recovery_rebootstrap_trigger_ms
    )


def bootstrap_connection_to(
    connections: list[BrokerConnection], host: str, port: int
) -> BrokerConnection | None:
    """The bootstrap connection (negative id) among ``connections`` to ``host:port``."""
    for conn in connections:
        if conn.node_id < 0 and (conn.host, conn.port) == (host, port):
            return conn
    return None
