"""send()'s partition step (``PartitionChooser.choose``): murmur2 of a key, whether its hash
is remembered yet or not, the record's own partition, or none (the sticky partitioner's)."""

from __future__ import annotations

import pytest

from kafkaline.errors import InvalidPartitionError
from kafkaline.producer.metadata_wait import TopicMetadata
from kafkaline.producer.murmur2 import murmur2, to_positive
from kafkaline.producer.send_steps import PartitionChooser, key_partitioner
from kafkaline.record import core_build

KEYS = [b"key-%d" % i for i in range(300)]


def _chooser(counts: dict[str, int]) -> tuple[PartitionChooser, TopicMetadata]:
    topics = TopicMetadata(max_block_ms=1_000.0)
    topics.counts.update(counts)
    return PartitionChooser(topics, key_partitioner(), None, 1_000.0), topics


def _expected(count: int) -> list[int]:
    return [to_positive(murmur2(key)) % count for key in KEYS]


def test_a_key_goes_to_its_murmur2_partition_before_and_after_it_is_remembered() -> None:
    chooser, _ = _chooser({"t": 7})
    first = [chooser.choose("t", None, key, b"v") for key in KEYS]
    again = [chooser.choose("t", None, key, b"v") for key in KEYS]
    assert first == again == [(p, 1_000.0) for p in _expected(7)]


def test_a_remembered_key_follows_a_new_partition_count() -> None:
    chooser, topics = _chooser({"t": 7})
    for key in KEYS:
        chooser.choose("t", None, key, None)
    topics.counts["t"] = 3
    assert [chooser.choose("t", None, key, None)[0] for key in KEYS] == _expected(3)


def test_the_pure_build_remembers_hashes_and_the_compiled_core_hashes_every_key() -> None:
    keying = key_partitioner()
    for key in KEYS:
        keying.partition_for_key(key, 5)
    assert len(keying.hashes) == (0 if core_build() == "compiled" else len(KEYS))
    assert all(keying.hashes[key] == to_positive(murmur2(key)) for key in keying.hashes)


def test_the_records_own_partition_is_checked_and_keyless_records_get_none() -> None:
    chooser, _ = _chooser({"t": 4})
    assert chooser.choose("t", 3, b"key", b"v") == (3, 1_000.0)
    assert chooser.choose("t", None, None, b"v") == (None, 1_000.0)
    with pytest.raises(InvalidPartitionError, match="partition=-1"):
        chooser.choose("t", -1, b"key", b"v")
    with pytest.raises(InvalidPartitionError):
        chooser.choose("t", 4, None, b"v")
