"""The progress bar ``kafkaline produce --input FILE`` draws on a terminal.

:func:`render_progress` is pure (what the line says); :class:`ProgressBar` decides when to
redraw it and writes it, with the clock passed in.
"""

from __future__ import annotations

from typing import Final, TextIO

_MB: Final = 1_000_000.0
#: Redraw at most this often: a terminal redrawn for every record slows the producer down.
REDRAW_INTERVAL_S: Final = 0.1
_MIN_BAR_WIDTH: Final = 10


def _elapsed_text(elapsed_s: float) -> str:
    minutes, seconds = divmod(int(elapsed_s), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{seconds:02d}" if hours else f"{minutes}:{seconds:02d}"


def render_progress(
    records: int,
    bytes_read: int,
    total_bytes: int | None,
    elapsed_s: float,
    width: int = 80,
) -> str:
    """One line of progress, at most ``width`` characters: a bar and a percentage when the
    input's size is known, then records, records/s, MB/s (of input read) and elapsed time.

    >>> render_progress(5000, 500_000, 1_000_000, 2.0, width=72)
    '[##########          ]  50%  5000 records  2500 rec/s  0.25 MB/s  0:02'
    >>> render_progress(5000, 500_000, None, 2.0)
    '5000 records  2500 rec/s  0.25 MB/s  0:02'
    """
    elapsed = max(elapsed_s, 1e-9)
    stats = (
        f"{records} records  {records / elapsed:.0f} rec/s  "
        f"{bytes_read / _MB / elapsed:.2f} MB/s  {_elapsed_text(elapsed_s)}"
    )
    if not total_bytes:
        return stats[:width]
    fraction = min(bytes_read / total_bytes, 1.0)
    percent = f"{fraction * 100:3.0f}%"
    bar_width = width - len(stats) - len(percent) - 6  # brackets and the gaps
    if bar_width < _MIN_BAR_WIDTH:
        return f"{percent}  {stats}"[:width]
    bar_width = min(bar_width, 20 if width <= 80 else 40)
    filled = int(fraction * bar_width)
    return f"[{'#' * filled}{' ' * (bar_width - filled)}] {percent}  {stats}"


class ProgressBar:
    """Redraws the progress line on a terminal (carriage return, no newline) at most every
    :data:`REDRAW_INTERVAL_S`, and ends it with a newline."""

    def __init__(
        self, stream: TextIO, total_bytes: int | None, start_s: float, width: int = 80
    ) -> None:
        self._stream = stream
        self._total_bytes = total_bytes
        self._start_s = start_s
        self._width = max(width - 1, 20)  # the last column would wrap on some terminals
        self._last_draw_s = float("-inf")
        self._last_length = 0

    def update(self, records: int, bytes_read: int, now_s: float) -> None:
        """Redraw if the last redraw is old enough."""
        if now_s - self._last_draw_s >= REDRAW_INTERVAL_S:
            self._draw(records, bytes_read, now_s)

    def finish(self, records: int, bytes_read: int, now_s: float) -> None:
        """Draw the final state and move to the next line."""
        self._draw(records, bytes_read, now_s)
        self._stream.write("\n")
        self._stream.flush()

    def _draw(self, records: int, bytes_read: int, now_s: float) -> None:
        line = render_progress(
            records, bytes_read, self._total_bytes, now_s - self._start_s, self._width
        )
        # Blank out what is left of a longer previous line.
        padding = " " * max(self._last_length - len(line), 0)
        self._stream.write(f"\r{line}{padding}")
        self._stream.flush()
        self._last_length = len(line)
        self._last_draw_s = now_s
