"""Indexing: the vectors of what the store holds, apart from the records themselves.

Every vector is stored as a BLOB in ``embeddings`` (under the embedding model's id) and added to
the usearch index of its owner kind (chunk, assertion, turn), a cache rebuilt when missing,
stale or from another model (:mod:`daemon.store.vectors`). :meth:`Indexing.write` is the one
way to write: a transaction that collects its vector changes and applies them to the caches
right after it commits, in commit order.

What is embedded when (the store decides, see ``daemon.store.store``): text that arrives whole
is embedded first and written with its rows (:meth:`embed`, :meth:`put_vector`); live turns and
the chunks they grow are embedded after their rows commit (:meth:`refresh_chunks`,
:meth:`embed_turns`); whatever has no vector from the current model is embedded later by
:meth:`embed_pending`. Whoever waits for embedding passes an :class:`EmbedProgress` down.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import apsw
import numpy as np

from daemon.store import chunking, sql, turnviews, writes
from daemon.store.db import Database
from daemon.store.keys import DatabaseKey
from daemon.store.records import OwnerKind
from daemon.store.vectors import VectorIndex, Vectors, to_blob

if TYPE_CHECKING:
    from daemon.llm.embed import Embedder, EmbedProgress

log = logging.getLogger("daemon.store.store")  # the name its warnings have always had

T = TypeVar("T")
OWNER_KINDS: tuple[OwnerKind, ...] = ("chunk", "assertion", "turn")
QUERIES_KEPT = 16
LIVE_REEMBED_CHARS = 350  # a quarter of a chunk: the growing chunk is re-embedded ~4 times


class Indexing:
    """The vectors of one profile's database under ``embedder`` (None: nothing is embedded,
    nothing is indexed, the vector searches find nothing)."""

    def __init__(
        self,
        db: Database,
        data_dir: Path,
        embedder: Embedder | None,
        *,
        key: DatabaseKey | None = None,
        live_reembed_chars: int = LIVE_REEMBED_CHARS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.db = db
        self.embedder = embedder
        self.live_reembed_chars = live_reembed_chars
        self._clock = clock
        # the last queries' vectors: an ask embeds its question for the search and again to
        # weigh what it shows (keyed by model, so a model change never reuses one)
        self._queries: OrderedDict[tuple[str, str], Vectors] = OrderedDict()
        self._queries_lock = threading.Lock()
        self.indexes: dict[str, VectorIndex] = {}
        if embedder is not None:
            for kind in OWNER_KINDS:
                index = VectorIndex(
                    data_dir / f"vectors-{kind}.usearch",
                    owner_kind=kind,
                    model_id=embedder.model_id,
                    dims=embedder.dimensions,
                    key=None if key is None else key.raw,
                )
                db.read(index.open)
                self.indexes[kind] = index

    def write(self, fn: Callable[[apsw.Connection, writes.IndexChanges], T]) -> T:
        changes = writes.IndexChanges()
        return self.db.write(
            lambda conn: fn(conn, changes), on_commit=lambda _: self._apply(changes)
        )

    def _apply(self, changes: writes.IndexChanges) -> None:
        for kind, keys in changes.removed.items():
            if kind in self.indexes:
                self.indexes[kind].remove(keys)
        for kind, items in changes.added.items():
            index = self.indexes.get(kind)
            if index is not None and items:
                index.add([key for key, _ in items], np.stack([v for _, v in items]))
        for index in self.indexes.values():
            index.save_if_due()

    def put_vector(
        self,
        conn: apsw.Connection,
        changes: writes.IndexChanges,
        kind: OwnerKind,
        owner_id: int,
        vector: Vectors,
        chars: int,
    ) -> None:
        """Store ``vector`` as the owner's vector under the current model (replacing, never
        updating in place: a new row id is what tells a stale index apart)."""
        assert self.embedder is not None
        model = self.embedder.model_id
        old = sql.column(
            conn,
            "SELECT id FROM embeddings WHERE owner_kind = ? AND owner_id = ? AND model_id = ?",
            (kind, owner_id, model),
        )
        if old:
            conn.execute(
                "DELETE FROM embeddings WHERE id IN (SELECT value FROM json_each(?))",
                (sql.json_ids(old),),
            )
            changes.removed[kind].extend(old)
        vector = np.asarray(vector, dtype=np.float32)
        conn.execute(
            "INSERT INTO embeddings (owner_kind, owner_id, model_id, dims, chars, vector,"
            " created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (kind, owner_id, model, int(vector.shape[0]), chars, to_blob(vector), self._clock()),
        )
        changes.added[kind].append((int(conn.last_insert_rowid()), vector))

    def embed(self, texts: list[str], progress: EmbedProgress | None = None) -> Vectors | None:
        if self.embedder is None:
            return None
        vectors: Vectors = self.embedder.embed_sync(texts, progress)
        return vectors

    def embed_query(self, text: str) -> Vectors | None:
        """The query's vector under the current model (None without an embedder)."""
        if self.embedder is None:
            return None
        key = (self.embedder.model_id, text)
        with self._queries_lock:
            if key in self._queries:
                self._queries.move_to_end(key)
                return self._queries[key]
        vector: Vectors = self.embedder.embed_sync([self.embedder.query_prefix + text])[0]
        with self._queries_lock:
            self._queries[key] = vector
            while len(self._queries) > QUERIES_KEPT:
                self._queries.popitem(last=False)
        return vector

    def _embed_texts(
        self, texts: Sequence[str], what: str, *, swallow: bool,
        progress: EmbedProgress | None = None,
    ) -> Vectors | None:
        """The texts' vectors; with ``swallow``, None (and a log line) when embedding fails, so
        what was stored stays stored and is embedded by a later pass."""
        assert self.embedder is not None
        try:
            vectors: Vectors = self.embedder.embed_sync(texts, progress)
        except Exception as e:
            if not swallow:
                raise
            log.warning("could not embed %d %s (kept without vectors for now): %s",
                        len(texts), what, e)
            return None
        return vectors

    def refresh_chunks(
        self,
        chunk_ids: Sequence[int],
        *,
        swallow: bool,
        growing: bool = False,
        progress: EmbedProgress | None = None,
    ) -> int:
        """Embed the chunks among ``chunk_ids`` whose vector is missing or stale (an open
        chunk only once it grew by ``live_reembed_chars``, or always when ``growing``)."""
        if self.embedder is None or not chunk_ids:
            return 0
        model = self.embedder.model_id
        threshold = 0 if growing else self.live_reembed_chars
        rows = self.db.read(
            lambda conn: sql.rows(
                conn,
                "SELECT c.id, c.header, c.body, c.closed, e.chars FROM chunks c"
                " LEFT JOIN embeddings e ON e.owner_kind = 'chunk' AND e.owner_id = c.id"
                " AND e.model_id = ? WHERE c.id IN (SELECT value FROM json_each(?))",
                (model, sql.json_ids(chunk_ids)),
            )
        )
        todo = [
            (chunk_id, f"{head}\n{body}")
            for chunk_id, head, body, closed, chars in rows
            if chars is None
            or (closed and chars != len(head) + 1 + len(body))
            or (not closed and len(head) + 1 + len(body) - chars >= max(1, threshold))
        ]

        def unchanged(conn: apsw.Connection, chunk_id: int, text: str) -> bool:
            # changed while it was being embedded: the next pass takes it
            row = sql.row(conn, "SELECT header, body FROM chunks WHERE id = ?", (chunk_id,))
            return row is not None and f"{row[0]}\n{row[1]}" == text

        return self._embed_and_write("chunk", todo, unchanged, swallow=swallow,
                                     progress=progress)

    def embed_turns(
        self, turn_ids: Sequence[int], *, swallow: bool, progress: EmbedProgress | None = None
    ) -> int:
        """Embed the turns among ``turn_ids`` that have no vector from the current model, each
        under its session's context header (see :mod:`daemon.store.turnviews`)."""
        if self.embedder is None or not turn_ids:
            return 0
        model = self.embedder.model_id
        rows = self.db.read(
            lambda conn: sql.rows(
                conn,
                f"SELECT t.id, t.speaker, t.start_s, t.text, {sql.SAID_BEFORE}, s.started_at,"
                " s.title, s.participants FROM turns t JOIN sessions s ON s.id = t.session_id"
                " LEFT JOIN embeddings e ON e.owner_kind = 'turn' AND e.owner_id = t.id"
                " AND e.model_id = ? WHERE t.id IN (SELECT value FROM json_each(?))"
                " AND e.id IS NULL ORDER BY t.id",
                (model, sql.json_ids(turn_ids)),
            )
        )
        todo = [
            (
                turn_id,
                turnviews.turn_view(
                    chunking.ChunkContext(
                        date=writes.local_date(started_at),
                        kind="transcript",
                        title=title,
                        participants=tuple(json.loads(participants)),
                    ),
                    chunking.ChunkTurn(id=turn_id, speaker=speaker, start=start, text=text,
                                       before=before),
                ),
            )
            for turn_id, speaker, start, text, before, started_at, title, participants in rows
        ]
        return self._embed_and_write("turn", todo, _still_in("turns"), swallow=swallow,
                                     progress=progress)

    def embed_assertions(self, ids: Sequence[int]) -> int:
        if self.embedder is None or not ids:
            return 0
        found = self.db.read(
            lambda conn: [sql.assertion_from(r) for r in sql.rows(
                conn,
                f"SELECT {sql.ASSERTION_COLUMNS} FROM assertions a"
                " WHERE id IN (SELECT value FROM json_each(?)) ORDER BY a.id",
                (sql.json_ids(ids),),
            )]
        )
        if not found:
            return 0
        todo = [(a.id, writes.assertion_body(a)) for a in found]
        vectors = self.embedder.embed_sync([body for _, body in todo])
        return self._write_vectors("assertion", todo, vectors, _still_in("assertions"))

    def _embed_and_write(
        self,
        kind: OwnerKind,
        todo: Sequence[tuple[int, str]],
        current: Callable[[apsw.Connection, int, str], bool],
        *,
        swallow: bool,
        progress: EmbedProgress | None,
    ) -> int:
        """Embed each ``(owner id, text)`` of ``todo`` and write the vectors (see
        :meth:`_write_vectors`); how many were written (0 when the model failed and
        ``swallow``)."""
        if not todo:
            return 0
        vectors = self._embed_texts([text for _, text in todo], f"{kind}s", swallow=swallow,
                                    progress=progress)
        if vectors is None:
            return 0
        return self._write_vectors(kind, todo, vectors, current)

    def _write_vectors(
        self,
        kind: OwnerKind,
        todo: Sequence[tuple[int, str]],
        vectors: Vectors,
        current: Callable[[apsw.Connection, int, str], bool],
    ) -> int:
        """Write each ``(owner id, text)``'s vector in one transaction, skipping those that
        ``current`` says were deleted or changed while they were being embedded."""

        def txn(conn: apsw.Connection, changes: writes.IndexChanges) -> int:
            written = 0
            for (owner_id, text), vector in zip(todo, vectors, strict=True):
                if current(conn, owner_id, text):
                    self.put_vector(conn, changes, kind, owner_id, vector, len(text))
                    written += 1
            return written

        return self.write(txn)

    def embed_pending(
        self, batch: int = 64, *, should_stop: Callable[[], bool] | None = None
    ) -> int:
        """Embed every turn, chunk and assertion that has no vector from the current model (or
        whose chunk text grew since), e.g. after a model change or an embedding failure.
        Returns how many vectors were written; a model failure raises. ``should_stop`` is
        asked between batches (a daemon shutting down stops there; the rest waits)."""
        if self.embedder is None:
            return 0
        model = self.embedder.model_id
        chunk_ids = self.db.read(
            lambda conn: sql.column(
                conn,
                "SELECT c.id FROM chunks c LEFT JOIN embeddings e ON e.owner_kind = 'chunk'"
                " AND e.owner_id = c.id AND e.model_id = ?"
                " WHERE e.id IS NULL OR e.chars <> length(c.header) + 1 + length(c.body)"
                " ORDER BY c.id",
                (model,),
            )
        )
        assertion_ids = self.db.read(
            lambda conn: sql.column(
                conn,
                "SELECT a.id FROM assertions a LEFT JOIN embeddings e"
                " ON e.owner_kind = 'assertion' AND e.owner_id = a.id AND e.model_id = ?"
                " WHERE e.id IS NULL ORDER BY a.id",
                (model,),
            )
        )
        turn_ids = self.db.read(
            lambda conn: sql.column(
                conn,
                "SELECT t.id FROM turns t LEFT JOIN embeddings e"
                " ON e.owner_kind = 'turn' AND e.owner_id = t.id AND e.model_id = ?"
                " WHERE e.id IS NULL ORDER BY t.id",
                (model,),
            )
        )
        written = 0
        for start in range(0, len(turn_ids), batch):
            if should_stop is not None and should_stop():
                return written
            written += self.embed_turns(turn_ids[start : start + batch], swallow=False)
        for start in range(0, len(chunk_ids), batch):
            if should_stop is not None and should_stop():
                return written
            written += self.refresh_chunks(
                chunk_ids[start : start + batch], swallow=False, growing=True
            )
        for start in range(0, len(assertion_ids), batch):
            if should_stop is not None and should_stop():
                return written
            written += self.embed_assertions(assertion_ids[start : start + batch])
        return written

    def count(self, kind: OwnerKind) -> int:
        """How many vectors of the current model the index holds for ``kind``."""
        index = self.indexes.get(kind)
        return len(index) if index is not None else 0

    def save(self) -> None:
        """Save the vector indexes that changed (they are also saved as they grow and on
        close)."""
        for index in self.indexes.values():
            if index.dirty:
                index.save()


def _still_in(table: str) -> Callable[[apsw.Connection, int, str], bool]:
    """A ``current`` check for :meth:`Indexing._write_vectors`: the row was not deleted."""

    def exists(conn: apsw.Connection, owner_id: int, text: str) -> bool:
        return sql.row(conn, f"SELECT 1 FROM {table} WHERE id = ?", (owner_id,)) is not None

    return exists
