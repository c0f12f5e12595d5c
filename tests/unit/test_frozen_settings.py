"""ProducerConfig's class maker, ``frozen_settings``: what @dataclass would do, by a loop."""

from __future__ import annotations

import dataclasses
import pickle
from typing import Any

import pytest

from kafkaline.config import ProducerConfig


def build(**settings: Any) -> ProducerConfig:
    return ProducerConfig(**settings)


def test_unknown_and_missing_keywords_are_type_errors_naming_them() -> None:
    with pytest.raises(TypeError, match="unexpected keyword argument 'lingr_ms'"):
        build(bootstrap_servers="h:1", lingr_ms=5)
    with pytest.raises(TypeError, match="missing 1 required keyword-only argument: 'bootstrap"):
        build(linger_ms=5)
    with pytest.raises(TypeError):
        ProducerConfig("h:1")  # type: ignore[call-arg, arg-type]


def test_fields_left_out_take_their_defaults_and_resolved_ones_are_not_arguments() -> None:
    config = build(bootstrap_servers="h:1")
    assert config.linger_ms == 5 and config.transactional_id is None
    with pytest.raises(TypeError, match="'_idempotent'"):
        build(bootstrap_servers="h:1", _idempotent=False)
    with pytest.raises(dataclasses.FrozenInstanceError):
        del config.linger_ms


def test_equality_hash_and_repr_use_the_fields() -> None:
    config = build(bootstrap_servers="h:1", acks=1)
    same = build(bootstrap_servers="h:1", acks=1)
    other = build(bootstrap_servers="h:1", acks=0)
    assert config == same and hash(config) == hash(same)
    assert config != other and config != object()
    assert repr(config).startswith("ProducerConfig(bootstrap_servers=('h:1',), client_id='', ")
    assert "_idempotent" not in repr(config)
    assert pickle.loads(pickle.dumps(config)) == config
    assert config.with_changes(acks=0) == other


def test_positional_arguments_where_the_class_allows_them() -> None:
    from kafkaline.config import ExponentialBackoff

    args: Any = (10, 80, 2, 0.0, 5)
    assert ExponentialBackoff(10, 80) == ExponentialBackoff(initial_ms=10, max_ms=80)
    assert repr(ExponentialBackoff(10, 80)) == (
        "ExponentialBackoff(initial_ms=10, max_ms=80, multiplier=2, jitter=0.2)"
    )
    with pytest.raises(TypeError, match="takes 5 positional arguments but 6 were given"):
        ExponentialBackoff(*args)
    with pytest.raises(TypeError, match="multiple values for 'initial_ms'"):
        ExponentialBackoff(10, **{"initial_ms": 20, "max_ms": 80})
    with pytest.raises(dataclasses.FrozenInstanceError):
        ExponentialBackoff(10, 80).max_ms = 5  # type: ignore[misc]
    backoff = ExponentialBackoff(10, 80, jitter=0.0)
    assert pickle.loads(pickle.dumps(backoff)) == backoff
    assert hash(backoff) == hash(ExponentialBackoff(10, 80, 2, 0.0))
