"""ProducerConfig: Java's defaults, every validation error, property parsing, idempotence rules,
and the ExponentialBackoff policy."""

from __future__ import annotations

import dataclasses
import logging
import pickle
import random
import re
import ssl
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafkaline.config import (
    SETTINGS,
    ExponentialBackoff,
    ProducerConfig,
    Secret,
    config_reference_markdown,
    reveal,
)
from kafkaline.errors import ConfigError
from kafkaline.producer.partitioner import RoundRobinPartitioner
from kafkaline.producer.serializers import (
    BytesSerializer,
    JsonSerializer,
    Serializer,
    StringSerializer,
)

SERVERS = "localhost:9092"


def make(**overrides: Any) -> ProducerConfig:
    return ProducerConfig.from_kwargs(**{"bootstrap_servers": SERVERS, **overrides})


# --------------------------------------------------------------------------- defaults

# The Java producer's defaults, from Apache Kafka's ProducerConfig.java (4.x: linger.ms 5).
JAVA_DEFAULTS: dict[str, object] = {
    "client.id": "",
    "acks": -1,
    "compression.type": "none",
    "batch.size": 16384,
    "linger.ms": 5,
    "buffer.memory": 33554432,
    "max.block.ms": 60000,
    "max.request.size": 1048576,
    "request.timeout.ms": 30000,
    "delivery.timeout.ms": 120000,
    "retries": 2147483647,
    "retry.backoff.ms": 100,
    "retry.backoff.max.ms": 1000,
    "reconnect.backoff.ms": 50,
    "reconnect.backoff.max.ms": 1000,
    "max.in.flight.requests.per.connection": 5,
    "metadata.max.age.ms": 300000,
    "metadata.recovery.strategy": "rebootstrap",
    "metadata.recovery.rebootstrap.trigger.ms": 300000,
    "connections.max.idle.ms": 540000,
    "send.buffer.bytes": 131072,
    "receive.buffer.bytes": 32768,
    "partitioner.adaptive.partitioning.enable": True,
    "partitioner.availability.timeout.ms": 0,
    "partitioner.ignore.keys": False,
    "enable.idempotence": True,
    "transactional.id": None,
    "transaction.timeout.ms": 60000,
}


def resolved(config: ProducerConfig, java_name: str) -> object:
    """The value in effect for a Java setting name, after the defaulting rules."""
    special = {
        "delivery.timeout.ms": config.effective_delivery_timeout_ms,
        "reconnect.backoff.max.ms": config.effective_reconnect_backoff_max_ms,
        "enable.idempotence": config.idempotent,
    }
    if java_name in special:
        return special[java_name]
    setting = next(s for s in SETTINGS if s.java_name == java_name)
    return getattr(config, setting.name)


@pytest.mark.parametrize("java_name", sorted(JAVA_DEFAULTS))
def test_defaults_equal_the_java_producer(java_name: str) -> None:
    assert resolved(make(), java_name) == JAVA_DEFAULTS[java_name]


def test_other_defaults() -> None:
    config = make()
    assert config.compression_level is None
    assert config.key_serializer is None and config.value_serializer is None
    assert config.partitioner is None
    assert config.interceptors == ()
    assert not config.transactional


def test_settings_table_covers_every_field_once() -> None:
    field_names = [f.name for f in dataclasses.fields(ProducerConfig) if not f.name.startswith("_")]
    assert [s.name for s in SETTINGS] == field_names
    java_names = [s.java_name for s in SETTINGS]
    assert len(set(java_names)) == len(java_names)


def test_documented_numeric_defaults_match_the_real_ones() -> None:
    config = make()
    numeric = [s for s in SETTINGS if s.default.lstrip("-").isdigit()]
    assert len(numeric) >= 15
    for setting in numeric:
        assert resolved(config, setting.java_name) == int(setting.default), setting.name


def test_reference_markdown_has_a_row_per_setting() -> None:
    table = config_reference_markdown()
    lines = table.strip().splitlines()
    assert lines[0] == "| Name | Java name | Default | Meaning |"
    assert len(lines) == 2 + len(SETTINGS)
    assert "| `linger_ms` | `linger.ms` | 5 |" in table


def test_bootstrap_servers_is_required() -> None:
    with pytest.raises(ConfigError, match="bootstrap_servers is required"):
        ProducerConfig.from_kwargs(linger_ms=5)
    with pytest.raises(ConfigError, match=r"bootstrap\.servers is required"):
        ProducerConfig.from_properties({"linger.ms": "5"})


def test_config_is_frozen_and_comparable() -> None:
    config = make(linger_ms=10)
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.linger_ms = 20  # type: ignore[misc]
    assert config == make(linger_ms=10)
    assert hash(config) == hash(make(linger_ms=10))


# --------------------------------------------------------------------------- value errors


def test_error_message_names_key_value_and_what_is_allowed() -> None:
    with pytest.raises(ConfigError) as caught:
        make(linger_ms=-1)
    assert str(caught.value) == "linger_ms=-1 is invalid: must be an integer >= 0"
    assert isinstance(caught.value, ValueError)


