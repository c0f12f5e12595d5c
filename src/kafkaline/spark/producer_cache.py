"""One producer per Python worker process, per configuration, reused by the tasks that the
process runs one after another (PySpark reuses its workers: spark.python.worker.reuse).

A producer holds a socket and an I/O thread, neither of which survives fork(); PySpark forks
its workers from a daemon process, so the cache remembers the process that made each
producer and never hands one to another process (a forked child builds its own)."""

from __future__ import annotations

import logging
import os
import threading
import time

from kafkaline import Producer

_log = logging.getLogger(__name__)

Properties = tuple[tuple[str, str], ...]

# A producer unused for this long is closed by the next task that looks into the cache, so a
# worker that switched to other work does not keep connections open for ever.
IDLE_CLOSE_SECONDS = 300.0


class ProducerCache:
    """Producers by configuration for the current process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pid = os.getpid()
        self._producers: dict[Properties, tuple[Producer, float]] = {}

    def get(self, properties: Properties) -> Producer:
        """The process's producer for ``properties``, made on first use."""
        now = time.monotonic()
        with self._lock:
            if self._pid != os.getpid():
                # Inherited through fork: the parent's producers are not ours to use or close
                # (their threads do not exist here), so forget them.
                self._producers = {}
                self._pid = os.getpid()
            idle = [
                props
                for props, (_, last_used) in self._producers.items()
                if props != properties and now - last_used > IDLE_CLOSE_SECONDS
            ]
            closing = [self._producers.pop(props)[0] for props in idle]
            entry = self._producers.get(properties)
            producer = entry[0] if entry is not None else Producer.from_properties(dict(properties))
            self._producers[properties] = (producer, now)
        for old in closing:
            _log.info("closing an idle kafkaline producer")
            old.close()
        return producer

    def discard(self, properties: Properties) -> None:
        """Close and forget the producer for ``properties`` (after it failed: a producer whose
        Sender failed cannot send again, so the next task must get a fresh one)."""
        with self._lock:
            entry = self._producers.pop(properties, None)
        if entry is not None:
            entry[0].close(timeout=0)


# Module state on purpose: this is the per-process cache that lets tasks share a producer.
# It is filled only when a Spark task writes, never at import.
WORKER_PRODUCERS = ProducerCache()
