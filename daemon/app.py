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

import trio

from daemon.config import Config

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
        self.started_at = time.time()


async def serve(
    config: Config, *, task_status: trio.TaskStatus[Daemon] = trio.TASK_STATUS_IGNORED
) -> None:
    """Open the profile and run until cancelled."""
    config.paths.ensure()
    daemon = Daemon(config)
    log.info("braincued: profile %s, data in %s", config.paths.profile, config.paths.data_dir)
    task_status.started(daemon)
    notify_systemd("READY=1")
    try:
        await trio.sleep_forever()
    finally:
        notify_systemd("STOPPING=1")
        log.info("braincued: stopped")


async def run_until_signalled(config: Config) -> None:
    """Run ``serve`` until SIGTERM or SIGINT, then shut down cleanly."""
    async with trio.open_nursery() as nursery:
        with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            await nursery.start(serve, config)
            async for signum in signals:
                log.info("braincued: %s received, shutting down", signal.Signals(signum).name)
                nursery.cancel_scope.cancel()
                break
