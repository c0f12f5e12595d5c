"""Loopback ports for local test servers: find a free one, wait until one is free again."""

from __future__ import annotations

import socket
import time

LOOPBACK = "127.0.0.1"


def find_free_port(host: str = LOOPBACK) -> int:
    """A port on ``host`` that nobody listens on right now (the OS picks it).

    Another process may take it before we use it; callers check again just before binding
    (:func:`port_is_free`) and fail clearly if it was taken.

    >>> 0 < find_free_port() < 65536
    True
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


def port_is_free(port: int, host: str = LOOPBACK) -> bool:
    """Whether a server could bind ``host:port`` now.

    SO_REUSEADDR mirrors what the broker (Rust's std/tokio listener) sets, so connections of
    a killed server lingering in TIME_WAIT do not count as "in use"; a live listener does.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
        return True


def wait_until_port_free(port: int, timeout: float, host: str = LOOPBACK) -> bool:
    """Poll :func:`port_is_free` until it is true or ``timeout`` seconds pass."""
    deadline = time.monotonic() + timeout
    while True:
        if port_is_free(port, host):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)
