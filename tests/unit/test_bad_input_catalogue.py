"""Bad input refused with a clear error (issue 8): a catalogue of what users get wrong, each
case asserting the error class and that the message names the problem (the setting, the value,
the limit). No broker: the producer's bootstrap server refuses connections, and every check
here happens before send() would wait for one. Cases that need a broker (a partition the topic
does not have, flush() from a delivery callback) are in
tests/integration/test_bad_input_broker.py.

The catalogue is a table, ``CASES``; docs/reliability.md quotes its size (``pytest -s`` prints it).
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]  # pyarrow ships no type information
import pytest

from kafkaline import Producer, ProducerConfig
from kafkaline.errors import (
    ConfigError,
    IllegalStateError,
    InvalidPartitionError,
    InvalidRecordTimestampError,
    InvalidTopicNameError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    ProducerClosedError,
    RecordTooLargeError,
)


def _refused_address() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return f"127.0.0.1:{port}"  # closed again: connections to it are refused


NOBODY = _refused_address()


@dataclass(frozen=True)
class Case:
    """One bad input: ``call(producer)`` must raise ``error`` whose message contains every
    fragment of ``says``."""

    id: str
    call: Callable[[Producer], object]
    error: type[BaseException]
    says: tuple[str, ...]


def settings(**overrides: Any) -> Callable[[Producer], object]:
    """A call that builds a Producer with ``overrides`` (and a bootstrap server)."""

    def build(_: Producer) -> object:
        overrides.setdefault("bootstrap_servers", NOBODY)
        Producer(**overrides).close(0)
        return None

    return build


def properties(props: dict[str, str]) -> Callable[[Producer], object]:
    def build(_: Producer) -> object:
        Producer.from_properties({"bootstrap.servers": NOBODY, **props}).close(0)
        return None

    return build


def send(
    *args: Any, producer_settings: dict[str, Any] | None = None, **kwargs: Any
) -> Callable[[Producer], object]:
    """A send() call, on the shared producer or on one made with ``producer_settings``."""

    def call(shared: Producer) -> object:
        if producer_settings is None:
            return shared.send(*args, **kwargs)
        own = Producer(bootstrap_servers=NOBODY, max_block_ms=200, **producer_settings)
        try:
            return own.send(*args, **kwargs)
        finally:
            own.close(0)

    return call


def _explode(value: object) -> bytes:
    raise RuntimeError(f"cannot serialize {value!r}: serializer exploded")


class _WrongSignatureSerializer:
    def serialize(self, data: object) -> bytes:  # missing topic and headers
        return b""


def _closed_then(action: Callable[[Producer], object]) -> Callable[[Producer], object]:
    def call(_: Producer) -> object:
        producer = Producer(bootstrap_servers=NOBODY)
        producer.close()
        return action(producer)

    return call


CASES: list[Case] = [
    # ---------------------------------------------------------------- configuration values
    Case("acks-2", settings(acks=2), ConfigError, ("acks=2", "0, 1, -1 or 'all'")),
    Case("acks-word", settings(acks="some"), ConfigError, ("acks='some'",)),
    Case("batch-size-negative", settings(batch_size=-1), ConfigError, ("batch_size=-1", ">= 0")),
    Case(
        "batch-size-huge", settings(batch_size=2**40), ConfigError, ("batch_size=", "<= 2147483647")
    ),
    Case("linger-float", settings(linger_ms=1.5), ConfigError, ("linger_ms=1.5", "integer")),
    Case("linger-str", settings(linger_ms="5"), ConfigError, ("linger_ms='5'", "integer")),
    Case("linger-bool", settings(linger_ms=True), ConfigError, ("linger_ms=True", "integer")),
    Case("linger-negative", settings(linger_ms=-1), ConfigError, ("linger_ms=-1", ">= 0")),
    Case("retries-negative", settings(retries=-1), ConfigError, ("retries=-1", ">= 0")),
    Case("retries-float", settings(retries=1.0), ConfigError, ("retries=1.0", "integer")),
    Case(
        "compression-unknown",
        settings(compression_type="brotli"),
        ConfigError,
        ("compression_type='brotli'", "none, gzip, snappy, lz4, zstd"),
    ),
    Case(
        "gzip-level-99",
        settings(compression_type="gzip", compression_level=99),
        ConfigError,
        ("compression_level=99", "gzip levels are 1 to 9"),
    ),
    Case(
        "level-without-compression",
        settings(compression_level=5),
        ConfigError,
        ("compression_level=5", "compression_type='none' has no levels"),
    ),
    Case("buffer-memory-negative", settings(buffer_memory=-1), ConfigError, ("buffer_memory=-1",)),
    Case("max-block-negative", settings(max_block_ms=-5), ConfigError, ("max_block_ms=-5",)),
    Case(
        "request-timeout-negative",
        settings(request_timeout_ms=-1),
        ConfigError,
        ("request_timeout_ms=-1",),
    ),
    Case(
        "request-timeout-zero",
        settings(request_timeout_ms=0),
        ConfigError,
        ("request_timeout_ms=0", "every request would time out at once", ">= 1"),
    ),
    Case(
        "connections-max-idle-zero",
        settings(connections_max_idle_ms=0),
        ConfigError,
        ("connections_max_idle_ms=0", "as soon as it is idle", "-1"),
    ),
    Case(
        "connections-max-idle-zero-property",
        properties({"connections.max.idle.ms": "0"}),
        ConfigError,
        ("connections.max.idle.ms=0", "as soon as it is idle"),
    ),
    Case(
        "in-flight-zero",
        settings(max_in_flight_requests_per_connection=0),
        ConfigError,
        ("max_in_flight_requests_per_connection=0", ">= 1"),
    ),
    Case(
        "bootstrap-empty",
        settings(bootstrap_servers=""),
        ConfigError,
        ("bootstrap_servers=''", "at least one host:port"),
    ),
    Case(
        "bootstrap-no-port",
        settings(bootstrap_servers="localhost"),
        ConfigError,
        ("'localhost' is not host:port",),
    ),
    Case(
        "bootstrap-port-out-of-range",
        settings(bootstrap_servers="localhost:99999"),
        ConfigError,
        ("'localhost:99999' is not host:port",),
    ),
    Case("bootstrap-int", settings(bootstrap_servers=5), ConfigError, ("bootstrap_servers=5",)),
    Case(
        "security-protocol-unknown",
        settings(security_protocol="SSLX"),
        ConfigError,
        ("security_protocol='SSLX'", "PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL"),
    ),
    Case(
        "idempotence-not-bool",
        settings(enable_idempotence="yes"),
        ConfigError,
        ("enable_idempotence='yes'", "True or False"),
    ),
    Case("client-id-not-str", settings(client_id=5), ConfigError, ("client_id=5", "string")),
    Case(
        "value-serializer-not-callable",
        settings(value_serializer=5),
        ConfigError,
        ("value_serializer=5", "Serializer"),
    ),
    Case(
        "interceptor-not-interceptor",
        settings(interceptors=[5]),
        ConfigError,
        ("interceptors=[5]", "on_send and on_acknowledgement"),
    ),
    # A str has a .partition() method (str.partition), so a name passed as a keyword must be
    # refused explicitly rather than mistaken for a Partitioner object.
    Case(
        "partitioner-name-as-keyword",
        settings(partitioner="murmur"),
        ConfigError,
        ("partitioner='murmur'",),
    ),
    # ---------------------------------------------------------------- combinations
    Case(
        "idempotence-with-acks-1",
        settings(enable_idempotence=True, acks=1),
        ConfigError,
        ("enable_idempotence=True conflicts with acks=1",),
    ),
    Case(
        "idempotence-with-retries-0",
        settings(enable_idempotence=True, retries=0),
        ConfigError,
        ("enable_idempotence=True conflicts with retries=0",),
    ),
    Case(
        "idempotence-with-6-in-flight",
        settings(enable_idempotence=True, max_in_flight_requests_per_connection=6),
        ConfigError,
        ("max_in_flight_requests_per_connection=6", "<= 5 with idempotence"),
    ),
    Case(
        "delivery-timeout-below-linger-plus-request",
        settings(delivery_timeout_ms=10, linger_ms=5, request_timeout_ms=30_000),
        ConfigError,
        ("delivery_timeout_ms=10", "linger_ms + request_timeout_ms = 5 + 30000 = 30005"),
    ),
    Case(
        "transactions-without-idempotence",
        settings(transactional_id="t", enable_idempotence=False),
        ConfigError,
        ("transactional_id='t' requires idempotence",),
    ),
    Case(
        "transactional-id-empty",
        settings(transactional_id=""),
        ConfigError,
        ("transactional_id=''", "non-empty"),
    ),
    # ---------------------------------------------------------------- unknown keys
    Case(
        "unknown-key-typo",
        settings(lingr_ms=5),
        ConfigError,
        ("'lingr_ms' is not a producer setting", "did you mean 'linger_ms'?"),
    ),
    Case(
        "unknown-key-singular",
        settings(bootstrap_server="h:1"),
        ConfigError,
        ("'bootstrap_server'", "did you mean 'bootstrap_servers'?"),
    ),
    Case(
        "unknown-property-typo",
        properties({"lingerr.ms": "5"}),
        ConfigError,
        ("'lingerr.ms' is not a producer setting", "did you mean 'linger.ms'?"),
    ),
    # ---------------------------------------------------------------- Java-style properties
    Case(
        "property-not-int",
        properties({"linger.ms": "abc"}),
        ConfigError,
        ("linger.ms='abc'", "integer"),
    ),
    Case(
        "property-not-bool",
        properties({"enable.idempotence": "maybe"}),
        ConfigError,
        ("enable.idempotence='maybe'", "true or false"),
    ),
    Case(
        "property-unknown-partitioner-class",
        properties({"partitioner.class": "com.example.Foo"}),
        ConfigError,
        ("partitioner.class='com.example.Foo'", "unknown partitioner", "round_robin"),
    ),
    Case(
        "property-unknown-serializer",
        properties({"value.serializer": "com.example.Foo"}),
        ConfigError,
        ("value.serializer='com.example.Foo'", "unknown serializer"),
    ),
    Case(
        "property-missing-bootstrap",
        lambda _: Producer.from_properties({"linger.ms": "5"}),
        ConfigError,
        ("bootstrap.servers is required",),
    ),
    # ---------------------------------------------------------------- wrong key/value types
    Case(
        "value-str-without-serializer",
        send("t", "text"),
        TypeError,
        ("value of type str", "value_serializer"),
    ),
    Case("value-int-without-serializer", send("t", 5), TypeError, ("value of type int",)),
    Case(
        "key-str-without-serializer",
        send("t", b"v", key="k"),
        TypeError,
        ("key of type str", "key_serializer"),
    ),
    Case(
        "key-dict-without-serializer",
        send("t", b"v", key={"a": 1}),
        TypeError,
        ("key of type dict",),
    ),
    Case(
        "serializer-returns-str",
        send("t", 5, producer_settings={"value_serializer": str}),
        TypeError,
        ("returned str", "must return bytes"),
    ),
    # ---------------------------------------------------------------- records too large
    Case(
        "value-over-max-request-size",
        send("t", bytes(2000), producer_settings={"max_request_size": 1000}),
        RecordTooLargeError,
        ("larger than max_request_size=1000", "topic 't'"),
    ),
    Case(
        "key-over-max-request-size",
        send("t", b"v", key=bytes(2000), producer_settings={"max_request_size": 1000}),
        RecordTooLargeError,
        ("larger than max_request_size=1000",),
    ),
    Case(
        "headers-over-max-request-size",
        send("t", b"v", headers=[("h", bytes(2000))], producer_settings={"max_request_size": 1000}),
        RecordTooLargeError,
        ("larger than max_request_size=1000",),
    ),
    Case(
        "value-over-buffer-memory",
        send("t", bytes(2000), producer_settings={"buffer_memory": 1000}),
        RecordTooLargeError,
        ("larger than buffer_memory=1000",),
    ),
    # ---------------------------------------------------------------- topic names
    Case("topic-empty", send("", b"v"), InvalidTopicNameError, ("topic name is empty",)),
    Case("topic-space", send("a b", b"v"), InvalidTopicNameError, ("'a b'", "only ASCII letters")),
    Case("topic-slash", send("a/b", b"v"), InvalidTopicNameError, ("'a/b'",)),
    Case("topic-non-ascii", send("tópico", b"v"), InvalidTopicNameError, ("'tópico'",)),
    Case("topic-dot", send(".", b"v"), InvalidTopicNameError, ("'.' is not allowed",)),
    Case("topic-dot-dot", send("..", b"v"), InvalidTopicNameError, ("'..' is not allowed",)),
    Case(
        "topic-250-chars", send("a" * 250, b"v"), InvalidTopicNameError, ("250 characters", "249")
    ),
    Case("topic-not-str", send(5, b"v"), InvalidTopicNameError, ("topic must be a str, not int",)),
    Case("topic-none", send(None, b"v"), InvalidTopicNameError, ("not NoneType",)),
    # Unhashable topics (issue 16, item 7): named like the others, not "unhashable type".
    Case("topic-list", send(["t"], b"v"), InvalidTopicNameError, ("must be a str, not list",)),
    Case("topic-list-keyed", send(["t"], b"v", key=b"k"), InvalidTopicNameError, ("not list",)),
    Case("topic-dict", send({"t": 1}, b"v"), InvalidTopicNameError, ("not dict",)),
    Case("topic-bytearray", send(bytearray(b"t"), b"v"), InvalidTopicNameError, ("bytearray",)),
    Case(
        "send-batch-topic-list",
        lambda p: p.send_batch(["t"], [b"v"]),  # type: ignore[arg-type]
        InvalidTopicNameError,
        ("must be a str, not list",),
    ),
    Case(
        "send-arrow-topic-dict",
        lambda p: p.send_arrow({"t": 1}, pa.record_batch({"value": [b"v"]}), key=None),  # type: ignore[arg-type]
        InvalidTopicNameError,
        ("must be a str, not dict",),
    ),
    # ---------------------------------------------------------------- headers
    Case(
        "headers-str",
        send("t", b"v", headers="abc"),
        TypeError,
        ("headers must be a sequence", "not str"),
    ),
    Case("headers-dict", send("t", b"v", headers={"a": b"1"}), TypeError, ("not dict",)),
    Case(
        "header-value-int",
        send("t", b"v", headers=[("a", 1)]),
        TypeError,
        ("header ('a', 1) is invalid",),
    ),
    Case(
        "header-value-str",
        send("t", b"v", headers=[("a", "x")]),
        TypeError,
        ("header ('a', 'x') is invalid",),
    ),
    Case(
        "header-name-bytes",
        send("t", b"v", headers=[(b"a", b"x")]),
        TypeError,
        ("header (b'a', b'x') is invalid",),
    ),
    Case(
        "header-triple",
        send("t", b"v", headers=[("a", b"x", b"y")]),
        TypeError,
        ("(str, bytes or None) pair",),
    ),
    Case("header-not-pair", send("t", b"v", headers=["a"]), TypeError, ("header 'a' is invalid",)),
    Case(
        "header-name-not-utf8",
        send("t", b"v", headers=[("ok", b"1"), ("bad\udc80", b"x")]),
        ValueError,
        ("header ('bad\\udc80', ...) is invalid", "cannot be encoded as UTF-8"),
    ),
    Case(
        "send-batch-header-name-not-utf8",
        lambda p: p.send_batch("t", [b"v"], headers=[[("\ud800", b"x")]]),
        ValueError,
        ("header ('\\ud800', ...) is invalid", "UTF-8"),
    ),
    # ---------------------------------------------------------------- timestamps
    Case(
        "timestamp-negative",
        send("t", b"v", timestamp_ms=-1),
        InvalidRecordTimestampError,
        ("timestamp_ms=-1", ">= 0"),
    ),
    Case(
        "timestamp-float",
        send("t", b"v", timestamp_ms=1.5),
        InvalidRecordTimestampError,
        ("timestamp_ms=1.5", "integer"),
    ),
    Case(
        "timestamp-bool",
        send("t", b"v", timestamp_ms=True),
        InvalidRecordTimestampError,
        ("timestamp_ms=True",),
    ),
    Case(
        "timestamp-over-int64",
        send("t", b"v", timestamp_ms=2**63),
        InvalidRecordTimestampError,
        ("timestamp_ms=9223372036854775808",),
    ),
    Case(
        "timestamp-str",
        send("t", b"v", timestamp_ms="now"),
        InvalidRecordTimestampError,
        ("timestamp_ms='now'",),
    ),
    # ---------------------------------------------------------------- partitions
    Case(
        "partition-negative",
        send("t", b"v", partition=-1),
        InvalidPartitionError,
        ("partition=-1", ">= 0"),
    ),
    Case(
        "partition-str", send("t", b"v", partition="0"), InvalidPartitionError, ("partition='0'",)
    ),
    Case(
        "partition-bool",
        send("t", b"v", partition=True),
        InvalidPartitionError,
        ("partition=True",),
    ),
    # ---------------------------------------------------------------- serializers that raise
    Case(
        "value-serializer-raises",
        send("t", "x", producer_settings={"value_serializer": _explode}),
        RuntimeError,
        ("cannot serialize 'x'", "serializer exploded"),
    ),
    Case(
        "key-serializer-wrong-signature",
        send("t", b"v", key="k", producer_settings={"key_serializer": _WrongSignatureSerializer()}),
        TypeError,
        ("serialize()",),
    ),
    # ---------------------------------------------------------------- send_batch
    Case(
        "send-batch-keys-mismatch",
        lambda p: p.send_batch("t", [b"a", b"b"], keys=[b"k"]),
        ValueError,
        ("1 keys for 2 values",),
    ),
    Case(
        "send-batch-values-str",
        lambda p: p.send_batch("t", "abc"),
        TypeError,
        ("values must be a sequence", "not str"),
    ),
    Case(
        "send-batch-header-malformed",
        lambda p: p.send_batch("t", [b"a", b"b"], headers=[None, [("x", 1)]]),  # type: ignore[list-item]
        TypeError,
        ("headers[1]", "header ('x', 1) is invalid"),
    ),
    Case(
        "send-batch-value-int",
        lambda p: p.send_batch("t", [b"a", 5]),
        TypeError,
        ("values[1] is of type int",),
    ),
    # ---------------------------------------------------------------- send_arrow
    Case(
        "send-arrow-not-arrow",
        lambda p: p.send_arrow("t", [b"a"]),
        TypeError,
        ("pyarrow RecordBatch or Table, not list",),
    ),
    Case(
        "send-arrow-missing-value-column",
        lambda p: p.send_arrow("t", pa.record_batch({"key": [b"a"]})),
        ValueError,
        ("value column 'value' is not in the data", "['key']"),
    ),
    Case(
        "send-arrow-int-value-column",
        lambda p: p.send_arrow("t", pa.record_batch({"value": [1, 2]}), key=None),
        TypeError,
        ("column 'value' has type int64", "binary, string"),
    ),
    Case(
        "send-arrow-bad-headers-column",
        lambda p: p.send_arrow(
            "t", pa.record_batch({"value": [b"a"], "h": [1]}), key=None, headers="h"
        ),
        TypeError,
        ("column 'h' has type int64", "list<struct<key: string, value: binary>>"),
    ),
    Case(
        "send-arrow-bad-topic",
        lambda p: p.send_arrow("a b", pa.record_batch({"value": [b"a"]}), key=None),
        InvalidTopicNameError,
        ("'a b'",),
    ),
    # ---------------------------------------------------------------- lifecycle
    Case(
        "send-after-close",
        _closed_then(lambda p: p.send("t", b"v")),
        ProducerClosedError,
        ("producer is closed",),
    ),
    Case(
        "send-batch-after-close",
        _closed_then(lambda p: p.send_batch("t", [b"v"])),
        ProducerClosedError,
        ("producer is closed",),
    ),
    Case(
        "transaction-without-transactional-id",
        lambda p: p.begin_transaction(),
        IllegalStateError,
        ("no transactional_id",),
    ),
]


@pytest.fixture(scope="module")
def producer() -> Iterator[Producer]:
    """A producer whose bootstrap server refuses connections; max_block_ms is short so a
    case that wrongly reaches the metadata wait fails fast (with KafkaTimeoutError)."""
    nobody = Producer(bootstrap_servers=NOBODY, max_block_ms=200)
    yield nobody
    nobody.close(0)


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_bad_input_is_refused_with_a_named_error_that_says_why(
    case: Case, producer: Producer
) -> None:
    with pytest.raises(BaseException) as raised:
        case.call(producer)
    assert type(raised.value) is case.error or isinstance(raised.value, case.error), (
        f"{case.id}: expected {case.error.__name__}, got {type(raised.value).__name__}: "
        f"{raised.value}"
    )
    message = str(raised.value)
    for fragment in case.says:
        assert fragment in message, f"{case.id}: {fragment!r} not in {message!r}"
    # Our own errors are kafkaline errors; TypeError and the user's serializer errors are the
    # builtins Python code expects for those mistakes.
    if case.error not in (TypeError, ValueError, RuntimeError):
        assert isinstance(raised.value, KafkaError)
    if isinstance(raised.value, ConfigError):
        assert isinstance(raised.value, ValueError)


def test_catalogue_size(capsys: pytest.CaptureFixture[str]) -> None:
    ids = [case.id for case in CASES]
    assert len(ids) == len(set(ids)), "case ids are unique"
    assert len(CASES) >= 40
    with capsys.disabled():
        print(f"\n[bad input] {len(CASES)} cases in the unit catalogue")


def test_a_metadata_timeout_with_no_broker_reachable_says_why() -> None:
    # The producer guide's error table (docs/producer.md) promises the last error with the timeout.
    with (
        Producer(bootstrap_servers=NOBODY, max_block_ms=1500) as producer,
        pytest.raises(KafkaTimeoutError) as raised,
    ):
        producer.send("events", b"v")
    message = str(raised.value)
    assert "topic 'events' not present in metadata after 1500 ms" in message
    assert f"last connection error: cannot connect to broker at {NOBODY}" in message
    assert isinstance(raised.value.__cause__, KafkaConnectionError)
    assert "refused" in str(raised.value.__cause__)


def test_a_refused_send_leaves_the_producer_usable(producer: Producer) -> None:
    # Bad input is refused before anything is queued: the producer still takes good records
    # (here it then waits for metadata, which nobody serves: the timeout names the topic).
    with pytest.raises(InvalidTopicNameError):
        producer.send("bad topic", b"v")
    with (
        Producer(bootstrap_servers=NOBODY, value_serializer=_explode) as exploding,
        pytest.raises(RuntimeError, match="exploded"),
    ):
        exploding.send("t", "x")
    with pytest.raises(KafkaError, match="'good-topic'"):
        producer.send("good-topic", b"v")


def test_producer_config_rejects_what_producer_rejects() -> None:
    # The same checks whether settings come as keywords or as a ProducerConfig.
    with pytest.raises(ConfigError, match="acks=2"):
        ProducerConfig(bootstrap_servers=(NOBODY,), acks=2)
