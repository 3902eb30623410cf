"""What is remembered, from the shell: `braincue keep|discard|later ID`, `braincue history ID`,
`braincue memory list|approve|reject|edit|scope|archive|expire`. They only speak the protocol.

Keeping a session summarises and extracts it with the local language model, which takes a
while on a small CPU: a bar on stderr follows each stage (not with --json); the reply says what
was kept and, where a count is 0, why.
"""

from __future__ import annotations

import datetime as dt
import re
import time
from collections.abc import Sequence
from typing import Literal

import click

from clients.cli.context import Context
from clients.cli.output import echo_json, echo_reply, local_time, plural
from clients.cli.progress import request_with_progress
from daemon.errors import InvalidInput
from daemon.ipc.client import KEEP_TIMEOUT_S
from daemon.ipc.protocol import (
    AssertionInfo,
    ClosureInfo,
    History,
    MemoryApprove,
    MemoryArchive,
    MemoryEdit,
    MemoryExpire,
    MemoryList,
    MemoryListReply,
    MemoryReject,
    MemoryReply,
    MemoryScope,
    Remember,
    RememberReply,
    Request,
    RestatementInfo,
    SettingValue,
)

REVIEW_STATUSES = ("pending", "approved", "rejected", "archived")

json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON.")


# -- pure: what is printed -----------------------------------------------------------------------


def remember_lines(reply: RememberReply) -> list[str]:
    """What an answer did, then why anything is 0 and what failed."""
    where = f"in Space {reply.space!r}" if reply.space else "in no Space"
    if reply.answer == "discard":
        parts = [plural(n, kind.removesuffix("s")) for kind, n in reply.deleted.items() if n]
        lines = [f"session {reply.session_id} discarded"
                 + (f": deleted {', '.join(parts)}" if parts else "")]
    elif reply.answer == "later":
        lines = [f"session {reply.session_id} left undecided {where}"]
    else:
        lines = [f"session {reply.session_id} kept {where}"]
        lines.append("  archive: " + ("written" if reply.archived else "none"))
        new = plural(reply.assertions, "new assertion")
        if reply.superseded:
            new += f" ({reply.superseded} replacing an earlier one)"
        if reply.duplicates:
            new += f", {reply.duplicates} already known"
            if reply.restated:
                new += f" ({reply.restated} noted as said again here)"
        lines.append(f"  assertions: {new}")
        lines += stored_lines(reply)
        review = " (`braincue memory list --status pending`)" if reply.candidates else ""
        lines.append(f"  memories to review: {reply.candidates}{review}")
        if reply.redactions:
            lines.append(f"  redacted: {plural(reply.redactions, 'secret')}")
    lines += [f"note: {note}" for note in reply.notes]
    return lines


def stored_lines(reply: RememberReply) -> list[str]:
    """What a keep stored, by kind, and each new decision in one line."""
    if not reply.stored:
        return []
    kinds = sorted(reply.stored.items(), key=lambda item: (-item[1], item[0]))
    lines = ["  stored: " + ", ".join(plural(n, kind) for kind, n in kinds)]
    lines += [f"  decided: {one_line(text)}" for text in reply.decisions]
    return lines


def one_line(text: str, width: int = 100) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1].rstrip() + "…"


def assertion_details(a: AssertionInfo) -> list[str]:
    """The fields of an assertion beyond its text, one line each (none when it has none)."""
    lines = []
    if a.chosen:
        lines.append(f"chosen: {a.chosen}")
    if a.alternatives:
        lines.append(f"over: {'; '.join(a.alternatives)}")
    if a.reasoning:
        lines.append(f"because: {a.reasoning}")
    if a.owner or a.due:
        lines.append(f"owner: {a.owner or '-'}; due: {a.due or '-'}")
    return lines


