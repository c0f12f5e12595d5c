"""The network client the producer's Sender thread drives: non-blocking connections to every
broker, metadata kept fresh, requests and their responses.

* :mod:`.transport` - non-blocking TCP and TLS; socket and ssl errors become kafkaline errors
* :mod:`.connection` - :class:`BrokerConnection`, one broker's state machine; runs SASL after
  ApiVersions
* :mod:`.sasl` - PLAIN, SCRAM-SHA-256/512 and OAUTHBEARER as sans-I/O state machines
* :mod:`.security` - the TLS context and the transport and SASL factories from a ProducerConfig
* :mod:`.cluster` - :class:`ClusterMetadata`, an immutable snapshot of brokers and partitions
* :mod:`.metadata` - :class:`Metadata`, when to refresh, and waiting for a topic
* :mod:`.client` - :class:`NetworkClient`, all connections multiplexed with selectors
* :mod:`.response` - :class:`ClientResponse`, what a completed request hands back
* :mod:`.settings` - :class:`NetworkSettings`, built from a ProducerConfig

Only the I/O thread touches sockets; importing this package starts nothing.
"""

from kafkaline.net.client import NetworkClient, monotonic_ms
from kafkaline.net.cluster import (
    NO_LEADER,
    BrokerNode,
    ClusterMetadata,
    PartitionMetadata,
    TopicPartition,
)
from kafkaline.net.connection import (
    Authenticator,
    AuthenticatorFactory,
    BrokerConnection,
    ConnectionState,
)
from kafkaline.net.metadata import Metadata
from kafkaline.net.response import ClientResponse, OnComplete
from kafkaline.net.settings import NetworkSettings
from kafkaline.net.transport import (
    ResolvedAddress,
    SocketOptions,
    TcpTransport,
    Transport,
    TransportFactory,
    tcp_transport_factory,
)

__all__ = [
    "NO_LEADER",
    "Authenticator",
    "AuthenticatorFactory",
    "BrokerConnection",
    "BrokerNode",
    "ClientResponse",
    "ClusterMetadata",
    "ConnectionState",
    "Metadata",
    "NetworkClient",
    "NetworkSettings",
    "OnComplete",
    "PartitionMetadata",
    "ResolvedAddress",
    "SocketOptions",
    "TcpTransport",
    "TopicPartition",
    "Transport",
    "TransportFactory",
    "monotonic_ms",
    "tcp_transport_factory",
]
