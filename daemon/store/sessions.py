"""Sessions, from creation to end, their filing into Spaces, their deletion, and where the keep
of each stands."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import apsw

from daemon.errors import InvalidInput, NotFound
from daemon.store import sql, writes
from daemon.store.base import StoreBase, Where, check_activity, check_choice
from daemon.store.records import (
    KEEP_STATUSES,
    SESSION_STATUSES,
    Deleted,
    KeepState,
    KeepStatus,
    Session,
    SessionStatus,
)

if TYPE_CHECKING:
    from daemon.llm.embed import EmbedProgress


class Sessions(StoreBase):
    """The sessions of a profile and their keep state."""

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
            check_activity(activity)

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
        return self._read_one(
            f"SELECT {sql.SESSION_COLUMNS} FROM sessions s WHERE s.id = ?", (session_id,),
            sql.session_from, NotFound(f"no session {session_id}", fix="see `braincue sessions`"))

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
        where = Where("1")
        where.space("s.space_id", space_id, unfiled)
        where.one_of("s.status", statuses, "status", SESSION_STATUSES)
        query = (
            f"SELECT {sql.SESSION_COLUMNS} FROM sessions s WHERE {where.sql}"
            " ORDER BY s.started_at DESC, s.id DESC"
        )
        params = where.params
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
            check_activity(activity)
        if status is not None:
            check_choice("status", status, SESSION_STATUSES)
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
        check_choice("status", status, SESSION_STATUSES)
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

    def set_keep_state(
        self, session_id: int, status: KeepStatus | None, reason: str | None = None
    ) -> KeepState | None:
        """Record where the keep of ``session_id`` stands, since now (None: no keep needs the
        model, e.g. a session in no Space). Running counts an attempt; pending keeps the count;
        done, failed and None start it again."""
        if status is not None:
            check_choice("keep status", status, KEEP_STATUSES)
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
        where = Where("keep_status IS NOT NULL")
        if session_ids is not None:
            where.add("id IN (SELECT value FROM json_each(?))", json.dumps(list(session_ids)))
        where.one_of("keep_status", statuses, "keep status", KEEP_STATUSES)
        rows = self.db.read(lambda conn: sql.rows(
            conn,
            f"SELECT {sql.KEEP_STATE_COLUMNS} FROM sessions"
            f" WHERE {where.sql} ORDER BY keep_since, id",
            where.params,
        ))
        return [sql.keep_state_from(r) for r in rows]
