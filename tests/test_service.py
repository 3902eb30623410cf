"""Service units and `braincue service install|uninstall|status` in a test HOME."""

from __future__ import annotations

import os
import plistlib
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from clients.service import (
    AGENT_LABEL,
    Layout,
    ServiceManager,
    default_agent,
    default_unit,
    desktop_exec,
    files_for,
    unit_text,
)
from daemon.config import Paths

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def verify_unit(unit: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """`systemd-analyze --user verify` on ``unit`` (it needs a runtime dir, not a manager)."""
    runtime = tmp_path / "xdg-runtime"
    runtime.mkdir(mode=0o700, exist_ok=True)
    path = tmp_path / "braincue.service"
    path.write_text(unit)
    return subprocess.run(
        ["systemd-analyze", "--user", "verify", str(path)],
        capture_output=True, text=True, check=False,
        env={**os.environ, "XDG_RUNTIME_DIR": str(runtime), "HOME": str(tmp_path)},
    )


class Recorder:
    """Stands in for systemctl / launchctl: records each command, answers as told."""

    def __init__(self, systemd: bool) -> None:
        self.systemd = systemd
        self.calls: list[list[str]] = []

    def __call__(self, args: Sequence[str]) -> subprocess.CompletedProcess[str]:
        self.calls.append(list(args))
        ok = self.systemd or args[0] == "launchctl"
        return subprocess.CompletedProcess(list(args), 0 if ok else 1,
                                           "enabled\n" if ok else "", "" if ok else "no bus")

    def commands(self) -> list[str]:
        return [" ".join(c) for c in self.calls if "--property=Version" not in c]


def linux_layout(home: Path, profile: str = "default") -> Layout:
    return Layout(platform="linux", home=home, config_home=home / ".config",
                  runtime_home=home / "run", braincued=BIN / "braincued",
                  braincue=BIN / "braincue", profile=profile)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


# ---------------------------------------------------------------------------------------------
# the files in the repository


def test_the_repository_unit_is_the_default_rendering() -> None:
    assert (ROOT / "systemd" / "braincue.service").read_text() == default_unit()


def test_the_repository_plist_round_trips_with_the_expected_keys() -> None:
    raw = (ROOT / "launchd" / "com.braincue.daemon.plist").read_bytes()
    agent = plistlib.loads(raw)
    assert agent == default_agent()
    assert plistlib.loads(plistlib.dumps(agent)) == agent
    assert agent["Label"] == AGENT_LABEL
    assert agent["ProgramArguments"][0].endswith("/braincued")
    assert agent["RunAtLoad"] is True
    assert agent["KeepAlive"] == {"SuccessfulExit": False}
    assert agent["StandardOutPath"] and agent["StandardErrorPath"]


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="needs systemd-analyze")
def test_systemd_accepts_the_unit_rendered_for_this_installation(tmp_path: Path,
                                                                 home: Path) -> None:
    layout = linux_layout(home)
    unit = files_for(layout, Paths.resolve())[0].content.decode()
    assert f"ExecStart={BIN / 'braincued'}\n" in unit
    done = verify_unit(unit, tmp_path)
    assert (done.returncode, done.stdout + done.stderr) == (0, "")


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="needs systemd-analyze")
def test_systemd_accepts_the_shipped_unit_once_its_program_exists(tmp_path: Path) -> None:
    program_dir = tmp_path / ".local" / "bin"  # %h is the HOME verify_unit sets
    program_dir.mkdir(parents=True)
    shutil.copy(BIN / "braincued", program_dir / "braincued")
    done = verify_unit(default_unit(), tmp_path)
    assert (done.returncode, done.stdout + done.stderr) == (0, "")


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="needs systemd-analyze")
def test_verify_would_catch_a_broken_unit(tmp_path: Path) -> None:
    """The two tests above can fail: verify reports a wrong key and a missing program."""
    broken = unit_text([str(tmp_path / "nowhere" / "braincued")], ["%h/x"]).replace(
        "NoNewPrivileges=", "NoNewPrivilege=")
    done = verify_unit(broken, tmp_path)
    output = done.stdout + done.stderr
    assert done.returncode != 0 and "NoNewPrivilege" in output and "not executable" in output


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="needs systemd-analyze")
def test_paths_with_spaces_and_percent_signs_survive_unit_quoting(tmp_path: Path) -> None:
    odd = tmp_path / "my 100% dir"  # (systemd itself refuses quotes in a program's path)
    odd.mkdir()
    shutil.copy(BIN / "braincued", odd / "braincued")
    quoted = tmp_path / 'a "quoted" 5% dir'
    unit = unit_text([str(odd / "braincued"), "--profile", "work"], [str(odd), str(quoted)],
                     {"BRAINCUE_HOME": str(quoted)})
    done = verify_unit(unit, tmp_path)
    assert (done.returncode, done.stdout + done.stderr) == (0, "")


