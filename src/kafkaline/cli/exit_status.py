"""The exit statuses of the ``kafkaline`` command: one per kind of failure a script may test."""

from __future__ import annotations

import enum


class ExitStatus(enum.IntEnum):
    """What the process exit status means. Documented in docs/cli.md."""

    #: Everything asked for was done (every record acknowledged).
    OK = 0
    #: Some records were not delivered (each reported on stderr with its reason).
    RECORDS_FAILED = 1
    #: Bad command-line arguments (argparse uses 2 as well).
    USAGE = 2
    #: A bad producer property, reader property or properties file content.
    CONFIG = 3
    #: A file to read (input, properties, payload) is missing or unreadable.
    FILE = 4
    #: No bootstrap server could be reached, or none answered in time.
    BROKER_UNREACHABLE = 5
    #: The broker does not know the topic.
    UNKNOWN_TOPIC = 6
    #: A line of input cannot be parsed (e.g. no key separator under parse.key).
    BAD_INPUT = 7
    #: The feature asked for cannot run here: not implemented yet, or it needs packages that
    #: are not installed (``demo`` without pyspark names them).
    NOT_SUPPORTED = 8
    #: Any other error reported by kafkaline or the broker.
    KAFKA_ERROR = 9
    #: An unexpected error: a bug in kafkaline (``--verbose`` shows the traceback).
    INTERNAL = 70
    #: Stopped by Ctrl-C (SIGINT), as shells report it: 128 + 2.
    INTERRUPTED = 130
