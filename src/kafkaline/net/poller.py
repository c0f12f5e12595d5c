"""The I/O thread's selector: file descriptors registered with a connection (None for the
client's wakeup socket), ``select`` giving ``(connection, events)`` pairs. Used only by
:class:`~kafkaline.net.client.NetworkClient`."""

from __future__ import annotations

import contextlib
import math
import select
import selectors
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from kafkaline.net.connection import BrokerConnection

__all__ = ["HAS_EPOLL", "EpollPoller", "Poller", "SelectorPoller", "new_poller"]


class SelectorPoller:
    """The client's selector: file descriptors registered with a connection (None for the
    wakeup socket) and events; ``select`` gives ``(connection, events)`` pairs. This one
    wraps :mod:`selectors` (any platform); :class:`EpollPoller` is used where epoll is."""

    __slots__ = ("_selector",)

    def __init__(self) -> None:
        self._selector: selectors.BaseSelector = selectors.DefaultSelector()

    def register(self, fd: int, events: int, conn: BrokerConnection | None) -> None:
        self._selector.register(fd, events, conn)

    def modify(self, fd: int, events: int, conn: BrokerConnection | None) -> None:
        self._selector.modify(fd, events, conn)

    def unregister(self, fd: int) -> None:
        self._selector.unregister(fd)

    def select(self, timeout_ms: float) -> list[tuple[BrokerConnection | None, int]]:
        """Wait up to ``timeout_ms`` (infinity: no limit) for events."""
        timeout = None if timeout_ms == math.inf else timeout_ms / 1000
        return [(key.data, events) for key, events in self._selector.select(timeout)]

    def close(self) -> None:
        self._selector.close()


class EpollPoller:
    """:class:`SelectorPoller` on epoll itself. selectors' EpollSelector keeps a key object
    per registration and runs more Python per select (its _key_from_fd included); the I/O
    thread selects twice per record sent one at a time. Events are
    translated as EpollSelector translates them (an error or hang-up reports both
    directions, masked by those registered) and the timeout rounded up to a millisecond
    as it does (no wakeup just before a deadline).

    Kept for the fewer instructions per round trip on the I/O thread (see docs/performance.md, Notes
    moved from the code)."""

    __slots__ = ("_epoll", "_registered")

    def __init__(self) -> None:
        self._epoll = select.epoll()
        self._registered: dict[int, tuple[BrokerConnection | None, int]] = {}

    def register(self, fd: int, events: int, conn: BrokerConnection | None) -> None:
        if fd in self._registered:
            raise KeyError(f"file descriptor {fd} is already registered")
        self._epoll.register(fd, _EPOLL_MASKS[events])
        self._registered[fd] = (conn, events)

    def modify(self, fd: int, events: int, conn: BrokerConnection | None) -> None:
        self._epoll.modify(fd, _EPOLL_MASKS[events])
        self._registered[fd] = (conn, events)

    def unregister(self, fd: int) -> None:
        del self._registered[fd]
        with contextlib.suppress(OSError):  # closed already: epoll forgot it then
            self._epoll.unregister(fd)

    def select(self, timeout_ms: float) -> list[tuple[BrokerConnection | None, int]]:
        """Wait up to ``timeout_ms`` (infinity: no limit) for events."""
        if timeout_ms == math.inf:
            timeout = -1.0
        elif timeout_ms > 0:
            timeout = math.ceil(timeout_ms) * 1e-3
        else:
            timeout = 0.0
        registered = self._registered
        try:
            ready = self._epoll.poll(timeout, len(registered) or 1)
        except InterruptedError:
            return []
        result: list[tuple[BrokerConnection | None, int]] = []
        for fd, mask in ready:
            entry = registered.get(fd)
            if entry is not None:
                events = _SELECTOR_EVENTS.get(mask)
                if events is None:
                    events = (selectors.EVENT_READ if mask & ~_EPOLLOUT else 0) | (
                        selectors.EVENT_WRITE if mask & ~_EPOLLIN else 0
                    )
                result.append((entry[0], events & entry[1]))
        return result

    def close(self) -> None:
        self._epoll.close()
        self._registered.clear()


HAS_EPOLL = hasattr(select, "epoll")
_EPOLLIN: Final = getattr(select, "EPOLLIN", 1)
_EPOLLOUT: Final = getattr(select, "EPOLLOUT", 4)
#: selectors events -> epoll mask.
_EPOLL_MASKS: Final = {
    selectors.EVENT_READ: _EPOLLIN,
    selectors.EVENT_WRITE: _EPOLLOUT,
    selectors.EVENT_READ | selectors.EVENT_WRITE: _EPOLLIN | _EPOLLOUT,
}
#: The usual epoll masks -> selectors events (others are worked out as EpollSelector does).
_SELECTOR_EVENTS: Final = {
    _EPOLLIN: selectors.EVENT_READ,
    _EPOLLOUT: selectors.EVENT_WRITE,
    _EPOLLIN | _EPOLLOUT: selectors.EVENT_READ | selectors.EVENT_WRITE,
}

#: Either poller: they answer the same calls.
Poller = EpollPoller | SelectorPoller


def new_poller() -> Poller:
    """The epoll poller where there is epoll, else the selectors one."""
    return EpollPoller() if HAS_EPOLL else SelectorPoller()
