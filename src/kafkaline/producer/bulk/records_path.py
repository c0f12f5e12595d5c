""":class:`RecordsPath`: the ``records`` bulk encoder. A call's checked records are grouped
per partition (the partitions ``send()`` would choose, or those given per record) and each
group goes to :meth:`RecordAccumulator.append_many
<kafkaline.producer.accumulator.RecordAccumulator.append_many>`, which encodes the records one
by one into the partition's open batch (a C loop in the compiled core, the record builder in
the pure-Python build), taking them by their input positions. Where the compiled core is
built and no custom partitioner is set, the records are grouped per partition in C
(``group_positions``).

send_batch() over lists always takes it (``per-record`` with interceptors); send_arrow() takes
it where the ``bulk_encoder`` setting says (see :mod:`kafkaline.producer.bulk.encoder`).
"""

from __future__ import annotations

import operator
import time
from collections.abc import Callable, Sequence
from itertools import compress, repeat
from typing import TYPE_CHECKING, Any

from kafkaline.errors import IllegalStateError
from kafkaline.producer.accumulator import BulkSegment, RecordAccumulator
from kafkaline.producer.bulk.arrow import arrow_columns, arrow_partitions_and_timestamps
from kafkaline.producer.bulk.encoder import ArrowColumns
from kafkaline.producer.bulk.lists import group_by_partition
from kafkaline.producer.bulk.result import BatchSendResult, BulkRun, report_queued
from kafkaline.producer.murmur2 import partitions_of_many
from kafkaline.producer.partitioner import Partitioner, validate_partition
from kafkaline.producer.validation import check_headers
from kafkaline.record import Headers
from kafkaline.record.core import compiled_core

if TYPE_CHECKING:
    from kafkaline.net.cluster import ClusterMetadata

__all__ = ["RecordsPath", "check_given_partitions"]

_CORE = compiled_core()
_monotonic = time.monotonic
#: Keys up to this size are remembered by the key -> partition memo of the pure-Python build.
_MEMO_KEY_SIZE = 128
#: Entries of that memo per partition count (cleared when full).
_MEMO_ENTRIES = 1 << 15

#: ``check_sizes(topic, keys, values, headers)``: an error naming the first record too large.
CheckSizes = Callable[
    [str, Sequence[bytes | None] | None, Sequence[bytes | None], Sequence[Headers | None] | None],
    None,
]


