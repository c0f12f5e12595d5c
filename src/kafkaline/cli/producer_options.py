"""Producer settings from the command line, shared by ``produce`` and ``perf``.

Precedence, as in the Java tools: the ``--producer.config`` file, then the ``KEY=VALUE``
properties (``--producer-property``/``--producer-props``), then the tool's own options
(``--bootstrap-server``, ``--batch-size``, ...), each overriding the one before. Everything
goes through :meth:`kafkaline.ProducerConfig.from_properties`, so a bad value is the same
ConfigError, naming the key, that the library raises.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kafkaline import ProducerConfig
from kafkaline.cli.properties import load_properties_file, parse_key_value_arguments

# A property may be given by its Java name or by kafkaline's; both count as "set".
_CLIENT_ID_KEYS = ("client.id", "client_id")


def assemble_properties(
    *,
    config_file: str | None,
    property_arguments: Sequence[str],
    property_option: str,
    option_values: Mapping[str, str | None],
    client_id: str,
) -> dict[str, str]:
    """The merged producer properties. ``option_values`` maps a Java property name to the
    value of the tool option that sets it (None: the option was not given); ``client_id`` is
    used unless a client.id was given (the brokers' logs then name the tool).

    >>> assemble_properties(config_file=None, property_arguments=["linger.ms=50", "acks=1"],
    ...                     property_option="--producer-property",
    ...                     option_values={"bootstrap.servers": "h:9092", "linger.ms": "7",
    ...                                    "batch.size": None},
    ...                     client_id="kafkaline-console-producer")
    ... # doctest: +NORMALIZE_WHITESPACE
    {'linger.ms': '7', 'acks': '1', 'bootstrap.servers': 'h:9092',
     'client.id': 'kafkaline-console-producer'}
    """
    properties: dict[str, str] = {}
    if config_file is not None:
        properties.update(load_properties_file(config_file))
    properties.update(parse_key_value_arguments(property_arguments, property_option))
    for key, value in option_values.items():
        if value is not None:
            properties[key] = value
    if not any(key in properties for key in _CLIENT_ID_KEYS):
        properties["client.id"] = client_id
    return properties


def producer_config(properties: Mapping[str, str]) -> ProducerConfig:
    """Validate the merged properties (ConfigError naming the key when one is bad).

    The tools send the bytes they read or make, as Java's console and perf producers do (they
    set ByteArraySerializer themselves), so serializers in a Java client.properties are
    checked, then left out.

    >>> config = producer_config({"bootstrap.servers": "h:9092", "value.serializer":
    ...     "org.apache.kafka.common.serialization.StringSerializer"})
    >>> config.value_serializer is None
    True
    """
    config = ProducerConfig.from_properties(properties)
    return config.with_changes(key_serializer=None, value_serializer=None)
