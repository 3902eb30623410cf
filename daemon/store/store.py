"""The memory store: the public face of ``daemon.store``.

One :class:`Store` per profile owns the database (``<data dir>/braincue.db``) and the vector
indexes beside it. Every method is synchronous and thread-safe: writes are queued to the single
writer thread, reads run on the calling thread. From trio, call them through
``await store.run(fn, *args)``, the one seam between the event loop and the store.

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

import functools
import json
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import apsw
import msgspec
import numpy as np
import trio

from daemon.errors import InvalidInput, NotFound
from daemon.sensitive.gate import mask_lines
from daemon.store import backup, chunking, documents, fts, sql, writes
from daemon.store.db import CorruptDatabase, Database, MigrationFailed, encryption_available
from daemon.store.documents import DocumentText
from daemon.store.indexing import LIVE_REEMBED_CHARS, Indexing
from daemon.store.keys import DatabaseKey, KeyStore, key_for
from daemon.store.records import (
    ACTIVITIES,
    KEEP_STATUSES,
    REVIEW_STATUSES,
    SESSION_STATUSES,
    Assertion,
    AssertionSource,
    Chunk,
    ChunkKind,
    Deleted,
    Document,
    Hit,
    ItemClosure,
    KeepState,
    KeepStatus,
    NewAssertion,
    NewRestatement,
    NewTurn,
    OwnerKind,
    Restatement,
    ReviewStatus,
    Session,
    SessionStatus,
    Space,
    Turn,
)
from daemon.store.schema import MIGRATIONS
from daemon.store.scope import Scope, assertion_filter, chunk_filter
from daemon.store.vectors import Vectors, from_blob, scoped_search

if TYPE_CHECKING:
    from daemon.config import Paths
    from daemon.llm.embed import Embedder, EmbedProgress

log = logging.getLogger(__name__)

T = TypeVar("T")
R = TypeVar("R")
# turn vectors fetched per chunk wanted: the best turns of a query cluster in few chunks
TURNS_PER_CHUNK_FETCHED = 4

DB_FILE = "braincue.db"
UNSET: Any = msgspec.UNSET


class Store:
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

    @property
    def model_id(self) -> str | None:
        """The current embedding model, whose vectors alone are searched."""
        return self.embedder.model_id if self.embedder is not None else None

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

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- Spaces --------------------------------------------------------------------------------

    def create_space(
        self, name: str, *, activity: str = "meeting", memory_enabled: bool = True
    ) -> Space:
        """A new Space. Names are unique, ignoring case."""
        name = _space_name(name)
        _check_activity(activity)

        def txn(conn: apsw.Connection, _: writes.IndexChanges) -> int:
            writes.check_space_name_free(conn, name)
            conn.execute(
                "INSERT INTO spaces (name, activity, memory_enabled, created_at)"
                " VALUES (?, ?, ?, ?)",
                (name, activity, int(memory_enabled), self._clock()),
            )
            return int(conn.last_insert_rowid())

        return self.get_space(self._write(txn))

    def get_space(self, ref: int | str) -> Space:
        """A Space by id or by name (ignoring case)."""
        column = "id" if isinstance(ref, int) else "name"
        row = self.db.read(
            lambda conn: sql.row(
                conn, f"SELECT {sql.SPACE_COLUMNS} FROM spaces WHERE {column} = ?", (ref,)
            )
        )
        if row is None:
            raise NotFound(f"no Space {ref!r}", fix="see `braincue spaces list`")
        return sql.space_from(row)

    def space_id(self, name: str | None) -> int | None:
        """The id of the Space named ``name`` (NotFound when there is none); None for None."""
        return None if name is None else self.get_space(name).id

    def list_spaces(self) -> list[Space]:
        rows = self.db.read(
            lambda conn: sql.rows(
                conn, f"SELECT {sql.SPACE_COLUMNS} FROM spaces ORDER BY name COLLATE NOCASE"
            )
        )
        return [sql.space_from(r) for r in rows]

    def update_space(
        self,
        space_id: int,
        *,
        name: str | None = None,
        activity: str | None = None,
        memory_enabled: bool | None = None,
    ) -> Space:
        """Rename a Space, change its activity kind, or opt it out of (or back into) memory."""
        if name is not None:
            name = _space_name(name)
        if activity is not None:
            _check_activity(activity)

        def txn(conn: apsw.Connection, _: writes.IndexChanges) -> None:
            sql.require(conn, "spaces", space_id, "Space")
            if name is not None:
                writes.check_space_name_free(conn, name, other_than=space_id)
                conn.execute("UPDATE spaces SET name = ? WHERE id = ?", (name, space_id))
            if activity is not None:
                conn.execute("UPDATE spaces SET activity = ? WHERE id = ?", (activity, space_id))
            if memory_enabled is not None:
                conn.execute(
                    "UPDATE spaces SET memory_enabled = ? WHERE id = ?",
                    (int(memory_enabled), space_id),
                )

        self._write(txn)
        return self.get_space(space_id)

    def delete_space(self, space_id: int) -> Deleted:
        """Delete a Space and its memory: its sessions (as :meth:`delete_session` does),
        documents, archives and every assertion scoped to it. Profile-wide memory stays, even
        when it came from a session of this Space."""

        def txn(conn: apsw.Connection, changes: writes.IndexChanges) -> Deleted:
            sql.require(conn, "spaces", space_id, "Space")
            deleted = Deleted(spaces=1)
            for (session_id,) in sql.rows(
                conn, "SELECT id FROM sessions WHERE space_id = ?", (space_id,)
            ):
                writes.delete_session(conn, changes, session_id, deleted)
            for (document_id,) in sql.rows(
                conn, "SELECT id FROM documents WHERE space_id = ?", (space_id,)
            ):
                writes.delete_document(conn, changes, document_id, deleted)
            writes.delete_assertions(
                conn,
                changes,
                sql.column(conn, "SELECT id FROM assertions WHERE space_id = ?", (space_id,)),
                deleted,
            )
            writes.delete_chunks(
                conn,
                changes,
                sql.column(conn, "SELECT id FROM chunks WHERE space_id = ?", (space_id,)),
                deleted,
            )
            conn.execute("DELETE FROM spaces WHERE id = ?", (space_id,))
            return deleted

        return self._write(txn)

    # -- sessions ------------------------------------------------------------------------------

    def create_session(
        self,
        *,
        space_id: int | None = None,
        activity: str | None = None,
        title: str = "",
        started_at: float | None = None,
        participants: Sequence[str] = (),
        practice: bool = False,
    ) -> Session:
        """A new live session. ``activity`` defaults to the Space's kind, else ``meeting``."""
        if activity is not None:
            _check_activity(activity)

        def txn(conn: apsw.Connection, _: writes.IndexChanges) -> int:
            kind = activity
            if space_id is not None:
                space_activity = sql.require(conn, "spaces", space_id, "Space", "activity")
                kind = kind or space_activity
            conn.execute(
                "INSERT INTO sessions (space_id, activity, title, started_at, practice,"
                " participants) VALUES (?, ?, ?, ?, ?, ?)",
                (
                    space_id,
                    kind or "meeting",
                    title,
                    self._clock() if started_at is None else started_at,
                    int(practice),
                    json.dumps(list(participants)),
                ),
            )
            return int(conn.last_insert_rowid())

        return self.get_session(self._write(txn))

    def get_session(self, session_id: int) -> Session:
        row = self.db.read(
            lambda conn: sql.row(
                conn, f"SELECT {sql.SESSION_COLUMNS} FROM sessions s WHERE s.id = ?", (session_id,)
            )
        )
        if row is None:
            raise NotFound(f"no session {session_id}", fix="see `braincue sessions`")
        return sql.session_from(row)

    def list_sessions(
        self,
        *,
        space_id: int | None = None,
        unfiled: bool = False,
        statuses: Iterable[SessionStatus] | None = None,
        limit: int | None = None,
    ) -> list[Session]:
        """Sessions, newest first: all of them, those of ``space_id``, or (``unfiled``) those
        in no Space; optionally only some statuses."""
        where = ["1"]
        params: list[Any] = []
        if unfiled:
            where.append("s.space_id IS NULL")
        elif space_id is not None:
            where.append("s.space_id = ?")
            params.append(space_id)
        if statuses is not None:
            wanted = list(statuses)
            for status in wanted:
                _check_choice("status", status, SESSION_STATUSES)
            where.append("s.status IN (SELECT value FROM json_each(?))")
            params.append(json.dumps(wanted))
        query = (
            f"SELECT {sql.SESSION_COLUMNS} FROM sessions s WHERE {' AND '.join(where)}"
            " ORDER BY s.started_at DESC, s.id DESC"
        )
        if limit is not None:
            query += " LIMIT ?"
            params.append(limit)
        rows = self.db.read(lambda conn: sql.rows(conn, query, params))
        return [sql.session_from(r) for r in rows]

    def update_session(
        self,
        session_id: int,
        *,
        title: str | None = None,
        participants: Sequence[str] | None = None,
        activity: str | None = None,
        practice: bool | None = None,
        status: SessionStatus | None = None,
    ) -> Session:
        """Change a session's details. New headers apply to chunks written from now on;
        closed chunks never change. To move it to another Space use :meth:`file_session`."""
        if activity is not None:
            _check_activity(activity)
        if status is not None:
            _check_choice("status", status, SESSION_STATUSES)
        fields = {
            "title": title,
            "participants": None if participants is None else json.dumps(list(participants)),
            "activity": activity,
            "practice": None if practice is None else int(practice),
            "status": status,
        }

        def txn(conn: apsw.Connection, _: writes.IndexChanges) -> None:
            sql.require(conn, "sessions", session_id, "session")
            for column, value in fields.items():
                if value is not None:
                    conn.execute(
                        f"UPDATE sessions SET {column} = ? WHERE id = ?", (value, session_id)
                    )

        self._write(txn)
        return self.get_session(session_id)

    def file_session(self, session_id: int, space_id: int | None) -> Session:
        """File a session into a Space (None: out of every Space). Its chunks and the
        assertions it produced move with it; reviewed memories about the person keep the
        scope the user gave them. Restatements that would now link two Spaces are dropped."""

        def txn(conn: apsw.Connection, _: writes.IndexChanges) -> None:
            sql.require(conn, "sessions", session_id, "session")
            if space_id is not None:
                sql.require(conn, "spaces", space_id, "Space")
            conn.execute("UPDATE sessions SET space_id = ? WHERE id = ?", (space_id, session_id))
            conn.execute(
                "UPDATE chunks SET space_id = ? WHERE session_id = ?", (space_id, session_id)
            )
            conn.execute(
                "UPDATE assertions SET space_id = ? WHERE session_id = ? AND about_person = 0",
                (space_id, session_id),
            )
            writes.drop_restatements_across_spaces(conn, session_id)

        self._write(txn)
        return self.get_session(session_id)

    def append_turns(
        self, session_id: int, turns: Sequence[NewTurn], *, progress: EmbedProgress | None = None
    ) -> list[Turn]:
        """Add turns to a live session and make them searchable (``progress`` counts what is
        embedded).

        The turns, the chunks they change (the newest chunk grows; chunks that fill up close
        and never change again) and their FTS entries commit in one transaction before
        anything is embedded. Vectors follow (see the module docstring); an embedding failure
        is logged and leaves the turns stored.
        """
        for i, turn in enumerate(turns):
            _check_turn(i, turn)
        if not turns:
            return []
        stored, touched = self._write(
            lambda conn, _: writes.append_turns(conn, session_id, turns, self.chunk_limit)
        )
        self.index.refresh_chunks(touched, swallow=True, progress=progress)
        self.index.embed_turns([t.id for t in stored], swallow=True, progress=progress)
        return stored

    def end_session(
        self,
        session_id: int,
        *,
        ended_at: float | None = None,
        status: SessionStatus = "ended",
        progress: EmbedProgress | None = None,
    ) -> Session:
        """End a live session: its last chunk closes (and is embedded as it stands, counted by
        ``progress``)."""
        _check_choice("status", status, SESSION_STATUSES)
        if status == "live":
            raise InvalidInput("status: an ended session cannot be 'live'")

        def txn(conn: apsw.Connection, _: writes.IndexChanges) -> list[int]:
            current = sql.require(conn, "sessions", session_id, "session", "status")
            if current != "live":
                raise InvalidInput(f"session {session_id} has already ended")
            open_ids = sql.column(
                conn,
                "SELECT id FROM chunks WHERE session_id = ? AND kind = 'transcript' AND closed = 0",
                (session_id,),
            )
            conn.execute(
                "UPDATE chunks SET closed = 1 WHERE session_id = ? AND closed = 0", (session_id,)
            )
            conn.execute(
                "UPDATE sessions SET ended_at = ?, status = ? WHERE id = ?",
                (self._clock() if ended_at is None else ended_at, status, session_id),
            )
            return open_ids

        closed = self._write(txn)
        self.index.refresh_chunks(closed, swallow=True, progress=progress)
        return self.get_session(session_id)

    def delete_session(self, session_id: int) -> Deleted:
        """Delete a session: its turns, transcript chunks, archive, the assertions it produced,
        their vectors and FTS entries, and the memory candidates it proposed that are still
        pending. Memories about the person the user has reviewed (approved, rejected, archived)
        stay: that was the user's decision. An assertion it had superseded becomes current
        again unless something later superseded it too."""

        def txn(conn: apsw.Connection, changes: writes.IndexChanges) -> Deleted:
            deleted = Deleted()
            writes.delete_session(conn, changes, session_id, deleted)
            return deleted

        return self._write(txn)

    # -- where a keep stands ---------------------------------------------------------------------

    def set_keep_state(
        self, session_id: int, status: KeepStatus | None, reason: str | None = None
    ) -> KeepState | None:
        """Record where the keep of ``session_id`` stands, since now (None: no keep needs the
        model, e.g. a session in no Space). Running counts an attempt; pending keeps the count;
        done, failed and None start it again."""
        if status is not None:
            _check_choice("keep status", status, KEEP_STATUSES)
        since = None if status is None else self._clock()
        attempts = {"running": "keep_attempts + 1", "pending": "keep_attempts"}.get(
            status or "", "0")

        def txn(conn: apsw.Connection, _: writes.IndexChanges) -> None:
            sql.require(conn, "sessions", session_id, "session")
            conn.execute(
                "UPDATE sessions SET keep_status = ?, keep_reason = ?, keep_since = ?,"
                f" keep_attempts = {attempts} WHERE id = ?",
                (status, reason, since, session_id),
            )

        self._write(txn)
        return self.keep_state(session_id)

    def note_keep(self, session_id: int, reason: str | None) -> None:
        """Say why the keep of ``session_id`` stands where it does (e.g. a running keep that
        waits for a call to end), its status and time unchanged."""

        def txn(conn: apsw.Connection, _: writes.IndexChanges) -> None:
            conn.execute("UPDATE sessions SET keep_reason = ? WHERE id = ?", (reason, session_id))

        self._write(txn)

    def keep_state(self, session_id: int) -> KeepState | None:
        found = self.keep_states([session_id])
        return found[0] if found else None

    def keep_states(
        self,
        session_ids: Sequence[int] | None = None,
        *,
        statuses: Iterable[KeepStatus] | None = None,
    ) -> list[KeepState]:
        """The keep states of ``session_ids`` (of every session when None) that have one,
        optionally only some statuses; the oldest first."""
        where = ["keep_status IS NOT NULL"]
        params: list[Any] = []
        if session_ids is not None:
            where.append("id IN (SELECT value FROM json_each(?))")
            params.append(json.dumps(list(session_ids)))
        if statuses is not None:
            wanted = list(statuses)
            for status in wanted:
                _check_choice("keep status", status, KEEP_STATUSES)
            where.append("keep_status IN (SELECT value FROM json_each(?))")
            params.append(json.dumps(wanted))
        rows = self.db.read(lambda conn: sql.rows(
            conn,
            "SELECT id, keep_status, keep_reason, keep_since, keep_attempts FROM sessions"
            f" WHERE {' AND '.join(where)} ORDER BY keep_since, id",
            params,
        ))
        return [KeepState(session_id=r[0], status=r[1], reason=r[2], since=r[3], attempts=r[4])
                for r in rows]

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

    # -- turns and chunks ----------------------------------------------------------------------

    def turns(self, session_id: int) -> list[Turn]:
        """A session's turns in order."""
        rows = self.db.read(
            lambda conn: sql.rows(
                conn,
                f"SELECT {sql.TURN_COLUMNS} FROM turns WHERE session_id = ? ORDER BY seq",
                (session_id,),
            )
        )
        return [sql.turn_from(r) for r in rows]

    def get_turns(self, ids: Sequence[int]) -> list[Turn]:
        """Turns by id, in the order asked; ids that no longer exist are left out."""
        return self._by_ids(sql.TURN_COLUMNS, "turns", sql.turn_from, ids)

    def turns_of_chunk(self, chunk_id: int) -> list[Turn]:
        """The turns a transcript chunk covers (empty for archives and documents), as
        retrieval hands them out: a secret said in them masked, like the chunk's body."""
        rows = self.db.read(
            lambda conn: sql.rows(
                conn,
                f"SELECT {sql.TURN_COLUMNS}, {sql.SAID_BEFORE} FROM turns t WHERE session_id ="
                " (SELECT session_id FROM chunks WHERE id = :c AND kind = 'transcript') AND id"
                " BETWEEN (SELECT first_turn FROM chunks WHERE id = :c) AND (SELECT last_turn"
                " FROM chunks WHERE id = :c) ORDER BY seq",
                {"c": chunk_id},
            )
        )
        turns = [sql.turn_from(r[:-1]) for r in rows]
        masked = mask_lines([t.text for t in turns], rows[0][-1] if rows else "")
        return [t if t.text == text else msgspec.structs.replace(t, text=text)
                for t, text in zip(turns, masked, strict=True)]

    def turn_vectors(self, turn_ids: Sequence[int]) -> dict[int, Vectors]:
        """The current embedding model's vectors of these turns, by turn id (a turn without
        one, or a store without an embedder, is left out)."""
        if self.embedder is None or not turn_ids:
            return {}
        model, dims = self.embedder.model_id, self.embedder.dimensions
        rows = self.db.read(
            lambda conn: sql.rows(
                conn,
                "SELECT owner_id, vector FROM embeddings WHERE owner_kind = 'turn'"
                " AND model_id = ? AND dims = ? AND owner_id IN (SELECT value FROM json_each(?))",
                (model, dims, sql.json_ids(turn_ids)),
            )
        )
        return {turn_id: from_blob(blob, dims) for turn_id, blob in rows}

    def chunks(
        self,
        *,
        session_id: int | None = None,
        document_id: int | None = None,
        kind: ChunkKind | None = None,
    ) -> list[Chunk]:
        """The chunks of a session or a document, in order (optionally of one kind)."""
        where: list[str] = ["1"]
        params: list[Any] = []
        if session_id is not None:
            where.append("c.session_id = ?")
            params.append(session_id)
        if document_id is not None:
            where.append("c.document_id = ?")
            params.append(document_id)
        if kind is not None:
            where.append("c.kind = ?")
            params.append(kind)
        rows = self.db.read(
            lambda conn: sql.rows(
                conn,
                f"SELECT {sql.CHUNK_COLUMNS} FROM chunks c WHERE {' AND '.join(where)}"
                " ORDER BY c.id",
                params,
            )
        )
        return [sql.chunk_from(r) for r in rows]

    def get_chunks(self, ids: Sequence[int]) -> list[Chunk]:
        """Chunks by id, in the order asked; ids that no longer exist are left out."""
        return self._by_ids(sql.CHUNK_COLUMNS, "chunks c", sql.chunk_from, ids)

    def get_chunk(self, chunk_id: int) -> Chunk:
        found = self.get_chunks([chunk_id])
        if not found:
            raise NotFound(f"no chunk {chunk_id}")
        return found[0]

    # -- archives ------------------------------------------------------------------------------

    def put_archive(self, session_id: int, text: str) -> list[Chunk]:
        """Store a session's rendered archive as ``session`` chunks in the session's Space,
        replacing any earlier archive. Embedded first: a model failure raises and changes
        nothing. Refused (InvalidInput) for a session in no Space, in a Space whose memory is
        off, or a practice session: those are never summarised."""
        self.db.read(lambda conn: writes.check_archivable(conn, session_id))
        session = self.get_session(session_id)
        ctx = chunking.ChunkContext(
            date=writes.local_date(session.started_at),
            kind="session",
            title=session.title,
            participants=session.participants,
        )
        head = writes.archive_header(ctx)
        bodies = chunking.split_text(text, self.chunk_limit) or [""]
        vectors = self.index.embed([f"{head}\n{b}" for b in bodies])

        def txn(conn: apsw.Connection, changes: writes.IndexChanges) -> list[int]:
            space_id = writes.check_archivable(conn, session_id)
            old = sql.column(
                conn,
                "SELECT id FROM chunks WHERE session_id = ? AND kind = 'session'",
                (session_id,),
            )
            writes.delete_chunks(conn, changes, old, Deleted())
            ids = []
            for i, body in enumerate(bodies):
                chunk_id = writes.insert_chunk(
                    conn,
                    kind="session",
                    session_id=session_id,
                    space_id=space_id,
                    header=head,
                    body=body,
                    occurred_at=session.started_at,
                )
                if vectors is not None:
                    self.index.put_vector(
                        conn, changes, "chunk", chunk_id, vectors[i], len(head) + 1 + len(body)
                    )
                ids.append(chunk_id)
            return ids

        return self.get_chunks(self._write(txn))

    def archive(self, session_id: int) -> list[Chunk]:
        """The session's archive chunks (empty when it has none)."""
        return self.chunks(session_id=session_id, kind="session")

    # -- documents -----------------------------------------------------------------------------

    def add_document(
        self,
        source: DocumentText | Path,
        *,
        space_id: int | None = None,
        title: str | None = None,
        progress: EmbedProgress | None = None,
    ) -> Document:
        """Add a document (a file path, or text already read with
        :func:`daemon.store.documents.read_document`) to a Space, or profile-wide without one
        (``progress`` counts what is embedded).
        It is chunked at paragraph and heading boundaries, embedded first, then written with
        its chunks, FTS entries and vectors in one transaction. The same file cannot be added
        twice to one Space."""
        doc = documents.read_document(source) if isinstance(source, Path) else source
        title = " ".join((title or doc.title).split()) or doc.filename
        added_at = self._clock()
        dated = doc.modified_at if doc.modified_at is not None else added_at
        parts = documents.chunk_document(
            doc.text,
            title=title,
            date=writes.local_date(dated),
            markdown=doc.media_type == "text/markdown",
            limit=self.chunk_limit,
        )
        vectors = self.index.embed([p.text for p in parts], progress)

        def txn(conn: apsw.Connection, changes: writes.IndexChanges) -> int:
            if space_id is not None:
                sql.require(conn, "spaces", space_id, "Space")
            same = sql.row(
                conn,
                "SELECT id FROM documents WHERE sha256 = ? AND space_id IS ?",
                (doc.sha256, space_id),
            )
            if same is not None:
                raise InvalidInput(
                    f"{doc.filename} was already added (document {same[0]})",
                    fix=f"remove it first with `braincue docs rm {same[0]}`",
                )
            conn.execute(
                "INSERT INTO documents (space_id, title, filename, media_type, sha256, chars,"
                " added_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    space_id,
                    title,
                    doc.filename,
                    doc.media_type,
                    doc.sha256,
                    len(doc.text),
                    added_at,
                ),
            )
            document_id = int(conn.last_insert_rowid())
            for i, part in enumerate(parts):
                chunk_id = writes.insert_chunk(
                    conn,
                    kind="document",
                    document_id=document_id,
                    space_id=space_id,
                    header=part.header,
                    body=part.body,
                    occurred_at=dated,
                )
                if vectors is not None:
                    self.index.put_vector(conn, changes, "chunk", chunk_id, vectors[i],
                                          len(part.text))
            return document_id

        return self.get_document(self._write(txn))

    def get_document(self, document_id: int) -> Document:
        rows = self._documents("d.id = ?", [document_id])
        if not rows:
            raise NotFound(f"no document {document_id}", fix="see `braincue docs list`")
        return rows[0]

    def list_documents(
        self, *, space_id: int | None = None, profile_wide: bool = False
    ) -> list[Document]:
        """Documents, newest first: all, those of ``space_id``, or (``profile_wide``) those in
        no Space."""
        if profile_wide:
            return self._documents("d.space_id IS NULL", [])
        if space_id is not None:
            return self._documents("d.space_id = ?", [space_id])
        return self._documents("1", [])

    def delete_document(self, document_id: int) -> Deleted:
        """Remove a document with its chunks, their FTS entries and vectors."""

        def txn(conn: apsw.Connection, changes: writes.IndexChanges) -> Deleted:
            deleted = Deleted()
            writes.delete_document(conn, changes, document_id, deleted)
            return deleted

        return self._write(txn)

    def _documents(self, where: str, params: list[Any]) -> list[Document]:
        rows = self.db.read(
            lambda conn: sql.rows(
                conn,
                "SELECT d.id, d.space_id, d.title, d.filename, d.media_type, d.sha256, d.chars,"
                " d.added_at, (SELECT count(*) FROM chunks c WHERE c.document_id = d.id)"
                f" FROM documents d WHERE {where} ORDER BY d.added_at DESC, d.id DESC",
                params,
            )
        )
        return [Document(*r) for r in rows]

    # -- assertions ----------------------------------------------------------------------------

    def add_assertions(self, new: Sequence[NewAssertion]) -> list[Assertion]:
        """Write assertions (embedded first, then rows, FTS and vectors in one transaction)."""
        for item in new:
            _check_assertion(item)
        if not new:
            return []
        vectors = self.index.embed([writes.assertion_body(item) for item in new])
        now = self._clock()

        def txn(conn: apsw.Connection, changes: writes.IndexChanges) -> list[int]:
            ids = []
            for i, item in enumerate(new):
                ids.append(writes.insert_assertion(conn, item, now))
                if vectors is not None:
                    self.index.put_vector(
                        conn,
                        changes,
                        "assertion",
                        ids[-1],
                        vectors[i],
                        len(writes.assertion_body(item)),
                    )
            return ids

        return self.get_assertions(self._write(txn))

    def add_assertion(self, new: NewAssertion) -> Assertion:
        return self.add_assertions([new])[0]

    def supersede(
        self, old_id: int, new: NewAssertion | int, *, closure: ItemClosure | None = None,
        reopen: bool = False,
    ) -> Assertion:
        """Replace a current assertion: ``new`` (written now, or an existing current id) takes
        its place and the old one gets ``invalidated_at`` (when the new one was said, never
        before the old one was) and ``superseded_by``, all in one transaction. Returns the new
        assertion. With ``closure`` the old one is an open commitment or task and the new one
        is its closed version (see :meth:`close_item`); otherwise the new one stays closed
        where the old one was, unless ``reopen``."""
        vectors = None
        if isinstance(new, NewAssertion):
            _check_assertion(new)
            vectors = self.index.embed([writes.assertion_body(new)])
        now = self._clock()

        def txn(conn: apsw.Connection, changes: writes.IndexChanges) -> int:
            old = sql.row(
                conn,
                "SELECT occurred_at, invalidated_at, superseded_by FROM assertions WHERE id = ?",
                (old_id,),
            )
            if old is None:
                raise NotFound(f"no assertion {old_id}")
            if old[1] is not None:
                raise InvalidInput(
                    f"assertion {old_id} is no longer current"
                    + (f" (superseded by {old[2]})" if old[2] is not None else ""),
                    fix="supersede the current one instead (see its history)",
                )
            if isinstance(new, NewAssertion):
                new_id = writes.insert_assertion(conn, new, now)
                if vectors is not None:
                    self.index.put_vector(
                        conn,
                        changes,
                        "assertion",
                        new_id,
                        vectors[0],
                        len(writes.assertion_body(new)),
                    )
            else:
                new_id = new
                if new_id == old_id:
                    raise InvalidInput("an assertion cannot supersede itself")
                if (
                    sql.require(conn, "assertions", new_id, "assertion", "invalidated_at")
                    is not None
                ):
                    raise InvalidInput(f"assertion {new_id} is no longer current")
            if not reopen:
                writes.carry_closure(conn, old_id, new_id, closure)
            said = conn.execute("SELECT occurred_at FROM assertions WHERE id = ?", (new_id,)).get
            conn.execute(
                "UPDATE assertions SET invalidated_at = ?, superseded_by = ? WHERE id = ?",
                (max(old[0], said), new_id, old_id),
            )
            return new_id

        return self.get_assertion(self._write(txn))

    def update_assertion(
        self,
        assertion_id: int,
        *,
        text: str = UNSET,
        chosen: str | None = UNSET,
        alternatives: Sequence[str] = UNSET,
        reasoning: str | None = UNSET,
        owner: str | None = UNSET,
        due: str | None = UNSET,
        review_status: ReviewStatus = UNSET,
        space_id: int | None = UNSET,
        expires_at: float | None = UNSET,
    ) -> Assertion:
        """Edit an assertion in place (the review of memories: approve, reject, archive, edit,
        re-scope, expiry). Only the fields given change; an edited text is re-embedded before
        anything is written. For a correction that keeps history use :meth:`supersede`."""
        current = self.get_assertion(assertion_id)
        if review_status is not UNSET:
            _check_choice("review_status", review_status, REVIEW_STATUSES)
        changes_text: dict[str, Any] = {
            "text": text,
            "chosen": chosen,
            "alternatives": alternatives,
            "reasoning": reasoning,
            "owner": owner,
            "due": due,
        }
        edited = msgspec.structs.replace(
            current,
            **{
                k: (tuple(v) if k == "alternatives" else v)
                for k, v in changes_text.items()
                if v is not UNSET
            },
        )
        if not edited.text.strip():
            raise InvalidInput("text: an assertion needs some text")
        body = writes.assertion_body(edited)
        reembed = body != writes.assertion_body(current)
        vectors = self.index.embed([body]) if reembed else None
        columns: dict[str, Any] = {
            k: (json.dumps(list(v)) if k == "alternatives" else v)
            for k, v in {
                **changes_text,
                "review_status": review_status,
                "space_id": space_id,
                "expires_at": expires_at,
            }.items()
            if v is not UNSET
        }

        def txn(conn: apsw.Connection, changes: writes.IndexChanges) -> None:
            sql.require(conn, "assertions", assertion_id, "assertion")
            if columns.get("space_id") is not None:
                sql.require(conn, "spaces", columns["space_id"], "Space")
            for column, value in columns.items():
                conn.execute(
                    f"UPDATE assertions SET {column} = ? WHERE id = ?", (value, assertion_id)
                )
            writes.reindex_assertion(conn, assertion_id)
            if reembed:
                writes.drop_vectors(conn, changes, "assertion", [assertion_id])
                if vectors is not None:
                    self.index.put_vector(
                        conn, changes, "assertion", assertion_id, vectors[0], len(body)
                    )

        self._write(txn)
        return self.get_assertion(assertion_id)

    def retract(self, assertion_id: int) -> Assertion:
        """End a current assertion now with no new version (the user says it is wrong): it
        keeps its history, and as-of reads before now still find it."""
        now = self._clock()

        def txn(conn: apsw.Connection, _: writes.IndexChanges) -> None:
            said = sql.require(conn, "assertions", assertion_id, "assertion", "occurred_at")
            if sql.require(conn, "assertions", assertion_id, "assertion",
                           "invalidated_at") is not None:
                raise InvalidInput(f"assertion {assertion_id} is no longer current",
                                   fix="see its history; the current version can be deleted")
            conn.execute("UPDATE assertions SET invalidated_at = ? WHERE id = ?",
                         (max(said, now), assertion_id))

        self._write(txn)
        return self.get_assertion(assertion_id)

    def delete_assertion(self, assertion_id: int) -> Deleted:
        """Delete one assertion (the user's explicit act); its chain is spliced around it."""

        def txn(conn: apsw.Connection, changes: writes.IndexChanges) -> Deleted:
            sql.require(conn, "assertions", assertion_id, "assertion")
            deleted = Deleted()
            writes.delete_assertions(conn, changes, [assertion_id], deleted)
            return deleted

        return self._write(txn)

    def add_restatements(self, session_id: int, items: Sequence[NewRestatement]) -> int:
        """Record that session ``session_id`` said again what existing assertions say (a
        duplicate found when it was kept); returns how many links are new. Each (assertion,
        session) pair is recorded once; nothing links an assertion to its own session, to a
        session of another Space, or to a memory about the person; an assertion deleted
        meanwhile is skipped. The rows go when either the session or the assertion is
        deleted."""
        if not items:
            return 0
        now = self._clock()
        return self._write(
            lambda conn, _: writes.insert_restatements(conn, session_id, items, now)
        )

    def restatements(self, assertion_ids: Sequence[int]) -> list[Restatement]:
        """Where these assertions were said again, earliest first (only sessions still in the
        assertion's Space)."""
        rows = self.db.read(
            lambda conn: sql.rows(
                conn,
                f"SELECT {sql.RESTATEMENT_COLUMNS} FROM restatements r"
                " JOIN sessions s ON s.id = r.session_id"
                " JOIN assertions a ON a.id = r.assertion_id"
                " WHERE r.assertion_id IN (SELECT value FROM json_each(?))"
                " AND s.space_id = a.space_id ORDER BY r.occurred_at, r.id",
                (sql.json_ids(assertion_ids),),
            )
        )
        return [sql.restatement_from(r) for r in rows]

    def get_assertions(self, ids: Sequence[int]) -> list[Assertion]:
        """Assertions by id, in the order asked; ids that no longer exist are left out."""
        return self._by_ids(sql.ASSERTION_COLUMNS, "assertions a", sql.assertion_from, ids)

    def _by_ids(
        self, columns: str, table: str, from_row: Callable[[Any], R], ids: Sequence[int]
    ) -> list[R]:
        """Rows of ``table`` by id, made by ``from_row``, in the order asked; ids that no
        longer exist are left out."""
        rows = self.db.read(
            lambda conn: sql.rows(
                conn,
                f"SELECT {columns} FROM {table} WHERE id IN (SELECT value FROM json_each(?))",
                (sql.json_ids(ids),),
            )
        )
        by_id = {r[0]: from_row(r) for r in rows}
        return [by_id[i] for i in ids if i in by_id]

    def get_assertion(self, assertion_id: int) -> Assertion:
        found = self.get_assertions([assertion_id])
        if not found:
            raise NotFound(f"no assertion {assertion_id}")
        return found[0]

    def current_assertions(self, scope: Scope, *, kind: str | None = None) -> list[Assertion]:
        """What is believed now within ``scope`` (superseded, unapproved, expired and — without
        consent — personal rows hidden), newest first."""
        return self._assertions_in(msgspec.structs.replace(scope, as_of=None), kind)

    def assertions_as_of(
        self, at: float, scope: Scope, *, kind: str | None = None
    ) -> list[Assertion]:
        """What was believed at time ``at``: said by then and not yet invalidated then."""
        return self._assertions_in(msgspec.structs.replace(scope, as_of=at), kind)

    def chain(self, assertion_id: int) -> list[Assertion]:
        """The history an assertion belongs to: everything that led to the newest version and
        that version, oldest first."""
        self.get_assertion(assertion_id)
        ids = self.db.read(
            lambda conn: sql.column(
                conn,
                """
                WITH RECURSIVE
                    forward (id, depth) AS (
                        SELECT :id, 0
                        UNION ALL
                        SELECT a.superseded_by, f.depth + 1 FROM assertions a
                        JOIN forward f ON a.id = f.id
                        WHERE a.superseded_by IS NOT NULL AND f.depth < 100000),
                    head (id) AS (SELECT id FROM forward ORDER BY depth DESC LIMIT 1),
                    back (id) AS (
                        SELECT id FROM head
                        UNION
                        SELECT a.id FROM assertions a JOIN back b ON a.superseded_by = b.id)
                SELECT a.id FROM assertions a WHERE a.id IN (SELECT id FROM back)
                ORDER BY a.occurred_at, a.id
                """,
                {"id": assertion_id},
            )
        )
        return self.get_assertions(ids)

    def list_assertions(
        self,
        *,
        space_id: int | None = None,
        profile_wide: bool = False,
        about_person: bool | None = None,
        statuses: Iterable[ReviewStatus] | None = None,
        session_id: int | None = None,
        include_invalidated: bool = False,
    ) -> list[Assertion]:
        """Assertions for listing and review (no recall rules): all, those of ``space_id``, or
        (``profile_wide``) those of no Space; optionally filtered. Newest first."""
        where: list[str] = ["1"]
        params: list[Any] = []
        if profile_wide:
            where.append("a.space_id IS NULL")
        elif space_id is not None:
            where.append("a.space_id = ?")
            params.append(space_id)
        if about_person is not None:
            where.append("a.about_person = ?")
            params.append(int(about_person))
        if statuses is not None:
            wanted = list(statuses)
            for status in wanted:
                _check_choice("review_status", status, REVIEW_STATUSES)
            where.append("a.review_status IN (SELECT value FROM json_each(?))")
            params.append(json.dumps(wanted))
        if session_id is not None:
            where.append("a.session_id = ?")
            params.append(session_id)
        if not include_invalidated:
            where.append("a.invalidated_at IS NULL")
        rows = self.db.read(
            lambda conn: sql.rows(
                conn,
                f"SELECT {sql.ASSERTION_COLUMNS} FROM assertions a WHERE {' AND '.join(where)}"
                " ORDER BY a.occurred_at DESC, a.id DESC",
                params,
            )
        )
        return [sql.assertion_from(r) for r in rows]

    def assertions_for_chunks(self, chunk_ids: Sequence[int], scope: Scope) -> list[Assertion]:
        """The in-scope assertions anchored on these chunks (a chunk hit's cross-links)."""
        where, params = assertion_filter(scope, now=self._clock(), model_id=self.model_id)
        rows = self.db.read(
            lambda conn: sql.rows(
                conn,
                f"SELECT {sql.ASSERTION_COLUMNS} FROM assertions a WHERE {where}"
                " AND a.anchor_chunk_id IN (SELECT value FROM json_each(:chunk_ids))"
                " ORDER BY a.occurred_at, a.id",
                {**params, "chunk_ids": sql.json_ids(chunk_ids)},
            )
        )
        return [sql.assertion_from(r) for r in rows]

    def _assertions_in(self, scope: Scope, kind: str | None) -> list[Assertion]:
        where, params = assertion_filter(scope, now=self._clock(), model_id=self.model_id)
        if kind is not None:
            where += " AND a.kind = :kind"
            params["kind"] = kind
        rows = self.db.read(
            lambda conn: sql.rows(
                conn,
                f"SELECT {sql.ASSERTION_COLUMNS} FROM assertions a WHERE {where}"
                " ORDER BY a.occurred_at DESC, a.id DESC",
                params,
            )
        )
        return [sql.assertion_from(r) for r in rows]

    # -- open items: commitments and tasks not yet done or dropped ------------------------------

    def open_items(self, scope: Scope | None = None) -> list[Assertion]:
        """The commitments and tasks still open, oldest first: those ``scope`` may see (as of
        its ``as_of``: what was open then), or with None the current ones of every Space."""
        params: dict[str, Any] = {}
        if scope is None:
            where = "a.invalidated_at IS NULL AND a.review_status = 'approved'"
        else:
            where, params = assertion_filter(scope, now=self._clock(), model_id=self.model_id)
        rows = self.db.read(
            lambda conn: sql.rows(
                conn,
                f"SELECT {sql.ASSERTION_COLUMNS} FROM assertions a WHERE {where}"
                f" AND a.kind IN {writes.ITEM_KINDS_SQL} AND NOT EXISTS"
                " (SELECT 1 FROM item_closures c WHERE c.assertion_id = a.id)"
                " ORDER BY a.occurred_at, a.id",
                params,
            )
        )
        return [sql.assertion_from(r) for r in rows]

    def item_closures(self, ids: Sequence[int]) -> dict[int, ItemClosure]:
        """The closure of each of these assertions that is the closed version of an item."""
        rows = self.db.read(
            lambda conn: sql.rows(
                conn,
                "SELECT assertion_id, status, evidence_turn_id FROM item_closures"
                " WHERE assertion_id IN (SELECT value FROM json_each(?))",
                (sql.json_ids(ids),),
            )
        )
        return {r[0]: ItemClosure(status=r[1], evidence_turn_id=r[2]) for r in rows}

    def close_item(
        self,
        item_id: int,
        closure: ItemClosure,
        *,
        source: AssertionSource = "user",
        session_id: int | None = None,
        anchor_chunk_id: int | None = None,
        occurred_at: float | None = None,
        text: str | None = None,
    ) -> Assertion:
        """Close an open commitment or task (done, or dropped): a new version — its text,
        owner and due date unless ``text`` says otherwise, said at ``occurred_at`` (default
        now) — supersedes it with the closure recorded; the open version stays in the
        history. Returns the closed version."""
        item = self.get_assertion(item_id)
        closed = NewAssertion(
            kind=item.kind, text=text or item.text, source=source, space_id=item.space_id,
            session_id=session_id, anchor_chunk_id=anchor_chunk_id, occurred_at=occurred_at,
            owner=item.owner, due=item.due,
        )
        return self.supersede(item_id, closed, closure=closure)

    # -- search legs (for fusion search) -------------------------------------------------------

    def fts_chunks(self, text: str, scope: Scope, limit: int = 50) -> list[Hit]:
        """Full-text search over chunks in ``scope``: (chunk id, bm25 with the header weighted
        2x), best first. ``text`` is what the user typed; it is escaped here."""
        return self._fts("chunks_fts", "chunks", *chunk_filter(scope), text, limit)

    def fts_assertions(self, text: str, scope: Scope, limit: int = 50) -> list[Hit]:
        """Full-text search over the assertions ``scope`` may see: (assertion id, bm25)."""
        where, params = assertion_filter(scope, now=self._clock(), model_id=self.model_id)
        return self._fts("assertions_fts", "assertions", where, params, text, limit, alias="a")

    def vector_chunks(
        self,
        query: Vectors | str,
        scope: Scope,
        limit: int = 50,
        *,
        kinds: Sequence[ChunkKind] | None = None,
    ) -> list[Hit]:
        """Nearest chunks in ``scope`` (of ``kinds``, default all) by the cosine similarity of
        their whole text: (chunk id, similarity), best first. ``query`` is a vector from
        :meth:`embed_query` or the text itself."""
        where, params = chunk_filter(scope)
        if kinds is None:
            return self._vector("chunk", "chunks", "c", where, params, query, limit)
        where += " AND c.kind IN (" + ", ".join(f":kind{i}" for i in range(len(kinds))) + ")"
        params |= {f"kind{i}": kind for i, kind in enumerate(kinds)}
        # some kinds (archives, documents) are a small part of the index: count them first
        return self._vector("chunk", "chunks", "c", where, params, query, limit, count=True)

    def vector_assertions(self, query: Vectors | str, scope: Scope, limit: int = 50) -> list[Hit]:
        """Nearest assertions ``scope`` may see: (assertion id, similarity), best first."""
        where, params = assertion_filter(scope, now=self._clock(), model_id=self.model_id)
        return self._vector("assertion", "assertions", "a", where, params, query, limit)

    def vector_turns(self, query: Vectors | str, scope: Scope, limit: int = 50) -> list[Hit]:
        """Transcript chunks in ``scope`` ranked by their best-matching turn: (chunk id, that
        turn's cosine similarity), best first. Each turn is embedded on its own (see
        :mod:`daemon.store.turnviews`), so a chunk is found by its one relevant turn."""
        where, params = chunk_filter(scope)
        in_chunk = (
            "c.session_id = t.session_id AND c.kind = 'transcript'"
            " AND t.id BETWEEN c.first_turn AND c.last_turn"
        )
        turn_scope = f"EXISTS (SELECT 1 FROM chunks c WHERE {in_chunk} AND {where})"
        hits = self._vector(
            "turn", "turns", "t", turn_scope, params, query, limit * TURNS_PER_CHUNK_FETCHED
        )
        if not hits:
            return []
        # the chunk holding a turn ends at the first last_turn at or after it (a turn longer
        # than a chunk ends several chunks at once)
        pairs = self.db.read(
            lambda conn: sql.rows(
                conn,
                "SELECT t.id, c.id FROM turns t JOIN chunks c ON c.session_id = t.session_id"
                " AND c.last_turn = (SELECT min(n.last_turn) FROM chunks n"
                " WHERE n.session_id = t.session_id AND n.last_turn >= t.id)"
                f" WHERE t.id IN (SELECT value FROM json_each(:turns)) AND {in_chunk} AND {where}"
                " ORDER BY c.id",
                {**params, "turns": sql.json_ids(h.id for h in hits)},
            )
        )
        chunks_of: dict[int, list[int]] = {}
        for turn_id, chunk_id in pairs:  # a turn longer than a chunk spans several
            chunks_of.setdefault(turn_id, []).append(chunk_id)
        best: dict[int, float] = {}
        for hit in hits:  # best first, so a chunk's first hit is its best turn
            for chunk_id in chunks_of.get(hit.id, ()):
                best.setdefault(chunk_id, hit.score)
        return [Hit(id=chunk_id, score=score) for chunk_id, score in best.items()][:limit]

    def _fts(
        self,
        fts_table: str,
        table: str,
        scope_sql: str,
        params: dict[str, Any],
        text: str,
        limit: int,
        *,
        alias: str = "c",
    ) -> list[Hit]:
        match = fts.match_query(text)
        if match is None or limit <= 0:
            return []
        weights = ", ".join(str(w) for w in fts.COLUMN_WEIGHTS)
        rows = self.db.read(
            lambda conn: sql.rows(
                conn,
                f"SELECT {alias}.id, bm25({fts_table}, {weights}) AS score FROM {fts_table}"
                f" JOIN {table} {alias} ON {alias}.id = {fts_table}.rowid"
                f" WHERE {fts_table} MATCH :match AND {scope_sql}"
                f" ORDER BY score, {alias}.id LIMIT :limit",
                {**params, "match": match, "limit": limit},
            )
        )
        return [Hit(id=r[0], score=r[1]) for r in rows]

    def _vector(
        self,
        kind: OwnerKind,
        table: str,
        alias: str,
        scope_sql: str,
        params: dict[str, Any],
        query: Vectors | str,
        limit: int,
        *,
        count: bool = False,
    ) -> list[Hit]:
        """The nearest owners in scope. ``count``: the scope admits few of the index's rows
        (some kinds of chunk), so count them first and read them from the owners' side."""
        index = self.index.indexes.get(kind)
        if index is None or self.embedder is None:
            return []
        vector = self.index.embed_query(query) if isinstance(query, str) else query
        assert vector is not None
        join = (
            f"FROM embeddings e JOIN {table} {alias} ON {alias}.id = e.owner_id"
            f" WHERE e.owner_kind = :kind AND e.model_id = :model AND e.dims = :dims"
            f" AND {scope_sql}"
        )
        # a scope that admits few rows is read from the owners' side (CROSS JOIN fixes the
        # order: without statistics SQLite would walk every embedding of the model)
        few_join = (
            f"FROM {table} {alias} CROSS JOIN embeddings e ON e.owner_kind = :kind"
            f" AND e.owner_id = {alias}.id AND e.model_id = :model AND e.dims = :dims"
            f" WHERE {scope_sql}"
        )
        bound = {
            **params,
            "kind": kind,
            "model": self.embedder.model_id,
            "dims": self.embedder.dimensions,
        }

        def allowed(keys: list[int]) -> dict[int, int]:
            rows = self.db.read(
                lambda conn: sql.rows(
                    conn,
                    f"SELECT e.id, e.owner_id {join}"
                    " AND e.id IN (SELECT value FROM json_each(:keys))",
                    {**bound, "keys": sql.json_ids(keys)},
                )
            )
            return {key: owner for key, owner in rows}

        def allowed_rows() -> tuple[list[int], list[int], Vectors]:
            source = few_join if count else join
            rows = self.db.read(
                lambda conn: sql.rows(conn, f"SELECT e.id, e.owner_id, e.vector {source}", bound)
            )
            dims = self.embedder.dimensions if self.embedder else 0
            matrix = (
                np.stack([from_blob(r[2], dims) for r in rows])
                if rows
                else np.zeros((0, dims), np.float32)
            )
            return [r[0] for r in rows], [r[1] for r in rows], matrix

        def allowed_count() -> int:
            counted: int = self.db.read(
                lambda conn: conn.execute(f"SELECT count(*) {few_join}", bound).get
            )
            return counted

        found = scoped_search(
            index,
            vector,
            limit,
            allowed=allowed,
            allowed_rows=allowed_rows,
            allowed_count=allowed_count if count else None,
        )
        return [Hit(id=owner, score=similarity) for owner, similarity in found]

    def counts(self) -> dict[str, int]:
        """How many rows of each kind the profile holds (for status)."""
        tables = ("spaces", "sessions", "turns", "chunks", "documents", "assertions")

        def count(conn: apsw.Connection) -> dict[str, int]:
            found = {table: sql.count_rows(conn, table) for table in tables}
            found["vectors"] = sql.count_rows(conn, "embeddings")
            return found

        return self.db.read(count)

    # -- plumbing ------------------------------------------------------------------------------

    def _write(self, fn: Callable[[apsw.Connection, writes.IndexChanges], T]) -> T:
        return self.index.write(fn)

