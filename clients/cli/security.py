"""At rest from the shell: `braincue security status | encrypt | rekey`, `braincue backup now |
list | restore [NAME]`, and `braincue forget --before DATE`.

These work on the profile's files directly, not through the daemon: a restore or a change of
key replaces the database file, which only a stopped daemon lets go of (they take the
profile's lock, so they refuse while it runs). `backup now` and `backup list` also run beside
a running daemon (an online backup reads a snapshot; the daemon goes on writing). `forget`
asks the daemon, like `discard`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import TypeVar

import click

from clients.cli.context import Context
from clients.cli.output import deleted, local_time, plural, table
from daemon.config import Paths
from daemon.errors import InvalidInput
from daemon.ipc.client import Client
from daemon.ipc.protocol import Forget
from daemon.ipc.runtime import profile_lock
from daemon.store import backup as backups
from daemon.store import security as sec
from daemon.store.keys import KeyStore, file_state, key_for
from daemon.store.schema import MIGRATIONS
from daemon.store.store import DB_FILE
from daemon.store.vectors import remove_index_files

T = TypeVar("T")


def _locked(context: Context, step: Callable[[Paths], T]) -> T:
    """``step`` on the profile's files while no daemon may open them."""
    paths = context.config.paths
    with profile_lock(paths):
        return step(paths)


@click.group()
def security() -> None:
    """Encryption at rest: what is encrypted, and where the key is."""


@security.command("status")
@click.pass_obj
def security_status(context: Context) -> None:
    """Say whether the database, its vector indexes and backups are encrypted."""
    s = sec.status(context.config.paths)
    state = {"missing": "not created yet", "plain": "NOT encrypted (`braincue security "
             "encrypt` encrypts it)", "encrypted": "encrypted (SQLite3 Multiple Ciphers, "
             "ChaCha20-Poly1305)"}[s.state]
    rows = [["database", f"{s.database}: {state}"],
            ["key", s.key_where or "none found"],
            ["key store", s.key_store]]
    for name, sealed in s.index_files.items():
        rows.append([name, "sealed (AES-256-GCM)" if sealed else "NOT encrypted"])
    rows.append(["backups", f"{s.backups}" + (f", latest {s.latest_backup}"
                                              if s.latest_backup else "")])
    table(rows)


@security.command("encrypt")
@click.pass_obj
def security_encrypt(context: Context) -> None:
    """Encrypt a plain database in place (a verified copy is made first). Stop the daemon
    first."""
    done = _locked(context, sec.encrypt)
    click.echo(f"encrypted {done.database} ({plural(sum(done.rows.values()), 'row')} kept); "
               f"the key is in {done.key_where}")


@security.command("rekey")
@click.pass_obj
def security_rekey(context: Context) -> None:
    """Move the database and its backups to a new key. Stop the daemon first."""
    done = _locked(context, sec.rekey)
    click.echo(f"re-encrypted {done.database} and {plural(done.backups, 'backup')} with a new "
               f"key, now in {done.key_where}")


@click.group("backup")
def backup_group() -> None:
    """Backups of the database (online, encrypted like it, the newest 7 kept)."""


@backup_group.command("now")
@click.pass_obj
def backup_now(context: Context) -> None:
    """Back up the database now (the daemon may be running)."""
    config = context.config
    db = config.paths.data_dir / DB_FILE
    key = key_for(config.paths, db, encrypt=False)
    made = backups.backup_file(db, key, reason="manual", keep=config.settings.backups_kept)
    click.echo(f"backed up to {made.path}")


@backup_group.command("list")
@click.pass_obj
def backup_list(context: Context) -> None:
    """List the backups, oldest first."""
    found = backups.list_backups(context.config.paths.data_dir)
    if not found:
        click.echo("no backups yet (`braincue backup now` makes one)")
        return
    table([["NAME", "MADE", "SIZE"]] + [
        [b.name, local_time(b.created_at), f"{b.size / 1e6:.1f} MB"] for b in found])


@backup_group.command("restore")
@click.argument("name", required=False)
@click.pass_obj
def backup_restore(context: Context, name: str | None) -> None:
    """Put back backup NAME (default: the latest). The current database is kept aside. Stop
    the daemon first."""
    paths = context.config.paths
    with profile_lock(paths):
        chosen = backups.find_backup(paths.data_dir, name)
        key = KeyStore(paths).find() if file_state(chosen.path) == "encrypted" else None
        aside = backups.restore_backup(paths.data_dir / DB_FILE, chosen, key)
        remove_index_files(paths.data_dir)  # rebuilt from the restored database
    click.echo(f"restored {chosen.name}" + (f"; the previous database is at {aside}"
                                            if aside else ""))


def parse_date(text: str) -> float:
    """A date (YYYY-MM-DD, this machine's midnight) or a date and time, as unix time."""
    try:
        moment = dt.datetime.fromisoformat(text)
    except ValueError:
        raise InvalidInput(f"--before: {text!r} is not a date",
                           fix="give YYYY-MM-DD (or YYYY-MM-DDTHH:MM)") from None
    return moment.timestamp()  # naive: local time


@click.command("forget")
@click.option("--before", "before", required=True, metavar="DATE",
              help="Forget the sessions that started before DATE (YYYY-MM-DD, local time).")
@click.option("--space", "space", metavar="NAME", default=None,
              help="Only the sessions of this Space.")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.pass_obj
def forget(context: Context, before: str, space: str | None, yes: bool) -> None:
    """Delete every session before DATE like `discard` does: turns, archive, assertions,
    pending memory candidates, vectors. Memories you reviewed stay."""
    moment = parse_date(before)
    where = f" in {space}" if space else ""
    if not yes:
        click.confirm(f"Delete every session{where} that started before {before}?", abort=True)
    with Client(timeout=900) as client:
        reply = client.request(Forget(before=moment, space=space))
    if not reply.session_ids:
        click.echo(f"no session{where} started before {before}")
        return
    click.echo(deleted(plural(len(reply.session_ids), 'session'), reply.deleted))


@backup_group.command("recover")
@click.pass_obj
def backup_recover(context: Context) -> None:
    """Keep what is still readable of a damaged database: copy it into a new one that takes
    its place (the damaged file is kept aside). Stop the daemon first."""
    paths = context.config.paths
    db = paths.data_dir / DB_FILE
    with profile_lock(paths):
        key = KeyStore(paths).find() if file_state(db) == "encrypted" else None
        done = backups.recover(db, key, MIGRATIONS)
        remove_index_files(paths.data_dir)
    kept = ", ".join(f"{plural(n, 'row')} of {t}" for t, n in done.rows.items() if n)
    click.echo(f"recovered {kept or 'nothing'}; the damaged file is at {done.aside}")
    for name, parts in done.unreadable.items():
        click.echo(f"note: {name}: {plural(parts, 'unreadable part')} skipped", err=True)


COMMANDS = (security, backup_group, forget)
