"""The whole product from the quick start: `scripts/run-daemon` installs the desktop clients
where there is a display (or when asked), `braincue service install` sets the tray and the
hotkey to start only when they can and says what to install when they cannot, and `braincue
doctor` shows on one screen what a new user needs to know.

A machine without the desktop extra is an environment where importing PySide6 fails: a module
of that name first on PYTHONPATH that raises as a missing one does."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from daemon.ipc.testing import PROJECT_ROOT, DaemonProcess, start_daemon

BIN = Path(sys.executable).parent


def no_pyside(tmp_path: Path) -> dict[str, str]:
    """The environment of a machine where PySide6 is not installed."""
    shim = tmp_path / "no-pyside"
    (shim / "PySide6").mkdir(parents=True)
    (shim / "PySide6" / "__init__.py").write_text(
        'raise ModuleNotFoundError("No module named \'PySide6\'", name="PySide6")\n')
    path = os.pathsep.join([str(shim), str(PROJECT_ROOT), os.environ.get("PYTHONPATH", "")])
    return {**os.environ, "PYTHONPATH": path}


def braincue(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / "braincue"), *args], env=env, capture_output=True,
                          text=True, check=False, timeout=300)


# -- scripts/run-daemon ------------------------------------------------------------------------


def run_daemon(tmp_path: Path, *args: str, **env: str) -> tuple[list[str], list[str]]:
    """Run scripts/run-daemon from a copy of the checkout whose setup.sh and braincued only
    say how they were called: (setup.sh's arguments, braincued's)."""
    root = tmp_path / "checkout"
    (root / "scripts").mkdir(parents=True)
    (root / ".venv" / "bin").mkdir(parents=True)
    shutil.copy(PROJECT_ROOT / "scripts" / "run-daemon", root / "scripts" / "run-daemon")
    for name, target in (("setup", root / "scripts" / "setup.sh"),
                         ("braincued", root / ".venv" / "bin" / "braincued")):
        target.write_text(f'#!/usr/bin/env bash\necho "$@" > "{tmp_path}/{name}.args"\n')
        target.chmod(0o755)
    environment = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    done = subprocess.run([str(root / "scripts" / "run-daemon"), *args],
                          env={**environment, **env}, capture_output=True, text=True,
                          check=False, timeout=60)
    assert done.returncode == 0, done.stderr
    return ((tmp_path / "setup.args").read_text().split(),
            (tmp_path / "braincued.args").read_text().split())


def test_run_daemon_installs_the_desktop_clients_where_there_is_a_display(
        tmp_path: Path) -> None:
    setup, daemon = run_daemon(tmp_path / "x11", DISPLAY=":99")
    assert "--desktop" in setup and daemon == []
    setup, _ = run_daemon(tmp_path / "wayland", WAYLAND_DISPLAY="wayland-0")
    assert "--desktop" in setup
    setup, daemon = run_daemon(tmp_path / "headless", "--profile", "work")
    assert "--desktop" not in setup and daemon == ["--profile", "work"]


def test_run_daemon_does_as_asked(tmp_path: Path) -> None:
    setup, daemon = run_daemon(tmp_path / "asked", "--desktop", "--profile", "work")
    assert "--desktop" in setup and daemon == ["--profile", "work"]
    setup, daemon = run_daemon(tmp_path / "refused", "--no-desktop", DISPLAY=":99")
    assert "--desktop" not in setup and daemon == []


def test_setup_knows_the_desktop_option() -> None:
    setup = (PROJECT_ROOT / "scripts" / "setup.sh").read_text()
    assert "--desktop) desktop=1 ;;" in setup
    assert '[ "$desktop" -eq 1 ] && extras+=(desktop)' in setup


# -- braincue service install ------------------------------------------------------------------


def service_env(tmp_path: Path, base: dict[str, str]) -> tuple[dict[str, str], Path]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {**base, "HOME": str(home), "BRAINCUE_HOME": str(tmp_path / "bc"),
           "XDG_RUNTIME_DIR": str(tmp_path / "no-manager-here")}
    env.pop("XDG_CONFIG_HOME", None)
    return env, home


def test_service_install_without_pyside_sets_only_the_daemon_to_start_and_says_what_to_install(
        tmp_path: Path) -> None:
    env, home = service_env(tmp_path, dict(os.environ))
    autostart = home / ".config" / "autostart"
    done = braincue("service", "install", env=env)  # with the desktop extra: all three
    assert done.returncode == 0, done.stderr
    assert {p.name for p in autostart.iterdir()} == {"braincue-tray.desktop",
                                                      "braincue-hotkey.desktop"}
    assert "cannot start" not in done.stdout

    missing, _ = service_env(tmp_path, no_pyside(tmp_path))
    done = braincue("service", "install", env=missing)
    assert done.returncode == 0, done.stderr
    assert (home / ".config/systemd/user/braincue.service").is_file()
    assert not autostart.exists() or list(autostart.iterdir()) == []  # none left that fails
    assert f"removed the tray autostart entry {autostart / 'braincue-tray.desktop'}" in done.stdout
    status = braincue("service", "status", env=missing).stdout
    assert "tray and hotkey: cannot start: PySide6 is missing; install the `desktop`" in status
    assert "tray and hotkey: can start" in braincue("service", "status", env=env).stdout
    said = [line for line in done.stdout.splitlines() if line.startswith("the tray and")]
    assert said == ["the tray and the hotkey cannot start: PySide6 is missing; install the "
                    "`desktop` extra: `pip install 'braincue[desktop]'` (in a checkout: "
                    "`scripts/setup.sh --desktop`), then run `braincue service install` "
                    "again"], done.stdout


# -- braincue doctor ---------------------------------------------------------------------------


@pytest.fixture
def daemon(bare_home: Path) -> Iterator[DaemonProcess]:
    process = start_daemon(bare_home)
    yield process
    process.stop(signal.SIGKILL)


def parts(output: str) -> dict[str, str]:
    """``doctor``'s lines by part, each with its fix when it has one."""
    found: dict[str, str] = {}
    last = ""
    for line in output.splitlines():
        if line.startswith(("ok ", "!! ")):
            mark, rest = line[:2], line[3:]
            name = next(p for p in ("daemon", "audio", "models", "desktop", "key store",
                                    "language model") if rest.startswith(p))
            found[name] = f"{mark} {rest[len(name):].strip()}"
            last = name
        else:
            found[last] += " | " + line.strip()
    return found


