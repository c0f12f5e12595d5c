"""``kafkaline perf``: the producer perf test (Java's ``kafka-producer-perf-test.sh``).

Sends ``--num-records`` records as fast as allowed (``--throughput``), measures each record's
latency from send() to its acknowledgement, prints a window line every 5 s and a final line
with percentiles in the Java tool's shapes (see :mod:`kafkaline.cli.perf_stats`), or with
``--json`` one JSON object on stdout (the window lines then go to stderr).

Transactions as in the Java tool: with ``--transactional-id`` (or ``--transaction-duration-ms``
alone, which uses the id ``performance-producer-default-transactional-id``, or a
``transactional.id`` among the producer properties) the producer calls init_transactions(),
begins a transaction, commits it and begins the next once ``--transaction-duration-ms``
(default 3000) have passed since it began, and commits the last one at the end.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import threading
import time
from functools import partial
from typing import Final, TextIO

from kafkaline import ConfigError, KafkaTimeoutError, Producer, ProducerConfig
from kafkaline.cli.error_report import PROGRAM, one_line_description
from kafkaline.cli.errors import RecordsFailedError, UsageError
from kafkaline.cli.exit_status import ExitStatus
from kafkaline.cli.perf_payloads import load_payload_file, parse_delimiter, random_payload
from kafkaline.cli.perf_stats import (
    REPORTING_INTERVAL_MS,
    PerfStats,
    PerfSummary,
    Throttle,
    metrics_table,
)
from kafkaline.cli.producer_options import assemble_properties, producer_config
from kafkaline.cli.topic_admin import validate_topic_name
from kafkaline.cli.topic_check import require_topic

_CLIENT_ID: Final = "kafkaline-perf-producer"
#: Pauses shorter than this are not worth a sleep() call; the throttle catches up later.
_MIN_THROTTLE_SLEEP_S: Final = 0.001
#: Failed records printed one by one before they are only counted.
_MAX_FAILURES_SHOWN: Final = 10
#: After Ctrl-C, how long accepted records may take to be acknowledged before the totals.
_INTERRUPT_FLUSH_TIMEOUT_S: Final = 10.0
# The Java tool seeds its payload choice with 0 too: runs pick the same payloads.
_PAYLOAD_SEED: Final = 0
#: The Java tool's transactional id when only --transaction-duration-ms is given.
DEFAULT_TRANSACTIONAL_ID: Final = "performance-producer-default-transactional-id"
#: The Java tool's transaction duration when transactions are on and none is given.
DEFAULT_TRANSACTION_DURATION_MS: Final = 3000
# A transactional id may be given by its Java property name or by kafkaline's.
_TRANSACTIONAL_ID_KEYS: Final = ("transactional.id", "transactional_id")


def add_parser(subcommands: argparse._SubParsersAction[argparse.ArgumentParser],
               parent: argparse.ArgumentParser) -> None:  # fmt: skip
    """Register ``perf`` with the Java perf test's option names."""
    parser = subcommands.add_parser(
        "perf",
        parents=[parent],
        help="measure producer throughput and latency (the producer perf test)",
        description="Send --num-records records and report throughput and latency.",
    )
    parser.add_argument("--topic", required=True, help="the topic to send to")
    parser.add_argument(
        "--num-records", type=int, required=True, metavar="N", help="records to send"
    )
    _add_payload_arguments(parser)
    _add_producer_arguments(parser)
    _add_measurement_arguments(parser)
    parser.set_defaults(run=run)


def _add_payload_arguments(parser: argparse.ArgumentParser) -> None:
    """What to send, and how fast."""
    payload = parser.add_mutually_exclusive_group(required=True)
    payload.add_argument(
        "--record-size", type=int, metavar="BYTES", help="size of each record's value"
    )
    payload.add_argument(
        "--payload-file",
        metavar="FILE",
        help="send values picked at random from FILE, split at --payload-delimiter",
    )
    parser.add_argument(
        "--payload-delimiter",
        default="\\n",
        metavar="DELIMITER",
        help="what separates payloads in --payload-file (default: \\n, a newline)",
    )
    parser.add_argument(
        "--throughput",
        type=float,
        default=-1.0,
        metavar="RECORDS_PER_SEC",
        help="at most this many records per second on average; -1 (default): unlimited",
    )


