"""The network client's settings: the part of :class:`~kafkaline.config.ProducerConfig` the
net layer uses, plus a few settings the producer configuration does not expose (yet)."""

from __future__ import annotations

from dataclasses import dataclass, field

from kafkaline.config import METADATA_RECOVERY_STRATEGIES, ExponentialBackoff, ProducerConfig
from kafkaline.errors import ConfigError
from kafkaline.net.transport import SocketOptions
from kafkaline.protocol import DEFAULT_MAX_FRAME_SIZE
from kafkaline.protocol.api import MetadataRequest, ProduceRequest

#: Java's ``socket.connection.setup.timeout.ms`` default.
DEFAULT_CONNECTION_SETUP_TIMEOUT_MS = 10_000
#: Java's ``metadata.max.idle.ms`` default: a topic not used for this long is no longer
#: asked for in metadata requests.
DEFAULT_TOPIC_EXPIRY_MS = 5 * 60 * 1000

#: APIs a producer cannot work without: a broker sharing no version of them is refused when
#: the connection is set up, with a NoCompatibleVersionError naming the API.
PRODUCER_REQUIRED_APIS: frozenset[int] = frozenset(
    {ProduceRequest.API_KEY, MetadataRequest.API_KEY}
)


@dataclass(frozen=True, slots=True, kw_only=True)
class NetworkSettings:
    """Everything :class:`~kafkaline.net.client.NetworkClient` and its connections need.

    Build it from a producer configuration with :meth:`from_config`; tests build it directly.
    Times are in milliseconds.
    """

    bootstrap_servers: tuple[tuple[str, int], ...]
    client_id: str = ""
    request_timeout_ms: int = 30_000
    max_in_flight_requests_per_connection: int = 5
    #: -1: never close idle connections.
    connections_max_idle_ms: int = 9 * 60 * 1000
    connection_setup_timeout_ms: int = DEFAULT_CONNECTION_SETUP_TIMEOUT_MS
    reconnect_backoff: ExponentialBackoff = field(
        default_factory=lambda: ExponentialBackoff(initial_ms=50, max_ms=1000)
    )
    metadata_max_age_ms: int = 5 * 60 * 1000
    #: Wait between metadata refreshes that failed (and the least wait between any two).
    metadata_refresh_backoff: ExponentialBackoff = field(
        default_factory=lambda: ExponentialBackoff(initial_ms=100, max_ms=1000)
    )
    topic_expiry_ms: int = DEFAULT_TOPIC_EXPIRY_MS
    #: "rebootstrap": when no known broker is reachable, go back to the bootstrap servers
    #: (KIP-899); "none": keep trying the known brokers.
    metadata_recovery_strategy: str = "rebootstrap"
    #: With "rebootstrap": also go back when refreshes have failed this long (KIP-1102).
    metadata_recovery_rebootstrap_trigger_ms: int = 5 * 60 * 1000
    #: Never ask the broker to create a topic by asking for its metadata unless the user asked.
    allow_auto_topic_creation: bool = False
    socket_options: SocketOptions = field(default_factory=SocketOptions)
    client_software_name: str = "kafkaline"
    client_software_version: str = "0.0.0"
    required_api_keys: frozenset[int] = PRODUCER_REQUIRED_APIS
    max_response_frame_size: int = DEFAULT_MAX_FRAME_SIZE

    def __post_init__(self) -> None:
        if not self.bootstrap_servers:
            raise ConfigError("bootstrap_servers must name at least one host:port")
        for name in (
            "request_timeout_ms",
            "connection_setup_timeout_ms",
            "metadata_max_age_ms",
            "topic_expiry_ms",
            "metadata_recovery_rebootstrap_trigger_ms",
        ):
            if getattr(self, name) < 0:
                raise ConfigError(f"{name}={getattr(self, name)!r} is invalid: must be >= 0")
        if self.max_in_flight_requests_per_connection < 1:
            raise ConfigError(
                "max_in_flight_requests_per_connection="
                f"{self.max_in_flight_requests_per_connection!r} is invalid: must be >= 1"
            )
        if self.metadata_recovery_strategy not in METADATA_RECOVERY_STRATEGIES:
            raise ConfigError(
                f"metadata_recovery_strategy={self.metadata_recovery_strategy!r} is invalid: "
                f"must be one of {', '.join(METADATA_RECOVERY_STRATEGIES)}"
            )
        if self.connections_max_idle_ms < -1:
            raise ConfigError(
                f"connections_max_idle_ms={self.connections_max_idle_ms!r} is invalid: "
                "must be >= 0, or -1 for never"
            )

    @classmethod
    def from_config(
        cls,
        config: ProducerConfig,
        *,
        allow_auto_topic_creation: bool = False,
        connection_setup_timeout_ms: int = DEFAULT_CONNECTION_SETUP_TIMEOUT_MS,
    ) -> NetworkSettings:
        """The settings for a producer's network client.

        >>> config = ProducerConfig(bootstrap_servers="localhost:9092", request_timeout_ms=5000)
        >>> NetworkSettings.from_config(config).request_timeout_ms
        5000
        """
        return cls(
            bootstrap_servers=config.bootstrap_addresses,
            client_id=config.client_id,
            request_timeout_ms=config.request_timeout_ms,
            max_in_flight_requests_per_connection=config.max_in_flight_requests_per_connection,
            connections_max_idle_ms=config.connections_max_idle_ms,
            connection_setup_timeout_ms=connection_setup_timeout_ms,
            reconnect_backoff=config.reconnect_backoff,
            metadata_max_age_ms=config.metadata_max_age_ms,
            metadata_recovery_strategy=config.metadata_recovery_strategy,
            metadata_recovery_rebootstrap_trigger_ms=config.metadata_recovery_rebootstrap_trigger_ms,
            metadata_refresh_backoff=config.retry_backoff,
            allow_auto_topic_creation=allow_auto_topic_creation,
            socket_options=SocketOptions(
                send_buffer_bytes=config.send_buffer_bytes,
                receive_buffer_bytes=config.receive_buffer_bytes,
            ),
            client_software_version=_package_version(),
        )


def _package_version() -> str:
    # Read when settings are made, not at import: the package may still be importing then.
    import kafkaline

    return kafkaline.__version__


def shortest_deadline_span(settings: NetworkSettings) -> float:
    """How far ahead of its making every connection deadline lies at least: the shortest of
    the request, setup and idle timeouts."""
    spans = [settings.request_timeout_ms, settings.connection_setup_timeout_ms]
    if settings.connections_max_idle_ms >= 0:
        spans.append(settings.connections_max_idle_ms)
    return float(min(spans))
