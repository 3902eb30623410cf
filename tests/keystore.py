"""A key store for tests: a keyring backend keeping its entries in a JSON file under
BRAINCUE_HOME, so that a daemon subprocess and the test see the same "OS key store" without
touching the machine's. Select it with PYTHON_KEYRING_BACKEND=keystore.FileKeyring (and tests/
on PYTHONPATH)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from keyring.backend import KeyringBackend


class FileKeyring(KeyringBackend):
    priority = 1  # type: ignore[assignment]

    @property
    def path(self) -> Path:
        return Path(os.environ["BRAINCUE_HOME"]) / "test-keyring.json"

    def _entries(self) -> dict[str, str]:
        try:
            entries: dict[str, str] = json.loads(self.path.read_text())
        except FileNotFoundError:
            return {}
        return entries

    def get_password(self, service: str, username: str) -> str | None:
        return self._entries().get(f"{service}/{username}")

    def set_password(self, service: str, username: str, password: str) -> None:
        entries = self._entries()
        entries[f"{service}/{username}"] = password
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(json.dumps(entries))

    def delete_password(self, service: str, username: str) -> None:
        entries = self._entries()
        entries.pop(f"{service}/{username}", None)
        self.path.write_text(json.dumps(entries))
