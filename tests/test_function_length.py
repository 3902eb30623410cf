"""No function in ``daemon/`` or ``clients/`` is longer than 80 lines (from its ``def`` to its
last line, the functions nested in it included): a longer one is split along its seams."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LONGEST = 80


def too_long(source: str, name: str) -> list[str]:
    """``name:line function (lines)`` for every function of ``source`` over ``LONGEST``."""
    found = []
    for node in ast.walk(ast.parse(source, name)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            lines = (node.end_lineno or node.lineno) - node.lineno + 1
            if lines > LONGEST:
                found.append(f"{name}:{node.lineno} {node.name} ({lines} lines)")
    return found


def test_no_function_is_over_80_lines() -> None:
    found = [long for package in ("daemon", "clients")
             for path in sorted((ROOT / package).rglob("*.py"))
             for long in too_long(path.read_text(), str(path.relative_to(ROOT)))]
    assert found == []


def test_a_long_function_is_named() -> None:
    def source(body_lines: int) -> str:
        return "x = 1\n\n" + "async def f():\n" + "".join(
            f"    x{i} = {i}\n" for i in range(body_lines))

    assert too_long(source(LONGEST - 1), "m.py") == []
    assert too_long(source(LONGEST), "m.py") == ["m.py:3 f (81 lines)"]
