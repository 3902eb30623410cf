"""The daemon: one trio nursery that wires every part.

``serve(config, task_status=...)`` can be started by a nursery and stopped by cancelling it,
which is how tests run it in-process; ``main()`` in ``daemon.__main__`` runs it until
SIGTERM/SIGINT.

Starting, in order: take the profile's lock (a second daemon stops here), load the embedding
model and open the store, run every part in ``PARTS``, then bind the sockets and report
readiness (``task_status`` and ``READY=1`` to systemd). Requests are answered from the first
one on by every part's handlers.

Stopping (``Daemon.stop()``, or cancelling ``serve``): long store work stops at its next batch
(``Daemon.stopping``), the parts stop (live capture ends the live session), requests in flight
finish, the sockets close and their files are removed; then the store drains its writer and
saves its vector index, the models are freed, and the lock is released last.

Adding a part. A part is ``async def register(daemon: Context) -> None`` (typed against
``daemon.handlers.context.Context``, which this Daemon meets, never against the app) that
registers its request handlers (``daemon.handlers.add(Request, handler)``) and starts its
background tasks (``await daemon.nursery.start(...)`` / ``start_soon``); add it to ``PARTS``
below, one line.
What a part gets from the Daemon:

- ``daemon.store`` (open) and ``await daemon.store.run(fn, *args)`` to run a blocking store
  call off the event loop;
- ``daemon.engines.embedder`` (None without an embedding model) and
  ``daemon.engines.generator()`` (the LLM: loads on first use, unloads when idle; raises
  ModelNotInstalled when there is none);
- ``daemon.publish(event)``, ``daemon.settings`` (always the current ones), ``daemon.paths``;
- ``daemon.counters``: append an async function returning counts for ``status``;
- ``daemon.stopping``: a threading.Event set when shutdown starts, for long loops on threads.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import threading
import time
from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager
from functools import partial

import trio

from daemon.config import Config, Paths, Settings
from daemon.engines import Engines, unload_idle_engines
from daemon.errors import BrainCueError, user_error
from daemon.handlers import ask as ask_requests
from daemon.handlers import atrest, builtin
from daemon.handlers import live as live_requests
from daemon.handlers import memory as memory_requests
from daemon.handlers import open_items as open_items_requests
from daemon.handlers import search as search_requests
from daemon.handlers import store as store_requests
from daemon.handlers import voices as voices_requests
from daemon.handlers.context import Context
from daemon.ipc.dispatch import Handlers
from daemon.ipc.protocol import Event, StatusEvent
from daemon.ipc.runtime import profile_lock
from daemon.ipc.server import IpcServer, serve_ipc
from daemon.live.actor import Live
from daemon.live.records import LiveState
from daemon.models.registry import word_vectors_file
from daemon.process.supervisor import ModelProcess
from daemon.sensitive import judge
from daemon.store.store import Store

log = logging.getLogger("braincue")

EMBED_BATCH_ON_START = 16  # small batches: a shutdown waits for the one in progress


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
    """What one running daemon holds for its profile (see the module docstring)."""

    def __init__(self, config: Config, engines: Engines | None = None) -> None:
        self.config = config
        self.settings = config.settings  # the live settings; SettingsSet replaces them
        self.started_at = time.time()
        self.handlers = Handlers()
        self.engines = engines or Engines(lambda: self.settings, config.paths.models_dir,
                                          profile=config.paths.profile,
                                          config_dir=config.paths.config_dir)
        # the gate's judge places words no list holds by the embedding model's word pieces
        judge.use_vectors(word_vectors_file(config.paths.models_dir))
        self.engines.on_model_death = self._model_died
        self.ipc: IpcServer | None = None
        # Each part that owns countable things (sessions, turns, ...) adds a counter here.
        self.counters: list[Callable[[], Awaitable[dict[str, int]]]] = []
        # Parts that hold on to a setting (an open device, ...) follow its changes here.
        self.settings_listeners: list[Callable[[Settings], Awaitable[None]]] = [
            self.engines.settings_changed
        ]
        self.live: Live | None = None
        self.stopping = threading.Event()
        self._store: Store | None = None
        self._nursery: trio.Nursery | None = None

    @property
    def paths(self) -> Paths:
        return self.config.paths

    @property
    def store(self) -> Store:
        if self._store is None:
            raise RuntimeError("the store is not open yet")
        return self._store

    @property
    def nursery(self) -> trio.Nursery:
        """Where parts run their background tasks; cancelled when the daemon stops."""
        if self._nursery is None:
            raise RuntimeError("the daemon is not running yet")
        return self._nursery

    def publish(self, event: Event) -> None:
        """Send an event to the subscribers (dropped before the sockets are bound)."""
        if self.ipc is not None:
            self.ipc.publish(event)

    def watch_subscribers(self, topic: str) -> AbstractContextManager[trio.Event]:
        """An event set when the last subscriber of ``topic`` leaves (never, before the
        sockets are bound)."""
        if self.ipc is None:
            return contextlib.nullcontext(trio.Event())
        return self.ipc.watch_subscribers(topic)

    def stop(self) -> None:
        """Shut down (see the module docstring): ``serve`` returns once everything is closed."""
        self.publish(StatusEvent(capture="off", message="the daemon is stopping"))
        self.stopping.set()
        self.nursery.cancel_scope.cancel()

    def _model_died(self, priority: str, cause: str) -> None:
        """Say at once that a language model's process died (capture and search go on)."""
        self.publish(StatusEvent(
            capture=self.capture_state(),
            message=f"the language model ({priority}) was {cause}: the request it served "
                    "failed; it restarts on the next one"))

    # -- what status reports -------------------------------------------------------------------

    def models_loaded(self) -> list[str]:
        speech = None if self.live is None else self.live.speech_model_loaded()
        return self.engines.loaded() + ([] if speech is None else [f"asr:{speech}"])

    def capture_state(self) -> str:
        return "off" if self.live is None else self.live.capture_state()

    def model_processes(self) -> list[ModelProcess]:
        """The models that run in processes of their own: the language models, the speech
        model."""
        speech = None if self.live is None else self.live.speech_process()
        return self.engines.model_processes() + ([] if speech is None else [speech])

    def live_status(self) -> LiveState | None:
        return None if self.live is None else self.live.status()

    async def counts(self) -> dict[str, int]:
        merged: dict[str, int] = {}
        for counter in self.counters:
            merged.update(await counter())
        return merged

    def ipc_stats(self) -> dict[str, int]:
        return {} if self.ipc is None else self.ipc.stats.as_dict()

    async def settings_changed(self, settings: Settings) -> None:
        for listener in self.settings_listeners:
            await listener(settings)


