"""Private at rest and nothing lost: permissions, encryption, backups, forgetting."""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import apsw
import msgspec
import pytest
import trio
import trio.testing
from click.testing import CliRunner
from storekit import T0, Clock, CountingEmbedder, recorded_session

from clients.shell import cli
from daemon.config import Paths, Settings, make_private
from daemon.errors import StoreError
from daemon.handlers import atrest
from daemon.handlers.atrest import FIRST_BACKUP_AFTER_S
from daemon.ipc.client import Client
from daemon.ipc.protocol import Forget, ImportTranscript, ListSessions, LiveStatus
from daemon.ipc.testing import DaemonProcess, daemon_env, start_daemon
from daemon.memory.retention import DAY_S, expire_undecided, forget_before
from daemon.store import backup, security
from daemon.store.db import connect
from daemon.store.keys import KeyStore, file_state
from daemon.store.records import NewAssertion
from daemon.store.scope import Scope
from daemon.store.store import DB_FILE, Store

PHRASE = "the quokka migration finishes on Thursday"
TESTS = Path(__file__).resolve().parent


def transcript(title: str = "Quokka sync", text: str = PHRASE) -> bytes:
    return msgspec.json.encode({
        "title": title, "started_at": "2026-11-20T10:00:00",
        "turns": [{"speaker": "me", "text": text, "t": 0.0},
                  {"speaker": "Sam", "text": "Good, and the budget is signed off.", "t": 4.0}]})


def import_one(**kwargs: str) -> int:
    with Client(timeout=60) as client:
        return client.request(ImportTranscript(content=transcript(**kwargs))).session.id


def session_titles() -> list[str]:
    """The titles of the running daemon's sessions."""
    with Client(timeout=30) as client:
        return [s.title for s in client.request(ListSessions()).sessions]


def profile_files(paths: Paths) -> list[Path]:
    roots = (paths.config_dir, paths.data_root, paths.cache_dir, paths.runtime_root)
    return [Path(d) / n for root in roots for d, dirs, files in os.walk(root)
            for n in (*dirs, *files)] + list(roots)


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def with_keystore(short_home: Path) -> dict[str, str]:
    return {"PYTHON_KEYRING_BACKEND": "keystore.FileKeyring",
            "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])}


# -- permissions -------------------------------------------------------------------------------

NOBODY_READS = textwrap.dedent("""
    import sys
    opened = []
    for path in sys.argv[1:]:
        try:
            open(path, "rb").close()
            opened.append(path)
        except OSError:
            pass
    print("\\n".join(opened))
""")


@pytest.mark.skipif(shutil.which("setpriv") is None or os.geteuid() != 0,
                    reason="reads as `nobody` through setpriv, which needs root")
def test_a_fresh_profile_is_the_users_alone(short_home: Path) -> None:
    daemon = start_daemon(short_home)
    try:
        import_one()
        paths = Paths.resolve("default")
        assert CliRunner().invoke(cli, ["backup", "now"]).exit_code == 0
        every = profile_files(paths)
        loose = [(p, oct(stat.S_IMODE(p.lstat().st_mode))) for p in every
                 if not p.is_socket() and stat.S_IMODE(p.lstat().st_mode)
                 != (0o700 if p.is_dir() else 0o600)]
        assert not loose
        assert any(p.name == DB_FILE for p in every)
        for directory in (short_home, paths.data_root, paths.data_root / "profiles", paths.data_dir):
            directory.chmod(0o755)  # even with the directories opened, the files stay shut
        files = [p for p in every if p.is_file()]
        result = subprocess.run(
            ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", sys.executable,
             "-c", NOBODY_READS, *map(str, files)],
            capture_output=True, text=True, timeout=60, env=daemon_env(short_home))
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == ""
    finally:
        assert daemon.stop(signal.SIGTERM) == 0, daemon.log()


