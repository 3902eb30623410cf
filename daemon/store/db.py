"""One SQLite database per profile: migrations, a single writer thread, reads on any thread.

Writes go through one connection owned by one thread (datasette's pattern): every ``write(fn)``
runs ``fn(connection)`` inside ``BEGIN IMMEDIATE … COMMIT`` on that thread, in submission order,
so writers never meet ``BusyError`` and a failed ``fn`` rolls back as a whole. Reads run on the
caller's thread with a read-only connection of its own (WAL: readers never wait for the writer)
inside one read transaction, so a reader sees one consistent snapshot.

With a key (:mod:`daemon.store.keys`) every connection is encrypted with SQLite3 Multiple
Ciphers (the ``apsw-sqlite3mc`` build of apsw): ChaCha20-Poly1305 pages, the WAL included. The
key is already 256 random (or scrypt-stretched) bits, so the cipher's own key derivation is
one round. A wrong key, a missing key or a damaged file is an error naming the cause, before
anything is written: never a new empty database in the file's place.

At an open the file is checked (``PRAGMA quick_check``, which reads all of it: seconds for a
lifetime's database) only when it is not exactly as this code last closed it cleanly — a
crash, another program or a restore changed it, its WAL was left behind — or its last check
is a week old: a clean close records the file's size and mtime in ``<db>.checked``, and an
open deletes that record until its own clean close.

Migrations are an ordered list of small functions, each applied once and recorded by name in the
``migrations`` table (the sqlite-utils / llm style); those a database has not seen run together in
one transaction, so an upgrade is whole or not at all. They only go forward: a database that
records a migration this code does not know was written by a newer version.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

import apsw
import apsw.bestpractice
import msgspec

from daemon.errors import BrainCueError, StoreError
from daemon.store.keys import DatabaseKey
from daemon.worker import WorkerThread

T = TypeVar("T")
Migration = Callable[[apsw.Connection], None]

log = logging.getLogger(__name__)

# ``quick_check`` reads the whole file (seconds for a lifetime's database): it runs at an open
# only when the file is not as this code last closed it cleanly (a crash, another program, a
# restore, a copy) or its last check is older than this
CHECK_EVERY = 7 * 86_400
CHECK_SUFFIX = ".checked"

BUSY_TIMEOUT_MS = 5000  # another process (a CLI opening the store directly) may hold the lock

CIPHER = "chacha20"
KDF_ITERATIONS = 1  # the key is not a password: see the module docstring

_bestpractice_lock = threading.Lock()
_bestpractice_applied = False


def _apply_bestpractice(conn: apsw.Connection) -> None:
    """WAL, busy timeout, foreign keys, … (apsw's recommendations) for one connection — after
    its key, since they read the database; SQLite's log goes to logging once per process."""
    global _bestpractice_applied
    with _bestpractice_lock:
        if not _bestpractice_applied:
            apsw.bestpractice.library_logging()
            _bestpractice_applied = True
    for practice in apsw.bestpractice.recommended:
        if practice.__name__.startswith("connection_"):
            practice(conn)


def connect(path: Path | str, key: DatabaseKey | None, *,
            flags: int | None = None) -> apsw.Connection:
    """A connection to ``path``, keyed when ``key`` is given; raises StoreError when the key
    does not open it (or it is not a database). A new file is the user's alone (0600 — SQLite
    gives its WAL the same mode), whatever the umask."""
    if flags is None:
        create_private(Path(path))
    conn = (apsw.Connection(str(path)) if flags is None
            else apsw.Connection(str(path), flags=flags))
    try:
        if key is not None:
            apply_key(conn, key)
        _apply_bestpractice(conn)
        conn.set_busy_timeout(BUSY_TIMEOUT_MS)
        conn.execute("SELECT count(*) FROM sqlite_master").fetchall()  # checks the key
    except apsw.Error as e:
        conn.close()
        raise unreadable(path, key, e) from e
    return conn


def create_private(path: Path) -> None:
    """Create ``path`` empty with mode 0600 unless it exists."""
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))


def apply_key(conn: apsw.Connection, key: DatabaseKey, pragma: str = "hexkey") -> None:
    """Key ``conn`` (``hexrekey``: re-encrypt it with ``key``)."""
    conn.pragma("cipher", CIPHER)
    conn.pragma("kdf_iter", KDF_ITERATIONS)
    if conn.pragma(pragma, key.hex) != "ok":
        raise StoreError("this apsw has no SQLite3 Multiple Ciphers: encryption is unavailable",
                         fix="reinstall BrainCue (it needs the apsw-sqlite3mc package)")


def encryption_available() -> bool:
    return hasattr(apsw, "mc_version")


def unreadable(path: Path | str, key: DatabaseKey | None, error: apsw.Error) -> StoreError:
    """The error for a database that does not open: the cause, in one line."""
    if isinstance(error, apsw.NotADBError | apsw.CorruptError):
        why = (f"it does not open with the key from {key.where} (a wrong key, or the file is "
               "damaged)" if key is not None else "it is encrypted or damaged")
        return CorruptDatabase(f"cannot open the database {path}: {why}")
    return StoreError(f"cannot open the database {path}: {error}",
                      fix="check the file's permissions and free disk space")