Part = Callable[[Context], Awaitable[None]]


async def vectors_catch_up(daemon: Context) -> None:
    """Embed what was stored without a vector (no model then, a failure, a model change)."""

    async def catch_up() -> None:
        embed = partial(daemon.store.index.embed_pending, EMBED_BATCH_ON_START,
                        should_stop=daemon.stopping.is_set)
        try:
            written = await daemon.store.run(embed)
        except BrainCueError as e:
            log.warning("could not embed what was stored without vectors: %s", e)
            return
        if written:
            log.info("embedded %d item(s) stored without vectors", written)

    if daemon.engines.embedder is not None:
        daemon.nursery.start_soon(catch_up)


async def idle_unload(daemon: Context) -> None:
    """The language model leaves memory after ``idle_unload_min`` unused (the speech model
    likewise, in the live part)."""
    daemon.nursery.start_soon(unload_idle_engines, daemon.engines, lambda: daemon.settings)


# The parts of the daemon, started in this order once the store is open.
PARTS: tuple[Part, ...] = (
    store_requests.register,  # sessions, transcripts, exports, Spaces, documents
    search_requests.register,  # fusion search
    vectors_catch_up,
    idle_unload,
    live_requests.register,  # capture and transcription, sessions, audio import
    voices_requests.register,  # named voices: list, name, merge, forget
    memory_requests.register,  # keep/discard/later, history, memory review
    ask_requests.register,  # ask (streamed, cancellable), current assertions
    atrest.register,  # scheduled backups, retention, forget
    open_items_requests.register,  # open items, selections over a person and period, closing
)


async def serve(
    config: Config,
    *,
    engines: Engines | None = None,
    task_status: trio.TaskStatus[Daemon] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Open the profile and run until cancelled (see the module docstring)."""
    config.paths.ensure()
    daemon = Daemon(config, engines)
    builtin.register(daemon)
    try:
        with profile_lock(config.paths) as files:
            try:
                embedder = await trio.to_thread.run_sync(daemon.engines.open_embedder)
                daemon._store = await trio.to_thread.run_sync(partial(
                    Store.open, config.paths, embedder,
                    encrypt=config.settings.encrypt_database,
                    backups_kept=config.settings.backups_kept))
                async with trio.open_nursery() as nursery:
                    daemon._nursery = nursery
                    for part in PARTS:
                        await part(daemon)
                    daemon.ipc = await nursery.start(
                        partial(serve_ipc, config.paths, daemon.handlers, locked=files))
                    log.info("braincued: profile %s, data in %s",
                             config.paths.profile, config.paths.data_dir)
                    task_status.started(daemon)
                    notify_systemd("READY=1")
                    try:
                        await trio.sleep_forever()
                    finally:
                        daemon.stopping.set()
                        notify_systemd("STOPPING=1")
            finally:
                # every part and every request has finished: nothing uses the store any more
                with trio.CancelScope(shield=True):
                    await trio.to_thread.run_sync(_close, daemon)
    finally:
        log.info("braincued: stopped")


def _close(daemon: Daemon) -> None:
    try:
        if daemon._store is not None:
            daemon._store.close()  # drains the writer, saves the vector index
    finally:
        daemon.engines.close()


async def run_until_signalled(config: Config, engines: Engines | None = None) -> None:
    """Run ``serve`` until SIGTERM or SIGINT, then shut down cleanly (``engines``: see
    :func:`serve`).

    A BrainCueError that stops the daemon (e.g. another daemon holds the profile) is raised
    bare, not inside the nurseries' exception groups, so that it is reported in one line.
    """
    try:
        async with trio.open_nursery() as nursery:
            with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                daemon: Daemon = await nursery.start(partial(serve, config, engines=engines))
                async for signum in signals:
                    log.info("braincued: %s received, shutting down",
                             signal.Signals(signum).name)
                    daemon.stop()
                    break
    except BaseExceptionGroup as group:
        raise user_error(group) or group from None
