"""Whether the compiled core (``kafkaline._record_core``) is in use.

It is, unless the environment variable ``KAFKALINE_PURE_PYTHON`` is set to anything but ``""``
or ``"0"`` before kafkaline is imported, or the package was installed without a C compiler.
A leaf module (it imports nothing of the package), so every layer asks the same question the
same way: the record layer for its builder, the protocol layer for its produce framing.
"""

from __future__ import annotations

import os
from types import ModuleType

__all__ = ["PURE_PYTHON_ENV", "load_compiled_core"]

#: The environment variable that forces the pure-Python implementation.
PURE_PYTHON_ENV = "KAFKALINE_PURE_PYTHON"


def load_compiled_core() -> ModuleType | None:
    """The compiled core module, or None when the pure-Python build is forced or not built."""
    if os.environ.get(PURE_PYTHON_ENV, "") not in ("", "0"):
        return None
    try:
        from kafkaline import _record_core
    except ImportError:  # built without a C compiler: the pure-Python core
        return None
    return _record_core
