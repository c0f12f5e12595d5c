"""The Kafka wire protocol, sans I/O: bytes in, typed messages out.

No sockets, threads or clocks live here, and nothing from the rest of the package is imported
except :mod:`kafkaline.errors`.

* :mod:`.primitives` - integer, varint, string, bytes, array and tagged-field codecs
* :mod:`.schema` - declarative versioned structs and the generic encoder/decoder
* :mod:`.headers` - request/response headers and their versions
* :mod:`.api` - one module per API (Produce, Fetch, Metadata, ...)
* :mod:`.framing` - :class:`ClientProtocol`, the per-connection framing state machine
* :mod:`.versions` - choosing a version per API from the broker's ApiVersions
"""

from kafkaline.protocol.framing import DEFAULT_MAX_FRAME_SIZE, ClientProtocol, InFlightRequest
from kafkaline.protocol.schema import Message, Request, Response, Versions
from kafkaline.protocol.versions import (
    CLIENT_VERSIONS,
    SUPPORTED_VERSIONS,
    VersionRange,
    broker_version_ranges,
    choose_versions,
    highest_common_version,
)

__all__ = [
    "CLIENT_VERSIONS",
    "DEFAULT_MAX_FRAME_SIZE",
    "SUPPORTED_VERSIONS",
    "ClientProtocol",
    "InFlightRequest",
    "Message",
    "Request",
    "Response",
    "VersionRange",
    "Versions",
    "broker_version_ranges",
    "choose_versions",
    "highest_common_version",
]