BAD_VALUES: list[tuple[str, object, str]] = [
    ("client_id", 7, "must be a string"),
    ("acks", 2, "must be one of 0, 1, -1 or 'all'"),
    ("acks", "most", "must be one of 0, 1, -1 or 'all'"),
    ("acks", True, "must be one of 0, 1, -1 or 'all'"),
    ("acks", "1", "must be one of 0, 1, -1 or 'all'"),
    ("compression_type", "brotli", "must be one of none, gzip, snappy, lz4, zstd"),
    ("compression_level", "high", "must be an integer or None"),
    ("batch_size", -1, "must be an integer >= 0"),
    ("batch_size", 2**31, "must be an integer <= 2147483647"),
    ("batch_size", "16384", "must be an integer between 0 and 2147483647"),
    ("linger_ms", 1.5, "must be an integer >= 0"),
    ("linger_ms", True, "must be an integer >= 0"),
    ("buffer_memory", -1, "must be an integer >= 0"),
    ("max_block_ms", -1, "must be an integer >= 0"),
    ("max_request_size", -1, "must be an integer >= 0"),
    ("request_timeout_ms", -1, "must be an integer >= 0"),
    ("delivery_timeout_ms", -1, "must be an integer >= 0"),
    ("retries", -1, "must be an integer >= 0"),
    ("retry_backoff_ms", -1, "must be an integer >= 0"),
    ("retry_backoff_max_ms", -1, "must be an integer >= 0"),
    ("reconnect_backoff_ms", -1, "must be an integer >= 0"),
    ("reconnect_backoff_max_ms", -1, "must be an integer >= 0"),
    ("max_in_flight_requests_per_connection", 0, "must be an integer >= 1"),
    ("metadata_max_age_ms", -1, "must be an integer >= 0"),
    ("metadata_recovery_strategy", "REBOOTSTRAP", "must be one of none, rebootstrap"),
    ("metadata_recovery_strategy", None, "must be one of none, rebootstrap"),
    ("bulk_encoder", "numpy", "must be one of auto, records, columnar"),
    ("bulk_encoder", None, "must be one of auto, records, columnar"),
    ("metadata_recovery_rebootstrap_trigger_ms", -1, "must be an integer >= 0"),
    ("connections_max_idle_ms", -2, "must be an integer >= -1"),
    ("send_buffer_bytes", -2, "must be an integer >= -1"),
    ("receive_buffer_bytes", -2, "must be an integer >= -1"),
    ("key_serializer", 5, "must be None, a Serializer"),
    ("value_serializer", "json", "must be None, a Serializer"),
    ("partitioner", lambda *a: 0, "must be None or a Partitioner"),
    ("partitioner_adaptive_partitioning_enable", 1, "must be True or False"),
    ("partitioner_availability_timeout_ms", -1, "must be an integer >= 0"),
    ("partitioner_ignore_keys", "yes", "must be True or False"),
    ("interceptors", object(), "must be a list of ProducerInterceptor objects"),
    ("interceptors", [object()], "is not a ProducerInterceptor"),
    ("enable_idempotence", "true", "must be True or False"),
    ("transactional_id", "", "must be a non-empty string or None"),
    ("transaction_timeout_ms", 0, "must be an integer >= 1"),
    ("bootstrap_servers", "", "must name at least one host:port"),
    ("bootstrap_servers", "localhost", "is not host:port"),
    ("bootstrap_servers", "localhost:http", "is not host:port"),
    ("bootstrap_servers", "localhost:0", "is not host:port"),
    ("bootstrap_servers", "localhost:65536", "is not host:port"),
    ("bootstrap_servers", ":9092", "is not host:port"),
    ("bootstrap_servers", "a:1,a:1", "must not list a server twice"),
    ("bootstrap_servers", 9092, "must be 'host:port,...' or a list"),
    ("bootstrap_servers", [b"a:1"], "must be 'host:port,...' or a list"),
    ("security_protocol", "TLS", "must be one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL"),
    ("ssl_context", "default", "must be an ssl.SSLContext or None"),
    ("ssl_cafile", "/no/such/ca.pem", "no such file"),
    ("ssl_certfile", 5, "must be the path of a PEM file"),
    ("ssl_keyfile", "", "must be the path of a PEM file"),
    ("ssl_check_hostname", "no", "must be True or False"),
    ("sasl_mechanism", "GSSAPI", "Kerberos (GSSAPI) is not supported"),
    ("sasl_mechanism", "SCRAM-SHA-1", "must be one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, "),
    ("sasl_plain_username", "", "must be a non-empty string or None"),
    ("sasl_oauth_token_provider", "token", "must be a callable returning a token str"),
]

# Secrets are refused without echoing the value: their message is "<key> is invalid: ...".
SECRET_BAD_VALUES: list[tuple[str, object]] = [
    ("ssl_password", b"key-password-1"),
    ("sasl_plain_password", 271828),
]


@pytest.mark.parametrize(("key", "value", "allowed"), BAD_VALUES)
def test_every_bad_value_is_a_config_error_naming_key_and_value(
    key: str, value: object, allowed: str
) -> None:
    kwargs: dict[str, Any] = {"bootstrap_servers": SERVERS, key: value}
    with pytest.raises(ConfigError) as caught:
        ProducerConfig.from_kwargs(**kwargs)
    message = str(caught.value)
    assert message.startswith(f"{key}={value!r} is invalid: ")
    assert allowed in message


