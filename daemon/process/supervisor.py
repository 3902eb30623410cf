"""The daemon's side of a model in a process of its own: a native crash or an out-of-memory
kill of the model costs the request in flight (a :class:`ModelProcessDied` error), not the
daemon.

The process starts on the first request and serves one request at a time. When it dies the
death is logged once and handed to ``on_death`` (for a status event), the request in flight
fails with :class:`ModelProcessDied` (:meth:`Supervisor.ask_twice` first asks it once more of
a new process), and the next request starts a new process after a backoff that doubles with
each death in a row (up to :data:`MAX_BACKOFF_S`) and resets once a request succeeds.
Unloading ends the process (its memory goes with it).
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import msgspec
import trio

from daemon.errors import EngineError
from daemon.process import frames
from daemon.resident import Resident, resident

log = logging.getLogger(__name__)

FIRST_BACKOFF_S = 0.5
MAX_BACKOFF_S = 30.0
MIN_UNLOAD_CHECK_S = 1.0
MAX_UNLOAD_CHECK_S = 30.0
STOP_WAIT_S = 5.0  # for a process asked to end, before it is killed


def _close(stream: trio.lowlevel.FdStream | frames.FrameReader) -> None:
    """Close a pipe end in the event loop; from any other thread (or after the loop ended) the
    last reference, dropped by the caller, closes it (no task waits on it: requests hold the
    lock)."""
    if trio.lowlevel.in_trio_run():
        stream.close()


class ModelProcessDied(EngineError):
    """The model's process ended while it served the request."""


def unload_check_interval(idle_unload_s: float) -> float:
    """How often to look for a model unused for ``idle_unload_s``: a tenth of it, within
    bounds."""
    return min(MAX_UNLOAD_CHECK_S, max(MIN_UNLOAD_CHECK_S, idle_unload_s / 10))


def exit_cause(returncode: int) -> str:
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exited with status {returncode}"


class ModelProcess(msgspec.Struct, frozen=True):
    """A model's process, for ``status``: its role ("llm", "asr") and priority, its pid (None:
    not running now), how often it died under a request since the daemon started, the last
    time how, its memory now (None: not running), since when its model is loaded (wall clock;
    None: not loaded) and when it was last unloaded for being unused (None: never)."""

    role: str
    priority: str
    model_id: str
    pid: int | None
    deaths: int
    last_death: str | None
    memory: Resident | None
    loaded_at: float | None = None
    unloaded_at: float | None = None


