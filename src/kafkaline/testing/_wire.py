"""One blocking request/response exchange over a plain socket, for LocalBroker's probes, the
demo and tests. The real client (kafkaline.net) is non-blocking; this is deliberately the
simplest thing that speaks the protocol correctly."""

from __future__ import annotations

import socket
import time
from typing import TypeVar

from kafkaline.protocol import ClientProtocol, Request, Response

_R = TypeVar("_R", bound=Response)


class BlockingConnection:
    """A socket plus a :class:`ClientProtocol`: send a request, wait for its response.

    >>> with BlockingConnection("127.0.0.1", 9092) as conn:  # doctest: +SKIP
    ...     versions = conn.request(ApiVersionsRequest(), version=3)
    """

    def __init__(
        self, host: str, port: int, timeout: float = 10.0, client_id: str = "kafkaline"
    ) -> None:
        self._timeout = timeout
        self._sock = socket.create_connection((host, port), timeout=timeout)
        self._protocol = ClientProtocol(client_id)

    def request(self, request: Request, version: int, response_type: type[_R] | None = None) -> _R:
        """Send ``request`` at ``version`` and return its decoded response. Raises OSError on
        network trouble and TimeoutError when no answer comes within the timeout."""
        self._sock.sendall(self._protocol.send(request, version))
        deadline = time.monotonic() + self._timeout
        while True:
            item = self._protocol.next_response()
            if item is not None:
                response = item[1]
                if response_type is not None and not isinstance(response, response_type):
                    raise TypeError(f"expected {response_type.__name__}, got {type(response)}")
                return response  # type: ignore[return-value]
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"no response to {type(request).__name__} in {self._timeout}s")
            self._sock.settimeout(remaining)
            data = self._sock.recv(1 << 20)
            if not data:
                raise ConnectionError("broker closed the connection")
            self._protocol.receive_data(data)

    def send_only(self, request: Request, version: int) -> None:
        """Send a request that expects no response (Produce with acks=0)."""
        self._sock.sendall(self._protocol.send(request, version))

    def close(self) -> None:
        self._sock.close()

    def __enter__(self) -> BlockingConnection:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
