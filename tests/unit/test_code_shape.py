"""The source stays readable in pieces (issue 18): no module of src/kafkaline over 600 lines,
no function over 60, in the Python and in the compiled core's C parts alike. A piece that
outgrows them is split by what it does, not wrapped to fit."""

from __future__ import annotations

import ast
import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "kafkaline"
MODULE_LINES = 600
FUNCTION_LINES = 60


def _sources(suffix: str) -> list[Path]:
    return sorted(path for path in SRC.rglob(f"*{suffix}") if "__pycache__" not in path.parts)


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def _c_function_spans(lines: list[str]) -> list[tuple[int, int]]:
    # The core's style: a function's body opens with "{" alone at the start of a line and
    # closes with "}" at the start of a line (struct and table bodies open on their line).
    spans = []
    start = None
    for number, line in enumerate(lines, 1):
        if line == "{":
            start = number
        elif line.startswith("}") and start is not None:
            spans.append((start, number))
            start = None
    return spans


def test_the_sources_are_found() -> None:
    assert len(_sources(".py")) > 50
    assert len(_sources(".c")) > 5


def test_no_module_is_over_600_lines() -> None:
    long = [
        f"{path.relative_to(SRC)}: {len(_lines(path))} lines"
        for path in _sources(".py") + _sources(".c")
        if len(_lines(path)) > MODULE_LINES
    ]
    assert not long, f"split these modules (at most {MODULE_LINES} lines): {long}"


def test_no_python_function_is_over_60_lines() -> None:
    long = []
    for path in _sources(".py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                size = (node.end_lineno or node.lineno) - node.lineno + 1
                if size > FUNCTION_LINES:
                    long.append(f"{path.relative_to(SRC)}:{node.lineno} {node.name}, {size}")
    assert not long, f"split these functions (at most {FUNCTION_LINES} lines): {long}"


def test_no_c_function_is_over_60_lines() -> None:
    long = [
        f"{path.relative_to(SRC)}:{start}, {end - start + 1} lines"
        for path in _sources(".c")
        for start, end in _c_function_spans(_lines(path))
        if end - start + 1 > FUNCTION_LINES
    ]
    assert not long, f"split these C functions (at most {FUNCTION_LINES} lines): {long}"


# A function whose body opens on its signature's line ("f(void) {"), which the finder above
# would not see: top level, a closing parenthesis, then the brace; not an initialiser ("= {").
_BRACE_ON_SIGNATURE = re.compile(r"^[A-Za-z_][^=]*\)\s*\{\s*$")


def test_every_c_function_opens_its_body_on_a_line_of_its_own() -> None:
    hidden = [
        f"{path.relative_to(SRC)}:{number}"
        for path in _sources(".c") + _sources(".h")
        for number, line in enumerate(_lines(path), 1)
        if _BRACE_ON_SIGNATURE.match(line)
    ]
    assert not hidden, f"open these bodies with '{{' alone on a line (the size check): {hidden}"


def test_the_c_function_finder_sees_a_function() -> None:
    lines = ["static int", "f(void)", "{", "    return 0;", "}", "struct s {", "    int a;", "};"]
    assert _c_function_spans(lines) == [(3, 5)]
    assert _BRACE_ON_SIGNATURE.match("static int f(void) {")
    assert not _BRACE_ON_SIGNATURE.match("static PyMethodDef methods[] = {")
