"""Sizes one can hold in mind: no function in ``daemon/`` or ``clients/`` over 80 lines (from its
``def`` to its last line, the functions nested in it included), no module of the store over 600
lines, none of the transport over 400. What grows past them is split along its seams."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LONGEST = 80
MODULE_LIMITS = {"daemon/store": 600, "daemon/ipc": 400}


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


def test_no_module_of_the_store_or_the_transport_is_over_its_limit() -> None:
    found = [f"{path.relative_to(ROOT)} ({lines} lines, limit {limit})"
             for package, limit in MODULE_LIMITS.items()
             for path in sorted((ROOT / package).rglob("*.py"))
             if (lines := len(path.read_text().splitlines())) > limit]
    assert found == []
