"""The daemon: one trio nursery that wires every part.

``serve(config, task_status=...)`` can be started by a nursery and stopped by cancelling it,
which is how tests run it in-process; ``main()`` in ``daemon.__main__`` runs it until
SIGTERM/SIGINT.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import time
from collections.abc import Awaitable, Callable

import trio

from daemon.config import Config, Paths
from daemon.errors import user_error
from daemon.ipc.builtin import register_builtin
from daemon.ipc.live import register_live
from daemon.ipc.protocol import LiveStatus
from daemon.ipc.server import Handlers, IpcServer, serve_ipc
from daemon.live import Live
from daemon.store.store import Store

log = logging.getLogger("braincue")


def notify_systemd(state: str) -> None:
    """Send ``state`` (e.g. ``READY=1``) to systemd when it asked for notifications."""
    address = os.environ.get("NOTIFY_SOCKET")
    if not address:
        return
    if address.startswith("@"):
        address = "\0" + address[1:]
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        try:
            sock.connect(address)
            sock.sendall(state.encode())
        except OSError as e:
            log.warning("could not notify systemd at %s: %s", address, e)


class Daemon:
    """What one running daemon holds for its profile."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.settings = config.settings  # the live settings; SettingsSet replaces them
        self.started_at = time.time()
        self.handlers = Handlers()  # request handlers; parts register theirs when they open
        self.ipc: IpcServer | None = None
        # Each part that owns countable things (sessions, turns, ...) adds a counter here.
        self.counters: list[Callable[[], Awaitable[dict[str, int]]]] = []
        self.store: Store | None = None
        self.live: Live | None = None

    @property
    def paths(self) -> Paths:
        return self.config.paths

    def models_loaded(self) -> list[str]:
        speech = None if self.live is None else self.live.speech_model_loaded()
        return [] if speech is None else [speech]

    def capture_state(self) -> str:
        return "off" if self.live is None else self.live.capture_state()

    def live_status(self) -> LiveStatus | None:
        return None if self.live is None else self.live.status()

    async def counts(self) -> dict[str, int]:
        merged: dict[str, int] = {}
        for counter in self.counters:
            merged.update(await counter())
        return merged


async def serve(
    config: Config, *, task_status: trio.TaskStatus[Daemon] = trio.TASK_STATUS_IGNORED
) -> None:
    """Open the profile and run until cancelled."""
    config.paths.ensure()
    daemon = Daemon(config)
    try:
        async with trio.open_nursery() as nursery:
            # First: the IPC server takes the profile's lock, so a second daemon stops here.
            daemon.ipc = await nursery.start(serve_ipc, config.paths, daemon.handlers)
            register_builtin(daemon.handlers, daemon, daemon.ipc)
            daemon.store = await trio.to_thread.run_sync(Store.open, config.paths)
            try:
                async with trio.open_nursery() as parts:
                    daemon.live = Live(daemon.store, lambda: daemon.settings,
                                       config.paths.models_dir, daemon.ipc.publish,
                                       capture=capture_enabled())
                    await parts.start(daemon.live.run)
                    register_live(daemon.handlers, daemon.live)
                    log.info("braincued: profile %s, data in %s",
                             config.paths.profile, config.paths.data_dir)
                    task_status.started(daemon)
                    notify_systemd("READY=1")
                    try:
                        await trio.sleep_forever()
                    finally:
                        notify_systemd("STOPPING=1")
            finally:
                # after every part that writes has stopped
                with trio.CancelScope(shield=True):
                    await trio.to_thread.run_sync(daemon.store.close)
    finally:
        log.info("braincued: stopped")


def capture_enabled() -> bool:
    """Capture runs unless ``BRAINCUE_CAPTURE`` is 0/off/false (the tests' default)."""
    return os.environ.get("BRAINCUE_CAPTURE", "on").strip().lower() not in {"0", "off", "false"}


async def run_until_signalled(config: Config) -> None:
    """Run ``serve`` until SIGTERM or SIGINT, then shut down cleanly.

    A BrainCueError that stops the daemon (e.g. another daemon holds the profile) is raised
    bare, not inside the nurseries' exception groups, so that it is reported in one line.
    """
    try:
        async with trio.open_nursery() as nursery:
            with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                await nursery.start(serve, config)
                async for signum in signals:
                    log.info("braincued: %s received, shutting down",
                             signal.Signals(signum).name)
                    nursery.cancel_scope.cancel()
                    break
    except BaseExceptionGroup as group:
        raise user_error(group) or group from None

