"""Transaction bodies: functions over the writer's connection, each run inside the one
``BEGIN IMMEDIATE`` transaction of a :meth:`Store <daemon.store.store.Store>` write.

They keep everything derived in step with the rows it comes from — the FTS entries of chunks
and assertions, the chunks of a live transcript, the vectors of deleted rows — and cascade
deletions explicitly (chunk sources and provenance are plain columns, not foreign keys). Vector
index edits are collected in :class:`IndexChanges` and applied only once the transaction has
committed. Also here: the text that is indexed and embedded for an assertion or an archive.
"""

from __future__ import annotations

import datetime as dt
import json
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import apsw

from daemon.errors import InvalidInput, NotFound
from daemon.store import chunking, sql
from daemon.store.records import (
    ITEM_KINDS,
    Assertion,
    ChunkKind,
    Deleted,
    ItemClosure,
    NewAssertion,
    NewRestatement,
    NewTurn,
    OwnerKind,
    Turn,
)
from daemon.store.vectors import Vectors


class IndexChanges:
    """Vector index edits made by one transaction, applied once it has committed."""

    def __init__(self) -> None:
        self.added: dict[str, list[tuple[int, Vectors]]] = defaultdict(list)
        self.removed: dict[str, list[int]] = defaultdict(list)


def archive_header(ctx: chunking.ChunkContext) -> str:
    """``[date | kind | title | participants]``: a chunk header without a speaker."""
    return chunking.header(ctx, "", 0).rsplit(" | ", 1)[0] + "]"


def assertion_header(a: NewAssertion | Assertion, occurred_at: float) -> str:
    """The FTS header of an assertion: ``[date | kind | owner | due]``."""
    fields = [f"{local_date(occurred_at):%Y-%m-%d}", a.kind]
    if a.owner:
        fields.append(a.owner)
    if a.due:
        fields.append(f"due {a.due}")
    return "[" + " | ".join(fields) + "]"


def assertion_body(a: NewAssertion | Assertion) -> str:
    """What is indexed and embedded: the statement and, for decisions, what was chosen over
    what, and why (the rejected alternatives are what keeps "why not B?" answerable)."""
    lines = [a.text.strip()]
    if a.chosen:
        lines.append(f"Chosen: {a.chosen}")
    if a.alternatives:
        lines.append("Alternatives: " + "; ".join(a.alternatives))
    if a.reasoning:
        lines.append(f"Reasoning: {a.reasoning}")
    return "\n".join(lines)


def local_date(timestamp: float) -> dt.date:
    return dt.datetime.fromtimestamp(timestamp).date()


def check_archivable(conn: apsw.Connection, session_id: int) -> int:
    """The Space a session's archive goes to; raises when the session must not be archived."""
    row = sql.row(
        conn,
        "SELECT s.space_id, s.practice, sp.memory_enabled FROM sessions s"
        " LEFT JOIN spaces sp ON sp.id = s.space_id WHERE s.id = ?",
        (session_id,),
    )
    if row is None:
        raise NotFound(f"no session {session_id}")
    space_id, practice, memory_enabled = row
    if practice:
        raise InvalidInput(f"session {session_id} is practice, and practice is never archived")
    if space_id is None:
        raise InvalidInput(
            f"session {session_id} is in no Space, so nothing of it is kept",
            fix="file it into a Space first",
        )
    if not memory_enabled:
        raise InvalidInput(
            f"session {session_id} is in a Space whose memory is off",
            fix="turn the Space's memory on to keep archives there",
        )
    return int(space_id)


def check_space_name_free(conn: apsw.Connection, name: str, other_than: int | None = None) -> None:
    row = sql.row(conn, "SELECT id FROM spaces WHERE name = ?", (name,))
    if row is not None and row[0] != other_than:
        raise InvalidInput(f"a Space named {name!r} already exists", fix="choose another name")


def append_turns(
    conn: apsw.Connection, session_id: int, turns: Sequence[NewTurn], limit: int
) -> tuple[list[Turn], list[int]]:
    """Insert turns and grow the session's chunks; returns the turns and the chunk ids touched."""
    started_at, title, participants, status, space_id = sql.require_row(
        conn, "sessions", session_id, "session",
        "started_at, title, participants, status, space_id")
    if status != "live":
        raise InvalidInput(
            f"session {session_id} has ended; turns can only be added to a live session"
        )
    ctx = chunking.ChunkContext(
        date=local_date(started_at),
        kind="transcript",
        title=title,
        participants=tuple(json.loads(participants)),
    )
    stored = _insert_turns(conn, session_id, turns)
    return stored, _grow_chunks(conn, session_id, space_id, started_at, stored, ctx, limit)


