"""The memory store from the shell: transcripts, sessions, exports, documents and Spaces.

`braincue import-transcript`, `sessions`, `show`, `export`, `docs ...`, `spaces ...`. Until the
daemon speaks its protocol these open the profile's store directly (its writes queue behind a
running daemon's: SQLite's busy timeout), through the :class:`~daemon.store.store.Store` API only.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import click
import msgspec

from daemon.errors import InvalidInput, ModelNotInstalled
from daemon.store.chunking import format_offset
from daemon.store.export import FORMATS, render
from daemon.store.records import ACTIVITIES, Deleted, NewTurn, Session, Space
from daemon.store.store import Store
from daemon.store.transcript import parse_transcript

if TYPE_CHECKING:
    from clients.shell import Context
    from daemon.config import Config
    from daemon.llm.embed import Embedder


@contextmanager
def open_store(config: Config, *, embed: bool = False) -> Iterator[Store]:
    """The profile's store; with ``embed``, with the installed embedding model if there is one
    (without it text is stored for full-text search and vectors follow once a model is)."""
    embedder = _embedder(config) if embed else None
    try:
        store = Store.open(config.paths, embedder)
        try:
            if embedder is not None:
                caught_up = store.embed_pending()
                if caught_up:
                    click.echo(f"embedded {caught_up} item(s) stored without vectors", err=True)
            yield store
        finally:
            store.close()
    finally:
        if embedder is not None:
            embedder.close()


def _embedder(config: Config) -> Embedder | None:
    from daemon.llm.embed import LlamaEmbedder
    from daemon.models.registry import resolve_model

    settings = config.settings
    try:
        path = resolve_model("embed", settings.embed_model, config.paths.models_dir)
    except ModelNotInstalled as e:
        click.echo(
            f"note: {e.message}: stored for full-text search now; vectors are added once an "
            "embedding model is installed (`braincue models install`)",
            err=True,
        )
        return None
    return LlamaEmbedder(path, threads=settings.llm_threads, batch=settings.embed_batch)


def _space_id(store: Store, name: str | None) -> int | None:
    return None if name is None else store.get_space(name).id


def _local(timestamp: float) -> str:
    return f"{dt.datetime.fromtimestamp(timestamp):%Y-%m-%d %H:%M}"


def _table(rows: Sequence[Sequence[str]]) -> None:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        click.echo("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())


def _json(value: object) -> None:
    click.echo(msgspec.json.format(msgspec.json.encode(value), indent=2).decode())


def _deleted(what: str, deleted: Deleted) -> str:
    counts = [_count(n, name.removesuffix("s"))
              for name, n in msgspec.structs.asdict(deleted).items() if n]
    return f"deleted {what}" + (f" ({', '.join(counts)})" if counts else "")


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


space_option = click.option("--space", "space", metavar="NAME", default=None,
                            help="The Space (see `braincue spaces list`).")
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON.")


# -- transcripts and sessions ------------------------------------------------------------------


@click.command("import-transcript")
@click.argument("file", type=click.Path(path_type=Path, dir_okay=False))
@space_option
@click.pass_obj
def import_transcript(context: Context, file: Path, space: str | None) -> None:
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
    try:
        data = file.read_bytes()
    except OSError as e:
        raise InvalidInput(f"cannot read {file}: {e.strerror or e}",
                           fix="check the path and its permissions") from e
    transcript = parse_transcript(data)
    with open_store(context.config, embed=True) as store:
        filed = store.get_space(space) if space is not None else None
        session = store.create_session(
            space_id=filed.id if filed else None,
            activity=transcript.activity,
            title=transcript.title,
            started_at=transcript.started_at.timestamp(),
            participants=transcript.participants,
        )
        try:
            store.append_turns(session.id, [
                NewTurn(speaker=t.speaker, text=t.text, start=t.t, end=t.end, ref=t.ref,
                        source="import")
                for t in transcript.turns
            ])
            last = max(t.t if t.end is None else t.end for t in transcript.turns)
            store.end_session(session.id, ended_at=session.started_at + last)
        except BaseException:
            store.delete_session(session.id)  # no half-imported session is left behind
            raise
        chunks = store.chunks(session_id=session.id)
    where = f" into Space {filed.name!r}" if filed else ""
    click.echo(f"imported session {session.id}: {session.title!r}{where} "
               f"({_count(len(transcript.turns), 'turn')}, {_count(len(chunks), 'chunk')})")


@click.command()
@space_option
@json_option
@click.pass_obj
def sessions(context: Context, space: str | None, as_json: bool) -> None:
    """List sessions, newest first."""
    with open_store(context.config) as store:
        found = store.list_sessions(space_id=_space_id(store, space))
        names = {s.id: s.name for s in store.list_spaces()}
    if as_json:
        _json(found)
        return
    if not found:
        click.echo("no sessions")
        return
    rows = [("ID", "STARTED", "STATUS", "TURNS", "SPACE", "TITLE")]
    rows += [
        (str(s.id), _local(s.started_at), s.status, str(s.turn_count),
         names.get(s.space_id, "-") if s.space_id is not None else "-", s.title)
        for s in found
    ]
    _table(rows)


@click.command()
@click.argument("session_id", metavar="ID", type=int)
@json_option
@click.pass_obj
def show(context: Context, session_id: int, as_json: bool) -> None:
    """Show a session and its transcript."""
    with open_store(context.config) as store:
        session = store.get_session(session_id)
        turns = store.turns(session_id)
        space = store.get_space(session.space_id).name if session.space_id is not None else None
    if as_json:
        _json({"session": session, "space": space, "turns": turns})
        return
    click.echo(_session_summary(session, space))
    click.echo()
    for turn in turns:
        click.echo(f"[{format_offset(turn.start)}] {turn.speaker}: {turn.text}")


def _session_summary(session: Session, space: str | None) -> str:
    facts = [
        f"session {session.id}: {session.title or '(untitled)'}",
        f"started {_local(session.started_at)}",
        f"{session.activity}, {session.status}" + (", practice" if session.practice else ""),
        f"Space: {space or '-'}",
    ]
    if session.participants:
        facts.append("participants: " + ", ".join(session.participants))
    return "\n".join(facts)


@click.command()
@click.argument("session_id", metavar="ID", type=int)
@click.option("--format", "fmt", type=click.Choice(FORMATS), required=True,
              help="md: readable Markdown; json: the import format; srt/vtt: subtitles.")
@click.option("-o", "--output", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Write to this file instead of standard output.")
@click.pass_obj
def export(context: Context, session_id: int, fmt: str, output: Path | None) -> None:
    """Export a session's transcript."""
    with open_store(context.config) as store:
        text = render(fmt, store.get_session(session_id), store.turns(session_id))
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
@click.pass_obj
def docs_add(context: Context, file: Path, space: str | None, title: str | None) -> None:
    """Add a .txt, .md or .pdf FILE to a Space (or profile-wide without --space)."""
    with open_store(context.config, embed=True) as store:
        filed = store.get_space(space) if space is not None else None
        document = store.add_document(file, space_id=filed.id if filed else None, title=title)
    where = f" to Space {filed.name!r}" if filed else " profile-wide"
    click.echo(f"added document {document.id}: {document.title!r}{where} "
               f"({_count(document.chars, 'character')}, {_count(document.chunk_count, 'chunk')})")


