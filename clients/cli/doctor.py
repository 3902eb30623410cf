"""`braincue doctor`: what a new user needs to know, on one screen.

One line per part, each with what to do when it is not right: the daemon (and the login
service), the audio server and the devices heard, the models installed, the desktop clients,
the key store, the language model. It reads the running daemon's status where one runs, and
otherwise looks for itself: the audio server through the capture library, the models in the
models directory (a documented exception to the protocol-only rule, as `braincue models`), the
key store as `braincue security status` does.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import click

from clients.cli.context import Context
from clients.service import AGENT_LABEL, DESKTOP_FIX, Layout, desktop_problem
from daemon.config import Settings
from daemon.errors import BrainCueError, DaemonNotRunning, ModelError
from daemon.ipc.client import Client
from daemon.ipc.protocol import Status, StatusReply
from daemon.models.registry import Role, pick_installed, pick_speech_model
from daemon.store import security as sec


@dataclass(frozen=True)
class Finding:
    part: str
    state: str
    fix: str = ""  # empty: nothing to do

    @property
    def ok(self) -> bool:
        return not self.fix


def daemon_status(context: Context) -> StatusReply | None:
    try:
        with Client(context.config.paths, timeout=3.0) as client:
            status: StatusReply = client.request(Status())
            return status
    except DaemonNotRunning:
        return None


def daemon_finding(status: StatusReply | None, context: Context) -> Finding:
    try:
        layout = Layout.current(context.profile)
        unit = layout.unit_path if layout.platform == "linux" else layout.agent_path(AGENT_LABEL)
        service = ("the login service is installed" if unit.exists()
                   else "no login service (`braincue service install`)")
    except BrainCueError:
        service = "no login service"
    if status is None:
        return Finding("daemon", f"not running; {service}",
                       "start it: `braincued` (or `scripts/run-daemon`), or at login with "
                       "`braincue service install`")
    return Finding("daemon", f"running (pid {status.pid}); {service}")


def audio_finding(status: StatusReply | None) -> Finding:
    """The devices the daemon hears (from its status), or, without a daemon, the audio
    server's default devices."""
    fix = ("start the audio server (PulseAudio or PipeWire's pulse service) and check the "
           "devices: `braincue settings set mic_device ...`")
    if status is not None and status.live is not None:
        sources = status.live.sources
        heard = "; ".join(f"{name}: {s.state}" + (f" ({s.device})" if s.device else "")
                          + (f", {s.detail}" if s.detail and s.detail != s.device else "")
                          for name, s in sources.items())
        bad = any(s.state == "no audio" for s in sources.values())
        return Finding("audio", heard, fix if bad else "")
    try:
        mic, speaker = default_devices()
    except Exception as e:  # the capture library says "no server" with a bare AssertionError
        reason = "no audio server" if isinstance(e, AssertionError) else str(e) or repr(e)
        return Finding("audio", reason, fix)
    return Finding("audio", f"server up; microphone {mic}, output {speaker} (its monitor is "
                            "heard as the other side)")


def default_devices() -> tuple[str, str]:
    import soundcard  # connects to the audio server

    return str(soundcard.default_microphone().name), str(soundcard.default_speaker().name)


MODEL_ROLES: tuple[tuple[Role, str, str], ...] = (  # what each is for, the setting picking it
    ("asr", "speech", "asr_model"),
    ("embed", "search vectors", "embed_model"),
    ("llm", "language", "llm_model"),
    ("vad", "voice activity", ""),
    ("voice", "voices", "voice_model"),
)


def models_finding(settings: Settings, models_dir: Path) -> Finding:
    found, missing = [], []
    for role, what, setting in MODEL_ROLES:
        preferred = getattr(settings, setting) if setting else ""
        try:
            entry = (pick_speech_model(preferred, settings.asr_language, models_dir)
                     if role == "asr" else pick_installed(role, models_dir, preferred))
            found.append(f"{what} {entry.name}")
        except ModelError:
            missing.append(what)
    state = ", ".join(found) or "none installed"
    if missing:
        state += f"; missing: {', '.join(missing)}"
    return Finding("models", state, "`braincue models install` (`braincue models list` lists "
                                    "them)" if missing else "")


def desktop_finding(problem: Callable[[], str | None] = desktop_problem) -> Finding:
    why = problem()
    display = any(os.environ.get(v) for v in ("DISPLAY", "WAYLAND_DISPLAY")) or (
        sys.platform == "darwin")
    if why is not None:
        return Finding("desktop", f"the tray, the hotkey box and the window cannot start: {why}",
                       DESKTOP_FIX)
    return Finding("desktop", "the tray, the hotkey box and the window can start"
                   + ("" if display else " (no display here now)"))


def key_store_finding(context: Context) -> Finding:
    try:
        s = sec.status(context.config.paths)
    except BrainCueError as e:
        return Finding("key store", e.message, e.fix or "")
    where = s.key_where or "no key yet (one is made with the database)"
    plain = s.state == "plain"
    return Finding("key store", f"{s.key_store}; the database's key: {where}"
                   + ("; the database is NOT encrypted" if plain else ""),
                   "`braincue security encrypt`" if plain else "")


def engine_finding(settings: Settings, models_dir: Path) -> Finding:
    try:
        entry = pick_installed("llm", models_dir, settings.llm_model)
    except ModelError:
        return Finding("language model", "none: search and transcripts work; no answers "
                       "written, no summaries or decisions kept",
                       "`braincue models install` a language model (`braincue models list`)")
    where = "in a process of its own" if settings.llm_process else "in the daemon"
    return Finding("language model", f"{entry.name}, on this machine ({where}, "
                   f"{settings.llm_threads} threads, unloaded after "
                   f"{settings.idle_unload_min:g} min unused)")


def findings(context: Context) -> list[Finding]:
    status = daemon_status(context)
    settings, models_dir = context.config.settings, context.config.paths.models_dir
    return [daemon_finding(status, context), audio_finding(status),
            models_finding(settings, models_dir), desktop_finding(),
            key_store_finding(context), engine_finding(settings, models_dir)]


def finding_lines(found: list[Finding]) -> list[str]:
    width = max(len(f.part) for f in found)
    lines = []
    for f in found:
        lines.append(f"{'ok' if f.ok else '!!'} {f.part:<{width}}  {f.state}")
        if f.fix:
            lines.append(f"   {'':<{width}}  fix: {f.fix}")
    return lines


@click.command()
@click.pass_obj
def doctor(context: Context) -> None:
    """What BrainCue needs and has here, on one screen: the daemon, the audio server and its
    devices, the models, the desktop clients, the key store, the language model — each with
    what to do when it is not right."""
    for line in finding_lines(findings(context)):
        click.echo(line)


COMMANDS = (doctor,)
