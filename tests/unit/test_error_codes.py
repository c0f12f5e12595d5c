"""Broker error codes to classes (kafkaline.errors.error_for_code / raise_for_code)."""

from __future__ import annotations

import pickle

import pytest

from kafkaline.errors import (
    BrokerError,
    MessageTooLargeError,
    NotLeaderOrFollowerError,
    TransactionAbortableError,
    UnknownServerError,
    error_for_code,
    raise_for_code,
)

# The codes Kafka defines (org.apache.kafka.common.protocol.Errors): -1, then 1 to 120.
KNOWN_CODES = [-1, *range(1, 121)]


@pytest.mark.parametrize("code", KNOWN_CODES)
def test_every_known_code_has_its_own_class(code: int) -> None:
    cls = error_for_code(code)
    assert issubclass(cls, BrokerError)
    assert cls.code == code
    assert cls.__module__ == "kafkaline.errors"


def test_each_class_serves_one_code() -> None:
    classes = [error_for_code(code) for code in KNOWN_CODES]
    assert len(set(classes)) == len(classes)


def test_some_codes_by_name() -> None:
    assert error_for_code(-1) is UnknownServerError
    assert error_for_code(6) is NotLeaderOrFollowerError
    assert error_for_code(10) is MessageTooLargeError
    assert error_for_code(120) is TransactionAbortableError


def test_an_unknown_code_keeps_its_number() -> None:
    cls = error_for_code(9999)
    assert issubclass(cls, BrokerError)
    assert cls.code == 9999
    with pytest.raises(BrokerError, match="9999"):
        raise cls("from a newer broker")


def test_raise_for_code() -> None:
    raise_for_code(0)  # no error: returns
    with pytest.raises(MessageTooLargeError, match="too big"):
        raise_for_code(10, "too big")


def test_a_known_error_pickles_to_its_class() -> None:
    error = pickle.loads(pickle.dumps(NotLeaderOrFollowerError("moved")))
    assert type(error) is NotLeaderOrFollowerError
