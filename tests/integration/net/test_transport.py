"""TcpTransport over loopback: socket options, refused connections and closed peers become
KafkaConnectionErrors naming host:port."""

from __future__ import annotations

import os
import selectors
import socket
import time
from collections.abc import Iterator

import pytest

from kafkaline.errors import KafkaConnectionError
from kafkaline.net.transport import SocketOptions, TcpTransport, resolve_broker_address
from kafkaline.testing._ports import find_free_port

pytestmark = pytest.mark.timeout(30)


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    with socket.create_server(("127.0.0.1", 0)) as server:
        yield server


def wait_writable(transport: TcpTransport, timeout: float = 5.0) -> None:
    with selectors.DefaultSelector() as selector:
        selector.register(transport.fileno(), selectors.EVENT_WRITE)
        assert selector.select(timeout), "socket never became writable"


def connected_transport(port: int, options: SocketOptions | None = None) -> TcpTransport:
    [address, *_] = resolve_broker_address("127.0.0.1", port)
    transport = TcpTransport("127.0.0.1", port, address, options or SocketOptions())
    if not transport.connect():
        wait_writable(transport)
        transport.finish_connect()
    return transport


def test_refused_connection_names_the_broker_address() -> None:
    port = find_free_port()
    [address] = resolve_broker_address("127.0.0.1", port)
    transport = TcpTransport("127.0.0.1", port, address, SocketOptions())
    with pytest.raises(KafkaConnectionError, match=rf"127\.0\.0\.1:{port}: Connection refused"):
        if not transport.connect():
            wait_writable(transport)
            transport.finish_connect()
    transport.close()


def test_options_bytes_both_ways_and_a_closed_peer(listener: socket.socket) -> None:
    port = listener.getsockname()[1]
    options = SocketOptions(send_buffer_bytes=65536, receive_buffer_bytes=32768)
    transport = connected_transport(port, options)
    peer, _ = listener.accept()
    try:
        with socket.socket(fileno=socket.dup(transport.fileno())) as view:
            assert view.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1
            assert view.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF) >= 65536
            assert view.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF) >= 32768
        assert not os.get_blocking(transport.fileno())

        data = bytearray(b"abcdefgh")
        assert transport.send([memoryview(data)[:3], memoryview(data)[3:]]) == 8
        assert peer.recv(100) == b"abcdefgh"

        buffer = memoryview(bytearray(16))
        assert transport.recv_into(buffer) == 0  # nothing yet: no blocking, no error
        peer.sendall(b"xyz")
        deadline = time.monotonic() + 5
        while (count := transport.recv_into(buffer)) == 0 and time.monotonic() < deadline:
            time.sleep(0.001)
        assert bytes(buffer[:count]) == b"xyz"

        peer.close()
        with pytest.raises(KafkaConnectionError, match=rf"127\.0\.0\.1:{port} closed"):
            while time.monotonic() < deadline:
                transport.recv_into(buffer)
                time.sleep(0.001)
    finally:
        peer.close()
        transport.close()
    transport.close()  # idempotent
    with pytest.raises(KafkaConnectionError, match="not open"):
        transport.send([memoryview(b"x")])


def test_send_on_a_reset_connection_is_a_connection_error(listener: socket.socket) -> None:
    port = listener.getsockname()[1]
    transport = connected_transport(port)
    peer, _ = listener.accept()
    # SO_LINGER 0: close with a reset, so the next writes fail.
    peer.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    peer.close()
    try:
        with pytest.raises(
            KafkaConnectionError, match=rf"cannot send to broker at 127\.0\.0\.1:{port}"
        ):
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:
                transport.send([memoryview(b"x" * 1000)])
                time.sleep(0.01)
    finally:
        transport.close()
