"""Reading a run's records back: the count that decides whether a run is timed or failed.

Every partition is fetched from offset 0 with kafkaline's own Fetch and record reader
(:func:`kafkaline.testing.wire.fetch_partition`: CRC-checked, decompressed, every record
decoded), and the records and their key and value bytes are counted. The broker's reported
end offsets are never used: Tansu reports the newest batch's base offset + 1, not the log end
(see DESIGN.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from kafkaline.protocol.api import FetchRequest
from kafkaline.testing.wire import BlockingConnection, fetch_partition, negotiate_versions

# A fetch that finds nothing new ends a partition's read-back; the broker answers it after
# this wait, so it is short (every record was acknowledged before the read-back starts).
_EMPTY_FETCH_WAIT_MS = 10
# Per partition: a sixth of 1 GB is read in a few seconds; this only bounds a stuck broker.
_PARTITION_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class ReadBack:
    records: int
    payload_bytes: int


def read_back(host: str, port: int, topic: str, partitions: int) -> ReadBack:
    """Count the records of every partition of ``topic`` and their key and value bytes. One
    partition's records are in memory at a time."""
    records = 0
    payload = 0
    with BlockingConnection(host, port, timeout=_PARTITION_TIMEOUT_S) as conn:
        fetch_version = negotiate_versions(conn)[FetchRequest.API_KEY]
        for partition in range(partitions):
            batches = fetch_partition(
                conn,
                topic,
                partition,
                fetch_version,
                max_wait_ms=_EMPTY_FETCH_WAIT_MS,
                timeout=_PARTITION_TIMEOUT_S,
            )
            for batch in batches:
                records += len(batch.records)
                for record in batch.records:
                    payload += len(record.key or b"") + len(record.value or b"")
            del batches
    return ReadBack(records=records, payload_bytes=payload)
