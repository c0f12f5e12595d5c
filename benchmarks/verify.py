"""Reading a run's records back: the count that decides whether a run is timed or failed.

Every partition is fetched from offset 0 with kafkaline's own Fetch and record reader (the
reader of :func:`kafkaline.testing.wire.fetch_partition`: CRC-checked, decompressed, every
record decoded), and the records and their key and value bytes are counted. The broker's
reported end offsets are never used: Tansu reports the newest batch's base offset + 1, not the
log end (see DESIGN.md).

Why not ``fetch_partition`` itself: it stops at the first fetch that brings nothing new, and
Tansu 0.6 answers a Fetch with *no records* when ``max_wait_ms`` runs out while it is still
reading a large partition (seen here: 10 ms on a 170 MB partition returned nothing for one
partition of six). So this loop knows how many records it expects, treats an empty answer as
"not yet" until nothing has come for :data:`_IDLE_TIMEOUT_S`, and once the count is reached
asks once more, to catch records beyond it (duplicates).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from operator import attrgetter

from kafkaline.errors import raise_for_code
from kafkaline.protocol.api import FetchRequest, FetchResponse
from kafkaline.protocol.api.fetch import FetchPartition, FetchTopic
from kafkaline.record import Record, read_record_batches
from kafkaline.testing.wire import BlockingConnection, negotiate_versions

# Fetch v13+ names topics by id; this loop asks by name.
_MAX_FETCH_VERSION_BY_NAME = 12
_MAX_WAIT_MS = 200
_MAX_BYTES = 16 << 20
_PARTITION_MAX_BYTES = 4 << 20
# Every record was acknowledged before the read-back starts: a long silence means they are
# not there (the run failed), not that they are late.
_IDLE_TIMEOUT_S = 10.0
_REQUEST_TIMEOUT_S = 60.0
_KEY = attrgetter("key")
_VALUE = attrgetter("value")


@dataclass(frozen=True)
class ReadBack:
    records: int
    payload_bytes: int


def read_back(host: str, port: int, topic: str, partitions: int, expected: int) -> ReadBack:
    """Count the records of every partition of ``topic`` and their key and value bytes,
    reading until ``expected`` records are in hand (and once more), or until nothing new
    comes for a while. Only the records of one response are in memory at a time."""
    offsets = [0] * partitions
    records = 0
    payload = 0
    with BlockingConnection(host, port, timeout=_REQUEST_TIMEOUT_S) as conn:
        version = min(negotiate_versions(conn)[FetchRequest.API_KEY], _MAX_FETCH_VERSION_BY_NAME)
        idle_deadline = time.monotonic() + _IDLE_TIMEOUT_S
        while True:
            response = conn.request(_fetch_request(topic, offsets), version, FetchResponse)
            raise_for_code(response.error_code, "fetch")
            progress = False
            for data in response.responses[0].partitions:
                partition = data.partition_index
                raise_for_code(data.error_code, f"fetch {topic}/{partition}")
                for batch in read_record_batches(data.records or b""):
                    # Each fetch starts where the last batch read ended, so a batch is either
                    # wholly new or wholly counted already (a broker may send it again).
                    if batch.next_offset <= offsets[partition]:
                        continue
                    records += len(batch.records)
                    payload += _payload_bytes(batch.records)
                    offsets[partition] = batch.next_offset
                    progress = True
            if progress:
                idle_deadline = time.monotonic() + _IDLE_TIMEOUT_S
            elif records >= expected or time.monotonic() > idle_deadline:
                return ReadBack(records=records, payload_bytes=payload)


def _payload_bytes(records: Sequence[Record]) -> int:
    # C-level map/sum: a Python loop over 300,000 records here costs about a second per run.
    try:
        return sum(map(len, map(_KEY, records))) + sum(map(len, map(_VALUE, records)))
    except TypeError:  # a null key or value: no workload sends one, but count it as 0 bytes
        return sum(len(r.key or b"") + len(r.value or b"") for r in records)


def _fetch_request(topic: str, offsets: list[int]) -> FetchRequest:
    return FetchRequest(
        max_wait_ms=_MAX_WAIT_MS,
        min_bytes=1,
        max_bytes=_MAX_BYTES,
        topics=[
            FetchTopic(
                topic=topic,
                partitions=[
                    FetchPartition(
                        partition=partition,
                        fetch_offset=offset,
                        partition_max_bytes=_PARTITION_MAX_BYTES,
                    )
                    for partition, offset in enumerate(offsets)
                ],
            )
        ],
    )
