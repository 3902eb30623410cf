"""A daemon running in the test's own trio run (``daemon.app.serve``), for as long as a block.

The in-process twin of ``daemon.ipc.testing.start_daemon`` (a subprocess): the test reaches
the store and the parts directly while clients talk to the daemon over its real sockets.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
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