@pytest.mark.parametrize(("key", "value"), SECRET_BAD_VALUES)
def test_a_badly_typed_secret_is_refused_without_showing_it(key: str, value: object) -> None:
    kwargs: dict[str, Any] = {"bootstrap_servers": SERVERS, key: value}
    with pytest.raises(ConfigError) as caught:
        ProducerConfig.from_kwargs(**kwargs)
    message = str(caught.value)
    assert message.startswith(f"{key} is invalid: must be a str")
    assert str(value) not in message and repr(value) not in message


def test_every_setting_has_a_bad_value_case() -> None:
    keys = {key for key, _, _ in BAD_VALUES} | {key for key, _ in SECRET_BAD_VALUES}
    assert keys == {s.name for s in SETTINGS}


def test_integer_types_other_than_int_are_accepted() -> None:
    class Count:
        def __index__(self) -> int:
            return 7

    config = make(linger_ms=Count())
    assert config.linger_ms == 7 and type(config.linger_ms) is int


@pytest.mark.parametrize("acks", [0, 1, -1, "all"])
def test_acks_values(acks: object) -> None:
    config = make(acks=acks, enable_idempotence=False)
    assert config.acks == (-1 if acks == "all" else acks)


def test_bootstrap_servers_forms() -> None:
    assert make(bootstrap_servers=" a:1 , b:2 ,").bootstrap_servers == ("a:1", "b:2")
    assert make(bootstrap_servers=["a:1", "b:2"]).bootstrap_servers == ("a:1", "b:2")
    config = make(bootstrap_servers="[::1]:9092,broker.example.com:19092")
    assert config.bootstrap_addresses == (("::1", 9092), ("broker.example.com", 19092))


def test_compression_level_rules() -> None:
    assert make(compression_type="zstd", compression_level=-5).compression_level == -5
    assert make(compression_type="lz4", compression_level=17).compression_level == 17
    # gzip's -1 is Java's "codec default".
    assert make(compression_type="gzip", compression_level=-1).compression_level is None
    assert make(compression_type=None).compression_type == "none"
    with pytest.raises(ConfigError, match=r"compression_level=10 is invalid: gzip levels are 1"):
        make(compression_type="gzip", compression_level=10)
    with pytest.raises(ConfigError, match="lz4 levels are 1 to 17"):
        make(compression_type="lz4", compression_level=0)
    with pytest.raises(ConfigError, match="compression_type='snappy' has no levels"):
        make(compression_type="snappy", compression_level=1)
    with pytest.raises(ConfigError, match="compression_type='none' has no levels"):
        make(compression_level=1)


# --------------------------------------------------------------------------- unknown keys


def test_unknown_kwarg_suggests_the_closest_setting() -> None:
    with pytest.raises(ConfigError) as caught:
        make(lingr_ms=5)
    assert str(caught.value) == "'lingr_ms' is not a producer setting; did you mean 'linger_ms'?"


def test_unknown_kwarg_without_a_close_match() -> None:
    with pytest.raises(ConfigError, match=r"^'zzz' is not a producer setting$"):
        make(zzz=1)


def test_unknown_property_suggests_the_closest_setting() -> None:
    with pytest.raises(ConfigError, match=r"'linger\.mss' .* did you mean 'linger\.ms'\?"):
        ProducerConfig.from_properties({"bootstrap.servers": SERVERS, "linger.mss": "5"})


# security.protocol and sasl.mechanism were in this list until TLS and SASL were implemented.
@pytest.mark.parametrize(
    "key",
    [
        "ssl.truststore.location",
        "ssl.keystore.type",
        "sasl.login.class",
        "sasl.kerberos.service.name",
        "socket.connection.setup.timeout.ms",
    ],
)
def test_known_java_settings_we_do_not_support_are_refused_by_name(key: str) -> None:
    with pytest.raises(
        ConfigError, match=re.escape(f"{key} is a Java producer setting that kafkaline")
    ):
        ProducerConfig.from_properties({"bootstrap.servers": SERVERS, key: "x"})


def test_java_settings_without_meaning_here_are_accepted_with_one_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="kafkaline.config"):
        config = ProducerConfig.from_properties(
            {
                "bootstrap.servers": SERVERS,
                "client.dns.lookup": "use_all_dns_ips",
                "metrics.recording.level": "INFO",
                "linger.ms": "7",
            }
        )
    assert config.linger_ms == 7
    [warning] = [record for record in caplog.records if record.name == "kafkaline.config"]
    assert warning.levelno == logging.WARNING
    assert warning.getMessage() == (
        "ignoring Java client settings that have no meaning in kafkaline: "
        "client.dns.lookup, metrics.recording.level"
    )


def test_a_misspelled_java_setting_is_still_refused_with_a_suggestion() -> None:
    with pytest.raises(ConfigError, match=r"'client\.dns\.lookups' .* 'client\.dns\.lookup'\?"):
        ProducerConfig.from_properties({"bootstrap.servers": SERVERS, "client.dns.lookups": "x"})


