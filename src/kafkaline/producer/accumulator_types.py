"""The types the :class:`~kafkaline.producer.accumulator.RecordAccumulator` takes and returns:
what an append returns, what a bulk source encodes, what the Sender's cluster view must offer,
what ready() found, and the counts of sealed batches."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple, Protocol

from kafkaline.net.cluster import TopicPartition
from kafkaline.producer.batch import ProducerBatch
from kafkaline.producer.futures import FutureRecordMetadata, ProduceRequestResult
from kafkaline.producer.partitioner import ClusterPartitions
from kafkaline.producer.pending_records import EncodedChunk
from kafkaline.record import Headers

__all__ = [
    "AccumulatorCluster",
    "BatchStats",
    "EncodedRecordSource",
    "EncodedRun",
    "LeaderNode",
    "OpenBatch",
    "OpenBatchSender",
    "ReadyCheckResult",
    "RecordAppendResult",
]

#: What :meth:`RecordAccumulator.append` returns: ``(future, batch_is_full,
#: new_batch_created)``. A plain tuple, not a NamedTuple: one is built per record (see
#: docs/performance.md, Notes moved from the code). Unpack it::
#:
#:     future, batch_is_full, new_batch_created = accumulator.append(...)
#:     if batch_is_full or new_batch_created:
#:         sender.wakeup()
RecordAppendResult = tuple[FutureRecordMetadata, bool, bool]


class OpenBatch(NamedTuple):
    """A partition's last batch, still open, as records encoded for it must see it."""

    #: Bytes of encoded records it still takes.
    room: int
    #: The offset delta of the next record.
    first_offset_delta: int
    #: The timestamp the records' timestamp deltas count from.
    base_timestamp: int


class EncodedRecordSource(Protocol):
    """One bulk call's records, in groups per partition, that encode themselves into whole
    batches' worth of records at once (``producer.columnar`` does it vectorised), for
    :meth:`RecordAccumulator.append_encoded`."""

    @property
    def groups(self) -> Sequence[tuple[int | None, int, int]]:
        """``(partition, start, stop)`` per group: its records are ``start..stop-1`` in the
        source's order; partition ``None`` means the sticky partitioner's."""
        ...

    def encode(
        self, requests: Sequence[tuple[int, OpenBatch | None]], fresh_room: int
    ) -> list[list[EncodedChunk]]:
        """For each ``(group index, open batch)``: the group's records as chunks in order: first
        those that fit the open batch (if any is given and any fit; ``continues_open``), then
        chunks for new batches of at most ``fresh_room`` bytes each (at least one record)."""
        ...


#: A run of records :meth:`RecordAccumulator.append_encoded` put in one batch: ``(batch
#: result, first offset delta, first record's index in the source's order, count)``.
EncodedRun = tuple[ProduceRequestResult, int, int, int]


class OpenBatchSender(Protocol):
    """The compiled record core's one-call send(), see
    :meth:`RecordAccumulator.open_batch_sender`."""

    #: Whether sends may go straight on (the producer's gate is open).
    open: bool
    #: The producer's topic -> partition count map.
    partition_counts: dict[str, int]
    #: What gets the calls the core declines (send()'s general path), or None.
    fallback: Callable[..., FutureRecordMetadata] | None
    #: ``new_batch(topic, partition, timestamp_ms, key, value)``: what gets a record the core
    #: checked and placed whose partition has no batch with room for it, or None (the
    #: fallback then gets it).
    new_batch: Callable[[str, int, int, bytes | None, bytes | None], FutureRecordMetadata] | None

    def __call__(
        self,
        topic: str,
        value: object = None,
        key: object = None,
        headers: Headers | None = None,
        partition: int | None = None,
        timestamp_ms: int | None = None,
    ) -> FutureRecordMetadata | None: ...


class LeaderNode(Protocol):
    """A partition leader as the cluster metadata gives it (``BrokerNode`` is one)."""

    @property
    def node_id(self) -> int: ...


class AccumulatorCluster(ClusterPartitions, Protocol):
    """What the accumulator needs from a cluster metadata snapshot. The network layer's
    ``ClusterMetadata`` implements it; so can a small fake in tests."""

    def leader_for(self, tp: TopicPartition) -> LeaderNode | None:
        """The broker leading ``tp``, or ``None`` when unknown."""
        ...

    def partitions_for_node(self, node_id: int) -> Sequence[TopicPartition]:
        """The partitions ``node_id`` leads, in a stable order (drain rotates over it)."""
        ...


class ReadyCheckResult(NamedTuple):
    """What :meth:`RecordAccumulator.ready` found."""

    #: Node ids of leaders with at least one sendable batch.
    ready_nodes: set[int]
    #: How long until another partition may become sendable (``math.inf``: nothing queued).
    next_ready_check_delay_ms: float
    #: Topics with queued batches but a partition without known leader: refresh metadata.
    unknown_leader_topics: set[str]


class BatchStats:
    """Cumulative counts of the batches closed for sending, for the producer's metrics
    (``batch-size-avg``, ``records-per-batch-avg``, ``compression-rate-avg``). Updated by
    the Sender's thread only."""

    __slots__ = ("batches", "bytes", "records", "uncompressed_bytes")

    def __init__(self) -> None:
        self.batches = 0
        self.records = 0
        #: Wire bytes of the batches.
        self.bytes = 0
        #: Bytes of the batches' records before compression.
        self.uncompressed_bytes = 0

    def add(self, batch: ProducerBatch, wire_size: int | None = None) -> None:
        """Count a batch that was just closed (sealed); ``wire_size`` is its size if the
        caller read it already."""
        builder = batch.builder
        self.batches += 1
        self.records += len(builder)
        size = builder.estimated_size_in_bytes if wire_size is None else wire_size
        self.bytes += size
        self.uncompressed_bytes += (
            builder.uncompressed_records_size if builder.compression else size
        )

    @property
    def batch_size_avg(self) -> float:
        """Average wire size of a batch (0.0 before any)."""
        return self.bytes / self.batches if self.batches else 0.0

    @property
    def records_per_batch_avg(self) -> float:
        """Average records per batch (0.0 before any)."""
        return self.records / self.batches if self.batches else 0.0

    @property
    def compression_rate_avg(self) -> float:
        """Compressed / uncompressed bytes over all batches (1.0 before any)."""
        return self.bytes / self.uncompressed_bytes if self.uncompressed_bytes else 1.0
