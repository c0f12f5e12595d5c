"""What a ``read_committed`` consumer would see in a topic, worked out from the raw log.

Some brokers (Tansu 0.6 among them) write the commit and abort markers of transactions but do
not filter aborted records out of ``read_committed`` fetches. This reader fetches every record
batch of a topic's partitions with our own Fetch and record reader and applies the rule of
``isolation.level=read_committed`` itself, from the control batches:

* a record of a non-transactional batch counts at once;
* a record of a transactional batch counts only if a COMMIT marker of the same producer id
  comes after it in the partition; an ABORT marker after it drops it;
* a transactional record with no marker after it belongs to a transaction that is still open
  (a real broker's last stable offset stops before it).

Markers are matched by producer id, not epoch: a coordinator that fences a producer writes
the ABORT marker with the bumped epoch, and it ends the older epoch's records too.

>>> log = read_committed_log("127.0.0.1:9092", "events")         # doctest: +SKIP
>>> log.committed_values()                                          # doctest: +SKIP
[b'a', b'b']
>>> log.open_producer_ids()                                         # doctest: +SKIP
set()
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from kafkaline.protocol.api import MetadataRequest, MetadataResponse
from kafkaline.protocol.api.metadata import MetadataRequestTopic
from kafkaline.record import Record, RecordBatch

__all__ = [
    "CommittedLog",
    "PartitionView",
    "apply_read_committed",
    "read_committed_log",
]


@dataclass
class PartitionView:
    """One partition under read_committed: the records a reader sees (``committed``, in log
    order), those it never sees (``aborted``), and those of transactions still open
    (``open``, by producer id)."""

    committed: list[Record] = field(default_factory=list)
    aborted: list[Record] = field(default_factory=list)
    open: dict[int, list[Record]] = field(default_factory=dict)
    commit_markers: int = 0
    abort_markers: int = 0


def apply_read_committed(batches: Iterable[RecordBatch]) -> PartitionView:
    """Apply read_committed to one partition's batches (in log order, as fetched)."""
    view = PartitionView()
    pending: dict[int, list[Record]] = {}
    for batch in batches:
        if batch.is_control:
            markers = [m for m in batch.control_records if m.is_commit or m.is_abort]
            if not markers:
                continue  # other control records (KRaft's own) end no transaction
            ended = pending.pop(batch.producer_id, [])
            if markers[0].is_commit:
                view.commit_markers += 1
                view.committed.extend(ended)
            else:
                view.abort_markers += 1
                view.aborted.extend(ended)
        elif batch.is_transactional:
            pending.setdefault(batch.producer_id, []).extend(batch.records)
        else:
            view.committed.extend(batch.records)
    view.open = pending
    return view


@dataclass
class CommittedLog:
    """A topic under read_committed, partition by partition."""

    topic: str
    partitions: dict[int, PartitionView]

    def committed(self) -> list[Record]:
        """Every committed record, partition by partition."""
        return [r for p in sorted(self.partitions) for r in self.partitions[p].committed]

    def committed_values(self) -> list[bytes | None]:
        return [record.value for record in self.committed()]

    def aborted_values(self) -> list[bytes | None]:
        return [r.value for p in sorted(self.partitions) for r in self.partitions[p].aborted]

    def open_values(self) -> list[bytes | None]:
        """Values of records in transactions with no marker yet (all partitions)."""
        return [
            record.value
            for view in self.partitions.values()
            for records in view.open.values()
            for record in records
        ]

    def open_producer_ids(self) -> set[int]:
        """Producer ids with a transaction open in some partition (records, no marker)."""
        return {pid for view in self.partitions.values() for pid in view.open}

    def counts(self) -> dict[str, int]:
        """committed / aborted / open records and commit / abort markers, over all partitions."""
        views = self.partitions.values()
        return {
            "committed": sum(len(v.committed) for v in views),
            "aborted": sum(len(v.aborted) for v in views),
            "open": sum(len(r) for v in views for r in v.open.values()),
            "commit_markers": sum(v.commit_markers for v in views),
            "abort_markers": sum(v.abort_markers for v in views),
        }


def read_committed_log(
    bootstrap_servers: str,
    topic: str,
    partitions: Sequence[int] | None = None,
    timeout: float = 30.0,
) -> CommittedLog:
    """Fetch every batch of ``topic`` (all its partitions unless given) from offset 0 and apply
    read_committed to each partition. Talks to the first bootstrap server only, which must
    lead the partitions (a single broker, as in tests)."""
    from kafkaline.testing.wire import BlockingConnection, fetch_partition, negotiate_versions

    first = bootstrap_servers.split(",")[0].strip()
    host, _, port = first.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"bootstrap server {first!r} is not host:port")
    with BlockingConnection(host, int(port), timeout=timeout) as conn:
        versions = negotiate_versions(conn)
        if partitions is None:
            partitions = _partition_ids(conn, topic, versions[MetadataRequest.API_KEY])
        views = {
            partition: apply_read_committed(
                fetch_partition(
                    conn,
                    topic,
                    partition,
                    versions[1],  # Fetch
                    max_wait_ms=50,
                    timeout=timeout,
                )
            )
            for partition in partitions
        }
    return CommittedLog(topic, views)


def _partition_ids(conn: object, topic: str, version: int) -> list[int]:
    from kafkaline.testing.wire import BlockingConnection

    if not isinstance(conn, BlockingConnection):  # pragma: no cover
        raise TypeError("expected a BlockingConnection")
    version = min(version, 9)  # v10+ may name topics by id; by name is all we need
    answer = conn.request(
        MetadataRequest(topics=[MetadataRequestTopic(name=topic)]), version, MetadataResponse
    )
    for found in answer.topics:
        if found.name == topic:
            if found.error_code:
                raise ValueError(f"metadata for {topic!r}: error code {found.error_code}")
            return sorted(p.partition_index for p in found.partitions)
    raise ValueError(f"topic {topic!r} not in the metadata answer")
