"""kafkaline: the per-record ``send()`` loop, and the bulk ``send_batch()`` and ``send_arrow()``
calls of issue #5.

The Producer is looked up by name at run time, not imported, so the harness runs (and reports
"not available") before the Producer or one of its bulk methods has landed. The bulk adapters
hand the records over in chunks of :data:`BULK_CHUNK` records, the size of the Arrow batches
Spark passes to Python (``spark.sql.execution.arrow.maxRecordsPerBatch``): a pipeline hands a
producer what it has, in pieces of about that size. A chunk also holds at most a quarter of
``buffer_memory`` of values (800 records of 10 KB): a call larger than the buffer waited out
``max_block_ms`` and failed when this was written (send_batch of 4,000 x 10 KB with 32 MiB),
and the benchmark measures speed; that defect is for the producer's tests.
"""

from __future__ import annotations

import time
from typing import Any

from benchmarks.clients.base import (
    ClientAdapter,
    ClientUnavailable,
    import_optional,
    latency_unsupported,
)
from benchmarks.workloads import Records

BULK_CHUNK = 10_000
#: The share of buffer_memory one bulk call may hand over (see the module's docstring).
BULK_CHUNK_BUFFER_SHARE = 4


def chunk_size(records: Records, buffer_memory: int) -> int:
    """Records per bulk call: BULK_CHUNK, fewer where their values would fill more than a
    quarter of buffer_memory."""
    if not records.values:
        return BULK_CHUNK
    value_size = max(1, len(records.values[0]))
    return max(1, min(BULK_CHUNK, buffer_memory // BULK_CHUNK_BUFFER_SHARE // value_size))


_TIMEOUT_S = 30.0
_INSTALL_HINT = "pip install -e ."


def _producer_class() -> Any:
    kafkaline = import_optional("kafkaline", _INSTALL_HINT)
    producer_class = getattr(kafkaline, "Producer", None)
    if producer_class is None:
        raise ClientUnavailable("kafkaline.Producer is not available yet (issue #3)")
    return producer_class


class KafkalineSend(ClientAdapter):
    """``producer.send(topic, value=..., key=...)`` per record, then ``flush()``."""

    name = "kafkaline"
    #: The Producer method this adapter needs besides send/flush/close (None: only those).
    bulk_method: str | None = None

    _producer: Any = None
    _topic = ""

    def check_available(self) -> None:
        producer_class = _producer_class()
        if self.bulk_method is not None and not hasattr(producer_class, self.bulk_method):
            raise ClientUnavailable(
                f"kafkaline.Producer.{self.bulk_method}() is not available yet (issue #5)"
            )

    def config(self) -> dict[str, object]:
        workload = self.workload
        return {
            "acks": workload.acks,
            "linger_ms": workload.linger_ms,
            "batch_size": workload.batch_size,
            "compression_type": workload.compression,
            "buffer_memory": workload.buffer_memory,
            "enable_idempotence": False,
        }

    def open(self, bootstrap_servers: str, topic: str) -> None:
        self.check_available()
        self._producer = _producer_class()(bootstrap_servers=bootstrap_servers, **self.config())
        self._topic = topic
        # Learn the topic's partitions before the clock, as the other adapters do, where the
        # Producer offers a way to (kafka-python's name for it).
        partitions_for = getattr(self._producer, "partitions_for", None)
        if partitions_for is not None and not partitions_for(topic):
            raise ClientUnavailable(f"kafkaline sees no partitions for {topic}")

    def produce_all(self, records: Records) -> None:
        send = self._producer.send
        topic = self._topic
        for key, value in zip(
            records.keys, records.values, strict=False
        ):  # hot: see ClientAdapter.produce_all
            send(topic, value, key)
        self._producer.flush()

    def latencies(self, records: Records, warmup: int) -> list[float]:
        send = self._producer.send
        topic = self._topic
        timings: list[float] = []
        for index, (key, value) in enumerate(zip(records.keys, records.values, strict=True)):
            start = time.perf_counter()
            future = send(topic, value, key)
            # kafka-python's futures wait with get(), concurrent.futures' with result().
            wait = getattr(future, "get", None) or future.result
            wait(timeout=_TIMEOUT_S)
            elapsed = time.perf_counter() - start
            if index >= warmup:
                timings.append(elapsed)
        return timings

    def close(self) -> None:
        if self._producer is not None:
            self._producer.close()
            self._producer = None


class KafkalineSendPurePython(KafkalineSend):
    """``send()`` as :class:`KafkalineSend`, in a process started with
    ``KAFKALINE_PURE_PYTHON=1`` (``clients.client_environment``; the child checks it is
    set): kafkaline's pure-Python build, beside the compiled one."""

    name = "kafkaline-pure"


class KafkalineSendBatch(KafkalineSend):
    """``producer.send_batch(topic, values, keys=keys)`` per chunk, then ``flush()``."""

    name = "kafkaline-batch"
    bulk_method = "send_batch"

    _chunks: list[tuple[list[bytes], list[bytes]]]

    def unsupported_reason(self) -> str | None:
        return latency_unsupported(self.workload, "a bulk call; latency is measured with send()")

    def prepare(self, records: Records) -> None:
        size = chunk_size(records, self.workload.buffer_memory)
        self._chunks = [
            (records.values[start : start + size], records.keys[start : start + size])
            for start in range(0, len(records.values), size)
        ]

    def produce_all(self, records: Records) -> None:
        send_batch = self._producer.send_batch
        topic = self._topic
        for values, keys in self._chunks:
            send_batch(topic, values, keys=keys)
        self._producer.flush()


class KafkalineSendArrow(KafkalineSend):
    """``producer.send_arrow(topic, batch, key="key", value="value")`` per Arrow record batch
    of binary columns (made before the clock, as a Spark pipeline receives them), then
    ``flush()``."""

    name = "kafkaline-arrow"
    bulk_method = "send_arrow"

    _batches: list[Any]

    def check_available(self) -> None:
        import_optional("pyarrow", "pip install pyarrow, or kafkaline's spark extra")
        super().check_available()

    def unsupported_reason(self) -> str | None:
        return latency_unsupported(self.workload, "a bulk call; latency is measured with send()")

    def prepare(self, records: Records) -> None:
        pyarrow = import_optional("pyarrow", "pip install pyarrow")
        self._batches = []
        size = chunk_size(records, self.workload.buffer_memory)
        for start in range(0, len(records.values), size):
            keys = records.keys[start : start + size]
            values = records.values[start : start + size]
            self._batches.append(
                pyarrow.record_batch(
                    [
                        pyarrow.array(keys, pyarrow.binary()),
                        pyarrow.array(values, pyarrow.binary()),
                    ],
                    names=["key", "value"],
                )
            )

    def produce_all(self, records: Records) -> None:
        send_arrow = self._producer.send_arrow
        topic = self._topic
        for batch in self._batches:
            send_arrow(topic, batch, key="key", value="value")
        self._producer.flush()