def _add_producer_arguments(parser: argparse.ArgumentParser) -> None:
    """Where to send, and the producer's properties."""
    parser.add_argument(
        "--bootstrap-server",
        "--broker-list",
        dest="bootstrap_server",
        metavar="HOST:PORT[,...]",
        help="the broker(s) to connect to (else bootstrap.servers from the properties)",
    )
    parser.add_argument(
        "--producer-props",
        nargs="+",
        action="extend",
        default=[],
        metavar="KEY=VALUE",
        help="producer properties, e.g. acks=1 linger.ms=5",
    )
    parser.add_argument(
        "--producer.config",
        dest="producer_config",
        metavar="FILE",
        help="a Java properties file of producer properties",
    )
    parser.add_argument(
        "--command-config",
        dest="producer_config",
        metavar="FILE",
        help="the same as --producer.config (the Java tool's newer name)",
    )


def _add_measurement_arguments(parser: argparse.ArgumentParser) -> None:
    """What to measure and print, and the transactions to send in."""
    parser.add_argument(
        "--warmup-records",
        type=int,
        default=0,
        metavar="N",
        help="send the first N of --num-records before measuring; they are not in the results",
    )
    parser.add_argument(
        "--print-metrics", action="store_true", help="print the producer's metrics at the end"
    )
    parser.add_argument(
        "--transactional-id",
        metavar="ID",
        help="send in transactions under this transactional.id (overrides one in the "
        "producer properties)",
    )
    parser.add_argument(
        "--transaction-duration-ms",
        type=int,
        metavar="MS",
        help="commit the transaction and begin the next once it has been open MS "
        f"milliseconds (default with transactions: {DEFAULT_TRANSACTION_DURATION_MS}); "
        f"alone, it turns transactions on with the id {DEFAULT_TRANSACTIONAL_ID}",
    )
    parser.add_argument(
        "--reporting-interval",
        type=int,
        default=REPORTING_INTERVAL_MS,
        metavar="MS",
        help=f"print a window line every MS milliseconds (default: {REPORTING_INTERVAL_MS})",
    )
    parser.add_argument(
        "--json", action="store_true", help="print the result as one JSON object on stdout"
    )


def run(args: argparse.Namespace) -> int:
    """Validate, prepare the payloads, run the test, print the results."""
    validate_topic_name(args.topic)
    if args.num_records < 1:
        raise UsageError(f"--num-records must be >= 1, got {args.num_records}")
    if args.reporting_interval < 1:
        raise UsageError(f"--reporting-interval must be >= 1 ms, got {args.reporting_interval}")
    if args.throughput == 0:
        raise UsageError("--throughput 0 would never send; use -1 for no limit")
    if not 0 <= args.warmup_records < args.num_records:
        raise UsageError(
            f"--warmup-records must be >= 0 and less than --num-records ({args.num_records}), "
            f"got {args.warmup_records}"
        )
    if args.transaction_duration_ms is not None and args.transaction_duration_ms < 1:
        raise UsageError(
            f"--transaction-duration-ms must be >= 1, got {args.transaction_duration_ms}"
        )
    rng = random.Random(_PAYLOAD_SEED)
    if args.payload_file is not None:
        payloads = load_payload_file(args.payload_file, parse_delimiter(args.payload_delimiter))
    elif args.record_size < 0:
        raise UsageError(f"--record-size must be >= 0, got {args.record_size}")
    else:
        payloads = [random_payload(args.record_size, rng)]
    config = _config_from(args)
    return _run_test(args, config, payloads, rng)


def _config_from(args: argparse.Namespace) -> ProducerConfig:
    properties = assemble_properties(
        config_file=args.producer_config,
        property_arguments=args.producer_props,
        property_option="--producer-props",
        option_values={"bootstrap.servers": args.bootstrap_server},
        client_id=_CLIENT_ID,
    )
    _set_transactional_id(args, properties)
    if "bootstrap.servers" not in properties and "bootstrap_servers" not in properties:
        raise ConfigError(
            "no broker to connect to: give --bootstrap-server HOST:PORT (or bootstrap.servers "
            "in --producer-props or --producer.config)"
        )
    return producer_config(properties)


