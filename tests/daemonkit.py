"""A daemon running in the test's own trio run (``daemon.app.serve``), for as long as a block.

The in-process twin of ``daemon.ipc.testing.start_daemon`` (a subprocess): the test reaches
the store and the parts directly while clients talk to the daemon over its real sockets.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from functools import partial

import trio

from daemon.app import Daemon, serve
from daemon.config import Config
from daemon.engines import Engines


@asynccontextmanager
async def running_daemon(
    engines: Engines | None = None, config: Config | None = None
) -> AsyncIterator[Daemon]:
    """``serve`` the profile of ``BRAINCUE_HOME`` (``config``: loaded from it) until the block
    ends; ``engines``: the models to use instead of the installed ones."""
    async with trio.open_nursery() as nursery:
        daemon: Daemon = await nursery.start(
            partial(serve, config or Config.load(), engines=engines))
        yield daemon
        nursery.cancel_scope.cancel()


async def run_clients(count: int, session: Callable[[int], None]) -> list[BaseException]:
    """Run ``session(n)`` for every n below ``count`` at once, each on a thread of its own, and
    return what they raised."""
    failures: list[BaseException] = []

    def guarded(n: int) -> None:
        try:
            session(n)
        except BaseException as e:
            failures.append(e)

    def run_all() -> None:
        threads = [threading.Thread(target=guarded, args=(n,)) for n in range(count)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    await trio.to_thread.run_sync(run_all)
    return failures
