"""The record a user sends, before serialization: :class:`ProducerRecord`.

Interceptors see and may replace it (``on_send``); serializers turn its key and value into
bytes. It checks what Java's ``ProducerRecord`` checks when made: a topic, and no negative
partition or timestamp.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from kafkaline.producer.partitioner import InvalidPartitionError

__all__ = ["Header", "ProducerRecord"]

K = TypeVar("K")
V = TypeVar("V")

#: A record header: a name and a value (``None`` is a header without value, as in Java).
Header = tuple[str, bytes | None]


@dataclass(frozen=True, slots=True)
class ProducerRecord(Generic[K, V]):
    """A record to send: topic, value, key, headers, partition and timestamp.

    ``partition=None`` lets the partitioner choose; ``timestamp_ms=None`` means "now" at
    send time. Headers are kept as a tuple, so a record never changes after it is made::

        >>> record = ProducerRecord("events", b"payload", key=b"user-1", headers=[("h", b"v")])
        >>> record.headers
        (('h', b'v'),)
        >>> ProducerRecord("events", b"x", timestamp_ms=-5)
        Traceback (most recent call last):
        ...
        ValueError: timestamp_ms=-5 is invalid: must be None or >= 0 (ms since the epoch)
    """

    topic: str
    value: V | None = None
    key: K | None = None
    headers: Sequence[Header] = ()
    partition: int | None = None
    timestamp_ms: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.topic, str) or not self.topic:
            raise ValueError(f"topic={self.topic!r} is invalid: must be a non-empty string")
        if self.partition is not None and (type(self.partition) is not int or self.partition < 0):
            raise InvalidPartitionError(
                f"partition={self.partition!r} is invalid: must be None or an integer >= 0"
            )
        if self.timestamp_ms is not None and (
            type(self.timestamp_ms) is not int or self.timestamp_ms < 0
        ):
            raise ValueError(
                f"timestamp_ms={self.timestamp_ms!r} is invalid: must be None or >= 0 "
                "(ms since the epoch)"
            )
        headers = tuple(self.headers)
        for header in headers:
            if (
                not isinstance(header, tuple)
                or len(header) != 2
                or not isinstance(header[0], str)
                or not (header[1] is None or isinstance(header[1], (bytes, bytearray, memoryview)))
            ):
                raise TypeError(
                    f"header {header!r} is invalid: must be a (str, bytes or None) pair"
                )
        object.__setattr__(self, "headers", headers)
