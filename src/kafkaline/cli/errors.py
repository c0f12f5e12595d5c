"""Errors the command line raises itself, each with the exit status it ends the process with.

They hang off kafkaline's root :class:`~kafkaline.errors.KafkaError` like every other error,
and subclass the matching builtin where there is one.
"""

from __future__ import annotations

from typing import ClassVar

from kafkaline.cli.exit_status import ExitStatus
from kafkaline.errors import KafkaError


class CliError(KafkaError):
    """An error the command line reports as one line and ends with :attr:`exit_status`."""

    exit_status: ClassVar[ExitStatus] = ExitStatus.KAFKA_ERROR


class UsageError(CliError, ValueError):
    """A command-line argument is invalid in a way argparse cannot check (e.g. a topic name)."""

    exit_status = ExitStatus.USAGE


class InputLineError(CliError, ValueError):
    """A line of input cannot be turned into a record (e.g. no key separator under
    ``parse.key=true``); the message names the line number."""

    exit_status = ExitStatus.BAD_INPUT


class BrokerUnreachableError(CliError, ConnectionError):
    """None of the bootstrap servers could be reached or answered in time."""

    exit_status = ExitStatus.BROKER_UNREACHABLE


class UnknownTopicError(CliError, LookupError):
    """The broker does not know the topic."""

    exit_status = ExitStatus.UNKNOWN_TOPIC


class NotSupportedError(CliError):
    """The command asks for something kafkaline cannot do here: a feature not implemented
    yet, or one that needs packages that are not installed (``demo`` without pyspark)."""

    exit_status = ExitStatus.NOT_SUPPORTED


class RecordsFailedError(CliError):
    """Some records were not delivered; each was reported on stderr as it failed."""

    exit_status = ExitStatus.RECORDS_FAILED
