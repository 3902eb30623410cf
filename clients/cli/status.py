"""The running daemon from the shell: `braincue status`, `braincue settings get|set`,
`braincue follow`. They only speak the protocol."""

from __future__ import annotations

import datetime as dt
import time

import click
import msgspec

from clients.cli.context import Context
from clients.cli.memory import settings_switch_lines
from clients.cli.output import duration, echo_json, echo_reply, offset, plural, table
from daemon.config import APPLIES_LATER
from daemon.ipc.client import Client
from daemon.ipc.protocol import (
    TOPIC_SESSIONS,
    TOPIC_STATUS,
    TOPIC_TURNS,
    Event,
    LanguageModelInfo,
    LiveStatus,
    ModelProcessInfo,
    SessionEnded,
    SessionStarted,
    SettingsGet,
    SettingsSet,
    SettingValue,
    Status,
    StatusEvent,
    StatusReply,
    TurnEvent,
)

json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON.")

COUNTED = ("spaces", "sessions", "turns", "chunks", "documents", "assertions", "vectors")


@click.command()
@json_option
@click.pass_obj
def status(context: Context, as_json: bool) -> None:
    """Is the daemon running, and what does it hold and do."""
    echo_reply(context.request(Status()), status_lines, as_json)


def status_lines(reply: StatusReply) -> list[str]:
    lines = [
        f"BrainCue daemon {reply.version} (protocol {reply.protocol}), pid {reply.pid}, "
        f"up {duration(reply.uptime_s)}",
        f"profile: {reply.profile}",
        f"capture: {reply.capture}" + live_summary(reply.live),
        "models loaded: " + (", ".join(reply.models_loaded) or "none"),
        *language_model_lines(reply.language_model),
    ]
    counts = [plural(reply.counts[k], k.removesuffix("s")) for k in COUNTED if k in reply.counts]
    counts += [plural(n, k.removesuffix("s")) for k, n in reply.counts.items() if k not in COUNTED]
    if counts:
        lines.append("holds: " + ", ".join(counts))
    if reply.model_processes:
        lines.append("model processes: " + "; ".join(
            model_process(p) for p in reply.model_processes))
    if reply.rss_bytes is not None:
        lines.append(memory_line(reply))
    return lines


def language_model_lines(info: LanguageModelInfo | None) -> list[str]:
    """``language model: unreachable (http://127.0.0.1:8080/v1)`` and why; what leaves the
    machine, said plainly; the embedded model's backend and layers on the GPU."""
    if info is None:
        return []
    if info.engine == "embedded" and info.state == "not installed":
        lines = ["language model: none installed"]
    elif info.engine == "embedded":
        where = f"on {info.backend}" if info.backend else ""
        if info.backend and info.backend != "CPU":
            where += f", {info.gpu_layers} of {info.layers} layers on the GPU"
        lines = [f"language model: {info.model or 'none'} ({info.state}; embedded llama.cpp"
                 + (f" {where}" if where else "") + ")"]
    else:
        state = info.state if info.state != "ready" else f"{info.model} ready"
        lines = [f"language model: {state} ({info.url or 'no llm_url'})"]
    if info.detail and info.state not in ("ready", "loaded", "loads on first use"):
        lines.append(f"  {info.detail}")
    if info.sends_to:
        lines.append(f"  {off_machine(info)}")
    return lines


def off_machine(info: LanguageModelInfo | None) -> str:
    """What a user must be told when the language model is a server off this machine (else
    empty): where conversation text goes."""
    if info is None or not info.sends_to:
        return ""
    return f"conversation text goes to {info.sends_to}, off this machine (llm_allow_network is on)"


def memory_line(reply: StatusReply) -> str:
    """``memory: 980 MB resident (daemon 420 MB, llm foreground 560 MB)``: each process's
    resident set; a model's weights, mapped from their file, count in each process mapping
    them."""
    parts = [("daemon", reply.rss_bytes or 0)] + [
        (f"{p.role} {p.priority}", p.rss_bytes) for p in reply.model_processes
        if p.rss_bytes is not None]
    return (f"memory: {megabytes(sum(n for _, n in parts))} resident ("
            + ", ".join(f"{name} {megabytes(n)}" for name, n in parts) + ")")


def megabytes(n: int) -> str:
    return f"{n / (1 << 20):,.0f} MB"


def model_process(p: ModelProcessInfo, now: float | None = None) -> str:
    """``llm (background) pid 4242, restarted 1 time (last: killed by SIGSEGV), loaded since
    14:02:11``; ``asr (live) not running (unloaded at 14:30:05, unused)``."""
    text = f"{p.role} ({p.priority}) " + (f"pid {p.pid}" if p.pid is not None else "not running")
    if p.deaths:
        text += f", restarted {plural(p.deaths, 'time')} (last: {p.last_death})"
    if p.loaded_at is not None:
        text += f", loaded since {clock_time(p.loaded_at, now)}"
    elif p.unloaded_at is not None:
        text += f" (unloaded at {clock_time(p.unloaded_at, now)}, unused)"
    return text


