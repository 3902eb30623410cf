"""`braincued` / `python -m daemon`: run the BrainCue daemon in the foreground."""

from __future__ import annotations

import os

# numpy's OpenBLAS, one thread (unless set): its threads spin while waiting for each other, so
# beside whisper and llama.cpp on a small machine two threads ran the voice encoder 10x slower
# than one (bench.diarize at load 22: RTF 1.36 with two, 0.126 with one). Read when numpy loads.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import logging
import sys

import click
import trio

from daemon.app import run_until_signalled
from daemon.config import DEFAULT_PROFILE, PRIVATE_UMASK, Config
from daemon.errors import BrainCueError


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--profile", default=DEFAULT_PROFILE, show_default=True, envvar="BRAINCUE_PROFILE",
              help="Profile to serve; each profile has its own database and sockets.")
@click.option("-v", "--verbose", is_flag=True, help="Log debug messages.")
def cli(profile: str, verbose: bool) -> None:
    """Run the BrainCue daemon in the foreground until SIGTERM or Ctrl+C."""
    os.umask(PRIVATE_UMASK)
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    config = Config.load(profile)
    trio.run(run_until_signalled, config)


def main() -> None:
    try:
        cli.main(standalone_mode=False)
    except click.ClickException as e:
        e.show()
        sys.exit(e.exit_code)
    except click.exceptions.Abort:
        sys.exit(130)
    except BrainCueError as e:
        click.echo(f"braincued: error: {e}", err=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