def switch_lines(archive_enabled: bool, memory_enabled: bool) -> list[str]:
    """The two independent switches of what is remembered, side by side (independent)."""

    def state(on: bool) -> str:
        return "on " if on else "off"

    return [
        "what is remembered (two independent switches):",
        f"  session_archive_enabled  {state(archive_enabled)}  what a kept conversation WAS: "
        "a summary and its assertions, in its Space",
        f"  memory_enabled           {state(memory_enabled)}  standing claims about YOU, "
        "each reviewed (`braincue memory list`)",
    ]


def settings_switch_lines(values: dict[str, SettingValue]) -> list[str]:
    """:func:`switch_lines` from the daemon's settings (empty if it has no such settings)."""
    archive, memory = values.get("session_archive_enabled"), values.get("memory_enabled")
    if not isinstance(archive, bool) or not isinstance(memory, bool):
        return []
    return switch_lines(archive, memory)


def _day(timestamp: float | None) -> str:
    return "-" if timestamp is None else f"{dt.datetime.fromtimestamp(timestamp):%Y-%m-%d}"


def memory_groups(memories: Sequence[AssertionInfo]) -> list[tuple[str, list[AssertionInfo]]]:
    """Memories grouped by Space (by name), the profile-wide ones last."""
    groups: dict[str | None, list[AssertionInfo]] = {}
    for memory in memories:
        groups.setdefault(memory.space, []).append(memory)
    named = sorted((k for k in groups if k is not None), key=str.casefold)
    ordered = [(f"Space {name!r}", groups[name]) for name in named]
    if None in groups:
        ordered.append(("Profile-wide (recalled in every Space)", groups[None]))
    return ordered


def memory_rows(memories: Sequence[AssertionInfo], now: float) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = [("ID", "STATUS", "KIND", "SAID", "EXPIRES", "TEXT")]
    for m in memories:
        expires = _day(m.expires_at)
        if m.expires_at is not None and m.expires_at <= now:
            expires = "expired"
        rows.append((str(m.id), m.review_status, m.kind, _day(m.occurred_at), expires, m.text))
    return rows


def memory_line(verb: str, memory: AssertionInfo) -> str:
    where = f"Space {memory.space!r}" if memory.space else "profile-wide"
    return f"memory {memory.id} {verb} ({memory.review_status}, {where}): {memory.text}"


