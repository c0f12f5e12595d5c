"""The bulk encoders' one interface and the one function that picks send_arrow()'s encoder
from the ``bulk_encoder`` setting (kafkaline.producer.bulk.encoder)."""

from __future__ import annotations

from typing import Any

import pytest

from kafkaline.producer.bulk.columnar_path import ColumnarPath
from kafkaline.producer.bulk.encoder import (
    ArrowColumns,
    BulkEncoder,
    choose_encoder,
    columnar_module,
)
from kafkaline.producer.bulk.per_record import PerRecordPath
from kafkaline.producer.bulk.records_path import RecordsPath
from kafkaline.producer.bulk.result import BatchSendResult


class Named:
    """An encoder that only says its name (choose_encoder never calls it)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def send_arrow(self, topic: str, data: Any, columns: ArrowColumns) -> BatchSendResult:
        raise AssertionError("not called")


def chosen(setting: str, *, interceptors: bool = False, partitioner: bool = False) -> str:
    modules: list[Any] = []

    def columnar(module: Any) -> BulkEncoder:
        modules.append(module)
        return Named("columnar")

    encoder = choose_encoder(
        setting,
        per_record=Named("per-record") if interceptors else None,
        records=Named("records"),
        custom_partitioner=partitioner,
        columnar=columnar,
    )
    if encoder.name == "columnar":  # handed the module it encodes with
        assert modules == [columnar_module()] and modules[0] is not None
    return encoder.name


def test_each_encoder_is_a_bulk_encoder_named_as_its_results_say() -> None:
    # The names are BatchSendResult.encoder's words (test_send_batch.py checks the results).
    assert (RecordsPath.name, ColumnarPath.name, PerRecordPath.name) == (
        "records",
        "columnar",
        "per-record",
    )
    for encoder in (RecordsPath, ColumnarPath, PerRecordPath):
        assert callable(encoder.send_arrow)


def as_bulk_encoders(
    records: RecordsPath, columnar: ColumnarPath, per_record: PerRecordPath
) -> list[BulkEncoder]:
    # Not run: mypy --strict over tests checks that the three implement the one interface.
    return [records, columnar, per_record]


def test_records_is_chosen_when_asked_or_a_custom_partitioner_must_choose() -> None:
    assert chosen("records") == "records"
    assert chosen("auto", partitioner=True) == "records"


def test_interceptors_take_one_send_per_record_whatever_the_setting() -> None:
    # ("columnar" with interceptors is refused by ProducerConfig before it gets here.)
    assert chosen("auto", interceptors=True) == "per-record"
    assert chosen("records", interceptors=True) == "per-record"


def test_columnar_is_chosen_where_numpy_and_pyarrow_are_installed() -> None:
    pytest.importorskip("numpy")
    pytest.importorskip("pyarrow")
    if columnar_module() is None:
        pytest.skip("pyarrow before 16")
    assert chosen("auto") == "columnar"
    assert chosen("columnar") == "columnar"


def test_without_numpy_auto_takes_records_and_columnar_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("kafkaline.producer.bulk.encoder.columnar_module", lambda: None)
    assert chosen("auto") == "records"
    with pytest.raises(ModuleNotFoundError, match=r"bulk_encoder='columnar' needs numpy"):
        chosen("columnar")
