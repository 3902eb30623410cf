"""Rows and records: the column lists the store selects, the structs they become, and small
query functions (rows are loosely typed: a row holds what the schema says its columns hold).

A row becomes a record by the names of its columns, never by their positions: each column list
has its names (:func:`names_of`), and a record's fields are filled by name."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from typing import Any

import apsw

from daemon.errors import NotFound
from daemon.store.records import (
    Assertion,
    Chunk,
    Document,
    ItemClosure,
    KeepState,
    Restatement,
    Session,
    Space,
    Turn,
)

SPACE_COLUMNS = "id, name, activity, memory_enabled, created_at"

SESSION_COLUMNS = (
    "s.id, s.space_id, s.activity, s.title, s.started_at, s.ended_at, s.status, s.practice,"
    " s.participants, (SELECT count(*) FROM turns t WHERE t.session_id = s.id) AS turn_count"
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


DOCUMENT_COLUMNS = (
    "d.id, d.space_id, d.title, d.filename, d.media_type, d.sha256, d.chars, d.added_at,"
    " (SELECT count(*) FROM chunks c WHERE c.document_id = d.id) AS chunk_count"
)

KEEP_STATE_COLUMNS = (
    "id AS session_id, keep_status AS status, keep_reason AS reason, keep_since AS since,"
    " keep_attempts AS attempts"
)
CLOSURE_COLUMNS = "status, evidence_turn_id"


def names_of(columns: str, **renamed: str) -> tuple[str, ...]:
    """The name of each column of a select list, in order: its alias (``... AS name``), else
    its column without the table prefix; ``renamed`` maps a column to its record's field."""
    names, depth, start = [], 0, 0
    for i, char in enumerate(columns + ","):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            column = columns[start:i].strip()
            alias = re.search(r"\sAS\s+(\w+)$", column, flags=re.IGNORECASE)
            name = alias.group(1) if alias else column.rpartition(".")[2]
            names.append(renamed.get(name, name))
            start = i + 1
    return tuple(names)


def by_name(names: tuple[str, ...], r: Sequence[Any]) -> dict[str, Any]:
    """A row's values by column name (a row may carry more columns after these)."""
    return dict(zip(names, r, strict=False))


SPACE_NAMES = names_of(SPACE_COLUMNS)
SESSION_NAMES = names_of(SESSION_COLUMNS)
TURN_NAMES = names_of(TURN_COLUMNS, start_s="start", end_s="end")
CHUNK_NAMES = names_of(CHUNK_COLUMNS)
ASSERTION_NAMES = names_of(ASSERTION_COLUMNS)
RESTATEMENT_NAMES = names_of(RESTATEMENT_COLUMNS, title="session_title")
DOCUMENT_NAMES = names_of(DOCUMENT_COLUMNS)
KEEP_STATE_NAMES = names_of(KEEP_STATE_COLUMNS)
CLOSURE_NAMES = names_of(CLOSURE_COLUMNS)


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


def require_row(conn: apsw.Connection, table: str, row_id: int, what: str, columns: str) -> Any:
    """The ``columns`` of row ``row_id`` of ``table``; NotFound ("no {what} {row_id}") when
    there is none."""
    found = row(conn, f"SELECT {columns} FROM {table} WHERE id = ?", (row_id,))
    if found is None:
        raise NotFound(f"no {what} {row_id}")
    return found


def require(conn: apsw.Connection, table: str, row_id: int, what: str, column: str = "id") -> Any:
    """One column of row ``row_id`` of ``table`` (see :func:`require_row`)."""
    return require_row(conn, table, row_id, what, column)[0]


def space_from(r: Any) -> Space:
    c = by_name(SPACE_NAMES, r)
    return Space(**{**c, "memory_enabled": bool(c["memory_enabled"])})


def session_from(r: Any) -> Session:
    c = by_name(SESSION_NAMES, r)
    return Session(**{**c, "practice": bool(c["practice"]),
                      "participants": tuple(json.loads(c["participants"]))})


def turn_from(r: Any) -> Turn:
    return Turn(**by_name(TURN_NAMES, r))


def chunk_from(r: Any) -> Chunk:
    c = by_name(CHUNK_NAMES, r)
    return Chunk(**{**c, "closed": bool(c["closed"])})


def assertion_from(r: Any) -> Assertion:
    c = by_name(ASSERTION_NAMES, r)
    return Assertion(**{**c, "alternatives": tuple(json.loads(c["alternatives"])),
                        "about_person": bool(c["about_person"])})


def restatement_from(r: Any) -> Restatement:
    return Restatement(**by_name(RESTATEMENT_NAMES, r))


def document_from(r: Any) -> Document:
    return Document(**by_name(DOCUMENT_NAMES, r))


def keep_state_from(r: Any) -> KeepState:
    return KeepState(**by_name(KEEP_STATE_NAMES, r))


def closure_from(r: Any) -> ItemClosure:
    return ItemClosure(**by_name(CLOSURE_NAMES, r))
