"""What a finished request hands back: :class:`ClientResponse`, given to the request's callback
and returned by :meth:`NetworkClient.poll() <kafkaline.net.client.NetworkClient.poll>`."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import NamedTuple, TypeVar

from kafkaline.errors import KafkaError, ProtocolError
from kafkaline.protocol import Request, Response
from kafkaline.protocol.versions import api_name

R = TypeVar("R", bound=Response)

# The client's logger: callbacks run as part of its poll.
_log = logging.getLogger("kafkaline.net.client")


class ClientResponse(NamedTuple):
    """The outcome of one request sent with :meth:`NetworkClient.send()
    <kafkaline.net.client.NetworkClient.send>`. Immutable.

    A named tuple rather than a frozen dataclass: one is made per request, and a frozen
    dataclass's ``__init__`` sets each of its eight fields through ``object.__setattr__``
    (see docs/performance.md, Notes moved from the code).

    Exactly one of three cases:

    * ``response`` is the decoded response and ``error`` is None;
    * ``error`` says why no response came: the connection was lost
      (:class:`~kafkaline.errors.KafkaConnectionError`), or the broker did not answer in time
      (:class:`~kafkaline.errors.RequestTimeoutError`, also a connection error: the connection
      was closed). Both are retriable; the request may or may not have reached the broker;
    * both are None: the request expects no response (Produce with ``acks=0``) and was written
      to the socket.

    Broker error codes inside a response are the caller's to read.
    """

    node_id: int
    request: Request
    api_version: int
    correlation_id: int
    response: Response | None
    error: KafkaError | None
    #: Monotonic milliseconds when the request was queued, and when it completed.
    sent_at_ms: float
    completed_at_ms: float

    @property
    def latency_ms(self) -> float:
        """Milliseconds from sending to completion."""
        return self.completed_at_ms - self.sent_at_ms

    @property
    def api(self) -> str:
        """The request's API and version, for messages: ``"Produce(0) v11"``."""
        return f"{api_name(self.request.API_KEY)} v{self.api_version}"

    def response_as(self, kind: type[R]) -> R:
        """The response, typed as ``kind``.

        Raises ``error`` if the request failed, and ProtocolError if there is no response of
        that type (a request without response, or the wrong type).

        >>> produce_response = client_response.response_as(ProduceResponse)  # doctest: +SKIP
        """
        if self.error is not None:
            raise self.error
        response = self.response
        if not isinstance(response, kind):
            got = "no response" if response is None else type(response).__name__
            raise ProtocolError(f"{self.api}: expected a {kind.__name__}, got {got}")
        return response


#: Called in the I/O thread, inside :meth:`NetworkClient.poll()
#: <kafkaline.net.client.NetworkClient.poll>`, when a request completes.
OnComplete = Callable[[ClientResponse], None]


class InternalCallback:
    """A callback of the client's own requests (metadata): its responses are handled by the
    client and not returned by :meth:`NetworkClient.poll()
    <kafkaline.net.client.NetworkClient.poll>`."""

    __slots__ = ("_function",)

    def __init__(self, function: OnComplete) -> None:
        self._function = function

    def __call__(self, response: ClientResponse) -> None:
        self._function(response)


def run_callbacks(
    completed: Iterable[tuple[ClientResponse, OnComplete | None]],
) -> list[ClientResponse]:
    """Call each completed request's callback; the responses, but those of
    :class:`InternalCallback` s. If callbacks raise, every callback still runs; the first
    exception is raised after."""
    responses: list[ClientResponse] = []
    first_error: BaseException | None = None
    for response, callback in completed:
        if not isinstance(callback, InternalCallback):
            responses.append(response)
        if callback is None:
            continue
        try:
            callback(response)
        except Exception as error:
            if first_error is None:
                first_error = error
            else:
                _log.exception("a request callback raised (after an earlier one did)")
    if first_error is not None:
        raise first_error
    return responses
