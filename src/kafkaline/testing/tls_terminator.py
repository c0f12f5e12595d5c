"""TlsTerminator: a loopback TLS server in front of a plaintext broker, and test certificates.

The bundled test broker (Tansu 0.6) has no TLS of its own, so TLS clients are tested through a
terminator: it accepts TLS connections, decrypts, and forwards the bytes to the broker's plain
port (and back). Start the broker advertising the terminator's port so that every connection a
client makes after bootstrapping is a TLS one too::

    >>> pki = make_test_certificates(tmp_path)                     # doctest: +SKIP
    >>> broker_port = find_free_port()
    >>> with TlsTerminator(upstream_port=broker_port, certfile=pki.server_cert,
    ...                    keyfile=pki.server_key) as tls, \\
    ...      LocalBroker(port=broker_port, advertised_port=tls.port) as broker:
    ...     producer = Producer(bootstrap_servers=broker.advertised_bootstrap_servers,
    ...                         security_protocol="SSL", ssl_cafile=str(pki.ca_cert))

Standard library only (``ssl``, ``socket``, ``threading``): one thread accepts, one thread per
connection does the handshake and then moves bytes both ways, so one SSL object is never used
from two threads. :attr:`TlsTerminator.accepted` counts TCP connections and
:attr:`TlsTerminator.handshake_failures` the handshakes that failed (with OpenSSL's reason in
:attr:`TlsTerminator.handshake_errors`): tests count a client's connection attempts with them.
Loopback only: a test tool, not a network component.

:func:`make_test_certificates` makes a private CA and a server certificate (and a second,
unrelated CA) with the ``cryptography`` package, which moto (in the dev extra) already needs.
"""

from __future__ import annotations

import contextlib
import datetime
import select
import socket
import ssl
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from kafkaline.errors import ConfigError, IllegalStateError
from kafkaline.testing._ports import LOOPBACK
from kafkaline.testing._relay import POLL_INTERVAL, listen

__all__ = ["TestCertificates", "TlsTerminator", "make_test_certificates"]

_RECV_SIZE = 1 << 16
# A handshake or a write that takes longer than this on loopback is a stuck peer.
_IO_TIMEOUT = 10.0


