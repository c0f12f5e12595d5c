"""The checks send() makes on its arguments, each raising a named error.

They run off the hot path: topic names once per topic (the producer caches topics it has
seen), headers only when given, timestamps only when given and not a plain non-negative int,
record sizes only when the key and value together are near the limit.

>>> check_topic_name("events.v1")
'events.v1'
>>> check_topic_name("no spaces")
Traceback (most recent call last):
...
kafkaline.errors.InvalidTopicNameError: [Error 17] INVALID_TOPIC_EXCEPTION: topic name \
'no spaces' is invalid: only ASCII letters, digits, '.', '_' and '-' are allowed
"""

from __future__ import annotations

import operator
import re
from collections.abc import Sequence
from typing import Final

from kafkaline.errors import InvalidRecordTimestampError, InvalidTopicNameError, RecordTooLargeError
from kafkaline.record.batch_format import BATCH_HEADER_SIZE
from kafkaline.record.record_encoder import RECORD_OVERHEAD_BOUND

__all__ = [
    "MAX_TIMESTAMP",
    "RECORD_SIZE_OVERHEAD",
    "check_headers",
    "check_payload_size",
    "check_record_size",
    "check_timestamp",
    "check_topic_name",
    "headers_size_bound",
]

#: Kafka's limit for topic names (Java's ``Topic.MAX_NAME_LENGTH``).
_MAX_TOPIC_NAME_LENGTH: Final = 249
_TOPIC_NAME: Final = re.compile(r"[a-zA-Z0-9._-]+")
#: The largest timestamp a record batch can carry (int64).
MAX_TIMESTAMP: Final = 2**63 - 1
#: Bytes a record takes beyond its key, value and headers, at most, plus its batch's header:
#: what Java's ``estimateSizeInBytesUpperBound`` adds for a record alone in a batch.
RECORD_SIZE_OVERHEAD: Final = BATCH_HEADER_SIZE + RECORD_OVERHEAD_BOUND


def check_topic_name(topic: object) -> str:
    """``topic`` if Kafka accepts it as a topic name (Java's ``Topic.validate``), else
    :class:`~kafkaline.errors.InvalidTopicNameError` saying why."""
    if not isinstance(topic, str):
        raise InvalidTopicNameError(f"topic must be a str, not {type(topic).__name__}")
    if not topic:
        raise InvalidTopicNameError("topic name is empty")
    if topic in (".", ".."):
        raise InvalidTopicNameError(f"topic name {topic!r} is not allowed")
    if len(topic) > _MAX_TOPIC_NAME_LENGTH:
        raise InvalidTopicNameError(
            f"topic name of {len(topic)} characters is longer than the allowed "
            f"{_MAX_TOPIC_NAME_LENGTH}"
        )
    if not _TOPIC_NAME.fullmatch(topic):
        raise InvalidTopicNameError(
            f"topic name {topic!r} is invalid: only ASCII letters, digits, '.', '_' and '-' "
            "are allowed"
        )
    return topic


def check_timestamp(timestamp_ms: object) -> int:
    """``timestamp_ms`` as an int if it is integer milliseconds in ``[0, 2**63 - 1]``, else
    :class:`~kafkaline.errors.InvalidRecordTimestampError`.

    >>> check_timestamp(-1)
    Traceback (most recent call last):
    ...
    kafkaline.errors.InvalidRecordTimestampError: [Error 32] INVALID_TIMESTAMP: \
timestamp_ms=-1 is invalid: must be None or integer milliseconds since the epoch, >= 0
    """
    value: int | None = None
    if not isinstance(timestamp_ms, bool):
        try:
            value = operator.index(timestamp_ms)  # type: ignore[arg-type]
        except TypeError:
            value = None
    if value is None or not 0 <= value <= MAX_TIMESTAMP:
        raise InvalidRecordTimestampError(
            f"timestamp_ms={timestamp_ms!r} is invalid: must be None or integer milliseconds "
            "since the epoch, >= 0"
        )
    return value


def check_headers(headers: object) -> tuple[tuple[str, bytes | None], ...] | None:
    """``headers`` as a tuple of ``(str, bytes | None)`` pairs (``None`` when empty;
    bytearray and memoryview values copied to bytes), or a TypeError naming the first bad
    one.

    >>> check_headers([("trace", b"1"), ("empty", None)])
    (('trace', b'1'), ('empty', None))
    >>> check_headers([("n", 1)])
    Traceback (most recent call last):
    ...
    TypeError: header ('n', 1) is invalid: must be a (str, bytes or None) pair
    """
    if isinstance(headers, (str, bytes)) or not isinstance(headers, Sequence):
        raise TypeError(
            f"headers must be a sequence of (str, bytes) pairs, not {type(headers).__name__}"
        )
    checked: list[tuple[str, bytes | None]] = []
    for header in headers:
        if isinstance(header, tuple) and len(header) == 2 and isinstance(header[0], str):
            name, value = header
            if value is None or type(value) is bytes:
                checked.append((name, value))
                continue
            if isinstance(value, (bytes, bytearray, memoryview)):
                checked.append((name, bytes(value)))
                continue
        raise TypeError(f"header {header!r} is invalid: must be a (str, bytes or None) pair")
    return tuple(checked) or None


def check_record_size(
    size_bytes: int, *, max_request_size: int, buffer_memory: int, topic: str
) -> None:
    """Raise :class:`~kafkaline.errors.RecordTooLargeError` if a record whose upper-bound
    size is ``size_bytes`` cannot be sent: larger than ``max_request_size`` or than
    ``buffer_memory`` (Java's ``ensureValidRecordSize``)."""
    if size_bytes > max_request_size:
        raise RecordTooLargeError(
            f"a record for topic {topic!r} is {size_bytes} bytes when serialized (with batch "
            f"overhead), larger than max_request_size={max_request_size}"
        )
    if size_bytes > buffer_memory:
        raise RecordTooLargeError(
            f"a record for topic {topic!r} is {size_bytes} bytes when serialized (with batch "
            f"overhead), larger than buffer_memory={buffer_memory}, the memory for all "
            "records waiting to be sent"
        )


def check_payload_size(
    topic: str,
    payload_size: int,
    headers: Sequence[tuple[str, bytes | None]] | None,
    *,
    max_request_size: int,
    buffer_memory: int,
) -> None:
    """:func:`check_record_size` for a record of ``payload_size`` key and value bytes and
    ``headers``, alone in its batch."""
    if headers:
        payload_size += headers_size_bound(headers)
    check_record_size(
        payload_size + RECORD_SIZE_OVERHEAD,
        max_request_size=max_request_size,
        buffer_memory=buffer_memory,
        topic=topic,
    )


def headers_size_bound(headers: Sequence[tuple[str, bytes | None]]) -> int:
    """An upper bound of the encoded size of ``headers`` (varint lengths at 5 bytes)."""
    size = 5
    for name, value in headers:
        try:
            encoded = name.encode("utf-8")
        except UnicodeEncodeError as error:
            raise ValueError(
                f"header ({name!r}, ...) is invalid: its name cannot be encoded as UTF-8, as "
                f"Kafka sends header names ({error.reason} at position {error.start})"
            ) from error
        size += 10 + len(encoded) + (0 if value is None else len(value))
    return size
