"""Upgrades: profiles written by earlier releases open, migrate and keep every row.

``tests/data/upgrade/`` holds profiles (database and settings) written by the code of earlier
schema versions from ``contents.json`` (see ``write_profile.py`` there): the first released
schema (m001-m004, before encryption existed) and the one before the current schema, plain and
encrypted (its key is ``key.hex``). Each is opened by today's store with the real embedding
model, as the daemon opens a profile.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import apsw
import pytest

from daemon.config import Paths, load_settings
from daemon.llm.embed import LlamaEmbedder
from daemon.store import backup
from daemon.store.db import MigrationFailed, connect
from daemon.store.keys import DatabaseKey
from daemon.store.schema import MIGRATIONS
from daemon.store.scope import Scope
from daemon.store.search import search
from daemon.store.store import DB_FILE, Store
from daemon.store.voices import list_voices

UPGRADE = Path(__file__).parent / "data" / "upgrade"
MIGRATOR = Path(__file__).with_name("upgrade_crash_migrator.py")
ROOT = Path(__file__).resolve().parents[1]
CONTENTS: dict[str, Any] = json.loads((UPGRADE / "contents.json").read_text(encoding="utf-8"))
FIXTURES = ["schema-m004", "schema-m008", "schema-m008-encrypted"]


class Profile:
    """A fixture copied into this test's profile, with what its release wrote."""

    def __init__(self, name: str) -> None:
        source = UPGRADE / name
        self.written: dict[str, Any] = json.loads((source / "written.json").read_text())
        key_file = source / "key.hex"
        self.key = (DatabaseKey(key_file.read_text().strip(), "the fixture's key file")
                    if key_file.exists() else None)
        self.paths = Paths.resolve("default")
        self.paths.ensure()
        shutil.copyfile(source / DB_FILE, self.paths.data_dir / DB_FILE)
        shutil.copyfile(source / "config.toml", self.paths.config_file)

    @property
    def db(self) -> Path:
        return self.paths.data_dir / DB_FILE

    def applied(self, path: Path) -> list[str]:
        conn = connect(path, self.key, flags=apsw.SQLITE_OPEN_READONLY)
        try:
            return sorted(r[0] for r in conn.execute("SELECT name FROM migrations"))
        finally:
            conn.close()

    def holds(self, what: str) -> bool:
        return what not in self.written["left_out"]


@pytest.fixture(scope="module")
def minilm(installed_model: Callable[[str], Path]) -> Iterator[LlamaEmbedder]:
    embedder = LlamaEmbedder(installed_model("all-minilm-l6-v2"), threads=1, batch=8)
    yield embedder
    embedder.close()


@pytest.mark.parametrize("name", FIXTURES)
def test_an_earlier_profile_opens_migrates_and_keeps_every_row(
        name: str, minilm: LlamaEmbedder) -> None:
    profile = Profile(name)
    assert profile.written["encrypted"] == (profile.key is not None)
    assert profile.applied(profile.db) == profile.written["migrations"]
    store = Store(profile.paths.data_dir, minilm, key=profile.key)
    try:
        assert profile.applied(profile.db) == sorted(m.__name__ for m in MIGRATIONS)
        # the backup taken first is the database as the earlier release left it
        before = backup.latest_backup(profile.paths.data_dir)
        assert before is not None and before.reason == "before-migration"
        assert profile.applied(before.path) == profile.written["migrations"]
        check_rows(store, profile)
        check_search(store)
        # and the upgraded profile goes on recording
        session = store.create_session(title="after the upgrade")
        (turn,) = store.append_turns(session.id, [new_turn("the upgrade kept everything")])
        assert store.turns(session.id) == [turn]
    finally:
        store.close()
    settings = load_settings(profile.paths)
    for key, value in profile.written["settings"].items():
        assert getattr(settings, key) == value


def new_turn(text: str) -> Any:
    from daemon.store.records import NewTurn

    return NewTurn(speaker="me", text=text, start=1.0, end=2.0, source="mic")


