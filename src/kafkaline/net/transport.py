"""Non-blocking TCP and TLS to one broker address; foreign exceptions become kafkaline errors
here.

A :class:`Transport` moves bytes and nothing else: no Kafka framing (that is
:class:`~kafkaline.protocol.ClientProtocol`), no retries or timeouts (that is
:class:`~kafkaline.net.connection.BrokerConnection`). Every ``OSError`` a socket call raises is
translated at this boundary into :class:`~kafkaline.errors.KafkaConnectionError` with a message
that names the broker's ``host:port``.

TLS: :class:`TlsTransport` implements the same :class:`Transport` protocol. It connects like
:class:`TcpTransport`, wraps the connected socket with
``ssl.SSLContext.wrap_socket(sock, server_hostname=host, do_handshake_on_connect=False)``, drives
``do_handshake()`` from :meth:`Transport.handshake` (returning ``EVENT_READ``/``EVENT_WRITE`` on
``SSLWantReadError``/``SSLWantWriteError``) and translates ``ssl.SSLError`` here too: a
certificate that does not verify, or any other handshake refusal, is an
:class:`~kafkaline.errors.SslAuthenticationError` (not retriable); the peer closing mid-handshake
is a :class:`~kafkaline.errors.KafkaConnectionError` (retriable). The connection and the client
only see the protocol; a :data:`TransportFactory` chooses the kind per connection.
"""

from __future__ import annotations

import errno
import os
import selectors
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from kafkaline.errors import KafkaConnectionError, SslAuthenticationError

if TYPE_CHECKING:
    # At run time the TLS methods import ssl themselves: a plaintext producer never loads it.
    import ssl

# Linux allows 1024 buffers per sendmsg (IOV_MAX); a producer rarely has more than a few
# requests queued per connection, so a small cap costs nothing.
_MAX_BUFFERS_PER_SEND = 64
_HAS_SENDMSG = hasattr(socket.socket, "sendmsg")
# What connect_ex returns for a non-blocking connect still under way (Windows: WSAEWOULDBLOCK).
_CONNECT_IN_PROGRESS = frozenset(
    {errno.EINPROGRESS, errno.EWOULDBLOCK, getattr(errno, "WSAEWOULDBLOCK", errno.EINPROGRESS)}
)


@dataclass(frozen=True, slots=True)
class SocketOptions:
    """Socket settings applied before connecting. ``-1`` keeps the operating system's default
    (as Java's ``send.buffer.bytes``/``receive.buffer.bytes`` do)."""

    send_buffer_bytes: int = -1
    receive_buffer_bytes: int = -1


@dataclass(frozen=True, slots=True)
class ResolvedAddress:
    """One result of resolving a broker's host name: a socket family and address."""

    family: int
    sockaddr: tuple[Any, ...]

    def __str__(self) -> str:
        host, port = self.sockaddr[0], self.sockaddr[1]
        return f"[{host}]:{port}" if self.family == socket.AF_INET6 else f"{host}:{port}"


def resolve_broker_address(host: str, port: int) -> list[ResolvedAddress]:
    """The addresses ``host:port`` resolves to, in the resolver's order.

    Blocks for the DNS lookup (as the Java client's I/O thread does). Raises
    :class:`~kafkaline.errors.KafkaConnectionError` naming ``host:port`` if resolution fails.
    """
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
    except OSError as error:  # socket.gaierror is an OSError
        raise KafkaConnectionError(
            f"cannot resolve broker address {host}:{port}: {error}"
        ) from error
    addresses = [
        ResolvedAddress(int(family), tuple(sockaddr)) for family, _, _, _, sockaddr in infos
    ]
    if not addresses:
        raise KafkaConnectionError(f"broker address {host}:{port} resolves to no address")
    return addresses


