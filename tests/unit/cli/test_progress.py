"""The progress bar: what it says, how wide it is, how often it redraws."""

from __future__ import annotations

import io

import pytest

from kafkaline.cli.progress import ProgressBar, render_progress


@pytest.mark.parametrize("width", [20, 40, 60, 80, 120, 200])
def test_the_line_never_exceeds_the_width(width: int) -> None:
    for total in (None, 10**9):
        line = render_progress(123_456, 50_000_000, total, 3723.0, width)
        assert len(line) <= width


def test_with_a_known_size_it_shows_a_bar_and_a_percentage() -> None:
    line = render_progress(3, 250, 1000, 1.0, width=100)
    assert line.startswith("[")
    assert " 25%" in line
    assert "3 records" in line


def test_without_a_size_it_shows_counts_and_rates_only() -> None:
    assert render_progress(10, 2_000_000, None, 2.0) == "10 records  5 rec/s  1.00 MB/s  0:02"


def test_hours_in_the_elapsed_time() -> None:
    assert render_progress(1, 1, None, 3723.0).endswith("1:02:03")


def test_redraws_are_throttled_and_finish_ends_the_line() -> None:
    stream = io.StringIO()
    bar = ProgressBar(stream, total_bytes=100, start_s=0.0, width=80)
    bar.update(1, 10, now_s=0.00)
    bar.update(2, 20, now_s=0.05)  # too soon: not drawn
    bar.update(3, 30, now_s=0.20)
    bar.finish(4, 100, now_s=0.30)
    text = stream.getvalue()
    assert text.count("\r") == 3
    assert text.endswith("\n")
    assert "100%" in text.split("\r")[-1]


def test_a_shorter_line_blanks_out_the_longer_one_before_it() -> None:
    stream = io.StringIO()
    bar = ProgressBar(stream, total_bytes=None, start_s=0.0, width=80)
    bar.update(1_000_000, 10**9, now_s=1.0)
    first = stream.getvalue()
    bar.update(1, 1, now_s=100.0)
    second = stream.getvalue()[len(first) :]
    assert len(second) == len(first)