def check_rows(store: Store, profile: Profile) -> None:
    spaces = {s.name: s for s in store.list_spaces()}
    assert [(n, s.activity, s.memory_enabled) for n, s in sorted(spaces.items())] == sorted(
        (s["name"], s["activity"], s["memory_enabled"]) for s in CONTENTS["spaces"])
    space_names: dict[int | None, str] = {s.id: n for n, s in spaces.items()}
    sessions = {s.title: s for s in store.list_sessions()}
    assert sorted(sessions) == sorted(s["title"] for s in CONTENTS["sessions"])
    for expected in CONTENTS["sessions"]:
        session = sessions[expected["title"]]
        assert space_names.get(session.space_id) == expected["space"]
        assert (session.started_at, session.ended_at, session.status, session.practice,
                list(session.participants)) == (
            expected["started_at"], expected["ended_at"], expected["status"],
            expected["practice"], expected["participants"])
        turns = store.turns(session.id)
        assert [(t.speaker, t.source, t.start, t.end, t.text) for t in turns] == [
            (t["speaker"], t["source"], t["start"], t["end"], t["text"])
            for t in expected["turns"]]
        archive = " ".join(c.body for c in store.archive(session.id))
        assert archive == (expected["archive"] or "")
        keep = store.keep_state(session.id)
        if profile.holds("keep state") and expected["keep"]:
            assert keep is not None and keep.status == expected["keep"]
            assert keep.reason == expected.get("keep_reason")
        else:
            assert keep is None

    atlas = Scope(space_id=spaces["Atlas"].id)
    current = {a.text: a for a in store.current_assertions(atlas)}
    decision, commitment, fact, preference = CONTENTS["assertions"]
    new_fact = CONTENTS["supersede"]["new"]
    assert sorted(current) == sorted(
        [decision["text"], commitment["text"], preference["text"], new_fact])
    chosen = current[decision["text"]]
    assert (chosen.kind, chosen.chosen, list(chosen.alternatives), chosen.reasoning) == (
        "decision", decision["chosen"], decision["alternatives"], decision["reasoning"])
    assert chosen.session_id == sessions["Atlas sync"].id
    anchor = store.turns_of_chunk(chosen.anchor_chunk_id or 0)
    assert decision_turn_text(decision) in [t.text for t in anchor]
    promise = current[commitment["text"]]
    assert (promise.owner, promise.due) == (commitment["owner"], commitment["due"])
    assert [a.text for a in store.chain(current[new_fact].id)] == [fact["text"], new_fact]
    assert current[preference["text"]].source == "user"
    closures = store.item_closures([promise.id])
    if profile.holds("open item closures"):
        assert closures[promise.id].status == "done"
        assert store.open_items(atlas) == []
    else:
        assert closures == {} and [a.text for a in store.open_items(atlas)] == [promise.text]
    restated = store.restatements([current[preference["text"]].id])
    if profile.holds("restatements"):
        assert [r.session_id for r in restated] == [sessions["Atlas sync"].id]
    else:
        assert restated == []
    documents = store.list_documents()
    if profile.holds("documents"):
        assert [d.filename for d in documents] == [CONTENTS["document"]["filename"]]
    else:
        assert documents == []
    assert list_voices(store) == []  # voices came with the current schema


def decision_turn_text(decision: dict[str, Any]) -> str:
    session = next(s for s in CONTENTS["sessions"] if s["title"] == decision["session"])
    return str(session["turns"][decision["turn"]]["text"])


def check_search(store: Store) -> None:
    spaces = {s.name: s.id for s in store.list_spaces()}
    atlas = Scope(space_id=spaces["Atlas"])
    everywhere = Scope(space_id=None)
    rollback, rehearsal = CONTENTS["searches"]["fts_chunks"]
    assert store.fts_chunks(rollback, atlas)
    assert store.fts_chunks(rehearsal, everywhere)
    (thursday,) = CONTENTS["searches"]["fts_assertions"]
    assert store.fts_assertions(thursday, atlas)
    # the vectors the earlier release stored are searched (the index is rebuilt from them)
    hits = store.vector_chunks(CONTENTS["searches"]["vector_chunks"], atlas, limit=3)
    sessions = {c.session_id for c in store.get_chunks([h.id for h in hits])}
    atlas_sync = next(s.id for s in store.list_sessions() if s.title == "Atlas sync")
    assert atlas_sync in sessions
    found = search(store, "When does read traffic switch to Postgres 15?", scope=atlas, k=3)
    assert any("Thursday" in r.text for r in found)


