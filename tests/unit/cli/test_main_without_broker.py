"""The command line's checks that fail before any broker is contacted: each gives one line on
stderr and its exit status. Run in-process (main() returns the status)."""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

import pytest

from kafkaline import ProducerConfig
from kafkaline.cli import perf_command
from kafkaline.cli.exit_status import ExitStatus
from kafkaline.cli.main import build_parser, main
from kafkaline.errors import TransactionStateError

# A port nothing listens on is never reached: these checks fail earlier.
SERVER = "127.0.0.1:1"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def one_error_line(err: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("kafkaline: error: ")
    return lines[0]


def test_bad_producer_property_value(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(
        capsys, "produce", "--topic", "t", "--bootstrap-server", SERVER,
        "--producer-property", "linger.ms=soon",
    )  # fmt: skip
    assert status == ExitStatus.CONFIG
    assert "linger.ms" in one_error_line(err)
    assert out == ""


def test_unknown_producer_property_suggests_the_right_one(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status, _, err = run(
        capsys, "perf", "--topic", "t", "--num-records", "1", "--record-size", "1",
        "--producer-props", "bootstrap.servers=" + SERVER, "lingr.ms=5",
    )  # fmt: skip
    assert status == ExitStatus.CONFIG
    assert "did you mean 'linger.ms'" in one_error_line(err)


def test_bad_reader_property(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run(
        capsys, "produce", "--topic", "t", "--bootstrap-server", SERVER,
        "--property", "parse.keys=true",
    )  # fmt: skip
    assert status == ExitStatus.CONFIG
    assert "did you mean 'parse.key'" in one_error_line(err)


def test_the_tool_options_override_properties_and_are_validated(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status, _, err = run(
        capsys, "produce", "--topic", "t", "--bootstrap-server", SERVER,
        "--producer-property", "acks=1", "--request-required-acks", "2",
    )  # fmt: skip
    assert status == ExitStatus.CONFIG
    assert "acks" in one_error_line(err)


def test_missing_bootstrap_server(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run(capsys, "produce", "--topic", "t")
    assert status == ExitStatus.CONFIG
    assert "--bootstrap-server" in one_error_line(err)


def test_missing_producer_config_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    missing = tmp_path / "producer.properties"
    status, _, err = run(
        capsys, "produce", "--topic", "t", "--bootstrap-server", SERVER,
        "--producer.config", str(missing),
    )  # fmt: skip
    assert status == ExitStatus.FILE
    assert one_error_line(err) == f"kafkaline: error: {missing}: No such file or directory"


def test_missing_input_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    missing = tmp_path / "lines.txt"
    status, _, err = run(
        capsys, "produce", "--topic", "t", "--bootstrap-server", SERVER, "--input", str(missing)
    )
    assert status == ExitStatus.FILE
    assert str(missing) in one_error_line(err)


def test_missing_payload_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    status, _, err = run(
        capsys, "perf", "--topic", "t", "--num-records", "1", "--bootstrap-server", SERVER,
        "--payload-file", str(tmp_path / "payloads.txt"),
    )  # fmt: skip
    assert status == ExitStatus.FILE
    assert "payloads.txt: No such file or directory" in one_error_line(err)


def test_producer_config_file_with_a_bad_value(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    config = tmp_path / "producer.properties"
    config.write_text(f"bootstrap.servers={SERVER}\ncompression.type=brotli\n")
    status, _, err = run(capsys, "produce", "--topic", "t", "--producer.config", str(config))
    assert status == ExitStatus.CONFIG
    assert "compression" in one_error_line(err)


def test_illegal_topic_name(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run(capsys, "produce", "--topic", "no spaces", "--bootstrap-server", SERVER)
    assert status == ExitStatus.USAGE
    assert "not a legal topic name" in one_error_line(err)


@pytest.mark.parametrize(
    ("flags", "transactional_id", "duration_ms"),
    [
        ([], None, None),
        (["--transactional-id", "tx-1"], "tx-1", 3000),
        (["--transactional-id", "tx-1", "--transaction-duration-ms", "100"], "tx-1", 100),
        # Alone, the duration turns transactions on under the Java tool's default id.
        (["--transaction-duration-ms", "100"], perf_command.DEFAULT_TRANSACTIONAL_ID, 100),
        (["--producer-props", "transactional.id=from-props"], "from-props", 3000),
        (["--producer-props", "transactional.id=from-props", "--transactional-id", "tx-1"],
         "tx-1", 3000),
    ],
)  # fmt: skip
def test_perf_transaction_options_set_the_transactional_id(
    flags: list[str], transactional_id: str | None, duration_ms: int | None
) -> None:
    args = build_parser().parse_args(
        ["perf", "--topic", "t", "--num-records", "1", "--record-size", "1",
         "--bootstrap-server", SERVER, *flags]
    )  # fmt: skip
    config = perf_command._config_from(args)
    assert config.transactional_id == transactional_id
    assert perf_command.transaction_duration_ms(args, config) == duration_ms


class FakeProducer:
    """Records the calls the perf command makes; every record is acknowledged at once."""

    calls: ClassVar[list[str]] = []
    fail_commit: ClassVar[bool] = False

    def __init__(self, config: ProducerConfig) -> None:
        self.config = config

    def init_transactions(self) -> None:
        self.calls.append("init")

    def begin_transaction(self) -> None:
        self.calls.append("begin")

    def commit_transaction(self) -> None:
        if self.fail_commit:
            raise TransactionStateError("cannot commit: an abortable error", "ABORTABLE_ERROR")
        self.calls.append("commit")

    def send(self, topic: str, value: bytes) -> FakeProducer:
        self.calls.append("send")
        return self

    def add_both(self, on_success: Callable[[object], None], on_error: object) -> None:
        on_success(None)

    def flush(self, timeout: float | None = None) -> None:
        pass

    def close(self, timeout: float | None = None) -> None:
        self.calls.append("close")

    def metrics(self) -> dict[str, float]:
        return {}


@pytest.fixture
def fake_producer(monkeypatch: pytest.MonkeyPatch) -> type[FakeProducer]:
    FakeProducer.calls = []
    FakeProducer.fail_commit = False
    monkeypatch.setattr(perf_command, "Producer", FakeProducer)
    monkeypatch.setattr(perf_command, "require_topic", lambda *args, **kwargs: 1)
    clock = itertools.count(step=10)  # each reading of the clock: 10 ms later
    monkeypatch.setattr(perf_command, "_now_ms", lambda: next(clock))
    return FakeProducer


def perf_with(capsys: pytest.CaptureFixture[str], *flags: str) -> tuple[int, str, str]:
    return run(
        capsys, "perf", "--topic", "t", "--num-records", "10", "--record-size", "1",
        "--bootstrap-server", SERVER, *flags,
    )  # fmt: skip


def test_perf_commits_a_transaction_each_duration_and_the_last_at_the_end(
    capsys: pytest.CaptureFixture[str], fake_producer: type[FakeProducer]
) -> None:
    # The fake clock moves 10 ms a reading, 3 readings a record (send, acknowledgement, the
    # duration check): 45 ms ends each transaction after 2 records; the last at the end.
    status, out, err = perf_with(capsys, "--transactional-id", "tx-1",
                                 "--transaction-duration-ms", "45")  # fmt: skip
    assert status == ExitStatus.OK, err
    assert out.startswith("10 records sent")
    txn = ["begin", "send", "send", "commit"]
    assert fake_producer.calls == ["init", *txn * 5, "close"]


def test_perf_without_transactions_makes_no_transactional_call(
    capsys: pytest.CaptureFixture[str], fake_producer: type[FakeProducer]
) -> None:
    status, _, err = perf_with(capsys)
    assert status == ExitStatus.OK, err
    assert fake_producer.calls == ["send"] * 10 + ["close"]


def test_perf_default_duration_commits_once_at_the_end(
    capsys: pytest.CaptureFixture[str], fake_producer: type[FakeProducer]
) -> None:
    status, _, err = perf_with(capsys, "--transactional-id", "tx-1")  # 3000 ms by default
    assert status == ExitStatus.OK, err
    assert fake_producer.calls == ["init", "begin", *["send"] * 10, "commit", "close"]


def test_perf_transaction_error_is_one_line_and_a_kafka_error(
    capsys: pytest.CaptureFixture[str], fake_producer: type[FakeProducer]
) -> None:
    fake_producer.fail_commit = True
    status, out, err = perf_with(capsys, "--transaction-duration-ms", "100")
    assert status == ExitStatus.KAFKA_ERROR
    assert "cannot commit: an abortable error" in one_error_line(err)
    assert out == ""
    assert fake_producer.calls[-1] == "close"


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--num-records", "0", "--record-size", "1"], "--num-records must be >= 1"),
        (["--num-records", "1", "--record-size", "-1"], "--record-size must be >= 0"),
        (["--num-records", "1", "--record-size", "1", "--throughput", "0"], "never send"),
        (
            ["--num-records", "1", "--record-size", "1", "--transaction-duration-ms", "0"],
            "--transaction-duration-ms must be >= 1",
        ),
    ],
)
def test_perf_argument_checks(
    capsys: pytest.CaptureFixture[str], flags: list[str], message: str
) -> None:
    status, _, err = run(capsys, "perf", "--topic", "t", "--bootstrap-server", SERVER, *flags)
    assert status == ExitStatus.USAGE
    assert message in one_error_line(err)


def test_perf_needs_exactly_one_payload_source(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["perf", "--topic", "t", "--num-records", "1"])
    assert exited.value.code == ExitStatus.USAGE
    assert "--record-size" in capsys.readouterr().err


def test_verbose_shows_the_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run(
        capsys, "produce", "--verbose", "--topic", "t", "--bootstrap-server", SERVER,
        "--producer-property", "linger.ms=soon",
    )  # fmt: skip
    assert status == ExitStatus.CONFIG
    assert err.startswith("Traceback (most recent call last):")
    assert "ConfigError" in err


def test_verbose_is_accepted_before_and_after_the_command() -> None:
    parser = build_parser()
    assert parser.parse_args(["-v", "topics", "list", "--bootstrap-server", "h:1"]).verbose
    assert parser.parse_args(["topics", "list", "--bootstrap-server", "h:1", "-v"]).verbose
    assert not parser.parse_args(["topics", "list", "--bootstrap-server", "h:1"]).verbose


def test_compression_codec_without_value_means_gzip() -> None:
    parser = build_parser()
    args = parser.parse_args(["produce", "--topic", "t", "--compression-codec"])
    assert args.compression_codec == "gzip"
    args = parser.parse_args(["produce", "--topic", "t", "--compression-codec", "zstd"])
    assert args.compression_codec == "zstd"


def test_broker_argument_checks(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run(capsys, "broker", "--port", "70000")
    assert status == ExitStatus.USAGE
    assert "--port" in one_error_line(err)
    status, _, err = run(capsys, "broker", "--topic", "a b")
    assert status == ExitStatus.USAGE


def test_topics_create_checks_its_arguments_before_connecting(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status, _, err = run(capsys, "topics", "create", "t", "--partitions", "0",
                         "--bootstrap-server", SERVER)  # fmt: skip
    assert status == ExitStatus.USAGE
    assert "--partitions must be >= 1" in one_error_line(err)
    status, _, err = run(capsys, "topics", "list", "--bootstrap-server", "no-port")
    assert status == ExitStatus.USAGE
    assert "not HOST:PORT" in one_error_line(err)


def test_main_leaves_the_library_logger_as_it_found_it(capsys: pytest.CaptureFixture[str]) -> None:
    library_logger = logging.getLogger("kafkaline")
    before = (library_logger.level, list(library_logger.handlers))
    run(capsys, "produce", "--topic", "t", "--bootstrap-server", SERVER,
        "--producer-property", "linger.ms=soon")  # fmt: skip
    run(capsys, "-v", "produce", "--topic", "t")
    assert (library_logger.level, list(library_logger.handlers)) == before
