"""The machine a bench ran on, for the results: numbers from a shared 2-core machine mean
little without the load that was on it. Nothing here may put a machine's paths into results:
:func:`scrub_paths` replaces them."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

from kafkaline.testing import resolve_broker_bin

#: The distributions whose versions go into the results.
DISTRIBUTIONS = ("kafkaline", "confluent-kafka", "kafka-python", "aiokafka", "pyarrow")
_COMMAND_TIMEOUT_S = 10.0


@dataclass
class MachineInfo:
    started_at: str
    cpu_count: int
    cpu_model: str
    memory_gib: float
    system: str
    python: str
    load_average_start: tuple[float, float, float]
    load_average_end: tuple[float, float, float] | None = None
    versions: dict[str, str] = field(default_factory=dict)
    broker: str = ""
    kafkaline_commit: str = ""


def load_average_1m() -> float:
    return os.getloadavg()[0]


def _first_line_of(path: Path, prefix: str) -> str:
    try:
        for line in path.read_text().splitlines():
            if line.startswith(prefix):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""


def _memory_gib() -> float:
    kib = _first_line_of(Path("/proc/meminfo"), "MemTotal").split(" ")[0]
    return int(kib) / 2**20 if kib.isdigit() else 0.0


def _run(argv: list[str], cwd: Path | None = None) -> str:
    try:
        completed = subprocess.run(
            argv, cwd=cwd, capture_output=True, text=True, timeout=_COMMAND_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return completed.stdout.strip() if completed.returncode == 0 else ""


def _versions() -> dict[str, str]:
    versions = {}
    for name in DISTRIBUTIONS:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    try:
        import confluent_kafka

        versions["librdkafka"] = str(confluent_kafka.libversion()[0])
    except ImportError:
        pass
    return versions


def _kafkaline_commit(project_root: Path) -> str:
    commit = _run(["git", "rev-parse", "--short", "HEAD"], cwd=project_root)
    if not commit:
        return "unknown"
    dirty = _run(["git", "status", "--porcelain", "--untracked-files=no", "src"], cwd=project_root)
    return f"{commit} (plus uncommitted changes in src/)" if dirty else commit


def collect_machine_info(project_root: Path) -> MachineInfo:
    return MachineInfo(
        started_at=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        cpu_count=os.cpu_count() or 0,
        cpu_model=_first_line_of(Path("/proc/cpuinfo"), "model name") or platform.processor(),
        memory_gib=_memory_gib(),
        system=f"{platform.system()} {platform.release()} {platform.machine()}",
        python=f"{platform.python_implementation()} {platform.python_version()}",
        load_average_start=os.getloadavg(),
        versions=_versions(),
        broker=_run([resolve_broker_bin(), "--version"]) or "Tansu (version unknown)",
        kafkaline_commit=_kafkaline_commit(project_root),
    )


def scrub_paths(text: str) -> str:
    """``text`` with this machine's paths replaced by placeholders (error messages and
    tracebacks name files by absolute path)."""
    project_root = str(Path(__file__).resolve().parent.parent)
    replacements = {
        sys.prefix: "<venv>",
        project_root: ".",
        tempfile.gettempdir(): "<tmp>",
        str(Path.home()): "~",
    }
    for path in sorted(replacements, key=len, reverse=True):
        if len(path) > 1:
            text = text.replace(path, replacements[path])
    return text
