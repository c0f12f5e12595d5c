"""kafka-python: ``send()`` in a loop, then ``flush()``.

kafka-python 3 has no ``buffer_memory`` any more (its accumulator grows as needed) and turns
idempotence on by default, which acks=1 excludes: it is turned off, as for every client.
"""

from __future__ import annotations

import time
from typing import Any

from benchmarks.clients.base import (
    ClientAdapter,
    ClientUnavailable,
    compression_or_none,
    import_optional,
)
from benchmarks.workloads import Records

_TIMEOUT_S = 30.0


class KafkaPython(ClientAdapter):
    name = "kafka-python"

    _producer: Any = None
    _topic = ""

    def check_available(self) -> None:
        import_optional("kafka", "pip install kafka-python")

    def config(self) -> dict[str, object]:
        workload = self.workload
        return {
            "acks": workload.acks,
            "linger_ms": workload.linger_ms,
            "batch_size": workload.batch_size,
            "compression_type": compression_or_none(workload),
            # kafka-python 3 dropped buffer_memory: its accumulator is unbounded.
            "enable_idempotence": False,
        }

    def open(self, bootstrap_servers: str, topic: str) -> None:
        kafka = import_optional("kafka", "pip install kafka-python")
        self._producer = kafka.KafkaProducer(bootstrap_servers=bootstrap_servers, **self.config())
        self._topic = topic
        if not self._producer.partitions_for(topic):
            raise ClientUnavailable(f"kafka-python sees no partitions for {topic}")

    def produce_all(self, records: Records) -> None:
        send = self._producer.send
        topic = self._topic
        for key, value in zip(
            records.keys, records.values, strict=False
        ):  # hot: see ClientAdapter.produce_all
            send(topic, value, key)
        self._producer.flush(timeout=_TIMEOUT_S * 4)

    def latencies(self, records: Records, warmup: int) -> list[float]:
        send = self._producer.send
        topic = self._topic
        timings: list[float] = []
        for index, (key, value) in enumerate(zip(records.keys, records.values, strict=True)):
            start = time.perf_counter()
            send(topic, value=value, key=key).get(timeout=_TIMEOUT_S)
            elapsed = time.perf_counter() - start
            if index >= warmup:
                timings.append(elapsed)
        return timings

    def close(self) -> None:
        if self._producer is not None:
            self._producer.close(timeout=_TIMEOUT_S)
            self._producer = None