def _set_transactional_id(args: argparse.Namespace, properties: dict[str, str]) -> None:
    """--transactional-id overrides a transactional.id among the properties; without either,
    --transaction-duration-ms turns transactions on under the Java tool's default id."""
    chosen: str
    if args.transactional_id is not None:
        chosen = args.transactional_id
    elif any(key in properties for key in _TRANSACTIONAL_ID_KEYS):
        return
    elif args.transaction_duration_ms is not None:
        chosen = DEFAULT_TRANSACTIONAL_ID
    else:
        return
    for key in _TRANSACTIONAL_ID_KEYS:
        properties.pop(key, None)
    properties["transactional.id"] = chosen


def transaction_duration_ms(args: argparse.Namespace, config: ProducerConfig) -> int | None:
    """How long each transaction stays open, in ms; None when not sending in transactions."""
    if config.transactional_id is None:
        return None
    duration: int | None = args.transaction_duration_ms
    return DEFAULT_TRANSACTION_DURATION_MS if duration is None else duration


def _now_ms() -> int:
    return time.monotonic_ns() // 1_000_000


class _Measurement:
    """The callbacks' side: records each acknowledgement's latency under a lock (callbacks
    run on the producer's I/O thread, and on the sending thread for a record already done)."""

    def __init__(self, num_records: int, reporting_interval_ms: int, window_stream: TextIO) -> None:
        self.stats = PerfStats(num_records, _now_ms(), reporting_interval_ms)
        self._window_stream = window_stream
        self._lock = threading.Lock()

    def acknowledged(self, iteration: int, send_start_ms: int, size: int, metadata: object) -> None:
        now_ms = _now_ms()
        with self._lock:
            line = self.stats.record(iteration, now_ms - send_start_ms, size, now_ms)
        if line is not None:
            print(line, file=self._window_stream, flush=True)

    def failed(self, error: Exception) -> None:
        with self._lock:
            self.stats.record_failure()
            failures = self.stats.failed
        if failures <= _MAX_FAILURES_SHOWN:
            print(f"{PROGRAM}: a record failed: {one_line_description(error)}", file=sys.stderr)
        elif failures == _MAX_FAILURES_SHOWN + 1:
            print(f"{PROGRAM}: further failures are only counted", file=sys.stderr)

    def summary(self) -> PerfSummary:
        with self._lock:
            return self.stats.summary(_now_ms())


def _run_test(
    args: argparse.Namespace, config: ProducerConfig, payloads: list[bytes], rng: random.Random
) -> int:
    topic: str = args.topic
    warmup: int = args.warmup_records
    duration_ms = transaction_duration_ms(args, config)
    if warmup and duration_ms is not None:
        raise UsageError("--warmup-records cannot be combined with transactions")
    window_stream = sys.stderr if args.json else sys.stdout
    measured = args.num_records - warmup
    measurement = _Measurement(measured, args.reporting_interval, window_stream)
    throttle = Throttle(args.throughput)
    interrupted = False
    producer = Producer(config)
    try:
        require_topic(
            producer,
            topic,
            config.bootstrap_servers,
            config.max_block_ms,
            plaintext=config.security_protocol == "PLAINTEXT",
        )
        if warmup:
            _send_warmup(producer, topic, payloads, rng, warmup, Throttle(args.throughput))
            # Measuring starts now: the warmup's time is not in the results.
            measurement = _Measurement(measured, args.reporting_interval, window_stream)
        if duration_ms is not None:
            producer.init_transactions()
        transactions = _Transactions(producer, duration_ms)
        _send_measured(
            producer, topic, payloads, rng, measured, measurement, throttle, transactions
        )
    except KeyboardInterrupt:
        interrupted = True
        _flush_after_interrupt(producer)
    except BaseException:
        producer.close(0)
        raise
    summary = measurement.summary()
    _print_results(args, summary, producer)
    producer.close()
    if interrupted:
        return ExitStatus.INTERRUPTED
    return ExitStatus.RECORDS_FAILED if summary.failed else ExitStatus.OK


