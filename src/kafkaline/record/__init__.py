"""Record batch v2 (magic 2), sans-I/O: build and read batches, varints, CRC-32C, codecs.

Imports nothing from kafkaline but :mod:`kafkaline.errors`. Modules:

* ``builder``: the pure-Python :class:`RecordBatchBuilder` (append records, seal, build wire
  bytes) and :func:`build_record_batch`; ``batch_settings``: the values it is made with;
* ``core``: the builder in use, the compiled core's or the pure-Python one (:func:`core_build`
  says which);
* ``record_encoder``: the record layout and its reference encoder, :func:`encode_records`;
* ``reader``: :func:`read_record_batches` / :func:`iter_record_batches`;
* ``compression``: :func:`compress` / :func:`decompress` for none, gzip, snappy, lz4, zstd;
* ``control``: transaction markers; ``crc``: CRC-32C; ``varint``: zigzag varints;
* ``batch_format``: the batch header layout and attribute bits.

Each name is imported from its module when first read from here (PEP 562): a producer needs
the builder and the headers, not the reader, the control records or the codecs' library.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kafkaline.record.batch_format import Header, Headers, TimestampType
    from kafkaline.record.builder import DEFAULT_BATCH_SIZE_LIMIT, build_record_batch
    from kafkaline.record.compression import (
        DEFAULT_MAX_DECOMPRESSED_SIZE,
        CompressionType,
        compress,
        decompress,
    )
    from kafkaline.record.control import ControlRecord, ControlRecordType
    from kafkaline.record.core import RecordBatchBuilder, core_build
    from kafkaline.record.crc import crc32c
    from kafkaline.record.reader import (
        Record,
        RecordBatch,
        iter_record_batches,
        read_record_batches,
    )
    from kafkaline.record.record_encoder import encode_records

# Public name -> the module (under kafkaline.record) that defines it.
_MODULE_OF: dict[str, str] = {
    "CompressionType": "compression",
    "ControlRecord": "control",
    "ControlRecordType": "control",
    "DEFAULT_BATCH_SIZE_LIMIT": "builder",
    "DEFAULT_MAX_DECOMPRESSED_SIZE": "compression",
    "Header": "batch_format",
    "Headers": "batch_format",
    "Record": "reader",
    "RecordBatch": "reader",
    "RecordBatchBuilder": "core",
    "TimestampType": "batch_format",
    "build_record_batch": "builder",
    "compress": "compression",
    "core_build": "core",
    "crc32c": "crc",
    "decompress": "compression",
    "encode_records": "record_encoder",
    "iter_record_batches": "reader",
    "read_record_batches": "reader",
}


def __getattr__(name: str) -> object:
    try:
        module_name = _MODULE_OF[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(f"{__name__}.{module_name}"), name)
    globals()[name] = value  # the next read is a plain module attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


__all__ = [
    "DEFAULT_BATCH_SIZE_LIMIT",
    "DEFAULT_MAX_DECOMPRESSED_SIZE",
    "CompressionType",
    "ControlRecord",
    "ControlRecordType",
    "Header",
    "Headers",
    "Record",
    "RecordBatch",
    "RecordBatchBuilder",
    "TimestampType",
    "build_record_batch",
    "compress",
    "core_build",
    "crc32c",
    "decompress",
    "encode_records",
    "iter_record_batches",
    "read_record_batches",
]
