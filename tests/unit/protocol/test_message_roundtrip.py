"""Every declared message at every version: encode/decode round trips, and truncated or
corrupted encodings raise DecodeError and nothing else.

Instances are generated from our own declarations: fields absent from a version keep their
defaults (they are not on the wire), nullable fields may be None only where the version allows.
"""

from __future__ import annotations

import contextlib
import itertools
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkaline.errors import DecodeError
from kafkaline.protocol.api import REQUEST_TYPES
from kafkaline.protocol.headers import RequestHeader, ResponseHeader
from kafkaline.protocol.primitives import Reader
from kafkaline.protocol.schema import (
    ArrayKind,
    Kind,
    Message,
    StructKind,
    declared_fields,
    decode_message,
)

_INT_BOUNDS = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1),
}


def value_strategy(
    kind: Kind[Any], version: int, flexible: bool, nullable: bool
) -> st.SearchStrategy[Any]:
    """Values of ``kind`` that are valid on the wire at ``version``."""
    base: st.SearchStrategy[Any]
    if isinstance(kind, ArrayKind):
        item = value_strategy(kind.item, version, flexible, nullable=False)
        base = st.lists(item, max_size=3)
    elif isinstance(kind, StructKind):
        base = struct_strategy(kind.struct_type, version, flexible)
    elif kind.kafka_type in _INT_BOUNDS:
        low, high = _INT_BOUNDS[kind.kafka_type]
        base = st.integers(low, high)
    elif kind.kafka_type == "bool":
        base = st.booleans()
    elif kind.kafka_type == "float64":
        base = st.floats(allow_nan=False)
    elif kind.kafka_type == "uuid":
        base = st.uuids()
    elif kind.kafka_type == "string":
        base = st.text(max_size=12)
    elif kind.kafka_type in ("bytes", "records"):
        base = st.binary(max_size=40)
    else:  # pragma: no cover - a new kind needs a strategy here
        raise AssertionError(f"no strategy for {kind}")
    return st.none() | base if nullable else base


def struct_strategy(struct_type: type[Any], version: int, flexible: bool) -> st.SearchStrategy[Any]:
    """Instances of a declared struct whose every field is valid at ``version``."""
    fields: dict[str, st.SearchStrategy[Any]] = {}
    for field in declared_fields(struct_type):
        spec = field.spec
        if version not in spec.versions:
            continue
        field_flexible = (
            flexible if spec.flexible_versions is None else version in spec.flexible_versions
        )
        fields[field.name] = value_strategy(
            spec.kind, version, field_flexible, version in spec.nullable_versions
        )
    return st.builds(struct_type, **fields)


def populated_value(
    kind: Kind[Any], version: int, flexible: bool, default: Any, counter: Iterator[int]
) -> Any:
    """A deterministic value unlike the default (distinct numbers catch swapped fields)."""
    if isinstance(kind, ArrayKind):
        item_default = kind.item.new_default()
        return [populated_value(kind.item, version, flexible, item_default, counter) for _ in "ab"]
    if isinstance(kind, StructKind):
        return populated_struct(kind.struct_type, version, flexible, counter, nulls=False)
    number = next(counter)
    if kind.kafka_type in _INT_BOUNDS:
        return number if number != default else number + 1
    if kind.kafka_type == "bool":
        return not default
    if kind.kafka_type == "float64":
        return number + 0.5
    if kind.kafka_type == "uuid":
        return uuid.UUID(int=number)
    if kind.kafka_type == "string":
        return f"s{number}-\u00e9"
    if kind.kafka_type in ("bytes", "records"):
        return bytes([number % 256]) * 3
    raise AssertionError(f"no value for {kind}")  # pragma: no cover


def populated_struct(
    struct_type: type[Any], version: int, flexible: bool, counter: Iterator[int], *, nulls: bool
) -> Any:
    """Every field present at ``version`` set away from its default; with ``nulls``, every
    field nullable at ``version`` set to None instead."""
    values: dict[str, Any] = {}
    for field in declared_fields(struct_type):
        spec = field.spec
        if version not in spec.versions:
            continue
        if nulls and version in spec.nullable_versions:
            values[field.name] = None
            continue
        field_flexible = (
            flexible if spec.flexible_versions is None else version in spec.flexible_versions
        )
        values[field.name] = populated_value(
            spec.kind, version, field_flexible, field.default, counter
        )
    return struct_type(**values)


