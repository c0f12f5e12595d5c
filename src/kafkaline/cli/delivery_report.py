"""What ``kafkaline produce`` tells the user about deliveries: each failure on stderr with its
reason, and a one-line summary at the end."""

from __future__ import annotations

import threading
from typing import Final, TextIO

from kafkaline.cli.error_report import PROGRAM, one_line_description

#: Failures printed one by one; past this they are only counted (the summary has the total),
#: so that a broker going away does not bury the terminal under identical lines.
MAX_FAILURES_SHOWN: Final = 100


class DeliveryReport:
    """Counts acknowledged and failed records and reports failures as they happen.

    Thread-safe: the producer completes records on its I/O thread, and a record that fails
    inside ``send()`` is reported from the reading thread.

    >>> import io
    >>> stream = io.StringIO()
    >>> report = DeliveryReport(stream)
    >>> report.acknowledged(None)
    >>> report.failed(2, TimeoutError("no answer"))
    >>> print(stream.getvalue() + report.summary(elapsed_s=0.5), end="")
    kafkaline: record from line 2 failed: no answer
    kafkaline: 1 records sent, 1 failed, 0.50 s
    """

    def __init__(self, stream: TextIO, max_failures_shown: int = MAX_FAILURES_SHOWN) -> None:
        self._stream = stream
        self._max_failures_shown = max_failures_shown
        self._lock = threading.Lock()
        self.sent = 0
        self.failures = 0

    def acknowledged(self, metadata: object) -> None:
        """A record was acknowledged (the future's callback)."""
        with self._lock:
            self.sent += 1

    def failed(self, line_number: int, error: BaseException) -> None:
        """The record made from line ``line_number`` failed with ``error``."""
        with self._lock:
            self.failures += 1
            shown = self.failures
        if shown <= self._max_failures_shown:
            self._write(f"{PROGRAM}: record from line {line_number} failed: "
                        f"{one_line_description(error)}\n")  # fmt: skip
        elif shown == self._max_failures_shown + 1:
            self._write(
                f"{PROGRAM}: more than {self._max_failures_shown} records failed; "
                "further failures are only counted\n"
            )

    def summary(self, elapsed_s: float, *, interrupted: bool = False) -> str:
        """The one-line summary: records sent (acknowledged), failed, elapsed seconds."""
        with self._lock:
            sent, failures = self.sent, self.failures
        prefix = "interrupted: " if interrupted else ""
        return f"{PROGRAM}: {prefix}{sent} records sent, {failures} failed, {elapsed_s:.2f} s\n"

    def write_summary(self, elapsed_s: float, *, interrupted: bool = False) -> None:
        """Write :meth:`summary` to the report's stream."""
        self._write(self.summary(elapsed_s, interrupted=interrupted))

    def _write(self, text: str) -> None:
        with self._lock:
            self._stream.write(text)
            self._stream.flush()
