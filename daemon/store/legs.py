"""The search legs fusion search (:mod:`daemon.store.search`) builds on: full-text and vector
searches over chunks, turns and assertions, each within a scope."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import apsw

from daemon.store import fts, sql
from daemon.store.base import StoreBase
from daemon.store.records import (
    ChunkKind,
    Hit,
    OwnerKind,
)
from daemon.store.scope import Scope, assertion_filter, chunk_filter
from daemon.store.vectors import Vectors, from_blobs, scoped_search

# full-text matches read per match wanted before the scope is applied
FTS_FIRST_READ = 4
# turn vectors fetched per chunk wanted: the best turns of a query cluster in few chunks
TURNS_PER_CHUNK_FETCHED = 4


class SearchLegs(StoreBase):
    """Full-text and vector searches within a scope."""

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
        """The ``limit`` best matches in scope by (bm25, id). The full-text table's best
        ``FTS_FIRST_READ`` times as many, read alone, are filtered by the scope: the same rows,
        without joining every match of a common word to its table (three times the work on a
        million chunks); only when too few of them are in scope is every match joined."""
        match = fts.match_query(text)
        if match is None or limit <= 0:
            return []
        weights = ", ".join(str(w) for w in fts.COLUMN_WEIGHTS)
        ranked = f"bm25({fts_table}, {weights})"
        first = limit * FTS_FIRST_READ

        def best(conn: apsw.Connection) -> list[Hit]:
            top = sql.rows(
                conn,
                f"SELECT rowid, {ranked} AS score FROM {fts_table} WHERE {fts_table} MATCH ?"
                " ORDER BY score, rowid LIMIT ?",
                (match, first),
            )
            in_scope = {
                r[0] for r in sql.rows(
                    conn,
                    f"SELECT {alias}.id FROM {table} {alias} WHERE {alias}.id IN"
                    f" (SELECT value FROM json_each(:ids)) AND {scope_sql}",
                    {**params, "ids": sql.json_ids(r[0] for r in top)},
                )
            }
            hits = [Hit(id=r[0], score=r[1]) for r in top if r[0] in in_scope]
            if len(hits) >= limit or len(top) < first:
                return hits[:limit]
            rows = sql.rows(
                conn,
                f"SELECT {alias}.id, {ranked} AS score FROM {fts_table}"
                f" JOIN {table} {alias} ON {alias}.id = {fts_table}.rowid"
                f" WHERE {fts_table} MATCH :match AND {scope_sql}"
                f" ORDER BY score, {alias}.id LIMIT :limit",
                {**params, "match": match, "limit": limit},
            )
            return [Hit(id=r[0], score=r[1]) for r in rows]

        return self.db.read(best)

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
            matrix = from_blobs([r[2] for r in rows], dims)
            return [r[0] for r in rows], [r[1] for r in rows], matrix

        def allowed_count(at_most: int) -> int:
            # the owners in scope, whether embedded or not: the count only chooses the way to
            # search (an owner not embedded yet sends it to the index, which is right anyway),
            # and the owners' indexes answer it without a lookup of each one's embedding
            counted: int = self.db.read(
                lambda conn: conn.execute(
                    f"SELECT count(*) FROM (SELECT 1 FROM {table} {alias} WHERE {scope_sql}"
                    " LIMIT :at_most)",
                    {**params, "at_most": at_most},
                ).get
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