def history_lines(chain: Sequence[AssertionInfo],
                  restatements: Sequence[RestatementInfo] = (),
                  closures: Sequence[ClosureInfo] = ()) -> list[str]:
    """Every version, oldest first, each with its source, the sessions that said it again and,
    for the version that closed an open item, done or dropped and the turn that said so."""
    lines = []
    closed = {c.assertion_id: c for c in closures}
    for a in chain:
        state = ("current" if a.invalidated_at is None
                 else f"until {local_time(a.invalidated_at)}"
                 + (f", superseded by {a.superseded_by}" if a.superseded_by else ""))
        where = a.space or "profile-wide"
        lines.append(f"{a.id}  {local_time(a.occurred_at)}  {a.kind}  [{where}; {state}]")
        lines.append(f"    {a.text}")
        lines += [f"    {line}" for line in assertion_details(a)]
        source = a.source + (f", session {a.session_id}" if a.session_id else "")
        lines.append(f"    source: {source}")
        if a.id in closed:
            closure = closed[a.id]
            said = (f": {closure.speaker}: “{closure.text}”" if closure.text
                    else " by hand" if a.source == "user" else "")
            lines.append(f"    {closure.status}{said}")
        for r in restatements:
            if r.assertion_id == a.id:
                title = r.session_title or "untitled session"
                lines.append(f"    also said in: {title} · {local_time(r.occurred_at)}"
                             f" (session {r.session_id})")
    return lines


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([mhdw])\s*$")
_UNIT_S = {"m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_expiry(text: str, now: float) -> float | None:
    """``never``, a duration from now (``90m``, ``12h``, ``30d``, ``6w``) or a local date
    (``2026-12-31``: the end of that day) as unix time (None: never)."""
    if text.strip().lower() == "never":
        return None
    match = _DURATION.match(text.lower())
    if match:
        return now + float(match.group(1)) * _UNIT_S[match.group(2)]
    try:
        day = dt.datetime.strptime(text.strip(), "%Y-%m-%d")
    except ValueError:
        raise InvalidInput(
            f"WHEN: cannot read {text!r}",
            fix="use never, a duration like 30d, 12h, 6w, or a date like 2026-12-31",
        ) from None
    return (day + dt.timedelta(days=1)).timestamp()


# -- commands ----------------------------------------------------------------------------------


def _request_remember(context: Context, request: Remember, as_json: bool) -> None:
    if request.answer == "keep":
        click.echo(f"keeping session {request.session_id} (summarising with the local "
                   "language model can take a few minutes)…", err=True)
    reply = request_with_progress(context.profile, request, timeout=KEEP_TIMEOUT_S,
                                  show=request.answer == "keep" and not as_json)
    echo_reply(reply, remember_lines, as_json)


def _filing(space: str | None, no_space: bool) -> tuple[str | None, bool]:
    if space is not None and no_space:
        raise click.UsageError("give --space or --no-space, not both")
    return space, no_space


_space_option = click.option(
    "--space", default=None, metavar="NAME",
    help="File the session into this Space first (default: where it ran).")
_no_space_option = click.option(
    "--no-space", is_flag=True,
    help="File it out of every Space: nothing is summarised or remembered.")


def _filing_command(answer: Literal["keep", "later"], doc: str) -> click.Command:
    """``braincue ANSWER ID [--space S | --no-space]``: answer the keep question for session
    ID, filing it first."""

    @click.command(answer, help=doc)
    @click.argument("session_id", metavar="ID", type=int)
    @_space_option
    @_no_space_option
    @json_option
    @click.pass_obj
    def answer_(context: Context, session_id: int, space: str | None, no_space: bool,
                as_json: bool) -> None:
        space, no_space = _filing(space, no_space)
        _request_remember(context, Remember(session_id=session_id, answer=answer, space=space,
                                            no_space=no_space), as_json)

    return answer_


keep = _filing_command(
    "keep", "Keep session ID: archive it, extract what was decided and said, and propose "
    "memories about you for review (each gated by its switch; only sessions filed in a Space).")
later = _filing_command(
    "later", "Decide about session ID later: nothing is remembered until then.")


@click.command()
@click.argument("session_id", metavar="ID", type=int)
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@json_option
@click.pass_obj
def discard(context: Context, session_id: int, yes: bool, as_json: bool) -> None:
    """Discard session ID: delete it with its transcript, archive, assertions and pending
    memory suggestions (memories you already reviewed stay)."""
    if not yes:
        click.confirm(f"Delete session {session_id} and everything kept from it?", abort=True)
    _request_remember(context, Remember(session_id=session_id, answer="discard"), as_json)


@click.command()
@click.argument("assertion_id", metavar="ID", type=int)
@json_option
@click.pass_obj
def history(context: Context, assertion_id: int, as_json: bool) -> None:
    """The history of assertion ID: every version, oldest first, the current one last, each
    with the later sessions that said it again (--json: the versions only)."""
    reply = context.request(History(assertion_id=assertion_id))
    if as_json:
        echo_json(reply.chain)
    else:
        click.echo("\n".join(history_lines(reply.chain, reply.restatements, reply.closures)))


@click.group()
def memory() -> None:
    """Memories about you, proposed from kept sessions: review them (nothing is recalled
    before you approve it, and nothing at all while memory_enabled is off)."""


@memory.command("list")
@click.option("--space", default=None, metavar="NAME", help="Only this Space's memories.")
@click.option("--profile", "profile_wide", is_flag=True,
              help="Only the profile-wide memories.")
@click.option("--status", type=click.Choice(REVIEW_STATUSES), default=None,
              help="Only memories with this status.")
@json_option
@click.pass_obj
def memory_list(context: Context, space: str | None, profile_wide: bool, status: str | None,
                as_json: bool) -> None:
    """List memories grouped by Space, the profile-wide ones last."""
    if space is not None and profile_wide:
        raise click.UsageError("give --space or --profile, not both")
    reply = context.request(MemoryList(space=space, profile_wide=profile_wide,
                                       status=status or ""))  # type: ignore[arg-type]
    echo_reply(reply, lambda listed: memory_list_lines(listed, time.time()), as_json)


def memory_list_lines(reply: MemoryListReply, now: float) -> list[str]:
    lines = switch_lines(reply.session_archive_enabled, reply.memory_enabled)
    if not reply.memory_enabled:
        lines.append("memory is off: none of these is recalled, and none is deleted "
                     "(`braincue settings set memory_enabled true`)")
    if not reply.memories:
        return [*lines, "", "no memories"]
    for title, group in memory_groups(reply.memories):
        lines += ["", title]
        rows = memory_rows(group, now)
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
        lines += ["  " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
                  for row in rows]
    return lines


def _review(context: Context, request: Request[MemoryReply], verb: str) -> None:
    reply = context.request(request)
    click.echo(memory_line(verb, reply.memory))


def _review_command(name: str, message: type[MemoryApprove | MemoryReject | MemoryArchive],
                    verb: str, doc: str) -> None:
    """``braincue memory NAME ID``: send ``message`` for memory ID and show it ``verb``."""

    @memory.command(name, help=doc)
    @click.argument("memory_id", metavar="ID", type=int)
    @click.pass_obj
    def review(context: Context, memory_id: int) -> None:
        _review(context, message(memory_id=memory_id), verb)


_review_command("approve", MemoryApprove, "approved",
                "Approve memory ID: it is recalled from now on (while memory_enabled is on).")
_review_command("reject", MemoryReject, "rejected",
                "Reject memory ID: never recalled, and not proposed again.")
_review_command("archive", MemoryArchive, "archived",
                "Archive memory ID: kept, but no longer recalled.")


@memory.command("edit")
@click.argument("memory_id", metavar="ID", type=int)
@click.argument("text")
@click.pass_obj
def memory_edit(context: Context, memory_id: int, text: str) -> None:
    """Rewrite memory ID as TEXT (recall follows the new words)."""
    _review(context, MemoryEdit(memory_id=memory_id, text=text), "edited")


@memory.command("scope")
@click.argument("memory_id", metavar="ID", type=int)
@click.option("--space", default=None, metavar="NAME", help="Recall it in this Space only.")
@click.option("--profile", "profile_wide", is_flag=True, help="Recall it in every Space.")
@click.pass_obj
def memory_scope(context: Context, memory_id: int, space: str | None,
                 profile_wide: bool) -> None:
    """Change where memory ID is recalled."""
    if (space is None) == (not profile_wide):
        raise click.UsageError("give --space NAME or --profile")
    _review(context, MemoryScope(memory_id=memory_id, space=space, profile=profile_wide),
            "rescoped")


@memory.command("expire")
@click.argument("memory_id", metavar="ID", type=int)
@click.argument("when", metavar="WHEN")
@click.pass_obj
def memory_expire(context: Context, memory_id: int, when: str) -> None:
    """Stop recalling memory ID after WHEN: a duration (30d, 12h, 6w), a date (2026-12-31,
    the end of that day) or never."""
    expires_at = parse_expiry(when, time.time())
    reply = context.request(MemoryExpire(memory_id=memory_id, expires_at=expires_at))
    until = "never expires" if expires_at is None else f"expires {local_time(expires_at)}"
    click.echo(memory_line(until, reply.memory))


COMMANDS = (keep, discard, later, history, memory)