@pytest.mark.parametrize(
    ("key", "value", "setting", "expected"),
    [
        ("message.timeout.ms", "45000", "delivery_timeout_ms", 45_000),
        ("queue.buffering.max.ms", "25", "linger_ms", 25),
        ("queue.buffering.max.kbytes", "2048", "buffer_memory", 2048 * 1024),
        ("message.max.bytes", "2000000", "max_request_size", 2_000_000),
        ("message.send.max.retries", "3", "retries", 3),
        ("compression.codec", "lz4", "compression_type", "lz4"),
    ],
)
def test_librdkafka_names_map_to_their_java_settings(
    key: str, value: str, setting: str, expected: object
) -> None:
    config = ProducerConfig.from_properties({"bootstrap.servers": SERVERS, key: value})
    assert getattr(config, setting) == expected


def test_a_librdkafka_name_and_its_java_name_together_are_given_twice() -> None:
    with pytest.raises(ConfigError, match="linger_ms is given twice"):
        ProducerConfig.from_properties(
            {"bootstrap.servers": SERVERS, "linger.ms": "5", "queue.buffering.max.ms": "5"}
        )


def test_a_misspelled_librdkafka_name_suggests_itself_not_request_timeout() -> None:
    with pytest.raises(ConfigError, match=r"did you mean 'message\.timeout\.ms'\?"):
        ProducerConfig.from_properties({"bootstrap.servers": SERVERS, "message.timeout.mss": "1"})


@pytest.mark.parametrize(
    ("java_class", "data", "expected"),
    [
        ("IntegerSerializer", 258, b"\x00\x00\x01\x02"),
        ("IntegerSerializer", -1, b"\xff\xff\xff\xff"),
        ("LongSerializer", 1, b"\x00" * 7 + b"\x01"),
        ("ShortSerializer", 2, b"\x00\x02"),
        ("DoubleSerializer", 1.5, b"\x3f\xf8" + b"\x00" * 6),
        ("FloatSerializer", 1.5, b"\x3f\xc0\x00\x00"),
        ("UUIDSerializer", uuid.UUID(int=1), b"00000000-0000-0000-0000-000000000001"),
        ("StringSerializer", "é", b"\xc3\xa9"),
        ("ByteArraySerializer", b"ab", b"ab"),
        ("VoidSerializer", None, None),
    ],
)
def test_java_serializer_class_names_map_to_ours(
    java_class: str, data: object, expected: bytes | None
) -> None:
    config = ProducerConfig.from_properties(
        {
            "bootstrap.servers": SERVERS,
            "value.serializer": f"org.apache.kafka.common.serialization.{java_class}",
        }
    )
    assert isinstance(config.value_serializer, Serializer)
    assert config.value_serializer.serialize("t", data, None) == expected


def test_a_java_number_serializer_refuses_what_does_not_fit() -> None:
    config = ProducerConfig.from_properties(
        {
            "bootstrap.servers": SERVERS,
            "key.serializer": "org.apache.kafka.common.serialization.IntegerSerializer",
        }
    )
    assert isinstance(config.key_serializer, Serializer)
    with pytest.raises(ValueError, match="IntegerSerializer cannot serialize 4294967296"):
        config.key_serializer.serialize("t", 2**32, None)
    with pytest.raises(TypeError, match="IntegerSerializer cannot serialize str"):
        config.key_serializer.serialize("t", "1", None)


def test_a_misspelled_java_serializer_class_suggests_the_right_one() -> None:
    with pytest.raises(ConfigError, match=r"did you mean '.*\.StringSerializer'\?"):
        ProducerConfig.from_properties(
            {
                "bootstrap.servers": SERVERS,
                "value.serializer": "org.apache.kafka.common.serialization.StringSerialiser",
            }
        )


def test_with_changes_validates_and_reapplies_defaulting_rules() -> None:
    config = make()
    assert config.idempotent
    changed = config.with_changes(acks=1)
    assert changed.acks == 1 and not changed.idempotent
    assert changed.linger_ms == config.linger_ms
    with pytest.raises(ConfigError, match="did you mean 'linger_ms'"):
        config.with_changes(linger=5)
    with pytest.raises(ConfigError, match="linger_ms=-1 is invalid"):
        config.with_changes(linger_ms=-1)


# --------------------------------------------------------------------------- from_properties


def test_from_properties_converts_java_strings() -> None:
    config = ProducerConfig.from_properties(
        {
            "bootstrap.servers": "a:1, b:2",
            "client.id": " app ",
            "linger.ms": "5",
            "batch.size": " 32768 ",
            "acks": "all",
            "enable.idempotence": "TRUE",
            "partitioner.ignore.keys": "true",
            "compression.type": "zstd",
            "compression.zstd.level": "7",
            "transactional.id": "tx-1",
            "delivery.timeout.ms": "200000",
            "key.serializer": "org.apache.kafka.common.serialization.StringSerializer",
            "value.serializer": "json",
            "partitioner.class": "org.apache.kafka.clients.producer.RoundRobinPartitioner",
            "interceptor.classes": "",
        }
    )
    assert config.bootstrap_servers == ("a:1", "b:2")
    assert config.client_id == "app"
    assert config.linger_ms == 5
    assert config.batch_size == 32768
    assert config.acks == -1
    assert config.enable_idempotence is True and config.idempotent
    assert config.partitioner_ignore_keys is True
    assert config.compression_type == "zstd" and config.compression_level == 7
    assert config.transactional_id == "tx-1" and config.transactional
    assert config.delivery_timeout_ms == 200000
    assert isinstance(config.key_serializer, StringSerializer)
    assert isinstance(config.value_serializer, JsonSerializer)
    assert isinstance(config.partitioner, RoundRobinPartitioner)
    assert config.interceptors == ()


