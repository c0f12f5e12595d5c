"""What a completed send tells: :class:`RecordMetadata` (Java's ``RecordMetadata``)."""

from __future__ import annotations

from typing import Final, NamedTuple

__all__ = ["NO_TIMESTAMP", "UNKNOWN_OFFSET", "UNKNOWN_PARTITION", "RecordMetadata"]

#: Partition not chosen yet (a send that failed before partitioning).
UNKNOWN_PARTITION: Final = -1
#: No offset: ``acks=0``, or the send failed.
UNKNOWN_OFFSET: Final = -1
#: No timestamp known.
NO_TIMESTAMP: Final = -1


class RecordMetadata(NamedTuple):
    """Where a record was written.

    ``offset`` is -1 with ``acks=0`` (the broker does not answer); ``timestamp`` is the
    record's create time, or the broker's log-append time when the topic uses it; the sizes
    are of the serialized key and value, -1 when absent. A tuple, so it is cheap to make
    once per record and can be unpacked::

        >>> topic, partition, offset, *_ = RecordMetadata("events", 2, 41, 1700000000000, 6, 7)
        >>> (topic, partition, offset)
        ('events', 2, 41)
    """

    topic: str
    partition: int
    offset: int
    timestamp: int
    serialized_key_size: int
    serialized_value_size: int

    def has_offset(self) -> bool:
        """Whether the broker reported an offset (not with ``acks=0`` or after a failure)."""
        return self.offset != UNKNOWN_OFFSET

    def has_timestamp(self) -> bool:
        """Whether a timestamp is known."""
        return self.timestamp != NO_TIMESTAMP
