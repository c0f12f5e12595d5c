"""What every client adapter does, so the harness can time them all the same way.

An adapter lives in the client's own process (see :mod:`benchmarks.child`). The child calls,
in this order: :meth:`ClientAdapter.open` (connect, learn the topic's partitions: not timed),
:meth:`ClientAdapter.prepare` (turn the records into what the API takes: not timed), then
either :meth:`ClientAdapter.produce_all` (timed from outside: send everything and return once
every record is acknowledged) or :meth:`ClientAdapter.latencies` (times each record itself),
and finally :meth:`ClientAdapter.close`.
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from types import ModuleType

from benchmarks.workloads import Kind, Records, Workload

#: The environment variable that makes kafkaline use its pure-Python build instead of the
#: compiled core.
PURE_PYTHON_VARIABLE = "KAFKALINE_PURE_PYTHON"


class ClientUnavailable(Exception):
    """The client's library, or the API this adapter drives, is not installed here."""


def import_optional(module: str, hint: str) -> ModuleType:
    """Import a client library, or raise ClientUnavailable saying how to get it. Imported by
    name so the harness (and mypy) run where an optional library is missing."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ClientUnavailable(f"{module} is not installed ({hint}): {exc}") from exc


class ClientAdapter(ABC):
    """One way of producing records with one client library."""

    #: The name used on the command line and in the results.
    name: str = ""

    def __init__(self, workload: Workload) -> None:
        self.workload = workload

    # ------------------------------------------------------------------ the harness asks

    def check_available(self) -> None:  # noqa: B027 (an adapter that needs nothing: no-op)
        """Raise ClientUnavailable if this adapter cannot run here (a missing library, or a
        kafkaline API that has not landed yet). Cheap: imports, no connection."""

    def unsupported_reason(self) -> str | None:
        """Why this adapter does not run ``self.workload`` (None: it does)."""
        return None

    @abstractmethod
    def config(self) -> dict[str, object]:
        """The client's own settings for ``self.workload``: what the report prints as the
        mapping of the common settings (acks, linger, batch size, compression, buffer memory)
        onto this client's names."""

    # ------------------------------------------------------------------ the child calls

    @abstractmethod
    def open(self, bootstrap_servers: str, topic: str) -> None:
        """Create the producer and make it learn ``topic``'s partitions, so the timed part
        does not include the first metadata round trip."""

    def prepare(self, records: Records) -> None:  # noqa: B027 (most adapters need nothing)
        """Turn ``records`` into what this adapter's API takes, before the clock starts."""

    @abstractmethod
    def produce_all(self, records: Records) -> None:
        """Send every record and return once every one of them is acknowledged.

        The loops over the records are timed: they use ``zip(..., strict=False)`` (keys and
        values have the same length by construction), the cheapest way to walk two lists, so
        the harness adds as little as it can to every client's cost per record."""

    @abstractmethod
    def latencies(self, records: Records, warmup: int) -> list[float]:
        """Send the records one at a time, each waited for; return the seconds each of the
        records after the first ``warmup`` took from send to acknowledgement."""

    @abstractmethod
    def close(self) -> None:
        """Release the producer (not timed)."""


def compression_or_none(workload: Workload) -> str | None:
    """kafka-python and aiokafka spell "no compression" as None."""
    return None if workload.compression == "none" else workload.compression


def latency_unsupported(workload: Workload, why: str) -> str | None:
    """For bulk adapters: latency is a one-record-at-a-time measure, bulk calls do not fit."""
    return why if workload.kind is Kind.LATENCY else None
