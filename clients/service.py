"""Run BrainCue at login: the daemon as a user service, the tray and hotkey clients beside it.

`braincue service install|uninstall|status` writes, enables and removes, for the current user:

- Linux: the systemd user unit ``braincue.service`` (``$XDG_CONFIG_HOME/systemd/user``), enabled
  with ``systemctl --user enable --now`` when a user manager runs (not in most containers: then
  the unit is written and the message says how to start the daemon), and XDG autostart entries
  for ``braincue tray`` and ``braincue hotkey`` (``$XDG_CONFIG_HOME/autostart``).
- macOS: LaunchAgents for the daemon and the tray in ``~/Library/LaunchAgents``.

The unit and the plist are rendered here, from the absolute paths of this installation; the
copies in ``systemd/`` and ``launchd/`` at the top of the repository are the same templates
rendered with default paths (a test keeps them equal). A profile other than the default gets
files of its own (``braincue-<profile>.service``...), so each profile can run its own daemon.
"""

from __future__ import annotations

import os
import plistlib
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from daemon.config import DEFAULT_PROFILE, Paths
from daemon.errors import ConfigError

Platform = Literal["linux", "macos"]
Runner = Callable[[Sequence[str]], "subprocess.CompletedProcess[str]"]

AGENT_LABEL = "com.braincue.daemon"
TRAY_AGENT_LABEL = "com.braincue.tray"
# Environment that relocates BrainCue's files: carried into the service, which does not inherit
# the shell's environment.
RELOCATING_ENV = ("BRAINCUE_HOME", "BRAINCUE_MODELS")

_UNIT = """\
# BrainCue: the conversation memory daemon, as a systemd user service.
# `braincue service install` writes this file with the paths of your installation.
[Unit]
Description=BrainCue conversation memory daemon{profile_note}

[Service]
Type=notify
ExecStart={exec_start}
Restart=on-failure
RestartSec=2
TimeoutStopSec=20
Environment=PYTHONUNBUFFERED=1
{environment}\
# Sockets in $XDG_RUNTIME_DIR/braincue, created here because the sandbox below makes the rest of
# /run/user read-only; kept at stop, since other profiles' daemons may use it too.
RuntimeDirectory=braincue
RuntimeDirectoryMode=0700
RuntimeDirectoryPreserve=yes
UMask=0077

# Sandbox. The daemon writes only its own directories; audio comes through the PulseAudio /
# PipeWire socket in $XDG_RUNTIME_DIR (connecting to a socket works on a read-only mount) and
# /dev/shm stays shared, so capture is unaffected. It needs no network at all: models are
# installed by the `braincue` command, not by the daemon.
NoNewPrivileges=yes
PrivateTmp=yes
ProtectSystem=strict
ProtectHome=read-only
{read_write_paths}\
RestrictAddressFamilies=AF_UNIX
RestrictNamespaces=yes
RestrictRealtime=yes
RestrictSUIDSGID=yes
LockPersonality=yes
ProtectKernelTunables=yes
ProtectKernelModules=yes
ProtectKernelLogs=yes
ProtectControlGroups=yes
ProtectClock=yes
ProtectHostname=yes
SystemCallArchitectures=native
SystemCallFilter=@system-service
# Not MemoryDenyWriteExecute: the audio library's cffi callbacks need writable code pages.

[Install]
WantedBy=default.target
"""

DEFAULT_BRAINCUED = "%h/.local/bin/braincued"
DEFAULT_WRITABLE = (
    "%h/.config/braincue",
    "%h/.local/share/braincue",
    "%h/.cache/braincue",
)


def unit_text(
    exec_start: Sequence[str],
    writable: Iterable[str],
    environment: Mapping[str, str] | None = None,
    profile: str = DEFAULT_PROFILE,
) -> str:
    """The systemd unit. Arguments are literal except a leading ``%h`` or ``%t`` specifier."""
    env_lines = "".join(
        f"Environment={_systemd_word(f'{key}={value}')}\n"
        for key, value in (environment or {}).items()
    )
    return _UNIT.format(
        profile_note="" if profile == DEFAULT_PROFILE else f" (profile {profile})",
        exec_start=" ".join(_systemd_word(arg) for arg in exec_start),
        environment=env_lines,
        read_write_paths="".join(f"ReadWritePaths=-{_systemd_word(p)}\n" for p in writable),
    )


