"""The library logs through the ``kafkaline`` logger and prints nothing unless the application
configures logging (a NullHandler on the package logger, the library convention)."""

from __future__ import annotations

import logging
import subprocess
import sys


def test_the_package_logger_has_a_null_handler() -> None:
    import kafkaline

    handlers = logging.getLogger(kafkaline.__name__).handlers
    assert any(isinstance(handler, logging.NullHandler) for handler in handlers)


def test_a_library_warning_prints_nothing_without_logging_configured() -> None:
    # A fresh interpreter: without the NullHandler, Python's last-resort handler would print
    # the warning on stderr.
    code = (
        "import logging, kafkaline; "
        "logging.getLogger('kafkaline.net.connection').warning('connection failed')"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stderr == ""


def test_a_library_warning_reaches_a_configured_application() -> None:
    code = (
        "import logging, kafkaline; logging.basicConfig(format='%(name)s %(message)s'); "
        "logging.getLogger('kafkaline.net.connection').warning('connection failed')"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stderr == "kafkaline.net.connection connection failed\n"
