"""LocalBroker: a real Kafka-protocol broker (Tansu) on a loopback port, for tests and demos."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Protocol

from kafkaline.errors import (
    ConfigError,
    IllegalStateError,
)
from kafkaline.testing import _s3
from kafkaline.testing._ports import LOOPBACK, find_free_port, wait_until_port_free
from kafkaline.testing._probe import _api_versions_ready, _topic_partition_counts
from kafkaline.testing._process import (
    SpawnThread,
    kill_and_reap,
    tail_of_log,
    wait_for_threads_stopped,
)
from kafkaline.testing._tansu import child_env
from kafkaline.testing._tansu import resolve_broker_bin as resolve_broker_bin  # public here
from kafkaline.testing._topic_cli import (
    run_topic_create,
    run_topic_delete,
    validate_partitions,
    validate_topic_name,
)
from kafkaline.testing.errors import BrokerStartError, BrokerStartTimeoutError, TopicCommandError

#: Storage kinds LocalBroker can run the broker on: "memory" (the broker's memory, lost when
#: it stops) and "s3" (durable: a local moto S3 server that outlives broker restarts).
STORAGE_KINDS = frozenset({"memory", "s3"})

# How long one readiness probe may take, and the pause between probes. Tansu answers within
# a few milliseconds of being spawned, so the pause is short; it only avoids a busy loop.
_PROBE_TIMEOUT = 1.0
_PROBE_INTERVAL = 0.01
# SIGKILLed processes exit at once; this only guards against a process stuck in the kernel.
_REAP_TIMEOUT = 10.0
_TOPIC_CLI_TIMEOUT = 30.0


class TopicFactory(Protocol):
    """Makes a fresh topic and returns its name; the type of the ``make_topic`` fixture.

    >>> def test_two_topics(make_topic: TopicFactory) -> None:    # doctest: +SKIP
    ...     small, wide = make_topic(partitions=1), make_topic(partitions=12)
    """

    def __call__(self, partitions: int = 3) -> str: ...


@dataclass
class _Resources:
    """What a LocalBroker must release. Separate from the LocalBroker so the weakref.finalize
    backstop can hold it without keeping the LocalBroker alive."""

    owner_pid: int = field(default_factory=os.getpid)
    process: subprocess.Popen[bytes] | None = None
    s3_process: subprocess.Popen[bytes] | None = None
    owned_log_dir: Path | None = None
    spawner: SpawnThread | None = None

    def spawn_thread(self) -> SpawnThread:
        if self.spawner is None:
            self.spawner = SpawnThread(name="kafkaline-local-broker-spawner")
        return self.spawner


def _release(resources: _Resources) -> None:
    """Kill the broker and S3 server processes and remove a log directory LocalBroker
    created itself.

    Also runs from weakref.finalize (when a LocalBroker is garbage-collected while running, or
    at interpreter exit). The pid check keeps a forked child (multiprocessing) from killing the
    broker its parent still uses when the child's copy of the finalizer runs.
    """
    if os.getpid() != resources.owner_pid:
        return
    if resources.process is not None:
        kill_and_reap(resources.process, _REAP_TIMEOUT)
        resources.process = None
    if resources.s3_process is not None:
        kill_and_reap(resources.s3_process, _REAP_TIMEOUT)
        resources.s3_process = None
    if resources.spawner is not None:
        resources.spawner.close()
        resources.spawner = None
    if resources.owned_log_dir is not None:
        shutil.rmtree(resources.owned_log_dir, ignore_errors=True)
        resources.owned_log_dir = None


class LocalBroker:
    """A Tansu broker on ``127.0.0.1`` and a free port, started and always stopped by us.

    >>> with LocalBroker() as broker:                        # doctest: +SKIP
    ...     broker.create_topic("events", partitions=6)
    ...     with Producer(bootstrap_servers=broker.bootstrap_servers) as producer:
    ...         producer.send("events", b"hello")
    ...     broker.restart()                                 # same port, answers again

    The process never outlives its owner: ``stop()``/``close()``/the with-block kill it (also
    when the block raises or is interrupted), a ``weakref.finalize`` kills a forgotten one, and
    on Linux the kernel SIGKILLs it if the Python process dies (PR_SET_PDEATHSIG). The process
    is forked from a helper thread that lives until ``close()``, so starting the broker from a
    short-lived thread is fine.

    ``storage="memory"`` keeps everything in the broker's memory: a ``stop()`` loses all
    records and topics. So that clients find their topics again after ``restart()`` (or
    ``stop()`` then ``start()``), the topics created with :meth:`create_topic` are created
    again, empty.

    ``storage="s3"`` is durable: topics and records survive ``restart()``. LocalBroker runs a
    local S3 server (``moto[server]``, which must be installed) for it, from the first start
    until ``close()``; ``stop()`` stops only the broker. The first start takes about 2 s more
    (the S3 server is a Python program); restarts do not.

    Parameters:
        storage: where the broker keeps its data; one of :data:`STORAGE_KINDS`.
        port: the loopback port to listen on; default a free one chosen at the first start and
            kept for the broker's life, so restarts keep ``bootstrap_servers``.
        log_dir: where ``broker.log`` (and ``s3.log``) go; default a temporary directory
            removed by ``close()``. The log is appended to across restarts.
        start_timeout: seconds to wait for the broker to answer ApiVersions on each start
            (and as much again for the S3 server to answer).
        advertised_port: the loopback port the broker tells clients to connect to (its
            Metadata answers); default ``port``. Set it to the port of a proxy in front of the
            broker (a TLS terminator, a fault injector) so that every connection a client makes
            after bootstrapping goes through the proxy; bootstrap the client from the proxy
            too (:attr:`advertised_bootstrap_servers`). :attr:`bootstrap_servers` stays the
            broker's own port, for LocalBroker's probes and for checks that bypass the proxy.
        authentication: start the broker with ``--authentication``: clients must authenticate
            with SASL. This Tansu build offers SCRAM-SHA-256/512 and OAUTHBEARER but stores no
            users, so every client is refused: it tests how a client handles the refusal.
            LocalBroker's own probes (ApiVersions) still work, as ApiVersions needs no login.

    >>> with LocalBroker(advertised_port=proxy_port) as broker:   # doctest: +SKIP
    ...     producer = Producer(bootstrap_servers=broker.advertised_bootstrap_servers)
    """

    def __init__(
        self,
        *,
        storage: str = "memory",
        port: int | None = None,
        log_dir: str | os.PathLike[str] | None = None,
        start_timeout: float = 10.0,
        advertised_port: int | None = None,
        authentication: bool = False,
    ) -> None:
        if storage not in STORAGE_KINDS:
            raise ConfigError(
                f"storage={storage!r} is not supported; choose one of {sorted(STORAGE_KINDS)}"
            )
        if port is not None and (isinstance(port, bool) or not 0 < port < 65536):
            raise ConfigError(f"port={port!r} must be between 1 and 65535")
        if advertised_port is not None and (
            isinstance(advertised_port, bool) or not 0 < advertised_port < 65536
        ):
            raise ConfigError(f"advertised_port={advertised_port!r} must be between 1 and 65535")
        if not start_timeout > 0:
            raise ConfigError(f"start_timeout={start_timeout!r} must be > 0 seconds")
        self._storage = storage
        self._port = port
        self._advertised_port = advertised_port
        self._authentication = authentication
        self._s3_port: int | None = None
        self._log_dir = Path(log_dir) if log_dir is not None else None
        self._start_timeout = start_timeout
        self._topics: dict[str, int] = {}  # created by us, re-created after a memory restart
        self._has_started = False
        self._resources = _Resources()
        self._finalizer: weakref.finalize[[_Resources], LocalBroker] | None = None

    # ------------------------------------------------------------------ what clients need

    @property
    def host(self) -> str:
        """Always the loopback address: the test broker is never reachable from outside."""
        return LOOPBACK

    @property
    def port(self) -> int:
        """The port the broker listens on (stays the same across restarts)."""
        if self._port is None:
            raise IllegalStateError("the broker has no port before its first start()")
        return self._port

    @property
    def bootstrap_servers(self) -> str:
        """``"127.0.0.1:PORT"``, for a client's bootstrap.servers."""
        return f"{self.host}:{self.port}"

    @property
    def advertised_port(self) -> int:
        """The port the broker advertises to clients: ``advertised_port`` if given, else
        :attr:`port`."""
        return self._advertised_port if self._advertised_port is not None else self.port

    @property
    def advertised_bootstrap_servers(self) -> str:
        """``"127.0.0.1:ADVERTISED_PORT"``: bootstrap.servers that keep a client on the
        advertised port (a proxy's) from the first connection on."""
        return f"{self.host}:{self.advertised_port}"

    @property
    def storage(self) -> str:
        """The storage kind given to the constructor."""
        return self._storage

    @property
    def log_path(self) -> Path:
        """The broker's log file (stdout and stderr of every start, appended)."""
        if self._log_dir is None:
            raise IllegalStateError("the broker has no log file before its first start()")
        return self._log_dir / "broker.log"

    @property
    def s3_endpoint(self) -> str | None:
        """The local S3 server's URL with ``storage="s3"`` once started, else None."""
        return _s3.endpoint(self._s3_port) if self._s3_port is not None else None

    @property
    def topics(self) -> dict[str, int]:
        """The topics made with :meth:`create_topic` and not deleted: name -> partitions."""
        return dict(self._topics)

    @property
    def pid(self) -> int | None:
        """The process id of the running broker, None when it is not running."""
        process = self._resources.process
        return process.pid if process is not None and process.poll() is None else None

    @property
    def is_running(self) -> bool:
        """Whether the broker process is alive (it may have been killed from outside)."""
        return self.pid is not None

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Start the broker and return once it answers ApiVersions. Does nothing if it runs.

        A broker that died (killed from outside) is cleaned up and started again. Raises
        BrokerBinaryNotFound, BrokerStartError (process exited; message has its log tail) or
        BrokerStartTimeoutError.
        """
        if self.is_running:
            return
        self._reap_dead_process()
        self._ensure_finalizer()
        broker_bin = resolve_broker_bin()
        if self._port is None:
            self._port = find_free_port()
        log_path = self._prepare_log_file()
        # Whether the broker comes back without the topics it had: always on memory storage,
        # and on S3 storage when the S3 server itself had to be (re)started.
        storage_is_empty = self._storage == "memory" or self._ensure_s3_server()
        deadline = time.monotonic() + self._start_timeout
        # A broker started while the old one (or anyone) still holds the port panics; worse,
        # the readiness probe would be answered by the old one.
        if not wait_until_port_free(self.port, self._start_timeout):
            raise BrokerStartError(
                f"port {self.port} on {self.host} is still in use after {self._start_timeout} s;"
                " cannot start the broker there"
            )
        url = self._broker_url()
        advertised_url = f"tcp://{self.host}:{self.advertised_port}"
        argv = [broker_bin, "broker", "--listener-url", url]
        argv += ["--advertised-listener-url", advertised_url]
        argv += ["--storage-engine", self._storage_url()]
        if self._authentication:
            argv.append("--authentication")
        env = child_env(_s3.broker_env(self._s3_port) if self._s3_port is not None else None)
        spawner = self._resources.spawn_thread()
        self._resources.process = spawner.spawn(argv, env=env, log_path=log_path)
        try:
            self._wait_until_ready(deadline)
            if self._has_started and storage_is_empty:
                self._recreate_topics()
        except BaseException:  # also KeyboardInterrupt: never leave a half-started broker
            self.stop()
            raise
        self._has_started = True

    def stop(self) -> None:
        """Kill the broker (SIGKILL) and wait until its process has exited. Idempotent.

        The port and the log file stay; ``start()`` brings the broker back on the same port.
        With ``storage="s3"`` the S3 server (and so the data) stays until ``close()``.
        """
        process = self._resources.process
        if process is not None:
            kill_and_reap(process, _REAP_TIMEOUT)
            self._resources.process = None

    def restart(self) -> None:
        """Stop the broker, then start it again on the same port and wait until it answers."""
        self.stop()
        self.start()

    def pause(self) -> None:
        """Freeze the broker process (SIGSTOP): its sockets stay open but nothing is read or
        answered, as with a broker stuck in a long GC pause or swapped out. Undo with
        :meth:`resume`; ``stop()`` and ``close()`` also end a paused broker. POSIX only.

        >>> broker.pause(); time.sleep(3); broker.resume()   # doctest: +SKIP
        """
        process = self._resources.process
        if process is None or process.poll() is not None:
            raise IllegalStateError("cannot pause the broker: it is not running")
        process.send_signal(signal.SIGSTOP)
        # The stop is asynchronous: a busy broker thread can still answer a request before
        # it takes effect. Return only once every thread is stopped.
        wait_for_threads_stopped(process.pid, stopped=True)

    def resume(self) -> None:
        """Let a broker frozen by :meth:`pause` run again (SIGCONT). A no-op if it runs."""
        process = self._resources.process
        if process is None or process.poll() is not None:
            raise IllegalStateError("cannot resume the broker: it is not running")
        process.send_signal(signal.SIGCONT)
        wait_for_threads_stopped(process.pid, stopped=False)

    def close(self) -> None:
        """Stop the broker (and the S3 server) and remove the temporary log directory, if
        LocalBroker made it. ``start()`` afterwards begins afresh."""
        self.stop()
        if self._finalizer is not None:
            self._finalizer()  # runs _release once, and detaches the backstop
            self._finalizer = None
            if self._log_dir is not None and not self._log_dir.exists():
                self._log_dir = None
        # Nothing of the old broker's data exists any more (memory gone, S3 server gone).
        self._s3_port = None
        self._topics.clear()
        self._has_started = False

    def __enter__(self) -> LocalBroker:
        try:
            self.start()
        except BaseException:  # __exit__ will not run: release the S3 server and temp dir
            self.close()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        state = f"running pid={self.pid}" if self.is_running else "stopped"
        where = f"{self.host}:{self._port}" if self._port is not None else "no port yet"
        if self._advertised_port is not None:
            where += f" advertised as :{self._advertised_port}"
        return f"<LocalBroker {where} storage={self._storage} {state}>"

    # ------------------------------------------------------------------ topics

    def create_topic(self, name: str, partitions: int = 1) -> None:
        """Create a topic with the broker's CLI and wait until its metadata shows it.

        >>> broker.create_topic("events", partitions=6)      # doctest: +SKIP

        Raises ConfigError for a name or partition count Kafka would refuse (Tansu itself
        accepts them), TopicCommandError with the CLI's output if creation fails (for
        example because the topic exists).
        """
        validate_topic_name(name)
        validate_partitions(partitions)
        self._require_running(f"cannot create topic {name!r}")
        self._create_topic_now(name, partitions)
        self._topics[name] = partitions

    def delete_topic(self, name: str) -> None:
        """Delete a topic with the broker's CLI and wait until its metadata no longer shows it.

        >>> broker.delete_topic("events")                    # doctest: +SKIP

        Raises TopicCommandError with the CLI's output if deletion fails (e.g. no such topic).
        """
        validate_topic_name(name)
        self._require_running(f"cannot delete topic {name!r}")
        # Forget it first: even if the CLI fails, a restart must not bring the topic back.
        self._topics.pop(name, None)
        run_topic_delete(
            resolve_broker_bin(),
            self._broker_url(),
            name,
            env=child_env(),
            timeout=_TOPIC_CLI_TIMEOUT,
        )
        self._wait_for_metadata(name, None)

    # ------------------------------------------------------------------ internals

    def _storage_url(self) -> str:
        return _s3.STORAGE_URL if self._storage == "s3" else "memory://tansu/"

    def _ensure_s3_server(self) -> bool:
        """Start the local S3 server unless it runs; True if it had to be started (empty)."""
        if self._storage != "s3":
            return False
        process = self._resources.s3_process
        if process is not None and process.poll() is None:
            return False
        self._resources.s3_process = None
        if self._s3_port is None:
            self._s3_port = find_free_port()
        s3_log_path = self.log_path.with_name("s3.log")
        self._resources.s3_process = _s3.start_s3_server(
            self._s3_port, s3_log_path, self._start_timeout, self._resources.spawn_thread()
        )
        return True

    def _prepare_log_file(self) -> Path:
        if self._log_dir is None:
            self._log_dir = Path(tempfile.mkdtemp(prefix="kafkaline-broker-"))
            self._resources.owned_log_dir = self._log_dir
        else:
            self._log_dir.mkdir(parents=True, exist_ok=True)
        return self.log_path

    def _ensure_finalizer(self) -> None:
        if self._finalizer is None or not self._finalizer.alive:
            self._resources.owner_pid = os.getpid()
            self._finalizer = weakref.finalize(self, _release, self._resources)

    def _reap_dead_process(self) -> None:
        process = self._resources.process
        if process is not None and process.poll() is not None:
            self._resources.process = None

    def _wait_until_ready(self, deadline: float) -> None:
        process = self._resources.process
        if process is None:
            raise IllegalStateError("no broker process to wait for")
        while True:
            if process.poll() is not None:
                raise BrokerStartError(
                    f"the broker exited during start (exit code {process.returncode}); "
                    f"{self._log_excerpt()}"
                )
            remaining = deadline - time.monotonic()
            probe_timeout = min(_PROBE_TIMEOUT, max(remaining, 0.05))
            # Alive after the answer too: a broker that lost its port exits (with code 0!)
            # and the answer came from someone else.
            if _api_versions_ready(self.host, self.port, probe_timeout) and process.poll() is None:
                return
            if time.monotonic() >= deadline:
                raise BrokerStartTimeoutError(
                    f"the broker did not answer ApiVersions on {self.bootstrap_servers} within "
                    f"{self._start_timeout} s; {self._log_excerpt()}"
                )
            time.sleep(_PROBE_INTERVAL)

    def _broker_url(self) -> str:
        return f"tcp://{self.host}:{self.port}"

    def _require_running(self, what: str) -> None:
        if not self.is_running:
            raise IllegalStateError(f"{what}: the broker is not running; start() it first")

    def _create_topic_now(self, name: str, partitions: int) -> None:
        run_topic_create(
            resolve_broker_bin(),
            self._broker_url(),
            name,
            partitions,
            env=child_env(),
            timeout=_TOPIC_CLI_TIMEOUT,
        )
        self._wait_for_metadata(name, partitions)

    def _wait_for_metadata(self, name: str, partitions: int | None) -> None:
        """Wait until Metadata shows ``name`` with ``partitions`` (None: does not show it).

        Tansu's memory storage shows a change at once; the check costs one round trip and
        keeps callers correct on storage that is slower to show it.
        """
        deadline = time.monotonic() + _TOPIC_CLI_TIMEOUT
        while True:
            counts = _topic_partition_counts(self.host, self.port, _PROBE_TIMEOUT)
            if counts is not None and counts.get(name) == partitions:
                return
            if time.monotonic() >= deadline:
                expected = "absent" if partitions is None else f"with {partitions} partitions"
                raise TopicCommandError(
                    f"the broker's metadata does not show topic {name!r} {expected} after "
                    f"{_TOPIC_CLI_TIMEOUT} s (metadata: {counts!r}); {self._log_excerpt()}"
                )
            time.sleep(_PROBE_INTERVAL)

    def _recreate_topics(self) -> None:
        for name, partitions in self._topics.items():
            self._create_topic_now(name, partitions)

    def _log_excerpt(self) -> str:
        return f"broker log {self.log_path} ends with:\n{tail_of_log(self.log_path)}"
