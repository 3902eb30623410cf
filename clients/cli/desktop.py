"""`braincue service ...`, `braincue tray`, `braincue hotkey`, `braincue window`: BrainCue on the
desktop.

The tray and hotkey clients need the `desktop` extra (Qt, D-Bus, X11 bindings); they are
imported only when their command runs, so the rest of the CLI works without it.
"""

from __future__ import annotations

import importlib
import logging
import sys
from collections.abc import Callable
from typing import NoReturn

import click

from clients.cli.context import Context
from clients.service import Layout, ServiceManager
from daemon.config import Paths
from daemon.errors import BrainCueError, ConfigError, DaemonNotRunning
from daemon.ipc.client import Client
from daemon.ipc.protocol import Status


def _pass_context() -> Context:
    context = click.get_current_context().find_object(Context)
    assert context is not None
    return context


@click.group()
def service() -> None:
    """Start the daemon at login (systemd user unit / LaunchAgent), with the tray and hotkey."""


def _manager() -> ServiceManager:
    context = _pass_context()
    return ServiceManager(Layout.current(context.profile), context.config.paths)


@service.command("install")
def service_install() -> None:
    """Write and enable the service for this user; safe to run again."""
    for line in _manager().install():
        click.echo(line)


@service.command("uninstall")
def service_uninstall() -> None:
    """Stop and disable the service and remove every file `install` wrote."""
    for line in _manager().uninstall():
        click.echo(line)


@service.command("status")
def service_status() -> None:
    """Show what is installed, whether the service runs, and whether the daemon answers."""
    context = _pass_context()
    for line in _manager().status():
        click.echo(line)
    try:
        with Client(context.config.paths, timeout=2.0) as client:
            status = client.request(Status())
        click.echo(f"daemon: running (pid {status.pid}, up {status.uptime_s:.0f} s, "
                   f"capture {status.capture})")
    except DaemonNotRunning:
        click.echo("daemon: not running")
    except BrainCueError as e:
        click.echo(f"daemon: {e}")


@click.command()
def tray() -> None:
    """Show BrainCue in the system tray; ask "Keep this conversation?" when a call ends.

    The icon is green while listening, red in a call, grey when paused and amber on a problem
    (no audio, no daemon); its menu starts and stops sessions, pauses listening, lists recent
    sessions and edits settings. `braincue service install` starts it at login.
    """
    _run_desktop_client("tray")


@click.command()
@click.option("--open", "mode", flag_value="open",
              help="Open the ask box now and exit when it closes, instead of waiting for the "
                   "hotkeys (bind this to a desktop shortcut where no global grab works, e.g. "
                   "on Wayland).")
@click.option("--them", "mode", flag_value="them",
              help="Like --open, but answer what they just asked in the live call.")
@click.option("--space", default=None, help="Ask within this Space.")
def hotkey(mode: str | None, space: str | None) -> None:
    """Ask your memory from any app: a global hotkey opens a small ask box.

    Ctrl+Alt+Space (setting hotkey_ask) opens the box; Ctrl+Alt+Shift+Space (setting
    hotkey_answer_them) answers what "they" just asked in the live call. The answer streams in,
    then its sources. X11 only for the global grab; elsewhere use --open / --them.
    """
    context = _pass_context()
    _log_to_stderr()
    try:
        from clients import hotkey as hotkey_client
    except ImportError as e:
        raise _desktop_missing(e) from None
    config = context.config
    run_mode: hotkey_client.Mode = "them" if mode == "them" else "open" if mode else "grab"
    sys.exit(hotkey_client.run(config.paths, config.settings, run_mode, space))


@click.command()
def window() -> None:
    """See, correct and review what BrainCue remembers, in a window.

    Sessions by Space with their archives, decisions, commitments, quotes and transcripts
    (and search); corrections of decisions, owners and speakers; the review of memories
    about you; the open items of a Space. The tray menu opens it too.
    """
    _run_desktop_client("window")


def _log_to_stderr() -> None:
    logging.basicConfig(level=logging.INFO, format="braincue: %(message)s", stream=sys.stderr)


def _run_desktop_client(name: str) -> NoReturn:
    """Run ``clients.<name>`` (a window of its own) until it closes, and exit with its status."""
    context = _pass_context()
    _log_to_stderr()
    try:
        client = importlib.import_module(f"clients.{name}")
    except ImportError as e:
        raise _desktop_missing(e) from None
    run: Callable[[Paths], int] = client.run
    sys.exit(run(context.config.paths))


def _desktop_missing(e: ImportError) -> ConfigError:
    return ConfigError(f"the desktop clients need the `desktop` extra ({e.name} is missing)",
                       fix="pip install 'braincue[desktop]' (scripts/setup.sh --dev installs it)")


COMMANDS: list[click.Command] = [service, tray, hotkey, window]