class _Transactions:
    """The Java tool's transactions: one begins before a send when none is open, and is
    committed once it has been open ``duration_ms``; no-ops when ``duration_ms`` is None."""

    def __init__(self, producer: Producer, duration_ms: int | None) -> None:
        self._producer = producer
        self._duration_ms = duration_ms
        self._open = False
        self._start_ms = 0

    def before_send(self) -> None:
        if self._duration_ms is not None and not self._open:
            self._producer.begin_transaction()
            self._open = True
            self._start_ms = _now_ms()

    def after_send(self) -> None:
        if self._duration_ms is not None and _now_ms() - self._start_ms >= self._duration_ms:
            self._producer.commit_transaction()
            self._open = False

    def finish(self) -> None:
        if self._open:
            self._producer.commit_transaction()  # flushes
            self._open = False


def _send_measured(
    producer: Producer,
    topic: str,
    payloads: list[bytes],
    rng: random.Random,
    count: int,
    measurement: _Measurement,
    throttle: Throttle,
    transactions: _Transactions,
) -> None:
    """Send ``count`` records, each measured from send() to its acknowledgement, then
    flush."""
    started = time.monotonic()
    single_payload = payloads[0] if len(payloads) == 1 else None
    for iteration in range(count):
        transactions.before_send()
        payload = single_payload or payloads[rng.randrange(len(payloads))]
        send_start_ms = _now_ms()
        future = producer.send(topic, payload)
        future.add_both(
            partial(measurement.acknowledged, iteration, send_start_ms, len(payload)),
            measurement.failed,
        )
        transactions.after_send()
        _pace(throttle, iteration + 1, started)
    transactions.finish()
    producer.flush()


def _pace(throttle: Throttle, sent: int, started: float) -> None:
    """Sleep as long as ``throttle`` asks after ``sent`` records since ``started``."""
    if not throttle.unlimited:
        delay = throttle.delay_s(sent, time.monotonic() - started)
        if delay >= _MIN_THROTTLE_SLEEP_S:
            time.sleep(delay)


def _send_warmup(
    producer: Producer,
    topic: str,
    payloads: list[bytes],
    rng: random.Random,
    count: int,
    throttle: Throttle,
) -> None:
    """Send ``count`` records and wait for them, unmeasured: connections, batches and caches
    are warm when measuring starts. A failed warmup record ends the run."""
    failures: list[Exception] = []
    started = time.monotonic()
    for iteration in range(count):
        payload = payloads[0] if len(payloads) == 1 else payloads[rng.randrange(len(payloads))]
        producer.send(topic, payload).add_errback(failures.append)
        _pace(throttle, iteration + 1, started)
    producer.flush()
    if failures:
        raise RecordsFailedError(
            f"{len(failures)} of {count} warmup records failed: {one_line_description(failures[0])}"
        )
    print(f"{PROGRAM}: {count} warmup records sent; measuring from now on", file=sys.stderr)


def _flush_after_interrupt(producer: Producer) -> None:
    print(f"\n{PROGRAM}: interrupted; waiting for the records sent so far", file=sys.stderr)
    try:
        producer.flush(_INTERRUPT_FLUSH_TIMEOUT_S)
    except (KafkaTimeoutError, KeyboardInterrupt):
        # The totals below then count what was acknowledged; the rest is dropped by close(0).
        print(f"{PROGRAM}: not all records were acknowledged in time", file=sys.stderr)
        producer.close(0)


def _print_results(args: argparse.Namespace, summary: PerfSummary, producer: Producer) -> None:
    if args.json:
        result: dict[str, object] = {"topic": args.topic, **summary.as_json_dict()}
        if args.print_metrics:
            result["metrics"] = producer.metrics()
        print(json.dumps(result), flush=True)
        return
    print(summary.java_line(), flush=True)
    if args.print_metrics:
        print(metrics_table(producer.metrics()), flush=True)
