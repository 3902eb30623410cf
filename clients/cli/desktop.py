"""`braincue service ...`, `braincue tray`, `braincue hotkey`: BrainCue on the desktop.

The tray and hotkey clients need the `desktop` extra (Qt, D-Bus, X11 bindings); they are
imported only when their command runs, so the rest of the CLI works without it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from clients.service import Layout, ServiceManager
from daemon.errors import BrainCueError, ConfigError, DaemonNotRunning
from daemon.ipc.client import Client
from daemon.ipc.protocol import Status

if TYPE_CHECKING:
    from clients.shell import Context


def _pass_context() -> Context:
    from clients.shell import Context  # imported here: clients.shell imports this module

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


def _desktop_missing(e: ImportError) -> ConfigError:
    return ConfigError(f"the desktop clients need the `desktop` extra ({e.name} is missing)",
                       fix="pip install 'braincue[desktop]' (scripts/setup.sh --dev installs it)")


COMMANDS: list[click.Command] = [service]
