"""The types a :class:`~kafkaline.net.connection.BrokerConnection` is built from: its states,
the SASL authenticator it drives, and its requests on their way out and in flight."""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from typing import Protocol

from kafkaline.net.response import ClientResponse, OnComplete
from kafkaline.protocol import Request, Response
from kafkaline.protocol.versions import api_name

__all__ = [
    "Authenticator",
    "AuthenticatorFactory",
    "Completion",
    "ConnectionState",
    "SentRequest",
    "SetupRequest",
]


class ConnectionState(enum.Enum):
    """Where a :class:`BrokerConnection` is in its life."""

    DISCONNECTED = "disconnected"
    #: TCP connect (and, later, the TLS handshake) under way.
    CONNECTING = "connecting"
    #: Waiting for the ApiVersions response, to choose a version per API.
    CHECKING_API_VERSIONS = "checking_api_versions"
    #: Running the SASL exchange (only with an :class:`Authenticator`).
    AUTHENTICATING = "authenticating"
    #: Versions chosen (and authenticated): requests may be sent.
    READY = "ready"


#: The next request of a connection-setup exchange, and its version.
SetupRequest = tuple[Request, int]


class Authenticator(Protocol):
    """A SASL exchange run on each new connection, after ApiVersions and before READY.

    Implemented by the security issue (PLAIN, SCRAM, OAUTHBEARER); the connection only drives
    it. Each method returns the next request to send (and its version) or None when the
    exchange is complete; raising (e.g. ``SaslAuthenticationFailedError``) closes the
    connection with that error.
    """

    def first_request(self, api_versions: Mapping[int, int]) -> SetupRequest | None:
        """The first request, given the versions chosen for this broker."""
        ...

    def on_response(self, response: Response) -> SetupRequest | None:
        """Handle the response to the previous request; the next request or None."""
        ...


#: Makes an :class:`Authenticator` for one connection attempt to ``(host, port)``.
AuthenticatorFactory = Callable[[str, int], Authenticator]

#: A finished request and the callback that wants it.
Completion = tuple[ClientResponse, OnComplete | None]


class SentRequest:
    """A request written (or being written) whose outcome is not known yet, and its bytes
    still to be written: ``views[first:]``, in order (the frame and the record batches it
    references); the first of them shrinks as the socket takes its bytes, and those written
    are released.

    One object per request, both on its way out and awaiting its answer, not per buffer
    nor per queue: a produce request of the bulk paths has a buffer per batch it references,
    and the I/O thread's cost there is mostly Python calls per object (see the Sender)."""

    __slots__ = (
        "correlation_id",
        "deadline",
        "expects_response",
        "first",
        "on_complete",
        "request",
        "sent_at",
        "setup_handler",
        "version",
        "views",
    )

    def __init__(
        self,
        request: Request,
        version: int,
        correlation_id: int,
        sent_at: float,
        deadline: float,
        on_complete: OnComplete | None,
        setup_handler: Callable[[Response, float], None] | None,
        expects_response: bool,
        views: list[memoryview],
    ) -> None:
        self.request = request
        self.version = version
        self.correlation_id = correlation_id
        self.sent_at = sent_at
        self.deadline = deadline
        self.on_complete = on_complete
        # Requests of the connection's own setup (ApiVersions, SASL) are handled here and
        # never reach a caller.
        self.setup_handler = setup_handler
        #: False for Produce with acks=0 (``request.has_response()``, as the framing asked).
        self.expects_response = expects_response
        self.views = views
        self.first = 0

    def describe(self) -> str:
        return (
            f"{api_name(self.request.API_KEY)} v{self.version} "
            f"(correlation id {self.correlation_id})"
        )

    def unwritten(self) -> list[memoryview]:
        """The views still to be written."""
        first = self.first
        return self.views[first:] if first else self.views
