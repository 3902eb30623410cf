"""What the handlers see of the running daemon: one Protocol, which ``daemon.app.Daemon`` meets.

The handlers are typed against this, never against the app, so that the import direction stays
app -> handlers -> domain and a handler's test can pass any object that has these members.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager
from typing import Protocol

import trio

from daemon.config import Paths, Settings
from daemon.engines import Engines
from daemon.ipc.dispatch import Handlers
from daemon.ipc.protocol import Event
from daemon.live.actor import Live
from daemon.live.records import LiveState
from daemon.process.supervisor import ModelProcess
from daemon.store.store import Store


class Context(Protocol):
    """The running daemon (see ``daemon.app`` for each member). The status and settings
    handlers are registered before the store opens, and use only what needs no store."""

    settings: Settings  # the current ones; SettingsSet replaces them

    @property
    def paths(self) -> Paths: ...

    @property
    def started_at(self) -> float: ...

    def models_loaded(self) -> list[str]: ...

    def capture_state(self) -> str: ...

    def model_processes(self) -> list[ModelProcess]: ...

    def live_status(self) -> LiveState | None: ...

    async def counts(self) -> dict[str, int]: ...

    def ipc_stats(self) -> dict[str, int]: ...

    async def settings_changed(self, settings: Settings) -> None: ...

    handlers: Handlers
    engines: Engines
    live: Live | None  # set by the live part; None before it or without it
    stopping: threading.Event  # set when shutdown starts, for long loops on threads
    counters: list[Callable[[], Awaitable[dict[str, int]]]]
    settings_listeners: list[Callable[[Settings], Awaitable[None]]]

    @property
    def store(self) -> Store: ...

    @property
    def nursery(self) -> trio.Nursery: ...

    def publish(self, event: Event) -> None: ...

    def watch_subscribers(self, topic: str) -> AbstractContextManager[trio.Event]: ...
