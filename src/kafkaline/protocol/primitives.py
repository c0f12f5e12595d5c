"""Kafka wire primitives: fixed-width integers, varints, strings, bytes, arrays, tagged fields.

Decoding goes through :class:`Reader`, a cursor over a bytes-like object. Every read checks the
bytes that remain *before* it slices or allocates, so truncated, corrupt or hostile input raises
:class:`~kafkaline.errors.DecodeError` and nothing else: a lying length or array count can
neither allocate a huge buffer nor loop for long.

Encoding appends to a ``bytearray`` with the ``write_*`` functions; a value that does not fit
its wire type raises :class:`~kafkaline.errors.EncodeError`.

Wire layout (all integers big-endian):

    int8/16/32/64, uint16/32   fixed width, two's complement / unsigned
    float64                    IEEE 754 double
    bool                       int8, 0 = false, anything else = true
    uuid                       16 bytes
    unsigned varint            7 bits per byte, low group first, high bit = "more follows";
                               at most 5 bytes (32 bits)
    varint / varlong           zigzag ((n << 1) ^ (n >> 31|63)) then unsigned varint;
                               at most 5 / 10 bytes
    string                     int16 length N, N bytes of UTF-8       (nullable: N = -1 is null)
    compact string             uvarint N+1, N bytes of UTF-8          (nullable: 0 is null)
    bytes                      int32 length N, N bytes                (nullable: N = -1 is null)
    compact bytes              uvarint N+1, N bytes                   (nullable: 0 is null)
    array                      int32 count N, N items                 (nullable: N = -1 is null)
    compact array              uvarint N+1, N items                   (nullable: 0 is null)
    tagged fields              uvarint count, then per field: uvarint tag, uvarint size, data
"""

from __future__ import annotations

from kafkaline.protocol.fixed_width import Buffer
from kafkaline.protocol.reader import Reader
from kafkaline.protocol.writers import (
    SCATTER_MIN_BYTES,
    ScatterFrame,
    write_array,
    write_bool,
    write_bytes,
    write_compact_array,
    write_compact_bytes,
    write_compact_nullable_array,
    write_compact_nullable_bytes,
    write_compact_nullable_records,
    write_compact_nullable_string,
    write_compact_records,
    write_compact_string,
    write_float64,
    write_int8,
    write_int16,
    write_int32,
    write_int64,
    write_nullable_array,
    write_nullable_bytes,
    write_nullable_records,
    write_nullable_string,
    write_records,
    write_string,
    write_tagged_fields,
    write_uint16,
    write_uint32,
    write_unsigned_varint,
    write_uuid,
    write_varint,
    write_varlong,
)

__all__ = [
    "SCATTER_MIN_BYTES",
    "Buffer",
    "Reader",
    "ScatterFrame",
    "write_array",
    "write_bool",
    "write_bytes",
    "write_compact_array",
    "write_compact_bytes",
    "write_compact_nullable_array",
    "write_compact_nullable_bytes",
    "write_compact_nullable_records",
    "write_compact_nullable_string",
    "write_compact_records",
    "write_compact_string",
    "write_float64",
    "write_int8",
    "write_int16",
    "write_int32",
    "write_int64",
    "write_nullable_array",
    "write_nullable_bytes",
    "write_nullable_records",
    "write_nullable_string",
    "write_records",
    "write_string",
    "write_tagged_fields",
    "write_uint16",
    "write_uint32",
    "write_unsigned_varint",
    "write_uuid",
    "write_varint",
    "write_varlong",
]
