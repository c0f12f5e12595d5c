"""Our Python declarations against Apache Kafka's message schemas, field by field.

Apache Kafka's schemas are copied into ``kafka_schemas/`` beside this file (JSON with ``//``
comments; Apache License 2.0, see the LICENSE and NOTICE there). For every API we declare,
request and response, and for both headers, this checks the message name, API key,
validVersions, flexibleVersions, and for every field (recursively): name, type, versions,
nullableVersions, taggedVersions, tag, a field-level flexibleVersions override and the default;
then, version by version, the set of fields present with their type, nullability and tag.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator, Mapping
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from kafkaline.protocol.api import REQUEST_TYPES
from kafkaline.protocol.headers import RequestHeader, ResponseHeader
from kafkaline.protocol.schema import (
    NO_VERSIONS,
    ArrayKind,
    DeclaredField,
    Kind,
    Message,
    Request,
    StructKind,
    Versions,
    declared_fields,
)

#: Apache Kafka's message schemas, carried in the repository beside this file.
SCHEMA_DIR = Path(__file__).resolve().parent / "kafka_schemas"

#: The APIs the protocol layer must declare.
REQUIRED_API_KEYS = {0, 1, 2, 3, 10, 17, 18, 19, 22, 24, 25, 26, 28, 36}

#: Where we deliberately start above Kafka's lowest valid version, and why.
OUR_LOWEST_VERSION = {
    "ProduceRequest": 3,  # first version carrying record batch v2
    "ProduceResponse": 3,
    "FetchRequest": 4,  # first version returning record batch v2
    "FetchResponse": 4,
    "RequestHeader": 1,  # v0 (no client id) is only for ControlledShutdown v0
}

JsonField = Mapping[str, Any]


def strip_json_comments(text: str) -> str:
    """Remove ``//`` and ``/* */`` comments outside of JSON strings."""
    out: list[str] = []
    i = 0
    in_string = False
    while i < len(text):
        char = text[i]
        if in_string:
            out.append(char)
            if char == "\\":
                out.append(text[i + 1])
                i += 1
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
            out.append(char)
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = len(text) if end == -1 else end
            continue
        elif text.startswith("/*", i):
            i = text.index("*/", i) + 2
            continue
        else:
            out.append(char)
        i += 1
    return "".join(out)


@cache
def load_schema(name: str) -> Mapping[str, Any]:
    path = SCHEMA_DIR / f"{name}.json"
    if not path.is_file():
        pytest.fail(f"Kafka schema not found at {path}: copy it from Apache Kafka's sources")
    schema: Mapping[str, Any] = json.loads(strip_json_comments(path.read_text()))
    return schema


def snake_case(kafka_name: str) -> str:
    """Kafka's CamelCase field names as our Python attribute names."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", kafka_name).lower()


def versions_of(field: JsonField, key: str) -> Versions:
    text = field.get(key)
    return Versions.parse(text) if text is not None else NO_VERSIONS


def declared_messages() -> list[type[Message]]:
    messages: list[type[Message]] = [RequestHeader, ResponseHeader]
    for request_type in REQUEST_TYPES:
        messages += [request_type, request_type.RESPONSE_TYPE]
    return messages


MESSAGES = declared_messages()


# --------------------------------------------------------------------------- defaults


def expected_default(field: JsonField) -> Any:
    """The default Kafka's generator gives a field, as the Python value we should use."""
    kafka_type: str = field["type"]
    default = field.get("default")
    if isinstance(default, str) and default == "null":
        return None
    if kafka_type.startswith("[]"):
        return []
    if kafka_type in ("int8", "int16", "int32", "int64", "uint16", "uint32"):
        if default is None:
            return 0
        return int(default, 0) if isinstance(default, str) else int(default)
    if kafka_type == "float64":
        return 0.0 if default is None else float(default)
    if kafka_type == "bool":
        return default in (True, "true")
    if kafka_type == "string":
        return "" if default is None else default
    if kafka_type == "uuid":
        return uuid.UUID(int=0)
    if kafka_type == "bytes":
        return b""
    if kafka_type == "records":
        return None  # Kafka's generator defaults records to null
    return _STRUCT_DEFAULT  # a struct: checked through its own fields


_STRUCT_DEFAULT = object()


# --------------------------------------------------------------------------- field walk


class Walk:
    """Resolves struct types (inline or commonStructs) for one schema file."""

    def __init__(self, schema: Mapping[str, Any]) -> None:
        structs = schema.get("commonStructs", [])
        self.common = {struct["name"]: struct["fields"] for struct in structs}

    def nested_fields(self, field: JsonField) -> list[JsonField] | None:
        if "fields" in field:
            nested: list[JsonField] = field["fields"]
            return nested
        element = field["type"].removeprefix("[]")
        return self.common.get(element)


def struct_type_of(kind: Kind[Any]) -> type[Any] | None:
    if isinstance(kind, ArrayKind):
        kind = kind.item
    if isinstance(kind, StructKind):
        struct_type: type[Any] = kind.struct_type
        return struct_type
    return None


