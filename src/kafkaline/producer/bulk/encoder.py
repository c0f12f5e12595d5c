"""The bulk encoders' one interface, :class:`BulkEncoder`, and :func:`choose_encoder`, the one
place where the producer's ``bulk_encoder`` setting picks one.

Three encoders implement it, each named as :attr:`BatchSendResult.encoder
<kafkaline.producer.bulk.result.BatchSendResult.encoder>` names it:

- ``"records"`` (:class:`~kafkaline.producer.bulk.records_path.RecordsPath`): the records,
  grouped per partition, appended one by one (``RecordAccumulator.append_many``);
- ``"columnar"`` (:class:`~kafkaline.producer.bulk.columnar_path.ColumnarPath`): whole
  columns partitioned and encoded by numpy (``RecordAccumulator.append_encoded``);
- ``"per-record"`` (:class:`~kafkaline.producer.bulk.per_record.PerRecordPath`): one
  ``send()`` per record, so that interceptors see every record.

send_arrow() hands its call to the chosen encoder. send_batch() over Python lists has no
columns to encode: it takes ``records`` (``per-record`` with interceptors) whatever the setting.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

if TYPE_CHECKING:
    from kafkaline.producer.bulk.result import BatchSendResult

__all__ = ["ArrowColumns", "BulkEncoder", "choose_encoder", "columnar_module"]


class ArrowColumns(NamedTuple):
    """The columns send_arrow() was told to read (``None``: no such column)."""

    key: str | None
    value: str
    headers: str | None
    partition: str | None
    timestamp: str | None


class BulkEncoder(Protocol):
    """One way of appending a send_arrow() call's rows through the accumulator.

    ``send_arrow`` reads the columns of ``data`` (a pyarrow RecordBatch or Table), checks
    every row before anything is queued (errors name the column and row), partitions and
    appends them, and returns the call's :class:`BatchSendResult`, whose ``encoder`` is
    this encoder's ``name``."""

    name: str

    def send_arrow(self, topic: str, data: Any, columns: ArrowColumns) -> BatchSendResult: ...


def choose_encoder(
    setting: str,
    *,
    per_record: BulkEncoder | None,
    records: BulkEncoder,
    custom_partitioner: bool,
    columnar: Callable[[Any], BulkEncoder],
) -> BulkEncoder:
    """The encoder send_arrow() takes, from the ``bulk_encoder`` ``setting``: ``per_record``
    where there is one (interceptors), else ``records`` where asked for or where a custom
    ``partitioner`` must choose each record's partition, else ``columnar(module)`` with the
    ``bulk.columnar`` module (``auto``: ``records`` without numpy and pyarrow 16+).

    ``"columnar"`` with interceptors or a custom partitioner never gets here: ProducerConfig
    refuses the pair, naming the conflict."""
    if per_record is not None:
        return per_record
    if setting == "records" or custom_partitioner:
        return records
    module = columnar_module()
    if module is not None:
        return columnar(module)
    if setting == "columnar":
        raise ModuleNotFoundError(
            "bulk_encoder='columnar' needs numpy and pyarrow 16 or later, which are not "
            "installed: install kafkaline with its spark extra (pip install '.[spark]' "
            "from the clone), or set bulk_encoder='auto' or 'records'",
            name="numpy",
        )
    return records


@functools.cache
def columnar_module() -> Any:
    """``bulk.columnar`` if numpy and pyarrow (16 or later) are installed, else None."""
    try:
        importlib.import_module("numpy")
        pyarrow = importlib.import_module("pyarrow")
    except ImportError:
        return None
    if not hasattr(pyarrow, "binary_view"):  # pyarrow before 16: no binary views
        return None
    return importlib.import_module("kafkaline.producer.bulk.columnar")