class AddressRotation:
    """The addresses one broker's host name resolves to, taken in turn, one per attempt.

    A host whose first address is unreachable (IPv6 ``localhost`` to an IPv4-only broker)
    still connects on a later attempt; once every address was tried, the name is resolved
    again, since the broker may have moved.
    """

    def __init__(
        self, host: str, port: int, resolver: Callable[[str, int], list[ResolvedAddress]]
    ) -> None:
        self._host = host
        self._port = port
        self._resolver = resolver
        self._addresses: list[ResolvedAddress] = []
        self._next = 0

    def next_address(self) -> ResolvedAddress:
        """The address for the next attempt; raises as the resolver does."""
        if self._next >= len(self._addresses):
            self._addresses = self._resolver(self._host, self._port)
            self._next = 0
        address = self._addresses[self._next]
        self._next += 1
        return address


class Transport(Protocol):
    """A non-blocking byte stream to one broker, registered with the client's selector."""

    @property
    def description(self) -> str:
        """``host:port`` (and the resolved address), for messages."""
        ...

    def fileno(self) -> int:
        """The socket's file descriptor, for the selector."""
        ...

    def connect(self) -> bool:
        """Start connecting; True if connected at once, False if the connection is in progress
        (wait until the socket is writable, then call :meth:`finish_connect`). Raises
        KafkaConnectionError if it failed at once (e.g. connection refused)."""
        ...

    def finish_connect(self) -> None:
        """Check the outcome of a connection in progress, once the socket is writable. Raises
        KafkaConnectionError if it failed."""
        ...

    def handshake(self) -> int:
        """Advance a handshake below Kafka (TLS). Returns 0 once the transport carries Kafka
        bytes, else the selector events (``EVENT_READ``/``EVENT_WRITE``) to wait for."""
        ...

    def send(self, buffers: Sequence[memoryview]) -> int:
        """Write from ``buffers`` in order, as much as the socket takes without blocking.
        Returns the number of bytes written (0 if the socket buffer is full)."""
        ...

    def recv_into(self, buffer: memoryview) -> int:
        """Read into ``buffer`` without blocking. Returns the number of bytes read, 0 if none
        are available. Raises KafkaConnectionError when the broker closed the connection."""
        ...

    def close(self) -> None:
        """Close the socket. Idempotent."""
        ...


#: Makes the transport for one connection attempt: ``(host, port, resolved address)``.
TransportFactory = Callable[[str, int, ResolvedAddress], Transport]