class RecordsPath:
    """The ``records`` :class:`~kafkaline.producer.bulk.encoder.BulkEncoder` of a producer's
    bulk calls. :class:`BulkSender <kafkaline.producer.bulk.sender.BulkSender>` hands over
    ``begin(topic, partition)`` (the call's checks, then the partition count and the
    ``max_block_ms`` left) and ``check_sizes(topic, keys, values, headers)`` (an error naming
    the first record over the limits)."""

    name = "records"

    def __init__(
        self,
        accumulator: RecordAccumulator,
        *,
        partitioner: Partitioner | None,
        key_partition: Callable[[bytes, int], int] | None,
        begin: Callable[[str, int | None], tuple[int, float]],
        check_sizes: CheckSizes,
        cluster: Callable[[], ClusterMetadata | None],
        wakeup: Callable[[], None],
        translate_error: Callable[[Exception, str, int | None], Exception | None],
    ) -> None:
        self._accumulator = accumulator
        self._partitioner = partitioner
        self._key_partition = key_partition
        self._begin = begin
        self._check_sizes = check_sizes
        self._cluster = cluster
        self._wakeup = wakeup
        self._translate_error = translate_error
        # The pure-Python build's key -> partition memo, per partition count.
        self._partition_memo: dict[int, dict[bytes, int]] = {}

    def send_arrow(self, topic: str, data: Any, columns: ArrowColumns) -> BatchSendResult:
        """send_arrow()'s columns read into lists, checked, then as :meth:`send_records`."""
        keys, values, header_list = arrow_columns(data, columns.key, columns.value, columns.headers)
        partitions, timestamps = arrow_partitions_and_timestamps(
            data, columns.partition, columns.timestamp
        )
        checked_headers = None
        if header_list is not None:
            checked_headers = [None if not h else check_headers(h) for h in header_list]
        self._check_sizes(topic, keys, values, checked_headers)
        return self.send_records(
            topic,
            values,
            keys,
            checked_headers,
            None,
            partitions,
            timestamps,
            f"column {columns.partition!r}",
        )

    def send_records(
        self,
        topic: str,
        values: Sequence[bytes | None],
        keys: Sequence[bytes | None] | None,
        headers: Sequence[Headers | None] | None,
        partition: int | None,
        partitions: Sequence[int | None] | None = None,
        timestamps: Sequence[int | None] | None = None,
        partitions_source: str = "",
    ) -> BatchSendResult:
        """Partition checked records and append them per partition (``append_many``).

        ``partitions`` (one per record, ``None``: the partitioner's choice; checked here
        against the topic, errors naming ``partitions_source`` and the row) and
        ``timestamps`` (one per record, ``None``: now; checked by the caller) are
        send_arrow()'s columns."""
        count, max_block_ms = self._begin(topic, partition)
        now = time.time_ns() // 1_000_000
        timestamp: int | list[int] = now
        if timestamps is not None:
            timestamp = [now if t is None else t for t in timestamps]
        key_list: Sequence[bytes | None] = [None] * len(values) if keys is None else keys
        groups = self._groups(topic, values, keys, partition, partitions, count, partitions_source)
        runs: list[BulkRun] = []
        wake = False
        # max_block_ms bounds the whole call's waits for memory, not each partition's.
        deadline_ms = _monotonic() * 1000.0 + max_block_ms
        try:
            for group_partition, positions in groups:
                if self._append_group(
                    topic, group_partition, positions, timestamp, key_list, values, headers,
                    deadline_ms, runs,
                ):  # fmt: skip
                    wake = True
        except Exception as error:
            replacement = self._translate_error(error, topic, partition)
            report_queued(
                error, BatchSendResult(topic, len(values), runs, key_list, values, timestamp)
            )
            if replacement is not None:
                raise replacement from error
            raise
        finally:
            if wake:
                self._wakeup()
        return BatchSendResult(topic, len(values), runs, key_list, values, timestamp)

    def _groups(
        self,
        topic: str,
        values: Sequence[bytes | None],
        keys: Sequence[bytes | None] | None,
        partition: int | None,
        partitions: Sequence[int | None] | None,
        count: int,
        partitions_source: str,
    ) -> Sequence[tuple[int | None, Sequence[int] | None]]:
        """``(partition or None for sticky, input positions or None for all in order)``
        for every partition the records go to."""
        if partition is not None:
            validate_partition(topic, partition, count, "send_batch()")
            return [(partition, None)]
        hashed = keys if self._key_partition is not None else None
        if _CORE is not None and self._partitioner is None:
            # The same choices as below, grouped in one C pass (positions kept compact).
            if partitions is not None:
                check_given_partitions(topic, partitions, count, partitions_source)
            elif hashed is None:
                return [(None, None)]
            groups: list[tuple[int | None, Sequence[int]]] = _CORE.group_positions(
                len(values), hashed, partitions, count
            )
            return groups
        if partitions is not None:
            chosen = self._given_partitions(
                topic, partitions, keys, values, count, partitions_source
            )
            return group_by_partition(chosen, count)
        if hashed is not None:
            return group_by_partition(self.key_partitions(hashed, count), count)
        if self._partitioner is not None:
            key_list: Sequence[bytes | None] = [None] * len(values) if keys is None else keys
            chosen = [
                self._custom_partition(topic, k, v, count)
                for k, v in zip(key_list, values, strict=True)
            ]
            return group_by_partition(chosen, count)
        return [(None, None)]

    def _append_group(
        self,
        topic: str,
        partition: int | None,
        positions: Sequence[int] | None,
        timestamp: int | list[int],
        keys: Sequence[bytes | None],
        values: Sequence[bytes | None],
        headers: Sequence[Headers | None] | None,
        deadline_ms: float,
        runs: list[BulkRun],
    ) -> bool:
        """One partition's records appended (``positions``: their input positions, None for
        all in order), their runs added to ``runs`` also when it raises; whether the Sender
        needs a wakeup."""
        now_ms = _monotonic() * 1000.0
        segments: list[BulkSegment] = []
        try:
            _, new_or_full = self._accumulator.append_many(
                topic,
                partition,
                timestamp,
                keys,
                values,
                headers,
                max(0.0, deadline_ms - now_ms),
                now_ms,
                self._cluster(),
                self._wakeup,
                segments,
                positions,
            )
        finally:  # also what was queued before an error, for the error to report
            offset = 0
            for result, first_delta, run_count in segments:
                if positions is None:
                    runs.append((result, first_delta, run_count, None, offset))
                else:
                    run_positions = positions[offset : offset + run_count]
                    runs.append((result, first_delta, run_count, run_positions, 0))
                offset += run_count
        return new_or_full

    # ------------------------------------------------------------------ partitions

    def _given_partitions(
        self,
        topic: str,
        partitions: Sequence[int | None],
        keys: Sequence[bytes | None] | None,
        values: Sequence[bytes | None],
        count: int,
        source: str,
    ) -> list[int]:
        """Each record's partition (``-1``: sticky) where some are given per record: the
        given ones checked against the topic, the others (``None``) chosen as send() would."""
        present = check_given_partitions(topic, partitions, count, source)
        if len(present) == len(partitions):
            return present
        chosen: list[int] = list(partitions)  # type: ignore[arg-type]  # Nones replaced below
        missing = [row for row, given in enumerate(partitions) if given is None]
        if keys is not None and self._key_partition is not None:
            found = self.key_partitions([keys[row] for row in missing], count)
            for row, partition in zip(missing, found, strict=True):
                chosen[row] = partition
        elif self._partitioner is not None:
            for row in missing:
                chosen[row] = self._custom_partition(
                    topic, None if keys is None else keys[row], values[row], count
                )
        else:
            for row in missing:
                chosen[row] = -1
        return chosen

    def key_partitions(self, keys: Sequence[bytes | None], count: int) -> list[int]:
        """The partition of each key (``-1`` for ``None``: sticky), as send() chooses them.

        Looked up in a key -> partition memo per partition count; the keys it misses are
        hashed all at once (``murmur2.partitions_of_many``)."""
        if self._key_partition is None:  # pragma: no cover - checked by the caller
            raise IllegalStateError("keyed partitioning is off")
        memo = self._partition_memo.setdefault(count, {})
        try:  # every key known, the common case once a producer has seen its keys
            return list(map(memo.__getitem__, keys))  # type: ignore[arg-type]
        except KeyError:  # a key not seen yet, or None
            pass
        chosen: list[int | None] = list(map(memo.get, keys))  # type: ignore[arg-type]
        # The keys the memo missed (and None keys), each once.
        missing = dict.fromkeys(compress(keys, map(operator.is_, chosen, repeat(None))))
        missing.pop(None, None)
        new_keys: list[bytes] = list(missing)  # type: ignore[arg-type]  # None popped
        found = dict(zip(new_keys, partitions_of_many(new_keys, count), strict=True))
        remembered = {k: p for k, p in found.items() if len(k) <= _MEMO_KEY_SIZE}
        if len(memo) + len(remembered) > _MEMO_ENTRIES:
            memo.clear()
        memo.update(remembered)
        return [
            partition if partition is not None else -1 if key is None else found[key]
            for key, partition in zip(keys, chosen, strict=True)
        ]

    def _custom_partition(
        self, topic: str, key: bytes | None, value: bytes | None, count: int
    ) -> int:
        partitioner = self._partitioner
        cluster = self._cluster()
        if partitioner is None or cluster is None:  # pragma: no cover - checked by the caller
            raise IllegalStateError("no custom partitioner or no metadata")
        chosen = partitioner.partition(topic, key, value, cluster)
        return validate_partition(topic, chosen, count, f"partitioner {partitioner!r}")


def check_given_partitions(
    topic: str, partitions: Sequence[int | None], count: int, source: str
) -> list[int]:
    """The partitions given per record (``None`` left out), each checked against the
    topic's ``count``: an error names the first bad row of ``source``."""
    present = [p for p in partitions if p is not None]
    if present and (min(present) < 0 or max(present) >= count):
        for row, given in enumerate(partitions):
            if given is not None and not 0 <= given < count:
                validate_partition(topic, given, count, f"row {row} of {source}")
    return present
