"""The language model in a supervised process: a :class:`Generator` whose model runs in
:mod:`daemon.llm.model_process`, so that a native crash or an out-of-memory kill of the model
costs the request in flight (a :class:`ModelProcessDied` error), not the daemon.

The process starts on the first request and serves one request at a time. When it dies the
death is logged once and handed to ``on_death`` (for a status event), the request in flight
fails with :class:`ModelProcessDied` (a ``generate``, which hands out nothing before it ends,
is first asked once more of a new process: a keep goes on), and the next request starts a new
process after a backoff that doubles with each death in a row (up to :data:`MAX_BACKOFF_S`)
and resets once a request succeeds. Unloading ends the process (its memory, read-ahead
included, goes with it).
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import TypeVar

import trio

from daemon.errors import EngineError
from daemon.llm import frames
from daemon.llm.generate import (
    ChatMessage,
    ModelLoad,
    decode_json_answer,
    output_schema,
    require_model_file,
)

T = TypeVar("T")
log = logging.getLogger(__name__)

FIRST_BACKOFF_S = 0.5
MAX_BACKOFF_S = 30.0
STOP_WAIT_S = 5.0  # for a process asked to end, before it is killed


def _close(stream: trio.lowlevel.FdStream | frames.FrameReader) -> None:
    """Close a pipe end in the event loop; from any other thread (or after the loop ended) the
    last reference, dropped by the caller, closes it (no task waits on it: requests hold the
    lock)."""
    if trio.lowlevel.in_trio_run():
        stream.close()


class ModelProcessDied(EngineError):
    """The model's process ended while it served the request."""


def exit_cause(returncode: int) -> str:
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exited with status {returncode}"


class SupervisedGenerator:
    """A :class:`daemon.llm.generate.Generator` served by a model process."""

    def __init__(
        self,
        load: ModelLoad,
        *,
        idle_unload_s: float | None = None,
        on_death: Callable[[str], None] | None = None,
    ) -> None:
        require_model_file(load.model_path)
        self.load = load  # sent to the model process, which loads the model so
        self.model_id = load.model_path.stem
        self.idle_unload_s = idle_unload_s
        self.on_death = on_death
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

    async def _start(self) -> None:
        if self._deaths_in_a_row:
            backoff = min(MAX_BACKOFF_S, FIRST_BACKOFF_S * 2 ** (self._deaths_in_a_row - 1))
            await trio.sleep_until(trio.current_time() + max(
                0.0, backoff - (time.monotonic() - self._died_at)))
        load = self.load
        command = [sys.executable, "-m", "daemon.llm.model_process", str(load.model_path),
                   "--threads", str(load.threads), "--n-ctx", str(load.n_ctx),
                   "--start-ctx", str(load.start_ctx or load.n_ctx), "--nice", str(load.nice)]
        proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert proc.stdin is not None and proc.stdout is not None
        self._to = trio.lowlevel.FdStream(os.dup(proc.stdin.fileno()))
        self._replies = frames.FrameReader(trio.lowlevel.FdStream(os.dup(proc.stdout.fileno())),
                                           frames.FromWorker)
        proc.stdin.close()
        proc.stdout.close()
        self._proc = proc
        self._served = False
        log.info("language model %s: process %d started", self.model_id, proc.pid)

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
        log.error("language model %s: its process %s; the request in flight failed, the next "
                  "one starts it again", self.model_id, cause)
        if self.on_death is not None:
            self.on_death(cause)
        return ModelProcessDied(f"the language model's process was {cause} during the request"
                                if code < 0 else
                                f"the language model's process {cause} during the request",
                                fix="ask again (it restarts)")

    async def _send(self, message: frames.ToWorker) -> None:
        assert self._to is not None
        try:
            await self._to.send_all(frames.encode(message))
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            raise await self._died() from None

    async def _reply(self) -> frames.FromWorker:
        assert self._replies is not None
        reply = await self._replies.next()
        if reply is None:
            raise await self._died()
        if isinstance(reply, frames.Failed):
            raise EngineError(reply.message, fix=reply.fix)
        return reply  # type: ignore[return-value]

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

    async def _begin(self, request: frames.ToWorker) -> None:
        """Send ``request`` to a running process (started first if need be)."""
        self._last_used = time.monotonic()
        if self._proc is None:
            await self._start()
        await self._send(request)

    def _succeeded(self) -> None:
        self._served = True
        self._deaths_in_a_row = 0
        self._last_used = time.monotonic()

    # -- the Generator protocol ----------------------------------------------------------------

    async def generate(
        self,
        messages: Sequence[ChatMessage],
        output_type: type[T],
        *,
        max_tokens: int = 1024,
        temperature: float = 0.2,
    ) -> T:
        request = frames.Generate(list(messages), output_schema(output_type), max_tokens,
                                  temperature)
        try:
            reply = await self._complete(request)
        except ModelProcessDied as e:  # nothing was handed out yet: ask the new process once
            log.warning("language model %s: asking again after its process died (%s)",
                        self.model_id, e.message)
            reply = await self._complete(request)
        if not isinstance(reply, frames.Completed):
            raise EngineError(f"the model process answered a generate with {reply!r}")
        return decode_json_answer(reply.raw, reply.cut_off, output_type, max_tokens)

    async def _complete(self, request: frames.Generate) -> frames.FromWorker:
        async with self._request():
            await self._begin(request)
            reply = await self._reply()
            self._succeeded()
            return reply

    async def stream(
        self,
        messages: Sequence[ChatMessage],
        *,
        max_tokens: int = 512,
        temperature: float = 0.2,
    ) -> AsyncIterator[str]:
        async with self._request():
            await self._begin(frames.Stream(list(messages), max_tokens, temperature))
            finished = False
            try:
                while isinstance(reply := await self._reply(), frames.Token):
                    yield reply.text
                finished = True
                self._succeeded()
            finally:
                if not finished and self._proc is not None:
                    with trio.CancelScope(shield=True):  # stop the model, read to its end
                        await self._cancel_stream()

    async def _cancel_stream(self) -> None:
        try:
            await self._send(frames.Cancel())
            while not isinstance(await self._reply(), frames.Done):
                pass
        except EngineError:  # it died meanwhile (reported) or failed: nothing left to stop
            pass

    async def prefill(
        self, messages: Sequence[ChatMessage], *, stop: Callable[[], bool] | None = None
    ) -> None:
        async with self._request():
            await self._begin(frames.Prefill(list(messages), stop is not None))
            while isinstance(await self._reply(), frames.ShouldStop):
                await self._send(frames.StopAnswer(stop is not None and stop()))
            self._succeeded()

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
        log.info("language model %s: process %d ended", self.model_id, proc.pid)

    async def unload_if_idle(self) -> bool:
        lock = self._request_lock()
        if (self.idle_unload_s is None or not self.loaded or lock.locked()
                or time.monotonic() - self._last_used < self.idle_unload_s):
            return False
        async with lock:
            await trio.to_thread.run_sync(self._stop_process)
        return True

    def close(self) -> None:
        self.unload()
