"""Where ``kafkaline produce`` reads its lines: standard input or a file, as raw bytes."""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import TracebackType
from typing import BinaryIO

STDIN_NAME = "-"


@dataclass
class InputSource:
    """An open input: the byte stream, whether a person types into it, and its size when it
    is a regular file (for the progress bar's percentage)."""

    stream: BinaryIO
    interactive: bool
    total_bytes: int | None
    owns_stream: bool

    def __enter__(self) -> InputSource:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self.owns_stream:
            self.stream.close()


def open_input(path: str | None) -> InputSource:
    """Standard input for None or ``-``, else the file (FileNotFoundError and friends when it
    cannot be opened: the caller reports them as a missing file)."""
    if path is None or path == STDIN_NAME:
        stream: BinaryIO = sys.stdin.buffer
        owns = False
    else:
        stream = open(path, "rb")  # noqa: SIM115 - closed by InputSource.__exit__
        owns = True
    interactive = stream.isatty()
    total_bytes: int | None = None
    if not interactive:
        info = os.fstat(stream.fileno())
        total_bytes = info.st_size if stat.S_ISREG(info.st_mode) else None
    return InputSource(stream, interactive, total_bytes, owns)


def strip_line_ending(raw_line: bytes) -> bytes:
    """The line without its ``\\n`` or ``\\r\\n`` (the last line may have neither).

    >>> strip_line_ending(b"k\\tv\\r\\n"), strip_line_ending(b"last")
    (b'k\\tv', b'last')
    """
    if raw_line.endswith(b"\n"):
        raw_line = raw_line[:-2] if raw_line.endswith(b"\r\n") else raw_line[:-1]
    return raw_line


def read_lines(stream: BinaryIO, prompt: Callable[[], None] | None = None) -> Iterator[bytes]:
    """Raw lines (with their endings, so callers can count bytes) until end of input;
    ``prompt`` is called before each line is waited for."""
    while True:
        if prompt is not None:
            prompt()
        raw_line = stream.readline()
        if not raw_line:
            return
        yield raw_line
