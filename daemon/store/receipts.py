"""Capture receipts in the database: what a session heard of each source, and every gap.

A receipt is written while its session is live (each time a gap is found, so a crash keeps what
was known) and once more when it ends. Its rows hold no words, only times and causes; they are
deleted with their session (a trigger of the migration that made the tables).
"""

from __future__ import annotations

from collections.abc import Sequence

import apsw
import msgspec

from daemon.errors import InvalidInput
from daemon.store import sql, writes
from daemon.store.store import Store

SOURCES = ("mic", "loopback")
# why audio is missing from a receipt: capture stopped (all but the last two: "audio stopped"
# when no cause is known, "paused" when the user paused listening), speech was heard but not
# transcribed, or the mic stayed silent while the other side talked
GAP_CAUSES = ("device lost", "device changed", "audio server gone", "suspend", "blocks dropped",
              "capture starting", "audio stopped", "paused", "not transcribed", "mic silent")
# the causes during which nothing of the source was captured (the others were captured)
NOT_CAPTURED = frozenset(GAP_CAUSES) - {"not transcribed", "mic silent"}


class CaptureGap(msgspec.Struct, frozen=True):
    """A stretch of one source that the session misses (or, ``mic silent``, may miss):
    ``start``/``end`` are seconds from the session's start."""

    source: str  # mic | loopback
    cause: str  # one of GAP_CAUSES
    start: float
    end: float
    detail: str = ""  # the device, the audio server's words, how many utterances


class Receipt(msgspec.Struct, frozen=True):
    """What a session heard: of ``length_s`` seconds, ``heard_s`` per source, and its gaps in
    order of start."""

    length_s: float
    heard_s: dict[str, float]
    gaps: tuple[CaptureGap, ...] = ()


def save_receipt(store: Store, session_id: int, receipt: Receipt) -> None:
    """Replace the receipt of ``session_id`` with ``receipt``."""
    for gap in receipt.gaps:
        if gap.source not in SOURCES or gap.cause not in GAP_CAUSES:
            raise InvalidInput(f"not a capture gap: {gap.source} {gap.cause}")

    def txn(conn: apsw.Connection, _: writes.IndexChanges) -> None:
        sql.require(conn, "sessions", session_id, "session")
        conn.execute("DELETE FROM capture_receipts WHERE session_id = ?", (session_id,))
        conn.execute("DELETE FROM capture_gaps WHERE session_id = ?", (session_id,))
        for source in SOURCES:
            conn.execute(
                "INSERT INTO capture_receipts (session_id, source, heard_s, length_s)"
                " VALUES (?, ?, ?, ?)",
                (session_id, source, receipt.heard_s.get(source, 0.0), receipt.length_s),
            )
        for gap in receipt.gaps:
            conn.execute(
                "INSERT INTO capture_gaps (session_id, source, cause, start_s, end_s, detail)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (session_id, gap.source, gap.cause, gap.start, gap.end, gap.detail),
            )

    store._write(txn)


def receipts(store: Store, session_ids: Sequence[int]) -> dict[int, Receipt]:
    """The receipts of those sessions that have one (sessions imported from files, or
    recorded before receipts existed, have none)."""
    ids = sql.json_ids(session_ids)

    def read(conn: apsw.Connection) -> tuple[list[tuple[int, str, float, float]],
                                              list[tuple[int, str, str, float, float, str]]]:
        heard = sql.rows(conn, "SELECT session_id, source, heard_s, length_s FROM"
                         " capture_receipts WHERE session_id IN (SELECT value FROM json_each(?))",
                         (ids,))
        gaps = sql.rows(conn, "SELECT session_id, source, cause, start_s, end_s, detail FROM"
                        " capture_gaps WHERE session_id IN (SELECT value FROM json_each(?))"
                        " ORDER BY start_s, id", (ids,))
        return heard, gaps

    heard_rows, gap_rows = store.db.read(read)
    heard: dict[int, dict[str, float]] = {}
    length: dict[int, float] = {}
    for session_id, source, heard_s, length_s in heard_rows:
        heard.setdefault(session_id, {})[source] = heard_s
        length[session_id] = length_s
    gaps: dict[int, list[CaptureGap]] = {}
    for session_id, source, cause, start, end, detail in gap_rows:
        gaps.setdefault(session_id, []).append(CaptureGap(source, cause, start, end, detail))
    return {sid: Receipt(length[sid], heard[sid], tuple(gaps.get(sid, ()))) for sid in heard}


def receipt(store: Store, session_id: int) -> Receipt | None:
    return receipts(store, [session_id]).get(session_id)