def _insert_turns(
    conn: apsw.Connection, session_id: int, turns: Sequence[NewTurn]
) -> list[Turn]:
    """Insert ``turns`` after the session's last one; returns them as stored."""
    seq: int = conn.execute(
        "SELECT coalesce(max(seq), 0) FROM turns WHERE session_id = ?", (session_id,)
    ).get
    stored: list[Turn] = []
    for turn in turns:
        seq += 1
        end = turn.start if turn.end is None else turn.end
        conn.execute(
            "INSERT INTO turns (session_id, seq, speaker, source, start_s, end_s, text, ref,"
            " voice_label, voice_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (session_id, seq, turn.speaker, turn.source, turn.start, end, turn.text, turn.ref,
             turn.voice_label, turn.voice_id),
        )
        stored.append(
            Turn(
                id=int(conn.last_insert_rowid()),
                session_id=session_id,
                seq=seq,
                speaker=turn.speaker,
                source=turn.source,
                start=turn.start,
                end=end,
                text=turn.text,
                ref=turn.ref,
            )
        )
    return stored


def _grow_chunks(
    conn: apsw.Connection,
    session_id: int,
    space_id: int | None,
    started_at: float,
    stored: Sequence[Turn],
    ctx: chunking.ChunkContext,
    limit: int,
) -> list[int]:
    """Grow the session's transcript chunks by the ``stored`` turns: the open chunk takes them
    until it is full, then closes; returns the ids of the chunks touched."""
    open_row = sql.row(
        conn,
        "SELECT id, first_turn, last_turn FROM chunks"
        " WHERE session_id = ? AND kind = 'transcript' AND closed = 0",
        (session_id,),
    )
    open_id: int | None = None
    open_turns: list[chunking.ChunkTurn] = []
    if open_row is not None:
        open_id = open_row[0]
        open_turns = chunk_turns_between(conn, session_id, open_row[1], open_row[2])

    def put(row_id: int | None, draft: chunking.ChunkDraft, closed: bool) -> int:
        fields: dict[str, Any] = {
            "header": draft.header,
            "body": draft.body,
            "occurred_at": started_at + draft.start,
            "first_turn": draft.first_turn_id,
            "last_turn": draft.last_turn_id,
            "closed": closed,
        }
        if row_id is None:
            return insert_chunk(
                conn, kind="transcript", session_id=session_id, space_id=space_id, **fields
            )
        update_chunk(conn, row_id, **fields)
        return row_id

    touched: list[int] = []
    before = "" if not stored else sql.row(
        conn, f"SELECT {sql.SAID_BEFORE} FROM turns t WHERE t.id = ?", (stored[0].id,))[0]
    for added in stored:
        new = chunking.ChunkTurn(
            id=added.id, speaker=added.speaker, start=added.start, text=added.text, before=before
        )
        before = added.text
        growth = chunking.grow(open_turns, new, ctx, limit)
        closed = list(growth.closed)
        if closed and open_turns:  # the chunk that was open is the first one closed
            touched.append(put(open_id, closed.pop(0), closed=True))
            open_id = None
        touched.extend(put(None, draft, closed=True) for draft in closed)
        open_turns = list(growth.open_turns)
    draft = chunking.open_chunk(open_turns, ctx)
    if draft is not None:
        touched.append(put(open_id, draft, closed=False))
    return touched


def chunk_turns_between(
    conn: apsw.Connection, session_id: int, first: int, last: int
) -> list[chunking.ChunkTurn]:
    """The turns of a session from turn id ``first`` to ``last``, as chunking reads them."""
    return [
        chunking.ChunkTurn(id=r[0], speaker=r[1], start=r[2], text=r[3], before=r[4])
        for r in sql.rows(
            conn,
            f"SELECT t.id, t.speaker, t.start_s, t.text, {sql.SAID_BEFORE} FROM turns t"
            " WHERE t.session_id = ? AND t.id BETWEEN ? AND ? ORDER BY t.seq",
            (session_id, first, last),
        )
    ]


