"""What every part of the store shares: the database, the indexing and the clock, the one
write path, reads by id, and the checks more than one table family makes."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import apsw
import msgspec

from daemon.errors import InvalidInput, NotFound
from daemon.store import sql, writes
from daemon.store.db import Database
from daemon.store.indexing import Indexing
from daemon.store.keys import DatabaseKey
from daemon.store.records import ACTIVITIES

if TYPE_CHECKING:
    from daemon.llm.embed import Embedder

T = TypeVar("T")
R = TypeVar("R")

UNSET: Any = msgspec.UNSET


class StoreBase:
    """The state every table family works on; :class:`~daemon.store.store.Store` sets it."""

    data_dir: Path
    embedder: Embedder | None
    chunk_limit: int
    key: DatabaseKey | None
    db: Database
    index: Indexing
    _clock: Callable[[], float]

    @property
    def model_id(self) -> str | None:
        """The current embedding model, whose vectors alone are searched."""
        return self.embedder.model_id if self.embedder is not None else None

    def _by_ids(
        self, columns: str, table: str, from_row: Callable[[Any], R], ids: Sequence[int]
    ) -> list[R]:
        """Rows of ``table`` by id, made by ``from_row``, in the order asked; ids that no
        longer exist are left out."""
        rows = self.db.read(
            lambda conn: sql.rows(
                conn,
                f"SELECT {columns} FROM {table} WHERE id IN (SELECT value FROM json_each(?))",
                (sql.json_ids(ids),),
            )
        )
        by_id = {r[0]: from_row(r) for r in rows}
        return [by_id[i] for i in ids if i in by_id]

    def _read_one(
        self, query: str, params: Any, from_row: Callable[[Any], R], missing: NotFound
    ) -> R:
        """The one row ``query`` finds, made by ``from_row``; raises ``missing`` when none."""
        found = self.db.read(lambda conn: sql.row(conn, query, params))
        if found is None:
            raise missing
        return from_row(found)

    def _write(self, fn: Callable[[apsw.Connection, writes.IndexChanges], T]) -> T:
        return self.index.write(fn)


def check_choice(field: str, value: str, choices: Sequence[str]) -> None:
    if value not in choices:
        raise InvalidInput(f"{field}: unknown value {value!r}", fix=f"one of: {', '.join(choices)}")


def check_activity(activity: str) -> None:
    check_choice("activity", activity, ACTIVITIES)


class Where:
    """The conditions of a listing query, joined by AND, with their parameters in order."""

    def __init__(self, first: str) -> None:
        self.clauses = [first]
        self.params: list[Any] = []

    @property
    def sql(self) -> str:
        return " AND ".join(self.clauses)

    def add(self, clause: str, *params: Any) -> None:
        self.clauses.append(clause)
        self.params.extend(params)

    def space(self, column: str, space_id: int | None, no_space: bool) -> None:
        """Only the rows in no Space (``no_space``), or those of ``space_id`` when given."""
        if no_space:
            self.add(f"{column} IS NULL")
        elif space_id is not None:
            self.add(f"{column} = ?", space_id)

    def one_of(self, column: str, values: Iterable[str] | None, field: str,
               choices: Sequence[str]) -> None:
        """Only the rows whose ``column`` is one of ``values`` (each checked against
        ``choices``), when given."""
        if values is None:
            return
        wanted = list(values)
        for value in wanted:
            check_choice(field, value, choices)
        self.add(f"{column} IN (SELECT value FROM json_each(?))", json.dumps(wanted))
