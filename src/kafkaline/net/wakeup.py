"""The socket pair another thread writes a byte to, to interrupt the I/O thread's poll."""

from __future__ import annotations

import selectors
import socket
import threading
from typing import Final

from kafkaline.net.poller import Poller

__all__ = ["Wakeup"]

_WAKEUP_BYTE: Final = b"\x00"


class Wakeup:
    """Wakes a :class:`~kafkaline.net.client.NetworkClient`'s poll from any thread.

    The reading end is registered with the poller with no connection (``None``): when the
    poll reports it, the I/O thread calls :meth:`drain`. Raises OSError if the sockets cannot
    be made or registered (nothing is left open then).
    """

    __slots__ = ("_lock", "_pending", "_stopped", "receiver", "sender")

    def __init__(self, poller: Poller) -> None:
        # The lock guards the pending flag and the sockets' lifetime: wakeup() runs in other
        # threads and must never write to a socket close() is closing.
        self._lock = threading.Lock()
        self._pending = False
        self._stopped = False
        receiver, sender = socket.socketpair()
        try:
            receiver.setblocking(False)
            sender.setblocking(False)
            poller.register(receiver.fileno(), selectors.EVENT_READ, None)
        except BaseException:
            receiver.close()
            sender.close()
            raise
        self.receiver = receiver
        self.sender = sender

    def wakeup(self) -> None:
        """Interrupt a poll that is waiting (or make the next one return at once). Safe from
        any thread; cheap when a wakeup is already pending."""
        if self._pending:
            # Pending: the byte is written and not yet read, or being read by a poll that
            # then returns, whose Sender pass sees what this call was for (as when the flag
            # is found set under the lock). Unlocked: send()'s general path calls this for
            # every record appended while a full batch waits for the I/O thread.
            return
        with self._lock:
            if self._stopped or self._pending:
                return
            self._pending = True
            # Non-blocking, one byte, and at most one unread byte exists (the flag): it
            # cannot block, so sending under the lock is safe and keeps close() from racing.
            self.sender.send(_WAKEUP_BYTE)

    def drain(self) -> None:
        """Read the byte (the I/O thread, when the poll reported the reading end)."""
        # Read, then clear the flag: a wakeup() after this writes a new byte, one in between
        # finds the flag set and writes none, which is fine as this poll returns and the
        # Sender's next pass sees what that wakeup() was for. The selector said a byte is
        # there, and only this thread reads: recv cannot block. No lock: only this thread
        # closes the sockets, and wakeup() holds the lock while it writes the byte, so taking
        # it here made this thread, woken by that very byte, block until the writer's send
        # returned: one more thread switch per record sent one at a time.
        self.receiver.recv(64)
        self._pending = False

    def stop(self) -> bool:
        """Make :meth:`wakeup` do nothing from now on; False if it was stopped already."""
        with self._lock:
            if self._stopped:
                return False
            self._stopped = True
            return True

    def close(self) -> None:
        """Close both sockets (after :meth:`stop`)."""
        with self._lock:
            self.receiver.close()
            self.sender.close()