def test_an_existing_install_is_tightened_at_start(short_home: Path,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    paths = Paths.resolve("default")
    for d in (paths.data_dir, paths.config_dir):
        d.mkdir(parents=True, mode=0o755)
    (paths.data_dir / DB_FILE).write_bytes(b"")
    (paths.data_dir / DB_FILE).chmod(0o644)
    (paths.config_dir / "config.toml").write_text("")
    (paths.config_dir / "config.toml").chmod(0o664)
    with caplog.at_level(logging.INFO):
        paths.ensure()
    assert stat.S_IMODE((paths.data_dir / DB_FILE).stat().st_mode) == 0o600
    assert stat.S_IMODE((paths.config_dir / "config.toml").stat().st_mode) == 0o600
    assert stat.S_IMODE(paths.data_dir.stat().st_mode) == 0o700
    assert "private to this user" in caplog.text
    assert make_private(paths.data_root) == 0  # nothing left to tighten


# -- encryption --------------------------------------------------------------------------------


def test_the_database_and_indexes_hold_no_plaintext_and_reopen_with_the_stored_key(
        short_home: Path) -> None:
    env = with_keystore(short_home)
    daemon = start_daemon(short_home, env=env)
    data_dir = Paths.resolve("default").data_dir
    try:
        import_one()
        running = {f.name: f.read_bytes() for f in data_dir.iterdir() if f.is_file()}
        assert "braincue.db-wal" in running  # the write-ahead log is encrypted too
        assert not [name for name, data in running.items() if b"quokka" in data]
    finally:
        assert daemon.stop(signal.SIGTERM) == 0, daemon.log()
    paths = Paths.resolve("default")
    assert (short_home / "test-keyring.json").exists() and not KeyStore(paths).key_file.exists()
    assert file_state(paths.data_dir / DB_FILE) == "encrypted"
    for f in paths.data_dir.iterdir():
        if f.is_file():
            data = f.read_bytes()
            assert b"quokka" not in data and b"SQLite format 3" not in data, f
    restarted = start_daemon(short_home, env=env)
    try:
        assert session_titles() == ["Quokka sync"]
    finally:
        assert restarted.stop(signal.SIGTERM) == 0
        assert "vector index" not in restarted.log()  # the sealed index opened as saved


def test_sealed_vector_indexes_hold_no_vector_in_the_clear(tmp_path: Path) -> None:
    key = KeyStore(Paths.resolve("default")).next_key()
    store = Store(tmp_path, CountingEmbedder(), key=key)
    recorded_session(store, [PHRASE, "and the budget is signed off"])
    store.close()
    meta = msgspec.json.decode((tmp_path / "vectors-turn.json").read_bytes())
    assert meta["encrypted"] is True and meta["count"] == 2
    plain = CountingEmbedder().embed_sync([PHRASE])[0].astype("<f4").tobytes()
    sealed = (tmp_path / "vectors-turn.usearch").read_bytes()
    assert plain[:16] not in sealed
    again = Store(tmp_path, CountingEmbedder(), key=key)
    try:
        assert again.index.count("turn") == 2
    finally:
        again.close()


def test_a_wrong_key_is_one_line_and_leaves_the_file_untouched(short_home: Path) -> None:
    daemon = start_daemon(short_home, env={"BRAINCUE_KEY": "the right passphrase"})
    try:
        import_one()
    finally:
        assert daemon.stop(signal.SIGTERM) == 0
    db = Paths.resolve("default").data_dir / DB_FILE
    before = sha(db)
    with pytest.raises(RuntimeError, match="exited with 1") as failed:
        start_daemon(short_home, env={"BRAINCUE_KEY": "a wrong passphrase"})
    log = str(failed.value)
    assert "does not open with the key from BRAINCUE_KEY" in log and "Traceback" not in log
    assert sum(line.startswith("braincued: error:") for line in log.splitlines()) == 1
    assert sha(db) == before and not Path(f"{db}-wal").exists()
    # and without any key: never a new empty database in its place
    with pytest.raises(RuntimeError, match="no key for it was found"):
        start_daemon(short_home)
    assert sha(db) == before


def test_security_encrypt_keeps_every_row(short_home: Path) -> None:
    paths = Paths.resolve("default")
    paths.ensure()
    store = Store(paths.data_dir, CountingEmbedder(), clock=Clock())  # plain, as before
    space = store.create_space("Quokka").id
    recorded_session(store, [PHRASE, "the budget is signed off"], space_id=space)
    recorded_session(store, ["lunch on Friday", "fine"], space_id=space)

    def snapshot(s: Store) -> tuple[dict[str, int], list[int]]:
        return s.counts(), [h.id for h in s.fts_chunks("quokka migration", Scope(space_id=space))]

    before = snapshot(store)
    store.close()
    assert file_state(paths.data_dir / DB_FILE) == "plain"
    result = CliRunner().invoke(cli, ["security", "encrypt"])
    assert result.exit_code == 0, result.output
    assert "encrypted" in result.output
    assert file_state(paths.data_dir / DB_FILE) == "encrypted"
    assert b"quokka" not in (paths.data_dir / DB_FILE).read_bytes()
    # the verified copy is kept as a backup, under the new key too
    (copy,) = backup.list_backups(paths.data_dir)
    assert copy.reason == "before-encrypt" and file_state(copy.path) == "encrypted"
    after = Store.open(paths, CountingEmbedder())
    try:
        assert snapshot(after) == before and before[1]
    finally:
        after.close()
    status = CliRunner().invoke(cli, ["security", "status"])
    assert "encrypted (SQLite3 Multiple Ciphers" in status.output
    assert "sealed" in status.output and "NOT" not in status.output


def test_security_rekey_moves_the_database_and_its_backups_to_a_new_key(short_home: Path) -> None:
    paths = Paths.resolve("default")
    paths.ensure()
    store = Store.open(paths, CountingEmbedder())
    recorded_session(store, [PHRASE])
    store.make_backup()
    store.close()
    old = KeyStore(paths).find()
    assert old is not None
    result = CliRunner().invoke(cli, ["security", "rekey"])
    assert result.exit_code == 0, result.output
    new = KeyStore(paths).find()
    assert new is not None and new.hex != old.hex
    with pytest.raises(StoreError, match="does not open with the key"):
        connect(paths.data_dir / DB_FILE, old)
    for b in backup.list_backups(paths.data_dir):
        connect(b.path, new, flags=apsw.SQLITE_OPEN_READONLY).close()
    again = Store.open(paths, CountingEmbedder())
    try:
        assert again.counts()["turns"] == 1 and again.index.count("turn") == 1
    finally:
        again.close()


def test_a_rekey_interrupted_after_the_file_moved_loses_nothing(short_home: Path) -> None:
    paths = Paths.resolve("default")
    paths.ensure()
    Store.open(paths).close()
    keys = KeyStore(paths)
    old, new = keys.find(), keys.next_key()
    assert old is not None
    keys.stage(new)
    security._rekey_file(paths.data_dir / DB_FILE, old, new)  # then the power went out
    store = Store.open(paths)
    store.close()
    found = keys.find()
    assert found is not None and found.hex == new.hex and keys.staged() is None


# -- backups -----------------------------------------------------------------------------------


def overwrite_pages(db: Path) -> None:
    size = db.stat().st_size
    with db.open("r+b") as f:
        for offset in range(4096, size, 8192):
            f.seek(offset)
            f.write(os.urandom(4096))


def test_a_damaged_database_names_the_restore_and_restore_brings_the_backup_back(
        short_home: Path) -> None:
    daemon = start_daemon(short_home)
    try:
        import_one(title="kept before the backup")
        assert CliRunner().invoke(cli, ["backup", "now"]).exit_code == 0
        import_one(title="after the backup")
    finally:
        assert daemon.stop(signal.SIGTERM) == 0
    paths = Paths.resolve("default")
    db = paths.data_dir / DB_FILE
    overwrite_pages(db)
    damaged = sha(db)
    with pytest.raises(RuntimeError, match="exited with 1") as failed:
        start_daemon(short_home)
    log = str(failed.value)
    latest = backup.latest_backup(paths.data_dir)
    assert latest is not None
    assert "`braincue backup restore` puts back the latest backup" in log
    assert latest.name in log and "Traceback" not in log
    assert sha(db) == damaged  # never written to

    listed = CliRunner().invoke(cli, ["backup", "list"])
    assert latest.name in listed.output
    restored = CliRunner().invoke(cli, ["backup", "restore"])
    assert restored.exit_code == 0, restored.output
    aside = [p for p in paths.data_dir.iterdir() if ".replaced-" in p.name]
    assert aside and any(sha(p) == damaged for p in aside)  # kept aside, not deleted
    daemon = start_daemon(short_home)
    try:
        assert session_titles() == ["kept before the backup"]
    finally:
        assert daemon.stop(signal.SIGTERM) == 0


KILLED_MID_BACKUP = textwrap.dedent("""
    import sys
    from pathlib import Path
    from daemon.store import backup, security
    from daemon.store.db import connect

    data_dir = Path(sys.argv[1])
    backup.PAGES_PER_STEP = 16  # many steps for a small database
    source = connect(data_dir / "braincue.db", None)

    def steps(done, total):
        print("copying", done, total, flush=True)
        sys.stdin.readline()  # hold here until killed

    backup.make_backup(source, data_dir, None, reason="killed", steps=steps)
""")


def test_sigkill_during_a_backup_leaves_the_earlier_ones_and_lists_no_half(
        tmp_path: Path) -> None:
    store = Store(tmp_path, clock=Clock())
    for n in range(10):  # several steps' worth of pages
        recorded_session(store, [f"turn {n} " + "words " * 400] * 5)
    earlier = [store.make_backup(reason="daily"), store.make_backup(reason="daily")]
    hashes = [sha(b.path) for b in earlier]
    store.close()
    child = subprocess.Popen([sys.executable, "-c", KILLED_MID_BACKUP, str(tmp_path)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                             cwd=TESTS.parent)
    assert child.stdout is not None
    line = child.stdout.readline()
    assert line.startswith("copying"), line
    done, total = map(int, line.split()[1:])
    assert done < total  # killed in the middle
    child.send_signal(signal.SIGKILL)
    child.wait(30)
    assert list(backup.backup_dir(tmp_path).glob("*.partial"))
    assert backup.list_backups(tmp_path) == earlier
    assert [sha(b.path) for b in earlier] == hashes
    for b in earlier:
        conn = connect(b.path, None, flags=apsw.SQLITE_OPEN_READONLY)
        assert conn.execute("PRAGMA quick_check").get == "ok"
        conn.close()
    # the next backup clears the half-written one
    again = Store(tmp_path)
    try:
        again.make_backup()
    finally:
        again.close()
    assert not list(backup.backup_dir(tmp_path).glob("*.partial"))
    assert len(backup.list_backups(tmp_path)) == 3


def test_backups_rotate_and_come_before_a_migration(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    store = Store(tmp_path)
    recorded_session(store, ["hello"])
    for _ in range(9):
        store.make_backup(reason="daily", keep=7)
    assert len(backup.list_backups(tmp_path)) == 7
    store.close()

    from daemon.store import schema

    def m999_test_column(conn: apsw.Connection) -> None:
        conn.execute("ALTER TABLE sessions ADD COLUMN test_only TEXT")

    monkeypatch.setattr(schema, "MIGRATIONS", [*schema.MIGRATIONS, m999_test_column])
    monkeypatch.setattr("daemon.store.store.MIGRATIONS", schema.MIGRATIONS)
    Store(tmp_path, backups_kept=7).close()
    newest = backup.latest_backup(tmp_path)
    assert newest is not None and newest.reason == "before-migration"
    conn = connect(newest.path, None, flags=apsw.SQLITE_OPEN_READONLY)
    try:  # taken before the migration ran
        names = {r[1] for r in conn.execute("PRAGMA table_info(sessions)")}
        assert "test_only" not in names
    finally:
        conn.close()


def test_recover_keeps_what_is_still_readable(short_home: Path) -> None:
    paths = Paths.resolve("default")
    paths.ensure()
    key = KeyStore(paths).create()
    store = Store(paths.data_dir, key=key)
    for n in range(30):
        recorded_session(store, [f"session {n} " + "words " * 300] * 3, title=f"call {n}")
    store.close()
    db = paths.data_dir / DB_FILE
    with db.open("r+b") as f:  # one page in the middle of the turns
        f.seek(db.stat().st_size // 2 // 4096 * 4096)
        f.write(os.urandom(4096))
    damaged = sha(db)
    result = CliRunner().invoke(cli, ["backup", "recover"])
    assert result.exit_code == 0, result.output
    assert "recovered" in result.output
    aside = [p for p in paths.data_dir.iterdir()
             if ".damaged-" in p.name and not p.name.endswith(("-wal", "-shm"))]
    assert [sha(p) for p in aside] == [damaged]
    again = Store.open(paths)
    try:
        counts = again.counts()
        assert 0 < counts["turns"] <= 90 and counts["sessions"] == 30
        conn = connect(db, key, flags=apsw.SQLITE_OPEN_READONLY)
        assert conn.execute("PRAGMA quick_check").get == "ok"
        conn.close()
        assert again.fts_chunks("words", Scope(space_id=None))
    finally:
        again.close()


def test_a_backup_failing_its_check_is_refused_on_restore(tmp_path: Path) -> None:
    store = Store(tmp_path)
    recorded_session(store, ["hello " * 2000])
    made = store.make_backup()
    store.close()
    overwrite_pages(made.path)
    with pytest.raises(StoreError):
        backup.restore_backup(tmp_path / DB_FILE, made, None)
    assert (tmp_path / DB_FILE).exists()


# -- forgetting --------------------------------------------------------------------------------


def _world(tmp_path: Path) -> tuple[Store, dict[str, int]]:
    store = Store(tmp_path, CountingEmbedder(), clock=Clock())
    work, home_space = store.create_space("Work").id, store.create_space("Home").id
    day = DAY_S
    ids = {
        "old kept work": recorded_session(store, ["the walrus contract is signed"],
                                          space_id=work, started_at=T0 - 40 * day),
        "old later work": recorded_session(store, ["the pelican budget waits"],
                                           space_id=work, started_at=T0 - 35 * day),
        "old ended home": recorded_session(store, ["the heron party is on Sunday"],
                                           space_id=home_space, started_at=T0 - 31 * day),
        "new ended work": recorded_session(store, ["the ibis review is tomorrow"],
                                           space_id=work, started_at=T0 - 1 * day),
    }
    store.put_archive(ids["old kept work"], "Topic: the walrus contract\nSummary: signed.")
    store.update_session(ids["old kept work"], status="kept")
    store.update_session(ids["old later work"], status="later")
    chunk = store.chunks(session_id=ids["old kept work"])[0]
    store.add_assertions([
        NewAssertion(kind="fact", text="The walrus contract is signed.", source="extracted",
                     space_id=work, session_id=ids["old kept work"], anchor_chunk_id=chunk.id,
                     occurred_at=chunk.occurred_at),
        NewAssertion(kind="preference", text="I like walrus contracts.", source="extracted",
                     space_id=work, session_id=ids["old kept work"], anchor_chunk_id=chunk.id,
                     occurred_at=chunk.occurred_at, about_person=True,
                     review_status="pending")])
    return store, ids


def test_forget_before_removes_exactly_the_sessions_it_names(tmp_path: Path) -> None:
    store, ids = _world(tmp_path)
    try:
        work = store.get_space("Work").id
        before = store.counts()
        forgotten = forget_before(store, T0 - 30 * DAY_S, space_id=work)
        assert sorted(forgotten.session_ids) == sorted([ids["old kept work"],
                                                        ids["old later work"]])
        assert forgotten.deleted.sessions == 2 and forgotten.deleted.assertions == 2
        assert store.archive(ids["old kept work"]) == []
        after = store.counts()
        assert after["sessions"] == before["sessions"] - 2
        assert after["turns"] == before["turns"] - 2
        assert after["chunks"] == before["chunks"] - 3  # two transcripts and the archive
        assert after["assertions"] == before["assertions"] - 2
        assert after["vectors"] < before["vectors"]
        in_work = Scope(space_id=work, person_memory=True)
        in_home = Scope(space_id=store.get_space("Home").id)
        for gone in ("walrus", "pelican"):
            assert store.fts_chunks(gone, in_work) == []
            assert store.fts_assertions(gone, in_work) == []
            assert store.vector_chunks(gone, in_work) == [] or all(
                h.id not in forgotten.session_ids for h in store.vector_chunks(gone, in_work))
        assert store.fts_chunks("heron", in_home) and store.fts_chunks("ibis", in_work)
        left = {s.id for s in store.list_sessions()}
        assert left == {ids["old ended home"], ids["new ended work"]}
    finally:
        store.close()


def test_retention_deletes_only_old_undecided_sessions(tmp_path: Path) -> None:
    store, ids = _world(tmp_path)
    try:
        assert expire_undecided(store, T0, 0).session_ids == []  # off by default
        forgotten = expire_undecided(store, T0, 30)
        assert sorted(forgotten.session_ids) == sorted([ids["old later work"],
                                                        ids["old ended home"]])
        left = {s.id for s in store.list_sessions()}
        assert left == {ids["old kept work"], ids["new ended work"]}
        assert store.fts_chunks("heron", Scope(space_id=store.get_space("Home").id)) == []
    finally:
        store.close()


def test_forget_over_the_daemon_and_the_cli(short_home: Path) -> None:
    daemon: DaemonProcess = start_daemon(short_home)
    try:
        first = import_one(title="old call")
        result = CliRunner().invoke(cli, ["forget", "--before", "2026-11-19", "--yes"])
        assert result.exit_code == 0 and "no session started before" in result.output
        result = CliRunner().invoke(cli, ["forget", "--before", "2026-11-21", "--yes"])
        assert result.exit_code == 0, result.output
        assert "deleted 1 session" in result.output
        with Client(timeout=30) as client:
            assert client.request(ListSessions()).sessions == []
            reply = client.request(Forget(before=0.0))
        assert reply.session_ids == [] and first > 0
    finally:
        assert daemon.stop(signal.SIGTERM) == 0


# -- the schedule ------------------------------------------------------------------------------


class FakeDaemon:
    """What the backup schedule reads of a daemon."""

    def __init__(self, store: Store, live_session: int | None) -> None:
        self.store = store
        self.settings = Settings()
        self.started_at = time.time() - 2 * FIRST_BACKUP_AFTER_S
        self._live = live_session

    def live_status(self) -> LiveStatus:
        return LiveStatus(sources={}, utterances_queued=0, asr_lag_s=0.0, dropped_blocks=0,
                          session_id=self._live)

@pytest.mark.parametrize("live", [None, 7])
async def test_scheduled_backups_run_when_idle_and_due(
        tmp_path: Path, autojump_clock: trio.testing.MockClock, live: int | None) -> None:
    store = Store(tmp_path)
    try:
        recorded_session(store, ["hello"])
        async with trio.open_nursery() as nursery:
            nursery.start_soon(atrest._scheduled_backups, FakeDaemon(store, live))  # type: ignore[arg-type]
            await trio.sleep(atrest.BACKUP_CHECK_S * 5)  # five checks: one backup is due
            nursery.cancel_scope.cancel()
        made = backup.list_backups(tmp_path)
        assert [b.reason for b in made] == ([] if live else ["scheduled"])
    finally:
        store.close()


def test_a_backup_is_due_once_a_day_by_default() -> None:
    day = Settings().backup_interval_hours * 3600
    assert day == 86400 and Settings().backups_kept == 7 and Settings().retention_days == 0
    assert not atrest.backup_due(T0, T0 + day - 1, 24)
    assert atrest.backup_due(T0, T0 + day, 24)
    assert not atrest.backup_due(T0, T0 + 10 * day, 0)  # 0: never
