"""Commit subjects stay under 72 characters (details go in the body), so that
``git log --oneline`` can be read. Checked for the commits after the one that started the rule;
older subjects cannot be changed without rewriting history. Skipped outside a git checkout
(an sdist) or where that commit is not in the history (a shallow clone)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# The last commit of 2026-11-29's second session: every subject after it is held to the rule.
RULE_STARTS_AFTER = "13eb5f7"
LIMIT = 72


def _git(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=False
    )


def test_commit_subjects_after_the_rule_are_under_72_characters() -> None:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    if _git("cat-file", "-e", f"{RULE_STARTS_AFTER}^{{commit}}").returncode != 0:
        pytest.skip(f"commit {RULE_STARTS_AFTER} is not in this history (shallow clone?)")
    log = _git("log", "--format=%h %s", f"{RULE_STARTS_AFTER}..HEAD")
    assert log.returncode == 0, log.stderr
    too_long = [line for line in log.stdout.splitlines() if len(line.split(" ", 1)[1]) >= LIMIT]
    assert not too_long, f"commit subjects of {LIMIT} characters or more: {too_long}"
