"""The network client's pollers: the epoll one (Linux) must report what the selectors-based
one reports, which the client falls back to elsewhere."""

from __future__ import annotations

import math
import selectors
import socket
from collections.abc import Iterator
from typing import cast

import pytest

from kafkaline.net import poller as poller_module
from kafkaline.net.connection import BrokerConnection

_POLLERS: list[type[poller_module.EpollPoller | poller_module.SelectorPoller]] = [
    poller_module.SelectorPoller
]
if poller_module.HAS_EPOLL:
    _POLLERS.append(poller_module.EpollPoller)

# Stand-ins for connections: the pollers only hand them back.
A = cast(BrokerConnection, object())
B = cast(BrokerConnection, object())


@pytest.fixture(params=_POLLERS, ids=lambda kind: kind.__name__)
def poller(
    request: pytest.FixtureRequest,
) -> Iterator[poller_module.EpollPoller | poller_module.SelectorPoller]:
    made = request.param()
    yield made
    made.close()


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    left, right = socket.socketpair()
    left.setblocking(False)
    right.setblocking(False)
    yield left, right
    left.close()
    right.close()


def test_readable_and_writable_sockets_are_reported_with_their_connections(
    poller: poller_module.EpollPoller | poller_module.SelectorPoller,
    pair: tuple[socket.socket, socket.socket],
) -> None:
    left, right = pair
    poller.register(left.fileno(), selectors.EVENT_READ, A)
    poller.register(right.fileno(), selectors.EVENT_WRITE, None)
    assert poller.select(0) == [(None, selectors.EVENT_WRITE)]
    right.send(b"x")
    reported = sorted(poller.select(math.inf), key=lambda item: item[1])
    assert reported == [(A, selectors.EVENT_READ), (None, selectors.EVENT_WRITE)]
    poller.modify(right.fileno(), selectors.EVENT_READ, B)
    assert poller.select(0.5) == [(A, selectors.EVENT_READ)]
    poller.modify(left.fileno(), selectors.EVENT_READ | selectors.EVENT_WRITE, A)
    assert poller.select(0) == [(A, selectors.EVENT_READ | selectors.EVENT_WRITE)]


def test_a_peer_that_hung_up_makes_the_socket_readable(
    poller: poller_module.EpollPoller | poller_module.SelectorPoller,
    pair: tuple[socket.socket, socket.socket],
) -> None:
    left, right = pair
    poller.register(left.fileno(), selectors.EVENT_READ, A)
    right.close()
    assert poller.select(0) == [(A, selectors.EVENT_READ)]


def test_a_closed_socket_can_be_unregistered_and_its_number_reused(
    poller: poller_module.EpollPoller | poller_module.SelectorPoller,
) -> None:
    first, other = socket.socketpair()
    fd = first.fileno()
    poller.register(fd, selectors.EVENT_READ, A)
    first.close()
    poller.unregister(fd)  # after close: no error
    second, third = socket.socketpair()
    try:
        poller.register(second.fileno(), selectors.EVENT_READ, B)
        third.send(b"x")
        assert poller.select(0) == [(B, selectors.EVENT_READ)]
    finally:
        for sock in (other, second, third):
            sock.close()


def test_registering_a_descriptor_twice_is_refused(
    poller: poller_module.EpollPoller | poller_module.SelectorPoller,
    pair: tuple[socket.socket, socket.socket],
) -> None:
    left, _ = pair
    poller.register(left.fileno(), selectors.EVENT_READ, A)
    with pytest.raises(KeyError):
        poller.register(left.fileno(), selectors.EVENT_READ, B)