class TcpTransport:
    """A plain TCP :class:`Transport` with ``TCP_NODELAY`` (Kafka requests are whole frames;
    Nagle's algorithm would only delay them)."""

    __slots__ = ("_address", "_description", "_options", "_sock")

    def __init__(
        self, host: str, port: int, address: ResolvedAddress, options: SocketOptions
    ) -> None:
        self._address = address
        self._options = options
        self._description = f"{host}:{port}"
        if f"{host}:{port}" != str(address):
            self._description += f" ({address})"
        self._sock: socket.socket | None = None

    @property
    def description(self) -> str:
        return self._description

    # fileno, send and recv_into read the socket themselves rather than through _socket():
    # each runs once or twice per request on the I/O thread, whose cost for records sent
    # one at a time is mostly Python calls (see the producer's Sender).
    def fileno(self) -> int:
        sock = self._sock
        if sock is None:
            raise self._not_open()
        return sock.fileno()

    def connect(self) -> bool:
        if self._sock is not None:
            raise KafkaConnectionError(f"connect() called twice for {self._description}")
        sock = socket.socket(self._address.family, socket.SOCK_STREAM)
        try:
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self._options.send_buffer_bytes >= 0:
                sock.setsockopt(
                    socket.SOL_SOCKET, socket.SO_SNDBUF, self._options.send_buffer_bytes
                )
            if self._options.receive_buffer_bytes >= 0:
                sock.setsockopt(
                    socket.SOL_SOCKET, socket.SO_RCVBUF, self._options.receive_buffer_bytes
                )
            code = sock.connect_ex(self._address.sockaddr)
        except OSError as error:
            sock.close()
            raise self._error("cannot connect to", error) from error
        if code != 0 and code not in _CONNECT_IN_PROGRESS:
            sock.close()
            raise KafkaConnectionError(
                f"cannot connect to broker at {self._description}: {os.strerror(code)}"
            )
        self._sock = sock
        return code == 0

    def finish_connect(self) -> None:
        sock = self._socket()
        try:
            code = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        except OSError as error:
            raise self._error("cannot connect to", error) from error
        if code:
            raise KafkaConnectionError(
                f"cannot connect to broker at {self._description}: {os.strerror(code)}"
            )

    def handshake(self) -> int:
        return 0  # plain TCP has nothing below Kafka

    def send(self, buffers: Sequence[memoryview]) -> int:
        sock = self._sock
        if sock is None:
            raise self._not_open()
        try:
            if len(buffers) == 1 or not _HAS_SENDMSG:
                return sock.send(buffers[0])
            # One system call for several queued requests, without joining their bytes.
            return sock.sendmsg(buffers[:_MAX_BUFFERS_PER_SEND])
        except BlockingIOError:
            return 0  # the socket's buffer is full: the selector says when to write again
        except OSError as error:
            raise self._error("cannot send to", error) from error

    def recv_into(self, buffer: memoryview) -> int:
        sock = self._sock
        if sock is None:
            raise self._not_open()
        try:
            count = sock.recv_into(buffer)
        except BlockingIOError:
            return 0  # nothing to read yet (a spurious wakeup)
        except OSError as error:
            raise self._error("cannot receive from", error) from error
        if count == 0:
            raise KafkaConnectionError(f"broker at {self._description} closed the connection")
        return count

    def close(self) -> None:
        sock, self._sock = self._sock, None
        if sock is not None:
            sock.close()

    def __repr__(self) -> str:
        state = "open" if self._sock is not None else "closed"
        return f"<TcpTransport {self._description} {state}>"

    def _socket(self) -> socket.socket:
        if self._sock is None:
            raise self._not_open()
        return self._sock

    def _not_open(self) -> KafkaConnectionError:
        return KafkaConnectionError(f"the connection to {self._description} is not open")

    def _error(self, what: str, error: OSError) -> KafkaConnectionError:
        reason = error.strerror or str(error) or type(error).__name__
        return KafkaConnectionError(f"{what} broker at {self._description}: {reason}")


