"""The import direction: clients speak the protocol and nothing else of the daemon.

A client may import the protocol, the client library, settings and paths, and the errors. Two
commands are deliberately local and documented exceptions: `braincue models ...` manages model
files on disk (it must work before any daemon runs, and the daemon needs its models) and the
API key of a language model server, and
`braincue transcribe FILE` runs the speech engine once, in the shell's own process, without a
daemon (a check that a model works on this machine), `braincue doctor` looks at the models and
the key store as those commands do, and `braincue security ...` / `backup ...`
work on the profile's files (a restore or a change of key replaces the database file, which
only a stopped daemon lets go of, and a damaged database keeps the daemon from starting at all).
Everything else that touches the store goes through the daemon.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CLIENTS = ROOT / "clients"

ALLOWED = ("daemon.ipc.protocol", "daemon.ipc.client", "daemon.config", "daemon.errors")
EXCEPTIONS = {
    # and `braincue models api-key` keeps a language model server's key in the OS key store
    "clients/cli/models.py": ("daemon.models", "daemon.llm.credentials"),
    "clients/cli/audio.py": ("daemon.asr", "daemon.audio", "daemon.models.registry"),
    "clients/cli/security.py": ("daemon.store", "daemon.ipc.runtime"),
    "clients/cli/doctor.py": ("daemon.models.registry", "daemon.store.security"),
}


def daemon_imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every ``daemon`` module the file imports, wherever the import is."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            # `from daemon.ipc import protocol` imports daemon.ipc.protocol
            found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
    return [(line, module) for line, module in found
            if module == "daemon" or module.startswith("daemon.")]


def allowed(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(f"{p}.") for p in prefixes)


def test_rule_sees_every_kind_of_import(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import daemon.store.store\n"
        "from daemon.ipc import protocol, server\n"
        "from daemon.ipc.client import Client\n"
        "def later():\n"
        "    from daemon.llm import embed\n"
        "from . import sibling\n"
    )
    imports = daemon_imports(sample)
    assert imports == [(1, "daemon.store.store"), (2, "daemon.ipc.protocol"),
                       (2, "daemon.ipc.server"), (3, "daemon.ipc.client.Client"),
                       (5, "daemon.llm.embed")]
    assert [m for _, m in imports if not allowed(m, ALLOWED)] == [
        "daemon.store.store", "daemon.ipc.server", "daemon.llm.embed"]


def test_clients_import_only_the_protocol_side() -> None:
    files = sorted(CLIENTS.rglob("*.py"))
    assert files
    wrong = []
    for path in files:
        name = path.relative_to(ROOT).as_posix()
        permitted = ALLOWED + EXCEPTIONS.get(name, ())
        wrong += [f"{name}:{line}: {module}" for line, module in daemon_imports(path)
                  if not allowed(module, permitted)]
    assert wrong == []
    for name in EXCEPTIONS:
        assert (ROOT / name).is_file(), f"stale exception {name}"


@pytest.mark.parametrize("module", ["clients.cli.store", "clients.cli.status", "clients.cli.live"])
def test_protocol_commands_do_not_load_the_store(module: str) -> None:
    loaded = subprocess.run(
        [sys.executable, "-c", f"import json, sys, {module}; "
         "print(json.dumps([m for m in sys.modules if m.startswith('daemon.')]))"],
        cwd=ROOT, capture_output=True, text=True, check=True).stdout
    modules = set(json.loads(loaded))
    assert not {m for m in modules if m.startswith(("daemon.store", "daemon.llm", "daemon.asr",
                                                    "daemon.memory", "daemon.live"))}
    assert "daemon.ipc.protocol" in modules
