"""For tests and benchmarks: a real daemon in a subprocess, ready when systemd would say so."""

from __future__ import annotations

import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def short_home() -> Path:
    """A fresh BRAINCUE_HOME with a path short enough for the sockets inside it."""
    return Path(tempfile.mkdtemp(prefix="bc-", dir="/tmp"))


class DaemonProcess:
    def __init__(self, process: subprocess.Popen[bytes], home: Path, log_path: Path) -> None:
        self.process = process
        self.home = home
        self.log_path = log_path

    @property
    def pid(self) -> int:
        return self.process.pid

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def rss_bytes(self) -> int:
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        raise RuntimeError(f"no VmRSS for pid {self.pid}")

    def stop(self, sig: signal.Signals = signal.SIGTERM, timeout: float = 20.0) -> int:
        """Send ``sig`` and return the exit code (negative: killed by a signal)."""
        if self.process.poll() is None:
            self.process.send_signal(sig)
        return self.process.wait(timeout)


def daemon_command(profile: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "daemon", "--profile", profile, *extra]


def daemon_env(home: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, "BRAINCUE_HOME": str(home), **extra}


def start_daemon(home: Path, *, profile: str = "default", timeout: float = 60.0,
                 args: Sequence[str] = (), env: Mapping[str, str] | None = None,
                 command: Sequence[str] | None = None, root: Path | None = None
                 ) -> DaemonProcess:
    """Run ``python -m daemon`` (or ``command``, a daemon with scripted models say) from the
    checkout ``root`` (default: this one; another is, e.g., the code before a change) and return
    once it sent READY=1 to its NOTIFY_SOCKET."""
    notify_path = home / f"notify-{uuid.uuid4().hex[:8]}.sock"
    log_path = home / f"daemon-{uuid.uuid4().hex[:8]}.log"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as notify, open(log_path, "wb") as log:
        notify.bind(str(notify_path))
        process = subprocess.Popen(
            list(command) if command is not None else daemon_command(profile, *args),
            env=daemon_env(home, NOTIFY_SOCKET=str(notify_path), **(env or {})),
            cwd=PROJECT_ROOT if root is None else root,
            stdin=subprocess.DEVNULL, stdout=log, stderr=log,
        )
        started = DaemonProcess(process, home, log_path)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            readable, _, _ = select.select([notify], [], [], 0.2)
            if readable and b"READY=1" in notify.recv(4096).split(b"\n"):
                os.unlink(notify_path)
                return started
            if process.poll() is not None:
                raise RuntimeError(f"the daemon exited with {process.returncode}:\n{started.log()}")
        started.stop(signal.SIGKILL)
        raise RuntimeError(f"the daemon was not ready within {timeout} s:\n{started.log()}")
