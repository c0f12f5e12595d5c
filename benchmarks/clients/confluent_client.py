"""confluent-kafka (librdkafka): the reference every ratio is taken against.

The loop is the fastest correct use of ``produce()``: delivery reports are served only when
librdkafka's queue is full (``BufferError``) and by the final ``flush()``, so the Python side
does as little as it can. The partitioner is set to ``murmur2_random`` so keys land on the
same partitions as with the Java-compatible clients.
"""

from __future__ import annotations

import time
from typing import Any

from benchmarks.clients.base import ClientAdapter, ClientUnavailable, import_optional
from benchmarks.workloads import Records

# librdkafka's queue.buffering.max.messages maximum: lifts the message-count bound (default
# 100,000) so that, as in the other clients, only the byte bound (buffer memory) applies.
_MAX_QUEUED_MESSAGES = 2_147_483_647
# How long to serve delivery reports when the queue is full before trying produce() again.
_FULL_QUEUE_POLL_S = 0.005
_TIMEOUT_S = 30.0


class ConfluentKafka(ClientAdapter):
    name = "confluent-kafka"

    _producer: Any = None
    _topic = ""

    def check_available(self) -> None:
        import_optional("confluent_kafka", "pip install confluent-kafka")

    def config(self) -> dict[str, object]:
        workload = self.workload
        return {
            "acks": workload.acks,
            "linger.ms": workload.linger_ms,
            "batch.size": workload.batch_size,
            "compression.type": workload.compression,
            "queue.buffering.max.kbytes": workload.buffer_memory // 1024,
            "queue.buffering.max.messages": _MAX_QUEUED_MESSAGES,
            "partitioner": "murmur2_random",
            "enable.idempotence": False,
        }

    def open(self, bootstrap_servers: str, topic: str) -> None:
        confluent_kafka = import_optional("confluent_kafka", "pip install confluent-kafka")
        settings: dict[str, object] = {"bootstrap.servers": bootstrap_servers, **self.config()}
        self._producer = confluent_kafka.Producer(settings)
        self._topic = topic
        metadata = self._producer.list_topics(topic, timeout=_TIMEOUT_S)
        if not metadata.topics[topic].partitions:
            raise ClientUnavailable(f"confluent-kafka sees no partitions for {topic}")

    def produce_all(self, records: Records) -> None:
        producer = self._producer
        produce = producer.produce
        poll = producer.poll
        topic = self._topic
        for key, value in zip(
            records.keys, records.values, strict=False
        ):  # hot: see ClientAdapter.produce_all
            try:
                produce(topic, value, key)
            except BufferError:  # queue full: buffer memory reached
                while True:
                    poll(_FULL_QUEUE_POLL_S)
                    try:
                        produce(topic, value, key)
                        break
                    except BufferError:
                        continue
        remaining = producer.flush(_TIMEOUT_S * 4)
        if remaining:
            raise TimeoutError(f"{remaining} records still unacknowledged after flush()")

    def latencies(self, records: Records, warmup: int) -> list[float]:
        producer = self._producer
        topic = self._topic
        errors: list[object] = []
        delivered: list[bool] = []

        def on_delivery(error: object, _message: object) -> None:
            delivered.append(True)
            if error is not None:
                errors.append(error)

        timings: list[float] = []
        for index, (key, value) in enumerate(zip(records.keys, records.values, strict=True)):
            start = time.perf_counter()
            producer.produce(topic, value, key, on_delivery=on_delivery)
            deadline = start + _TIMEOUT_S
            while not delivered:
                producer.poll(1.0)
                if time.perf_counter() > deadline:
                    raise TimeoutError("no delivery report within the timeout")
            elapsed = time.perf_counter() - start
            delivered.clear()
            if errors:
                raise RuntimeError(f"delivery failed: {errors[0]}")
            if index >= warmup:
                timings.append(elapsed)
        return timings

    def close(self) -> None:
        if self._producer is not None:
            self._producer.flush(_TIMEOUT_S)
            self._producer = None
