"""The suite fails when a test leaves a producer's I/O thread running (tests/conftest.py's
session-end check): run pytest on a small copy of it, once with a leak and once without."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

CONFTEST = Path(__file__).resolve().parents[1] / "conftest.py"

LEAKY_TEST = """
from kafkaline import Producer

def test_forgets_to_close() -> None:
    Producer(bootstrap_servers="127.0.0.1:9", client_id="leaky").start()
"""

TIDY_TEST = """
from kafkaline import Producer

def test_closes() -> None:
    with Producer(bootstrap_servers="127.0.0.1:9", client_id="tidy") as producer:
        producer.start()
"""


def run_pytest(tmp_path: Path, test_source: str) -> subprocess.CompletedProcess[str]:
    shutil.copy(CONFTEST, tmp_path / "conftest.py")
    (tmp_path / "test_example.py").write_text(test_source)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_leaked_producer_thread_fails_the_session_and_names_the_test(tmp_path: Path) -> None:
    done = run_pytest(tmp_path, LEAKY_TEST)
    assert done.returncode == pytest.ExitCode.TESTS_FAILED, done.stdout + done.stderr
    assert "1 passed" in done.stdout
    assert "still running at the end of the session" in done.stdout
    leak = "'kafkaline-producer-network-thread | leaky': test_example.py::test_forgets_to_close"
    assert leak in done.stdout


def test_a_closed_producer_passes(tmp_path: Path) -> None:
    done = run_pytest(tmp_path, TIDY_TEST)
    assert done.returncode == pytest.ExitCode.OK, done.stdout + done.stderr
    assert "still running" not in done.stdout
