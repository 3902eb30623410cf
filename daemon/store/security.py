"""Encryption of a profile at rest: what is encrypted, and moving a database to a (new) key.

``encrypt`` turns a plain database into an encrypted one in place; ``rekey`` moves an encrypted
one to a new key. Both run with the daemon stopped and the same way: a verified copy first (a
backup, its row counts equal to the database's), then SQLite3 Multiple Ciphers re-encrypts the
file (in rollback-journal mode: its rekey does not work on a WAL database), then the file is
opened again with the new key and its counts compared once more. The backups follow the new
key; the vector index files, sealed with a key derived from the database key, are removed and
rebuilt (sealed) at the next start. On a failure the verified copy stays and the error says
where it is. The new key is written aside (``keys/<profile>.next.key``) before the file is
touched, so a crash midway leaves a database that one of the two keys opens
(:meth:`daemon.store.store.Store.open` tries the staged one and finishes the move).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import apsw
import msgspec

from daemon.errors import InvalidInput, StoreError
from daemon.store import backup
from daemon.store.db import apply_key, connect, encryption_available
from daemon.store.keys import DatabaseKey, FileState, KeyStore, _keyring, file_state
from daemon.store.vectors import IndexMeta, remove_index_files

if TYPE_CHECKING:
    from daemon.config import Paths

log = logging.getLogger(__name__)

DB_FILE = "braincue.db"


@dataclass(frozen=True)
class SecurityStatus:
    database: Path
    state: FileState
    key_where: str | None  # where the key was found (None: no key)
    key_store: str  # the OS key store in use, or why there is none
    index_files: dict[str, bool] = field(default_factory=dict)  # file name -> sealed
    backups: int = 0
    latest_backup: str | None = None


@dataclass(frozen=True)
class Migrated:
    database: Path
    key_where: str
    rows: dict[str, int]
    backups: int  # backups moved to the key


def _db_path(paths: Paths) -> Path:
    return paths.data_dir / DB_FILE


def row_counts(conn: apsw.Connection) -> dict[str, int]:
    """Rows per table (FTS shadow tables included): what a migration must keep."""
    tables = [name for (name,) in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL%'"
        " AND name NOT LIKE 'sqlite_%' ORDER BY name")]  # sqlite_stat*: the planner's notes
    return {t: conn.execute(f'SELECT count(*) FROM "{t}"').get for t in tables}


def _counts(path: Path, key: DatabaseKey | None) -> dict[str, int]:
    conn = connect(path, key, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        if conn.execute("PRAGMA quick_check").get != "ok":
            raise StoreError(f"{path} fails its quick check")
        return row_counts(conn)
    finally:
        conn.close()


def status(paths: Paths) -> SecurityStatus:
    db = _db_path(paths)
    state = file_state(db)
    store = KeyStore(paths)
    found = store.find()
    backend = _keyring()
    sealed: dict[str, bool] = {}
    for meta in sorted(paths.data_dir.glob("vectors-*.json")):
        try:
            sealed[meta.with_suffix(".usearch").name] = msgspec.json.decode(
                meta.read_bytes(), type=IndexMeta).encrypted
        except (OSError, msgspec.DecodeError, msgspec.ValidationError):
            continue  # unreadable: rebuilt at the next start
    backups = backup.list_backups(paths.data_dir)
    return SecurityStatus(
        database=db, state=state, key_where=None if found is None else found.where,
        key_store=("none on this machine (a key file is used)" if backend is None
                   else type(backend).__name__),
        index_files=sealed, backups=len(backups),
        latest_backup=backups[-1].name if backups else None,
    )


def _rekey_file(path: Path, old: DatabaseKey | None, new: DatabaseKey) -> None:
    conn = connect(path, old)
    try:
        conn.pragma("journal_mode", "delete")
        apply_key(conn, new, "hexrekey")
    finally:
        conn.close()


def _move_to_key(paths: Paths, old: DatabaseKey | None, new: DatabaseKey,
                 reason: str) -> Migrated:
    db = _db_path(paths)
    before = _counts(db, old)
    copy = backup.backup_file(db, old, reason=reason, keep=0)
    if _counts(copy.path, old) != before:
        raise StoreError(f"the copy {copy.path} does not hold every row; nothing was changed")
    store = KeyStore(paths)
    store.stage(new)
    try:
        _rekey_file(db, old, new)
        after = _counts(db, new)
    except BaseException as e:
        raise StoreError(f"re-encrypting {db} failed ({e})",
                         fix=f"the verified copy is {copy.path}: `braincue backup restore "
                             f"{copy.name}` puts it back") from e
    if after != before:
        raise StoreError(f"{db} lost rows while re-encrypting ({before} -> {after})",
                         fix=f"`braincue backup restore {copy.name}` puts the copy back")
    kept = store.keep(new.hex)
    moved = 0
    for b in backup.list_backups(paths.data_dir):
        if b.path == copy.path:
            continue
        try:
            _rekey_file(b.path, old, new)
            moved += 1
        except StoreError as e:  # a backup under yet another key: say so, keep it
            log.warning("backup %s not moved to the new key: %s", b.name, e)
    _rekey_file(copy.path, old, new)  # the copy, too, is now under the new key
    remove_index_files(paths.data_dir)  # rebuilt and sealed at the next start
    store.unstage()
    return Migrated(db, kept.where, after, moved + 1)


def encrypt(paths: Paths) -> Migrated:
    """Encrypt a plain database in place (see the module docstring); the daemon is stopped."""
    if not encryption_available():
        raise StoreError("this apsw has no SQLite3 Multiple Ciphers",
                         fix="reinstall BrainCue (it needs the apsw-sqlite3mc package)")
    db = _db_path(paths)
    state = file_state(db)
    if state == "missing":
        raise InvalidInput(f"there is no database at {db} yet",
                           fix="start the daemon: a new database is encrypted")
    if state == "encrypted":
        raise InvalidInput(f"{db} is already encrypted",
                           fix="`braincue security rekey` moves it to a new key")
    store = KeyStore(paths)
    key = store.find() or store.next_key()
    return _move_to_key(paths, None, key, "before-encrypt")


def rekey(paths: Paths) -> Migrated:
    """Move an encrypted database (and its backups) to a new key; the daemon is stopped."""
    db = _db_path(paths)
    if file_state(db) != "encrypted":
        raise InvalidInput(f"{db} is not encrypted",
                           fix="`braincue security encrypt` encrypts it")
    store = KeyStore(paths)
    old = store.find()
    if old is None:
        raise StoreError(f"no key for {db} was found (looked in {store.describe()})")
    return _move_to_key(paths, old, store.next_key(), "before-rekey")
