"""From an exception to what the user sees: one line on stderr and a distinct exit status.

A user of a command line wants to know what went wrong and what to fix, not where in our code
it happened; ``--verbose`` prints the full message and the traceback for a bug report.
"""

from __future__ import annotations

import traceback
from typing import TextIO

from kafkaline.cli.errors import CliError
from kafkaline.cli.exit_status import ExitStatus
from kafkaline.errors import (
    AuthenticationError,
    ConfigError,
    KafkaConnectionError,
    KafkaError,
    UnknownTopicOrPartitionError,
)

PROGRAM = "kafkaline"

# OSErrors about a file the user named, as opposed to sockets (ConnectionError, TimeoutError).
_FILE_ERRORS = (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError)


def exit_status_for(error: BaseException) -> ExitStatus:
    """The exit status the command ends with when ``error`` stops it.

    >>> exit_status_for(FileNotFoundError(2, "No such file or directory", "x.properties"))
    <ExitStatus.FILE: 4>
    >>> exit_status_for(ConfigError("linger.ms='x' is invalid: must be an integer"))
    <ExitStatus.CONFIG: 3>
    """
    if isinstance(error, CliError):
        return error.exit_status
    if isinstance(error, KeyboardInterrupt):
        return ExitStatus.INTERRUPTED
    if isinstance(error, ConfigError):
        return ExitStatus.CONFIG
    if isinstance(error, UnknownTopicOrPartitionError):
        return ExitStatus.UNKNOWN_TOPIC
    if isinstance(error, KafkaConnectionError):
        return ExitStatus.BROKER_UNREACHABLE
    # AuthenticationError is also a PermissionError, but it is the broker's refusal.
    if isinstance(error, _FILE_ERRORS) and not isinstance(error, AuthenticationError):
        return ExitStatus.FILE
    if isinstance(error, KafkaError):
        return ExitStatus.KAFKA_ERROR
    if isinstance(error, (ConnectionError, TimeoutError)):
        return ExitStatus.BROKER_UNREACHABLE
    return ExitStatus.INTERNAL


def one_line_description(error: BaseException) -> str:
    """The error as a single line: its message's first line, or for an unexpected error its
    type too (the message of a bare ``KeyError`` alone says little).

    >>> one_line_description(FileNotFoundError(2, "No such file or directory", "in.txt"))
    'in.txt: No such file or directory'
    >>> one_line_description(ValueError("first\\nsecond"))
    'ValueError: first (more with --verbose)'
    """
    if isinstance(error, OSError) and error.filename is not None and error.strerror:
        return f"{error.filename}: {error.strerror}"
    message = str(error).strip()
    first_line, _, rest = message.partition("\n")
    if exit_status_for(error) is ExitStatus.INTERNAL or not first_line:
        first_line = f"{type(error).__name__}: {first_line}" if first_line else type(error).__name__
    if rest.strip():
        first_line += " (more with --verbose)"
    return first_line


def report_error(error: BaseException, stream: TextIO, *, verbose: bool) -> ExitStatus:
    """Write ``error`` to ``stream`` (one line, or the traceback when verbose) and return the
    exit status to end with."""
    status = exit_status_for(error)
    if verbose:
        traceback.print_exception(type(error), error, error.__traceback__, file=stream)
    line = one_line_description(error)
    if status is ExitStatus.INTERNAL and not verbose:
        line += "; this is a bug in kafkaline, run with --verbose for the traceback"
    stream.write(f"{PROGRAM}: error: {line}\n")
    stream.flush()
    return status
