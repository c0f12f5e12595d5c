"""Reading input lines: endings, prompts, files."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from kafkaline.cli.input_lines import open_input, read_lines, strip_line_ending


@pytest.mark.parametrize(
    ("raw", "line"),
    [(b"a\n", b"a"), (b"a\r\n", b"a"), (b"a", b"a"), (b"\n", b""), (b"a\r", b"a\r")],
)
def test_strip_line_ending(raw: bytes, line: bytes) -> None:
    assert strip_line_ending(raw) == line


def test_read_lines_prompts_before_each_line_and_once_at_the_end() -> None:
    prompts: list[int] = []
    lines = list(read_lines(io.BytesIO(b"one\ntwo\nlast"), lambda: prompts.append(1)))
    assert lines == [b"one\n", b"two\n", b"last"]
    assert len(prompts) == 3 + 1  # the last prompt is answered by end of input


def test_a_regular_file_reports_its_size_and_is_not_interactive(tmp_path: Path) -> None:
    path = tmp_path / "lines.txt"
    path.write_bytes(b"a\nb\n")
    with open_input(str(path)) as source:
        assert (source.interactive, source.total_bytes) == (False, 4)
        assert source.stream.read() == b"a\nb\n"
    assert source.stream.closed


def test_a_missing_file_raises_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        open_input(str(tmp_path / "missing.txt"))