def test_the_unit_is_hardened_and_notifies_readiness() -> None:
    settings = dict(line.split("=", 1) for line in default_unit().splitlines()
                    if "=" in line and not line.startswith("#"))
    assert settings["Type"] == "notify"
    assert settings["Restart"] == "on-failure"
    for key, value in [("NoNewPrivileges", "yes"), ("PrivateTmp", "yes"),
                       ("ProtectSystem", "strict"), ("ProtectHome", "read-only"),
                       ("RestrictAddressFamilies", "AF_UNIX")]:
        assert settings[key] == value
    assert "ReadWritePaths=-%h/.local/share/braincue" in default_unit()


# ---------------------------------------------------------------------------------------------
# install / uninstall / status


def test_install_writes_the_unit_and_autostart_entries_with_this_installations_paths(
    home: Path,
) -> None:
    paths = Paths.resolve()
    lines = ServiceManager(linux_layout(home), paths, Recorder(systemd=False)).install()

    unit = (home / ".config/systemd/user/braincue.service").read_text()
    assert f"ExecStart={BIN / 'braincued'}\n" in unit
    for directory in (paths.config_dir, paths.data_root, paths.cache_dir):
        assert f"ReadWritePaths=-{directory}\n" in unit
        assert directory.is_dir()  # created, or the read-only sandbox could not write there
    tray = (home / ".config/autostart/braincue-tray.desktop").read_text()
    hotkey = (home / ".config/autostart/braincue-hotkey.desktop").read_text()
    assert f"Exec={BIN / 'braincue'} tray\n" in tray
    assert f"Exec={BIN / 'braincue'} hotkey\n" in hotkey
    assert "systemd is not running for this user" in lines[-1]


def test_install_is_idempotent_and_uninstall_removes_everything_it_wrote(home: Path) -> None:
    manager = ServiceManager(linux_layout(home), Paths.resolve(), Recorder(systemd=False))
    manager.install()
    written = {p: p.read_bytes() for p in home.rglob("*") if p.is_file()}
    again = manager.install()
    assert {p: p.read_bytes() for p in home.rglob("*") if p.is_file()} == written
    assert sum("up to date" in line for line in again) == 3
    assert all("installed (" in line for line in manager.status()[:3])

    manager.uninstall()
    assert [p for p in home.rglob("*") if p.is_file()] == []
    assert all("not installed" in line for line in manager.status()[:3])
    assert manager.uninstall() == ["nothing to remove: the service is not installed"]


def test_status_notices_a_unit_from_another_installation(home: Path) -> None:
    manager = ServiceManager(linux_layout(home), Paths.resolve(), Recorder(systemd=False))
    manager.install()
    unit = home / ".config/systemd/user/braincue.service"
    unit.write_text(unit.read_text().replace(str(BIN), "/elsewhere/bin"))
    assert "differs from this installation" in manager.status()[0]


def test_install_enables_and_starts_the_unit_when_systemd_runs(home: Path) -> None:
    runner = Recorder(systemd=True)
    manager = ServiceManager(linux_layout(home), Paths.resolve(), runner)
    manager.install()
    assert runner.commands() == ["systemctl --user daemon-reload",
                                 "systemctl --user enable --now braincue.service"]
    runner.calls.clear()
    manager.uninstall()
    assert runner.commands() == ["systemctl --user disable --now braincue.service",
                                 "systemctl --user daemon-reload"]