def insert_chunk(
    conn: apsw.Connection,
    *,
    kind: ChunkKind,
    header: str,
    body: str,
    occurred_at: float,
    session_id: int | None = None,
    document_id: int | None = None,
    space_id: int | None = None,
    first_turn: int | None = None,
    last_turn: int | None = None,
    closed: bool = True,
) -> int:
    conn.execute(
        "INSERT INTO chunks (kind, session_id, document_id, space_id, header, body, occurred_at,"
        " first_turn, last_turn, closed) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            kind,
            session_id,
            document_id,
            space_id,
            header,
            body,
            occurred_at,
            first_turn,
            last_turn,
            int(closed),
        ),
    )
    chunk_id = int(conn.last_insert_rowid())
    conn.execute(
        "INSERT INTO chunks_fts (rowid, header, body) VALUES (?, ?, ?)", (chunk_id, header, body)
    )
    return chunk_id


def update_chunk(
    conn: apsw.Connection,
    chunk_id: int,
    *,
    header: str,
    body: str,
    occurred_at: float,
    first_turn: int,
    last_turn: int,
    closed: bool,
) -> None:
    # external-content FTS: the old text must be removed with exactly the values it indexed
    conn.execute(
        "INSERT INTO chunks_fts (chunks_fts, rowid, header, body)"
        " SELECT 'delete', id, header, body FROM chunks WHERE id = ?",
        (chunk_id,),
    )
    conn.execute(
        "UPDATE chunks SET header = ?, body = ?, occurred_at = ?, first_turn = ?, last_turn = ?,"
        " closed = ? WHERE id = ?",
        (header, body, occurred_at, first_turn, last_turn, int(closed), chunk_id),
    )
    conn.execute(
        "INSERT INTO chunks_fts (rowid, header, body) VALUES (?, ?, ?)", (chunk_id, header, body)
    )


def insert_assertion(conn: apsw.Connection, a: NewAssertion, now: float) -> int:
    if a.space_id is not None:
        sql.require(conn, "spaces", a.space_id, "Space")
    if a.session_id is not None:
        sql.require(conn, "sessions", a.session_id, "session")
    if a.anchor_chunk_id is not None:
        sql.require(conn, "chunks", a.anchor_chunk_id, "chunk")
    status = a.review_status or ("pending" if a.about_person else "approved")
    occurred_at = now if a.occurred_at is None else a.occurred_at
    conn.execute(
        "INSERT INTO assertions (kind, text, chosen, alternatives, reasoning, owner, due,"
        " about_person, review_status, space_id, source, anchor_chunk_id, session_id,"
        " occurred_at, recorded_at, expires_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            a.kind,
            a.text.strip(),
            a.chosen,
            json.dumps(list(a.alternatives)),
            a.reasoning,
            a.owner,
            a.due,
            int(a.about_person),
            status,
            a.space_id,
            a.source,
            a.anchor_chunk_id,
            a.session_id,
            occurred_at,
            now,
            a.expires_at,
        ),
    )
    assertion_id = int(conn.last_insert_rowid())
    conn.execute(
        "INSERT INTO assertions_fts (rowid, header, body) VALUES (?, ?, ?)",
        (assertion_id, assertion_header(a, occurred_at), assertion_body(a)),
    )
    return assertion_id


ITEM_KINDS_SQL = "(" + ", ".join(f"'{k}'" for k in ITEM_KINDS) + ")"


def carry_closure(conn: apsw.Connection, old_id: int, new_id: int,
                  closure: ItemClosure | None) -> None:
    """``new_id`` supersedes ``old_id``: with ``closure``, it closes the open item ``old_id``;
    without, it inherits the closure ``old_id`` may have (a correction of a closed item leaves
    it closed)."""
    if closure is not None:
        insert_closure(conn, old_id, new_id, closure)
        return
    conn.execute(
        "INSERT INTO item_closures (assertion_id, status, evidence_turn_id)"
        " SELECT ?, status, evidence_turn_id FROM item_closures WHERE assertion_id = ?",
        (new_id, old_id),
    )


def insert_closure(conn: apsw.Connection, item_id: int, closed_id: int,
                   closure: ItemClosure) -> None:
    """Record that ``closed_id`` is the closed version of the open item ``item_id``."""
    kind = sql.require(conn, "assertions", item_id, "assertion", "kind")
    if kind not in ITEM_KINDS:
        raise InvalidInput(f"assertion {item_id} is a {kind}: only a commitment or a task is "
                           "open or done", fix="`braincue open` lists the open ones")
    if sql.row(conn, "SELECT 1 FROM item_closures WHERE assertion_id = ?", (item_id,)):
        raise InvalidInput(f"assertion {item_id} is already closed",
                           fix="`braincue open` lists the open ones")
    if closure.status not in ("done", "dropped"):
        raise InvalidInput(f"status: unknown value {closure.status!r}", fix="done or dropped")
    conn.execute(
        "INSERT INTO item_closures (assertion_id, status, evidence_turn_id) VALUES (?, ?, ?)",
        (closed_id, closure.status, closure.evidence_turn_id),
    )


