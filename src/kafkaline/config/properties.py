"""Java-style properties (``"linger.ms": "5"``) made into typed settings: the one place where
property strings become types, including ``sasl.jaas.config`` and librdkafka's names."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

from kafkaline.config.settings import (
    BY_JAVA_NAME,
    BY_NAME,
    JAVA_KEYS_WITHOUT_MEANING,
    JAVA_LEVEL_KEYS,
    LIBRDKAFKA_NAMES,
    Kind,
    check_int,
    invalid_value,
    unknown_key_error,
)
from kafkaline.config.values import LEVEL_RANGES
from kafkaline.errors import ConfigError

__all__ = ["ignored_java_properties", "settings_from_properties"]

# Messages keep the logger of the module this came from.
_log = logging.getLogger("kafkaline.config")


def settings_from_properties(properties: Mapping[str, object]) -> dict[str, Any]:
    """:meth:`ProducerConfig.from_properties <kafkaline.config.ProducerConfig.from_properties>`:
    the typed, validated keyword settings of Java-style ``properties``."""
    values: dict[str, Any] = {}
    given_as: dict[str, str] = {}
    levels: dict[str, object] = {}
    for key, raw in properties.items():
        if not isinstance(key, str):
            raise ConfigError(f"{key!r} is not a producer setting: keys are strings")
        if key in JAVA_KEYS_WITHOUT_MEANING:
            continue  # warned about below, all in one line
        if key in JAVA_LEVEL_KEYS:
            levels[JAVA_LEVEL_KEYS[key]] = _parse_property(key, "optional_int", raw)
            continue
        if key == _JAAS_KEY:
            for name, value in _parse_jaas_config(raw).items():
                if name in given_as:
                    raise ConfigError(f"{name} is given twice, as {given_as[name]!r} and {key!r}")
                given_as[name] = key
                values[name] = BY_NAME[name].validate(key, value)
            continue
        java_key, factor = LIBRDKAFKA_NAMES.get(key, (key, 1))
        setting = BY_JAVA_NAME.get(java_key) or BY_NAME.get(key)
        if setting is None:
            raise unknown_key_error(key, java_names_allowed=True)
        if setting.name in given_as:
            raise ConfigError(
                f"{setting.name} is given twice, as {given_as[setting.name]!r} and {key!r}"
            )
        given_as[setting.name] = key
        value = _parse_property(key, setting.kind, raw)
        if factor != 1 and isinstance(value, int) and not isinstance(value, bool):
            value *= factor
        values[setting.name] = setting.validate(key, value)
    _apply_compression_levels(values, levels)
    if "bootstrap_servers" not in values:
        raise ConfigError("bootstrap.servers is required: e.g. 'localhost:9092'")
    ignored = ignored_java_properties(properties)
    if ignored:
        _log.warning(
            "ignoring Java client settings that have no meaning in kafkaline: %s",
            ", ".join(ignored),
        )
    return values


def _apply_compression_levels(values: dict[str, Any], levels: dict[str, object]) -> None:
    """Check each ``compression.<codec>.level``; the one of compression.type becomes
    ``compression_level`` unless that was given."""
    codec = values.get("compression_type", "none")
    for level_codec, level in levels.items():
        # Java validates every codec's level but only uses the one of compression.type.
        key = f"compression.{level_codec}.level"
        if level is not None and not (level_codec == "gzip" and level == -1):
            low, high = LEVEL_RANGES[level_codec]
            check_int(key, level, low, high)
        if level_codec == codec and "compression_level" not in values:
            values["compression_level"] = level


def ignored_java_properties(properties: Iterable[object]) -> list[str]:
    """The keys among ``properties`` that from_properties() accepts but ignores: documented
    Java client settings with no meaning here (``client.dns.lookup``, ``metric.reporters``...).

    >>> ignored_java_properties(["linger.ms", "client.dns.lookup", "metrics.num.samples"])
    ['client.dns.lookup', 'metrics.num.samples']
    """
    return sorted(
        key for key in properties if isinstance(key, str) and key in JAVA_KEYS_WITHOUT_MEANING
    )


# --------------------------------------------------------------------------- property parsing

_TRUE_FALSE: Final = {"true": True, "false": False}

_JAAS_KEY: Final = "sasl.jaas.config"
# One JAAS entry: `<LoginModule class> <flag> key="value" ...;`. Values are quoted; Java allows
# backslash escapes inside the quotes.
_JAAS_ENTRY = re.compile(r"^\s*(?P<module>[\w.$]+)\s+(?P<flag>\w+)(?P<options>.*?);?\s*$", re.S)
_JAAS_OPTION = re.compile(
    r'\s*(?P<name>[\w.]+)\s*=\s*(?:"(?P<quoted>(?:[^"\\]|\\.)*)"|(?P<bare>[^\s;]+))'
)
_JAAS_MODULES: Final = frozenset(
    {
        "org.apache.kafka.common.security.plain.PlainLoginModule",
        "org.apache.kafka.common.security.scram.ScramLoginModule",
    }
)


def _parse_jaas_config(raw: object) -> dict[str, object]:
    """``sasl.jaas.config`` for PLAIN or SCRAM: the user name and password in it.

    Only the PlainLoginModule/ScramLoginModule options ``username`` and ``password`` are read;
    messages never echo the text, which holds a password.
    """
    if not isinstance(raw, str):
        raise ConfigError(f"{_JAAS_KEY} is invalid: must be a string (the value is not shown)")
    match = _JAAS_ENTRY.match(raw)
    if match is None:
        raise ConfigError(
            f'{_JAAS_KEY} is invalid: expected \'<LoginModule> required username="..." '
            'password="...";\' (the value is not shown)'
        )
    module = match.group("module")
    if module.endswith("OAuthBearerLoginModule"):
        raise ConfigError(
            f"{_JAAS_KEY} with {module} is not supported: give a token provider as "
            "sasl_oauth_token_provider"
        )
    if module not in _JAAS_MODULES:
        raise ConfigError(
            f"{_JAAS_KEY} names {module}; kafkaline supports {' and '.join(sorted(_JAAS_MODULES))}"
        )
    options: dict[str, str] = {}
    rest = match.group("options")
    position = 0
    while rest[position:].strip():
        option = _JAAS_OPTION.match(rest, position)
        if option is None:
            raise ConfigError(
                f'{_JAAS_KEY} is invalid after {module}: options must be name="value" '
                "(the value is not shown)"
            )
        quoted = option.group("quoted")
        value = re.sub(r"\\(.)", r"\1", quoted) if quoted is not None else option.group("bare")
        options[option.group("name")] = value
        position = option.end()
    missing = [name for name in ("username", "password") if name not in options]
    if missing:
        raise ConfigError(f"{_JAAS_KEY} for {module} has no {' and no '.join(missing)}")
    return {"sasl_plain_username": options["username"], "sasl_plain_password": options["password"]}


def _parse_property(key: str, kind: Kind, raw: object) -> object:
    """Turn one property value into its typed form; typed values pass through unchanged."""
    if not isinstance(raw, str):
        return raw
    text = raw.strip()
    if kind in ("int", "optional_int", "compression_level"):
        if kind == "optional_int" and text == "":
            return None
        try:
            return int(text)
        except ValueError:
            raise invalid_value(key, raw, "must be an integer") from None
    if kind in ("bool", "optional_bool"):
        if text.lower() in _TRUE_FALSE:
            return _TRUE_FALSE[text.lower()]
        raise invalid_value(key, raw, "must be true or false")
    if kind == "acks":
        if text.lower() == "all":
            return "all"
        if text in ("0", "1", "-1"):
            return int(text)
        raise invalid_value(key, raw, "must be one of 0, 1, -1 or all")
    if kind == "compression_type":
        return text.lower()
    if kind == "optional_str":
        return text or None
    if kind == "serializer":
        from kafkaline.producer.serializers import serializer_for_name

        return _resolve_name(key, raw, serializer_for_name)
    if kind == "partitioner":
        from kafkaline.producer.partitioner import partitioner_for_name

        return _resolve_name(key, raw, partitioner_for_name)
    if kind == "interceptors":
        if text:
            raise invalid_value(key, raw, "interceptors must be given as objects, not class names")
        return ()
    if kind == "str":
        return text  # Java trims string settings
    if kind in ("security_protocol", "sasl_mechanism"):
        return text.upper() if text else None
    if kind == "hostname_check":
        # Java's ssl.endpoint.identification.algorithm: "https" checks, "" does not; our own
        # key (ssl_check_hostname) takes true/false.
        lowered = text.lower()
        if lowered in ("https", "true"):
            return True
        if lowered in ("", "false"):
            return False
        raise invalid_value(key, raw, "must be 'https' (check the host name) or '' (do not)")
    if kind == "object":
        raise ConfigError(f"{key} must be given as an object, not a string")
    return raw  # "servers" (the validator splits and trims); "secret" (kept exactly)


def _resolve_name(key: str, raw: str, lookup: Callable[[str], object]) -> object:
    try:
        return lookup(raw.strip())
    except LookupError as error:
        raise invalid_value(key, raw, str(error.args[0])) from None
