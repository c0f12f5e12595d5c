"""send_arrow()'s columns read out of a pyarrow RecordBatch or Table: as Python lists (the
records encoder's input) or as checked slices of Arrow arrays (the columnar encoder's), with
the checks that name a missing column or one of the wrong type.

pyarrow is imported lazily, when Arrow data is read: kafkaline imports without it.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any, NamedTuple

from kafkaline.errors import InvalidRecordTimestampError
from kafkaline.record import Headers

__all__ = [
    "TO_MILLISECONDS",
    "ArrowSlice",
    "arrow_columns",
    "arrow_partitions_and_timestamps",
    "arrow_slices",
]


def _import_pyarrow() -> Any:
    # Imported here, not at the top: kafkaline works without pyarrow (the spark extra). By
    # name, so that type checking does not need pyarrow's (absent) stubs.
    try:
        return importlib.import_module("pyarrow")
    except ImportError as error:
        raise ModuleNotFoundError(
            "send_arrow() needs pyarrow, which is not installed: install kafkaline with its "
            "spark extra (pip install '.[spark]' from the clone) or pip install pyarrow",
            name="pyarrow",
        ) from error


def arrow_columns(
    data: Any, key: str | None, value: str, headers: str | None
) -> tuple[list[bytes | None] | None, list[bytes | None], list[Headers | None] | None]:
    """The key, value and headers columns of a pyarrow RecordBatch or Table as Python lists
    (keys ``None`` when ``key`` is None). Binary and string columns (and their large forms)
    are accepted, strings as their UTF-8 bytes; nulls become Kafka nulls. The headers column
    is ``list<struct<key: string, value: binary>>``. Wrong types raise TypeError and missing
    columns ValueError, naming the column."""
    pa = _import_pyarrow()
    batches, schema = _batches_and_schema(pa, data)
    _check_present(schema, (("key", key), ("value", value), ("headers", headers)))
    binary_view = _binary_view(pa, schema, value)
    key_view = None if key is None else _binary_view(pa, schema, key)
    if headers is not None:
        _check_headers_type(pa, schema.field(headers).type, headers)
    values: list[bytes | None] = []
    keys: list[bytes | None] | None = None if key is None else []
    header_list: list[Headers | None] | None = None if headers is None else []
    for batch in batches:
        values += _to_bytes_list(batch.column(value), binary_view)
        if keys is not None and key is not None:
            keys += _to_bytes_list(batch.column(key), key_view)
        if header_list is not None and headers is not None:
            header_list += [
                None if not entry else [(item["key"], item["value"]) for item in entry]
                for entry in batch.column(headers).to_pylist()
            ]
    return keys, values, header_list


def arrow_partitions_and_timestamps(
    data: Any, partition: str | None, timestamp: str | None
) -> tuple[list[int | None] | None, list[int | None] | None]:
    """The optional partition and timestamp columns of a pyarrow RecordBatch or Table as
    Python lists (``None`` for a column not asked for); nulls stay ``None`` (the partitioner
    decides, the time of the call).

    The partition column is of an integer type; the timestamp column is an Arrow
    ``timestamp`` of any unit (converted to epoch milliseconds, rounding down) or ``int64``
    milliseconds. A column of another type raises TypeError, a missing one ValueError, a
    negative timestamp :class:`~kafkaline.errors.InvalidRecordTimestampError`, all naming the
    column (and the row). Partition numbers are checked against the topic by the producer.
    """
    if partition is None and timestamp is None:
        return None, None
    pa: Any = importlib.import_module("pyarrow")
    batches, schema = _batches_and_schema(pa, data)
    _check_present(schema, (("partition", partition), ("timestamp", timestamp)))
    partitions: list[int | None] | None = None
    timestamps: list[int | None] | None = None
    if partition is not None:
        _check_partition_type(pa, schema.field(partition).type, partition)
        partitions = []
        for batch in batches:
            partitions += batch.column(partition).to_pylist()
    if timestamp is not None:
        timestamps = _timestamps_ms(pa, schema.field(timestamp).type, batches, timestamp)
    return partitions, timestamps


_MAX_TIMESTAMP = 2**63 - 1
#: Arrow timestamp units -> (multiplier, divisor) to epoch milliseconds.
TO_MILLISECONDS = {"s": (1000, 1), "ms": (1, 1), "us": (1, 1000), "ns": (1, 1_000_000)}


class ArrowSlice(NamedTuple):
    """A slice of send_arrow()'s rows, its columns as pyarrow arrays (checked types)."""

    #: binary or large_binary (strings viewed as their UTF-8 bytes); None: no key column.
    keys: Any
    values: Any
    #: list<struct<key, value>> or None.
    headers: Any
    #: An integer array or None.
    partitions: Any
    #: int64 (epoch in ``timestamp_unit``) or None.
    timestamps: Any
    timestamp_unit: str


