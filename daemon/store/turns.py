"""Turns as they are said and the chunks built from them, their vectors, and session archives."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import apsw
import msgspec

from daemon.errors import InvalidInput, NotFound
from daemon.sensitive.gate import mask_lines
from daemon.store import chunking, sql, writes
from daemon.store.base import check_choice
from daemon.store.records import (
    Chunk,
    ChunkKind,
    Deleted,
    NewTurn,
    OwnerKind,
    Turn,
    TurnHead,
)
from daemon.store.sessions import Sessions
from daemon.store.vectors import Vectors, from_blob

if TYPE_CHECKING:
    from daemon.llm.embed import EmbedProgress


class Turns(Sessions):
    """The turns, chunks and archives of the sessions."""

    def append_turns(
        self, session_id: int, turns: Sequence[NewTurn], *, progress: EmbedProgress | None = None,
        index: bool = True,
    ) -> list[Turn]:
        """Add turns to a live session and make them searchable (``progress`` counts what is
        embedded; ``index`` false: by meaning only once :meth:`index_turns` is called).

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
        if index:
            self.index.refresh_chunks(touched, swallow=True, progress=progress)
            self.index.embed_turns([t.id for t in stored], swallow=True, progress=progress)
        return stored

    def index_turns(self, session_id: int, turn_ids: Sequence[int]) -> None:
        """Embed turns appended with ``index`` false, and the chunks they grew or closed."""
        if not turn_ids:
            return
        touched = self.db.read(lambda conn: [r[0] for r in sql.rows(
            conn, "SELECT id FROM chunks WHERE session_id = ? AND kind = 'transcript'"
            " AND last_turn >= ?", (session_id, min(turn_ids)))])
        self.index.refresh_chunks(touched, swallow=True)
        self.index.embed_turns(turn_ids, swallow=True)

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

    def turn_heads(self, chunk_ids: Sequence[int]) -> dict[int, list[TurnHead]]:
        """Who said each turn of these transcript chunks, in order, by chunk id: what a search
        result shows of its turns without reading (and masking) their text."""
        rows = self.db.read(
            lambda conn: sql.rows(
                conn,
                "SELECT c.id, t.id, t.speaker, t.ref FROM chunks c JOIN turns t"
                " ON t.session_id = c.session_id AND t.id BETWEEN c.first_turn AND c.last_turn"
                " WHERE c.id IN (SELECT value FROM json_each(?)) AND c.kind = 'transcript'"
                " ORDER BY c.id, t.seq",
                (sql.json_ids(chunk_ids),),
            )
        )
        heads: dict[int, list[TurnHead]] = {}
        for chunk_id, turn_id, speaker, ref in rows:
            heads.setdefault(chunk_id, []).append(TurnHead(turn_id, speaker, ref))
        return heads

    def turn_vectors(self, turn_ids: Sequence[int]) -> dict[int, Vectors]:
        """The current embedding model's vectors of these turns, by turn id (a turn without
        one, or a store without an embedder, is left out)."""
        return self.vectors_of("turn", turn_ids)

    def vectors_of(self, kind: OwnerKind, owner_ids: Sequence[int]) -> dict[int, Vectors]:
        """The current embedding model's vectors of these owners of ``kind``, by owner id."""
        if self.embedder is None or not owner_ids:
            return {}
        model, dims = self.embedder.model_id, self.embedder.dimensions
        rows = self.db.read(
            lambda conn: sql.rows(
                conn,
                "SELECT owner_id, vector FROM embeddings WHERE owner_kind = ? AND model_id = ?"
                " AND dims = ? AND owner_id IN (SELECT value FROM json_each(?))",
                (kind, model, dims, sql.json_ids(owner_ids)),
            )
        )
        return {owner_id: from_blob(blob, dims) for owner_id, blob in rows}

    def closeness(
        self, query: str, owners: Sequence[tuple[OwnerKind, int]]
    ) -> dict[tuple[OwnerKind, int], float]:
        """The cosine similarity of each owner's vector to ``query`` as the search embeds it
        (an owner without a vector, or a store without an embedder, is left out)."""
        vector = self.index.embed_query(query) if owners else None
        if vector is None:
            return {}
        found: dict[tuple[OwnerKind, int], float] = {}
        for kind in dict.fromkeys(k for k, _ in owners):
            vectors = self.vectors_of(kind, [i for k, i in owners if k == kind])
            found |= {(kind, i): float(v @ vector) for i, v in vectors.items()}
        return found

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
        return self._read_one(f"SELECT {sql.CHUNK_COLUMNS} FROM chunks c WHERE c.id = ?",
                              (chunk_id,), sql.chunk_from, NotFound(f"no chunk {chunk_id}"))

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


def _check_turn(i: int, turn: NewTurn) -> None:
    if not turn.speaker.strip():
        raise InvalidInput(f"turns[{i}].speaker: a turn needs a speaker")
    if not turn.text.strip():
        raise InvalidInput(f"turns[{i}].text: a turn needs some text")
    if not turn.start >= 0:
        raise InvalidInput(f"turns[{i}].start: must be seconds from the session start (>= 0)")
    if turn.end is not None and not turn.end >= turn.start:
        raise InvalidInput(f"turns[{i}].end: must not be before its start")
    check_choice(f"turns[{i}].source", turn.source, ("mic", "loopback", "import"))


def masked_forms(turns: Sequence[Turn]) -> list[str | None]:
    """Each turn's text with the secrets said in it masked, as search and ask show it; None
    for a turn with nothing masked."""
    masked = mask_lines([t.text for t in turns])
    return [None if text == t.text else text for t, text in zip(turns, masked, strict=True)]
