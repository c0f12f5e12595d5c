"""The requests of one :class:`~kafkaline.net.connection.BrokerConnection`: frames on their way
out and requests awaiting their responses, oldest first (Kafka answers in order).

The connection frames a request, appends it here, and hands the queue its transport to
write; responses the protocol decodes come back through :meth:`RequestQueue.dispatch`. When the
connection closes, :meth:`RequestQueue.fail_all` forgets every request and fails those still in
flight.
"""

from __future__ import annotations

from collections import deque

from kafkaline.errors import (
    CorrelationIdMismatchError,
    KafkaConnectionError,
    KafkaError,
    RequestTimeoutError,
)
from kafkaline.net.connection_types import Completion, SentRequest
from kafkaline.net.response import ClientResponse
from kafkaline.net.transport import Transport
from kafkaline.protocol import Response

__all__ = ["RequestQueue", "completion", "request_error", "request_timeout", "unmatched_response"]

_MAX_BUFFERS_PER_WRITE = 64
#: Queued frames are offered to one write until they hold this many bytes. A socket takes at
#: most its send buffer's free space (256 KiB a write on loopback here, see docs/performance.md,
#: "perbatch"), while sendmsg converts every buffer offered, taken or not; a socket that takes
#: all that was offered is written again at once.
_OFFER_BYTES = 256 * 1024


def completion(
    node_id: int,
    in_flight: SentRequest,
    response: Response | None,
    error: KafkaError | None,
    now: float,
) -> Completion:
    """The outcome of ``in_flight`` at ``now`` and the callback that wants it."""
    # By position (ClientResponse's field order): keywords are slower, once per response
    # (see docs/performance.md, Notes moved from the code).
    return (
        ClientResponse(
            node_id,
            in_flight.request,
            in_flight.version,
            in_flight.correlation_id,
            response,
            error,
            in_flight.sent_at,
            now,
        ),
        in_flight.on_complete,
    )


def request_error(request: SentRequest, description: str, reason: KafkaError | None) -> KafkaError:
    """Why ``request`` to ``description`` failed when its connection closed for ``reason``
    (None: closed by the client)."""
    # One exception object per request: each may be raised in a different thread.
    what = f"{request.describe()} to {description}"
    if reason is None:
        return KafkaConnectionError(f"{what} failed: the connection was closed by the client")
    error: KafkaError
    if isinstance(reason, RequestTimeoutError):
        error = RequestTimeoutError(f"{what} failed: {reason}")
    else:
        error = KafkaConnectionError(f"{what} failed: connection lost: {reason}")
    error.__cause__ = reason
    return error


def request_timeout(expired: SentRequest, timeout_ms: int, description: str) -> KafkaError:
    """Why the connection to ``description`` closes: ``expired`` got no answer in time."""
    return RequestTimeoutError(
        f"{expired.describe()} got no response within request_timeout_ms={timeout_ms}; "
        f"closed the connection to {description}"
    )


def unmatched_response(description: str, correlation_id: int) -> KafkaError:
    """A response :meth:`RequestQueue.dispatch` found no request for (ClientProtocol checks
    the order already; this guards the queue's own bookkeeping)."""
    return CorrelationIdMismatchError(
        f"{description}: response with correlation id {correlation_id} matches "
        "no request awaiting one"
    )


