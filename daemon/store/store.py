"""The memory store: the public face of ``daemon.store``.

One :class:`Store` per profile owns the database (``<data dir>/braincue.db``) and the vector
indexes beside it. Every method is synchronous and thread-safe: writes are queued to the single
writer thread, reads run on the calling thread. From trio, call them through
``await store.run(fn, *args)``, the one seam between the event loop and the store.

``Store`` itself only opens, backs up, counts, empties and closes the profile; its other methods
come from one class per table family, each in its own module over the shared state of
:class:`~daemon.store.base.StoreBase`: :mod:`~daemon.store.spaces`,
:mod:`~daemon.store.sessions` (with where each keep stands), :mod:`~daemon.store.turns` (turns,
chunks, archives), :mod:`~daemon.store.document_store`, :mod:`~daemon.store.assertions` (with
the open items) and :mod:`~daemon.store.legs` (the full-text and vector search legs). Callers
see one ``Store``.

Two layers. The verbatim layer — sessions, turns and the chunks built from them,
session archives, documents — is canonical. The assertion layer — decisions, facts,
commitments, preferences, tasks, and reviewed memories about the person — is bitemporal:
corrections supersede (``invalidated_at`` + ``superseded_by``), nothing is overwritten.

Embedding. Text that arrives whole (archives, documents, assertions) is embedded first and
written with its rows, FTS entries and vectors in one transaction, so a model failure leaves
nothing half-indexed. A live transcript is different: its turns must be committed the moment they
arrive, whatever the embedder does. So turns, chunk text and FTS commit together; then the chunks
that changed are embedded and their vectors written in a second transaction — a chunk as it
closes, and the still-growing newest chunk when it has none yet or has grown by
``live_reembed_chars`` since it was last embedded (about four times over its life) — and every
new turn on its own, once, under its context header (:mod:`daemon.store.turnviews`): a chunk
embedded whole dilutes its turns, so vector search ranks transcript chunks by their best turn
(:meth:`Store.vector_turns`). A vector that could not be made is made later by
:meth:`Indexing.embed_pending`, which also re-embeds everything after a change of embedding
model. The embedding and the vector writes themselves are :mod:`daemon.store.indexing`'s: callers
reach them as ``Store.index`` (embed a query, embed what is pending, count the vectors).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import apsw
import trio

from daemon.store import backup, chunking, sql, writes
from daemon.store.assertions import Assertions
from daemon.store.base import T
from daemon.store.db import CorruptDatabase, Database, MigrationFailed, encryption_available
from daemon.store.document_store import DocumentStore
from daemon.store.indexing import LIVE_REEMBED_CHARS, Indexing
from daemon.store.keys import DatabaseKey, KeyStore, key_for
from daemon.store.legs import SearchLegs
from daemon.store.records import Deleted
from daemon.store.schema import MIGRATIONS
from daemon.store.spaces import Spaces
from daemon.store.turns import Turns

if TYPE_CHECKING:
    from daemon.config import Paths
    from daemon.llm.embed import Embedder

log = logging.getLogger(__name__)

DB_FILE = "braincue.db"


class Store(Spaces, Turns, DocumentStore, Assertions, SearchLegs,
            contextlib.AbstractContextManager["Store"]):
    """A profile's memory. See the module docstring for the model; every method is documented.

    ``embedder`` may be None: then nothing is embedded and the vector searches return nothing,
    while the verbatim layer and full-text search work as usual.
    """

    def __init__(
        self,
        data_dir: Path,
        embedder: Embedder | None = None,
        *,
        live_reembed_chars: int = LIVE_REEMBED_CHARS,
        chunk_limit: int = chunking.DEFAULT_LIMIT,
        clock: Callable[[], float] = time.time,
        key: DatabaseKey | None = None,
        backups_kept: int = backup.KEEP,
    ) -> None:
        self.data_dir = data_dir
        self.embedder = embedder
        self.chunk_limit = chunk_limit
        self.key = key
        self._clock = clock

        taken: list[backup.Backup] = []

        def before_migrating(conn: apsw.Connection, pending: list[str]) -> None:
            log.info("backing up the database before migrations %s", ", ".join(pending))
            taken.append(backup.make_backup(conn, data_dir, key, reason="before-migration",
                                            keep=backups_kept))

        try:
            self.db = Database(data_dir / DB_FILE, MIGRATIONS, key=key,
                               before_migrating=before_migrating)
        except CorruptDatabase as e:  # never written to: say what restores it
            raise CorruptDatabase(str(e), fix=backup.restore_advice(data_dir)) from e
        except MigrationFailed as e:
            raise MigrationFailed(e.message, fix=backup.migration_advice(taken)) from e
        try:
            self.index = Indexing(self.db, data_dir, embedder, key=key,
                                  live_reembed_chars=live_reembed_chars, clock=clock)
        except BaseException:
            self.db.close()
            raise

    @classmethod
    def open(cls, paths: Paths, embedder: Embedder | None = None, *, encrypt: bool = True,
             backups_kept: int = backup.KEEP) -> Store:
        """The store of the profile ``paths`` names (its data directory is created if needed),
        with its key from the key store (:mod:`daemon.store.keys`); a new database is
        encrypted when ``encrypt``."""
        paths.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        key = key_for(paths, paths.data_dir / DB_FILE,
                      encrypt=encrypt and encryption_available())
        try:
            return cls(paths.data_dir, embedder, key=key, backups_kept=backups_kept)
        except CorruptDatabase:
            keys = KeyStore(paths)
            staged = keys.staged()
            if key is None or staged is None:
                raise
            # a re-encryption stopped after the file had moved to its new key: finish it
            store = cls(paths.data_dir, embedder, key=staged, backups_kept=backups_kept)
            keys.keep(staged.hex)
            keys.unstage()
            log.warning("finished an interrupted re-encryption: the new key is now kept")
            return store

    async def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``fn(*args, **kwargs)`` (store calls: they block) on a worker thread, for trio
        callers: the event loop keeps running meanwhile."""
        return await trio.to_thread.run_sync(functools.partial(fn, *args, **kwargs))

    def make_backup(self, *, reason: str = "manual", keep: int = backup.KEEP) -> backup.Backup:
        """An online backup of the database (see :mod:`daemon.store.backup`)."""
        return backup.backup_file(self.db.path, self.key, reason=reason, keep=keep)

    def close(self) -> None:
        """Finish queued writes, close the database and save the vector indexes that changed.

        (Another process that opened the same profile, such as a CLI beside the daemon, keeps
        its own index in memory; whatever one saved, the next open reconciles with the
        database.)"""
        self.db.close()
        self.save_indexes()

    def save_indexes(self) -> None:
        """Save the vector indexes that changed (they are also saved as they grow and on
        close)."""
        self.index.save()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def delete_all(self) -> Deleted:
        """Empty the profile: every Space, session, document, assertion and vector."""

        def txn(conn: apsw.Connection, changes: writes.IndexChanges) -> Deleted:
            deleted = Deleted(
                spaces=sql.count_rows(conn, "spaces"),
                sessions=sql.count_rows(conn, "sessions"),
                turns=sql.count_rows(conn, "turns"),
                chunks=sql.count_rows(conn, "chunks"),
                documents=sql.count_rows(conn, "documents"),
                assertions=sql.count_rows(conn, "assertions"),
                vectors=sql.count_rows(conn, "embeddings"),
                restatements=sql.count_rows(conn, "restatements"),
            )
            for kind, key in sql.rows(conn, "SELECT owner_kind, id FROM embeddings"):
                changes.removed[kind].append(key)
            conn.execute("INSERT INTO chunks_fts (chunks_fts) VALUES ('delete-all')")
            conn.execute("DELETE FROM assertions_fts")
            tables = ("restatements", "item_closures", "embeddings", "assertions", "chunks",
                      "turns", "sessions")
            for table in tables:
                conn.execute(f"DELETE FROM {table}")
            conn.execute("DELETE FROM documents")
            conn.execute("DELETE FROM spaces")
            return deleted

        return self._write(txn)

    def counts(self) -> dict[str, int]:
        """How many rows of each kind the profile holds (for status)."""
        tables = ("spaces", "sessions", "turns", "chunks", "documents", "assertions")

        def count(conn: apsw.Connection) -> dict[str, int]:
            found = {table: sql.count_rows(conn, table) for table in tables}
            found["vectors"] = sql.count_rows(conn, "embeddings")
            return found

        return self.db.read(count)
