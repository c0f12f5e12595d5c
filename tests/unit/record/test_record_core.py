"""The compiled record core against the pure-Python reference: the same records give the same
batches, byte for byte (a differential Hypothesis test), and its own checks and errors."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkaline.errors import IllegalStateError
from kafkaline.producer.murmur2 import murmur2, to_positive
from kafkaline.record import CompressionType, core_build, read_record_batches
from kafkaline.record.batch_format import TimestampType
from kafkaline.record.builder import RecordBatchBuilder as PythonBuilder
from kafkaline.record.crc import crc32c
from kafkaline.record.record_encoder import encode_headers

try:
    from kafkaline import _record_core
except ImportError:  # pragma: no cover - an install without a C compiler
    _record_core = None  # type: ignore[assignment]

needs_core = pytest.mark.skipif(_record_core is None, reason="the C record core is not built")

BASE_TS = 1_700_000_000_000

Record = tuple[int, bytes | None, bytes | None, list[tuple[str, bytes | None]] | None]

records_strategy = st.lists(
    st.tuples(
        st.integers(BASE_TS - 10**6, BASE_TS + 10**9),
        st.none() | st.binary(max_size=40),
        st.none() | st.binary(max_size=300) | st.binary(min_size=2000, max_size=9000),
        st.none()
        | st.lists(st.tuples(st.text(max_size=8), st.none() | st.binary(max_size=20)), max_size=3),
    ),
    max_size=60,
)


def _batches(
    make: type[PythonBuilder],
    records: Sequence[Record],
    *,
    limit: int,
    compression: CompressionType,
    ratio: float,
    bulk: bool,
) -> list[bytes]:
    """The batches the records fill, one new builder whenever a record is refused."""
    out: list[bytes] = []
    position = 0
    while position < len(records):
        builder = make(limit, compression=compression, estimated_compression_ratio=ratio)
        if bulk:
            rest = records[position:]
            position += builder.append_many(
                [r[1] for r in rest],
                [r[2] for r in rest],
                [r[0] for r in rest],
                [r[3] for r in rest],
            )
        else:
            while position < len(records):
                timestamp, key, value, headers = records[position]
                if builder.append(timestamp, key, value, headers) is None:
                    break
                position += 1
        builder.set_producer_state(7, 1, position)
        out.append(bytes(builder.build()))
    return out


@needs_core
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    records=records_strategy,
    limit=st.sampled_from([62, 200, 1024, 16384, 65536]),
    compression=st.sampled_from(list(CompressionType)),
    ratio=st.sampled_from([1.0, 0.5, 0.25]),
    bulk=st.booleans(),
)
def test_compiled_and_python_builders_give_identical_batches(
    records: list[Record], limit: int, compression: CompressionType, ratio: float, bulk: bool
) -> None:
    kwargs = {"limit": limit, "compression": compression, "ratio": ratio, "bulk": bulk}
    expected = _batches(PythonBuilder, records, **kwargs)  # type: ignore[arg-type]
    got = _batches(_record_core.RecordBatchBuilder, records, **kwargs)  # type: ignore[arg-type]
    assert got == expected
    read = [r for b in got for batch in read_record_batches(b) for r in batch.records]
    assert [(r.timestamp, r.key, r.value) for r in read] == [(t, k, v) for t, k, v, _ in records]


@needs_core
@given(data=st.binary(max_size=200))
def test_murmur2_and_crc32c_match_the_python_ones(data: bytes) -> None:
    assert _record_core.murmur2(data) == murmur2(data)
    assert _record_core.partition_for_key(data, 7) == to_positive(murmur2(data)) % 7
    assert _record_core.crc32c(data) == crc32c(data)
    assert _record_core.crc32c(data[10:], _record_core.crc32c(data[:10])) == crc32c(data)


@needs_core
def test_append_bytes_never_leaves_the_batch_full() -> None:
    builder = _record_core.RecordBatchBuilder(200)
    assert builder.append_bytes(BASE_TS, b"k", b"v" * 50, 51) == 0
    while builder.append_bytes(BASE_TS, b"k", b"v" * 20, 21) is not None:
        assert not builder.is_full
    assert not builder.is_closed  # refused, not closed: append() decides exactly
    assert builder.append(BASE_TS, b"k", b"v" * 20) in (None, len(builder) - 1)


@needs_core
def test_rebuild_after_new_producer_state_leaves_the_returned_bytes_alone() -> None:
    builder = _record_core.RecordBatchBuilder(1024)
    builder.append(BASE_TS, b"k", b"value")
    first = builder.build_buffer()
    kept = bytes(first)
    builder.set_producer_state(5, 0, 10)
    second = builder.build_buffer()
    assert first == kept
    assert second != first
    (batch,) = read_record_batches(second)
    assert (batch.producer_id, batch.base_sequence) == (5, 10)


@needs_core
def test_log_append_time_batch_matches_the_reference() -> None:
    batches = []
    for make in (PythonBuilder, _record_core.RecordBatchBuilder):
        builder = make(
            1024, timestamp_type=TimestampType.LOG_APPEND_TIME, log_append_time=BASE_TS + 99
        )
        builder.append(BASE_TS, None, b"v", [("h", None)])
        batches.append(builder.build())
    assert batches[0] == batches[1]


@needs_core
def test_append_encoded_matches_the_reference() -> None:
    from kafkaline.record.record_encoder import encode_records

    encoded = encode_records([b"a", None], [b"1", b"22"], [BASE_TS, BASE_TS + 5])
    batches = []
    for make in (PythonBuilder, _record_core.RecordBatchBuilder):
        builder = make(1024)
        builder.append_encoded([encoded[:3], encoded[3:]], 2, BASE_TS, BASE_TS + 5)
        assert builder.open_state() == (1024 - 61 - len(encoded), 2, BASE_TS)
        builder.append(BASE_TS + 1, b"b", b"333")
        batches.append(builder.build())
    assert batches[0] == batches[1]


@needs_core
@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda b: b.append(BASE_TS, "key", b"v"), TypeError, "key must be bytes, not str"),
        (lambda b: b.append(BASE_TS, None, 5), TypeError, "value must be bytes, not int"),
        (lambda b: b.append(1.5, None, b"v"), TypeError, "timestamp must be int milliseconds"),
        (lambda b: b.append(BASE_TS, None, b"v", [(1, b"")]), TypeError, "header key must be str"),
        (lambda b: b.append(BASE_TS, None, b"v", [("h", 1)]), TypeError, "header value must be"),
        (lambda b: b.seal(), IllegalStateError, "without records"),
        (lambda b: b.set_producer_state(1, 1 << 15, 0), ValueError, "producer_epoch"),
    ],
)
def test_bad_input_is_named_as_the_reference_names_it(
    call: object, error: type[Exception], message: str
) -> None:
    for make in (PythonBuilder, _record_core.RecordBatchBuilder):
        with pytest.raises(error, match=message):
            call(make(1024))  # type: ignore[operator]


@needs_core
def test_bad_constructor_arguments_raise_value_errors() -> None:
    with pytest.raises(ValueError, match="batch_size_limit"):
        _record_core.RecordBatchBuilder(61)
    with pytest.raises(ValueError, match="estimated_compression_ratio"):
        _record_core.RecordBatchBuilder(1024, estimated_compression_ratio=0.0)
    with pytest.raises(ValueError, match="base_offset"):
        _record_core.RecordBatchBuilder(1024, base_offset=1 << 63)


@needs_core
def test_closed_builder_refuses_encoded_records() -> None:
    builder = _record_core.RecordBatchBuilder(1024)
    builder.close_for_appends()
    assert builder.append(BASE_TS, None, b"v") is None
    with pytest.raises(IllegalStateError):
        builder.append_encoded([b"x"], 1, BASE_TS, BASE_TS)


@needs_core
def test_header_block_is_the_reference_encoding() -> None:
    headers: list[tuple[str, bytes | None]] = [("é", b"\x00"), ("n", None)]
    for make in (PythonBuilder, _record_core.RecordBatchBuilder):
        builder = make(1024)
        builder.append(BASE_TS, None, b"", headers)
        wire = builder.build()
        assert wire.endswith(encode_headers(headers))


def test_pure_python_switch_forces_the_python_core() -> None:
    code = "from kafkaline.record import core_build; print(core_build())"
    env = {**os.environ, "KAFKALINE_PURE_PYTHON": "1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.stdout.strip() == "python", out.stderr
    env["KAFKALINE_PURE_PYTHON"] = "0"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.stdout.strip() == ("python" if _record_core is None else "compiled"), out.stderr


def test_core_build_names_the_builder_in_use() -> None:
    from kafkaline.record import RecordBatchBuilder

    if core_build() == "compiled":
        assert RecordBatchBuilder is _record_core.RecordBatchBuilder
    else:
        assert RecordBatchBuilder is PythonBuilder


@needs_core
@given(
    keys=st.lists(st.none() | st.binary(max_size=12), max_size=80),
    partitions=st.integers(1, 40),
)
def test_keys_grouped_per_partition_as_send_chooses_them(
    keys: list[bytes | None], partitions: int
) -> None:
    from kafkaline.producer.bulk.lists import group_by_partition

    chosen = [-1 if k is None else to_positive(murmur2(k)) % partitions for k in keys]
    assert _record_core.group_by_key_partition(keys, partitions) == group_by_partition(
        chosen, partitions
    )
    hashes = _record_core.KeyHashes()
    assert [hashes[k] for k in keys if k is not None] == [
        to_positive(murmur2(k)) for k in keys if k is not None
    ]


@needs_core
def test_key_grouping_names_bad_input() -> None:
    with pytest.raises(ValueError, match="partition_count"):
        _record_core.group_by_key_partition([b"k"], 0)
    with pytest.raises(TypeError, match="key must be bytes"):
        _record_core.group_by_key_partition(["k"], 3)  # type: ignore[list-item]
    with pytest.raises(KeyError):
        _record_core.KeyHashes()["k"]  # type: ignore[index]
