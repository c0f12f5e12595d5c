"""The record core in use: compiled (``kafkaline._record_core``) or the pure-Python reference.

:class:`RecordBatchBuilder` here is the one the producer uses. The compiled builder encodes
each record into the batch's buffer as it is appended and seals in C; the pure-Python
:class:`kafkaline.record.builder.RecordBatchBuilder` is the fallback and the reference: both
give the same batch bytes for the same records (a differential test checks it). Setting the
environment variable ``KAFKALINE_PURE_PYTHON=1`` before kafkaline is imported forces the pure
Python one; so does an install without a C compiler.

>>> core_build() in ("compiled", "python")
True
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING

from kafkaline.core_choice import PURE_PYTHON_ENV, load_compiled_core
from kafkaline.record import builder as _python_builder

__all__ = ["PURE_PYTHON_ENV", "RecordBatchBuilder", "compiled_core", "core_build"]

_CORE = load_compiled_core()

if TYPE_CHECKING:
    # The pure-Python builder is the interface both implement.
    from kafkaline.record.builder import RecordBatchBuilder
else:
    RecordBatchBuilder = (
        _python_builder.RecordBatchBuilder if _CORE is None else _CORE.RecordBatchBuilder
    )


def core_build() -> str:
    """``"compiled"`` when the C record core is in use, ``"python"`` for the pure-Python one."""
    return "python" if _CORE is None else "compiled"


def compiled_core() -> ModuleType | None:
    """The compiled core module when it is in use (for murmur2 and crc32c), else ``None``."""
    return _CORE
