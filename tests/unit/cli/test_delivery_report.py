"""The produce command's delivery report: counts, failures on stderr (capped), summary."""

from __future__ import annotations

import io
import threading

from kafkaline.cli.delivery_report import DeliveryReport
from kafkaline.errors import DeliveryTimeoutError


def test_failures_name_the_line_and_the_reason() -> None:
    stream = io.StringIO()
    report = DeliveryReport(stream)
    report.failed(12, DeliveryTimeoutError("expired after 120000 ms"))
    assert stream.getvalue() == "kafkaline: record from line 12 failed: expired after 120000 ms\n"


def test_failures_beyond_the_cap_are_counted_not_printed() -> None:
    stream = io.StringIO()
    report = DeliveryReport(stream, max_failures_shown=3)
    for line_number in range(1, 11):
        report.failed(line_number, TimeoutError("t"))
    lines = stream.getvalue().splitlines()
    assert len(lines) == 4
    assert "more than 3 records failed" in lines[-1]
    assert report.failures == 10
    assert report.summary(1.0) == "kafkaline: 0 records sent, 10 failed, 1.00 s\n"


def test_summary_after_an_interrupt_says_so() -> None:
    report = DeliveryReport(io.StringIO())
    report.acknowledged(None)
    assert report.summary(0.25, interrupted=True) == (
        "kafkaline: interrupted: 1 records sent, 0 failed, 0.25 s\n"
    )


def test_counts_are_exact_when_many_threads_complete_records() -> None:
    report = DeliveryReport(io.StringIO(), max_failures_shown=0)

    def complete() -> None:
        for i in range(2000):
            if i % 4:
                report.acknowledged(None)
            else:
                report.failed(i, TimeoutError("t"))

    threads = [threading.Thread(target=complete) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert (report.sent, report.failures) == (8 * 1500, 8 * 500)
