"""The database layer: migrations, the single writer thread, reads on other threads."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path

import apsw
import pytest
import trio

from daemon.errors import StoreError
from daemon.store import db as db_module
from daemon.store.db import CorruptDatabase, Database, MigrationFailed, migrate


def m001_numbers(conn: apsw.Connection) -> None:
    conn.execute("CREATE TABLE numbers (n INTEGER NOT NULL CHECK (n >= 0))")


def m002_words(conn: apsw.Connection) -> None:
    conn.execute("CREATE TABLE words (w TEXT NOT NULL)")


def m003_broken(conn: apsw.Connection) -> None:
    conn.execute("CREATE TABLE half_done (x)")
    conn.execute("THIS IS NOT SQL")


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = Database(tmp_path / "t.db", [m001_numbers, m002_words])
    yield database
    database.close()


def insert(n: int) -> Callable[[apsw.Connection], object]:
    return lambda conn: conn.execute("INSERT INTO numbers VALUES (?)", (n,))


def count(conn: apsw.Connection) -> int:
    return int(conn.execute("SELECT count(*) FROM numbers").get)


def test_migrations_are_recorded_and_applied_once(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    Database(path, [m001_numbers]).close()
    with Database(path, [m001_numbers, m002_words]) as db:
        names = db.read(lambda c: [r[0] for r in c.execute("SELECT name FROM migrations")])
        assert names == ["m001_numbers", "m002_words"]
        db.write(lambda c: c.execute("INSERT INTO words VALUES ('hello')"))


def test_a_failing_migration_leaves_nothing_behind(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    Database(path, [m001_numbers]).close()
    with pytest.raises(MigrationFailed, match=r"failed at m003_broken .* database is unchanged"):
        Database(path, [m001_numbers, m002_words, m003_broken])
    conn = apsw.Connection(str(path))
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    applied = [r[0] for r in conn.execute("SELECT name FROM migrations")]
    conn.close()
    # the upgrade is whole or nothing: the step before the broken one is undone too
    assert "half_done" not in tables and "words" not in tables
    assert applied == ["m001_numbers"]


def test_a_database_from_a_newer_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    Database(path, [m001_numbers, m002_words]).close()
    with pytest.raises(StoreError, match="newer BrainCue"):
        Database(path, [m001_numbers])


def test_migrate_reports_what_it_applied(tmp_path: Path) -> None:
    conn = apsw.Connection(str(tmp_path / "x.db"))
    assert migrate(conn, [m001_numbers]) == ["m001_numbers"]
    assert migrate(conn, [m001_numbers, m002_words]) == ["m002_words"]
    assert migrate(conn, [m001_numbers, m002_words]) == []
    conn.close()


def test_wal_and_foreign_keys_are_on(db: Database) -> None:
    assert db.read(lambda c: c.pragma("journal_mode")) == "wal"
    assert db.write(lambda c: c.pragma("foreign_keys")) == 1


def test_a_failed_write_rolls_back_as_a_whole_and_skips_on_commit(db: Database) -> None:
    committed: list[object] = []

    def two_inserts(conn: apsw.Connection) -> None:
        conn.execute("INSERT INTO numbers VALUES (1)")
        conn.execute("INSERT INTO numbers VALUES (-1)")  # violates the CHECK

    with pytest.raises(StoreError, match="CHECK constraint"):
        db.write(two_inserts, on_commit=committed.append)
    assert db.read(count) == 0
    assert committed == []
    assert db.write(lambda c: count(c) + 1, on_commit=committed.append) == 1
    assert committed == [1]


def test_writes_run_on_one_thread_and_reads_see_commits(db: Database) -> None:
    writer_threads: set[int] = set()

    def write_from(n: int) -> None:
        def fn(conn: apsw.Connection) -> None:
            writer_threads.add(threading.get_ident())
            conn.execute("INSERT INTO numbers VALUES (?)", (n,))

        db.write(fn)

    threads = [threading.Thread(target=write_from, args=(n,)) for n in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(writer_threads) == 1
    assert threading.get_ident() not in writer_threads
    seen: list[int] = []
    reader = threading.Thread(target=lambda: seen.append(db.read(count)))
    reader.start()
    reader.join()
    assert seen == [20] and db.read(count) == 20


def test_a_reading_thread_that_ends_leaves_no_connection_open(db: Database) -> None:
    """Worker threads come and go (trio's idle out after 10 s): an always-on daemon reading
    every few seconds from a new one must not pile up connections and file descriptors."""

    def open_files() -> int:
        return len(os.listdir(f"/proc/{os.getpid()}/fd"))

    def read_on_a_new_thread() -> None:
        reader = threading.Thread(target=lambda: db.read(count))
        reader.start()
        reader.join()

    read_on_a_new_thread()  # anything opened once per database is open now
    before = open_files()
    for _ in range(30):
        read_on_a_new_thread()
    assert open_files() - before < 5  # each connection held two (file and WAL)
    seen: list[int] = []
    keeper = threading.Thread(target=lambda: seen.extend([db.read(count), db.read(count)]))
    keeper.start()
    keeper.join()
    assert seen == [0, 0]


def test_read_connections_cannot_write(db: Database) -> None:
    with pytest.raises(StoreError, match="readonly"):
        db.read(lambda c: c.execute("INSERT INTO numbers VALUES (5)"))


def test_nested_write_or_read_inside_a_write_is_refused(db: Database) -> None:
    with pytest.raises(StoreError, match="inside a write"):
        db.write(lambda c: db.write(lambda c2: None))
    with pytest.raises(StoreError, match="inside a write"):
        db.write(lambda c: db.read(count))


async def test_concurrent_writes_from_threads_all_commit(db: Database) -> None:
    async with trio.open_nursery() as nursery:
        for n in range(10):
            nursery.start_soon(partial(trio.to_thread.run_sync, db.write, insert(n)))
    assert db.read(count) == 10


def test_close_waits_for_the_running_write_and_then_refuses(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    db = Database(path, [m001_numbers])
    started = threading.Event()
    release = threading.Event()

    def slow(conn: apsw.Connection) -> None:
        started.set()
        release.wait()
        conn.execute("INSERT INTO numbers VALUES (1)")

    writer = threading.Thread(target=db.write, args=(slow,))
    writer.start()
    started.wait()
    closer = threading.Thread(target=db.close)
    closer.start()
    closer.join(0.05)
    assert closer.is_alive()  # still waiting for the write
    release.set()
    writer.join()
    closer.join()
    with pytest.raises(StoreError, match="closed"):
        db.write(insert(3))
    with Database(path, [m001_numbers]) as again:
        assert again.read(count) == 1


# -- the check at open -------------------------------------------------------------------------


def test_quick_check_runs_only_when_the_file_is_not_as_it_was_closed_cleanly(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "t.db"
    migrations = [m001_numbers]
    first = Database(path, migrations)
    first.write(lambda conn: conn.executemany(
        "INSERT INTO numbers VALUES (?)", [(n,) for n in range(5000)]))
    assert first.checked  # a new file: nothing is known of it
    first.close()

    again = Database(path, migrations)
    assert not again.checked  # closed cleanly and unchanged: not read again
    beside = Database(path, migrations)  # as after a crash of the first: no clean close yet
    assert beside.checked
    beside.close()
    again.close()

    monkeypatch.setattr(db_module, "CHECK_EVERY", 0.0)  # the last check is too old
    old = Database(path, migrations)
    assert old.checked
    old.close()
    monkeypatch.undo()

    with path.open("r+b") as f:  # damaged by something else: the file changed since
        f.seek(path.stat().st_size // 2 // 4096 * 4096)
        f.write(b"\xff" * 4096)
    with pytest.raises(CorruptDatabase, match="quick_check"):
        Database(path, migrations)
    with pytest.raises(CorruptDatabase, match="quick_check"):  # and again: nothing recorded
        Database(path, migrations)
