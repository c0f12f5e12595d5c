"""aiokafka: ``await send()`` in a loop on one event loop, then ``flush()``.

aiokafka has no buffer-memory setting: it keeps at most one open batch per partition and
``send()`` waits while that batch is full, so its buffering is bounded by design.
"""

from __future__ import annotations

import asyncio
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


class AioKafka(ClientAdapter):
    name = "aiokafka"

    _producer: Any = None
    _topic = ""
    _loop: asyncio.AbstractEventLoop | None = None

    def check_available(self) -> None:
        import_optional("aiokafka", "pip install aiokafka")

    def config(self) -> dict[str, object]:
        workload = self.workload
        return {
            "acks": workload.acks,
            "linger_ms": workload.linger_ms,
            "max_batch_size": workload.batch_size,
            "compression_type": compression_or_none(workload),
            "enable_idempotence": False,
        }

    def _run(self, coroutine: Any) -> Any:
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
        return self._loop.run_until_complete(coroutine)

    def open(self, bootstrap_servers: str, topic: str) -> None:
        aiokafka = import_optional("aiokafka", "pip install aiokafka")
        self._topic = topic

        async def start() -> Any:
            # Made inside the loop: aiokafka binds to the running loop when constructed.
            producer = aiokafka.AIOKafkaProducer(
                bootstrap_servers=bootstrap_servers, **self.config()
            )
            await producer.start()
            partitions = await producer.partitions_for(topic)
            if not partitions:
                await producer.stop()
                raise ClientUnavailable(f"aiokafka sees no partitions for {topic}")
            return producer

        self._producer = self._run(start())

    def produce_all(self, records: Records) -> None:
        producer = self._producer
        topic = self._topic

        async def produce() -> None:
            send = producer.send
            for key, value in zip(
                records.keys, records.values, strict=False
            ):  # hot: see ClientAdapter.produce_all
                await send(topic, value, key=key)
            await producer.flush()

        self._run(produce())

    def latencies(self, records: Records, warmup: int) -> list[float]:
        producer = self._producer
        topic = self._topic

        async def measure() -> list[float]:
            timings: list[float] = []
            for index, (key, value) in enumerate(zip(records.keys, records.values, strict=True)):
                start = time.perf_counter()
                await asyncio.wait_for(producer.send_and_wait(topic, value, key=key), _TIMEOUT_S)
                elapsed = time.perf_counter() - start
                if index >= warmup:
                    timings.append(elapsed)
            return timings

        result: list[float] = self._run(measure())
        return result

    def close(self) -> None:
        if self._producer is not None:
            self._run(self._producer.stop())
            self._producer = None
        if self._loop is not None:
            self._loop.close()
            self._loop = None
