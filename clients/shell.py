"""`braincue` — the shell client.

Every command documents itself: `braincue --help`, `braincue COMMAND --help`.
"""

from __future__ import annotations

import os
import sys

import click

from clients.cli.context import Context
from daemon.config import DEFAULT_PROFILE, PRIVATE_UMASK
from daemon.errors import BrainCueError


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--profile", default=DEFAULT_PROFILE, show_default=True, envvar="BRAINCUE_PROFILE",
              help="Profile to use; each profile has its own database.")
@click.version_option(package_name="braincue")
@click.pass_context
def cli(ctx: click.Context, profile: str) -> None:
    """BrainCue: a private, always-on memory of your conversations."""
    os.umask(PRIVATE_UMASK)  # exports, downloads, keys: the user's alone
    ctx.obj = Context(profile)


def _register() -> None:
    from clients.cli import (
        ask,
        audio,
        desktop,
        doctor,
        items,
        live,
        memory,
        models,
        search,
        security,
        status,
        store,
        voices,
    )

    cli.add_command(models.models)
    cli.add_command(audio.transcribe)
    for module in (desktop, store, live, memory, status, search, ask, security, items, voices,
                   doctor):
        for command in module.COMMANDS:
            cli.add_command(command)


_register()


def main() -> None:
    """Entry point: one-line errors for everything BrainCue raises, exit code 1."""
    try:
        cli.main(standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(130)
    except click.ClickException as e:
        e.show()
        sys.exit(e.exit_code)
    except BrainCueError as e:
        click.echo(f"error: {e}", err=True)
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)
