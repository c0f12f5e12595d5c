"""Producer settings from the command line: file < properties < tool options."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkaline.cli.producer_options import assemble_properties, producer_config
from kafkaline.errors import ConfigError


def test_precedence_file_then_properties_then_options(tmp_path: Path) -> None:
    config_file = tmp_path / "producer.properties"
    config_file.write_text("bootstrap.servers=file:1\nlinger.ms=100\nacks=0\nbatch.size=10\n")
    properties = assemble_properties(
        config_file=str(config_file),
        property_arguments=["linger.ms=50", "acks=1"],
        property_option="--producer-property",
        option_values={"acks": "all", "batch.size": None},
        client_id="tool",
    )
    assert properties == {
        "bootstrap.servers": "file:1",
        "linger.ms": "50",
        "acks": "all",
        "batch.size": "10",
        "client.id": "tool",
    }
    config = producer_config(properties)
    assert (config.linger_ms, config.acks, config.batch_size, config.client_id) == (
        50, -1, 10, "tool",
    )  # fmt: skip


@pytest.mark.parametrize("given", ["client.id=mine", "client_id=mine"])
def test_a_given_client_id_is_kept(given: str) -> None:
    properties = assemble_properties(
        config_file=None,
        property_arguments=[given, "bootstrap.servers=h:1"],
        property_option="--producer-props",
        option_values={},
        client_id="tool",
    )
    assert producer_config(properties).client_id == "mine"


def test_a_bad_value_is_a_config_error_naming_the_key() -> None:
    properties = assemble_properties(
        config_file=None,
        property_arguments=["bootstrap.servers=h:1", "max.block.ms=-5"],
        property_option="--producer-props",
        option_values={},
        client_id="tool",
    )
    with pytest.raises(ConfigError, match=r"max\.block\.ms"):
        producer_config(properties)