# -- pure helpers --------------------------------------------------------------------------------


def _space_name(name: str) -> str:
    name = " ".join(name.split())
    if not name:
        raise InvalidInput("name: a Space needs a name")
    return name


def _check_activity(activity: str) -> None:
    _check_choice("activity", activity, ACTIVITIES)


def _check_choice(field: str, value: str, choices: Sequence[str]) -> None:
    if value not in choices:
        raise InvalidInput(f"{field}: unknown value {value!r}", fix=f"one of: {', '.join(choices)}")


def _check_turn(i: int, turn: NewTurn) -> None:
    if not turn.speaker.strip():
        raise InvalidInput(f"turns[{i}].speaker: a turn needs a speaker")
    if not turn.text.strip():
        raise InvalidInput(f"turns[{i}].text: a turn needs some text")
    if not turn.start >= 0:
        raise InvalidInput(f"turns[{i}].start: must be seconds from the session start (>= 0)")
    if turn.end is not None and not turn.end >= turn.start:
        raise InvalidInput(f"turns[{i}].end: must not be before its start")
    _check_choice(f"turns[{i}].source", turn.source, ("mic", "loopback", "import"))


def _check_assertion(a: NewAssertion) -> None:
    if not a.text.strip():
        raise InvalidInput("text: an assertion needs some text")
    if a.source == "extracted" and a.anchor_chunk_id is None:
        raise InvalidInput(
            "anchor_chunk_id: an extracted assertion must name the chunk it came from"
        )


# -- rows ----------------------------------------------------------------------------------------


# -- transactions (run on the writer thread) ---------------------------------------------------
