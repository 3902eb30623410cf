"""For tests: kill a model's process while it serves a request."""

from __future__ import annotations

import os
import signal
from collections.abc import Awaitable, Callable

import trio
import trio.testing

from daemon.process.supervisor import Supervisor


async def killed_while_serving(supervisor: Supervisor, request: Callable[[], Awaitable[None]],
                               sig: signal.Signals, times: int = 1) -> list[int]:
    """Run ``request`` while the process serving it, and each new one started for it up to
    ``times`` processes in all, is killed by ``sig`` once the request waits on it; the pids
    killed."""
    killed: list[int] = []
    async with trio.open_nursery() as nursery:
        nursery.start_soon(request)
        while len(killed) < times:
            await trio.testing.wait_all_tasks_blocked(cushion=0.05)  # sent, or backing off
            if (pid := supervisor.pid) is not None and pid not in killed:
                os.kill(pid, sig)
                killed.append(pid)
    return killed