def default_unit() -> str:
    """The unit as shipped in ``systemd/braincue.service``: paths of a ``pipx`` install."""
    return unit_text([DEFAULT_BRAINCUED], DEFAULT_WRITABLE)


def _systemd_word(text: str) -> str:
    """``text`` as one word of a unit file setting: specifiers escaped (except a leading
    ``%h``/``%t`` we put there), quoted when it holds spaces or quotes."""
    specifier = text[:2] if text[:2] in ("%h", "%t") else ""
    literal = text[len(specifier):].replace("%", "%%")
    word = specifier + literal
    if re.search(r"[\s\"'\\;]", word):
        word = '"' + word.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return word


def agent_plist(
    label: str,
    program: Sequence[str],
    log_path: str,
    *,
    keep_alive: bool,
    environment: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A LaunchAgent: started at login; with ``keep_alive``, restarted when it fails."""
    agent: dict[str, Any] = {
        "Label": label,
        "ProgramArguments": list(program),
        "RunAtLoad": True,
        "StandardOutPath": log_path,
        "StandardErrorPath": log_path,
        "EnvironmentVariables": {"PYTHONUNBUFFERED": "1", **(environment or {})},
    }
    if keep_alive:
        agent["KeepAlive"] = {"SuccessfulExit": False}  # like Restart=on-failure
        agent["ProcessType"] = "Interactive"  # capture must not be throttled as background work
    return agent


def default_agent() -> dict[str, Any]:
    """The daemon's LaunchAgent as shipped in ``launchd/``: paths of a Homebrew-style install."""
    return agent_plist(AGENT_LABEL, ["/usr/local/bin/braincued"], "/tmp/braincued.log",
                       keep_alive=True)


def plist_bytes(agent: Mapping[str, Any]) -> bytes:
    return plistlib.dumps(dict(agent), sort_keys=False)


def autostart_entry(name: str, comment: str, exec_args: Sequence[str]) -> str:
    """An XDG autostart ``.desktop`` entry that runs ``exec_args`` at login."""
    return (
        "[Desktop Entry]\n"
        "Type=Application\n"
        f"Name={name}\n"
        f"Comment={comment}\n"
        f"Exec={desktop_exec(exec_args)}\n"
        "Terminal=false\n"
        "NoDisplay=true\n"
        "X-GNOME-Autostart-enabled=true\n"
    )


def desktop_exec(args: Sequence[str]) -> str:
    """An Exec= value (Desktop Entry spec): reserved characters quoted and escaped, the
    string-level escape of backslashes applied after the quoting rule, ``%`` doubled."""
    words = []
    for arg in args:
        word = arg.replace("%", "%%")
        if re.search(r"[\s\"'\\><~|&;$*?#()`]", word):
            word = '"' + re.sub(r'(["`$\\])', r"\\\1", word) + '"'
        words.append(word.replace("\\", "\\\\"))
    return " ".join(words)


# ---------------------------------------------------------------------------------------------
# Where the files go for this user


@dataclass(frozen=True)
class Layout:
    """Where the service files of one user and profile go, and the programs they run."""

    platform: Platform
    home: Path
    config_home: Path  # $XDG_CONFIG_HOME
    runtime_home: Path | None  # $XDG_RUNTIME_DIR
    braincued: Path
    braincue: Path
    profile: str = DEFAULT_PROFILE
    environment: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def current(cls, profile: str = DEFAULT_PROFILE) -> Layout:
        """This user, this machine, the programs of this installation."""
        home = Path.home()
        runtime = os.environ.get("XDG_RUNTIME_DIR")
        return cls(
            platform="macos" if sys.platform == "darwin" else "linux",
            home=home,
            config_home=Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config"),
            runtime_home=Path(runtime) if runtime else None,
            braincued=installed_program("braincued"),
            braincue=installed_program("braincue"),
            profile=profile,
            environment={k: os.environ[k] for k in RELOCATING_ENV if os.environ.get(k)},
        )

    @property
    def _suffix(self) -> str:
        return "" if self.profile == DEFAULT_PROFILE else f"-{self.profile}"

    @property
    def _profile_args(self) -> list[str]:
        return [] if self.profile == DEFAULT_PROFILE else ["--profile", self.profile]

    @property
    def unit_name(self) -> str:
        return f"braincue{self._suffix}.service"

    @property
    def unit_path(self) -> Path:
        return self.config_home / "systemd" / "user" / self.unit_name

    def autostart_path(self, client: str) -> Path:
        return self.config_home / "autostart" / f"braincue{self._suffix}-{client}.desktop"

    def agent_label(self, base: str) -> str:
        return base + (f".{self.profile}" if self._suffix else "")

    def agent_path(self, base: str) -> Path:
        return self.home / "Library" / "LaunchAgents" / f"{self.agent_label(base)}.plist"

    @property
    def log_dir(self) -> Path:
        return self.home / "Library" / "Logs" / "BrainCue"

    def daemon_command(self) -> list[str]:
        return [str(self.braincued), *self._profile_args]

    def client_command(self, client: str) -> list[str]:
        return [str(self.braincue), *self._profile_args, client]

    def systemd_path(self, path: Path) -> str:
        """``path`` with $XDG_RUNTIME_DIR as ``%t`` and the home directory as ``%h``."""
        for root, specifier in ((self.runtime_home, "%t"), (self.home, "%h")):
            if root is not None and path.is_relative_to(root):
                return specifier + "/" + str(path.relative_to(root))
        return str(path)


def installed_program(name: str) -> Path:
    """The console script ``name`` of the installation this code runs from."""
    beside = Path(sys.executable).parent / name  # a virtualenv's bin, not resolved
    if beside.is_file() and os.access(beside, os.X_OK):
        return beside.absolute()
    found = shutil.which(name)
    if found is None:
        raise ConfigError(f"cannot find the {name} program",
                          fix="install BrainCue (scripts/setup.sh, or pip install braincue) "
                              f"so that {name} is on PATH")
    return Path(found).absolute()


def writable_dirs(paths: Paths) -> list[Path]:
    """The directories the daemon writes to (outermost first, none inside another)."""
    candidates = [paths.config_dir, paths.data_root, paths.cache_dir, paths.models_dir,
                  paths.runtime_root]
    kept: list[Path] = []
    for path in sorted(candidates, key=lambda p: len(p.parts)):
        if not any(path.is_relative_to(parent) for parent in kept):
            kept.append(path)
    return kept


@dataclass(frozen=True)
class WrittenFile:
    path: Path
    content: bytes
    what: str
    client: bool = False  # a desktop client's (the tray's, the hotkey's)


def files_for(layout: Layout, paths: Paths, *, desktop: bool = True) -> list[WrittenFile]:
    """Every file ``install`` writes, with its content (``desktop`` false: the daemon's only,
    not the desktop clients')."""
    return [f for f in _all_files(layout, paths) if desktop or not f.client]


def _all_files(layout: Layout, paths: Paths) -> list[WrittenFile]:
    if layout.platform == "macos":
        env = layout.environment
        daemon = agent_plist(layout.agent_label(AGENT_LABEL), layout.daemon_command(),
                             str(layout.log_dir / "braincued.log"), keep_alive=True,
                             environment=env)
        tray_agent = agent_plist(layout.agent_label(TRAY_AGENT_LABEL),
                                 layout.client_command("tray"), str(layout.log_dir / "tray.log"),
                                 keep_alive=False, environment=env)
        return [
            WrittenFile(layout.agent_path(AGENT_LABEL), plist_bytes(daemon), "daemon LaunchAgent"),
            WrittenFile(layout.agent_path(TRAY_AGENT_LABEL), plist_bytes(tray_agent),
                        "tray LaunchAgent", client=True),
        ]
    unit = unit_text(
        layout.daemon_command(),
        [layout.systemd_path(p) for p in writable_dirs(paths)],
        layout.environment,
        layout.profile,
    )
    tray = autostart_entry("BrainCue tray", "Asks “Keep this conversation?” when a call ends",
                           layout.client_command("tray"))
    hotkey = autostart_entry("BrainCue hotkey", "Ask your conversation memory from any app",
                             layout.client_command("hotkey"))
    return [
        WrittenFile(layout.unit_path, unit.encode(), "systemd user unit"),
        WrittenFile(layout.autostart_path("tray"), tray.encode(), "tray autostart entry",
                    client=True),
        WrittenFile(layout.autostart_path("hotkey"), hotkey.encode(), "hotkey autostart entry",
                    client=True),
    ]


# ---------------------------------------------------------------------------------------------
# Installing


# what the tray and the hotkey import at start: Qt, and through it the rest of the extra
DESKTOP_IMPORTS = "import clients.tray, clients.hotkey"
DESKTOP_FIX = ("install the `desktop` extra: `pip install 'braincue[desktop]'` (in a checkout: "
               "`scripts/setup.sh --desktop`), then run `braincue service install` again")


def desktop_problem() -> str | None:
    """Why the tray and the hotkey cannot start with this installation (None: they can):
    what they import at start, imported by a fresh Python of this installation."""
    try:
        done = subprocess.run([sys.executable, "-c", DESKTOP_IMPORTS], capture_output=True,
                              text=True, timeout=120, check=False, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"they could not be tried ({e})"
    if done.returncode == 0:
        return None
    last = _last_line(done.stderr)
    missing = re.search(r"No module named '([^']+)'", last)
    if missing:
        return f"{missing.group(1).split('.')[0]} is missing"
    return last or f"importing them failed (status {done.returncode})"


def run_command(args: Sequence[str]) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(list(args), capture_output=True, text=True, timeout=60,
                              check=False, stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        return subprocess.CompletedProcess(list(args), 127, "", f"{args[0]}: not found")


class ServiceManager:
    """Installs, removes and reports the service files of one :class:`Layout`.

    Every method returns the lines to show the user. ``run`` runs systemctl / launchctl
    (replaced in tests).
    """

    def __init__(self, layout: Layout, paths: Paths, run: Runner = run_command,
                 desktop: Callable[[], str | None] = desktop_problem) -> None:
        self.layout = layout
        self.paths = paths
        self.run = run
        self.desktop = desktop  # why the tray and the hotkey cannot start (None: they can)

    def install(self) -> list[str]:
        """Write and enable the daemon's service, and the tray's and the hotkey's when they
        can start here (else say what to install, and set none to start that would fail)."""
        # The sandbox makes everything else read-only, and ReadWritePaths skips a missing
        # directory: create them now.
        self.paths.ensure()
        if self.layout.platform == "macos":
            self.layout.log_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        problem = self.desktop()
        files = files_for(self.layout, self.paths, desktop=problem is None)
        lines = [self._write(f) for f in files]
        if problem is not None:
            for stale in files_for(self.layout, self.paths):
                if stale not in files and stale.path.exists():
                    stale.path.unlink()
                    lines.append(f"removed the {stale.what} {stale.path}: it cannot start")
            lines.append(f"the tray and the hotkey cannot start: {problem}; {DESKTOP_FIX}")
        if self.layout.platform == "macos":
            return lines + self._launchctl_load(tray=problem is None)
        return lines + self._systemctl_enable()

    def uninstall(self) -> list[str]:
        lines: list[str] = []
        if self.layout.platform == "macos":
            lines += self._launchctl_unload()
        elif self._systemd_running() and self.layout.unit_path.exists():
            lines += self._systemctl("disable", "--now", self.layout.unit_name)
        for written in files_for(self.layout, self.paths):
            if written.path.exists():
                written.path.unlink()
                lines.append(f"removed the {written.what} {written.path}")
        if self.layout.platform == "linux" and self._systemd_running():
            lines += self._systemctl("daemon-reload")
        return lines or ["nothing to remove: the service is not installed"]

    def status(self) -> list[str]:
        lines = []
        for written in files_for(self.layout, self.paths):
            if not written.path.exists():
                state = "not installed"
            elif written.path.read_bytes() == written.content:
                state = "installed"
            else:
                state = "installed, but differs from this installation (run install again)"
            lines.append(f"{written.what}: {state} ({written.path})")
        if self.layout.platform == "macos":
            label = self.layout.agent_label(AGENT_LABEL)
            loaded = self.run(["launchctl", "print", f"gui/{os.getuid()}/{label}"])
            lines.append(f"launchd: {'loaded' if loaded.returncode == 0 else 'not loaded'}")
        elif self._systemd_running():
            enabled = self.run(["systemctl", "--user", "is-enabled", self.layout.unit_name])
            active = self.run(["systemctl", "--user", "is-active", self.layout.unit_name])
            lines.append(f"systemd: {_first_line(enabled.stdout) or 'unknown'}, "
                         f"{_first_line(active.stdout) or 'unknown'}")
        else:
            lines.append("systemd: no user service manager is running here")
        problem = self.desktop()
        lines.append("tray and hotkey: " + ("can start" if problem is None
                                             else f"cannot start: {problem}; {DESKTOP_FIX}"))
        return lines

    def _write(self, written: WrittenFile) -> str:
        if written.path.exists() and written.path.read_bytes() == written.content:
            return f"{written.what}: up to date ({written.path})"
        written.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = written.path.with_name(written.path.name + ".tmp")
        tmp.write_bytes(written.content)
        os.replace(tmp, written.path)
        return f"wrote the {written.what} {written.path}"

    def _systemd_running(self) -> bool:
        return self.run(["systemctl", "--user", "show", "--property=Version"]).returncode == 0

    def _systemctl(self, *args: str) -> list[str]:
        done = self.run(["systemctl", "--user", *args])
        command = "systemctl --user " + " ".join(args)
        if done.returncode != 0:
            raise ConfigError(f"`{command}` failed: {_first_line(done.stderr) or done.returncode}",
                              fix="see `journalctl --user -u braincue` and `braincue service "
                                  "status`")
        return [f"ran {command}"]

    def _systemctl_enable(self) -> list[str]:
        if not self._systemd_running():
            return [
                "systemd is not running for this user (a container?): the unit is written "
                f"but not enabled; start the daemon with `{' '.join(self.layout.daemon_command())}`"
            ]
        return [*self._systemctl("daemon-reload"),
                *self._systemctl("enable", "--now", self.layout.unit_name)]

    def _launchctl_load(self, tray: bool = True) -> list[str]:
        lines = self._launchctl_unload(quiet=True)  # bootstrap refuses an agent already loaded
        for base in (AGENT_LABEL, TRAY_AGENT_LABEL) if tray else (AGENT_LABEL,):
            path = self.layout.agent_path(base)
            done = self.run(["launchctl", "bootstrap", f"gui/{os.getuid()}", str(path)])
            if done.returncode != 0:
                raise ConfigError(f"launchctl could not load {path}: "
                                  f"{_first_line(done.stderr) or done.returncode}")
            lines.append(f"loaded {self.layout.agent_label(base)}")
        return lines

    def _launchctl_unload(self, quiet: bool = False) -> list[str]:
        lines = []
        for base in (AGENT_LABEL, TRAY_AGENT_LABEL):
            label = self.layout.agent_label(base)
            done = self.run(["launchctl", "bootout", f"gui/{os.getuid()}/{label}"])
            if done.returncode == 0 and not quiet:
                lines.append(f"unloaded {label}")
        return lines


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""


def _last_line(text: str) -> str:
    return text.strip().splitlines()[-1] if text.strip() else ""
