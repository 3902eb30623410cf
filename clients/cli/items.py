"""Open items from the shell: `braincue open [--space S] [--owner NAME]`, `braincue done ID`,
`braincue drop ID`. They only speak the protocol."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

import click

from clients.cli.context import Context
from clients.cli.output import echo_json, local_time, plural, table
from clients.cli.search import DATE_FORMATS
from daemon.ipc.protocol import CloseItem, ItemInfo, OpenItems

# -- pure: what is printed -----------------------------------------------------------------------


def where_said(item: ItemInfo) -> str:
    """``Weekly sync · 2026-11-24 10:00`` (or just the time when said in no session)."""
    when = local_time(item.occurred_at)
    return f"{item.session_title} · {when}" if item.session_title else when


def item_rows(items: Sequence[ItemInfo], *, spaces: bool) -> list[tuple[str, ...]]:
    """The table of open items, oldest first: id, who, what, due, where said (and the Space
    when items of several are listed)."""
    heading = ("ID", "WHO", "WHAT", "DUE", "SAID IN") + (("SPACE",) if spaces else ())
    rows = [heading]
    for item in items:
        row = (str(item.id), item.owner or "-", item.text, item.due or "-", where_said(item))
        rows.append(row + ((item.space or "profile-wide",) if spaces else ()))
    return rows


def carried_lines(message: str, items: Sequence[ItemInfo]) -> list[str]:
    """``3 open from last time:`` and one line per item (what `braincue start` prints)."""
    if not message:
        return []
    lines = [f"{message}:"]
    for item in items:
        due = f" (due {item.due})" if item.due else ""
        lines.append(f"  {item.id}  {item.owner or '-'}: {item.text}{due} · {where_said(item)}")
    return lines


# -- commands ------------------------------------------------------------------------------------


@click.command("open")
@click.option("--space", default=None, help="Only this Space (default: every Space).")
@click.option("--owner", default="", help="Only what this person owes (a name or part of it).")
@click.option("--as-of", "as_of", type=click.DateTime(DATE_FORMATS), default=None,
              help="What was open then (with --space).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def open_(context: Context, space: str | None, owner: str, as_of: dt.datetime | None,
          as_json: bool) -> None:
    """The commitments and tasks still open, oldest first: who, what, by when, where it was
    said. Close one with `braincue done ID` or `braincue drop ID`."""
    reply = context.request(OpenItems(space=space, owner=owner,
                                      as_of=None if as_of is None else as_of.timestamp()))
    if as_json:
        echo_json(reply.items)
    elif not reply.items:
        click.echo("nothing open" + (f" in {space}" if space else ""))
    else:
        click.echo(f"{plural(len(reply.items), 'open item')}" + (f" in {space}" if space else ""))
        table(item_rows(reply.items, spaces=space is None))


def _close(context: Context, item_id: int, status: str, as_json: bool) -> None:
    reply = context.request(CloseItem(item_id=item_id,
                                      status="done" if status == "done" else "dropped"))
    if as_json:
        echo_json(reply.chain[-1])
    else:
        closed = reply.chain[-1]
        click.echo(f"{item_id} {status}: {closed.text} (now version {closed.id}; "
                   f"`braincue history {closed.id}`)")


def _close_command(name: str, status: str, doc: str) -> click.Command:
    """``braincue NAME ID``: close the open item ID as ``status``."""

    @click.command(name, help=doc)
    @click.argument("item_id", metavar="ID", type=int)
    @click.option("--json", "as_json", is_flag=True, help="Print the closed version as JSON.")
    @click.pass_obj
    def close(context: Context, item_id: int, as_json: bool) -> None:
        _close(context, item_id, status, as_json)

    return close


done = _close_command("done", "done",
                      "Mark the open commitment or task ID as done (kept in its history).")
drop = _close_command("drop", "dropped", "Drop the open commitment or task ID: no longer needed "
                      "(kept in its history).")


COMMANDS = (open_, done, drop)
