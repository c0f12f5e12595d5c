"""The fixed part of a record batch v2 (magic 2): header layout, attribute bits, limits.

Batch header, 61 bytes, big-endian (the CRC covers the bytes from ``attributes`` to the end of
the batch, so the broker can rewrite ``base_offset`` and ``partition_leader_epoch`` without
recomputing it)::

    offset size field                    notes
         0    8 base_offset   int64      0 from a producer; the broker assigns offsets
         8    4 batch_length  int32      bytes after this field (total size - 12)
        12    4 partition_leader_epoch   -1 from a producer
        16    1 magic         int8       2
        17    4 crc           uint32     CRC-32C of bytes [21, end)
        21    2 attributes    int16      see ATTR_* below
        23    4 last_offset_delta int32  record count - 1 (also the last sequence delta)
        27    8 base_timestamp int64     first record's timestamp
        35    8 max_timestamp  int64     largest timestamp (LOG_APPEND_TIME: the broker's)
        43    8 producer_id    int64     -1 when not idempotent
        51    2 producer_epoch int16     -1 when not idempotent
        53    4 base_sequence  int32     -1 when not idempotent
        57    4 record_count   int32
        61      records                  compressed as one block when attributes say so

Attributes: bits 0-2 compression codec, bit 3 timestamp type (1 = LOG_APPEND_TIME), bit 4
transactional, bit 5 control batch, bit 6 "has delete horizon" (set by the log cleaner only).

The per-record layout is next to its encoder in ``record_encoder``.
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Sequence

MAGIC = 2

#: The whole batch header, packed and unpacked in one call.
BATCH_HEADER = struct.Struct(">qiibIhiqqqhii")
BATCH_HEADER_SIZE = BATCH_HEADER.size  # 61
#: ``base_offset`` + ``batch_length``: the prefix every message-set format shares.
LOG_OVERHEAD = 12
#: Where the magic byte sits, in every message-set format (legacy v0/v1 too).
MAGIC_OFFSET = 16
CRC_OFFSET = 17
#: The CRC covers the batch from here to its end.
CRC_SPAN_START = 21
#: Smallest legal ``batch_length``: a header with no records.
MIN_BATCH_LENGTH = BATCH_HEADER_SIZE - LOG_OVERHEAD
#: ``batch_length`` is an int32.
MAX_BATCH_SIZE = LOG_OVERHEAD + (1 << 31) - 1

ATTR_COMPRESSION_MASK = 0x07
ATTR_TIMESTAMP_TYPE = 0x08
ATTR_TRANSACTIONAL = 0x10
ATTR_CONTROL = 0x20
ATTR_DELETE_HORIZON = 0x40

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1


class TimestampType(enum.IntEnum):
    """Meaning of record timestamps in a batch (attribute bit 3)."""

    CREATE_TIME = 0
    """Set by the producer (the default)."""
    LOG_APPEND_TIME = 1
    """Set by the broker: every record's timestamp is the batch's ``max_timestamp``."""


#: A record header: a UTF-8 key and a value that may be null.
Header = tuple[str, bytes | None]
Headers = Sequence[Header]
