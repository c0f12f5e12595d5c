"""`make demo`: kafkaline's layers end to end on an embedded local broker.

Starts a LocalBroker, negotiates API versions, creates a topic, produces a few thousand records
as record batches (one batch per compression codec, spread over the partitions), fetches them
back with our own Fetch and reader, checks every record bit-exact, and prints what happened.

Until the producer lands this drives the raw layers (protocol/ + record/) directly; the
pipeline demo replaces it when the Spark integration arrives.

    python -m kafkaline.testing.demo [--records N]
"""

from __future__ import annotations

import argparse
import sys
import time

from kafkaline.protocol.api import FetchRequest, ProduceRequest
from kafkaline.record import CompressionType, build_record_batch
from kafkaline.testing import LocalBroker
from kafkaline.testing.wire import (
    BlockingConnection,
    fetch_partition,
    negotiate_versions,
    produce_batch,
)

_TOPIC = "kafkaline-demo"
_PARTITIONS = 3


def _records(count: int, first: int) -> tuple[list[bytes | None], list[bytes | None]]:
    keys: list[bytes | None] = [f"user-{(first + i) % 97}".encode() for i in range(count)]
    values: list[bytes | None] = [
        f'{{"event": {first + i}, "payload": "{"x" * (i % 50)}"}}'.encode() for i in range(count)
    ]
    return keys, values


def run_demo(total_records: int = 5000) -> int:
    """Run the demo; return a process exit code (0 when every record read back exactly)."""
    codecs = list(CompressionType)
    per_batch = max(1, total_records // (len(codecs) * _PARTITIONS))
    started = time.perf_counter()
    with LocalBroker() as broker:
        print(f"broker      Tansu on {broker.bootstrap_servers} (log: {broker.log_path})")
        broker.create_topic(_TOPIC, partitions=_PARTITIONS)
        with BlockingConnection(broker.host, broker.port, client_id="kafkaline-demo") as conn:
            versions = negotiate_versions(conn)
            produce_v = versions[ProduceRequest.API_KEY]
            fetch_v = versions[FetchRequest.API_KEY]
            print(f"versions    Produce v{produce_v}, Fetch v{fetch_v} (negotiated)")

            sent: dict[int, list[tuple[bytes | None, bytes | None]]] = {}
            next_id = 0
            for partition in range(_PARTITIONS):
                for codec in codecs:
                    keys, values = _records(per_batch, next_id)
                    next_id += per_batch
                    batch = build_record_batch(
                        keys, values, int(time.time() * 1000), compression=codec
                    )
                    answer = produce_batch(conn, _TOPIC, partition, batch, produce_v)
                    offset = answer.base_offset if answer else -1
                    print(
                        f"produce     partition {partition} {codec.name.lower():6} "
                        f"{per_batch} records, {len(batch):7} bytes -> base offset {offset}"
                    )
                    sent.setdefault(partition, []).extend(zip(keys, values, strict=True))

            mismatches = 0
            read_total = 0
            for partition, expected in sent.items():
                batches = fetch_partition(
                    conn, _TOPIC, partition, fetch_v, expected_records=len(expected)
                )
                got = [(r.key, r.value) for b in batches for r in b.records]
                read_total += len(got)
                mismatches += sum(1 for a, b in zip(got, expected, strict=False) if a != b)
                mismatches += abs(len(got) - len(expected))
                codec_names = ", ".join(b.compression.name.lower() for b in batches)
                print(
                    f"fetch       partition {partition}: {len(got)} records in "
                    f"{len(batches)} batches ({codec_names})"
                )
    elapsed = time.perf_counter() - started
    sent_total = sum(len(v) for v in sent.values())
    verdict = "all bit-exact" if mismatches == 0 else f"{mismatches} MISMATCHES"
    print(f"result      sent {sent_total}, read back {read_total}: {verdict} ({elapsed:.2f}s)")
    return 0 if mismatches == 0 else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--records", type=int, default=5000, help="records to produce")
    args = parser.parse_args(argv)
    return run_demo(args.records)


if __name__ == "__main__":
    sys.exit(main())
