"""``kafkaline``: the command line's entry point (console script and ``python -m kafkaline``).

Every command module registers its parser with ``add_parser`` and its work with
``set_defaults(run=...)``; :func:`main` parses, runs, and turns an escaping error into one
line on stderr and its exit status (:mod:`kafkaline.cli.exit_status`).
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from kafkaline import __version__
from kafkaline.cli import (
    broker_command,
    consume_command,
    demo_command,
    perf_command,
    produce_command,
    topics_command,
)
from kafkaline.cli.error_report import PROGRAM, report_error
from kafkaline.cli.exit_status import ExitStatus

_LOG_FORMAT = f"{PROGRAM}: %(levelname)s: %(name)s: %(message)s"


def build_parser() -> argparse.ArgumentParser:
    """The whole command line: global options and one subcommand per command."""
    # --verbose is accepted before and after the subcommand. SUPPRESS keeps a subcommand's
    # parser from resetting a value the main parser already set.
    verbose_after = argparse.ArgumentParser(add_help=False)
    verbose_after.add_argument(
        "-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help=_VERBOSE_HELP
    )
    parser = argparse.ArgumentParser(
        prog=PROGRAM,
        description="kafkaline's command line: a console producer and consumer, a producer "
        "perf test, a local broker and topic management.",
        epilog="Run 'kafkaline COMMAND --help' for a command's options.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help=_VERBOSE_HELP)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    produce_command.add_parser(commands, verbose_after)
    perf_command.add_parser(commands, verbose_after)
    consume_command.add_parser(commands, verbose_after)
    broker_command.add_parser(commands, verbose_after)
    topics_command.add_parser(commands, verbose_after)
    demo_command.add_parser(commands, verbose_after)
    _remember_parsers(parser)
    return parser


def _remember_parsers(parser: argparse.ArgumentParser) -> None:
    """Let every (sub)command's parser put itself into the namespace it parses: the deepest
    one parsed wins, so main() can report an unknown flag with that command's usage."""
    parser.set_defaults(usage_parser=parser)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for subparser in set(action.choices.values()):
                _remember_parsers(subparser)


_VERBOSE_HELP = "show tracebacks and the library's informational log messages"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the process exit status."""
    # An unknown flag is reported with the usage of the command it was given to, not the
    # top level's (argparse hands a subcommand's leftovers up to the main parser).
    args, unknown = build_parser().parse_known_args(argv)
    if unknown:
        usage_parser: argparse.ArgumentParser = args.usage_parser
        usage_parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    verbose: bool = args.verbose
    try:
        with _library_logging(verbose):
            status: int = args.run(args)
    except KeyboardInterrupt:
        # Commands that have something to clean up on Ctrl-C handle it themselves.
        print(f"\n{PROGRAM}: interrupted", file=sys.stderr)
        return ExitStatus.INTERRUPTED
    except BrokenPipeError:
        return _exit_on_broken_pipe()
    except Exception as error:
        return report_error(error, sys.stderr, verbose=verbose)
    return status


@contextmanager
def _library_logging(verbose: bool) -> Iterator[None]:
    """Show the library's log messages on stderr while the command runs; put the logger back
    as it was afterwards, so main() called in-process (tests) leaves no trace."""
    library_logger = logging.getLogger("kafkaline")
    previous_level = library_logger.level
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(_LOG_FORMAT))
    library_logger.addHandler(handler)
    # Without --verbose only errors: a retried connection attempt is not the user's concern,
    # and the command reports what failed in the end in its own words.
    library_logger.setLevel(logging.INFO if verbose else logging.ERROR)
    # Warnings about the user's own settings (Java keys ignored, host name checks off) are
    # the user's concern.
    config_logger = logging.getLogger("kafkaline.config")
    previous_config_level = config_logger.level
    config_logger.setLevel(logging.INFO if verbose else logging.WARNING)
    try:
        yield
    finally:
        library_logger.removeHandler(handler)
        library_logger.setLevel(previous_level)
        config_logger.setLevel(previous_config_level)


def _exit_on_broken_pipe() -> int:
    # The reader of our stdout went away (``kafkaline topics list | head -1``). Point stdout
    # at /dev/null so that flushing it at exit does not raise a second time.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return 128 + signal.SIGPIPE
