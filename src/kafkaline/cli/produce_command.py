"""``kafkaline produce``: the console producer (Java's ``kafka-console-producer.sh``).

Reads lines from standard input (or ``--input FILE``), turns each into a record with the
:mod:`line reader <kafkaline.cli.line_reader>` and sends it. Failed records are reported on
stderr as they fail; a summary line ends the run; the exit status is non-zero when any record
failed. Ctrl-C stops reading, delivers what was accepted (for at most
:data:`INTERRUPT_FLUSH_TIMEOUT_S`), reports and exits with 130.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from functools import partial
from typing import Final

from kafkaline import ConfigError, KafkaTimeoutError, Producer, ProducerConfig
from kafkaline.cli.delivery_report import DeliveryReport
from kafkaline.cli.exit_status import ExitStatus
from kafkaline.cli.input_lines import InputSource, open_input, read_lines, strip_line_ending
from kafkaline.cli.line_reader import READER_PROPERTIES, LineParser, ReaderOptions
from kafkaline.cli.producer_options import assemble_properties, producer_config
from kafkaline.cli.progress import ProgressBar
from kafkaline.cli.properties import parse_key_value_arguments
from kafkaline.cli.topic_admin import validate_topic_name
from kafkaline.cli.topic_check import require_topic
from kafkaline.config import COMPRESSION_TYPES
from kafkaline.errors import BufferExhaustedError, RecordTooLargeError

#: After Ctrl-C, how long accepted records may take to be delivered before they are dropped.
INTERRUPT_FLUSH_TIMEOUT_S: Final = 10.0
#: After a fatal error (a bad input line, ...), the same bound for what was accepted before it.
ERROR_CLOSE_TIMEOUT_S: Final = 10.0
_CLIENT_ID: Final = "kafkaline-console-producer"
_PROMPT: Final = ">"
# Errors send() raises for one record only: report the record, keep reading (Java reports
# these through the record's callback and carries on too).
_RECORD_ERRORS: Final = (RecordTooLargeError, BufferExhaustedError)


_JAVA_SETTING_FLAGS: Final = {
    "--max-block-ms": "max.block.ms",
    "--request-timeout-ms": "request.timeout.ms",
    "--message-send-max-retries": "retries",
    "--retry-backoff-ms": "retry.backoff.ms",
    "--max-memory-bytes": "buffer.memory",
    "--metadata-expiry-ms": "metadata.max.age.ms",
}


def add_parser(subcommands: argparse._SubParsersAction[argparse.ArgumentParser],
               parent: argparse.ArgumentParser) -> None:  # fmt: skip
    """Register ``produce`` with the Java console producer's option names."""
    parser = subcommands.add_parser(
        "produce",
        parents=[parent],
        help="send lines of input as records (the console producer)",
        description=(
            "Read lines from standard input (or --input FILE) and send each as a record to "
            "--topic. Reader properties (--property): " + ", ".join(READER_PROPERTIES) + "."
        ),
    )
    parser.add_argument("--topic", required=True, help="the topic to send to")
    parser.add_argument(
        "--bootstrap-server",
        "--broker-list",
        dest="bootstrap_server",
        metavar="HOST:PORT[,...]",
        help="the broker(s) to connect to (else bootstrap.servers from the properties); "
        "--broker-list is the old Java name",
    )
    _add_input_arguments(parser)
    _add_producer_arguments(parser)
    parser.set_defaults(run=run)


def _add_input_arguments(parser: argparse.ArgumentParser) -> None:
    """Where lines come from, how they become records, how they are sent."""
    parser.add_argument(
        "--property",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a line reader property, e.g. parse.key=true (repeatable)",
    )
    parser.add_argument(
        "--input",
        metavar="FILE",
        help="read lines from FILE ('-' for standard input) and show a progress bar on a terminal",
    )
    parser.add_argument(
        "--sync", action="store_true", help="wait for each record's acknowledgement in turn"
    )


def _add_producer_arguments(parser: argparse.ArgumentParser) -> None:
    """The producer's settings: the Java console producer's flags, then properties."""
    parser.add_argument(
        "--compression-codec",
        nargs="?",
        const="gzip",
        choices=COMPRESSION_TYPES,
        metavar="CODEC",
        help=f"compression.type: one of {', '.join(COMPRESSION_TYPES)} (gzip without a value)",
    )
    parser.add_argument("--batch-size", metavar="BYTES", help="batch.size")
    parser.add_argument(
        "--timeout", metavar="MS", help="linger.ms: how long a batch waits for more records"
    )
    parser.add_argument("--request-required-acks", metavar="ACKS", help="acks: 0, 1, -1 or all")
    # The Java console producer's other producer-setting flags, each one property.
    for flag, java_name in _JAVA_SETTING_FLAGS.items():
        parser.add_argument(flag, metavar="N", help=java_name)
    parser.add_argument(
        "--producer-property",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a producer property, e.g. linger.ms=5 (repeatable)",
    )
    parser.add_argument(
        "--producer.config",
        "--command-config",
        dest="producer_config",
        metavar="FILE",
        help="a Java properties file of producer properties (--command-config: the Java "
        "tool's newer name)",
    )


