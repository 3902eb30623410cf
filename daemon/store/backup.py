"""Backups of a profile's database: online copies, rotated, encrypted like the database.

A backup is SQLite's online backup of the whole database into ``<data dir>/backups/``, keyed
with the database's key, made while the daemon runs (WAL: writers go on meanwhile). It is
written as ``NAME.db.partial``, checked (``quick_check`` with the key) and only then renamed
to ``NAME.db``: a crash or a SIGKILL midway leaves a ``.partial`` that is never listed and is
removed by the next backup, and never touches the earlier backups. The newest ``keep``
backups stay; older ones are deleted once a new one is complete.

Recovering copies what can still be read of a damaged database, table by table and row by
row, into a new one of the same schema and key, which takes its place.

Restoring puts the current database (with its WAL) aside as ``braincue.db.replaced-<time>``,
never deletes it, then copies the backup in its place. A damaged database is set aside the same
way (``braincue.db.damaged-<time>``) by the command that restores.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import re
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import apsw

from daemon.errors import NotFound, StoreError
from daemon.store.db import connect, migrate
from daemon.store.keys import DatabaseKey

log = logging.getLogger(__name__)

BACKUP_DIR = "backups"
KEEP = 7
PAGES_PER_STEP = 1024  # 4 MiB a step with the default page size
_NAME = re.compile(r"^braincue-(\d{8}-\d{6})(?:-([a-z-]+?))?(?:-\d+)?\.db$")
Steps = Callable[[int, int], None]  # (pages copied, pages in all)


@dataclass(frozen=True)
class Backup:
    name: str  # the file's stem: braincue-YYYYMMDD-HHMMSS[-reason]
    path: Path
    created_at: float
    reason: str
    size: int


def backup_dir(data_dir: Path) -> Path:
    return data_dir / BACKUP_DIR


def list_backups(data_dir: Path) -> list[Backup]:
    """The complete backups, oldest first."""
    found = []
    directory = backup_dir(data_dir)
    if not directory.is_dir():
        return []
    for path in directory.iterdir():
        m = _NAME.match(path.name)
        if m is None:
            continue  # a .partial (a backup that did not finish) or something else
        created = dt.datetime.strptime(m.group(1), "%Y%m%d-%H%M%S").timestamp()
        st = path.stat()
        found.append((st.st_mtime_ns, Backup(path.stem, path, created, m.group(2) or "",
                                             st.st_size)))
    # the name says the second; two backups in one second are told apart by their writes
    return [b for _, b in sorted(found, key=lambda f: (f[1].created_at, f[0]))]


def latest_backup(data_dir: Path) -> Backup | None:
    backups = list_backups(data_dir)
    return backups[-1] if backups else None


def find_backup(data_dir: Path, name: str | None) -> Backup:
    """The backup called ``name`` (its stem or file name), or the latest one."""
    backups = list_backups(data_dir)
    if not backups:
        raise NotFound(f"there is no backup in {backup_dir(data_dir)}",
                       fix="`braincue backup now` makes one")
    if name is None:
        return backups[-1]
    for b in backups:
        if name in (b.name, b.path.name):
            return b
    raise NotFound(f"no backup named {name!r}", fix="`braincue backup list` shows them")


def _new_name(reason: str, now: float, directory: Path) -> str:
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now))
    name = f"braincue-{stamp}-{reason}"
    n = 1
    while (directory / f"{name}.db").exists():  # two backups in one second
        n += 1
        name = f"braincue-{stamp}-{reason}-{n}"
    return name


def make_backup(source: apsw.Connection, data_dir: Path, key: DatabaseKey | None, *,
                reason: str = "manual", keep: int = KEEP, steps: Steps | None = None,
                now: float | None = None) -> Backup:
    """Copy the database ``source`` is connected to into a new backup (see the module
    docstring); keep the newest ``keep``. ``source`` must not be in a transaction."""
    directory = backup_dir(data_dir)
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    for stale in directory.glob("*.partial"):
        stale.unlink(missing_ok=True)
    name = _new_name(reason, time.time() if now is None else now, directory)
    partial = directory / f"{name}.db.partial"
    final = directory / f"{name}.db"
    try:
        dest = connect(partial, key)
        try:
            with dest.backup("main", source, "main") as copy:
                while not copy.done:
                    copy.step(PAGES_PER_STEP)
                    if steps is not None:
                        steps(copy.pagecount - copy.remaining, copy.pagecount)
            if dest.execute("PRAGMA quick_check").get != "ok":
                raise StoreError(f"the backup {partial} failed its check")
            dest.pragma("journal_mode", "delete")  # one self-contained file
        finally:
            dest.close()
        with partial.open("rb") as f:
            os.fsync(f.fileno())
        os.replace(partial, final)
    except apsw.Error as e:
        partial.unlink(missing_ok=True)
        raise StoreError(f"the backup failed: {e}", fix="check free disk space") from e
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    backup = next(b for b in list_backups(data_dir) if b.path == final)
    for old in list_backups(data_dir)[:-keep] if keep > 0 else []:
        old.path.unlink(missing_ok=True)
    log.info("backed up the database to %s", final)
    return backup


def backup_file(db_path: Path, key: DatabaseKey | None, **options: object) -> Backup:
    """:func:`make_backup` of the database file ``db_path`` (a daemon may be using it)."""
    source = connect(db_path, key, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return make_backup(source, db_path.parent, key, **options)  # type: ignore[arg-type]
    finally:
        source.close()


def set_aside(db_path: Path, why: str) -> Path | None:
    """Move the database file (and its WAL and shared memory) to ``<file>.<why>-<time>``;
    return the new path of the database (None when there was none)."""
    if not db_path.exists():
        return None
    stamp = time.strftime("%Y%m%d-%H%M%S")
    aside = db_path.with_name(f"{db_path.name}.{why}-{stamp}")
    for suffix in ("-wal", "-shm", ""):
        part = Path(f"{db_path}{suffix}")
        if part.exists():
            os.replace(part, Path(f"{aside}{suffix}"))
    return aside


def restore_backup(db_path: Path, backup: Backup, key: DatabaseKey | None, *,
                   why: str = "replaced") -> Path | None:
    """Put ``backup`` in place of the database (the daemon must be stopped); the current
    database is set aside, not deleted. Returns where it was set aside."""
    check = connect(backup.path, key, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        if check.execute("PRAGMA quick_check").get != "ok":
            raise StoreError(f"the backup {backup.name} is damaged",
                             fix="restore an earlier one (`braincue backup list`)")
    finally:
        check.close()
    tmp = db_path.with_name(f"{db_path.name}.restoring")
    shutil.copyfile(backup.path, tmp)
    os.chmod(tmp, 0o600)
    with tmp.open("rb") as f:
        os.fsync(f.fileno())
    aside = set_aside(db_path, why)
    os.replace(tmp, db_path)
    log.info("restored the database from %s (the previous one is at %s)", backup.path, aside)
    return aside


def restore_advice(data_dir: Path) -> str:
    """What to do about a damaged database: the latest backup and the command."""
    latest = latest_backup(data_dir)
    if latest is None:
        return (f"there is no backup in {backup_dir(data_dir)}: `braincue backup recover` keeps "
                "what is still readable (the damaged file is kept aside)")
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(latest.created_at))
    return (f"`braincue backup restore` puts back the latest backup, {latest.name} ({when}), "
            "or `braincue backup recover` keeps what is still readable; either way the damaged "
            "file is kept aside")


def migration_advice(taken: Sequence[Backup]) -> str:
    """What to do about an upgrade that failed (the database is unchanged): keep the earlier
    version, with the copy taken before the upgrade to fall back on."""
    if not taken:
        return "run the earlier BrainCue version until this one is fixed"
    before = taken[-1]
    return (f"run the earlier BrainCue version until this one is fixed; a copy of the database "
            f"from before the upgrade is {before.path} (`braincue backup restore {before.name}` "
            "puts it back)")


@dataclass(frozen=True)
class Recovered:
    aside: Path  # the damaged file, kept
    rows: dict[str, int]  # rows copied, by table
    unreadable: dict[str, int]  # stretches of rows that could not be read, by table


MAX_SKIPS = 64  # unreadable stretches tried past, per table, before giving up on it


def _copy_rows(src: apsw.Connection, out: apsw.Connection, table: str) -> tuple[int, int]:
    """Copy what can be read of ``table`` by rowid, stepping past unreadable stretches."""
    have = {r[1] for r in src.execute(f'PRAGMA table_info("{table}")')}
    columns = [r[1] for r in out.execute(f'PRAGMA table_info("{table}")') if r[1] in have]
    names = ", ".join(f'"{c}"' for c in columns)
    insert = (f'INSERT OR IGNORE INTO "{table}" (rowid, {names}) '
              f"VALUES (?{', ?' * len(columns)})")
    copied = skips = 0
    last = -(2**63)
    jump = 1
    while skips <= MAX_SKIPS:
        try:
            for row in src.execute(f'SELECT rowid, {names} FROM "{table}" WHERE rowid > ? '
                                   "ORDER BY rowid", (last,)):
                out.execute(insert, row)
                last = row[0]
                copied += 1
                jump = 1
            break
        except apsw.Error:
            skips += 1
            last = max(last, 0) + jump
            jump *= 2
    return copied, skips


def recover(db_path: Path, key: DatabaseKey | None,
            migrations: Sequence[Callable[[apsw.Connection], None]]) -> Recovered:
    """Copy what is still readable of a damaged database into a new one (same schema, same
    key) and put it in place; the damaged file is set aside. The daemon must be stopped."""
    target = db_path.with_name(f"{db_path.name}.recovering")
    target.unlink(missing_ok=True)
    src = connect(db_path, key, flags=apsw.SQLITE_OPEN_READONLY)
    rows: dict[str, int] = {}
    unreadable: dict[str, int] = {}
    try:
        out = connect(target, key)
        try:
            migrate(out, migrations)
            out.pragma("foreign_keys", False)  # rows arrive table by table
            tables = [n for (n,) in out.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE "
                "'sqlite_%' AND name NOT LIKE '%_fts%' AND name <> 'migrations' "
                "AND sql NOT LIKE 'CREATE VIRTUAL%'")]
            with out:
                for table in [*tables, "assertions_fts"]:
                    rows[table], skips = _copy_rows(src, out, table)
                    if skips:
                        unreadable[table] = skips
                out.execute("INSERT INTO chunks_fts (chunks_fts) VALUES ('rebuild')")
            out.pragma("journal_mode", "delete")
        finally:
            out.close()
    finally:
        src.close()
    aside = set_aside(db_path, "damaged")
    os.replace(target, db_path)
    assert aside is not None
    log.info("recovered %s into a new database (the damaged one is %s)", db_path, aside)
    return Recovered(aside, rows, unreadable)
