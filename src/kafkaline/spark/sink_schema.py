"""The input schema check, done on the driver when Spark plans the write, so that a missing
or mistyped column fails the job before any record is sent, with the column named."""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DataType,
    IntegerType,
    StringType,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from kafkaline.errors import SinkSchemaError

__all__ = ["SinkColumns", "SinkSchemaError", "check_schema"]


@dataclass(frozen=True)
class SinkColumns:
    """Which optional columns the DataFrame has (``value`` is always there)."""

    key: bool
    topic: bool
    partition: bool
    headers: bool
    timestamp: bool


_KEY_OR_VALUE = (StringType, BinaryType)
_HEADERS_TYPE = "array<struct<key:string,value:binary>>"


def check_schema(schema: StructType, topic_option: str | None) -> SinkColumns:
    """The sink's columns in ``schema``; raises SinkSchemaError for a missing ``value``, a
    missing topic (no ``topic`` column and no ``topic`` option) or a column of a type the
    sink cannot write. Other columns are ignored, so a DataFrame need not be pruned first."""
    types = {field.name: field.dataType for field in schema.fields}
    if "value" not in types:
        raise SinkSchemaError(
            "the kafkaline sink needs a 'value' column (string or binary); the DataFrame has "
            f"columns {sorted(types)}"
        )
    _expect(types, "value", _KEY_OR_VALUE, "string or binary")
    _expect(types, "key", _KEY_OR_VALUE, "string or binary")
    _expect(types, "topic", (StringType,), "string")
    _expect(types, "partition", (IntegerType,), "int")
    _expect(types, "timestamp", (TimestampType, TimestampNTZType), "timestamp")
    headers = types.get("headers")
    if headers is not None and not _is_headers_type(headers):
        raise SinkSchemaError(
            f"column 'headers' is of type {headers.simpleString()}; the kafkaline sink needs "
            f"{_HEADERS_TYPE}"
        )
    if topic_option is None and "topic" not in types:
        raise SinkSchemaError(
            "no topic: give the option 'topic' or a 'topic' column (string); the DataFrame "
            f"has columns {sorted(types)}"
        )
    return SinkColumns(
        key="key" in types,
        topic="topic" in types,
        partition="partition" in types,
        headers=headers is not None,
        timestamp="timestamp" in types,
    )


def _expect(
    types: dict[str, DataType], name: str, allowed: tuple[type[DataType], ...], wanted: str
) -> None:
    data_type = types.get(name)
    if data_type is not None and not isinstance(data_type, allowed):
        raise SinkSchemaError(
            f"column '{name}' is of type {data_type.simpleString()}; the kafkaline sink needs "
            f"{wanted}"
        )


def _is_headers_type(data_type: DataType) -> bool:
    if not isinstance(data_type, ArrayType):
        return False
    element = data_type.elementType
    if not isinstance(element, StructType) or len(element.fields) != 2:
        return False
    key, value = element.fields
    return (
        key.name == "key"
        and isinstance(key.dataType, StringType)
        and value.name == "value"
        and isinstance(value.dataType, BinaryType)
    )