@pytest.mark.parametrize(
    ("text", "acks"), [("all", -1), ("ALL", -1), ("-1", -1), ("0", 0), ("1", 1)]
)
def test_from_properties_acks(text: str, acks: int) -> None:
    properties = {"bootstrap.servers": SERVERS, "acks": text, "enable.idempotence": "false"}
    assert ProducerConfig.from_properties(properties).acks == acks


def test_from_properties_accepts_snake_case_and_typed_values() -> None:
    serializer = BytesSerializer()
    config = ProducerConfig.from_properties(
        {
            "bootstrap_servers": ["a:1"],
            "linger_ms": 7,
            "enable_idempotence": False,
            "value_serializer": serializer,
            "compression_type": "gzip",
            "compression_level": "4",
        }
    )
    assert config.linger_ms == 7
    assert config.enable_idempotence is False and not config.idempotent
    assert config.value_serializer is serializer
    assert config.compression_level == 4


def test_from_properties_uses_the_level_of_the_chosen_codec_only() -> None:
    config = ProducerConfig.from_properties(
        {
            "bootstrap.servers": SERVERS,
            "compression.type": "lz4",
            "compression.gzip.level": "9",
            "compression.lz4.level": "3",
        }
    )
    assert config.compression_level == 3
    # Java validates every codec's level, used or not.
    with pytest.raises(ConfigError, match=r"compression\.zstd\.level=99 is invalid"):
        ProducerConfig.from_properties(
            {"bootstrap.servers": SERVERS, "compression.zstd.level": "99"}
        )


@pytest.mark.parametrize(
    ("key", "text", "message"),
    [
        ("linger.ms", "five", "linger.ms='five' is invalid: must be an integer"),
        ("linger.ms", "-1", "linger.ms=-1 is invalid: must be an integer >= 0"),
        ("linger.ms", "5.0", "linger.ms='5.0' is invalid: must be an integer"),
        ("enable.idempotence", "yes", "enable.idempotence='yes' is invalid: must be true or false"),
        ("acks", "2", "acks='2' is invalid: must be one of 0, 1, -1 or all"),
        ("compression.type", "brotli", "compression.type='brotli' is invalid"),
        ("key.serializer", "com.example.Avro", "key.serializer='com.example.Avro' is invalid"),
        ("partitioner.class", "com.example.P", "partitioner.class='com.example.P' is invalid"),
        ("interceptor.classes", "com.example.I", "must be given as objects"),
        ("bootstrap.servers", "a:1,a:1", "bootstrap.servers='a:1,a:1' is invalid"),
    ],
)
def test_from_properties_errors_name_the_key_as_given(key: str, text: str, message: str) -> None:
    properties = {"bootstrap.servers": SERVERS, key: text}
    with pytest.raises(ConfigError) as caught:
        ProducerConfig.from_properties(properties)
    assert message in str(caught.value)


def test_from_properties_refuses_a_setting_given_twice() -> None:
    with pytest.raises(ConfigError, match=r"linger_ms is given twice, as 'linger\.ms' and"):
        ProducerConfig.from_properties(
            {"bootstrap.servers": SERVERS, "linger.ms": "1", "linger_ms": 2}
        )


def test_from_properties_refuses_non_string_keys() -> None:
    with pytest.raises(ConfigError, match="keys are strings"):
        ProducerConfig.from_properties({"bootstrap.servers": SERVERS, 5: "x"})  # type: ignore[dict-item]


@given(st.integers(min_value=0, max_value=2**63 - 1), st.sampled_from(["", " ", "\t"]))
def test_any_valid_long_property_round_trips(number: int, padding: str) -> None:
    properties = {
        "bootstrap.servers": SERVERS,
        "metadata.max.age.ms": f"{padding}{number}{padding}",
    }
    assert ProducerConfig.from_properties(properties).metadata_max_age_ms == number


# --------------------------------------------------------------------------- cross-field rules


def test_delivery_timeout_default_is_raised_to_linger_plus_request_timeout() -> None:
    config = make(linger_ms=100_000, request_timeout_ms=30_000)
    assert config.delivery_timeout_ms is None
    assert config.effective_delivery_timeout_ms == 130_000


def test_explicit_delivery_timeout_below_linger_plus_request_timeout_is_an_error() -> None:
    with pytest.raises(ConfigError) as caught:
        make(delivery_timeout_ms=30_004)
    assert str(caught.value) == (
        "delivery_timeout_ms=30004 is invalid: must be >= linger_ms + request_timeout_ms = "
        "5 + 30000 = 30005"
    )
    assert make(delivery_timeout_ms=30_005).effective_delivery_timeout_ms == 30_005