class Supervisor:
    """Runs ``python -m module args...`` for the model ``model_id`` (a ``kind`` of model:
    "language model", "speech model"), whose replies are of the type union ``replies``."""

    def __init__(
        self,
        kind: str,
        model_id: str,
        command: list[str],
        replies: object,
        *,
        idle_unload_s: float | None = None,
        on_death: Callable[[str], None] | None = None,
    ) -> None:
        self.kind = kind
        self.model_id = model_id
        self.command = [sys.executable, "-m", *command]
        self.idle_unload_s = idle_unload_s
        self.on_death = on_death
        self._reply_types = replies
        self.deaths = 0  # since the daemon started
        self.last_death: str | None = None
        self._deaths_in_a_row = 0
        self._died_at = 0.0
        self._proc: subprocess.Popen[bytes] | None = None
        self._to: trio.lowlevel.FdStream | None = None
        self._replies: frames.FrameReader | None = None
        self._served = False  # the current process has loaded the model
        self._lock: trio.Lock | None = None
        self._unload_pending = False
        self._last_used = time.monotonic()
        self.loaded_at: float | None = None  # wall clock: the current process loaded the model
        self.unloaded_at: float | None = None  # wall clock: last ended for being unused

    # -- the process ---------------------------------------------------------------------------

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def loaded(self) -> bool:
        return self._proc is not None and self._served

    @property
    def last_used(self) -> float:
        return self._last_used

    def describe(self, role: str, priority: str) -> ModelProcess:
        pid = self.pid
        return ModelProcess(role, priority, self.model_id, pid, self.deaths, self.last_death,
                            None if pid is None else resident(pid),
                            self.loaded_at if self.loaded else None, self.unloaded_at)

    async def _start(self) -> None:
        if self._deaths_in_a_row:
            backoff = min(MAX_BACKOFF_S, FIRST_BACKOFF_S * 2 ** (self._deaths_in_a_row - 1))
            await trio.sleep_until(trio.current_time() + max(
                0.0, backoff - (time.monotonic() - self._died_at)))
        proc = subprocess.Popen(self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert proc.stdin is not None and proc.stdout is not None
        self._to = trio.lowlevel.FdStream(os.dup(proc.stdin.fileno()))
        self._replies = frames.FrameReader(trio.lowlevel.FdStream(os.dup(proc.stdout.fileno())),
                                           self._reply_types)
        proc.stdin.close()
        proc.stdout.close()
        self._proc = proc
        self._served = False
        log.info("%s %s: process %d started", self.kind, self.model_id, proc.pid)

    def _forget_process(self) -> subprocess.Popen[bytes] | None:
        proc, self._proc = self._proc, None
        for stream in (self._to, self._replies):
            if stream is not None:
                _close(stream)
        self._to = self._replies = None
        return proc

    async def _died(self) -> ModelProcessDied:
        """The process ended under a request: reap it, report it once, fail the request."""
        proc = self._forget_process()
        code = await trio.to_thread.run_sync(proc.wait) if proc is not None else 0
        cause = exit_cause(code)
        self.deaths += 1
        self._deaths_in_a_row += 1
        self._died_at = time.monotonic()
        self.last_death = cause
        log.error("%s %s: its process %s; the request in flight failed, the next one starts "
                  "it again", self.kind, self.model_id, cause)
        if self.on_death is not None:
            self.on_death(cause)
        return ModelProcessDied(f"the {self.kind}'s process was {cause} during the request"
                                if code < 0 else
                                f"the {self.kind}'s process {cause} during the request",
                                fix="ask again (it restarts)")

    async def _send(self, message: msgspec.Struct) -> None:
        assert self._to is not None
        try:
            await self._to.send_all(frames.encode(message))
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            raise await self._died() from None

    async def _reply(self) -> object:
        assert self._replies is not None
        reply = await self._replies.next()
        if reply is None:
            raise await self._died()
        if isinstance(reply, frames.Failed):
            raise EngineError(reply.message, fix=reply.fix)
        return reply

    def _request_lock(self) -> trio.Lock:
        if self._lock is None:
            self._lock = trio.Lock()
        return self._lock

    @asynccontextmanager
    async def _request(self) -> AsyncIterator[None]:
        """One request at a time; an unload asked for meanwhile happens after it."""
        async with self._request_lock():
            try:
                yield
            finally:
                if self._unload_pending:
                    self._unload_pending = False
                    with trio.CancelScope(shield=True):
                        await trio.to_thread.run_sync(self._stop_process)

    async def _begin(self, request: msgspec.Struct) -> None:
        """Send ``request`` to a running process (started first if need be)."""
        self._last_used = time.monotonic()
        if self._proc is None:
            await self._start()
        await self._send(request)

    def _succeeded(self) -> None:
        if not self._served:
            self.loaded_at = time.time()
        self._served = True
        self._deaths_in_a_row = 0
        self._last_used = time.monotonic()

    async def _complete(self, request: msgspec.Struct) -> object:
        """The one reply to ``request``. Cancelled while it is served, the process ends (its
        late reply must not answer the next request)."""
        async with self._request():
            await self._begin(request)
            try:
                reply = await self._reply()
            except trio.Cancelled:
                with trio.CancelScope(shield=True):
                    await trio.to_thread.run_sync(self._stop_process)
                raise
            self._succeeded()
            return reply

    async def ask_twice(self, request: msgspec.Struct) -> object:
        """The one reply to a ``request`` that hands out nothing before it ends: when the
        process dies serving it, it is asked once more of a new process."""
        try:
            return await self._complete(request)
        except ModelProcessDied as e:
            log.warning("%s %s: asking again after its process died (%s)",
                        self.kind, self.model_id, e.message)
            return await self._complete(request)

    # -- ending it -----------------------------------------------------------------------------

    def unload(self) -> None:
        """End the process (the model's memory goes with it); it starts again on the next
        request. Called while a request runs (from another thread), it happens after it."""
        if self._lock is not None and self._lock.locked() and not self._unload_pending:
            self._unload_pending = True
            return
        self._stop_process()

    def _stop_process(self) -> None:
        proc = self._forget_process()
        if proc is None:
            return
        try:
            proc.wait(STOP_WAIT_S)  # its stdin closed: it ends by itself
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.info("%s %s: process %d ended", self.kind, self.model_id, proc.pid)

    async def unload_if_idle(self) -> bool:
        """End the process once unused for ``idle_unload_s``; returns whether it did."""
        lock = self._request_lock()
        if (self.idle_unload_s is None or not self.loaded or lock.locked()
                or time.monotonic() - self._last_used < self.idle_unload_s):
            return False
        async with lock:
            await trio.to_thread.run_sync(self._stop_process)
        self.unloaded_at = time.time()
        return True

    def close(self) -> None:
        self.unload()