def clock_time(timestamp: float, now: float | None = None) -> str:
    """``14:02:11`` today (by ``now``, the current time by default), else with its date."""
    when = dt.datetime.fromtimestamp(timestamp)
    today = dt.datetime.fromtimestamp(time.time() if now is None else now).date()
    return f"{when:%H:%M:%S}" if when.date() == today else f"{when:%Y-%m-%d %H:%M:%S}"


def live_summary(live: LiveStatus | None) -> str:
    """What capture is doing beyond its state (which ``capture`` already says)."""
    if live is None:
        return ""
    facts = [f"{source}: {s.detail}" for source, s in live.sources.items() if s.detail]
    if live.session_id is not None:
        facts.append(f"live session {live.session_id}")
    if live.utterances_queued:
        facts.append(f"{live.utterances_queued} utterances queued, "
                     f"{live.asr_lag_s:.1f} s behind")
    if live.dropped_blocks:
        facts.append(f"{live.dropped_blocks} audio blocks dropped")
    return f" ({'; '.join(facts)})" if facts else ""


# -- settings ----------------------------------------------------------------------------------


@click.group()
def settings() -> None:
    """The daemon's settings (also in config.toml; changes apply at once and are saved)."""


@settings.command("get")
@click.argument("key", required=False, default="")
@json_option
@click.pass_obj
def settings_get(context: Context, key: str, as_json: bool) -> None:
    """Print every setting, or the one called KEY."""
    values = context.request(SettingsGet(key=key)).settings
    if as_json:
        echo_json(values)
    elif key:
        click.echo(setting_text(values[key]))
    else:
        table([("SETTING", "VALUE")] + [(k, setting_text(v)) for k, v in sorted(values.items())])
        switches = settings_switch_lines(values)
        if switches:
            click.echo("\n" + "\n".join(switches))


@settings.command("set")
@click.argument("key")
@click.argument("value")
@click.pass_obj
def settings_set(context: Context, key: str, value: str) -> None:
    """Set KEY to VALUE (read like a TOML value: 8, 2.5, true, or a word)."""
    values = context.request(SettingsSet(key=key, value=value)).settings
    click.echo(f"{key} = {setting_text(values[key])}")
    if key in APPLIES_LATER:
        click.echo(f"(takes effect {APPLIES_LATER[key]})")


def setting_text(value: SettingValue) -> str:
    """A value as it would be typed: TOML-like (``true``, ``2.5``, ``""``)."""
    if isinstance(value, str):
        return value if value else '""'
    return msgspec.json.encode(value).decode()


# -- follow ------------------------------------------------------------------------------------


@click.command()
@json_option
@click.pass_obj
def follow(context: Context, as_json: bool) -> None:
    """Print what the daemon hears and does as it happens: turns, sessions starting and
    ending (with the keep prompt), status. Ctrl+C to stop."""
    with (Client(context.profile) as client,
          client.subscribe([TOPIC_TURNS, TOPIC_SESSIONS, TOPIC_STATUS]) as events):
        click.echo(f"following profile {context.profile!r} (Ctrl+C to stop)", err=True)
        for event in events:
            if as_json:
                click.echo(msgspec.json.encode(event).decode())
            else:
                for line in event_lines(event):
                    click.echo(line)


def event_lines(event: Event) -> list[str]:
    """How ``follow`` shows an event."""
    if isinstance(event, TurnEvent):
        return [f"session {event.session_id} [{offset(event.start)}] {event.speaker}: "
                f"{event.text}"]
    if isinstance(event, SessionStarted):
        details = [event.activity] if event.activity else []
        details.append(f"Space {event.space!r}" if event.space else "no Space")
        title = f": {event.title}" if event.title else ""
        return [f"session {event.session_id} started ({', '.join(details)}){title}"]
    if isinstance(event, SessionEnded):
        where = f" in Space {event.space!r}" if event.space else ""
        return [
            f"session {event.session_id}{where} ended after {duration(event.duration_s)}: "
            f"{event.gist}",
            *([f"  {event.receipt.text}"] if event.receipt is not None else []),
            f"  Keep this conversation? (session {event.session_id})",
        ]
    if isinstance(event, StatusEvent):
        message = f": {event.message}" if event.message else ""
        return [f"{'ALERT' if event.alert else 'status'}: capture {event.capture}{message}"]
    return [f"{type(event).__name__}: {msgspec.json.encode(event).decode()}"]


COMMANDS = (status, settings, follow)
