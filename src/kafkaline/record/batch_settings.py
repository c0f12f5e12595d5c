"""The values a record batch is built with: its settings and its producer state.

:class:`BatchSettings` holds what is fixed when a builder is made (codec, size limit, the
header's offset, epoch and attributes); :class:`ProducerState` the idempotence fields, which
may change until the batch is sent (sequences are assigned when a batch is drained). Both
check their ranges when made, so a builder holds only valid values.
"""

from __future__ import annotations

from typing import NamedTuple

from kafkaline.record.batch_format import (
    ATTR_CONTROL,
    ATTR_TIMESTAMP_TYPE,
    ATTR_TRANSACTIONAL,
    BATCH_HEADER_SIZE,
    MAX_BATCH_SIZE,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    TimestampType,
)
from kafkaline.record.compression import (
    CompressionType,
    compression_type,
    resolve_compression_level,
)
from kafkaline.record.varint import INT64_MAX, INT64_MIN

__all__ = ["BatchSettings", "ProducerState", "attribute_flags", "check_range", "records_room"]

INT16 = range(-(1 << 15), 1 << 15)
INT32 = range(-(1 << 31), 1 << 31)
INT64 = range(INT64_MIN, INT64_MAX + 1)


def check_range(name: str, value: int, allowed: range) -> int:
    """``value`` if it is an int in ``allowed``, else ``ValueError`` naming it."""
    if not isinstance(value, int) or value not in allowed:
        raise ValueError(f"{name} {value!r} is outside {allowed.start}..{allowed.stop - 1}")
    return value


def records_room(batch_size_limit: int, estimated_compression_ratio: float = 1.0) -> int:
    """Bytes of encoded (uncompressed) records an empty batch with these settings takes
    before it is full: the limit less the header, scaled up by the expected compression."""
    return int((batch_size_limit - BATCH_HEADER_SIZE) / estimated_compression_ratio)


class BatchSettings(NamedTuple):
    """What a batch is built with, checked (see :meth:`checked`)."""

    compression: CompressionType
    compression_level: int | None
    #: ``batch.size``: the wire size the batch should stay under.
    size_limit: int
    #: Compressed / uncompressed size the producer expects (1.0: no compression assumed).
    estimated_compression_ratio: float
    #: What the header and the uncompressed records may take: the size limit scaled by the
    #: ratio (compressed batches take more records).
    appended_limit: int
    base_offset: int
    partition_leader_epoch: int
    attributes: int
    #: The batch's max timestamp for LOG_APPEND_TIME batches, else ``None``.
    log_append_time: int | None

    @classmethod
    def checked(
        cls,
        batch_size_limit: int,
        compression: int,
        compression_level: int | None,
        estimated_compression_ratio: float,
        base_offset: int,
        partition_leader_epoch: int,
        attribute_flags: int,
        log_append_time: int | None,
    ) -> BatchSettings:
        """The settings, or ``ValueError`` naming the first one out of range (an unknown
        codec or level raises what :mod:`~kafkaline.record.compression` raises).
        ``attribute_flags`` are the attribute bits besides the codec."""
        codec = compression_type(compression)
        if compression_level is not None:
            resolve_compression_level(codec, compression_level)  # validates it
        if not BATCH_HEADER_SIZE < batch_size_limit <= MAX_BATCH_SIZE:
            raise ValueError(
                f"batch_size_limit {batch_size_limit} is outside "
                f"{BATCH_HEADER_SIZE + 1}..{MAX_BATCH_SIZE}"
            )
        if not 0.0 < estimated_compression_ratio <= 1.0:
            raise ValueError(
                f"estimated_compression_ratio {estimated_compression_ratio} is outside (0, 1]"
            )
        if attribute_flags & ATTR_TIMESTAMP_TYPE:
            if log_append_time is None:
                raise ValueError("LOG_APPEND_TIME batches need log_append_time")
            check_range("log_append_time", log_append_time, INT64)
        else:
            log_append_time = None
        return cls(
            compression=codec,
            compression_level=compression_level,
            size_limit=batch_size_limit,
            estimated_compression_ratio=estimated_compression_ratio,
            appended_limit=BATCH_HEADER_SIZE
            + records_room(batch_size_limit, estimated_compression_ratio),
            base_offset=check_range("base_offset", base_offset, INT64),
            partition_leader_epoch=check_range(
                "partition_leader_epoch", partition_leader_epoch, INT32
            ),
            attributes=codec | attribute_flags,
            log_append_time=log_append_time,
        )


def attribute_flags(is_transactional: bool, is_control: bool, timestamp_type: TimestampType) -> int:
    """The attribute bits besides the codec."""
    return (
        (ATTR_TIMESTAMP_TYPE if timestamp_type == TimestampType.LOG_APPEND_TIME else 0)
        | (ATTR_TRANSACTIONAL if is_transactional else 0)
        | (ATTR_CONTROL if is_control else 0)
    )


class ProducerState(NamedTuple):
    """The idempotence fields of a batch header (``-1`` each when not idempotent)."""

    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    base_sequence: int = NO_SEQUENCE

    @classmethod
    def checked(cls, producer_id: int, producer_epoch: int, base_sequence: int) -> ProducerState:
        """The state, or ``ValueError`` naming the first field out of range."""
        return cls(
            check_range("producer_id", producer_id, INT64),
            check_range("producer_epoch", producer_epoch, INT16),
            check_range("base_sequence", base_sequence, INT32),
        )
