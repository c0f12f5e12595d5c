"""kafkaline.spark.register() checks, with a local master, that the Python Spark starts for its
workers can import kafkaline (no Spark session needed: a stand-in with the same attributes)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from kafkaline.errors import ConfigError
from kafkaline.spark.worker_python import check_worker_python


class FakeConf:
    def __init__(self, settings: dict[str, str]) -> None:
        self.settings = settings

    def get(self, key: str) -> str | None:
        return self.settings.get(key)


class FakeContext:
    def __init__(self, master: str, python_exec: str, settings: dict[str, str]) -> None:
        self.master = master
        self.pythonExec = python_exec
        self._conf = FakeConf(settings)

    def getConf(self) -> FakeConf:
        return self._conf


class FakeSpark:
    def __init__(
        self, master: str = "local[2]", python_exec: str = "python3", **settings: str
    ) -> None:
        self.sparkContext = FakeContext(master, python_exec, settings)


@pytest.fixture
def python_without_kafkaline(tmp_path: Path) -> str:
    """An 'interpreter' whose every import fails."""
    script = tmp_path / "python-without-kafkaline"
    script.write_text("#!/bin/sh\necho \"No module named 'kafkaline'\" >&2\nexit 1\n")
    script.chmod(0o755)
    return str(script)


def test_workers_running_this_interpreter_pass() -> None:
    check_worker_python(FakeSpark(python_exec=sys.executable))


def test_a_worker_python_that_imports_kafkaline_passes(tmp_path: Path) -> None:
    # Another path to an interpreter that has kafkaline: asked, not assumed.
    wrapper = tmp_path / "python"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    wrapper.chmod(0o755)
    check_worker_python(FakeSpark(**{"spark.pyspark.python": str(wrapper)}))


def test_a_worker_python_without_kafkaline_says_what_to_set(python_without_kafkaline: str) -> None:
    with pytest.raises(ConfigError) as raised:
        check_worker_python(FakeSpark(python_exec=python_without_kafkaline))
    message = str(raised.value)
    assert "cannot import kafkaline" in message
    assert f"PYSPARK_PYTHON={sys.executable}" in message
    assert "spark.pyspark.python" in message


def test_spark_pyspark_python_wins_over_pyspark_python(python_without_kafkaline: str) -> None:
    spark = FakeSpark(
        python_exec=sys.executable, **{"spark.pyspark.python": python_without_kafkaline}
    )
    with pytest.raises(ConfigError, match="cannot import kafkaline"):
        check_worker_python(spark)


def test_a_worker_python_that_does_not_exist(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"'no-such-python-here' \(not found\)"):
        check_worker_python(FakeSpark(python_exec="no-such-python-here"))


def test_other_masters_are_not_checked(python_without_kafkaline: str) -> None:
    check_worker_python(FakeSpark("spark://cluster:7077", python_without_kafkaline))
