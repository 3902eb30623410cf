"""Rows become records by column name: every column list names exactly its record's fields."""

from __future__ import annotations

import msgspec
import pytest

from daemon.store import records, sql


def test_a_column_is_named_by_its_alias_else_without_its_table() -> None:
    columns = "s.id, title, (SELECT count(*) FROM t WHERE t.a IN (1, 2)) AS n, s.end_s"
    assert sql.names_of(columns) == ("id", "title", "n", "end_s")
    assert sql.names_of(columns, end_s="end") == ("id", "title", "n", "end")


@pytest.mark.parametrize(("names", "record"), [
    (sql.SPACE_NAMES, records.Space),
    (sql.SESSION_NAMES, records.Session),
    (sql.TURN_NAMES, records.Turn),
    (sql.CHUNK_NAMES, records.Chunk),
    (sql.ASSERTION_NAMES, records.Assertion),
    (sql.RESTATEMENT_NAMES, records.Restatement),
    (sql.DOCUMENT_NAMES, records.Document),
    (sql.KEEP_STATE_NAMES, records.KeepState),
    (sql.CLOSURE_NAMES, records.ItemClosure),
])
def test_every_column_list_names_its_records_fields(
    names: tuple[str, ...], record: type[msgspec.Struct]
) -> None:
    assert sorted(names) == sorted(f.name for f in msgspec.structs.fields(record))


def test_a_row_is_read_by_name_whatever_the_order_of_its_columns() -> None:
    names = sql.names_of("ref, text, end_s, start_s, source, speaker, seq, session_id, id",
                         start_s="start", end_s="end")
    row = (None, "hello", 2.0, 1.0, "mic", "me", 3, 7, 11)
    turn = records.Turn(**sql.by_name(names, row))
    assert turn == records.Turn(id=11, session_id=7, seq=3, speaker="me", source="mic",
                                start=1.0, end=2.0, text="hello", ref=None)
