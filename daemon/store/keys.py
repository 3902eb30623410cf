"""The database key: where it is kept and how a new one is made.

A profile's database (and its backups and vector indexes) is encrypted with one 256-bit key,
looked for in this order:

1. ``BRAINCUE_KEY``: a passphrase, stretched with scrypt (for scripts and servers that keep
   their secrets in the environment);
2. the OS key store through ``keyring`` (Secret Service on Linux desktops, the macOS Keychain),
   service ``braincue``, one entry per profile;
3. a key file ``<config dir>/keys/<profile>.key`` (0600) — where a new key goes on a machine
   without a key store (a server, CI). It keeps the data from other accounts and from a copy
   of the data directory, not from someone who can log in as you.

A new key is random (``secrets``), never derived from anything on the machine.
"""

from __future__ import annotations

import hashlib
import logging
import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from daemon.errors import StoreError

if TYPE_CHECKING:
    from daemon.config import Paths

log = logging.getLogger(__name__)

KEYRING_SERVICE = "braincue"
KEY_ENV = "BRAINCUE_KEY"
NEW_KEY_ENV = "BRAINCUE_NEW_KEY"  # the passphrase `security rekey` moves to, with BRAINCUE_KEY
SQLITE_HEADER = b"SQLite format 3\x00"
FileState = Literal["missing", "plain", "encrypted"]


@dataclass(frozen=True)
class DatabaseKey:
    """A key (64 hex digits) and where it came from (for messages; never the key itself)."""

    hex: str = field(repr=False)
    where: str

    @property
    def raw(self) -> bytes:
        return bytes.fromhex(self.hex)


def stretch(passphrase: str, profile: str) -> str:
    """A passphrase as a 256-bit key (scrypt, salted with the profile's name)."""
    salt = f"braincue database key:{profile}".encode()
    return hashlib.scrypt(passphrase.encode(), salt=salt, n=2**14, r=8, p=1, dklen=32).hex()


def file_state(path: Path) -> FileState:
    """Whether a database file is absent (or empty), plain SQLite, or anything else — which
    is an encrypted database, or a damaged one: only the key tells them apart."""
    try:
        with path.open("rb") as f:
            header = f.read(len(SQLITE_HEADER))
    except FileNotFoundError:
        return "missing"
    if not header:
        return "missing"
    return "plain" if header == SQLITE_HEADER else "encrypted"


def _keyring() -> Any | None:
    """The OS key store, or None when this machine has none that works."""
    try:
        import keyring
        from keyring.backends import chainer, fail, null

        backend = keyring.get_keyring()
    except Exception as e:  # a broken keyring configuration is "no key store", said once
        log.warning("the OS key store is not usable: %s", e)
        return None
    if isinstance(backend, fail.Keyring | null.Keyring):
        return None
    if isinstance(backend, chainer.ChainerBackend) and not backend.backends:
        return None
    return backend


class KeyStore:
    """The keys of one profile (see the module docstring for the order)."""

    def __init__(self, paths: Paths) -> None:
        self.profile = paths.profile
        self.key_file = paths.config_dir / "keys" / f"{paths.profile}.key"
        self._account = f"database key ({paths.profile})"

    def describe(self) -> str:
        """Where keys are looked for, for messages."""
        return f"{KEY_ENV}, the OS key store ({KEYRING_SERVICE}), or {self.key_file}"

    def find(self) -> DatabaseKey | None:
        passphrase = os.environ.get(KEY_ENV)
        if passphrase:
            return DatabaseKey(stretch(passphrase, self.profile), KEY_ENV)
        backend = _keyring()
        if backend is not None:
            try:
                stored = backend.get_password(KEYRING_SERVICE, self._account)
            except Exception as e:  # locked, or its D-Bus service is gone
                log.warning("could not read the OS key store: %s", e)
                stored = None
            if stored:
                return DatabaseKey(stored, "the OS key store")
        try:
            text = self.key_file.read_text().strip()
        except FileNotFoundError:
            return None
        except OSError as e:
            raise StoreError(f"cannot read the key file {self.key_file}: {e.strerror}") from e
        return DatabaseKey(text, str(self.key_file))

    def create(self) -> DatabaseKey:
        """A new random key, kept in the key store (or the key file without one)."""
        return self.keep(secrets.token_hex(32))

    def next_key(self) -> DatabaseKey:
        """The key ``security rekey`` moves to: ``BRAINCUE_NEW_KEY`` when the key comes from
        the environment, else a new random key (not kept until :meth:`keep`)."""
        if os.environ.get(KEY_ENV):
            passphrase = os.environ.get(NEW_KEY_ENV)
            if not passphrase:
                raise StoreError(f"the key comes from {KEY_ENV}",
                                 fix=f"set {NEW_KEY_ENV} to the new passphrase")
            return DatabaseKey(stretch(passphrase, self.profile), NEW_KEY_ENV)
        return DatabaseKey(secrets.token_hex(32), "new")

    @property
    def staged_file(self) -> Path:
        return self.key_file.with_name(f"{self.profile}.next.key")

    def stage(self, key: DatabaseKey) -> None:
        """Write the key a re-encryption is moving to before it starts (0600): a crash before
        :meth:`keep` then loses nothing — :meth:`staged` has it."""
        _write_private(self.staged_file, key.hex)

    def staged(self) -> DatabaseKey | None:
        try:
            return DatabaseKey(self.staged_file.read_text().strip(), str(self.staged_file))
        except FileNotFoundError:
            return None

    def unstage(self) -> None:
        self.staged_file.unlink(missing_ok=True)

    def keep(self, key_hex: str) -> DatabaseKey:
        """Store ``key_hex`` as this profile's key (replacing the one there)."""
        if os.environ.get(KEY_ENV):  # the user keeps it; nothing to store
            return DatabaseKey(key_hex, KEY_ENV)
        backend = _keyring()
        if backend is not None:
            try:
                backend.set_password(KEYRING_SERVICE, self._account, key_hex)
                self.key_file.unlink(missing_ok=True)  # one place only
                return DatabaseKey(key_hex, "the OS key store")
            except Exception as e:
                log.warning("could not write to the OS key store (%s): using a key file", e)
        _write_private(self.key_file, key_hex)
        return DatabaseKey(key_hex, str(self.key_file))


def _write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically, readable by the user alone."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text + "\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def key_for(paths: Paths, db_path: Path, *, encrypt: bool) -> DatabaseKey | None:
    """The key to open ``db_path`` with: None for a plain database (or a new one when
    ``encrypt`` is off); a new key for a new database; a clear error when the database is
    encrypted and no key is found (never a new empty database in its place)."""
    state = file_state(db_path)
    store = KeyStore(paths)
    if state == "plain":
        if encrypt:
            log.warning("the database %s is not encrypted: `braincue security encrypt` "
                        "encrypts it", db_path)
        return None
    if state == "missing":
        if not encrypt:
            return None
        return store.find() or store.create()
    key = store.find()
    if key is None:
        raise StoreError(
            f"the database {db_path} is encrypted (or damaged) and no key for it was found "
            f"(looked in {store.describe()})",
            fix=f"set {KEY_ENV} to its passphrase or put its key back; "
                "`braincue backup list` shows the backups",
        )
    return key
