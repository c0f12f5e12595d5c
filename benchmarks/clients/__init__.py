"""The client adapters, by the names used on the command line and in the results.

The order here is the order of every round (A B C D A B C D ...) and of the report. Adapters
are imported when first made, so a client's process imports only its own library (importing
kafkaline alone takes ~0.4 s here, paid again by every one of a default run's ~120 runs).
"""

from __future__ import annotations

import importlib

from benchmarks.clients.base import PURE_PYTHON_VARIABLE, ClientAdapter, ClientUnavailable
from benchmarks.workloads import Workload

#: Every ratio in the report is taken against this client.
REFERENCE_CLIENT = "confluent-kafka"
BROKER_LIMIT_CLIENT = "broker-limit"

# name -> (module under benchmarks.clients, class)
_ADAPTERS: dict[str, tuple[str, str]] = {
    "kafkaline": ("kafkaline_client", "KafkalineSend"),
    "kafkaline-pure": ("kafkaline_client", "KafkalineSendPurePython"),
    "kafkaline-batch": ("kafkaline_client", "KafkalineSendBatch"),
    "kafkaline-arrow": ("kafkaline_client", "KafkalineSendArrow"),
    REFERENCE_CLIENT: ("confluent_client", "ConfluentKafka"),
    "kafka-python": ("kafka_python_client", "KafkaPython"),
    "aiokafka": ("aiokafka_client", "AioKafka"),
    BROKER_LIMIT_CLIENT: ("raw_client", "BrokerLimit"),
}

CLIENT_NAMES: tuple[str, ...] = tuple(_ADAPTERS)

#: The clients whose process gets PURE_PYTHON_VARIABLE=1 (kafkaline's pure-Python build).
_PURE_PYTHON_CLIENTS = frozenset({"kafkaline-pure"})


def client_environment(name: str) -> dict[str, str]:
    """Environment variables the client's process must be started with (on top of the
    harness's own)."""
    return {PURE_PYTHON_VARIABLE: "1"} if name in _PURE_PYTHON_CLIENTS else {}


def make_adapter(
    name: str,
    workload: Workload,
    *,
    raw_connections: int | None = None,
    raw_in_flight: int | None = None,
) -> ClientAdapter:
    """The adapter called ``name`` for ``workload``; KeyError naming the known ones. The
    broker-limit client takes its connections and requests in flight (None: its defaults)."""
    try:
        module_name, class_name = _ADAPTERS[name]
    except KeyError:
        raise KeyError(f"unknown client {name!r}; known: {', '.join(CLIENT_NAMES)}") from None
    adapter_class = getattr(importlib.import_module(f"{__name__}.{module_name}"), class_name)
    adapter: ClientAdapter
    if name == BROKER_LIMIT_CLIENT:
        options = {"connections": raw_connections, "in_flight": raw_in_flight}
        adapter = adapter_class(workload, **{k: v for k, v in options.items() if v is not None})
    else:
        adapter = adapter_class(workload)
    if adapter.name != name:
        raise RuntimeError(f"adapter {class_name} is named {adapter.name!r}, not {name!r}")
    return adapter


__all__ = [
    "BROKER_LIMIT_CLIENT",
    "CLIENT_NAMES",
    "PURE_PYTHON_VARIABLE",
    "REFERENCE_CLIENT",
    "ClientAdapter",
    "ClientUnavailable",
    "client_environment",
    "make_adapter",
]
