"""The sink's options: ``kafka.*`` become producer properties (prefix stripped), ``topic``
names the default topic. Checked on the driver, so a mistake fails before any task runs."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kafkaline import ConfigError, ProducerConfig

KAFKA_PREFIX = "kafka."

#: Producer properties the sink sets unless the write gives them (as ``kafka.<name>``).
#: A task hands the producer whole Arrow batches of thousands of rows; batches of 256 KiB
#: (the producer's default is 16 KiB) cut the per-batch work (docs/performance.md, "Notes
#: moved from the code"; benchmarks/spark_bench.py measures the sink).
SINK_PRODUCER_DEFAULTS = {"batch.size": "262144"}


@dataclass(frozen=True)
class SinkOptions:
    """The parsed options of one write: ``properties`` go to ``Producer.from_properties``
    unchanged (Java-style names), ``topic`` is the ``topic`` option (``None``: the ``topic``
    column names each row's topic)."""

    properties: tuple[tuple[str, str], ...]
    topic: str | None

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> SinkOptions:
        """Spark lower-cases option names (its options map is case-insensitive); Kafka's
        property names are lower-case already, so nothing is lost."""
        properties: dict[str, str] = {}
        topic: str | None = None
        for name, value in options.items():
            lowered = name.lower()
            if lowered.startswith(KAFKA_PREFIX):
                properties[lowered[len(KAFKA_PREFIX) :]] = value
            elif lowered == "topic":
                topic = value or None
        if "bootstrap.servers" not in properties:
            raise ConfigError(
                "option 'kafka.bootstrap.servers' is required by the kafkaline sink "
                "(e.g. .option('kafka.bootstrap.servers', 'host:9092'))"
            )
        for name, value in SINK_PRODUCER_DEFAULTS.items():
            properties.setdefault(name, value)
        # Checked here, while planning, so that a bad kafka.* option fails the write once
        # instead of every task.
        ProducerConfig.from_properties(properties)
        return cls(tuple(sorted(properties.items())), topic)
