"""One SQLite database per profile: migrations, a single writer thread, reads on any thread.

Writes go through one connection owned by one thread (datasette's pattern): every ``write(fn)``
runs ``fn(connection)`` inside ``BEGIN IMMEDIATE … COMMIT`` on that thread, in submission order,
so writers never meet ``BusyError`` and a failed ``fn`` rolls back as a whole. Reads run on the
caller's thread with a read-only connection of its own (WAL: readers never wait for the writer)
inside one read transaction, so a reader sees one consistent snapshot.

Migrations are an ordered list of small functions, each applied once in its own transaction and
recorded by name in the ``migrations`` table (the sqlite-utils / llm style). They only go forward:
a database that records a migration this code does not know was written by a newer version.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

import apsw
import apsw.bestpractice

from daemon.errors import BrainCueError, StoreError
from daemon.worker import WorkerThread

T = TypeVar("T")
Migration = Callable[[apsw.Connection], None]

log = logging.getLogger(__name__)

BUSY_TIMEOUT_MS = 5000  # another process (a CLI opening the store directly) may hold the lock

_bestpractice_lock = threading.Lock()
_bestpractice_applied = False


def _apply_bestpractice() -> None:
    """WAL, busy timeout, foreign keys, … for every connection (apsw applies it process-wide)."""
    global _bestpractice_applied
    with _bestpractice_lock:
        if not _bestpractice_applied:
            apsw.bestpractice.apply(apsw.bestpractice.recommended)
            _bestpractice_applied = True


class Database:
    """A profile's database file: ``write`` on the writer thread, ``read`` on any other."""

    def __init__(self, path: Path, migrations: Sequence[Migration]) -> None:
        _apply_bestpractice()
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._closed = False
        self._readers: list[apsw.Connection] = []
        self._readers_lock = threading.Lock()
        self._local = threading.local()
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

    async def awrite(
        self,
        fn: Callable[[apsw.Connection], T],
        *,
        on_commit: Callable[[T], None] | None = None,
    ) -> T:
        """:meth:`write` for trio callers: the task sleeps while the writer thread works."""
        self._check_usable()
        return await self._writer.call(lambda: self._transaction(fn, on_commit))

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
            conn = apsw.Connection(str(self.path), flags=apsw.SQLITE_OPEN_READONLY)
            conn.set_busy_timeout(BUSY_TIMEOUT_MS)
            self._local.conn = conn
            with self._readers_lock:
                self._readers.append(conn)
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
            readers, self._readers = self._readers, []
        for conn in readers:
            conn.close()
        try:
            self._writer.call_sync(self._close_writer)
        finally:
            self._writer.close()
            self._writer.join()

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _check_usable(self) -> None:
        if self._closed:
            raise StoreError(f"the database {self.path} is closed")

    def _open_writer(self, migrations: Sequence[Migration]) -> apsw.Connection:
        self._writer_ident = threading.get_ident()
        try:
            conn = apsw.Connection(str(self.path))
            conn.set_busy_timeout(BUSY_TIMEOUT_MS)
            # deleting is the user's explicit act: overwrite freed content instead of leaving it
            conn.pragma("secure_delete", True)
            self._conn = conn
            migrate(conn, migrations)
        except apsw.Error as e:
            raise StoreError(
                f"cannot open the database {self.path}: {e}",
                fix="check the file's permissions and free disk space",
            ) from e
        return conn

    def _close_writer(self) -> None:
        try:
            self._conn.pragma("optimize")
        finally:
            self._conn.close()


def migrate(conn: apsw.Connection, migrations: Sequence[Migration]) -> list[str]:
    """Apply the migrations ``conn`` has not seen, in order; return the names applied."""
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
    done: list[str] = []
    for step in migrations:
        if step.__name__ in applied:
            continue
        conn.execute("BEGIN IMMEDIATE")
        try:
            step(conn)
            conn.execute(
                "INSERT INTO migrations (name, applied_at) VALUES (?, ?)",
                (step.__name__, time.time()),
            )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        log.info("applied database migration %s", step.__name__)
        done.append(step.__name__)
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