def test_idempotence_is_silently_disabled_by_conflicting_acks_when_defaulted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO, logger="kafkaline.config"):
        config = make(acks=1)
    assert not config.idempotent
    assert config.enable_idempotence is None
    assert "idempotence disabled because of acks=1" in caplog.text


def test_idempotence_is_silently_disabled_by_zero_retries_when_defaulted() -> None:
    assert not make(retries=0).idempotent


@pytest.mark.parametrize(
    ("conflict", "fragment"),
    [({"acks": 0}, "acks=0 (needs 'all')"), ({"retries": 0}, "retries=0 (needs > 0)")],
)
def test_explicit_idempotence_with_conflicts_is_an_error(
    conflict: dict[str, object], fragment: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        make(enable_idempotence=True, **conflict)
    assert str(caught.value).startswith("enable_idempotence=True conflicts with ")
    assert fragment in str(caught.value)


def test_idempotence_allows_at_most_five_in_flight() -> None:
    assert make(max_in_flight_requests_per_connection=5).idempotent
    with pytest.raises(ConfigError, match=r"max_in_flight_requests_per_connection=6 is invalid"):
        make(max_in_flight_requests_per_connection=6)
    with pytest.raises(ConfigError, match=r"max_in_flight_requests_per_connection=6 is invalid"):
        make(max_in_flight_requests_per_connection=6, enable_idempotence=True)
    assert not make(max_in_flight_requests_per_connection=6, enable_idempotence=False).idempotent
    # Already turned off by acks: no idempotent producer for the limit to protect.
    assert not make(max_in_flight_requests_per_connection=6, acks=1).idempotent


def test_transactional_id_requires_idempotence() -> None:
    config = make(transactional_id="tx")
    assert config.transactional and config.idempotent
    with pytest.raises(ConfigError, match="transactional_id='tx' requires idempotence, but "):
        make(transactional_id="tx", enable_idempotence=False)
    with pytest.raises(ConfigError, match=r"idempotence is off because of acks=1 \(needs 'all'\)"):
        make(transactional_id="tx", acks=1)


def test_reconnect_backoff_max_follows_java_defaulting() -> None:
    assert make().effective_reconnect_backoff_max_ms == 1000
    # Only the base set: constant backoff at the base, as in Java.
    only_base = make(reconnect_backoff_ms=5000)
    assert only_base.effective_reconnect_backoff_max_ms == 5000
    assert only_base.reconnect_backoff.next_delay(3, random.Random(0)) == 5000
    assert make(reconnect_backoff_ms=10, reconnect_backoff_max_ms=80).reconnect_backoff == (
        ExponentialBackoff(10, 80)
    )


def test_retry_backoff_policy_and_warning_when_base_exceeds_max(
    caplog: pytest.LogCaptureFixture,
) -> None:
    assert make().retry_backoff == ExponentialBackoff(100, 1000)
    with caplog.at_level(logging.WARNING, logger="kafkaline.config"):
        config = make(retry_backoff_ms=2000)
    assert "retries wait a constant 1000 ms" in caplog.text
    assert config.retry_backoff.next_delay(0, random.Random(0)) == 1000


# --------------------------------------------------------------------------- ExponentialBackoff


class FixedUniform:
    """An rng whose uniform(a, b) returns a (fraction=0) or b (fraction=1) or between."""

    def __init__(self, fraction: float) -> None:
        self.fraction = fraction
        self.calls: list[tuple[float, float]] = []

    def uniform(self, a: float, b: float) -> float:
        self.calls.append((a, b))
        return a + (b - a) * self.fraction


def test_backoff_is_java_formula_with_twenty_percent_jitter() -> None:
    backoff = ExponentialBackoff(initial_ms=100, max_ms=1000)
    low, mid, high = FixedUniform(0.0), FixedUniform(0.5), FixedUniform(0.999999)
    assert [backoff.next_delay(n, mid) for n in range(5)] == [100, 200, 400, 800, 1000]
    assert [backoff.next_delay(n, low) for n in range(5)] == [80, 160, 320, 640, 800]
    assert [backoff.next_delay(n, high) for n in range(5)] == [119, 239, 479, 959, 1000]
    assert low.calls[0] == pytest.approx((0.8, 1.2))


def test_backoff_is_constant_when_initial_exceeds_max() -> None:
    backoff = ExponentialBackoff(initial_ms=5000, max_ms=1000)
    rng = FixedUniform(0.0)
    assert [backoff.next_delay(n, rng) for n in range(4)] == [1000] * 4
    assert rng.calls == []


def test_backoff_edge_values() -> None:
    assert ExponentialBackoff(0, 1000).next_delay(10, random.Random(1)) == 0
    assert ExponentialBackoff(100, 1000, jitter=0.0).next_delay(-3, random.Random(1)) == 100
    assert (
        ExponentialBackoff(50, 1000, multiplier=3, jitter=0.0).next_delay(2, random.Random()) == 450
    )
    with pytest.raises(ConfigError, match=r"jitter=1\.5 is invalid"):
        ExponentialBackoff(100, 1000, jitter=1.5)
    with pytest.raises(ConfigError, match="initial_ms=-1 is invalid"):
        ExponentialBackoff(-1, 1000)
    with pytest.raises(ConfigError, match="multiplier=1 is invalid"):
        ExponentialBackoff(100, 1000, multiplier=1)


@given(
    initial=st.integers(min_value=0, max_value=10_000),
    maximum=st.integers(min_value=0, max_value=100_000),
    attempt=st.integers(min_value=0, max_value=200),
    seed=st.integers(min_value=0, max_value=2**32),
)
def test_backoff_stays_within_jitter_of_the_exponential_and_never_exceeds_max(
    initial: int, maximum: int, attempt: int, seed: int
) -> None:
    backoff = ExponentialBackoff(initial, maximum)
    delay = backoff.next_delay(attempt, random.Random(seed))
    assert 0 <= delay <= maximum
    base = min(initial, maximum)
    if maximum > base:
        exact = min(base * 2.0**attempt, float(maximum))
        assert int(exact * 0.8) - 1 <= delay <= exact * 1.2
    else:
        assert delay == base


def test_a_java_name_passed_as_keyword_points_to_our_name() -> None:
    with pytest.raises(ConfigError) as caught:
        ProducerConfig.from_kwargs(**{"bootstrap_servers": SERVERS, "linger.ms": 5})
    assert str(caught.value) == (
        "'linger.ms' is a Java property name: use 'linger_ms' here, or "
        "ProducerConfig.from_properties() for Java names"
    )


def test_config_survives_pickling() -> None:
    # Spark ships configurations to executors by pickling them.
    config = make(
        linger_ms=20,
        acks=1,
        value_serializer=JsonSerializer(),
        key_serializer=StringSerializer(),
        partitioner=RoundRobinPartitioner(),
    )
    copy = pickle.loads(pickle.dumps(config))
    assert copy.linger_ms == 20 and copy.acks == 1 and not copy.idempotent
    assert isinstance(copy.value_serializer, JsonSerializer)
    assert copy.value_serializer.serialize("t", {"a": 1}, None) == b'{"a":1}'
    assert isinstance(copy.partitioner, RoundRobinPartitioner)
    assert pickle.loads(pickle.dumps(config.retry_backoff)) == config.retry_backoff


# --------------------------------------------------------------------------- security settings

PASSWORD = "pa55-w0rd-never-shown"


def test_secrets_are_masked_in_repr_str_and_format() -> None:
    secret = Secret(PASSWORD)
    assert repr(secret) == "Secret('******')"
    assert str(secret) == f"{secret}" == "******"
    assert secret.reveal() == PASSWORD
    assert secret == Secret(PASSWORD) and secret != Secret("other")
    assert pickle.loads(pickle.dumps(secret)).reveal() == PASSWORD


def test_config_repr_never_shows_passwords(tmp_path: Path) -> None:
    cert = tmp_path / "client.pem"
    cert.write_text("not checked until a client is made\n")
    config = make(
        security_protocol="SASL_SSL",
        sasl_mechanism="SCRAM-SHA-512",
        sasl_plain_username="alice",
        sasl_plain_password=PASSWORD,
        ssl_certfile=str(cert),
        ssl_password=PASSWORD + "-key",
    )
    assert isinstance(config.sasl_plain_password, Secret)
    assert isinstance(config.ssl_password, Secret)
    for text in (repr(config), str(config), f"{config}"):
        assert PASSWORD not in text
        assert "sasl_plain_password=Secret('******')" in text
    assert config == make(
        security_protocol="SASL_SSL",
        sasl_mechanism="SCRAM-SHA-512",
        sasl_plain_username="alice",
        sasl_plain_password=Secret(PASSWORD),
        ssl_certfile=str(cert),
        ssl_password=PASSWORD + "-key",
    )
    assert pickle.loads(pickle.dumps(config)) == config


def test_java_security_properties_map_to_the_typed_fields() -> None:
    jaas = (
        "org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="alice" password="{PASSWORD}\\"x";'
    )
    config = ProducerConfig.from_properties(
        {
            "bootstrap.servers": SERVERS,
            "security.protocol": "sasl_ssl",
            "sasl.mechanism": "SCRAM-SHA-256",
            "sasl.jaas.config": jaas,
            "ssl.endpoint.identification.algorithm": "",
        }
    )
    assert config.security_protocol == "SASL_SSL"
    assert config.sasl_mechanism == "SCRAM-SHA-256"
    assert config.sasl_plain_username == "alice"
    assert reveal(config.sasl_plain_password) == PASSWORD + '"x'
    assert config.ssl_check_hostname is False
    plain = ProducerConfig.from_properties(
        {
            "bootstrap.servers": SERVERS,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule "
            "required username=bob password=secret;",
        }
    )
    assert plain.sasl_plain_username == "bob" and reveal(plain.sasl_plain_password) == "secret"


@pytest.mark.parametrize(
    ("jaas", "message"),
    [
        (
            "org.apache.kafka.common.security.plain.PlainLoginModule required "
            f'password="{PASSWORD}";',
            "has no username",
        ),
        (
            f'com.example.Custom required username="u" password="{PASSWORD}";',
            "names com.example.Custom",
        ),
        (
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;",
            "give a token provider as sasl_oauth_token_provider",
        ),
        (f"{PASSWORD}", "expected '<LoginModule> required"),
    ],
)
def test_bad_jaas_config_is_refused_without_echoing_it(jaas: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        ProducerConfig.from_properties(
            {
                "bootstrap.servers": SERVERS,
                "security.protocol": "SASL_SSL",
                "sasl.mechanism": "PLAIN",
                "sasl.jaas.config": jaas,
            }
        )
    assert message in str(caught.value)
    assert PASSWORD not in str(caught.value)


def test_jaas_credentials_and_direct_ones_conflict() -> None:
    with pytest.raises(ConfigError, match="sasl_plain_username is given twice"):
        ProducerConfig.from_properties(
            {
                "bootstrap.servers": SERVERS,
                "security.protocol": "SASL_SSL",
                "sasl.mechanism": "PLAIN",
                "sasl.username": "a",
                "sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule "
                'required username="b" password="c";',
            }
        )


def test_hostname_check_property_values() -> None:
    def check(value: str) -> bool:
        return ProducerConfig.from_properties(
            {
                "bootstrap.servers": SERVERS,
                "security.protocol": "SSL",
                "ssl.endpoint.identification.algorithm": value,
            }
        ).ssl_check_hostname

    assert check("https") is True and check("HTTPS") is True and check("") is False
    with pytest.raises(ConfigError, match="must be 'https'"):
        check("ldap")


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"ssl_check_hostname": False},
         "ssl_check_hostname set, but security_protocol='PLAINTEXT'"),
        (
            {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "PLAIN",
             "sasl_plain_username": "u", "sasl_plain_password": "p",
             "ssl_context": ssl.create_default_context()},
            "ssl_context set, but security_protocol='SASL_PLAINTEXT' does not use TLS",
        ),
        ({"security_protocol": "SASL_SSL"}, "needs sasl_mechanism: one of PLAIN, SCRAM-SHA-256"),
        (
            {"security_protocol": "SASL_SSL", "sasl_mechanism": "SCRAM-SHA-256"},
            "sasl_mechanism='SCRAM-SHA-256' needs sasl_plain_username and sasl_plain_password",
        ),
        (
            {"security_protocol": "SASL_SSL", "sasl_mechanism": "PLAIN",
             "sasl_plain_username": "u"},
            "sasl_mechanism='PLAIN' needs sasl_plain_password",
        ),
        (
            {"security_protocol": "SASL_SSL", "sasl_mechanism": "OAUTHBEARER"},
            "needs sasl_oauth_token_provider",
        ),
        (
            {"security_protocol": "SASL_SSL", "sasl_mechanism": "OAUTHBEARER",
             "sasl_oauth_token_provider": lambda: "t", "sasl_plain_username": "u"},
            "sasl_plain_username set, but sasl_mechanism='OAUTHBEARER' does not use it",
        ),
        (
            {"sasl_mechanism": "PLAIN"},
            "sasl_mechanism set, but security_protocol='PLAINTEXT' does not use SASL",
        ),
        (
            {"security_protocol": "SSL", "ssl_context": ssl.create_default_context(),
             "ssl_check_hostname": False},
            "ssl_context is given together with ssl_check_hostname",
        ),
    ],
)  # fmt: skip
def test_security_rules_between_fields(settings: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        make(**settings)
    assert message in str(caught.value)


def test_key_file_needs_a_certificate(tmp_path: Path) -> None:
    key = tmp_path / "key.pem"
    key.write_text("x")
    with pytest.raises(ConfigError, match="set ssl_certfile"):
        make(security_protocol="SSL", ssl_keyfile=str(key))


def test_valid_security_configurations() -> None:
    token_provider = lambda: "token"  # noqa: E731
    oauth = make(
        security_protocol="SASL_SSL",
        sasl_mechanism="oauthbearer",
        sasl_oauth_token_provider=token_provider,
    )
    assert oauth.sasl_mechanism == "OAUTHBEARER"
    context = ssl.create_default_context()
    assert make(security_protocol="SSL", ssl_context=context).ssl_context is context
    assert make(security_protocol="ssl").security_protocol == "SSL"
    assert make().security_protocol == "PLAINTEXT" and make().ssl_check_hostname is True


def test_metadata_recovery_settings_from_java_properties_reach_the_network_settings() -> None:
    from kafkaline.net.settings import NetworkSettings

    config = ProducerConfig.from_properties(
        {
            "bootstrap.servers": SERVERS,
            "metadata.recovery.strategy": "none",
            "metadata.recovery.rebootstrap.trigger.ms": "1000",
        }
    )
    settings = NetworkSettings.from_config(config)
    assert (
        settings.metadata_recovery_strategy,
        settings.metadata_recovery_rebootstrap_trigger_ms,
    ) == (
        "none",
        1000,
    )
    assert (
        NetworkSettings.from_config(
            ProducerConfig.from_kwargs(bootstrap_servers=SERVERS)
        ).metadata_recovery_strategy
        == "rebootstrap"
    )