def message_versions() -> list[tuple[type[Message], int]]:
    cases = []
    for message in MESSAGES:
        versions = message.VALID_VERSIONS
        assert versions.high is not None
        cases += [(message, version) for version in range(versions.low, versions.high + 1)]
    return cases


def all_messages() -> list[type[Message]]:
    messages: list[type[Message]] = [RequestHeader, ResponseHeader]
    for request_type in REQUEST_TYPES:
        messages += [request_type, request_type.RESPONSE_TYPE]
    return messages


def versions_of(message: type[Message]) -> st.SearchStrategy[int]:
    versions = message.VALID_VERSIONS
    assert versions.high is not None
    return st.integers(versions.low, versions.high)


MESSAGES = all_messages()
MESSAGE_IDS = [message.__name__ for message in MESSAGES]
CASES = message_versions()
CASE_IDS = [f"{message.__name__}-v{version}" for message, version in CASES]
HYPOTHESIS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def test_cases_cover_every_version_of_every_api() -> None:
    assert len(MESSAGES) == 2 + 2 * len(REQUEST_TYPES)
    assert len(CASES) > 200


# --------------------------------------------------------------------------- every version


@pytest.mark.parametrize(("message", "version"), CASES, ids=CASE_IDS)
@pytest.mark.parametrize("nulls", [False, True], ids=["populated", "nulls"])
def test_round_trip_every_version(message: type[Message], version: int, nulls: bool) -> None:
    flexible = message.is_flexible(version)
    instance = populated_struct(message, version, flexible, itertools.count(1), nulls=nulls)
    encoded = instance.encode(version)
    assert message.decode(encoded, version) == instance
    # Decoding from a memoryview (what framing hands over) gives the same result.
    assert message.decode(memoryview(encoded), version) == instance


@pytest.mark.parametrize(("message", "version"), CASES, ids=CASE_IDS)
def test_every_truncation_raises_decode_error(message: type[Message], version: int) -> None:
    flexible = message.is_flexible(version)
    instance = populated_struct(message, version, flexible, itertools.count(1), nulls=False)
    encoded = instance.encode(version)
    for cut in range(len(encoded)):
        with pytest.raises(DecodeError):
            decode_message(message, Reader(encoded[:cut]), version)


@pytest.mark.parametrize(("message", "version"), CASES, ids=CASE_IDS)
def test_trailing_bytes_are_rejected(message: type[Message], version: int) -> None:
    encoded = message().encode(version)
    with pytest.raises(DecodeError, match="trailing"):
        decode_message(message, Reader(encoded + b"\x00"), version)


# --------------------------------------------------------------------------- random instances


@pytest.mark.parametrize("message", MESSAGES, ids=MESSAGE_IDS)
@HYPOTHESIS
@given(data=st.data())
def test_round_trip(message: type[Message], data: st.DataObject) -> None:
    version = data.draw(versions_of(message))
    instance = data.draw(struct_strategy(message, version, message.is_flexible(version)))
    assert message.decode(instance.encode(version), version) == instance


@pytest.mark.parametrize("message", MESSAGES, ids=MESSAGE_IDS)
@HYPOTHESIS
@given(data=st.data())
def test_corrupted_encoding_raises_only_decode_error(
    message: type[Message], data: st.DataObject
) -> None:
    version = data.draw(versions_of(message))
    instance = data.draw(struct_strategy(message, version, message.is_flexible(version)))
    corrupted = bytearray(instance.encode(version))
    if not corrupted:
        return
    for _ in range(data.draw(st.integers(1, 4))):
        position = data.draw(st.integers(0, len(corrupted) - 1))
        corrupted[position] = data.draw(st.integers(0, 255))
    with contextlib.suppress(DecodeError):
        message.decode(bytes(corrupted), version)
