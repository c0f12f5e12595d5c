"""The steps of :meth:`Producer.send() <kafkaline.producer.producer.Producer.send>`'s general
path that only some records need (interceptors, serializers, an explicit partition or a custom
partitioner), and the pieces a Producer is made of (its configuration, serializers and key
partitioner)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal, NamedTuple

from kafkaline.config import ProducerConfig
from kafkaline.errors import IllegalStateError, InvalidPartitionError, InvalidTopicNameError
from kafkaline.net.cluster import ClusterMetadata
from kafkaline.producer.interceptors import InterceptorChain
from kafkaline.producer.metadata_wait import TopicMetadata
from kafkaline.producer.partitioner import KeyPartitionCache, Partitioner, validate_partition
from kafkaline.producer.record import ProducerRecord
from kafkaline.producer.serializers import (
    Serializer,
    SerializerLike,
    as_serializer,
    bytes_or_none,
    serialized_bytes,
)
from kafkaline.producer.validation import check_topic_name
from kafkaline.record import Headers
from kafkaline.record.core import compiled_core

__all__ = [
    "PLAIN",
    "KeyPartitioning",
    "PartitionChooser",
    "check_partition_argument",
    "choose_partition",
    "config_of",
    "intercepted",
    "key_partitioner",
    "record_failed",
    "serialize",
    "serializer_or_none",
]

#: The compiled record core when it is in use: keys are then hashed by it (see
#: kafkaline.record.core).
_CORE = compiled_core()
#: Keys whose murmur2 hash the producer remembers (keys up to 128 bytes: at most ~8 MiB).
_KEY_MEMO_ENTRIES = 1 << 15
#: The types of a key or value that send() takes as they are, without a serializer.
PLAIN = frozenset((bytes, type(None)))


def intercepted(
    interceptors: InterceptorChain,
    topic: str,
    value: Any,
    key: Any,
    headers: Headers | None,
    partition: int | None,
    timestamp_ms: int | None,
) -> tuple[str, Any, Any, Headers | None, int | None, int | None]:
    """The record as the interceptors' ``on_send`` returned it."""
    record = interceptors.on_send(
        ProducerRecord(topic, value, key, headers or (), partition, timestamp_ms)
    )
    return (
        record.topic,
        record.value,
        record.key,
        record.headers or None,
        record.partition,
        record.timestamp_ms,
    )


def serialize(
    serializers: tuple[Serializer[Any] | None, Serializer[Any] | None],
    topic: str,
    key: Any,
    value: Any,
    headers: Headers | None,
) -> tuple[bytes | None, bytes | None]:
    """The key's and the value's bytes: what their serializers (key's, value's) make of them,
    else the key and value themselves once checked to be bytes or None (TypeError if not)."""
    key_serializer, value_serializer = serializers
    return (
        _to_bytes(key_serializer, topic, key, headers, "key"),
        _to_bytes(value_serializer, topic, value, headers, "value"),
    )


def _to_bytes(
    serializer: Serializer[Any] | None,
    topic: str,
    data: Any,
    headers: Headers | None,
    what: Literal["key", "value"],
) -> bytes | None:
    """``data`` (the record's key or value, ``what``) as bytes or None."""
    if serializer is None:
        return bytes_or_none(data, what)
    data = serializer.serialize(topic, data, headers)
    return data if data is None or type(data) is bytes else serialized_bytes(data, what, serializer)


def check_partition_argument(partition: object) -> None:
    """Refuse a record's partition that no topic can have (before any wait for metadata)."""
    if type(partition) is not int or partition < 0:
        raise InvalidPartitionError(
            f"partition={partition!r} given by the record is invalid: must be None or "
            "an integer >= 0"
        )


def choose_partition(
    topic: str,
    partition: int | None,
    key: bytes | None,
    value: bytes | None,
    count: int,
    partitioner: Partitioner | None,
    cluster: ClusterMetadata | None,
) -> int:
    """The record's own partition once checked against the topic's ``count``, else the
    custom partitioner's choice."""
    if partition is not None:
        return validate_partition(topic, partition, count, "the record")
    if partitioner is None or cluster is None:  # pragma: no cover - checked by the caller
        raise IllegalStateError("no custom partitioner or no metadata")
    chosen = partitioner.partition(topic, key, value, cluster)
    return validate_partition(topic, chosen, count, f"partitioner {partitioner!r}")


