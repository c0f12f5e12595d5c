"""Structs behave as ``@dataclass(slots=True, kw_only=True)`` classes did: keyword-only
construction with the declared defaults, fresh mutable defaults, slots, ``==`` and ``repr()``
by field, unhashable. They are built by :class:`StructType`, which compiles ``__init__`` at the
first instance instead of at import."""

from __future__ import annotations

import pytest

from kafkaline.protocol.api.metadata import MetadataResponsePartition, MetadataResponseTopic
from kafkaline.protocol.api.sasl_authenticate import SaslAuthenticateRequest
from kafkaline.protocol.schema import INT32, STRING, Struct, array_of, compile_struct, kafka_field


def test_construction_is_keyword_only_with_the_declared_defaults() -> None:
    partition = MetadataResponsePartition(partition_index=3)
    assert partition.partition_index == 3
    assert partition.leader_epoch == -1  # an explicit default
    assert partition.error_code == 0  # the kind's default
    assert partition.replica_nodes == []
    with pytest.raises(TypeError):
        MetadataResponsePartition(3)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        MetadataResponsePartition(no_such_field=1)  # type: ignore[call-arg]


def test_mutable_defaults_are_fresh_per_instance() -> None:
    first = MetadataResponseTopic()
    second = MetadataResponseTopic()
    first.partitions.append(MetadataResponsePartition())
    assert second.partitions == []


def test_equality_and_repr_go_by_fields() -> None:
    a = MetadataResponsePartition(partition_index=1, isr_nodes=[1, 2])
    b = MetadataResponsePartition(partition_index=1, isr_nodes=[1, 2])
    assert a == b
    assert a != MetadataResponsePartition(partition_index=2, isr_nodes=[1, 2])
    assert a != MetadataResponseTopic()
    assert repr(a) == (
        "MetadataResponsePartition(error_code=0, partition_index=1, leader_id=0, "
        "leader_epoch=-1, replica_nodes=[], isr_nodes=[1, 2], offline_replicas=[])"
    )
    # A class's own __repr__ wins (this one hides the SASL token).
    assert repr(SaslAuthenticateRequest(auth_bytes=b"secret")) == (
        "SaslAuthenticateRequest(auth_bytes=<6 bytes>)"
    )


def test_structs_are_slotted_and_unhashable() -> None:
    partition = MetadataResponsePartition()
    assert not hasattr(partition, "__dict__")
    with pytest.raises(AttributeError):
        partition.not_a_field = 1  # type: ignore[attr-defined]
    with pytest.raises(TypeError):
        hash(partition)


def test_a_struct_declared_here_works_and_may_extend_another() -> None:
    class Base(Struct):
        name: str = kafka_field(STRING, "0+")

    class Extended(Base):
        values: list[int] = kafka_field(array_of(INT32), "0+")

    extended = Extended(name="n", values=[1])
    assert (extended.name, extended.values) == ("n", [1])
    assert Extended() == Extended(name="", values=[])
    out = bytearray()
    compile_struct(Extended, 0, False).write(out, extended)
    assert bytes(out) == b"\x00\x01n" + b"\x00\x00\x00\x01" + b"\x00\x00\x00\x01"


def test_an_annotated_attribute_that_is_not_a_kafka_field_is_refused() -> None:
    with pytest.raises(TypeError, match=r"Broken\.count is not a kafka_field\(\)"):

        class Broken(Struct):
            count: int = 0


def test_declaring_a_struct_compiles_no_code_until_the_first_instance() -> None:
    # What keeps importing the protocol cheap: an API nobody calls never compiles its __init__.
    class Unused(Struct):
        name: str = kafka_field(STRING, "0+")

    assert Unused.__init__.__name__ == "_init_compiling_at_first_call"
    assert Unused(name="x").name == "x"
    assert Unused.__init__.__name__ == "__init__"
    assert Unused(name="y").name == "y"
