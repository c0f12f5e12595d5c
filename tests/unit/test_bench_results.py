"""Benchmark runs write their files where git does not track them; only a published table,
the one the docs link to, lands in the committed benchmarks/results/."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# The benchmarks package is not installed: ask it from the project root, as `make bench` runs it.
_PROGRAM = """
import json, sys
from pathlib import Path
from benchmarks import cli, spark_bench
published = cli.publish_table("| a | b |\\n| --- | --- |\\n\\n", Path(sys.argv[1]), "partitions-")
print(json.dumps({
    "runs": [str(cli.RESULTS_DIR), str(spark_bench.RESULTS_DIR)],
    "published_dirs": [str(cli.PUBLISHED_DIR), str(spark_bench.PUBLISHED_DIR)],
    "published": str(published),
}))
"""


@pytest.fixture(scope="module")
def bench_paths(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    out = tmp_path_factory.mktemp("published")
    completed = subprocess.run(
        [sys.executable, "-c", _PROGRAM, str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    paths: dict[str, object] = json.loads(completed.stdout.strip().splitlines()[-1])
    return paths


def test_run_results_go_to_a_directory_git_ignores(bench_paths: dict[str, object]) -> None:
    runs = bench_paths["runs"]
    assert isinstance(runs, list)
    for results_dir in runs:
        relative = Path(results_dir).relative_to(ROOT)
        ignored = subprocess.run(
            ["git", "check-ignore", "--no-index", "-q", f"{relative}/latest.json"],
            cwd=ROOT,
            check=False,
        )
        assert ignored.returncode == 0, f"{relative} is not ignored by .gitignore"


def test_a_published_table_goes_to_the_committed_directory_without_a_chart(
    bench_paths: dict[str, object],
) -> None:
    assert bench_paths["published_dirs"] == [str(ROOT / "benchmarks" / "results")] * 2
    published = Path(str(bench_paths["published"]))
    assert published.name == "partitions-latest.md"
    assert published.read_text() == "| a | b |\n| --- | --- |\n"


def test_only_the_current_tables_are_committed() -> None:
    names = {path.name for path in (ROOT / "benchmarks" / "results").iterdir()}
    assert names - {"runs"} == {"latest.md", "spark-latest.md"}