def reindex_assertion(conn: apsw.Connection, assertion_id: int) -> None:
    """Index an edited assertion's text afresh (the old words are erased, not tombstoned)."""
    row = sql.row(
        conn, f"SELECT {sql.ASSERTION_COLUMNS} FROM assertions a WHERE a.id = ?", (assertion_id,)
    )
    a = sql.assertion_from(row)
    fts_erase(conn, "assertions_fts", "DELETE FROM assertions_fts WHERE rowid = ?", (assertion_id,))
    conn.execute(
        "INSERT INTO assertions_fts (rowid, header, body) VALUES (?, ?, ?)",
        (assertion_id, assertion_header(a, a.occurred_at), assertion_body(a)),
    )


def insert_restatements(
    conn: apsw.Connection, session_id: int, items: Sequence[NewRestatement], now: float
) -> int:
    """Record that ``session_id`` said again what each item's assertion says; returns how many
    rows are new. A pair already recorded stays as it was (keeping a session twice adds
    nothing). Only where the session's Space is the assertion's: a restatement never links
    across Spaces, and an assertion deleted meanwhile is skipped."""
    space_id = sql.require(conn, "sessions", session_id, "session", "space_id")
    if space_id is None:
        return 0
    added = 0
    for item in items:
        conn.execute(
            "INSERT OR IGNORE INTO restatements (assertion_id, session_id, anchor_chunk_id,"
            " occurred_at, recorded_at) SELECT a.id, ?, ?, ?, ? FROM assertions a"
            " WHERE a.id = ? AND a.space_id = ? AND a.about_person = 0"
            " AND a.session_id IS NOT ?",
            (
                session_id,
                item.anchor_chunk_id,
                now if item.occurred_at is None else item.occurred_at,
                now,
                item.assertion_id,
                space_id,
                session_id,
            ),
        )
        added += conn.changes()
    return added


def drop_restatements_across_spaces(conn: apsw.Connection, session_id: int) -> None:
    """After ``session_id`` moved to another Space: forget the restatements that now link an
    assertion of one Space to a session of another (by it, or of what it produced)."""
    conn.execute(
        "DELETE FROM restatements WHERE id IN (SELECT r.id FROM restatements r"
        " JOIN assertions a ON a.id = r.assertion_id JOIN sessions s ON s.id = r.session_id"
        " WHERE (r.session_id = :s OR a.session_id = :s) AND a.space_id IS NOT s.space_id)",
        {"s": session_id},
    )


def drop_vectors(
    conn: apsw.Connection, changes: IndexChanges, kind: OwnerKind, owner_ids: Sequence[int]
) -> int:
    """Delete every vector (of any model) of these owners."""
    if not owner_ids:
        return 0
    keys = sql.column(
        conn,
        "SELECT id FROM embeddings WHERE owner_kind = ?"
        " AND owner_id IN (SELECT value FROM json_each(?))",
        (kind, sql.json_ids(owner_ids)),
    )
    if keys:
        conn.execute(
            "DELETE FROM embeddings WHERE id IN (SELECT value FROM json_each(?))",
            (sql.json_ids(keys),),
        )
        changes.removed[kind].extend(keys)
    return len(keys)


def delete_chunks(
    conn: apsw.Connection, changes: IndexChanges, ids: Sequence[int], deleted: Deleted
) -> None:
    if not ids:
        return
    listed = sql.json_ids(ids)
    deleted.vectors += drop_vectors(conn, changes, "chunk", ids)
    fts_erase(
        conn,
        "chunks_fts",
        "INSERT INTO chunks_fts (chunks_fts, rowid, header, body)"
        " SELECT 'delete', id, header, body FROM chunks"
        " WHERE id IN (SELECT value FROM json_each(?))",
        (listed,),
    )
    conn.execute("DELETE FROM chunks WHERE id IN (SELECT value FROM json_each(?))", (listed,))
    deleted.chunks += conn.changes()


def fts_erase(conn: apsw.Connection, table: str, statement: str, params: Any) -> None:
    """Run an FTS deletion with FTS5's secure-delete on: the deleted words leave the index
    at once instead of lingering under a tombstone until segments merge. (Only for the user's
    deletions: the growing chunk's constant rewrites would pay twice for nothing to erase.)"""
    conn.execute(f"INSERT INTO {table} ({table}, rank) VALUES ('secure-delete', 1)")
    conn.execute(statement, params)
    conn.execute(f"INSERT INTO {table} ({table}, rank) VALUES ('secure-delete', 0)")