class PartitionChooser:
    """Java's ``partition()`` for send()'s general path: the record's partition (None: the
    topic's sticky partition, chosen when appending), once the topic's metadata is known
    (waited for on the first send to it), and the ``max_block_ms`` left."""

    def __init__(
        self,
        topics: TopicMetadata,
        keying: KeyPartitioning | None,
        partitioner: Partitioner | None,
        max_block_ms: float,
    ) -> None:
        self._topics = topics
        self._key_partition = None if keying is None else keying.partition_for_key
        self._key_hashes: Mapping[bytes, int] = {} if keying is None else keying.hashes
        self._partitioner = partitioner
        self._max_block_ms = max_block_ms

    def choose(
        self, topic: str, partition: int | None, key: bytes | None, value: bytes | None
    ) -> tuple[int | None, float]:
        """``(partition or None, max_block_ms left)`` for a record of ``topic``."""
        if partition is not None:  # checked before any wait for metadata
            check_partition_argument(partition)
        topics = self._topics
        count = topics.counts.get(topic)
        max_block_ms = self._max_block_ms
        if count is None:
            count, max_block_ms = topics.wait(topic)
        if partition is None and key is not None and self._key_partition is not None:
            hashed = self._key_hashes.get(key)
            if hashed is None:
                return self._key_partition(key, count), max_block_ms
            return hashed % count, max_block_ms
        if partition is not None or self._partitioner is not None:
            partition = choose_partition(
                topic, partition, key, value, count, self._partitioner, topics.cluster
            )
        return partition, max_block_ms


def record_failed(
    error: Exception,
    topic: str,
    partition: int | None,
    interceptors: InterceptorChain | None,
    gate_error: Exception | None,
) -> Exception | None:
    """Tell the interceptors that a record failed in send(); return a clearer error to raise
    instead, if any: the one naming a topic that is not a str (send() looks an unhashable
    topic up before naming it), or ``gate_error``, the producer's once it was closed, failed
    or forked meanwhile (a wait for metadata or memory ended by it)."""
    if interceptors is not None and isinstance(topic, str) and topic:
        interceptors.on_send_error(ProducerRecord(topic), partition, error)
    if not isinstance(topic, str):
        try:
            check_topic_name(topic)
        except InvalidTopicNameError as named:
            return named
    if gate_error is not None and isinstance(error, IllegalStateError):
        return gate_error if type(gate_error) is not type(error) else None
    return None


class KeyPartitioning(NamedTuple):
    """Java's default keyed partitioning: murmur2 of a key modulo the partition count."""

    partition_for_key: Callable[[bytes, int], int]
    #: Keys' positive murmur2 hashes as far as remembered, read-only (the pure build's memo,
    #: so that a known key costs a lookup, not a call; empty with the compiled core).
    hashes: Mapping[bytes, int]


def key_partitioner() -> KeyPartitioning:
    """murmur2 of a key modulo the partition count, as Java's default partitioner."""
    if _CORE is not None:
        # The compiled core hashes any key in C: no memo to keep.
        return KeyPartitioning(_CORE.partition_for_key, {})
    # The memo holds 32768 keys: with the default 8192, a producer cycling over 10,000
    # keys cleared it before any key came back and hashed every record
    # (see docs/performance.md, Notes moved from the code).
    cache = KeyPartitionCache(max_entries=_KEY_MEMO_ENTRIES)
    return KeyPartitioning(cache.partition_for_key, cache.memo)


def serializer_or_none(spec: SerializerLike | None) -> Serializer[Any] | None:
    """The serializer a setting names, or None."""
    return None if spec is None else as_serializer(spec)


def config_of(config: ProducerConfig | None, settings: dict[str, Any]) -> ProducerConfig:
    """What ``Producer(config, **settings)`` is configured with."""
    if config is None:
        return ProducerConfig.from_kwargs(**settings)
    if not isinstance(config, ProducerConfig):
        raise TypeError(
            f"Producer() takes a ProducerConfig or keyword settings, not "
            f"{type(config).__name__}; for Java-style properties use Producer.from_properties"
        )
    return config.with_changes(**settings) if settings else config