class TlsTerminator:
    """Accepts TLS on ``host:port`` (a free port by default) and forwards the plaintext to
    ``upstream_host:upstream_port``.

    ``certfile``/``keyfile`` are the server's certificate chain and key (PEM). With
    ``client_cafile``, clients must present a certificate signed by that CA (mutual TLS).
    """

    def __init__(
        self,
        upstream_port: int,
        *,
        certfile: str | Path,
        keyfile: str | Path,
        client_cafile: str | Path | None = None,
        port: int = 0,
        upstream_host: str = LOOPBACK,
    ) -> None:
        if not 0 < upstream_port < 65536:
            raise ConfigError(f"upstream_port={upstream_port!r} must be between 1 and 65535")
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(certfile), str(keyfile))
        if client_cafile is not None:
            context.load_verify_locations(str(client_cafile))
            context.verify_mode = ssl.CERT_REQUIRED
        self._context = context
        self._upstream = (upstream_host, upstream_port)
        self._listener = listen(port)
        self._port: int = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._threads: list[threading.Thread] = []
        self._sockets: set[socket.socket] = set()
        self._accepted = 0
        self._handshake_failures = 0
        self._handshake_errors: list[str] = []
        self._accept_thread: threading.Thread | None = None

    # ------------------------------------------------------------------ what tests read

    @property
    def port(self) -> int:
        """The TLS port (bound in the constructor, so it is known before :meth:`start`)."""
        return self._port

    @property
    def accepted(self) -> int:
        """TCP connections accepted so far (each client connection attempt is one)."""
        with self._lock:
            return self._accepted

    @property
    def handshake_failures(self) -> int:
        """Connections whose TLS handshake failed (e.g. the client refused the certificate)."""
        with self._lock:
            return self._handshake_failures

    @property
    def handshake_errors(self) -> list[str]:
        """OpenSSL's reason for each failed handshake, oldest first."""
        with self._lock:
            return list(self._handshake_errors)

    # ------------------------------------------------------------------ changing things

    def replace_certificate(self, certfile: str | Path, keyfile: str | Path) -> None:
        """Serve this certificate to connections accepted from now on (e.g. one from another
        CA, to make a client's next connection fail verification)."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(certfile), str(keyfile))
        if self._context.verify_mode == ssl.CERT_REQUIRED:
            context.verify_mode = ssl.CERT_REQUIRED
            for ca in self._context.get_ca_certs(binary_form=True):
                context.load_verify_locations(cadata=ca)
        with self._lock:
            self._context = context

    def drop_connections(self) -> int:
        """Close every connection now (clients see them closed and reconnect); keeps
        accepting. Returns how many sockets were shut down."""
        with self._lock:
            sockets = list(self._sockets)
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        return len(sockets)

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Start accepting. Idempotent."""
        if self._closing.is_set():
            raise IllegalStateError("the TLS terminator is closed")
        if self._accept_thread is not None:
            return
        thread = threading.Thread(
            target=self._accept_loop, name="kafkaline-tls-terminator-accept", daemon=True
        )
        self._accept_thread = thread
        thread.start()

    def close(self) -> None:
        """Stop accepting, close every connection and join every thread. Idempotent."""
        self._closing.set()
        with contextlib.suppress(OSError):
            self._listener.close()
        with self._lock:
            sockets = list(self._sockets)
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.close()
        threads = [self._accept_thread, *self._threads]
        for thread in threads:
            if thread is not None:
                thread.join(timeout=_IO_TIMEOUT)

    def __enter__(self) -> TlsTerminator:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        upstream_host, upstream_port = self._upstream
        return (
            f"<TlsTerminator {LOOPBACK}:{self._port} -> {upstream_host}:{upstream_port} "
            f"accepted={self.accepted} handshake_failures={self.handshake_failures}>"
        )

    # ------------------------------------------------------------------ the threads

    def _accept_loop(self) -> None:
        while not self._closing.is_set():
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return  # closed
            with self._lock:
                self._accepted += 1
                self._sockets.add(client)
                thread = threading.Thread(
                    target=self._serve,
                    args=(client,),
                    name=f"kafkaline-tls-terminator-{self._accepted}",
                    daemon=True,
                )
                self._threads.append(thread)
            thread.start()

    def _serve(self, client: socket.socket) -> None:
        tls: ssl.SSLSocket | None = None
        upstream: socket.socket | None = None
        try:
            client.settimeout(_IO_TIMEOUT)
            # The handshake is run separately: wrap_socket's own would close the descriptor
            # at once on failure, before the client has read the alert (see _close_gently).
            with self._lock:
                context = self._context
            tls = context.wrap_socket(client, server_side=True, do_handshake_on_connect=False)
            try:
                tls.do_handshake()
            except (ssl.SSLError, OSError) as error:
                with self._lock:
                    self._handshake_failures += 1
                    self._handshake_errors.append(str(error))
                with contextlib.suppress(OSError):
                    plain = socket.socket(fileno=tls.detach())
                    _close_gently(plain)
                    plain.close()
                return
            self._track(tls)
            try:
                upstream = socket.create_connection(self._upstream, timeout=_IO_TIMEOUT)
            except OSError:
                return  # the broker is down: the client sees its connection close
            self._track(upstream)
            self._pump(tls, upstream)
        finally:
            for sock in (tls, upstream, client):
                if sock is not None:
                    with contextlib.suppress(OSError):
                        sock.close()
                    with self._lock:
                        self._sockets.discard(sock)

    def _track(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.add(sock)
        if self._closing.is_set():
            sock.close()

    def _pump(self, tls: ssl.SSLSocket, upstream: socket.socket) -> None:
        while not self._closing.is_set():
            # Decrypted bytes OpenSSL already holds do not make the socket readable.
            if tls.pending():
                readable: Sequence[socket.socket] = [tls]
            else:
                readable, _, _ = select.select([tls, upstream], [], [], POLL_INTERVAL)
            for sock in readable:
                try:
                    data = sock.recv(_RECV_SIZE)
                except ssl.SSLWantReadError:
                    continue  # a partial TLS record: wait for the rest
                except OSError:
                    return
                if not data:
                    return
                target = upstream if sock is tls else tls
                try:
                    target.sendall(data)
                except OSError:
                    return


def _close_gently(sock: socket.socket) -> None:
    """Close after a failed handshake so the client reads the TLS alert already sent.

    With TLS 1.3 the client finishes its side of the handshake first and may already have sent
    a request when the server refuses its certificate; closing a socket with unread bytes sends
    a reset, which can overtake the alert. Reading what the client sent first avoids that.
    """
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_WR)
        sock.settimeout(POLL_INTERVAL)
        deadline = time.monotonic() + 0.5
        while time.monotonic() < deadline and sock.recv(_RECV_SIZE):
            pass


# --------------------------------------------------------------------------- certificates


@dataclass(frozen=True)
class TestCertificates:
    """PEM files made by :func:`make_test_certificates`.

    ``ca_cert`` signs ``server_cert`` (whose names are the ``server_names`` asked for) and
    ``client_cert``; ``other_ca_cert`` is an unrelated CA, for "wrong CA" tests.
    """

    __test__ = False  # not a pytest test class, despite its name

    ca_cert: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    other_ca_cert: Path


def make_test_certificates(
    directory: str | Path, server_names: Sequence[str] = ("localhost", LOOPBACK)
) -> TestCertificates:
    """Make a CA, a server certificate for ``server_names`` (DNS names or IP addresses), a
    client certificate, and an unrelated CA, as PEM files in ``directory``. EC P-256 keys,
    valid from a day ago for 30 days.

    Needs the ``cryptography`` package (installed with the dev extra, through moto).
    """
    try:
        from kafkaline.testing import _certificates as pki
    except ImportError as error:  # pragma: no cover - the dev extra has it
        raise ConfigError(
            "make_test_certificates needs the 'cryptography' package: pip install cryptography"
        ) from error

    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.timezone.utc)
    ca = pki.make_ca("kafkaline test CA", now)
    other_ca = pki.make_ca("kafkaline unrelated test CA", now)
    server_cert, server_key = pki.make_leaf(
        "kafkaline test broker", server_names, pki.SERVER_AUTH, ca, now
    )
    client_cert, client_key = pki.make_leaf("kafkaline test client", [], pki.CLIENT_AUTH, ca, now)
    return TestCertificates(
        ca_cert=pki.write_cert(ca[0], folder / "ca.pem"),
        server_cert=pki.write_cert(server_cert, folder / "server.pem"),
        server_key=pki.write_key(server_key, folder / "server.key"),
        client_cert=pki.write_cert(client_cert, folder / "client.pem"),
        client_key=pki.write_key(client_key, folder / "client.key"),
        other_ca_cert=pki.write_cert(other_ca[0], folder / "other-ca.pem"),
    )