def test_doctor_tells_a_new_user_what_is_missing_and_how_to_get_it(
        bare_home: Path, tmp_path: Path) -> None:
    # nothing installed, no daemon, no desktop extra, no audio server
    env = {**no_pyside(tmp_path), "XDG_RUNTIME_DIR": str(tmp_path / "no-audio-here"),
           "PULSE_SERVER": f"unix:{tmp_path / 'no-audio-here' / 'native'}"}
    done = braincue("doctor", env=env)
    assert done.returncode == 0, done.stderr
    found = parts(done.stdout)
    assert list(found) == ["daemon", "audio", "models", "desktop", "key store",
                           "language model"], done.stdout
    assert found["daemon"].startswith("!! not running") and "fix: start it" in found["daemon"]
    assert found["audio"].startswith("!! no audio server"), found["audio"]
    assert found["models"].startswith("!! none installed; missing: speech"), found["models"]
    assert "`braincue models install`" in found["models"]
    assert found["desktop"].startswith("!! the tray, the hotkey box and the window cannot "
                                       "start: PySide6 is missing"), found["desktop"]
    assert "braincue[desktop]" in found["desktop"]
    assert found["key store"].startswith("ok "), found["key store"]
    assert found["language model"].startswith("!! none"), found["language model"]


def test_doctor_reads_the_running_daemon(daemon: DaemonProcess, models_dir: Path) -> None:
    env = {**os.environ, "BRAINCUE_MODELS": str(models_dir)}
    done = braincue("doctor", env=env)
    assert done.returncode == 0, done.stderr
    found = parts(done.stdout)
    assert found["daemon"].startswith(f"ok running (pid {daemon.pid})"), found["daemon"]
    assert found["models"].startswith("ok speech whisper-"), found["models"]
    assert "missing" not in found["models"]
    assert found["desktop"].startswith("ok the tray, the hotkey box and the window can start")
    assert found["language model"].startswith("ok qwen2.5-"), found["language model"]
    assert "unloaded after 10 min unused" in found["language model"]
