"""The import direction inside the daemon (``docs/architecture.md``, "Import rules"):

    app -> handlers -> domain (live, memory, voices, store, ...);  ipc is the transport

- nothing imports ``daemon.app`` but ``daemon.__main__``;
- the transport (``daemon.ipc``) imports only itself, the settings and the errors: it reaches
  the handlers only through the table ``dispatch`` is given;
- domain packages never import the transport or the handlers;
- a handler only translates: it never imports the sensitive-data gate (what is masked, and
  where, is the domain's policy: the store and the memory apply it, a handler shows it);
- the store imports nothing above it: only itself, the errors, the settings' types, the worker
  thread, the sensitive-data gate and the pure helpers named in ``STORE_HELPERS`` (never the
  memory: the memory reads the store, not the other way);
- the sensitive-data gate (``daemon.sensitive``) is pure: it imports nothing of ours but itself,
  so both the store and the memory mask with it;
- no import cycle among the daemon's modules, ``TYPE_CHECKING`` and function-level imports
  included (an import is an edge wherever it stands).

``tests/test_client_imports.py`` holds the clients' side of the same rule.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

TOP = ("daemon.app", "daemon.__main__")
TRANSPORT = "daemon.ipc"
HANDLERS = "daemon.handlers"
IPC_MAY_IMPORT = (TRANSPORT, "daemon.config", "daemon.errors")
SENSITIVE = "daemon.sensitive"
STORE_MAY_IMPORT = ("daemon.store", "daemon.errors", "daemon.config", "daemon.worker", SENSITIVE)
STORE_HELPERS = {
    # types only (TYPE_CHECKING): the Embedder protocol the indexing is given, EmbedProgress
    "daemon.llm.embed": "the Embedder protocol",
    # types only (TYPE_CHECKING): the Reranker protocol a search may be given
    "daemon.llm.rerank": "the Reranker protocol",
}


Graph = Mapping[str, Mapping[str, int]]  # module -> {imported module: line}


def modules(root: Path) -> dict[str, Path]:
    """Dotted name -> file of every module under ``root/daemon``."""
    found = {}
    for path in sorted((root / "daemon").rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def imports_of(path: Path, known: Mapping[str, Path]) -> dict[str, int]:
    """The daemon modules ``path`` imports (``from a import b`` is ``a.b`` when that is a
    module, else ``a``), each with the line of its first import, wherever the import stands."""

    def resolve(name: str) -> str | None:
        while name and name not in known:
            name = name.rpartition(".")[0]
        return name or None

    found: dict[str, int] = {}
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        names: list[str] = []
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [f"{node.module}.{alias.name}" for alias in node.names]
        for name in names:
            if name == "daemon" or name.startswith("daemon."):
                target = resolve(name)
                if target is not None:
                    found.setdefault(target, line)
    return found


def import_graph(root: Path) -> dict[str, dict[str, int]]:
    known = modules(root)
    graph = {}
    for name, path in known.items():
        graph[name] = {m: line for m, line in imports_of(path, known).items() if m != name}
    return graph


def within(module: str, *packages: str) -> bool:
    return any(module == p or module.startswith(f"{p}.") for p in packages)


def forbidden(graph: Graph) -> list[str]:
    """Every import that breaks the direction, as ``module:line -> imported (why)``."""
    wrong = []
    for module, imported in sorted(graph.items()):
        for target, line in sorted(imported.items()):
            why = None
            if target == "daemon.app" and module != "daemon.__main__":
                why = "only daemon.__main__ imports the app"
            elif within(module, TRANSPORT) and not within(target, *IPC_MAY_IMPORT):
                why = "the transport imports only the protocol side"
            elif within(module, "daemon.store") and within(target, "daemon.memory"):
                why = "the store never imports the memory"
            elif within(module, HANDLERS) and within(target, SENSITIVE):
                why = "a handler only translates: the domain applies the sensitive-data gate"
            elif within(module, SENSITIVE) and not within(target, SENSITIVE):
                why = "the sensitive-data gate imports nothing of ours"
            elif within(module, "daemon.store") and not (
                within(target, *STORE_MAY_IMPORT) or target in STORE_HELPERS
            ):
                why = "the store imports nothing above it"
            elif (not within(module, TRANSPORT, HANDLERS, *TOP)
                  and within(target, TRANSPORT, HANDLERS)):
                why = "the domain never imports the transport or the handlers"
            if why is not None:
                wrong.append(f"{module}:{line} -> {target} ({why})")
    return wrong


def cycles(graph: Graph) -> list[list[str]]:
    """The import cycles: every strongly connected group of two or more modules (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for target in graph.get(module, {}):
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == module:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def test_the_daemon_imports_in_one_direction() -> None:
    assert forbidden(import_graph(ROOT)) == []


def test_the_daemon_has_no_import_cycle() -> None:
    assert cycles(import_graph(ROOT)) == []


def test_every_store_helper_is_still_imported() -> None:
    graph = import_graph(ROOT)
    used = {target for module, imported in graph.items() if within(module, "daemon.store")
            for target in imported}
    for helper in STORE_HELPERS:
        assert helper in used, f"stale store helper {helper}"
    assert any(within(target, SENSITIVE) for target in used), "the store masks with the gate"


# -- the rule itself, on a made-up tree -----------------------------------------------------


def write_tree(root: Path, files: Mapping[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


@pytest.fixture
def tree(tmp_path: Path) -> Iterator[Path]:
    write_tree(tmp_path, {
        "daemon/__init__.py": "",
        "daemon/app.py": "from daemon.handlers import ask\n",
        "daemon/__main__.py": "import daemon.app\n",
        "daemon/handlers/__init__.py": "",
        "daemon/handlers/ask.py": "from daemon.ipc.protocol import Ask\nfrom daemon.memory import ask\n",
        "daemon/ipc/__init__.py": "",
        "daemon/ipc/protocol.py": "from daemon.errors import BrainCueError\n",
        "daemon/errors.py": "",
        "daemon/memory/__init__.py": "",
        "daemon/memory/ask.py": "from daemon.store import store\n",
        "daemon/sensitive/__init__.py": "",
        "daemon/sensitive/gate.py": "",
        "daemon/store/__init__.py": "",
        "daemon/store/store.py": "from daemon.sensitive.gate import mask_lines\n",
    })
    yield tmp_path


def test_a_tree_that_keeps_the_direction_passes(tree: Path) -> None:
    graph = import_graph(tree)
    assert graph["daemon.handlers.ask"] == {"daemon.ipc.protocol": 1, "daemon.memory.ask": 2}
    assert forbidden(graph) == [] and cycles(graph) == []


@pytest.mark.parametrize(("module", "source", "reason"), [
    ("daemon/memory/ask.py", "from daemon.ipc.protocol import AskReply\n",
     "the domain never imports the transport"),
    ("daemon/memory/ask.py", "def later():\n    from daemon.handlers import ask\n",
     "the domain never imports the transport or the handlers"),
    ("daemon/handlers/ask.py", "from typing import TYPE_CHECKING\n"
     "if TYPE_CHECKING:\n    from daemon.app import Daemon\n", "only daemon.__main__"),
    ("daemon/ipc/protocol.py", "from daemon.handlers import ask\n",
     "the transport imports only the protocol side"),
    ("daemon/store/store.py", "from daemon.memory.ask import Asker\n",
     "the store never imports the memory"),
    ("daemon/store/store.py", "from daemon.handlers.ask import ask\n",
     "the store imports nothing above it"),
    ("daemon/sensitive/gate.py", "from daemon.store.store import Store\n",
     "the sensitive-data gate imports nothing of ours"),
    ("daemon/handlers/ask.py", "from daemon.sensitive.gate import mask_lines\n",
     "a handler only translates"),
])
def test_a_forbidden_import_is_named(tree: Path, module: str, source: str, reason: str) -> None:
    path = tree / module
    path.write_text(path.read_text() + source)
    wrong = forbidden(import_graph(tree))
    assert len(wrong) == 1 and reason in wrong[0]
    assert wrong[0].startswith(module.removesuffix(".py").replace("/", "."))


def test_a_cycle_is_found_through_a_type_checking_import(tree: Path) -> None:
    path = tree / "daemon/store/store.py"
    path.write_text(path.read_text() + "from typing import TYPE_CHECKING\n"
                    "if TYPE_CHECKING:\n    from daemon.store.search import Hit\n")
    write_tree(tree, {"daemon/store/search.py": "from daemon.store.store import Store\n"})
    assert cycles(import_graph(tree)) == [["daemon.store.search", "daemon.store.store"]]
