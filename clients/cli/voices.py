"""Named voices from the shell: `braincue voices list | show | name | merge | forget`. They
only speak the protocol.

The voices of a session are told apart as "Them 1", "Them 2", ...; naming one keeps its
voiceprint in the profile so that later sessions show its name, and renames its past turns.
A later voice is named only when it is surely that voice; when it only may be, `voices list`
offers the name as a question ("Sarah?") and naming it confirms it. Naming or confirming a
voice teaches its print. Nothing about a voice is kept across sessions unless it is named;
`forget` deletes it.
"""

from __future__ import annotations

from collections.abc import Sequence

import click

from clients.cli.context import Context
from clients.cli.output import echo_json, echo_reply
from daemon.ipc.client import Client
from daemon.ipc.protocol import (
    VoiceForget,
    VoiceMerge,
    VoiceName,
    VoiceReply,
    VoiceShow,
    VoicesList,
    VoicesReply,
)

json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON.")
# naming, merging and forgetting rewrite every turn, header and archive of the voice and embed
# them afresh: seconds for a few sessions, longer for many on a busy machine
RELABEL_TIMEOUT_S = 600.0


def voices_lines(reply: VoicesReply) -> list[str]:
    """The named voices, then the voices of sessions heard since the daemon started."""
    shown = f"{reply.state} ({reply.model_id})" if reply.model_id else reply.state
    lines = [f"voices: {shown}"]
    if reply.voices:
        lines.append("")
        rows: list[Sequence[str]] = [("ID", "NAME", "SESSIONS", "TURNS", "LEARNT FROM",
                                      "NAMED UNDER")]
        rows += [(str(v.id), v.name, str(v.sessions), str(v.turns), f"{v.seconds:.0f} s",
                  v.model_id) for v in reply.voices]
        lines += _table_lines(rows)
        if reply.note:
            lines += ["", f"note: {reply.note}"]
    else:
        lines.append("no named voices (`braincue voices name \"Them 1\" NAME` names one)")
    if reply.heard:
        lines += ["", "heard since the daemon started (kept in memory only):"]
        rows = [("SESSION", "VOICE", "IS", "SPEECH")]
        rows += [(str(h.session_id), h.label, h.name or (f"{h.suggestion}?" if h.suggestion
                                                          else "-"), f"{h.seconds:.0f} s")
                 for h in reply.heard]
        lines += _table_lines(rows)
        asked = [h for h in reply.heard if h.name is None and h.suggestion]
        if asked:
            h = asked[-1]
            lines += ["", f'"NAME?" may be that voice: `braincue voices name "{h.label}" '
                          f'{h.suggestion} --session {h.session_id}` confirms it']
    return lines


def _table_lines(rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
            for row in rows]


def _reply(context: Context, request: VoiceName | VoiceMerge | VoiceForget | VoiceShow,
           as_json: bool) -> None:
    with Client(context.profile, timeout=RELABEL_TIMEOUT_S) as client:
        reply: VoiceReply = client.request(request)
    if as_json:
        echo_json(reply)
    else:
        click.echo(reply.message)


@click.group()
def voices() -> None:
    """Who among "them" spoke: name a voice once, and later sessions show its name."""


@voices.command("list")
@json_option
@click.pass_obj
def voices_list(context: Context, as_json: bool) -> None:
    """The named voices, and the voices of the sessions heard since the daemon started."""
    echo_reply(context.request(VoicesList()), voices_lines, as_json)


@voices.command("show")
@click.argument("voice", metavar="NAME-OR-ID")
@json_option
@click.pass_obj
def voices_show(context: Context, voice: str, as_json: bool) -> None:
    """How much speech a named voice's print rests on, and when it was last heard."""
    _reply(context, VoiceShow(voice=voice), as_json)


@voices.command("name")
@click.argument("voice", metavar="LABEL-OR-ID")
@click.argument("name")
@click.option("--session", "session_id", type=int, default=None, metavar="ID",
              help="The session the label is from (default: the latest that has it).")
@json_option
@click.pass_obj
def voices_name(context: Context, voice: str, name: str, session_id: int | None,
                as_json: bool) -> None:
    """Name a session voice ("Them 2") or rename a named voice (its ID); past turns follow.
    Giving a session voice a known name (one offered as "NAME?") confirms it: that voice's
    print learns from it."""
    _reply(context, VoiceName(voice=voice, name=name, session_id=session_id), as_json)


@voices.command("merge")
@click.argument("keep", metavar="KEEP")
@click.argument("other", metavar="OTHER")
@json_option
@click.pass_obj
def voices_merge(context: Context, keep: str, other: str, as_json: bool) -> None:
    """OTHER (id or name) is the same person as KEEP: one voice, KEEP's name."""
    _reply(context, VoiceMerge(keep=keep, other=other), as_json)


@voices.command("forget")
@click.argument("voice", metavar="ID")
@json_option
@click.pass_obj
def voices_forget(context: Context, voice: str, as_json: bool) -> None:
    """Delete a voice's voiceprint and its name from every turn, header and archive."""
    _reply(context, VoiceForget(voice=voice), as_json)


COMMANDS = (voices,)