@docs.command("list")
@space_option
@json_option
@click.pass_obj
def docs_list(context: Context, space: str | None, as_json: bool) -> None:
    """List documents, newest first."""
    with open_store(context.config) as store:
        found = store.list_documents(space_id=_space_id(store, space))
        names = {s.id: s.name for s in store.list_spaces()}
    if as_json:
        _json(found)
        return
    if not found:
        click.echo("no documents")
        return
    rows = [("ID", "ADDED", "CHUNKS", "SPACE", "TITLE", "FILE")]
    rows += [
        (str(d.id), _local(d.added_at), str(d.chunk_count),
         names.get(d.space_id, "-") if d.space_id is not None else "-", d.title, d.filename)
        for d in found
    ]
    _table(rows)


@docs.command("rm")
@click.argument("document_id", metavar="ID", type=int)
@click.pass_obj
def docs_rm(context: Context, document_id: int) -> None:
    """Remove a document with its chunks and vectors."""
    with open_store(context.config) as store:
        title = store.get_document(document_id).title
        deleted = store.delete_document(document_id)
    click.echo(_deleted(f"document {document_id} {title!r}", deleted))


# -- Spaces ------------------------------------------------------------------------------------


@click.group()
def spaces() -> None:
    """Spaces: what is recorded in a Space is recalled in it and nowhere else."""


@spaces.command("list")
@json_option
@click.pass_obj
def spaces_list(context: Context, as_json: bool) -> None:
    """List Spaces."""
    with open_store(context.config) as store:
        found = store.list_spaces()
    if as_json:
        _json(found)
        return
    if not found:
        click.echo("no Spaces: add one with `braincue spaces add NAME`")
        return
    rows = [("ID", "NAME", "ACTIVITY", "MEMORY")]
    rows += [(str(s.id), s.name, s.activity, "on" if s.memory_enabled else "off") for s in found]
    _table(rows)


@spaces.command("add")
@click.argument("name")
@click.option("--activity", type=click.Choice(ACTIVITIES), default="meeting", show_default=True,
              help="What happens in it; decides the format of its session archives.")
@click.option("--no-memory", is_flag=True,
              help="Opt this Space out: its sessions are never summarised or remembered.")
@click.pass_obj
def spaces_add(context: Context, name: str, activity: str, no_memory: bool) -> None:
    """Add a Space called NAME."""
    with open_store(context.config) as store:
        space = store.create_space(name, activity=activity, memory_enabled=not no_memory)
    click.echo(f"added Space {space.id}: {_describe(space)}")


def _describe(space: Space) -> str:
    memory = "" if space.memory_enabled else ", memory off"
    return f"{space.name!r} ({space.activity}{memory})"


@spaces.command("rm")
@click.argument("name")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@click.pass_obj
def spaces_rm(context: Context, name: str, yes: bool) -> None:
    """Delete the Space NAME and everything recorded in it (its sessions, documents, archives
    and memory). Profile-wide memory stays."""
    with open_store(context.config) as store:
        space = store.get_space(name)
        if not yes:
            held = (f"{len(store.list_sessions(space_id=space.id))} sessions, "
                    f"{len(store.list_documents(space_id=space.id))} documents")
            click.confirm(f"Delete Space {space.name!r} and everything in it ({held})?",
                          abort=True)
        deleted = store.delete_space(space.id)
    click.echo(_deleted(f"Space {space.name!r}", deleted))


COMMANDS = (import_transcript, sessions, show, export, docs, spaces)