class TlsTransport(TcpTransport):
    """A :class:`Transport` speaking TLS over TCP with ``context`` (which decides what is
    verified). The handshake runs in :meth:`handshake`, driven by the connection's selector
    events; ``server_hostname`` is the host the broker was reached at (SNI, and the name its
    certificate must carry when the context checks host names)."""

    __slots__ = ("_context", "_host", "_tls")

    def __init__(
        self,
        host: str,
        port: int,
        address: ResolvedAddress,
        options: SocketOptions,
        context: ssl.SSLContext,
    ) -> None:
        super().__init__(host, port, address, options)
        self._context = context
        self._host = host
        self._tls: ssl.SSLSocket | None = None

    def handshake(self) -> int:
        import ssl

        tls = self._tls
        if tls is None:
            sock = self._socket()
            try:
                tls = self._context.wrap_socket(
                    sock, server_hostname=self._host, do_handshake_on_connect=False
                )
            except ssl.SSLError as error:
                raise self._tls_error(error) from error
            except OSError as error:
                raise self._error("cannot start TLS with", error) from error
            # wrap_socket detached the plain socket: the SSLSocket owns the descriptor now.
            self._tls = tls
            self._sock = tls
        try:
            tls.do_handshake()
        except ssl.SSLWantReadError:
            return EVENT_READ
        except ssl.SSLWantWriteError:
            return EVENT_WRITE
        except ssl.SSLError as error:
            raise self._tls_error(error) from error
        except OSError as error:
            raise self._error("TLS handshake failed with", error) from error
        return 0

    def send(self, buffers: Sequence[memoryview]) -> int:
        import ssl

        tls = self._tls
        if tls is None:
            raise KafkaConnectionError(f"TLS to {self._description} is not set up")
        try:
            # One buffer per call: OpenSSL wants a write it could not finish repeated with
            # the same bytes, and the connection re-offers exactly the unwritten frame.
            return tls.send(buffers[0])
        except (ssl.SSLWantWriteError, ssl.SSLWantReadError, BlockingIOError):
            return 0
        except ssl.SSLError as error:
            raise self._tls_stream_error(error) from error
        except OSError as error:
            raise self._error("cannot send to", error) from error

    def recv_into(self, buffer: memoryview) -> int:
        import ssl

        tls = self._tls
        if tls is None:
            raise KafkaConnectionError(f"TLS to {self._description} is not set up")
        total = 0
        size = len(buffer)
        # One TLS record (<= 16 KiB) per read: keep reading while records are there, so data
        # OpenSSL already holds is not left waiting for a selector event that never comes.
        while total < size:
            try:
                count = tls.recv_into(buffer[total:])
            except (ssl.SSLWantReadError, ssl.SSLWantWriteError, BlockingIOError):
                break
            except ssl.SSLError as error:
                raise self._tls_stream_error(error) from error
            except OSError as error:
                raise self._error("cannot receive from", error) from error
            if count == 0:
                if total:
                    break  # hand over what was read; the close shows on the next read
                raise KafkaConnectionError(f"broker at {self._description} closed the connection")
            total += count
        return total

    def close(self) -> None:
        self._tls = None
        super().close()

    def __repr__(self) -> str:
        state = "open" if self._sock is not None else "closed"
        return f"<TlsTransport {self._description} {state}>"

    def _tls_stream_error(
        self, error: ssl.SSLError
    ) -> KafkaConnectionError | SslAuthenticationError:
        reason = error.reason or ""
        if "ALERT" in reason and "CERTIFICATE" in reason:
            # With TLS 1.3 the broker checks the client's certificate after the client's
            # handshake is done: its refusal arrives as an alert on the first read.
            return SslAuthenticationError(
                f"broker at {self._description} refused the client's TLS certificate: "
                f"{reason} ({error})"
            )
        return KafkaConnectionError(f"TLS error on the connection to {self._description}: {error}")

    def _tls_error(self, error: ssl.SSLError) -> KafkaConnectionError | SslAuthenticationError:
        import ssl

        if isinstance(error, (ssl.SSLEOFError, ssl.SSLZeroReturnError, ssl.SSLSyscallError)):
            # The peer went away mid-handshake or mid-stream: a lost connection, retried.
            return KafkaConnectionError(
                f"TLS connection to broker at {self._description} was closed: {error}"
            )
        if isinstance(error, ssl.SSLCertVerificationError):
            reason = error.verify_message or error.reason or str(error)
            return SslAuthenticationError(
                f"TLS handshake with broker at {self._description} failed: the broker's "
                f"certificate did not verify: {reason}"
            )
        reason = error.reason or str(error)
        return SslAuthenticationError(
            f"TLS handshake with broker at {self._description} failed: {reason} ({error})"
        )


def tls_transport_factory(options: SocketOptions, context: ssl.SSLContext) -> TransportFactory:
    """A :data:`TransportFactory` making :class:`TlsTransport` objects with ``context``."""

    def make(host: str, port: int, address: ResolvedAddress) -> Transport:
        return TlsTransport(host, port, address, options, context)

    return make


def tcp_transport_factory(options: SocketOptions) -> TransportFactory:
    """A :data:`TransportFactory` making :class:`TcpTransport` objects with ``options``."""

    def make(host: str, port: int, address: ResolvedAddress) -> Transport:
        return TcpTransport(host, port, address, options)

    return make


#: Selector events, re-exported so connection code reads as Kafka code, not selectors code.
EVENT_READ = selectors.EVENT_READ
EVENT_WRITE = selectors.EVENT_WRITE
