"""Build script for the optional C extension ``kafkaline._record_core``.

Everything else is declared in pyproject.toml. The extension is optional: without a C compiler
(or Python headers) the build logs one line and the package installs as pure Python, which is
the reference implementation the extension is tested against.
"""

from __future__ import annotations

import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


class OptionalBuildExt(build_ext):
    """build_ext that turns any failure to compile into one clear log line."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as error:  # no compiler at all: setuptools raises before compiling
            self._skipped(error)

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except Exception as error:
            self._skipped(error)

    @staticmethod
    def _skipped(error: Exception) -> None:
        reason = (str(error).splitlines() or [type(error).__name__])[0]
        if len(reason) > 100:
            reason = reason[:100] + "..."
        print(
            "kafkaline: the C record core was not built (no working C compiler?"
            f" {reason}); installing the pure-Python implementation",
            file=sys.stderr,
        )


setup(
    ext_modules=[
        Extension(
            "kafkaline._record_core",
            sources=["src/kafkaline/_record_core.c"],
            # The parts it #includes: a change to any of them rebuilds it (`make core`).
            depends=sorted(str(path) for path in Path("src/kafkaline").glob("_core_*.c")),
            extra_compile_args=["-O2"] if sys.platform != "win32" else [],
        )
    ],
    cmdclass={"build_ext": OptionalBuildExt},
)