def test_another_profile_gets_its_own_unit_and_entries(home: Path) -> None:
    layout = linux_layout(home, profile="work")
    ServiceManager(layout, Paths.resolve("work"), Recorder(systemd=False)).install()
    unit = (home / ".config/systemd/user/braincue-work.service").read_text()
    assert f"ExecStart={BIN / 'braincued'} --profile work\n" in unit
    tray = (home / ".config/autostart/braincue-work-tray.desktop").read_text()
    assert f"Exec={BIN / 'braincue'} --profile work tray\n" in tray


def test_relocated_files_are_carried_into_the_unit(home: Path) -> None:
    layout = Layout(**{**linux_layout(home).__dict__,
                       "environment": {"BRAINCUE_HOME": "/srv/brain cue"}})
    unit = files_for(layout, Paths.resolve())[0].content.decode()
    assert 'Environment="BRAINCUE_HOME=/srv/brain cue"\n' in unit


def test_macos_install_writes_and_loads_launch_agents(home: Path) -> None:
    layout = Layout(platform="macos", home=home, config_home=home / ".config", runtime_home=None,
                    braincued=Path("/opt/bc/bin/braincued"), braincue=Path("/opt/bc/bin/braincue"))
    runner = Recorder(systemd=False)
    manager = ServiceManager(layout, Paths.resolve(), runner)
    manager.install()
    agent = plistlib.loads((home / "Library/LaunchAgents/com.braincue.daemon.plist").read_bytes())
    assert agent["ProgramArguments"] == ["/opt/bc/bin/braincued"]
    assert agent["StandardErrorPath"] == str(home / "Library/Logs/BrainCue/braincued.log")
    assert agent["RunAtLoad"] is True and agent["KeepAlive"] == {"SuccessfulExit": False}
    tray = plistlib.loads((home / "Library/LaunchAgents/com.braincue.tray.plist").read_bytes())
    assert tray["ProgramArguments"] == ["/opt/bc/bin/braincue", "tray"]
    assert "KeepAlive" not in tray
    uid = os.getuid()
    assert runner.commands()[-2:] == [
        f"launchctl bootstrap gui/{uid} {home}/Library/LaunchAgents/com.braincue.daemon.plist",
        f"launchctl bootstrap gui/{uid} {home}/Library/LaunchAgents/com.braincue.tray.plist",
    ]
    manager.uninstall()
    assert not (home / "Library/LaunchAgents").exists() or not any(
        (home / "Library/LaunchAgents").iterdir())


def test_desktop_exec_quotes_reserved_characters() -> None:
    assert desktop_exec(["/usr/bin/braincue", "tray"]) == "/usr/bin/braincue tray"
    assert desktop_exec(["/a b/braincue"]) == '"/a b/braincue"'
    # `$` and `"` escaped inside quotes, then every backslash doubled by the string escape
    assert desktop_exec(['/x/$HOME "q"']) == '"/x/\\\\$HOME \\\\"q\\\\""'
    assert desktop_exec(["50%"]) == "50%%"


def test_the_cli_installs_into_the_users_home(tmp_path: Path, home: Path) -> None:
    env = {**os.environ, "HOME": str(home), "BRAINCUE_HOME": str(tmp_path / "bc")}
    env.pop("XDG_CONFIG_HOME", None)
    env["XDG_RUNTIME_DIR"] = str(tmp_path / "no-manager-here")  # systemctl --user finds nothing

    def braincue(*args: str) -> str:
        done = subprocess.run([str(BIN / "braincue"), "service", *args], env=env,
                              capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stderr
        return done.stdout

    out = braincue("install")
    unit = home / ".config/systemd/user/braincue.service"
    assert f"wrote the systemd user unit {unit}" in out
    assert f'Environment=BRAINCUE_HOME={tmp_path / "bc"}' in unit.read_text()
    assert "up to date" in braincue("install")
    status = braincue("status")
    assert "systemd user unit: installed" in status and "daemon: not running" in status
    braincue("uninstall")
    assert not unit.exists()
    assert not (home / ".config/autostart/braincue-tray.desktop").exists()
