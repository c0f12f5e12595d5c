"""Control records: the transaction markers brokers write into control batches.

A control record's key is ``version int16, type int16`` (type 0 = abort, 1 = commit; KRaft
uses further types for its own log). For commit and abort markers the value is
``version int16, coordinator_epoch int32``. Both big-endian, version 0.
"""

from __future__ import annotations

import enum
import struct
from typing import NamedTuple

from kafkaline.errors import CorruptRecordError

_KEY = struct.Struct(">hh")
_END_TXN_VALUE = struct.Struct(">hi")


class ControlRecordType(enum.IntEnum):
    """Known control record types (the key's ``type`` field)."""

    ABORT = 0
    COMMIT = 1


class ControlRecord(NamedTuple):
    """A decoded control record."""

    version: int
    """The key's version field."""
    type: int
    """0 abort, 1 commit (see :class:`ControlRecordType`); other values are kept as read."""
    coordinator_epoch: int | None
    """The transaction coordinator's epoch, for commit and abort markers."""

    @property
    def is_commit(self) -> bool:
        """A transaction commit marker."""
        return self.type == ControlRecordType.COMMIT

    @property
    def is_abort(self) -> bool:
        """A transaction abort marker."""
        return self.type == ControlRecordType.ABORT


def encode_transaction_marker(
    commit: bool, coordinator_epoch: int, version: int = 0
) -> tuple[bytes, bytes]:
    """``(key, value)`` of a commit or abort marker (brokers write these; tests do too)."""
    record_type = ControlRecordType.COMMIT if commit else ControlRecordType.ABORT
    return _KEY.pack(version, record_type), _END_TXN_VALUE.pack(0, coordinator_epoch)


def decode_control_record(key: bytes | None, value: bytes | None) -> ControlRecord:
    """Decode a control record's key and value.

    Raises :class:`CorruptRecordError` when the key is missing or shorter than four bytes, or a
    commit/abort marker's value is shorter than six.
    """
    if key is None or len(key) < _KEY.size:
        raise CorruptRecordError(f"control record key {key!r} is shorter than 4 bytes")
    version, record_type = _KEY.unpack_from(key)
    coordinator_epoch = None
    if record_type in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
        if value is None or len(value) < _END_TXN_VALUE.size:
            raise CorruptRecordError(f"transaction marker value {value!r} is shorter than 6 bytes")
        _, coordinator_epoch = _END_TXN_VALUE.unpack_from(value)
    return ControlRecord(version, record_type, coordinator_epoch)
