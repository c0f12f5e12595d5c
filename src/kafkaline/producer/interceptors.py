"""Producer interceptors: user hooks that see every record and every acknowledgement.

:class:`ProducerInterceptor` is Java's interface: ``on_send(record)`` runs before
serialization and may return a changed record; ``on_acknowledgement(metadata, exception)``
runs when the send completes or fails. :class:`InterceptorChain` calls them in order and, as
in Java (``ProducerInterceptors``), an interceptor that raises is logged and skipped: the next
one gets the last good record, and the send goes on.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from kafkaline.producer.record import ProducerRecord
from kafkaline.producer.record_metadata import (
    NO_TIMESTAMP,
    UNKNOWN_OFFSET,
    UNKNOWN_PARTITION,
    RecordMetadata,
)

if TYPE_CHECKING:
    from kafkaline.producer.futures import FutureRecordMetadata

__all__ = ["InterceptorChain", "ProducerInterceptor", "acknowledge_to"]

_log = logging.getLogger(__name__)


@runtime_checkable
class ProducerInterceptor(Protocol):
    """Hooks around each send, like Java's ``ProducerInterceptor``.

    ``on_send`` runs in the thread calling ``send()``, before serialization and
    partitioning; keep it fast. ``on_acknowledgement`` runs in the producer's I/O thread
    (or in ``send()`` when the send fails early); ``metadata`` always names the topic, and
    has offset -1 (and partition -1 if none was chosen yet) when ``exception`` is set.
    ``close()`` runs when the producer closes.
    """

    def on_send(self, record: ProducerRecord[Any, Any]) -> ProducerRecord[Any, Any]: ...

    def on_acknowledgement(
        self, metadata: RecordMetadata, exception: BaseException | None
    ) -> None: ...

    def close(self) -> None: ...


class InterceptorChain:
    """Calls interceptors in order; one that raises is logged and skipped, never propagated.

    An empty chain is falsy, so the producer can skip it (and building a ProducerRecord)
    on the hot path::

        >>> chain = InterceptorChain([])
        >>> bool(chain)
        False
    """

    __slots__ = ("_interceptors",)

    def __init__(self, interceptors: Iterable[ProducerInterceptor] = ()) -> None:
        self._interceptors = tuple(interceptors)

    def __bool__(self) -> bool:
        return bool(self._interceptors)

    def __len__(self) -> int:
        return len(self._interceptors)

    def on_send(self, record: ProducerRecord[Any, Any]) -> ProducerRecord[Any, Any]:
        """The record after every interceptor's ``on_send``; a failing one is skipped."""
        current = record
        for interceptor in self._interceptors:
            try:
                result = interceptor.on_send(current)
            except Exception:
                _log.warning(
                    "interceptor %r raised in on_send (topic %r, partition %s); skipped it",
                    interceptor,
                    record.topic,
                    record.partition,
                    exc_info=True,
                )
                continue
            if not isinstance(result, ProducerRecord):
                _log.warning(
                    "interceptor %r returned %s from on_send, not a ProducerRecord (topic %r); "
                    "skipped it",
                    interceptor,
                    type(result).__name__,
                    record.topic,
                )
                continue
            current = result
        return current

    def on_acknowledgement(self, metadata: RecordMetadata, exception: BaseException | None) -> None:
        """Tell every interceptor how a send ended; failures are logged and skipped."""
        for interceptor in self._interceptors:
            try:
                interceptor.on_acknowledgement(metadata, exception)
            except Exception:
                _log.warning(
                    "interceptor %r raised in on_acknowledgement (topic %r, partition %s); "
                    "skipped it",
                    interceptor,
                    metadata.topic,
                    metadata.partition,
                    exc_info=True,
                )

    def on_send_error(
        self,
        record: ProducerRecord[Any, Any],
        partition: int | None,
        exception: BaseException,
    ) -> None:
        """A send failed before reaching the accumulator: acknowledge it with metadata that
        names the topic and the partition if one was chosen (Java's ``onSendError``)."""
        if partition is None:
            partition = record.partition if record.partition is not None else UNKNOWN_PARTITION
        metadata = RecordMetadata(record.topic, partition, UNKNOWN_OFFSET, NO_TIMESTAMP, -1, -1)
        self.on_acknowledgement(metadata, exception)

    def close(self) -> None:
        """Close every interceptor that has ``close()``; failures are logged and skipped."""
        for interceptor in self._interceptors:
            close = getattr(interceptor, "close", None)
            if close is None:
                continue
            try:
                close()
            except Exception:
                _log.error(
                    "interceptor %r raised in close(); skipped it", interceptor, exc_info=True
                )


def acknowledge_to(interceptors: InterceptorChain, future: FutureRecordMetadata) -> None:
    """Tell the interceptors how the record's send ends (on the I/O thread)."""

    def on_error(error: Exception) -> None:
        metadata = RecordMetadata(
            future.topic, future.partition, UNKNOWN_OFFSET, NO_TIMESTAMP, -1, -1
        )
        interceptors.on_acknowledgement(metadata, error)

    future.add_both(lambda metadata: interceptors.on_acknowledgement(metadata, None), on_error)
