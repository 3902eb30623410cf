"""A newcomer's path through the docs names every package: README -> docs/architecture.md ->
each package's docstring."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def packages() -> list[Path]:
    return sorted(
        init.parent.relative_to(ROOT)
        for top in ("daemon", "clients")
        for init in (ROOT / top).rglob("__init__.py")
    )


def test_the_readme_leads_to_the_architecture() -> None:
    assert "docs/architecture.md" in (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_architecture_names_every_package() -> None:
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    found = packages()
    assert Path("daemon/store") in found and Path("clients/cli") in found
    missing = [str(p) for p in found if f"`{p}`" not in page and f"`{p}/" not in page]
    assert not missing, f"docs/architecture.md does not name: {missing}"


def test_every_package_says_what_it_holds() -> None:
    silent = [
        str(p)
        for p in packages()
        if not ast.get_docstring(ast.parse((ROOT / p / "__init__.py").read_text()))
    ]
    assert not silent, f"packages without a docstring: {silent}"