class CorruptDatabase(StoreError):
    """The database file cannot be read as a database (or fails its quick check)."""


class Database(contextlib.AbstractContextManager["Database"]):
    """A profile's database file: ``write`` on the writer thread, ``read`` on any other."""

    def __init__(self, path: Path, migrations: Sequence[Migration], *,
                 key: DatabaseKey | None = None,
                 before_migrating: Callable[[apsw.Connection, list[str]], None] | None = None,
                 ) -> None:
        self.path = path
        self.key = key
        self._before_migrating = before_migrating
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._closed = False
        # each reading thread's connection, closed with the thread when it ends (its
        # thread-local is dropped: a worker thread that idled out must not leave its
        # connection and two file descriptors behind) or by close()
        self._readers: weakref.WeakSet[apsw.Connection] = weakref.WeakSet()
        self._readers_lock = threading.Lock()
        self._local = threading.local()
        self.check_file = path.with_name(path.name + CHECK_SUFFIX)
        self.checked = False  # whether this open ran quick_check (see _check)
        self._checked_at = 0.0
        self._writer = WorkerThread(f"braincue-db-writer:{path.parent.name}")
        self._writer_ident = 0
        try:
            self._conn: apsw.Connection = self._writer.call_sync(
                lambda: self._open_writer(migrations)
            )
        except BaseException:
            self._writer.close()
            self._writer.join()
            raise

    # -- writing ---------------------------------------------------------------------------

    def write(
        self,
        fn: Callable[[apsw.Connection], T],
        *,
        on_commit: Callable[[T], None] | None = None,
    ) -> T:
        """Run ``fn(conn)`` in one ``BEGIN IMMEDIATE`` transaction on the writer thread; wait.

        ``on_commit(result)`` runs on the writer thread right after a successful commit, before
        the next write starts (for caches that must follow the database in commit order).
        """
        self._check_usable()
        if threading.get_ident() == self._writer_ident:
            raise StoreError("write() called from inside a write; use the connection given to fn")
        return self._writer.call_sync(lambda: self._transaction(fn, on_commit))

    def _transaction(
        self, fn: Callable[[apsw.Connection], T], on_commit: Callable[[T], None] | None
    ) -> T:
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            result = fn(conn)
        except BaseException as e:
            if conn.in_transaction:  # some errors (SQLITE_FULL) have rolled back already
                conn.execute("ROLLBACK")
            if isinstance(e, apsw.Error):
                raise _store_error(e) from e
            raise
        try:
            conn.execute("COMMIT")
        except apsw.Error as e:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise _store_error(e) from e
        if on_commit is not None:
            on_commit(result)
        return result

    # -- reading ---------------------------------------------------------------------------

    def read(self, fn: Callable[[apsw.Connection], T]) -> T:
        """Run ``fn(conn)`` in one read transaction on this thread's read-only connection."""
        self._check_usable()
        if threading.get_ident() == self._writer_ident:
            raise StoreError("read() called from inside a write; use the connection given to fn")
        conn = self._reader()
        if conn.in_transaction:  # a read nested in a read shares its snapshot
            return fn(conn)
        conn.execute("BEGIN")
        try:
            return fn(conn)
        except apsw.Error as e:
            raise _store_error(e) from e
        finally:
            conn.execute("COMMIT")

    def _reader(self) -> apsw.Connection:
        conn: apsw.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = connect(self.path, self.key, flags=apsw.SQLITE_OPEN_READONLY)
            self._local.conn = conn
            with self._readers_lock:
                self._readers.add(conn)
        return conn

    # -- lifecycle -------------------------------------------------------------------------

    def close(self) -> None:
        """Finish every queued write, then close all connections. Idempotent.

        Call it once no read is running. The writer closes last so that, as the last
        connection, it checkpoints the WAL into the database file.
        """
        if self._closed:
            return
        self._closed = True
        with self._readers_lock:
            readers, self._readers = list(self._readers), weakref.WeakSet()
        for conn in readers:
            conn.close()
        try:
            self._writer.call_sync(self._close_writer)
        finally:
            self._writer.close()
            self._writer.join()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _check_usable(self) -> None:
        if self._closed:
            raise StoreError(f"the database {self.path} is closed")

    def _open_writer(self, migrations: Sequence[Migration]) -> apsw.Connection:
        self._writer_ident = threading.get_ident()
        last_check = _last_check(self.check_file, self.path)  # before opening makes a WAL
        conn = connect(self.path, self.key)
        try:
            checked = self._check(conn, last_check)
            # deleting is the user's explicit act: overwrite freed content instead of leaving it
            conn.pragma("secure_delete", True)
            self._conn = conn
            if self._before_migrating is not None:
                pending = pending_migrations(conn, migrations)
                if pending:
                    self._before_migrating(conn, pending)
            migrate(conn, migrations)
        except apsw.Error as e:
            conn.close()
            raise unreadable(self.path, self.key, e) from e
        except BaseException:
            conn.close()
            raise
        self._checked_at = checked
        self.check_file.unlink(missing_ok=True)  # open: a crash from here on means a check
        return conn

    def _check(self, conn: apsw.Connection, last: float | None) -> float:
        """``quick_check`` the file unless it is as this code last closed it, cleanly, less
        than CHECK_EVERY ago (``last``: when it was checked then); return when it was last
        checked."""
        if last is not None and time.time() - last < CHECK_EVERY:
            self.checked = False
            return last
        began = time.monotonic()
        check = conn.execute("PRAGMA quick_check").fetchall()
        if check != [("ok",)]:
            raise CorruptDatabase(f"the database {self.path} is damaged (quick_check: "
                                  f"{'; '.join(str(r[0]) for r in check[:3])})")
        log.info("checked the database in %.1f s (%s)", time.monotonic() - began,
                 "last checked over a week ago" if last is not None
                 else "not closed cleanly, or changed since")
        self.checked = True
        return time.time()

    def _close_writer(self) -> None:
        try:
            self._conn.pragma("optimize")
        finally:
            self._conn.close()
        # the last connection has checkpointed the WAL into the file: remember the file as
        # it is now, so the next open need not read it all again
        _record_check(self.check_file, self.path, self._checked_at)


