"""``kafkaline produce`` and ``kafkaline perf`` driven as a user drives them: a subprocess
(``python -m kafkaline``) with piped stdin or a pseudo terminal, against the session broker;
what they sent is read back with confluent-kafka (assign(), never subscribe())."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple, NoReturn

import pytest
from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as ConfluentTopicPartition

from kafkaline.cli.exit_status import ExitStatus
from kafkaline.protocol.api import FetchRequest
from kafkaline.record import CompressionType
from kafkaline.testing import LocalBroker, TopicFactory
from kafkaline.testing.wire import BlockingConnection, fetch_partition, negotiate_versions

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

Header = tuple[str, bytes | None]


class ReadRecord(NamedTuple):
    """A record read back."""

    partition: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...]


JAVA_WINDOW = re.compile(
    r"^\d+ records sent, \d+\.\d records/sec \(\d+\.\d\d MB/sec\), \d+\.\d ms avg latency, "
    r"\d+\.\d ms max latency\.$"
)
JAVA_TOTAL = re.compile(
    r"^(\d+) records sent, \d+\.\d{6} records/sec \(\d+\.\d\d MB/sec\), \d+\.\d\d ms avg "
    r"latency, \d+\.\d\d ms max latency, \d+ ms 50th, \d+ ms 95th, \d+ ms 99th, "
    r"\d+ ms 99\.9th\.$"
)


# --------------------------------------------------------------------------- helpers


def kafkaline(
    *args: str, stdin: bytes = b"", cwd: Path | None = None, timeout: float = 30
) -> subprocess.CompletedProcess[bytes]:
    """Run ``python -m kafkaline ARGS`` with ``stdin`` piped in."""
    return subprocess.run(
        [sys.executable, "-m", "kafkaline", *args],
        input=stdin,
        capture_output=True,
        cwd=cwd,
        timeout=timeout,
        check=False,
    )


def read_back(broker: LocalBroker, topic: str, partitions: int, count: int) -> list[ReadRecord]:
    """Every record of ``topic``, read with confluent-kafka until ``count`` are in hand, then
    a little longer so that extra records would show up too."""
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": f"cli-check-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 50,
        }
    )
    records: list[ReadRecord] = []
    try:
        consumer.assign([ConfluentTopicPartition(topic, p, 0) for p in range(partitions)])
        deadline = time.monotonic() + 20
        settle_until: float | None = None
        while time.monotonic() < deadline:
            if len(records) >= count:
                settle_until = settle_until or time.monotonic() + 0.3
                if time.monotonic() >= settle_until:
                    break
            for message in consumer.consume(num_messages=10_000, timeout=0.1):
                assert message.error() is None, message.error()
                headers = tuple(as_header(item) for item in message.headers() or [])
                partition = message.partition()
                assert partition is not None
                records.append(ReadRecord(partition, message.key(), message.value(), headers))
    finally:
        consumer.close()
    return records


def as_header(item: object) -> Header:
    """A header as confluent-kafka returns it (a consumer returns a list of pairs)."""
    assert isinstance(item, tuple) and len(item) == 2, item
    name, value = item
    assert isinstance(name, str) and (value is None or isinstance(value, bytes)), item
    return name, value


def stderr_lines(result: subprocess.CompletedProcess[bytes]) -> list[str]:
    return result.stderr.decode().splitlines()


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


# `python -m kafkaline`, with Ctrl-C's default handler put back first: a shell starts a
# background job with SIGINT ignored, its children inherit that, and Python then leaves SIGINT
# ignored, so a suite run in the background could not test what Ctrl-C does.
_RUN_WITH_CTRL_C = (
    "import runpy, signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "runpy.run_module('kafkaline', run_name='__main__', alter_sys=True)"
)


class Terminal:
    """A child process on a pseudo terminal (stdin, stdout and stderr), as in a shell."""

    def __init__(self, args: Sequence[str], cwd: Path) -> None:
        self._master, slave = pty.openpty()
        self.process = subprocess.Popen(
            [sys.executable, "-c", _RUN_WITH_CTRL_C, *args],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            cwd=cwd,
            close_fds=True,
            # A child that hangs is asked for its threads' stacks (SIGABRT) before it is killed.
            env={**os.environ, "PYTHONFAULTHANDLER": "1"},
        )
        os.close(slave)
        self.output = b""

    def write(self, data: bytes) -> None:
        os.write(self._master, data)

    def read_until(self, predicate: re.Pattern[bytes], timeout: float = 20) -> bytes:
        deadline = time.monotonic() + timeout
        while not predicate.search(self.output):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"{predicate.pattern!r} not seen; output: {self.output!r}")
            ready, _, _ = select.select([self._master], [], [], remaining)
            if ready:
                try:
                    self.output += os.read(self._master, 65536)
                except OSError as error:  # EIO: the child closed the terminal
                    raise AssertionError(
                        f"{predicate.pattern!r} not seen: {self.output!r}"
                    ) from error
        return self.output

    def wait(self, timeout: float = 30) -> int:
        # Keep draining the terminal: a child blocked on a full pty buffer never exits.
        deadline = time.monotonic() + timeout
        while self.process.poll() is None and time.monotonic() < deadline:
            ready, _, _ = select.select([self._master], [], [], 0.05)
            if ready:
                try:
                    self.output += os.read(self._master, 65536)
                except OSError:
                    break
        try:
            status = self.process.wait(max(deadline - time.monotonic(), 0.1))
        except subprocess.TimeoutExpired:
            self._fail_with_stacks(timeout)
        while True:  # what is left in the terminal's buffer
            ready, _, _ = select.select([self._master], [], [], 0)
            if not ready:
                break
            try:
                data = os.read(self._master, 65536)
            except OSError:
                break
            if not data:
                break
            self.output += data
        return status

    def _fail_with_stacks(self, timeout: float) -> NoReturn:
        self.process.send_signal(signal.SIGABRT)  # faulthandler prints every thread's stack
        end = time.monotonic() + 5
        while time.monotonic() < end:
            ready, _, _ = select.select([self._master], [], [], 0.1)
            if ready:
                try:
                    self.output += os.read(self._master, 65536)
                except OSError:
                    break
            elif self.process.poll() is not None:
                break
        raise AssertionError(
            f"the child was still running {timeout:g} s later; its terminal, ending with the "
            f"stacks of its threads:\n{self.output.decode(errors='replace')}"
        )

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        os.close(self._master)


# --------------------------------------------------------------------------- produce


def test_piped_lines_become_records(broker: LocalBroker, make_topic: TopicFactory) -> None:
    topic = make_topic(partitions=3)
    lines = [b"first", b"", b"tab\tinside", "ünïcødé".encode(), b"\xff\xfe raw bytes"]
    result = kafkaline(
        "produce", "--topic", topic, "--bootstrap-server", broker.bootstrap_servers,
        stdin=b"\n".join(lines) + b"\r\n",
    )  # fmt: skip
    assert result.returncode == ExitStatus.OK, result.stderr
    assert result.stdout == b""  # no prompt: stdin is not a terminal
    [summary] = stderr_lines(result)
    assert re.fullmatch(r"kafkaline: 5 records sent, 0 failed, \d+\.\d\d s", summary)
    records = read_back(broker, topic, 3, len(lines))
    assert sorted(value or b"" for _, _, value, _ in records) == sorted(lines)
    assert all(key is None and headers == () for _, key, _, headers in records)


def test_keys_headers_and_null_markers(broker: LocalBroker, make_topic: TopicFactory) -> None:
    topic = make_topic(partitions=3)
    stdin = (
        b"trace=t1;lang=en|user-1:hello\n"
        b"trace=t2;empty=|user-2:~\n"
        b"~|~:value without key\n"
        b"nullval=~|user-1:again: with the separator in the value\n"
    )
    result = kafkaline(
        "produce", "--topic", topic, "--bootstrap-server", broker.bootstrap_servers,
        "--property", "parse.key=true", "--property", "key.separator=:",
        "--property", "parse.headers=true", "--property", "headers.delimiter=|",
        "--property", "headers.separator=;", "--property", "headers.key.separator==",
        "--property", "null.marker=~",
        stdin=stdin,
    )  # fmt: skip
    assert result.returncode == ExitStatus.OK, result.stderr
    records = read_back(broker, topic, 3, 4)
    assert sorted((key or b"", value or b"", headers) for _, key, value, headers in records) == [
        (b"", b"value without key", ()),
        (b"user-1", b"again: with the separator in the value", (("nullval", None),)),
        (b"user-1", b"hello", (("trace", b"t1"), ("lang", b"en"))),
        (b"user-2", b"", (("trace", b"t2"), ("empty", b""))),
    ]
    by_value = {value: (partition, key) for partition, key, value, _ in records}
    assert by_value[None][1] == b"user-2"  # the null value really is null, not b"~" or b""
    assert by_value[b"value without key"][1] is None  # and so is the null key
    # Same key, same partition (murmur2 of the key).
    assert by_value[b"hello"][0] == by_value[b"again: with the separator in the value"][0]


def test_a_line_without_key_separator_stops_with_its_line_number(
    broker: LocalBroker, make_topic: TopicFactory
) -> None:
    topic = make_topic(partitions=1)
    result = kafkaline(
        "produce", "--topic", topic, "--bootstrap-server", broker.bootstrap_servers,
        "--property", "parse.key=true",
        stdin=b"k1\tv1\nk2\tv2\nno separator here\nk4\tv4\n",
    )  # fmt: skip
    assert result.returncode == ExitStatus.BAD_INPUT
    lines = stderr_lines(result)
    assert lines[-1] == (
        "kafkaline: error: line 3: no key separator '\\t' found in 'no separator here'"
    )
    assert lines[0].startswith("kafkaline: 2 records sent, 0 failed")
    assert b"Traceback" not in result.stderr
    # What was accepted before the bad line was delivered.
    assert sorted(record.value or b"" for record in read_back(broker, topic, 1, 2)) == [
        b"v1",
        b"v2",
    ]


def test_ignore_error_sends_such_lines_without_key_from_an_input_file(
    broker: LocalBroker, make_topic: TopicFactory, tmp_path: Path
) -> None:
    topic = make_topic(partitions=1)
    input_file = tmp_path / "lines.txt"
    input_file.write_bytes(b"k1\tv1\nno separator\nk3\tv3")  # no final newline
    result = kafkaline(
        "produce", "--topic", topic, "--bootstrap-server", broker.bootstrap_servers,
        "--property", "parse.key=true", "--property", "ignore.error=true",
        "--input", str(input_file),
    )  # fmt: skip
    assert result.returncode == ExitStatus.OK, result.stderr
    assert b"\r" not in result.stderr  # no progress bar: stderr is not a terminal
    records = read_back(broker, topic, 1, 3)
    assert [(key, value) for _, key, value, _ in records] == [
        (b"k1", b"v1"),
        (None, b"no separator"),
        (b"k3", b"v3"),
    ]


def test_producer_options_and_properties_reach_the_producer(
    broker: LocalBroker, make_topic: TopicFactory, tmp_path: Path
) -> None:
    topic = make_topic(partitions=1)
    config_file = tmp_path / "producer.properties"
    config_file.write_text(
        f"# written for the Java tool\nbootstrap.servers = {broker.bootstrap_servers}\n"
        "compression.type = gzip\nclient.id = from-file\n"
    )
    count = 200
    result = kafkaline(
        "produce", "--topic", topic, "--producer.config", str(config_file),
        "--producer-property", "linger.ms=1000", "--compression-codec", "zstd",
        "--batch-size", "1000000", "--timeout", "50", "--request-required-acks", "1",
        stdin=b"".join(b"record %d\n" % i for i in range(count)),
    )  # fmt: skip
    assert result.returncode == ExitStatus.OK, result.stderr
    # --compression-codec overrides the file; the records arrive in zstd batches.
    with BlockingConnection(broker.host, broker.port) as conn:
        fetch_version = negotiate_versions(conn)[FetchRequest.API_KEY]
        batches = fetch_partition(conn, topic, 0, fetch_version, expected_records=count)
    assert {batch.compression for batch in batches} == {CompressionType.ZSTD}
    values = [record.value for batch in batches for record in batch.records]
    assert values == [b"record %d" % i for i in range(count)]


def test_a_java_client_properties_file_works_unchanged(
    broker: LocalBroker, make_topic: TopicFactory, tmp_path: Path
) -> None:
    # Java serializer class names, a Java setting with no meaning here, a librdkafka name.
    topic = make_topic(partitions=1)
    config_file = tmp_path / "client.properties"
    config_file.write_text(
        f"bootstrap.servers={broker.bootstrap_servers}\n"
        "key.serializer=org.apache.kafka.common.serialization.StringSerializer\n"
        "value.serializer=org.apache.kafka.common.serialization.StringSerializer\n"
        "client.dns.lookup=use_all_dns_ips\n"
        "queue.buffering.max.ms=5\n"
    )
    result = kafkaline(
        "produce", "--topic", topic, "--producer.config", str(config_file),
        "--property", "parse.key=true", stdin=b"k1\tv1\nk2\tv2\n",
    )  # fmt: skip
    assert result.returncode == ExitStatus.OK, result.stderr
    warning, summary = stderr_lines(result)
    assert warning == (
        "kafkaline: WARNING: kafkaline.config: ignoring Java client settings that have no "
        "meaning in kafkaline: client.dns.lookup"
    )
    assert summary.startswith("kafkaline: 2 records sent, 0 failed")
    records = read_back(broker, topic, 1, 2)
    assert [(key, value) for _, key, value, _ in records] == [(b"k1", b"v1"), (b"k2", b"v2")]


def test_a_misspelled_java_property_is_refused_with_a_suggestion(
    broker: LocalBroker, tmp_path: Path
) -> None:
    config_file = tmp_path / "client.properties"
    config_file.write_text(f"bootstrap.servers={broker.bootstrap_servers}\nclient.dns.lookupp=x\n")
    result = kafkaline(
        "produce", "--topic", "events", "--producer.config", str(config_file)
    )  # fmt: skip
    assert result.returncode == ExitStatus.CONFIG
    assert stderr_lines(result) == [
        "kafkaline: error: 'client.dns.lookupp' is not a producer setting; did you mean "
        "'client.dns.lookup'?"
    ]


def test_sync_mode_sends_one_record_at_a_time(
    broker: LocalBroker, make_topic: TopicFactory
) -> None:
    topic = make_topic(partitions=1)
    result = kafkaline(
        "produce", "--topic", topic, "--bootstrap-server", broker.bootstrap_servers, "--sync",
        stdin=b"a\nb\nc\n",
    )  # fmt: skip
    assert result.returncode == ExitStatus.OK, result.stderr
    with BlockingConnection(broker.host, broker.port) as conn:
        fetch_version = negotiate_versions(conn)[FetchRequest.API_KEY]
        batches = fetch_partition(conn, topic, 0, fetch_version, expected_records=3)
    assert [len(batch.records) for batch in batches] == [1, 1, 1]


def test_a_failed_record_is_reported_and_the_exit_status_is_non_zero(
    broker: LocalBroker, make_topic: TopicFactory
) -> None:
    topic = make_topic(partitions=1)
    result = kafkaline(
        "produce", "--topic", topic, "--bootstrap-server", broker.bootstrap_servers,
        "--producer-property", "max.request.size=1000",
        stdin=b"small\n" + b"x" * 5000 + b"\nsmall again\n",
    )  # fmt: skip
    assert result.returncode == ExitStatus.RECORDS_FAILED
    failure, summary = stderr_lines(result)
    assert failure.startswith("kafkaline: record from line 2 failed: ")
    assert "max_request_size" in failure or "max.request.size" in failure
    assert summary.startswith("kafkaline: 2 records sent, 1 failed, ")
    values = [value for _, _, value, _ in read_back(broker, topic, 1, 2)]
    assert values == [b"small", b"small again"]


# --------------------------------------------------------------------------- errors a user sees


def test_unreachable_broker_is_one_line_and_its_own_status(tmp_path: Path) -> None:
    started = time.monotonic()
    result = kafkaline(
        "produce", "--topic", "events", "--bootstrap-server", f"127.0.0.1:{closed_port()}",
        "--producer-property", "max.block.ms=300", stdin=b"never sent\n",
    )  # fmt: skip
    assert time.monotonic() - started < 10
    assert result.returncode == ExitStatus.BROKER_UNREACHABLE
    # What it waits for is said at once, before the producer's wait; then the error.
    waiting, line = stderr_lines(result)
    assert waiting.startswith("kafkaline: waiting up to max.block.ms=300 ms for a broker: ")
    assert line.startswith("kafkaline: error: no broker answered within max.block.ms=300")
    assert "Connection refused" in line


def test_unknown_topic_is_one_line_and_its_own_status(broker: LocalBroker) -> None:
    topic = f"no-such-topic-{uuid.uuid4().hex[:8]}"
    result = kafkaline(
        "produce", "--topic", topic, "--bootstrap-server", broker.bootstrap_servers,
        "--producer-property", "max.block.ms=500", stdin=b"never sent\n",
    )  # fmt: skip
    assert result.returncode == ExitStatus.UNKNOWN_TOPIC
    assert stderr_lines(result) == [f"kafkaline: error: topic {topic!r} does not exist on "
                                    f"{broker.bootstrap_servers}"]  # fmt: skip


def test_a_topic_the_broker_does_not_know_fails_at_once(broker: LocalBroker) -> None:
    # The default max.block.ms (60 s): the broker has said the topic is unknown, so there is
    # nothing to wait for.
    topic = f"no-such-topic-{uuid.uuid4().hex[:8]}"
    for command in (
        ["produce", "--topic", topic],
        ["perf", "--topic", topic, "--num-records", "1", "--record-size", "1"],
    ):
        started = time.monotonic()
        result = kafkaline(*command, "--bootstrap-server", broker.bootstrap_servers, stdin=b"x\n")
        assert time.monotonic() - started < 15
        assert result.returncode == ExitStatus.UNKNOWN_TOPIC, result.stderr
        assert stderr_lines(result) == [
            f"kafkaline: error: topic {topic!r} does not exist on {broker.bootstrap_servers}"
        ]


def test_bad_property_is_one_line_and_its_own_status(broker: LocalBroker) -> None:
    result = kafkaline(
        "produce", "--topic", "events", "--bootstrap-server", broker.bootstrap_servers,
        "--producer-property", "acks=most",
    )  # fmt: skip
    assert result.returncode == ExitStatus.CONFIG
    [line] = stderr_lines(result)
    assert line.startswith("kafkaline: error: acks")


def test_missing_input_file_is_one_line_and_its_own_status(
    broker: LocalBroker, tmp_path: Path
) -> None:
    result = kafkaline(
        "produce", "--topic", "events", "--bootstrap-server", broker.bootstrap_servers,
        "--input", "missing.txt", cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == ExitStatus.FILE
    assert stderr_lines(result) == ["kafkaline: error: missing.txt: No such file or directory"]


def test_verbose_shows_the_traceback_of_an_error(tmp_path: Path) -> None:
    result = kafkaline(
        "produce", "--verbose", "--topic", "events", "--bootstrap-server",
        f"127.0.0.1:{closed_port()}", "--producer-property", "max.block.ms=200",
    )  # fmt: skip
    assert result.returncode == ExitStatus.BROKER_UNREACHABLE
    assert b"Traceback (most recent call last)" in result.stderr
    assert b"KafkaTimeoutError" in result.stderr  # the cause, chained


# --------------------------------------------------------------------------- on a terminal


def test_prompt_on_a_terminal(
    broker: LocalBroker, make_topic: TopicFactory, tmp_path: Path
) -> None:
    topic = make_topic(partitions=1)
    terminal = Terminal(
        ["produce", "--topic", topic, "--bootstrap-server", broker.bootstrap_servers], tmp_path
    )
    try:
        terminal.read_until(re.compile(rb">"))
        terminal.write(b"typed one\n")
        terminal.read_until(re.compile(rb"typed one\r?\n>"))
        terminal.write(b"typed two\n")
        terminal.read_until(re.compile(rb"typed two\r?\n>"))
        terminal.write(b"\x04")  # Ctrl-D: end of input
        status = terminal.wait()
    finally:
        terminal.close()
    assert status == ExitStatus.OK, terminal.output
    assert terminal.output.count(b">") == 3
    assert b"kafkaline: 2 records sent, 0 failed" in terminal.output
    values = [value for _, _, value, _ in read_back(broker, topic, 1, 2)]
    assert values == [b"typed one", b"typed two"]


def test_progress_bar_on_a_terminal_for_an_input_file(
    broker: LocalBroker, make_topic: TopicFactory, tmp_path: Path
) -> None:
    topic = make_topic(partitions=2)
    count = 20_000
    (tmp_path / "big.txt").write_bytes(b"".join(b"line %06d\n" % i for i in range(count)))
    terminal = Terminal(
        ["produce", "--topic", topic, "--bootstrap-server", broker.bootstrap_servers,
         "--input", "big.txt"],
        tmp_path,
    )  # fmt: skip
    try:
        status = terminal.wait()
    finally:
        terminal.close()
    assert status == ExitStatus.OK, terminal.output
    text = terminal.output.decode()
    # Redrawn in place (carriage returns); the last drawing is the finished bar.
    bars = re.findall(r"\r(\[[# ]+\] +\d+%  \d+ records  \d+ rec/s  \d+\.\d\d MB/s  0:\d\d)", text)
    assert bars, text
    assert re.fullmatch(r"\[#+\] 100%  20000 records .*", bars[-1])
    assert ">" not in text  # a file is not typed: no prompt
    assert f"kafkaline: {count} records sent, 0 failed" in text
    assert len(read_back(broker, topic, 2, count)) == count


def test_ctrl_c_delivers_what_was_accepted_and_exits_130(
    broker: LocalBroker, make_topic: TopicFactory, tmp_path: Path
) -> None:
    topic = make_topic(partitions=1)
    # A long linger and a big batch: the records stay buffered until the interrupt's flush.
    terminal = Terminal(
        ["produce", "--topic", topic, "--bootstrap-server", broker.bootstrap_servers,
         "--timeout", "60000", "--batch-size", "1000000"],
        tmp_path,
    )  # fmt: skip
    try:
        terminal.read_until(re.compile(rb">"))
        terminal.write(b"one\ntwo\nthree\n")
        # The fourth prompt comes after the third line was handed to send().
        terminal.read_until(re.compile(rb"(>[^>]*){4}"))
        assert terminal.process.pid is not None
        os.kill(terminal.process.pid, signal.SIGINT)
        status = terminal.wait()
    finally:
        terminal.close()
    assert status == ExitStatus.INTERRUPTED, terminal.output
    assert b"kafkaline: interrupted: 3 records sent, 0 failed" in terminal.output
    assert b"Traceback" not in terminal.output
    values = [value for _, _, value, _ in read_back(broker, topic, 1, 3)]
    assert values == [b"one", b"two", b"three"]


# --------------------------------------------------------------------------- perf


def test_perf_prints_the_java_shapes_and_its_count_matches_the_records(
    broker: LocalBroker, make_topic: TopicFactory
) -> None:
    topic = make_topic(partitions=3)
    # 600 records/s for 1.1 s, a window line every 0.5 s (5 s by default, as in Java).
    result = kafkaline(
        "perf", "--topic", topic, "--num-records", "660", "--record-size", "64",
        "--throughput", "600", "--reporting-interval", "500",
        "--bootstrap-server", broker.bootstrap_servers,
        "--producer-props", "acks=1", "linger.ms=1",
    )  # fmt: skip
    assert result.returncode == ExitStatus.OK, result.stderr
    lines = result.stdout.decode().splitlines()
    assert len(lines) >= 3  # two windows at least, and the total
    assert all(JAVA_WINDOW.match(line) for line in lines[:-1]), lines
    total = JAVA_TOTAL.match(lines[-1])
    assert total is not None, lines[-1]
    assert int(total.group(1)) == 660
    records = read_back(broker, topic, 3, 660)
    assert len(records) == 660
    assert all(value is not None and len(value) == 64 and value.isupper() for *_, value, _ in
               records)  # fmt: skip


def test_perf_warmup_records_are_sent_but_not_measured(
    broker: LocalBroker, make_topic: TopicFactory, tmp_path: Path
) -> None:
    topic = make_topic(partitions=2)
    (tmp_path / "client.properties").write_text(f"bootstrap.servers={broker.bootstrap_servers}")
    result = kafkaline(
        "perf", "--topic", topic, "--num-records", "1000", "--warmup-records", "400",
        "--record-size", "10", "--command-config", "client.properties", "--json", cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == ExitStatus.OK, result.stderr
    assert "kafkaline: 400 warmup records sent; measuring from now on" in stderr_lines(result)
    assert json.loads(result.stdout)["records"] == 600
    assert len(read_back(broker, topic, 2, 1000)) == 1000


def test_produce_takes_the_java_console_producers_flags(
    broker: LocalBroker, make_topic: TopicFactory, tmp_path: Path
) -> None:
    topic = make_topic(partitions=1)
    (tmp_path / "client.properties").write_text("acks=1\n")
    result = kafkaline(
        "produce", "--topic", topic, "--broker-list", broker.bootstrap_servers,
        "--command-config", "client.properties", "--max-block-ms", "5000",
        "--request-timeout-ms", "7000", "--message-send-max-retries", "3",
        "--retry-backoff-ms", "50", "--max-memory-bytes", "10000000",
        "--metadata-expiry-ms", "60000", stdin=b"one\ntwo\n", cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == ExitStatus.OK, result.stderr
    assert [value for *_, value, _ in read_back(broker, topic, 1, 2)] == [b"one", b"two"]


def test_a_bad_java_flag_value_names_its_property(broker: LocalBroker) -> None:
    result = kafkaline(
        "produce", "--topic", "events", "--bootstrap-server", broker.bootstrap_servers,
        "--max-block-ms", "soon",
    )  # fmt: skip
    assert result.returncode == ExitStatus.CONFIG
    [line] = stderr_lines(result)
    assert line.startswith("kafkaline: error: max.block.ms")


def test_perf_json_and_metrics(broker: LocalBroker, make_topic: TopicFactory) -> None:
    topic = make_topic(partitions=2)
    result = kafkaline(
        "perf", "--topic", topic, "--num-records", "5000", "--record-size", "100",
        "--bootstrap-server", broker.bootstrap_servers, "--json", "--print-metrics",
    )  # fmt: skip
    assert result.returncode == ExitStatus.OK, result.stderr
    summary = json.loads(result.stdout)
    assert summary["records"] == 5000
    assert summary["failed"] == 0
    assert summary["p50_ms"] <= summary["p99_ms"] <= summary["max_latency_ms"]
    assert summary["metrics"]["record-send-total"] == 5000
    assert len(read_back(broker, topic, 2, 5000)) == summary["records"]


def test_perf_payload_file_and_metrics_table(
    broker: LocalBroker, make_topic: TopicFactory, tmp_path: Path
) -> None:
    topic = make_topic(partitions=1)
    payloads = {b"alpha", b"beta", b"gamma with spaces"}
    (tmp_path / "payloads.txt").write_bytes(b"||".join(sorted(payloads)) + b"||")
    (tmp_path / "producer.properties").write_text(f"bootstrap.servers={broker.bootstrap_servers}")
    result = kafkaline(
        "perf", "--topic", topic, "--num-records", "300", "--payload-file", "payloads.txt",
        "--payload-delimiter", "||", "--producer.config", "producer.properties",
        "--print-metrics", cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == ExitStatus.OK, result.stderr
    lines = result.stdout.decode().splitlines()
    total_line = next(line for line in lines if JAVA_TOTAL.match(line))
    assert total_line.startswith("300 records sent")
    assert re.search(r"^record-send-total +: 300\.000$", result.stdout.decode(), re.MULTILINE)
    values = {value for _, _, value, _ in read_back(broker, topic, 1, 300)}
    assert values == payloads  # 300 random picks of 3 payloads use each


def test_perf_in_transactions_writes_committed_transactions(
    broker: LocalBroker, make_topic: TopicFactory
) -> None:
    topic = make_topic(partitions=1)
    count = 2000
    # 2000 records/s for 1 s, a commit every 200 ms: several transactions.
    result = kafkaline(
        "perf", "--topic", topic, "--num-records", str(count), "--record-size", "32",
        "--throughput", "2000", "--transactional-id", f"perf-{uuid.uuid4().hex}",
        "--transaction-duration-ms", "200", "--bootstrap-server", broker.bootstrap_servers,
        "--json",
    )  # fmt: skip
    assert result.returncode == ExitStatus.OK, result.stderr
    assert json.loads(result.stdout)["records"] == count
    with BlockingConnection(broker.host, broker.port) as conn:
        fetch_version = negotiate_versions(conn)[FetchRequest.API_KEY]
        batches = fetch_partition(conn, topic, 0, fetch_version, max_wait_ms=50)
    data = [batch for batch in batches if not batch.is_control]
    assert sum(len(batch.records) for batch in data) == count
    assert all(batch.is_transactional for batch in data)
    # Each transaction's data batches, then its COMMIT marker; the log ends with a marker.
    kinds: list[str] = []
    for batch in batches:
        if batch.is_control:
            (marker,) = batch.control_records
            assert marker.is_commit, batch
            kinds.append("COMMIT")
        else:
            kinds.append("data")
    assert kinds[0] == "data"
    assert kinds[-1] == "COMMIT"
    commits = kinds.count("COMMIT")
    assert commits >= 3  # about 1 s of sending, committed every 200 ms
    assert all(kinds[i - 1] == "data" for i, kind in enumerate(kinds) if kind == "COMMIT")
    assert len({(batch.producer_id, batch.producer_epoch) for batch in batches}) == 1


def test_perf_with_unreachable_broker_is_one_line() -> None:
    result = kafkaline(
        "perf", "--topic", "events", "--num-records", "10", "--record-size", "10",
        "--bootstrap-server", f"127.0.0.1:{closed_port()}",
        "--producer-props", "max.block.ms=300",
    )  # fmt: skip
    assert result.returncode == ExitStatus.BROKER_UNREACHABLE
    waiting, error = stderr_lines(result)
    assert waiting.startswith("kafkaline: waiting up to max.block.ms=300 ms for a broker: ")
    assert error.startswith("kafkaline: error: no broker answered")
    assert result.stdout == b""
