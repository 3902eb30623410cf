"""Re-masking what was stored before the sensitive-data gate learnt to find more.

Turns keep the words as said; what leaves the store is masked when written (chunk bodies, the
archive, assertions). When the detectors improve, text written before is masked again here
(a migration, :mod:`daemon.store.schema`): every transcript chunk's lines with the turn said
before the chunk, every archive chunk and extracted assertion with the secrets found in its
session's turns, and the full-text indexes with them. Masking only ever replaces a secret with
a marker, so running it over masked text changes nothing else; and as every pass masks with
today's gate, one pass serves every step of an upgrade that asks for one.
"""

from __future__ import annotations

import json
from functools import cache

import apsw

from daemon.sensitive.gate import Gate, mask_lines
from daemon.store import sql


def remask(conn: apsw.Connection) -> None:
    if sql.row(conn, "SELECT 1 FROM temp.sqlite_master WHERE name = 'remasked'") is not None:
        return

    @cache
    def session_gate(session_id: int) -> Gate:
        return Gate.of(r[0] for r in sql.rows(
            conn, "SELECT text FROM turns WHERE session_id = ? ORDER BY seq", (session_id,)))

    for chunk_id, kind, session_id, header, body, first in sql.rows(
        conn,
        "SELECT c.id, c.kind, c.session_id, c.header, c.body, c.first_turn FROM chunks c"
        " WHERE c.kind IN ('transcript', 'session')",
    ):
        if kind == "transcript":
            before = sql.row(conn, f"SELECT {sql.SAID_BEFORE} FROM turns t WHERE t.id = ?",
                             (first,))
            masked = "\n".join(mask_lines(body.split("\n"), before[0] if before else ""))
        else:
            masked = session_gate(session_id).redact(body).text
        if masked != body:
            _rewrite_chunk(conn, chunk_id, header, body, masked)
    for assertion_id, session_id, text, chosen, alternatives, reasoning in sql.rows(
        conn,
        "SELECT id, session_id, text, chosen, alternatives, reasoning FROM assertions"
        " WHERE session_id IS NOT NULL",
    ):
        gate = session_gate(session_id)
        if not gate.secrets:
            continue
        _rewrite_assertion(conn, assertion_id, gate, text, chosen, alternatives, reasoning)
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS remasked (done INTEGER)")


def _rewrite_chunk(conn: apsw.Connection, chunk_id: int, header: str, old: str, new: str) -> None:
    # external-content FTS: the old text is removed with exactly the values it indexed
    conn.execute("INSERT INTO chunks_fts (chunks_fts, rowid, header, body)"
                 " VALUES ('delete', ?, ?, ?)", (chunk_id, header, old))
    conn.execute("UPDATE chunks SET body = ? WHERE id = ?", (new, chunk_id))
    conn.execute("INSERT INTO chunks_fts (rowid, header, body) VALUES (?, ?, ?)",
                 (chunk_id, header, new))


def _rewrite_assertion(conn: apsw.Connection, assertion_id: int, gate: Gate, text: str,
                       chosen: str | None, alternatives: str, reasoning: str | None) -> None:
    def masked(value: str | None) -> str | None:
        return None if value is None else gate.redact(value).text

    others = json.dumps([masked(a) for a in json.loads(alternatives)])
    conn.execute(
        "UPDATE assertions SET text = ?, chosen = ?, alternatives = ?, reasoning = ?"
        " WHERE id = ?",
        (masked(text), masked(chosen), others, masked(reasoning), assertion_id),
    )
    for header, body in sql.rows(
        conn, "SELECT header, body FROM assertions_fts WHERE rowid = ?", (assertion_id,)
    ):
        conn.execute("UPDATE assertions_fts SET header = ?, body = ? WHERE rowid = ?",
                     (masked(header), masked(body), assertion_id))