# -- upgrades that do not finish -------------------------------------------------------------------


def everything(path: Path, key: DatabaseKey | None) -> dict[str, list[tuple[Any, ...]]]:
    """Every table's rows (the full-text indexes' own tables included) and the schema; not the
    query planner's statistics (``sqlite_stat*``), which opening a connection may refresh."""
    conn = connect(path, key, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        tables = [n for (n,) in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_stat%'"
            " ORDER BY name")]
        found = {t: sorted((tuple(r) for r in conn.execute(f'SELECT * FROM "{t}"')), key=repr)
                 for t in tables}
        found["(schema)"] = sorted(tuple(r) for r in conn.execute(
            "SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL"
            " AND name NOT LIKE 'sqlite_stat%'"))
        return found
    finally:
        conn.close()


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_failed_upgrade_leaves_the_database_and_its_backup_and_names_the_backup(
        monkeypatch: pytest.MonkeyPatch, minilm: LlamaEmbedder) -> None:
    profile = Profile("schema-m008-encrypted")
    written = everything(profile.db, profile.key)

    def m010_broken(conn: apsw.Connection) -> None:
        conn.execute("ALTER TABLE turns ADD COLUMN half_done TEXT")
        conn.execute("INSERT INTO voices_archive SELECT * FROM voices")  # no such table

    monkeypatch.setattr("daemon.store.store.MIGRATIONS", (*MIGRATIONS, m010_broken))
    for attempt in (1, 2):  # a daemon restarted after the failure fails the same way
        with pytest.raises(MigrationFailed) as failed:
            Store(profile.paths.data_dir, minilm, key=profile.key)
        backups = backup.list_backups(profile.paths.data_dir)
        assert len(backups) == attempt
        if attempt == 1:
            (first,) = backups
            first_sha = sha256(first.path)
        # it says what failed, that nothing changed, and which backup puts it back
        assert "failed at m010_broken" in failed.value.message
        assert "the database is unchanged" in failed.value.message
        assert failed.value.fix is not None
        assert f"braincue backup restore {backups[-1].name}" in failed.value.fix
        assert str(backups[-1].path) in failed.value.fix
        assert everything(profile.db, profile.key) == written
        assert sha256(first.path) == first_sha
        assert everything(first.path, profile.key) == written

    monkeypatch.undo()  # the fixed release upgrades it
    with Store(profile.paths.data_dir, minilm, key=profile.key) as store:
        check_rows(store, profile)
    assert sha256(first.path) == first_sha


@pytest.mark.parametrize("name", ["schema-m004", "schema-m008-encrypted"])
def test_an_upgrade_killed_midway_leaves_the_earlier_database_and_a_whole_backup(
        name: str, minilm: LlamaEmbedder) -> None:
    profile = Profile(name)
    written = everything(profile.db, profile.key)
    key_args = [profile.key.hex] if profile.key is not None else []
    proc = subprocess.Popen([sys.executable, str(MIGRATOR), str(profile.paths.data_dir),
                             *key_args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True, cwd=ROOT)
    assert proc.stdout is not None and proc.stdin is not None
    try:
        assert proc.stdout.readline() == "migrating\n", "the upgrade ended before the kill"
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()
        proc.stdin.close()
    assert proc.returncode == -signal.SIGKILL

    (taken,) = backup.list_backups(profile.paths.data_dir)
    assert taken.reason == "before-migration"
    taken_sha = sha256(taken.path)
    assert everything(taken.path, profile.key) == written
    assert everything(profile.db, profile.key) == written  # as the earlier release left it

    with Store(profile.paths.data_dir, minilm, key=profile.key) as store:
        assert profile.applied(profile.db) == sorted(m.__name__ for m in MIGRATIONS)
        check_rows(store, profile)
        check_search(store)
    assert sha256(taken.path) == taken_sha
