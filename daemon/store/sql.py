"""Rows and records: the column lists the store selects, the structs they become, and small
query helpers (rows are loosely typed: a row holds what the schema says its columns hold)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import apsw

from daemon.errors import NotFound
from daemon.store.records import Assertion, Chunk, Restatement, Session, Space, Turn

SPACE_COLUMNS = "id, name, activity, memory_enabled, created_at"

SESSION_COLUMNS = (
    "s.id, s.space_id, s.activity, s.title, s.started_at, s.ended_at, s.status, s.practice,"
    " s.participants, (SELECT count(*) FROM turns t WHERE t.session_id = s.id)"
)

TURN_COLUMNS = "id, session_id, seq, speaker, source, start_s, end_s, text, ref"
# the text of the turn said just before turn ``t`` in its session ('' for the first): the
# sensitive-data gate reads an answer with its question
SAID_BEFORE = (
    "coalesce((SELECT p.text FROM turns p WHERE p.session_id = t.session_id AND p.seq < t.seq"
    " ORDER BY p.seq DESC LIMIT 1), '')"
)

CHUNK_COLUMNS = (
    "c.id, c.kind, c.session_id, c.document_id, c.space_id, c.header, c.body, c.occurred_at,"
    " c.first_turn, c.last_turn, c.closed"
)

ASSERTION_COLUMNS = (
    "a.id, a.kind, a.text, a.chosen, a.alternatives, a.reasoning, a.owner, a.due,"
    " a.about_person, a.review_status, a.space_id, a.source, a.anchor_chunk_id, a.session_id,"
    " a.occurred_at, a.recorded_at, a.invalidated_at, a.superseded_by, a.expires_at"
)

RESTATEMENT_COLUMNS = (
    "r.id, r.assertion_id, r.session_id, s.title, r.anchor_chunk_id, r.occurred_at,"
    " r.recorded_at"
)


def json_ids(ids: Iterable[int]) -> str:
    return json.dumps([int(i) for i in ids])


def rows(conn: apsw.Connection, sql: str, params: Any = ()) -> list[Any]:
    """All rows, loosely typed: a row holds whatever the schema says its columns hold."""
    return conn.execute(sql, params).fetchall()


def row(conn: apsw.Connection, sql: str, params: Any = ()) -> Any:
    return conn.execute(sql, params).fetchone()


def column(conn: apsw.Connection, sql: str, params: Any = ()) -> list[int]:
    return [row[0] for row in conn.execute(sql, params)]


def count_rows(conn: apsw.Connection, table: str) -> int:
    count: int = conn.execute(f"SELECT count(*) FROM {table}").get
    return count


def require(conn: apsw.Connection, table: str, row_id: int, what: str, column: str = "id") -> Any:
    found = row(conn, f"SELECT {column} FROM {table} WHERE id = ?", (row_id,))
    if found is None:
        raise NotFound(f"no {what} {row_id}")
    return found[0]


def space_from(r: Any) -> Space:
    return Space(id=r[0], name=r[1], activity=r[2], memory_enabled=bool(r[3]), created_at=r[4])


def session_from(r: Any) -> Session:
    return Session(
        id=r[0],
        space_id=r[1],
        activity=r[2],
        title=r[3],
        started_at=r[4],
        ended_at=r[5],
        status=r[6],
        practice=bool(r[7]),
        participants=tuple(json.loads(r[8])),
        turn_count=r[9],
    )


def turn_from(r: Any) -> Turn:
    return Turn(*r)


def chunk_from(r: Any) -> Chunk:
    return Chunk(
        id=r[0],
        kind=r[1],
        session_id=r[2],
        document_id=r[3],
        space_id=r[4],
        header=r[5],
        body=r[6],
        occurred_at=r[7],
        first_turn=r[8],
        last_turn=r[9],
        closed=bool(r[10]),
    )


def assertion_from(r: Any) -> Assertion:
    return Assertion(
        id=r[0],
        kind=r[1],
        text=r[2],
        chosen=r[3],
        alternatives=tuple(json.loads(r[4])),
        reasoning=r[5],
        owner=r[6],
        due=r[7],
        about_person=bool(r[8]),
        review_status=r[9],
        space_id=r[10],
        source=r[11],
        anchor_chunk_id=r[12],
        session_id=r[13],
        occurred_at=r[14],
        recorded_at=r[15],
        invalidated_at=r[16],
        superseded_by=r[17],
        expires_at=r[18],
    )


def restatement_from(r: Any) -> Restatement:
    return Restatement(*r)
