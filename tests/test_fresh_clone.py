"""The quick start on a fresh clone, on a machine whose display is a virtual X server.

`scripts/run-daemon --no-desktop` installs BrainCue without the desktop clients into the
clone's own virtualenv, checks the models already in place and runs the daemon: there, where
PySide6 is missing, `braincue window` and `braincue service install` say what to install.
`scripts/run-daemon` at the display then adds the desktop clients; the clone's `braincue tray`
and `braincue window` start against its daemon and show they are connected by what they do
there (the tray asks "Keep this conversation?" when a session ends and keeps it; the window
keeps another from the keyboard); then all three stop cleanly.

Only the models come from outside the clone (the shared models directory, checked, not
installed again); the Python packages are installed as a new user's are. The tray finds no
notification server (no session bus), so its question opens in a window, which xdotool finds
and answers as a user would."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from desktopkit import start_xvfb

from clients.desktop.keep import QUESTION
from daemon.ipc.testing import PROJECT_ROOT, DaemonProcess, start_daemon
from daemon.models.registry import DEFAULTS

# a fresh virtualenv with every dependency, and llama.cpp compiled when the wheel cache has
# no build for this CPU yet
INSTALL_S = 1500.0
pytestmark = [pytest.mark.slow, pytest.mark.timeout(2400)]

TOOLS = ("git", "Xvfb", "xdotool")


def wait_for(condition: Callable[[], Any], what: str, timeout: float = 60.0) -> Any:
    """Ask ``condition()`` (a command run: that paces the polling) until it answers something
    true; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not (found := condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
    return found


def fresh_clone(into: Path) -> Path:
    """A clone of this checkout's commit: no virtualenv, nothing built."""
    git = ["git", "-c", "safe.directory=*", "-c", "advice.detachedHead=false"]
    subprocess.run([*git, "clone", "--quiet", str(PROJECT_ROOT), str(into)], check=True,
                   timeout=300)

    def head(root: Path) -> str:
        return subprocess.run([*git, "-C", str(root), "rev-parse", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()

    assert head(into) == head(PROJECT_ROOT)
    assert not (into / ".venv").exists()
    return into


@pytest.fixture
def display() -> Iterator[str]:
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"needs {', '.join(missing)} (scripts/setup.sh --dev installs them)")
    process, name = start_xvfb()
    yield name
    process.terminate()
    process.wait(10)


@pytest.fixture
def new_user(display: str, short_home: Path, tmp_path: Path,
             monkeypatch: pytest.MonkeyPatch) -> Path:
    """The environment of a user at that display, outside this test run's virtualenv: the
    clone's own programs and code only, a profile and runtime folder of their own."""
    venv_bin = Path(sys.executable).parent.resolve()
    path = [p for p in os.environ["PATH"].split(os.pathsep) if Path(p).resolve() != venv_bin]
    monkeypatch.setenv("PATH", os.pathsep.join(path))
    for name in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "WAYLAND_DISPLAY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.setenv("DISPLAY", display)
    monkeypatch.setenv("QT_QPA_PLATFORM", "xcb")
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    # no session bus, so no notification server: the keep question opens in a window
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", f"unix:path={runtime / 'no-bus'}")
    # the models the quick start installs are the wheels' defaults, in place already
    monkeypatch.setenv("BRAINCUE_MODEL_SOURCE", "wheels")
    return short_home


def xdotool(*args: str, timeout: float = 60) -> str:
    try:
        done = subprocess.run(["xdotool", *args], capture_output=True, text=True, check=False,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"xdotool {' '.join(args)}: nothing within {timeout} s") from None
    assert done.returncode == 0, f"xdotool {' '.join(args)}: {done.stderr}"
    return done.stdout


def titled(title: str) -> str:
    """The pattern (a POSIX extended regular expression) of exactly ``title``."""
    return "^" + "".join(f"\\{c}" if c in ".[]()*+?{}|^$\\" else c for c in title) + "$"


def answer_window(title: str, *keys: str) -> None:
    """Wait for a mapped window titled ``title``, focus it and press ``keys`` there."""
    # only a mapped window takes the focus, and Qt may name a window before it maps it
    window = xdotool("search", "--sync", "--onlyvisible", "--name", titled(title)).split()[0]
    xdotool("windowfocus", "--sync", window, timeout=10)
    xdotool("key", *keys, timeout=10)


class Clone:
    """The clone's `braincue`, on the new user's profile."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.bin = root / ".venv" / "bin"

    def run(self, *args: str, fails: bool = False, env: dict[str, str] | None = None) -> str:
        """What `braincue ARGS` printed (its errors where it ``fails``, as it must then)."""
        done = subprocess.run([str(self.bin / "braincue"), *args], cwd=self.root,
                              env={**os.environ, **(env or {})}, capture_output=True, text=True,
                              check=False, timeout=120)
        assert (done.returncode != 0) == fails, f"braincue {' '.join(args)}: {done.stderr}"
        return done.stderr if fails else done.stdout

    def json(self, *args: str) -> Any:
        return json.loads(self.run(*args, "--json"))

    def session(self, session_id: int) -> dict[str, Any]:
        [found] = [s for s in self.json("sessions") if s["id"] == session_id]
        return dict(found)

    def ended_session(self, title: str) -> int:
        self.run("start", "--space", "Atlas", "--title", title)
        self.run("stop")
        return int(self.json("sessions")[0]["id"])

    def start(self, command: str, log: Path) -> subprocess.Popen[bytes]:
        with open(log, "wb") as out:
            return subprocess.Popen([str(self.bin / "braincue"), command], cwd=self.root,
                                    stdin=subprocess.DEVNULL, stdout=out, stderr=out)

    def requests_from_others(self, before: int) -> Callable[[], int]:
        """How many requests the daemon received from others than this poll since it read
        ``before`` (a poll is one request, counted in its own reply)."""
        polls = 0

        def others() -> int:
            nonlocal polls
            polls += 1
            return int(self.json("status")["ipc"]["received"]) - before - polls

        return others


def running(client: subprocess.Popen[bytes], log: Path) -> bool:
    """True while ``client`` runs; a client that ended fails the test with what it said."""
    assert client.poll() is None, f"it exited with {client.returncode}: {log.read_text()}"
    return True


def stop(client: subprocess.Popen[bytes], log: Path) -> None:
    """Stop a desktop client as the session's end does (SIGTERM): it quits with 0."""
    client.send_signal(signal.SIGTERM)
    assert client.wait(30) == 0, log.read_text(errors="replace")


def quick_start(root: Path, home: Path, *args: str) -> DaemonProcess:
    """`scripts/run-daemon ARGS` in the clone, once its daemon is ready."""
    daemon = start_daemon(home, command=[str(root / "scripts" / "run-daemon"), *args],
                          root=root, timeout=INSTALL_S)
    said = daemon.log()
    for model in DEFAULTS["wheels"]:  # in place, checked: none fetched
        assert f"{model}: already installed" in said, said
    return daemon


def test_a_fresh_clone_runs_the_daemon_tray_and_window_from_the_quick_start(
        new_user: Path, tmp_path: Path) -> None:
    root = fresh_clone(tmp_path / "braincue")
    clone = Clone(root)
    daemon: DaemonProcess | None = None
    clients: list[subprocess.Popen[bytes]] = []
    # `braincue service install` writes into the user's home: this one's
    service = {"HOME": str(tmp_path / "home")}
    try:
        # without the desktop (as asked, or on a machine with no display): no PySide6, and
        # what needs it says what to install
        daemon = quick_start(root, new_user, "--no-desktop")
        said = daemon.log()
        assert "installing BrainCue into .venv" in said and "[desktop]" not in said, said
        assert ("the desktop clients need the `desktop` extra (PySide6 is missing)"
                in clone.run("window", fails=True))
        installed = clone.run("service", "install", env=service)
        assert ("the tray and the hotkey cannot start: PySide6 is missing; install the "
                "`desktop` extra" in installed), installed
        assert daemon.stop() == 0, daemon.log()

        # at the display: the desktop extra joins the same virtualenv, and the service
        # installed again starts the tray and the hotkey too
        daemon = quick_start(root, new_user)
        assert "installing BrainCue[desktop] into .venv" in daemon.log(), daemon.log()
        assert "cannot start" not in clone.run("service", "install", env=service)
        assert "tray and hotkey: can start" in clone.run("service", "status", env=service)
        imported = subprocess.run(
            [str(clone.bin / "python"), "-c", "import clients.tray, clients.window, daemon\n"
             "print(clients.tray.__file__, daemon.__file__)"],
            cwd=tmp_path, capture_output=True, text=True, check=False, timeout=120)
        assert imported.returncode == 0, imported.stderr
        files = imported.stdout.split()
        assert files and all(Path(f).is_relative_to(root) for f in files), files
        assert clone.json("status")["pid"] == daemon.pid
        clone.run("spaces", "add", "Atlas")

        # the tray: once it follows the daemon, a session that ends is asked about, and kept
        tray_log = tmp_path / "tray.log"
        before = int(clone.json("status")["ipc"]["received"])
        clients.append(tray := clone.start("tray", tray_log))
        others = clone.requests_from_others(before)
        wait_for(lambda: running(tray, tray_log) and others() > 0,
                 "the tray to ask the daemon its status")
        kept = clone.ended_session("Quick start check")
        answer_window(QUESTION, "Return")  # its default: keep it where it ran
        wait_for(lambda: clone.session(kept)["status"] == "kept", "the session to be kept")
        assert clone.session(kept)["space"] == "Atlas"
        stop(tray, tray_log)

        # the window: it lists the sessions, and keeps one from the keyboard
        window_log = tmp_path / "window.log"
        second = clone.ended_session("Kept from the window")
        assert clone.session(second)["status"] != "kept"
        clients.append(window := clone.start("window", window_log))

        def kept_from_the_window() -> bool:
            # the newest session is the first row under its Space's; until the list is loaded
            # and the session shown, the keys do nothing, so they are pressed again
            running(window, window_log)
            answer_window("BrainCue — default", "ctrl+l", "Home", "Down", "alt+k")
            return bool(clone.session(second)["status"] == "kept")

        wait_for(kept_from_the_window, "the window to keep the session")
        assert clone.session(second)["space"] == "Atlas"
        stop(window, window_log)
        assert "unreachable" not in tray_log.read_text() + window_log.read_text()

        assert daemon.stop() == 0, daemon.log()
    finally:
        for client in clients:
            if client.poll() is None:
                client.kill()
                client.wait()
        if daemon is not None:
            daemon.stop(signal.SIGKILL)
        shutil.rmtree(root / ".venv", ignore_errors=True)  # 0.7 GB; the logs stay