def run(args: argparse.Namespace) -> int:
    """Validate everything, open the input, then send line after line."""
    validate_topic_name(args.topic)
    line_parser = LineParser(
        ReaderOptions.from_properties(parse_key_value_arguments(args.property, "--property"))
    )
    config = _config_from(args)
    with open_input(args.input) as source:
        return _produce(args, config, line_parser, source)


def _config_from(args: argparse.Namespace) -> ProducerConfig:
    properties = assemble_properties(
        config_file=args.producer_config,
        property_arguments=args.producer_property,
        property_option="--producer-property",
        option_values={
            "bootstrap.servers": args.bootstrap_server,
            "compression.type": args.compression_codec,
            "batch.size": args.batch_size,
            "linger.ms": args.timeout,
            "acks": args.request_required_acks,
            **{
                java_name: getattr(args, flag.removeprefix("--").replace("-", "_"))
                for flag, java_name in _JAVA_SETTING_FLAGS.items()
            },
        },
        client_id=_CLIENT_ID,
    )
    if "bootstrap.servers" not in properties and "bootstrap_servers" not in properties:
        raise ConfigError(
            "no broker to connect to: give --bootstrap-server HOST:PORT (or bootstrap.servers "
            "in --producer.config or --producer-property)"
        )
    return producer_config(properties)


def _produce(
    args: argparse.Namespace, config: ProducerConfig, line_parser: LineParser, source: InputSource
) -> int:
    report = DeliveryReport(sys.stderr)
    started = time.monotonic()
    lines_read = 0
    producer = Producer(config)
    try:
        require_topic(
            producer,
            args.topic,
            config.bootstrap_servers,
            config.max_block_ms,
            plaintext=config.security_protocol == "PLAINTEXT",
        )
        progress = _progress_bar(args, source, started)
        prompt = _print_prompt if source.interactive else None
        bytes_read = 0
        for raw_line in read_lines(source.stream, prompt):
            lines_read += 1
            bytes_read += len(raw_line)
            record = line_parser.parse(strip_line_ending(raw_line), lines_read)
            on_failure = partial(report.failed, lines_read)
            try:
                future = producer.send(args.topic, record.value, record.key, record.headers or None)
            except _RECORD_ERRORS as error:
                on_failure(error)
                continue
            if args.sync:
                try:
                    report.acknowledged(future.get())
                except Exception as error:  # the record's own failure: report, go on
                    on_failure(error)
            else:
                future.add_both(report.acknowledged, on_failure)
            if progress is not None:
                progress.update(lines_read, bytes_read, time.monotonic())
        if source.interactive:
            print(file=sys.stdout, flush=True)  # end the last prompt's line
        producer.flush()
        if progress is not None:
            progress.finish(lines_read, bytes_read, time.monotonic())
    except KeyboardInterrupt:
        _deliver_after_interrupt(producer)
        report.write_summary(time.monotonic() - started, interrupted=True)
        return ExitStatus.INTERRUPTED
    except BaseException:
        # Deliver what was accepted before the error, bounded; main reports the error itself.
        producer.close(ERROR_CLOSE_TIMEOUT_S)
        if lines_read:
            report.write_summary(time.monotonic() - started)
        raise
    producer.close()
    report.write_summary(time.monotonic() - started)
    return ExitStatus.RECORDS_FAILED if report.failures else ExitStatus.OK


def _deliver_after_interrupt(producer: Producer) -> None:
    """Flush for at most INTERRUPT_FLUSH_TIMEOUT_S; then drop what is left (those records
    fail, and are reported, with ProducerClosedError). A second Ctrl-C drops it at once."""
    print(
        f"\nkafkaline: interrupted; delivering the accepted records (up to "
        f"{INTERRUPT_FLUSH_TIMEOUT_S:g} s, Ctrl-C again to drop them)",
        file=sys.stderr,
        flush=True,
    )
    try:
        producer.flush(INTERRUPT_FLUSH_TIMEOUT_S)
    except (KafkaTimeoutError, KeyboardInterrupt):
        # Out of time or patience: close(0) below fails what is left, and each is reported.
        print("kafkaline: dropping the records not delivered yet", file=sys.stderr, flush=True)
    finally:
        producer.close(0)


def _progress_bar(
    args: argparse.Namespace, source: InputSource, started: float
) -> ProgressBar | None:
    """A progress bar for --input on a terminal (stderr, so stdout stays clean)."""
    if args.input is None or source.interactive or not sys.stderr.isatty():
        return None
    width = shutil.get_terminal_size().columns
    return ProgressBar(sys.stderr, source.total_bytes, started, width)


def _print_prompt() -> None:
    sys.stdout.write(_PROMPT)
    sys.stdout.flush()