class RequestQueue:
    """Outgoing frames and the requests awaiting a response, of one connection.

    The connection reads and appends to the two deques itself on its per-request paths
    (a Python call less each on the I/O thread); writing, dispatching a response and
    draining on close are here.
    """

    __slots__ = ("awaiting", "outgoing", "unwritten_without_response")

    def __init__(self) -> None:
        #: Requests that expect a response, oldest first (Kafka answers in order).
        self.awaiting: deque[SentRequest] = deque()
        #: The frames still (partly) to be written, in order.
        self.outgoing: deque[SentRequest] = deque()
        #: Requests without response (acks=0) still being written: in flight until written.
        self.unwritten_without_response = 0

    @property
    def in_flight_count(self) -> int:
        """Requests sent and not completed (awaiting a response, or still being written)."""
        return len(self.awaiting) + self.unwritten_without_response

    def write(
        self, transport: Transport, node_id: int, now: float, completed: list[Completion]
    ) -> bool:
        """Write queued frames until the socket takes no more; whether it took any bytes.
        A request without response is completed once written whole."""
        outgoing = self.outgoing
        if len(outgoing) == 1 and len(outgoing[0].views) == 1 and not outgoing[0].first:
            # One request of one buffer, none of it written (records sent one at a time):
            # _write_frames() written out for it, the I/O thread's usual write.
            frame = outgoing[0]
            views = frame.views
            view = views[0]
            written = transport.send(views)
            if written == 0:
                return False
            if written < len(view):
                views[0] = view[written:]
                return True  # the socket took less than offered: its buffer is full
            view.release()
            outgoing.popleft()
            if not frame.expects_response:
                self.unwritten_without_response -= 1
                completed.append(completion(node_id, frame, None, None, now))
            return True
        return self._write_frames(transport, node_id, now, completed)

    def _write_frames(
        self, transport: Transport, node_id: int, now: float, completed: list[Completion]
    ) -> bool:
        """Write queued requests, several buffers each (scattered batches) or several
        requests, until the socket takes no more."""
        outgoing = self.outgoing
        wrote = False
        while outgoing:
            if len(outgoing) == 1:
                buffers = outgoing[0].unwritten()
            else:
                buffers = []
                offered = 0
                for frame in outgoing:
                    unwritten = frame.unwritten()
                    buffers += unwritten
                    offered += sum(map(len, unwritten))
                    if offered >= _OFFER_BYTES or len(buffers) >= _MAX_BUFFERS_PER_WRITE:
                        del buffers[_MAX_BUFFERS_PER_WRITE:]
                        break
            written = transport.send(buffers)
            if written == 0:
                return wrote
            wrote = True
            while written:
                frame = outgoing[0]
                views = frame.views
                index = frame.first
                count = len(views)
                while index < count and written:
                    view = views[index]
                    size = len(view)
                    if written < size:
                        views[index] = view[written:]
                        frame.first = index
                        return True  # the socket took less than offered: its buffer is full
                    written -= size
                    view.release()
                    index += 1
                frame.first = index
                if index < count:
                    break  # all that was offered was taken: offer the rest
                outgoing.popleft()
                if not frame.expects_response:
                    self.unwritten_without_response -= 1
                    completed.append(completion(node_id, frame, None, None, now))
        return wrote

    def dispatch(
        self,
        correlation_id: int,
        response: Response,
        node_id: int,
        now: float,
        completed: list[Completion],
    ) -> bool:
        """Hand ``response`` to the oldest request awaiting one: its setup handler (the
        connection's own requests) or, as a completion, its caller. False, and nothing done,
        if that request has another correlation id or there is none."""
        awaiting = self.awaiting
        if not awaiting or awaiting[0].correlation_id != correlation_id:
            return False
        in_flight = awaiting.popleft()
        if in_flight.setup_handler is not None:
            in_flight.setup_handler(response, now)
            return True
        completed.append(completion(node_id, in_flight, response, None, now))
        return True

    def oldest_expired(self, now: float) -> SentRequest | None:
        """The request in flight whose deadline passed first, if any did by ``now``."""
        candidates = []
        if self.awaiting:
            candidates.append(self.awaiting[0])
        if self.outgoing:
            candidates.append(self.outgoing[0])
        expired = [in_flight for in_flight in candidates if in_flight.deadline <= now]
        return min(expired, key=lambda in_flight: in_flight.deadline) if expired else None

    def fail_all(
        self,
        node_id: int,
        description: str,
        reason: KafkaError | None,
        now: float,
        completed: list[Completion],
    ) -> int:
        """The connection to ``description`` closed (``reason`` None: by the client): forget
        every request and fail those of callers, oldest first. How many were in flight."""
        in_flight = self._drain()
        for request in in_flight:
            if request.setup_handler is None:
                error = request_error(request, description, reason)
                completed.append(completion(node_id, request, None, error, now))
        return len(in_flight)

    def _drain(self) -> list[SentRequest]:
        """Forget every request, releasing the bytes not written; those that were in flight,
        oldest first."""
        in_flight = [frame for frame in self.outgoing if not frame.expects_response]
        in_flight.extend(self.awaiting)
        in_flight.sort(key=lambda request: request.sent_at)
        for frame in self.outgoing:
            for view in frame.unwritten():
                view.release()
        self.outgoing.clear()
        self.awaiting.clear()
        self.unwritten_without_response = 0
        return in_flight