def compare_fields(
    walk: Walk, json_fields: list[JsonField], ours: tuple[DeclaredField, ...], path: str
) -> Iterator[str]:
    """Yield one message per difference."""
    json_names = [snake_case(field["name"]) for field in json_fields]
    our_names = [field.name for field in ours]
    if json_names != our_names:
        yield f"{path}: fields {our_names} != Kafka's {json_names}"
        return
    for json_field, field in zip(json_fields, ours, strict=True):
        where = f"{path}.{field.name}"
        spec = field.spec
        if spec.kind.kafka_type != json_field["type"]:
            yield f"{where}: type {spec.kind.kafka_type} != {json_field['type']}"
        for ours_versions, key in (
            (spec.versions, "versions"),
            (spec.nullable_versions, "nullableVersions"),
            (spec.tagged_versions, "taggedVersions"),
        ):
            if ours_versions != versions_of(json_field, key):
                yield f"{where}: {key} {ours_versions} != {json_field.get(key, 'none')}"
        if spec.tag != json_field.get("tag"):
            yield f"{where}: tag {spec.tag} != {json_field.get('tag')}"
        json_flexible = json_field.get("flexibleVersions")
        ours_flexible = spec.flexible_versions
        if (json_flexible is None) != (ours_flexible is None) or (
            json_flexible is not None and ours_flexible != Versions.parse(json_flexible)
        ):
            yield f"{where}: field flexibleVersions {ours_flexible} != {json_flexible}"
        default = expected_default(json_field)
        nested = walk.nested_fields(json_field)
        struct_type = struct_type_of(spec.kind)
        if default is _STRUCT_DEFAULT:
            if not isinstance(field.default, struct_type or ()):
                yield f"{where}: default {field.default!r} is not a {json_field['type']}"
        elif field.default != default or type(field.default) is not type(default):
            yield f"{where}: default {field.default!r} != Kafka's {default!r}"
        if nested is not None:
            if struct_type is None:
                yield f"{where}: Kafka declares a struct, we do not"
                continue
            yield from compare_fields(walk, nested, declared_fields(struct_type), where)
        elif struct_type is not None:
            yield f"{where}: we declare a struct, Kafka does not"


def fields_at(
    walk: Walk, json_fields: list[JsonField], version: int, flexible: bool, path: str
) -> Iterator[tuple[str, str, bool, int | None]]:
    """(path, type, nullable, tag if tagged) of every Kafka field present at ``version``."""
    for field in json_fields:
        if version not in versions_of(field, "versions"):
            continue
        where = f"{path}.{snake_case(field['name'])}"
        tagged = flexible and version in versions_of(field, "taggedVersions")
        nullable = version in versions_of(field, "nullableVersions")
        yield where, field["type"], nullable, field.get("tag") if tagged else None
        nested = walk.nested_fields(field)
        if nested is not None:
            yield from fields_at(walk, nested, version, flexible, where)


def our_fields_at(
    struct_type: type[Any], version: int, flexible: bool, path: str
) -> Iterator[tuple[str, str, bool, int | None]]:
    """The same, walking our declarations."""
    for field in declared_fields(struct_type):
        spec = field.spec
        if version not in spec.versions:
            continue
        where = f"{path}.{field.name}"
        tagged = flexible and version in spec.tagged_versions
        nullable = version in spec.nullable_versions
        yield where, spec.kind.kafka_type, nullable, spec.tag if tagged else None
        nested_type = struct_type_of(spec.kind)
        if nested_type is not None:
            yield from our_fields_at(nested_type, version, flexible, where)


# --------------------------------------------------------------------------- tests


def test_every_required_api_is_declared() -> None:
    assert {request.API_KEY for request in REQUEST_TYPES} == REQUIRED_API_KEYS
    for request in REQUEST_TYPES:
        assert request.RESPONSE_TYPE.API_KEY == request.API_KEY


def test_schema_directory_is_found_inside_the_repository() -> None:
    assert (SCHEMA_DIR / "ProduceRequest.json").is_file(), SCHEMA_DIR


def test_comment_stripper_keeps_slashes_inside_strings() -> None:
    text = '{"a": "http://x", // comment\n "b": 1 /* c */}'
    assert json.loads(strip_json_comments(text)) == {"a": "http://x", "b": 1}


def test_snake_case() -> None:
    assert snake_case("V3AndBelowTransactionalId") == "v3_and_below_transactional_id"
    assert snake_case("timeoutMs") == "timeout_ms"
    assert snake_case("IsrNodes") == "isr_nodes"


@pytest.mark.parametrize("message", MESSAGES, ids=lambda message: message.__name__)
def test_message_header_matches_kafka(message: type[Message]) -> None:
    schema = load_schema(message.__name__)
    assert schema["name"] == message.__name__
    if issubclass(message, Request) or "apiKey" in schema:
        assert schema["apiKey"] == getattr(message, "API_KEY", None)
    assert Versions.parse(schema["flexibleVersions"]) == message.FLEXIBLE_VERSIONS
    kafka_valid = Versions.parse(schema["validVersions"])
    ours = message.VALID_VERSIONS
    assert ours.high == kafka_valid.high, f"{message.__name__}: newest version differs"
    assert ours.low == OUR_LOWEST_VERSION.get(message.__name__, kafka_valid.low)


@pytest.mark.parametrize("message", MESSAGES, ids=lambda message: message.__name__)
def test_fields_match_kafka(message: type[Message]) -> None:
    schema = load_schema(message.__name__)
    differences = list(
        compare_fields(Walk(schema), schema["fields"], declared_fields(message), message.__name__)
    )
    assert not differences, "\n".join(differences)


@pytest.mark.parametrize("message", MESSAGES, ids=lambda message: message.__name__)
def test_fields_match_kafka_version_by_version(message: type[Message]) -> None:
    schema = load_schema(message.__name__)
    walk = Walk(schema)
    versions = message.VALID_VERSIONS
    assert versions.high is not None
    for version in range(versions.low, versions.high + 1):
        flexible = message.is_flexible(version)
        theirs = list(fields_at(walk, schema["fields"], version, flexible, message.__name__))
        ours = list(our_fields_at(message, version, flexible, message.__name__))
        assert ours == theirs, f"{message.__name__} v{version}"