def delete_assertions(
    conn: apsw.Connection, changes: IndexChanges, ids: Sequence[int], deleted: Deleted
) -> None:
    """Delete assertions, splicing the supersede chains around them: a survivor that pointed
    at a deleted row points at that row's first surviving successor, or — when the deleted
    row was current — becomes current again."""
    if not ids:
        return
    doomed = set(ids)
    state = {
        r[0]: (r[1], r[2])
        for r in conn.execute(
            "SELECT id, invalidated_at, superseded_by FROM assertions"
            " WHERE id IN (SELECT value FROM json_each(?))",
            (sql.json_ids(ids),),
        )
    }
    for row_id in doomed:
        survivors = sql.column(conn, "SELECT id FROM assertions WHERE superseded_by = ?", (row_id,))
        for survivor in survivors:
            if survivor in doomed:
                continue
            successor, ended_current = _first_survivor(row_id, doomed, state)
            if successor is not None:
                conn.execute(
                    "UPDATE assertions SET superseded_by = ? WHERE id = ?", (successor, survivor)
                )
            elif ended_current:
                conn.execute(
                    "UPDATE assertions SET invalidated_at = NULL, superseded_by = NULL"
                    " WHERE id = ?",
                    (survivor,),
                )
            else:
                conn.execute("UPDATE assertions SET superseded_by = NULL WHERE id = ?", (survivor,))
    listed = sql.json_ids(doomed)
    conn.execute(
        "DELETE FROM restatements WHERE assertion_id IN (SELECT value FROM json_each(?))",
        (listed,),
    )
    deleted.restatements += conn.changes()
    conn.execute(
        "DELETE FROM item_closures WHERE assertion_id IN (SELECT value FROM json_each(?))",
        (listed,),
    )
    deleted.vectors += drop_vectors(conn, changes, "assertion", list(doomed))
    fts_erase(
        conn,
        "assertions_fts",
        "DELETE FROM assertions_fts WHERE rowid IN (SELECT value FROM json_each(?))",
        (listed,),
    )
    conn.execute("DELETE FROM assertions WHERE id IN (SELECT value FROM json_each(?))", (listed,))
    deleted.assertions += conn.changes()


def delete_session(
    conn: apsw.Connection, changes: IndexChanges, session_id: int, deleted: Deleted
) -> None:
    sql.require(conn, "sessions", session_id, "session")
    conn.execute("DELETE FROM restatements WHERE session_id = ?", (session_id,))
    deleted.restatements += conn.changes()
    chunk_ids = sql.column(conn, "SELECT id FROM chunks WHERE session_id = ?", (session_id,))
    assertion_ids = sql.column(
        conn,
        "SELECT id FROM assertions"
        " WHERE (session_id = ? OR anchor_chunk_id IN (SELECT value FROM json_each(?)))"
        " AND NOT (about_person = 1 AND review_status <> 'pending')",
        (session_id, sql.json_ids(chunk_ids)),
    )
    delete_assertions(conn, changes, assertion_ids, deleted)
    delete_chunks(conn, changes, chunk_ids, deleted)
    turn_ids = sql.column(conn, "SELECT id FROM turns WHERE session_id = ?", (session_id,))
    deleted.vectors += drop_vectors(conn, changes, "turn", turn_ids)
    conn.execute("DELETE FROM turns WHERE session_id = ?", (session_id,))
    deleted.turns += conn.changes()
    conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,))
    deleted.sessions += 1


def delete_document(
    conn: apsw.Connection, changes: IndexChanges, document_id: int, deleted: Deleted
) -> None:
    sql.require(conn, "documents", document_id, "document")
    delete_chunks(
        conn,
        changes,
        sql.column(conn, "SELECT id FROM chunks WHERE document_id = ?", (document_id,)),
        deleted,
    )
    conn.execute("DELETE FROM documents WHERE id = ?", (document_id,))
    deleted.documents += 1


def _first_survivor(
    row_id: int, doomed: set[int], state: dict[int, tuple[float | None, int | None]]
) -> tuple[int | None, bool]:
    """Follow ``superseded_by`` from a deleted row to the first row that survives; without
    one, say whether the chain ended in a row that was current."""
    current = row_id
    while current in doomed:
        invalidated_at, next_id = state[current]
        if next_id is None:
            return None, invalidated_at is None
        current = next_id
    return current, False
