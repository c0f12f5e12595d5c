"""Micro-benchmark of the record layer: us/record to append and build record batches.

Records: 100-byte values, 10-byte keys (or none), no headers, 64 KiB batches. Run:

    .venv/bin/python benchmarks/micro_record.py [--records N] [--repeats R] [--reference]

Reports the best and the median of R runs, in process CPU time (the machines are shared and
noisy: read the best as "what the code costs", the spread as the noise). ``--reference`` adds
kafka-python's builder and librdkafka's ``Producer.produce()`` (confluent-kafka, no broker:
produce() only enqueues) for comparison on the same machine.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable

from kafkaline.record import (
    CompressionType,
    RecordBatchBuilder,
    encode_records,
    read_record_batches,
)

BATCH_SIZE = 64 * 1024
BASE_TIMESTAMP = 1_700_000_000_000


def make_records(count: int) -> tuple[list[bytes], list[bytes], list[int]]:
    keys = [os.urandom(10) for _ in range(count)]
    values = [os.urandom(100) for _ in range(count)]
    # ~50 records per millisecond: timestamps vary inside a batch, as a busy producer's do.
    timestamps = [BASE_TIMESTAMP + i // 50 for i in range(count)]
    return keys, values, timestamps


def append_and_build(
    keys: list[bytes | None], values: list[bytes], timestamps: list[int], codec: int
) -> int:
    """Fill 64 KiB batches with append(), build each; return the bytes produced."""
    produced = 0
    builder = RecordBatchBuilder(compression=codec, batch_size_limit=BATCH_SIZE)
    append = builder.append
    for timestamp, key, value in zip(timestamps, keys, values, strict=True):
        if append(timestamp, key, value) is None:
            produced += len(builder.build())
            builder = RecordBatchBuilder(compression=codec, batch_size_limit=BATCH_SIZE)
            append = builder.append
            append(timestamp, key, value)
    return produced + len(builder.build())


def append_many_and_build(
    keys: list[bytes | None], values: list[bytes], timestamps: list[int], codec: int
) -> int:
    """The bulk path: append_many() as many as fit, build, repeat."""
    produced = 0
    start = 0
    while start < len(values):
        builder = RecordBatchBuilder(compression=codec, batch_size_limit=BATCH_SIZE)
        start += builder.append_many(keys, values, timestamps, start=start)
        produced += len(builder.build())
    return produced


def encode_only(keys: list[bytes | None], values: list[bytes], timestamps: list[int]) -> int:
    """encode_records() alone, in slices of the batch's record count (~540)."""
    produced = 0
    for start in range(0, len(values), 540):
        end = start + 540
        produced += len(encode_records(keys[start:end], values[start:end], timestamps[start:end]))
    return produced


def kafka_python_builder(
    keys: list[bytes | None], values: list[bytes], timestamps: list[int]
) -> int:
    from kafka.record.default_records import DefaultRecordBatchBuilder

    produced = 0

    def new() -> DefaultRecordBatchBuilder:
        return DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, BATCH_SIZE)

    builder = new()
    offset = 0
    for timestamp, key, value in zip(timestamps, keys, values, strict=True):
        if builder.append(offset, timestamp, key, value, []) is None:
            produced += len(builder.build())
            builder, offset = new(), 0
            builder.append(offset, timestamp, key, value, [])
        offset += 1
    return produced + len(builder.build())


def librdkafka_produce(keys: list[bytes | None], values: list[bytes], timestamps: list[int]) -> int:
    from confluent_kafka import Producer

    producer = Producer(
        {
            "bootstrap.servers": "127.0.0.1:9",  # nothing listens: produce() only enqueues
            "queue.buffering.max.messages": 10_000_000,
            "linger.ms": 60_000,
            "log_level": 0,
        }
    )
    produce = producer.produce
    for timestamp, key, value in zip(timestamps, keys, values, strict=True):
        produce("bench", value, key, timestamp=timestamp)
    producer.purge()
    return 0


def measure(name: str, run: Callable[[], int], count: int, repeats: int) -> None:
    times = []
    for _ in range(repeats):
        # CPU time of this process: other work on a shared machine then shows less in it.
        start = time.process_time()
        run()
        times.append((time.process_time() - start) / count * 1e6)
    print(
        f"{name:48} best {min(times):6.3f} us/record   median {statistics.median(times):6.3f}"
        f"   worst {max(times):6.3f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--reference", action="store_true", help="kafka-python and librdkafka")
    args = parser.parse_args()
    count = args.records
    keys, values, timestamps = make_records(count)
    no_keys: list[bytes | None] = [None] * count
    same_timestamp = [BASE_TIMESTAMP] * count
    keyed: list[bytes | None] = list(keys)

    print(f"{count} records, 10-byte keys, 100-byte values, {BATCH_SIZE // 1024} KiB batches")
    for label, codec in (("none", CompressionType.NONE), ("lz4", CompressionType.LZ4)):
        measure(
            f"append+build, keys, compression {label}",
            lambda codec=codec: append_and_build(keyed, values, timestamps, codec),  # type: ignore[misc]
            count,
            args.repeats,
        )
    measure(
        "append+build, null keys",
        lambda: append_and_build(no_keys, values, timestamps, CompressionType.NONE),
        count,
        args.repeats,
    )
    measure(
        "append_many+build (bulk), keys",
        lambda: append_many_and_build(keyed, values, timestamps, CompressionType.NONE),
        count,
        args.repeats,
    )
    measure(
        "append_many+build (bulk), keys, one timestamp",
        lambda: append_many_and_build(keyed, values, same_timestamp, CompressionType.NONE),
        count,
        args.repeats,
    )
    measure("encode_records only, keys", lambda: encode_only(keyed, values, timestamps), count,
            args.repeats)  # fmt: skip

    builder = RecordBatchBuilder(batch_size_limit=1 << 30)
    builder.append_many(keyed[:20_000], values[:20_000], timestamps[:20_000])
    data = builder.build()
    measure("read_record_batches", lambda: len(read_record_batches(data)), 20_000, args.repeats)

    if args.reference:
        measure(
            "reference: kafka-python DefaultRecordBatchBuilder",
            lambda: kafka_python_builder(keyed, values, timestamps),
            count,
            args.repeats,
        )
        measure(
            "reference: librdkafka Producer.produce()",
            lambda: librdkafka_produce(keyed, values, timestamps),
            count,
            args.repeats,
        )


if __name__ == "__main__":
    main()
