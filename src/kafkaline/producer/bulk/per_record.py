""":class:`PerRecordPath`: the ``per-record`` bulk encoder, one ``send()`` per record. A
producer with interceptors takes it for send_batch() and send_arrow(), so that every
interceptor sees every record as it would from ``send()``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from kafkaline.producer.bulk.arrow import arrow_columns, arrow_partitions_and_timestamps
from kafkaline.producer.bulk.encoder import ArrowColumns
from kafkaline.producer.bulk.lists import check_lengths
from kafkaline.producer.bulk.result import BatchSendResult
from kafkaline.record import Headers

if TYPE_CHECKING:
    from kafkaline.producer.futures import FutureRecordMetadata

__all__ = ["PerRecordPath"]


class PerRecordPath:
    """A :class:`~kafkaline.producer.bulk.encoder.BulkEncoder` over the producer's ``send()``
    (``send_one``): its checks, serializers and interceptors run for each record."""

    name = "per-record"

    def __init__(self, send_one: Callable[..., FutureRecordMetadata]) -> None:
        self._send_one = send_one

    def send_lists(
        self,
        topic: str,
        values: Sequence[Any],
        keys: Sequence[Any] | None,
        headers: Sequence[Headers | None] | None,
        partition: int | None,
    ) -> BatchSendResult:
        """send_batch()'s records, as given (send() checks and serializes each)."""
        count = len(values)
        key_list = [None] * count if keys is None else keys
        header_list = [None] * count if headers is None else headers
        check_lengths(count, key_list, header_list)
        send = self._send_one
        return BatchSendResult.of_futures(
            topic,
            [
                send(topic, value, key, header, partition)
                for value, key, header in zip(values, key_list, header_list, strict=True)
            ],
        )

    def send_arrow(self, topic: str, data: Any, columns: ArrowColumns) -> BatchSendResult:
        """send_arrow()'s rows, each with its own partition and timestamp where given."""
        keys, values, header_list = arrow_columns(data, columns.key, columns.value, columns.headers)
        partitions, timestamps = arrow_partitions_and_timestamps(
            data, columns.partition, columns.timestamp
        )
        if partitions is None and timestamps is None:
            return self.send_lists(topic, values, keys, header_list, None)
        send = self._send_one
        return BatchSendResult.of_futures(
            topic,
            [
                send(
                    topic,
                    values[i],
                    None if keys is None else keys[i],
                    None if header_list is None else header_list[i],
                    None if partitions is None else partitions[i],
                    None if timestamps is None else timestamps[i],
                )
                for i in range(len(values))
            ],
        )