class _Checked(msgspec.Struct, frozen=True):
    """The sidecar of a cleanly closed database: the file's size and mtime then, and when
    ``quick_check`` last passed."""

    size: int
    mtime_ns: int
    checked_at: float


def _last_check(check_file: Path, db_path: Path) -> float | None:
    """When the database last passed its check, if it is exactly as it was closed since."""
    try:
        checked = msgspec.json.decode(check_file.read_bytes(), type=_Checked)
        stat = db_path.stat()
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        return None
    if (stat.st_size, stat.st_mtime_ns) != (checked.size, checked.mtime_ns):
        return None
    if db_path.with_name(db_path.name + "-wal").exists():  # not closed by its last user
        return None
    return checked.checked_at


def _record_check(check_file: Path, db_path: Path, checked_at: float) -> None:
    try:
        stat = db_path.stat()
        create_private(check_file)
        check_file.write_bytes(msgspec.json.encode(
            _Checked(size=stat.st_size, mtime_ns=stat.st_mtime_ns, checked_at=checked_at)))
    except OSError as e:  # the next open checks the file: slower, never wrong
        log.warning("cannot record the database's check in %s: %s", check_file, e)


def pending_migrations(conn: apsw.Connection, migrations: Sequence[Migration]) -> list[str]:
    """The migrations a database with tables has not seen (none for a new database)."""
    if not conn.execute("SELECT count(*) FROM sqlite_master WHERE name = 'migrations'").get:
        return []
    applied = {name for (name,) in conn.execute("SELECT name FROM migrations")}
    return [m.__name__ for m in migrations if m.__name__ not in applied]


class MigrationFailed(StoreError):
    """An upgrade of the schema failed: the database is as it was before it."""


def migrate(conn: apsw.Connection, migrations: Sequence[Migration]) -> list[str]:
    """Apply the migrations ``conn`` has not seen, in order, in one transaction (an upgrade
    that fails or is killed midway leaves the database as the earlier version wrote it, never
    half-migrated); return the names applied."""
    conn.execute(
        "CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)"
    )
    applied = {name for (name,) in conn.execute("SELECT name FROM migrations")}
    known = [m.__name__ for m in migrations]
    unknown = applied - set(known)
    if unknown:
        raise StoreError(
            f"the database was written by a newer BrainCue (unknown migrations: "
            f"{', '.join(sorted(unknown))})",
            fix="upgrade BrainCue",
        )
    pending = [step for step in migrations if step.__name__ not in applied]
    if not pending:
        return []
    conn.execute("BEGIN IMMEDIATE")
    step = pending[0]
    try:
        for step in pending:
            step(conn)
            conn.execute(
                "INSERT INTO migrations (name, applied_at) VALUES (?, ?)",
                (step.__name__, time.time()),
            )
        conn.execute("COMMIT")
    except BaseException as e:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        if isinstance(e, Exception):
            raise MigrationFailed(f"the upgrade of the database failed at {step.__name__} "
                                  f"({e}); the database is unchanged") from e
        raise
    done = [step.__name__ for step in pending]
    log.info("applied database migrations %s", ", ".join(done))
    return done


def _store_error(e: apsw.Error) -> BrainCueError:
    if isinstance(e, apsw.FullError):
        return StoreError("the disk is full", fix="free some disk space and try again")
    if isinstance(e, apsw.BusyError):
        return StoreError(
            "the database is locked by another process",
            fix="stop the other BrainCue process or try again",
        )
    return StoreError(f"database error: {e}")
