"""The memory from the shell: transcripts, sessions, exports, documents and Spaces.

`braincue import-transcript`, `sessions`, `show`, `export`, `docs ...`, `spaces ...`. They only
speak the protocol: files are read here and sent as their bytes, the daemon validates and
stores them, and what is printed comes from its replies. An import or a document shows how far
embedding got on stderr (not with --json).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import click

from clients.cli.context import Context
from clients.cli.memory import assertion_details
from clients.cli.output import (
    deleted,
    echo_json,
    echo_listing,
    local_time,
    offset,
    plural,
    read_for_daemon,
)
from clients.cli.progress import IMPORT_TIMEOUT_S, request_with_progress
from daemon.errors import InvalidInput
from daemon.ipc.client import Client
from daemon.ipc.protocol import (
    ACTIVITIES,
    EXPORT_FORMATS,
    AddDocument,
    AddSpace,
    AssertionInfo,
    ExportSession,
    ImportTranscript,
    ListDocuments,
    ListSessions,
    ListSpaces,
    RemoveDocument,
    RemoveSpace,
    SessionInfo,
    SessionReply,
    SetSpace,
    ShowSession,
    SpaceInfo,
    TurnInfo,
)

STORE_TIMEOUT_S = 900.0  # removing a large Space or document deletes many rows and vectors

space_option = click.option("--space", "space", metavar="NAME", default=None,
                            help="The Space (see `braincue spaces list`).")
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON.")


def _note(note: str) -> None:
    if note:
        click.echo(f"note: {note}", err=True)


def _echo_stored(reply: object, note: str, line: str, as_json: bool) -> None:
    """Print what an import stored: ``reply`` as JSON, or ``note`` (if any) and ``line``."""
    if as_json:
        echo_json(reply)
        return
    _note(note)
    click.echo(line)


# -- transcripts and sessions ------------------------------------------------------------------


@click.command("import-transcript")
@click.argument("file", type=click.Path(path_type=Path, dir_okay=False))
@space_option
@json_option
@click.pass_obj
def import_transcript(context: Context, file: Path, space: str | None, as_json: bool) -> None:
    """Make a session from a JSON transcript FILE.

    \b
    {"title": "Atlas sync",
     "started_at": "2026-07-28T14:05:00+02:00",  (no offset: this machine's local time)
     "activity": "meeting",                       (optional; meeting, project, job, ...)
     "participants": ["me", "Sarah"],             (optional; default: the speakers)
     "turns": [{"speaker": "me", "text": "Shall we ship?", "t": 0.0,
                "end": 2.5, "ref": "utt-1"}, ...]}  (t, end: seconds from started_at;
                                                     end and ref optional)

    Unknown fields are ignored. `braincue export ID --format json` writes this format.
    """
    content = read_for_daemon(file, "split it into several transcripts")
    reply = request_with_progress(
        context.profile, ImportTranscript(content=content, filename=file.name, space=space),
        timeout=IMPORT_TIMEOUT_S, show=not as_json)
    session = reply.session
    where = f" into Space {session.space!r}" if session.space else ""
    _echo_stored(reply, reply.note, f"imported session {session.id}: {session.title!r}{where} "
                 f"({plural(session.turns, 'turn')}, {plural(reply.chunks, 'chunk')})", as_json)


@click.command()
@space_option
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Only the newest N.")
@json_option
@click.pass_obj
def sessions(context: Context, space: str | None, limit: int | None, as_json: bool) -> None:
    """List sessions, newest first."""
    found = context.request(ListSessions(space=space, limit=limit)).sessions
    echo_listing(found, as_json, "no sessions",
                 ("ID", "STARTED", "STATUS", "TURNS", "HEARD", "SPACE", "TITLE"),
                 lambda s: (str(s.id), local_time(s.started_at), status_text(s), str(s.turns),
                            heard_text(s), s.space or "-", s.title))
    unfinished = [s for s in found if s.keep_status in ("pending", "running", "failed")]
    if unfinished:
        click.echo()
        for s in unfinished:
            click.echo(f"session {s.id}: {keep_text(s)}")
    missing = [s for s in found if s.receipt is not None and s.receipt.gaps]
    if missing:
        click.echo()
        for s in missing:
            click.echo(f"session {s.id}: {s.receipt.text if s.receipt else ''}")


def heard_text(session: SessionInfo) -> str:
    """"41:20 of 41:20" (the least heard of its sources), with "+ gaps" when any is named
    below the table; "-" for a session with no receipt (imported)."""
    receipt = session.receipt
    if receipt is None:
        return "-"
    heard = min(receipt.heard_s.values(), default=0.0)
    return (f"{offset(heard)} of {offset(receipt.length_s)}"
            + (" + gaps" if receipt.gaps else ""))


def status_text(session: SessionInfo) -> str:
    """A session's status, with where its archive stands when a keep is not done."""
    if session.status == "kept" and session.keep_status in ("pending", "running", "failed"):
        return f"kept, archive {session.keep_status}"
    return session.status


def keep_text(session: SessionInfo) -> str:
    """Where the archive of a kept session stands, in a sentence (empty when it is done or
    none was needed)."""
    if session.keep_status == "pending":
        return ("archive pending: the keep waits for its turn and is finished when the daemon "
                "runs, without asking again")
    if session.keep_status == "running":
        return ("archive being written now"
                + (f" ({session.keep_reason})" if session.keep_reason else "")
                + " (`braincue show` once it is done)")
    if session.keep_status == "failed":
        return (f"archive failed: {session.keep_reason or 'no reason given'} "
                f"(`braincue keep {session.id}` tries again)")
    return ""


@click.command()
@click.argument("session_id", metavar="ID", type=int)
@json_option
@click.pass_obj
def show(context: Context, session_id: int, as_json: bool) -> None:
    """Show a session: its details, its archive and what was extracted from it (when it was
    kept), and its transcript."""
    reply = context.request(ShowSession(session_id=session_id))
    if as_json:
        echo_json({"session": reply.session, "archive": reply.archive,
                   "assertions": reply.assertions, "turns": reply.turns})
        return
    click.echo("\n".join(show_lines(reply)))


def show_lines(reply: SessionReply) -> list[str]:
    """What `braincue show` prints, section by section (each a function to extend)."""
    sections = [[session_summary(reply.session)], archive_lines(reply),
                assertion_lines(reply.assertions, reply.session.started_at),
                transcript_lines(reply.turns)]
    lines: list[str] = []
    for section in sections:
        if section:
            lines += ([""] if lines else []) + section
    return lines


def archive_lines(reply: SessionReply) -> list[str]:
    state = keep_text(reply.session)
    if reply.archive is None:
        return [state] if state else []
    return ["Archive" + (f" ({state})" if state else ""), "", reply.archive]


def assertion_lines(assertions: Sequence[AssertionInfo], started_at: float) -> list[str]:
    """Each assertion: id, kind, where it was said (time into the session) and its text, then
    its details; a memory about you says its review status, a replaced one by what."""
    if not assertions:
        return []
    lines = [f"Assertions ({len(assertions)})"]
    for a in assertions:
        notes = []
        if a.about_person:
            notes.append(f"memory about you, {a.review_status}")
        if a.invalidated_at is not None:
            notes.append(f"superseded by {a.superseded_by}" if a.superseded_by
                         else "no longer current")
        note = f" ({'; '.join(notes)})" if notes else ""
        lines.append(f"  {a.id}  {a.kind}  said at [{offset(a.occurred_at - started_at)}]"
                     f"{note}: {a.text}")
        lines += [f"      {line}" for line in assertion_details(a)]
    return lines


def transcript_lines(turns: Sequence[TurnInfo]) -> list[str]:
    if not turns:
        return []
    lines = ["Transcript"]
    for turn in turns:
        lines.append(f"[{offset(turn.start)}] {turn.speaker}: {turn.text}")
        if turn.masked:  # the words as said above; what search, ask and MCP show instead
            lines.append(f"    (a secret here is masked in search and ask: {turn.masked})")
    return lines


def session_summary(session: SessionInfo) -> str:
    facts = [
        f"session {session.id}: {session.title or '(untitled)'}",
        f"started {local_time(session.started_at)}",
        f"{session.activity}, {session.status}" + (", practice" if session.practice else ""),
        f"Space: {session.space or '-'}",
    ]
    if session.participants:
        facts.append("participants: " + ", ".join(session.participants))
    if session.receipt is not None:
        facts.append(session.receipt.text)
    return "\n".join(facts)


@click.command()
@click.argument("session_id", metavar="ID", type=int)
@click.option("--format", "fmt", type=click.Choice(EXPORT_FORMATS), required=True,
              help="md: readable Markdown; json: the import format; srt/vtt: subtitles.")
@click.option("-o", "--output", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Write to this file instead of standard output.")
@click.pass_obj
def export(context: Context, session_id: int, fmt: str, output: Path | None) -> None:
    """Export a session's transcript."""
    text = context.request(ExportSession(session_id=session_id, format=fmt)).text
    if output is None:
        click.echo(text, nl=False)
        return
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as e:
        raise InvalidInput(f"cannot write {output}: {e.strerror or e}",
                           fix="check the directory exists and is writable") from e
    click.echo(f"wrote {output}", err=True)


# -- documents ---------------------------------------------------------------------------------


@click.group()
def docs() -> None:
    """The documents a Space starts from: notes, a résumé, a job description, project docs."""


@docs.command("add")
@click.argument("file", type=click.Path(path_type=Path, dir_okay=False))
@space_option
@click.option("--title", default=None, help="Title shown in headers (default: the file name).")
@json_option
@click.pass_obj
def docs_add(context: Context, file: Path, space: str | None, title: str | None,
             as_json: bool) -> None:
    """Add a .txt, .md or .pdf FILE to a Space (or profile-wide without --space)."""
    content = read_for_daemon(
        file, "split it, or add its text instead (a PDF's text is much smaller)")
    request = AddDocument(filename=file.name, content=content, space=space, title=title,
                          modified_at=file.stat().st_mtime)
    reply = request_with_progress(context.profile, request, timeout=IMPORT_TIMEOUT_S,
                                  show=not as_json)
    document = reply.document
    where = f" to Space {document.space!r}" if document.space else " profile-wide"
    _echo_stored(reply, reply.note, f"added document {document.id}: {document.title!r}{where} "
                 f"({plural(document.chars, 'character')}, {plural(document.chunks, 'chunk')})",
                 as_json)


@docs.command("list")
@space_option
@json_option
@click.pass_obj
def docs_list(context: Context, space: str | None, as_json: bool) -> None:
    """List documents, newest first."""
    found = context.request(ListDocuments(space=space)).documents
    echo_listing(found, as_json, "no documents",
                 ("ID", "ADDED", "CHUNKS", "SPACE", "TITLE", "FILE"),
                 lambda d: (str(d.id), local_time(d.added_at), str(d.chunks), d.space or "-",
                            d.title, d.filename))


@docs.command("rm")
@click.argument("document_id", metavar="ID", type=int)
@click.pass_obj
def docs_rm(context: Context, document_id: int) -> None:
    """Remove a document with its chunks and vectors."""
    reply = context.request(RemoveDocument(document_id=document_id), timeout=STORE_TIMEOUT_S)
    click.echo(deleted(f"document {document_id} {reply.name!r}", reply.deleted))


# -- Spaces ------------------------------------------------------------------------------------


@click.group()
def spaces() -> None:
    """Spaces: what is recorded in a Space is recalled in it and nowhere else."""


@spaces.command("list")
@json_option
@click.pass_obj
def spaces_list(context: Context, as_json: bool) -> None:
    """List Spaces."""
    found = context.request(ListSpaces()).spaces
    echo_listing(found, as_json, "no Spaces: add one with `braincue spaces add NAME`",
                 ("ID", "NAME", "ACTIVITY", "MEMORY", "SESSIONS", "DOCUMENTS"),
                 lambda s: (str(s.id), s.name, s.activity, "on" if s.memory_enabled else "off",
                            str(s.sessions), str(s.documents)))


ACTIVITY_HELP = "What happens in it; decides the format of its session archives."


@spaces.command("add")
@click.argument("name")
@click.option("--activity", type=click.Choice(ACTIVITIES), default="meeting", show_default=True,
              help=ACTIVITY_HELP)
@click.option("--no-memory", is_flag=True,
              help="Opt this Space out: its sessions are never summarised or remembered.")
@click.pass_obj
def spaces_add(context: Context, name: str, activity: str, no_memory: bool) -> None:
    """Add a Space called NAME."""
    space = context.request(AddSpace(name=name, activity=activity,
                                     memory_enabled=not no_memory)).space
    click.echo(f"added Space {space.id}: {describe(space)}")


@spaces.command("set")
@click.argument("name")
@click.option("--activity", type=click.Choice(ACTIVITIES), default=None, help=ACTIVITY_HELP)
@click.option("--memory/--no-memory", "memory", default=None,
              help="Let its kept sessions be summarised and remembered, or opt it out.")
@click.option("--rename", metavar="NEW_NAME", default=None, help="Give it another name.")
@click.pass_obj
def spaces_set(context: Context, name: str, activity: str | None, memory: bool | None,
               rename: str | None) -> None:
    """Change the Space NAME: its activity, whether it is remembered, its name."""
    if activity is None and memory is None and rename is None:
        raise click.UsageError("give --activity, --memory/--no-memory or --rename")
    space = context.request(SetSpace(name=name, rename=rename, activity=activity,
                                     memory_enabled=memory)).space
    click.echo(f"Space {space.id}: {describe(space)}")


def describe(space: SpaceInfo) -> str:
    memory = "" if space.memory_enabled else ", memory off"
    return f"{space.name!r} ({space.activity}{memory})"


@spaces.command("rm")
@click.argument("name")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@click.pass_obj
def spaces_rm(context: Context, name: str, yes: bool) -> None:
    """Delete the Space NAME and everything recorded in it (its sessions, documents, archives
    and memory). Profile-wide memory stays."""
    with Client(context.profile) as client:
        if not yes:
            known = {s.name.casefold(): s for s in client.request(ListSpaces()).spaces}
            space = known.get(name.casefold())
            if space is not None:  # else the daemon says it does not exist
                held = f"{plural(space.sessions, 'session')}, {plural(space.documents, 'document')}"
                click.confirm(f"Delete Space {space.name!r} and everything in it ({held})?",
                              abort=True)
        reply = client.request(RemoveSpace(name=name), timeout=STORE_TIMEOUT_S)
    click.echo(deleted(f"Space {reply.name!r}", reply.deleted))


COMMANDS = (import_transcript, sessions, show, export, docs, spaces)
