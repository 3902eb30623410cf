"""Where a profile's daemon listens, and the lock that makes it the only one.

Both live in the profile's runtime directory (private to the user): the request socket, the
event socket and ``daemon.lock``. The lock is an ``flock`` held for the daemon's lifetime, so the
kernel releases it when the daemon dies, however it dies; the file holds the pid for messages.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from daemon.config import Paths
from daemon.errors import ConfigError, DaemonAlreadyRunning

# sun_path holds 108 bytes including the terminating NUL.
SOCKET_PATH_MAX = 107


@dataclass(frozen=True)
class RuntimeFiles:
    profile: str
    directory: Path

    @classmethod
    def of(cls, paths: Paths) -> RuntimeFiles:
        return cls(paths.profile, paths.runtime_dir)

    @property
    def requests(self) -> Path:
        return self.directory / "rpc.sock"

    @property
    def events(self) -> Path:
        return self.directory / "events.sock"

    @property
    def lock(self) -> Path:
        return self.directory / "daemon.lock"

    def check_socket_paths(self) -> None:
        for path in (self.requests, self.events):
            size = len(os.fsencode(path))
            if size > SOCKET_PATH_MAX:
                raise ConfigError(
                    f"the socket path {path} is {size} bytes, over the {SOCKET_PATH_MAX} bytes "
                    "the OS allows",
                    fix="point XDG_RUNTIME_DIR (or BRAINCUE_HOME) at a shorter directory",
                )


def endpoint(path: Path) -> str:
    return f"ipc://{path}"


def make_private_dir(directory: Path) -> None:
    """Create ``directory`` (0700) and refuse one that belongs to someone else."""
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    if directory.stat().st_uid != os.geteuid():
        raise ConfigError(
            f"{directory} belongs to another user",
            fix="remove it, or point XDG_RUNTIME_DIR (or BRAINCUE_HOME) elsewhere",
        )
    os.chmod(directory, 0o700)


class DaemonLock:
    """The held lock of a running daemon; :meth:`release` removes the file."""

    def __init__(self, fd: int, path: Path) -> None:
        self._fd = fd
        self.path = path

    def release(self) -> None:
        # Unlink while still holding the lock: a daemon starting now either locked this file
        # before (and is refused) or will create a new one.
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
        os.close(self._fd)


def acquire_lock(files: RuntimeFiles) -> DaemonLock:
    """Become the profile's daemon, or raise :class:`DaemonAlreadyRunning` naming the other."""
    while True:
        fd = os.open(files.lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = _read_pid(fd)
            os.close(fd)
            raise DaemonAlreadyRunning(
                f"a BrainCue daemon (pid {pid or '?'}) is already running for profile "
                f"{files.profile!r}",
                fix=f"stop it first (kill {pid or '<pid>'}) or use another --profile",
            ) from None
        if _is_current_file(fd, files.lock):
            break
        os.close(fd)  # the previous daemon removed the file after we opened it: try again
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n".encode())
    return DaemonLock(fd, files.lock)


def _is_current_file(fd: int, path: Path) -> bool:
    try:
        on_disk = os.stat(path)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (held.st_dev, held.st_ino) == (on_disk.st_dev, on_disk.st_ino)


def _read_pid(fd: int) -> int | None:
    try:
        return int(os.pread(fd, 32, 0).decode().strip())
    except (OSError, ValueError):
        return None


@contextlib.contextmanager
def profile_lock(paths: Paths) -> Iterator[RuntimeFiles]:
    """Hold the profile's daemon lock, in its private runtime directory, for the block.

    Raises DaemonAlreadyRunning when another daemon holds it, ConfigError when the socket paths
    would be too long or the runtime directory is not ours.
    """
    files = RuntimeFiles.of(paths)
    files.check_socket_paths()
    make_private_dir(files.directory)
    lock = acquire_lock(files)
    try:
        yield files
    finally:
        lock.release()