def arrow_slices(
    data: Any,
    key: str | None,
    value: str,
    headers: str | None,
    partition: str | None,
    timestamp: str | None,
    max_rows: int = 65536,
    max_bytes: int = 16 << 20,
) -> list[ArrowSlice]:
    """send_arrow()'s columns, checked as :func:`arrow_columns` and
    :func:`arrow_partitions_and_timestamps` check them, in slices of at most ``max_rows`` rows
    and about ``max_bytes`` (so that the columnar path's working memory stays bounded)."""
    pa: Any = importlib.import_module("pyarrow")
    batches, schema = _batches_and_schema(pa, data)
    _check_present(
        schema,
        (
            ("key", key),
            ("value", value),
            ("headers", headers),
            ("partition", partition),
            ("timestamp", timestamp),
        ),
    )
    value_view = _binary_view(pa, schema, value)
    key_view = None if key is None else _binary_view(pa, schema, key)
    if headers is not None:
        _check_headers_type(pa, schema.field(headers).type, headers)
    if partition is not None:
        _check_partition_type(pa, schema.field(partition).type, partition)
    unit = "ms"
    if timestamp is not None:
        unit = _timestamp_unit(pa, schema.field(timestamp).type, timestamp)
    slices: list[ArrowSlice] = []
    for batch in batches:
        rows = batch.num_rows
        if rows == 0:
            continue
        # The buffers' total size is cheap but counts a sliced batch's whole buffers;
        # nbytes is exact but slower: asked only when the total calls for slicing.
        size = batch.get_total_buffer_size()
        if size > max_bytes:
            size = batch.nbytes
        step = max(1, min(max_rows, rows * max_bytes // max(1, size)))
        for start in range(0, rows, step):
            part = batch.slice(start, step) if step < rows else batch
            values = part.column(value)
            keys = None if key is None else part.column(key)
            slices.append(
                ArrowSlice(
                    keys if key_view is None or keys is None else keys.view(key_view),
                    values if value_view is None else values.view(value_view),
                    None if headers is None else part.column(headers),
                    None if partition is None else part.column(partition),
                    None if timestamp is None else part.column(timestamp).cast(pa.int64()),
                    unit,
                )
            )
    return slices


def _check_partition_type(pa: Any, column_type: Any, name: str) -> None:
    if not pa.types.is_integer(column_type):
        raise TypeError(
            f"column {name!r} has type {column_type}: the partition column needs an "
            "integer type (int32 or int64)"
        )


def _timestamp_unit(pa: Any, column_type: Any, name: str) -> str:
    if pa.types.is_timestamp(column_type):
        return str(column_type.unit)
    if pa.types.is_int64(column_type):
        return "ms"
    raise TypeError(
        f"column {name!r} has type {column_type}: the timestamp column needs an Arrow "
        "timestamp (any unit) or int64 milliseconds"
    )


def _timestamps_ms(pa: Any, column_type: Any, batches: list[Any], name: str) -> list[int | None]:
    multiplier, divisor = TO_MILLISECONDS[_timestamp_unit(pa, column_type, name)]
    timestamps: list[int | None] = []
    for batch in batches:
        # The raw integers (epoch in the column's unit): no datetime objects are made.
        timestamps += batch.column(name).cast(pa.int64()).to_pylist()
    if multiplier != 1 or divisor != 1:
        timestamps = [None if t is None else t * multiplier // divisor for t in timestamps]
    present = [t for t in timestamps if t is not None]
    for bad in (min(present, default=0), max(present, default=0)):
        if not 0 <= bad <= _MAX_TIMESTAMP:
            raise InvalidRecordTimestampError(
                f"row {timestamps.index(bad)} of column {name!r} has the timestamp {bad} ms: "
                "Kafka timestamps are milliseconds since the epoch, >= 0 and within int64"
            )
    return timestamps


def _batches_and_schema(pa: Any, data: Any) -> tuple[list[Any], Any]:
    if isinstance(data, pa.Table):
        return data.to_batches(), data.schema
    if isinstance(data, pa.RecordBatch):
        return [data], data.schema
    raise TypeError(f"send_arrow() takes a pyarrow RecordBatch or Table, not {type(data).__name__}")


def _check_present(schema: Any, columns: Sequence[tuple[str, str | None]]) -> None:
    names = set(schema.names)
    for role, name in columns:
        if name is not None and name not in names:
            raise ValueError(
                f"the {role} column {name!r} is not in the data (columns: {schema.names})"
            )


def _binary_view(pa: Any, schema: Any, name: str) -> Any:
    column_type = schema.field(name).type
    if pa.types.is_binary(column_type) or pa.types.is_large_binary(column_type):
        return None
    if pa.types.is_string(column_type):
        return pa.binary()
    if pa.types.is_large_string(column_type):
        return pa.large_binary()
    raise TypeError(
        f"column {name!r} has type {column_type}: send_arrow() needs binary, string, "
        "large_binary or large_string"
    )


def _to_bytes_list(column: Any, view: Any) -> list[bytes | None]:
    # to_numpy().tolist(): the cheapest way to Python bytes measured (docs/performance.md).
    # Strings are viewed as binary first (zero copy): their UTF-8 bytes, no str objects.
    if view is not None:
        column = column.view(view)
    return column.to_numpy(zero_copy_only=False).tolist()  # type: ignore[no-any-return]


def _check_headers_type(pa: Any, column_type: Any, name: str) -> None:
    ok = (pa.types.is_list(column_type) or pa.types.is_large_list(column_type)) and (
        pa.types.is_struct(column_type.value_type)
    )
    if ok:
        struct = column_type.value_type
        fields = {struct.field(i).name: struct.field(i).type for i in range(struct.num_fields)}
        key_type, value_type = fields.get("key"), fields.get("value")
        ok = (
            len(fields) == 2
            and key_type is not None
            and (pa.types.is_string(key_type) or pa.types.is_large_string(key_type))
            and value_type is not None
            and (pa.types.is_binary(value_type) or pa.types.is_large_binary(value_type))
        )
    if not ok:
        raise TypeError(
            f"column {name!r} has type {column_type}: headers need "
            "list<struct<key: string, value: binary>>"
        )
