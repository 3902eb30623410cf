"""The user's own model files, registered beside the built-in models (``braincue models add``).

A file is checked before it is registered (:mod:`daemon.models.gguf_check`) and pinned by its
sha256; it stays where it is (nothing is copied) and is named in ``own-models.json`` in the
user's config directory. Its entry's ``filename`` is its absolute path, so every lookup of the
registry (``models_dir / filename``) finds it. A name never shadows a built-in model.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Sequence
from pathlib import Path

from daemon.errors import ConfigError, InvalidInput, ModelError
from daemon.models.gguf_check import GgufHeader, check_language_model
from daemon.models.registry import ENTRIES, Entry, Role

OWN_FILE = "own-models.json"
CHUNK = 1 << 20


def own_file(config_dir: Path) -> Path:
    return config_dir / OWN_FILE


def own_entries(config_dir: Path) -> list[Entry]:
    """The models the user added, as registry entries."""
    try:
        rows = json.loads(own_file(config_dir).read_text())
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as e:
        raise ConfigError(f"cannot read {own_file(config_dir)}: {e}",
                          fix="fix it, or delete it and add your models again") from e
    return [Entry(name=r["name"], role=r["role"], format="gguf",
                  description=r.get("description", "your own model"), filename=r["path"],
                  own_sha256=r["sha256"]) for r in rows]


def all_entries(config_dir: Path | None) -> tuple[Entry, ...]:
    """The built-in models, then the user's own."""
    return ENTRIES if config_dir is None else (*ENTRIES, *own_entries(config_dir))


def default_name(path: Path) -> str:
    """A model name from a file name: ``Qwen2.5-1.5B-Instruct-Q4_K_M.gguf`` ->
    ``qwen2.5-1.5b-instruct-q4_k_m``."""
    return re.sub(r"[^a-z0-9._-]+", "-", path.stem.lower()).strip("-") or "model"


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def add_own(config_dir: Path, path: Path, role: Role, name: str = "") -> tuple[Entry, GgufHeader]:
    """Check ``path`` as a model for ``role``, pin it and register it as ``name`` (default: from
    its file name), replacing an own model of that name. ModelError when the file cannot serve;
    nothing is registered then."""
    if role != "llm":
        raise InvalidInput(f"role {role!r}: only a language model (llm) can be added",
                           fix="--role llm")
    path = path.expanduser().absolute()
    if not path.is_file():
        raise ModelError(f"no model file at {path}", fix="give the path of a .gguf file")
    name = name or default_name(path)
    if not re.fullmatch(r"[A-Za-z0-9._-]{1,80}", name):
        raise InvalidInput(f"model name {name!r}: use letters, digits, '.', '_' or '-'",
                           fix="choose another --name")
    if any(e.name == name for e in ENTRIES):
        raise InvalidInput(f"{name} is the name of a built-in model",
                           fix="choose another --name")
    header = check_language_model(path)
    entry = Entry(name=name, role=role, format="gguf",
                  description=f"your own model: {header.name or header.architecture}, "
                              f"{header.architecture}, context {header.context_length}",
                  filename=str(path), own_sha256=sha256_of(path))
    _write(config_dir, [*(e for e in own_entries(config_dir) if e.name != name), entry])
    return entry, header


def _write(config_dir: Path, entries: Sequence[Entry]) -> None:
    rows = [{"name": e.name, "role": e.role, "path": e.filename, "sha256": e.own_sha256,
             "description": e.description} for e in entries]
    config_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    target = own_file(config_dir)
    tmp = target.with_suffix(".tmp")
    tmp.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, target)
