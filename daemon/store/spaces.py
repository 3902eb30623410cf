"""Spaces: named groups of sessions and documents, each with its activity and whether memory
is on in it."""

from __future__ import annotations

import apsw

from daemon.errors import InvalidInput, NotFound
from daemon.store import sql, writes
from daemon.store.base import StoreBase, check_activity
from daemon.store.records import (
    Deleted,
    Space,
)


class Spaces(StoreBase):
    """The Spaces of a profile."""

    def create_space(
        self, name: str, *, activity: str = "meeting", memory_enabled: bool = True
    ) -> Space:
        """A new Space. Names are unique, ignoring case."""
        name = _space_name(name)
        check_activity(activity)

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
        return self._read_one(f"SELECT {sql.SPACE_COLUMNS} FROM spaces WHERE {column} = ?", (ref,),
                              sql.space_from,
                              NotFound(f"no Space {ref!r}", fix="see `braincue spaces list`"))

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
            check_activity(activity)

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


def _space_name(name: str) -> str:
    name = " ".join(name.split())
    if not name:
        raise InvalidInput("name: a Space needs a name")
    return name
