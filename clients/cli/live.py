"""Sessions from the shell: `braincue start`, `braincue stop`, `braincue import AUDIO`.

They only speak the protocol: the daemon captures, transcribes and stores.
"""

from __future__ import annotations

import datetime as dt
import uuid
from pathlib import Path

import click
import msgspec

from clients.cli.context import Context
from clients.cli.items import carried_lines
from clients.cli.progress import IMPORT_TIMEOUT_S, request_watching
from daemon.ipc.client import Client
from daemon.ipc.protocol import (
    ACTIVITIES,
    Event,
    ImportAudio,
    ImportAudioReply,
    ImportProgress,
    Reply,
    Start,
    Stop,
)

STOP_TIMEOUT_S = 120.0  # a stop first waits for transcription to catch up
DATE_FORMATS = ["%Y-%m-%d", "%Y-%m-%d %H:%M", "%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M:%S"]


def _echo_json(reply: Reply) -> None:
    click.echo(msgspec.json.encode(reply).decode())


def format_duration(seconds: float) -> str:
    """``42 s``, ``12 min``, ``1 h 05 min``."""
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes = round(seconds / 60)
    return f"{minutes} min" if minutes < 60 else f"{minutes // 60} h {minutes % 60:02d} min"


_space_option = click.option(
    "--space", default=None,
    help="The Space to file the session into; without one nothing is summarised or remembered.")
_activity_option = click.option(
    "--activity", type=click.Choice(ACTIVITIES), default=None,
    help="What kind of conversation (default: the Space's kind, else meeting); "
         "job needs a --space.")
_title_option = click.option("--title", default="", help="A title for the session.")
_json_option = click.option("--json", "as_json", is_flag=True, help="Print the reply as JSON.")


@click.command()
@_space_option
@_activity_option
@_title_option
@_json_option
@click.pass_obj
def start(context: Context, space: str | None, activity: str | None, title: str,
          as_json: bool) -> None:
    """Start recording a session now (or give the live one a Space, activity or title)."""
    reply = context.request(Start(space=space, activity=activity or "", title=title))
    if as_json:
        _echo_json(reply)
    else:
        click.echo(reply.message)
        for line in carried_lines(reply.carried_message, reply.carried):
            click.echo(line)


@click.command()
@_json_option
@click.pass_obj
def stop(context: Context, as_json: bool) -> None:
    """End the live session (what was said until now is transcribed into it first)."""
    with Client(context.profile, timeout=STOP_TIMEOUT_S) as client:
        reply = client.request(Stop())
    if as_json:
        _echo_json(reply)
        return
    where = f" in {reply.space}" if reply.space else ""
    click.echo(f"session {reply.session_id}{where} ended after "
               f"{format_duration(reply.duration_s)}, {reply.turns} turns: {reply.gist}")
    if reply.receipt is not None:
        click.echo(reply.receipt.text)


@click.command("import")
@click.argument("audio", type=click.Path(path_type=Path, exists=True, dir_okay=False))
@click.option("--stereo", is_flag=True,
              help='A call on two channels: left is "me", right is "them" (whose voices '
                   'are told apart).')
@click.option("--speaker", default=None,
              help='The one speaker of a mono file (default: its voices are told apart, '
                   '"Them 1", "Them 2", or their names).')
@_space_option
@_activity_option
@_title_option
@click.option("--date", type=click.DateTime(DATE_FORMATS), default=None,
              help="When it started, local time (default: the file's time minus its length).")
@_json_option
@click.pass_obj
def import_audio(context: Context, audio: Path, stereo: bool, speaker: str | None,
                 space: str | None, activity: str | None, title: str, date: dt.datetime | None,
                 as_json: bool) -> None:
    """Transcribe an AUDIO file (WAV, FLAC, OGG, MP3) into a session, with progress."""
    request = ImportAudio(
        id=uuid.uuid4().hex,
        path=str(audio.resolve()),
        stereo=stereo,
        speaker=speaker or "me",
        voices=speaker is None,
        space=space,
        activity=activity or "",
        title=title,
        started_at=None if date is None else date.timestamp(),
    )
    reply = _import_with_progress(context.profile, request, show=not as_json)
    for warning in reply.warnings:
        click.echo(f"warning: {warning}", err=True)
    if as_json:
        _echo_json(reply)
    else:
        click.echo(reply.message)


def _import_with_progress(profile: str, request: ImportAudio, *, show: bool) -> ImportAudioReply:
    """Send the import while its ImportProgress events drive a bar here."""
    from tqdm import tqdm

    with tqdm(total=0.0, unit="s", disable=not show, leave=False,
              bar_format="{l_bar}{bar}| {n:.0f}/{total:.0f} s of audio [{elapsed}<{remaining}]"
              "{postfix}") as bar:

        def shown(event: Event) -> None:
            if isinstance(event, ImportProgress):
                bar.total = event.total_s
                bar.n = event.done_s
                bar.set_postfix(turns=event.turns, refresh=False)
                bar.refresh()

        return request_watching(profile, request, timeout=IMPORT_TIMEOUT_S, on_event=shown)


COMMANDS = [start, stop, import_audio]
