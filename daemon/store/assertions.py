"""The assertion layer: decisions, facts, commitments, preferences, tasks and memories,
bitemporal (a correction supersedes, nothing is overwritten), with their restatements; and the
open items among them (commitments and tasks not yet done or dropped)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

import apsw
import msgspec

from daemon.errors import InvalidInput, NotFound
from daemon.store import sql, writes
from daemon.store.base import UNSET, StoreBase, Where, check_choice
from daemon.store.records import (
    REVIEW_STATUSES,
    Assertion,
    AssertionSource,
    Deleted,
    ItemClosure,
    NewAssertion,
    NewRestatement,
    Restatement,
    ReviewStatus,
)
from daemon.store.scope import Scope, assertion_filter


class Assertions(StoreBase):
    """The assertions of a profile, their history and the open items."""

    def add_assertions(self, new: Sequence[NewAssertion]) -> list[Assertion]:
        """Write assertions (embedded first, then rows, FTS and vectors in one transaction)."""
        for item in new:
            _check_assertion(item)
        if not new:
            return []
        vectors = self.index.embed([writes.assertion_body(item) for item in new])
        now = self._clock()

        def txn(conn: apsw.Connection, changes: writes.IndexChanges) -> list[int]:
            ids = []
            for i, item in enumerate(new):
                ids.append(writes.insert_assertion(conn, item, now))
                if vectors is not None:
                    self.index.put_vector(
                        conn,
                        changes,
                        "assertion",
                        ids[-1],
                        vectors[i],
                        len(writes.assertion_body(item)),
                    )
            return ids

        return self.get_assertions(self._write(txn))

    def add_assertion(self, new: NewAssertion) -> Assertion:
        return self.add_assertions([new])[0]

    def supersede(
        self, old_id: int, new: NewAssertion | int, *, closure: ItemClosure | None = None,
        reopen: bool = False,
    ) -> Assertion:
        """Replace a current assertion: ``new`` (written now, or an existing current id) takes
        its place and the old one gets ``invalidated_at`` (when the new one was said, never
        before the old one was) and ``superseded_by``, all in one transaction. Returns the new
        assertion. With ``closure`` the old one is an open commitment or task and the new one
        is its closed version (see :meth:`close_item`); otherwise the new one stays closed
        where the old one was, unless ``reopen``."""
        vectors = None
        if isinstance(new, NewAssertion):
            _check_assertion(new)
            vectors = self.index.embed([writes.assertion_body(new)])
        now = self._clock()

        def txn(conn: apsw.Connection, changes: writes.IndexChanges) -> int:
            old = sql.require_row(conn, "assertions", old_id, "assertion",
                                  "occurred_at, invalidated_at, superseded_by")
            if old[1] is not None:
                raise InvalidInput(
                    f"assertion {old_id} is no longer current"
                    + (f" (superseded by {old[2]})" if old[2] is not None else ""),
                    fix="supersede the current one instead (see its history)",
                )
            if isinstance(new, NewAssertion):
                new_id = writes.insert_assertion(conn, new, now)
                if vectors is not None:
                    self.index.put_vector(
                        conn,
                        changes,
                        "assertion",
                        new_id,
                        vectors[0],
                        len(writes.assertion_body(new)),
                    )
            else:
                new_id = new
                if new_id == old_id:
                    raise InvalidInput("an assertion cannot supersede itself")
                if (
                    sql.require(conn, "assertions", new_id, "assertion", "invalidated_at")
                    is not None
                ):
                    raise InvalidInput(f"assertion {new_id} is no longer current")
            if not reopen:
                writes.carry_closure(conn, old_id, new_id, closure)
            said = conn.execute("SELECT occurred_at FROM assertions WHERE id = ?", (new_id,)).get
            conn.execute(
                "UPDATE assertions SET invalidated_at = ?, superseded_by = ? WHERE id = ?",
                (max(old[0], said), new_id, old_id),
            )
            return new_id

        return self.get_assertion(self._write(txn))

    def update_assertion(
        self,
        assertion_id: int,
        *,
        text: str = UNSET,
        chosen: str | None = UNSET,
        alternatives: Sequence[str] = UNSET,
        reasoning: str | None = UNSET,
        owner: str | None = UNSET,
        due: str | None = UNSET,
        review_status: ReviewStatus = UNSET,
        space_id: int | None = UNSET,
        expires_at: float | None = UNSET,
    ) -> Assertion:
        """Edit an assertion in place (the review of memories: approve, reject, archive, edit,
        re-scope, expiry). Only the fields given change; an edited text is re-embedded before
        anything is written. For a correction that keeps history use :meth:`supersede`."""
        current = self.get_assertion(assertion_id)
        if review_status is not UNSET:
            check_choice("review_status", review_status, REVIEW_STATUSES)
        changes_text: dict[str, Any] = {
            "text": text,
            "chosen": chosen,
            "alternatives": alternatives,
            "reasoning": reasoning,
            "owner": owner,
            "due": due,
        }
        edited = msgspec.structs.replace(
            current,
            **{
                k: (tuple(v) if k == "alternatives" else v)
                for k, v in changes_text.items()
                if v is not UNSET
            },
        )
        if not edited.text.strip():
            raise InvalidInput("text: an assertion needs some text")
        body = writes.assertion_body(edited)
        reembed = body != writes.assertion_body(current)
        vectors = self.index.embed([body]) if reembed else None
        columns: dict[str, Any] = {
            k: (json.dumps(list(v)) if k == "alternatives" else v)
            for k, v in {
                **changes_text,
                "review_status": review_status,
                "space_id": space_id,
                "expires_at": expires_at,
            }.items()
            if v is not UNSET
        }

        def txn(conn: apsw.Connection, changes: writes.IndexChanges) -> None:
            sql.require(conn, "assertions", assertion_id, "assertion")
            if columns.get("space_id") is not None:
                sql.require(conn, "spaces", columns["space_id"], "Space")
            for column, value in columns.items():
                conn.execute(
                    f"UPDATE assertions SET {column} = ? WHERE id = ?", (value, assertion_id)
                )
            writes.reindex_assertion(conn, assertion_id)
            if reembed:
                writes.drop_vectors(conn, changes, "assertion", [assertion_id])
                if vectors is not None:
                    self.index.put_vector(
                        conn, changes, "assertion", assertion_id, vectors[0], len(body)
                    )

        self._write(txn)
        return self.get_assertion(assertion_id)

    def retract(self, assertion_id: int) -> Assertion:
        """End a current assertion now with no new version (the user says it is wrong): it
        keeps its history, and as-of reads before now still find it."""
        now = self._clock()

        def txn(conn: apsw.Connection, _: writes.IndexChanges) -> None:
            said = sql.require(conn, "assertions", assertion_id, "assertion", "occurred_at")
            if sql.require(conn, "assertions", assertion_id, "assertion",
                           "invalidated_at") is not None:
                raise InvalidInput(f"assertion {assertion_id} is no longer current",
                                   fix="see its history; the current version can be deleted")
            conn.execute("UPDATE assertions SET invalidated_at = ? WHERE id = ?",
                         (max(said, now), assertion_id))

        self._write(txn)
        return self.get_assertion(assertion_id)

    def delete_assertion(self, assertion_id: int) -> Deleted:
        """Delete one assertion (the user's explicit act); its chain is spliced around it."""

        def txn(conn: apsw.Connection, changes: writes.IndexChanges) -> Deleted:
            sql.require(conn, "assertions", assertion_id, "assertion")
            deleted = Deleted()
            writes.delete_assertions(conn, changes, [assertion_id], deleted)
            return deleted

        return self._write(txn)

    def add_restatements(self, session_id: int, items: Sequence[NewRestatement]) -> int:
        """Record that session ``session_id`` said again what existing assertions say (a
        duplicate found when it was kept); returns how many links are new. Each (assertion,
        session) pair is recorded once; nothing links an assertion to its own session, to a
        session of another Space, or to a memory about the person; an assertion deleted
        meanwhile is skipped. The rows go when either the session or the assertion is
        deleted."""
        if not items:
            return 0
        now = self._clock()
        return self._write(
            lambda conn, _: writes.insert_restatements(conn, session_id, items, now)
        )

    def restatements(self, assertion_ids: Sequence[int]) -> list[Restatement]:
        """Where these assertions were said again, earliest first (only sessions still in the
        assertion's Space)."""
        rows = self.db.read(
            lambda conn: sql.rows(
                conn,
                f"SELECT {sql.RESTATEMENT_COLUMNS} FROM restatements r"
                " JOIN sessions s ON s.id = r.session_id"
                " JOIN assertions a ON a.id = r.assertion_id"
                " WHERE r.assertion_id IN (SELECT value FROM json_each(?))"
                " AND s.space_id = a.space_id ORDER BY r.occurred_at, r.id",
                (sql.json_ids(assertion_ids),),
            )
        )
        return [sql.restatement_from(r) for r in rows]

    def get_assertions(self, ids: Sequence[int]) -> list[Assertion]:
        """Assertions by id, in the order asked; ids that no longer exist are left out."""
        return self._by_ids(sql.ASSERTION_COLUMNS, "assertions a", sql.assertion_from, ids)

    def get_assertion(self, assertion_id: int) -> Assertion:
        return self._read_one(f"SELECT {sql.ASSERTION_COLUMNS} FROM assertions a WHERE a.id = ?",
                              (assertion_id,), sql.assertion_from,
                              NotFound(f"no assertion {assertion_id}"))

    def current_assertions(self, scope: Scope, *, kind: str | None = None) -> list[Assertion]:
        """What is believed now within ``scope`` (superseded, unapproved, expired and — without
        consent — personal rows hidden), newest first."""
        return self._assertions_in(msgspec.structs.replace(scope, as_of=None), kind)

    def assertions_as_of(
        self, at: float, scope: Scope, *, kind: str | None = None
    ) -> list[Assertion]:
        """What was believed at time ``at``: said by then and not yet invalidated then."""
        return self._assertions_in(msgspec.structs.replace(scope, as_of=at), kind)

    def chain(self, assertion_id: int) -> list[Assertion]:
        """The history an assertion belongs to: everything that led to the newest version and
        that version, oldest first."""
        self.get_assertion(assertion_id)
        ids = self.db.read(
            lambda conn: sql.column(
                conn,
                """
                WITH RECURSIVE
                    forward (id, depth) AS (
                        SELECT :id, 0
                        UNION ALL
                        SELECT a.superseded_by, f.depth + 1 FROM assertions a
                        JOIN forward f ON a.id = f.id
                        WHERE a.superseded_by IS NOT NULL AND f.depth < 100000),
                    head (id) AS (SELECT id FROM forward ORDER BY depth DESC LIMIT 1),
                    back (id) AS (
                        SELECT id FROM head
                        UNION
                        SELECT a.id FROM assertions a JOIN back b ON a.superseded_by = b.id)
                SELECT a.id FROM assertions a WHERE a.id IN (SELECT id FROM back)
                ORDER BY a.occurred_at, a.id
                """,
                {"id": assertion_id},
            )
        )
        return self.get_assertions(ids)

    def list_assertions(
        self,
        *,
        space_id: int | None = None,
        profile_wide: bool = False,
        about_person: bool | None = None,
        statuses: Iterable[ReviewStatus] | None = None,
        session_id: int | None = None,
        include_invalidated: bool = False,
    ) -> list[Assertion]:
        """Assertions for listing and review (no recall rules): all, those of ``space_id``, or
        (``profile_wide``) those of no Space; optionally filtered. Newest first."""
        where = Where("1")
        where.space("a.space_id", space_id, profile_wide)
        if about_person is not None:
            where.add("a.about_person = ?", int(about_person))
        where.one_of("a.review_status", statuses, "review_status", REVIEW_STATUSES)
        if session_id is not None:
            where.add("a.session_id = ?", session_id)
        if not include_invalidated:
            where.add("a.invalidated_at IS NULL")
        rows = self.db.read(
            lambda conn: sql.rows(
                conn,
                f"SELECT {sql.ASSERTION_COLUMNS} FROM assertions a WHERE {where.sql}"
                " ORDER BY a.occurred_at DESC, a.id DESC",
                where.params,
            )
        )
        return [sql.assertion_from(r) for r in rows]

    def assertions_for_chunks(self, chunk_ids: Sequence[int], scope: Scope) -> list[Assertion]:
        """The in-scope assertions anchored on these chunks (a chunk hit's cross-links)."""
        where, params = assertion_filter(scope, now=self._clock(), model_id=self.model_id)
        rows = self.db.read(
            lambda conn: sql.rows(
                conn,
                f"SELECT {sql.ASSERTION_COLUMNS} FROM assertions a WHERE {where}"
                " AND a.anchor_chunk_id IN (SELECT value FROM json_each(:chunk_ids))"
                " ORDER BY a.occurred_at, a.id",
                {**params, "chunk_ids": sql.json_ids(chunk_ids)},
            )
        )
        return [sql.assertion_from(r) for r in rows]

    def _assertions_in(self, scope: Scope, kind: str | None) -> list[Assertion]:
        where, params = assertion_filter(scope, now=self._clock(), model_id=self.model_id)
        if kind is not None:
            where += " AND a.kind = :kind"
            params["kind"] = kind
        rows = self.db.read(
            lambda conn: sql.rows(
                conn,
                f"SELECT {sql.ASSERTION_COLUMNS} FROM assertions a WHERE {where}"
                " ORDER BY a.occurred_at DESC, a.id DESC",
                params,
            )
        )
        return [sql.assertion_from(r) for r in rows]

    def open_items(self, scope: Scope | None = None) -> list[Assertion]:
        """The commitments and tasks still open, oldest first: those ``scope`` may see (as of
        its ``as_of``: what was open then), or with None the current ones of every Space."""
        params: dict[str, Any] = {}
        if scope is None:
            where = "a.invalidated_at IS NULL AND a.review_status = 'approved'"
        else:
            where, params = assertion_filter(scope, now=self._clock(), model_id=self.model_id)
        rows = self.db.read(
            lambda conn: sql.rows(
                conn,
                f"SELECT {sql.ASSERTION_COLUMNS} FROM assertions a WHERE {where}"
                f" AND a.kind IN {writes.ITEM_KINDS_SQL} AND NOT EXISTS"
                " (SELECT 1 FROM item_closures c WHERE c.assertion_id = a.id)"
                " ORDER BY a.occurred_at, a.id",
                params,
            )
        )
        return [sql.assertion_from(r) for r in rows]

    def item_closures(self, ids: Sequence[int]) -> dict[int, ItemClosure]:
        """The closure of each of these assertions that is the closed version of an item."""
        rows = self.db.read(
            lambda conn: sql.rows(
                conn,
                f"SELECT assertion_id, {sql.CLOSURE_COLUMNS} FROM item_closures"
                " WHERE assertion_id IN (SELECT value FROM json_each(?))",
                (sql.json_ids(ids),),
            )
        )
        return {r[0]: sql.closure_from(r[1:]) for r in rows}

    def close_item(
        self,
        item_id: int,
        closure: ItemClosure,
        *,
        source: AssertionSource = "user",
        session_id: int | None = None,
        anchor_chunk_id: int | None = None,
        occurred_at: float | None = None,
        text: str | None = None,
    ) -> Assertion:
        """Close an open commitment or task (done, or dropped): a new version — its text,
        owner and due date unless ``text`` says otherwise, said at ``occurred_at`` (default
        now) — supersedes it with the closure recorded; the open version stays in the
        history. Returns the closed version."""
        item = self.get_assertion(item_id)
        closed = NewAssertion(
            kind=item.kind, text=text or item.text, source=source, space_id=item.space_id,
            session_id=session_id, anchor_chunk_id=anchor_chunk_id, occurred_at=occurred_at,
            owner=item.owner, due=item.due,
        )
        return self.supersede(item_id, closed, closure=closure)


def _check_assertion(a: NewAssertion) -> None:
    if not a.text.strip():
        raise InvalidInput("text: an assertion needs some text")
    if a.source == "extracted" and a.anchor_chunk_id is None:
        raise InvalidInput(
            "anchor_chunk_id: an extracted assertion must name the chunk it came from"
        )
