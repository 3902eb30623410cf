"""A dedicated worker thread, awaitable from trio.

Each model engine (whisper, llama generation, llama embeddings) owns one thread: the model is
loaded, used and freed there, calls are served one at a time in submission order, and the trio
event loop never blocks on them. Cancelling the awaiting trio task abandons the result (the
call already running finishes in the background); long streaming calls check a cancel flag.

A worker for background work runs at a lower CPU priority (``nice``): it lowers itself before
its first call, so the threads the library starts from it (llama.cpp's OpenMP pool is created
by the thread that first computes, and a Linux thread inherits its creator's nice value) run
at that priority too.
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import sys
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, TypeVar

import outcome
import trio

T = TypeVar("T")
log = logging.getLogger(__name__)

_STOP = object()


def lower_priority(increment: int) -> None:
    """Lower the calling thread's CPU priority by ``increment`` nice levels (at most to 19).

    Only on Linux, where nice is per thread; elsewhere ``setpriority`` would lower the whole
    process, so nothing changes there.
    """
    if sys.platform != "linux":
        return
    thread = threading.get_native_id()
    try:
        current = os.getpriority(os.PRIO_PROCESS, thread)
        os.setpriority(os.PRIO_PROCESS, thread, min(19, current + increment))
    except OSError as e:
        log.warning("could not lower the priority of thread %s: %s", thread, e)


class WorkerThread:
    """One long-lived thread that runs submitted callables in order."""

    def __init__(self, name: str, *, nice: int = 0) -> None:
        self.name = name
        self.nice = nice
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        if self.nice:
            lower_priority(self.nice)
        while True:
            item = self._queue.get()
            if item is _STOP:
                return
            fn, deliver = item
            deliver(outcome.capture(fn))
            del item, fn, deliver  # hold nothing of the last call while waiting for the next

    def call_sync(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` on the worker and wait (for synchronous callers such as the CLI)."""
        done = threading.Event()
        box: list[outcome.Outcome[T]] = []

        def deliver(result: outcome.Outcome[T]) -> None:
            box.append(result)
            done.set()

        self._queue.put((fn, deliver))
        done.wait()
        return box[0].unwrap()

    async def call(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` on the worker; the awaiting task sleeps without blocking the loop."""
        token = trio.lowlevel.current_trio_token()
        send, recv = trio.open_memory_channel[outcome.Outcome[T]](1)

        def hand_over(result: outcome.Outcome[T]) -> None:
            with contextlib.suppress(trio.BrokenResourceError):  # the caller was cancelled
                send.send_nowait(result)

        def deliver(result: outcome.Outcome[T]) -> None:
            with contextlib.suppress(trio.RunFinishedError):
                token.run_sync_soon(hand_over, result)

        self._queue.put((fn, deliver))
        async with recv:
            result = await recv.receive()
        return result.unwrap()

    async def stream(self, produce: Callable[[threading.Event], Iterator[T]]) -> AsyncIterator[T]:
        """Iterate ``produce(cancelled)`` on the worker, yielding its items in trio.

        When the consumer stops early (break, cancellation, error), ``cancelled`` is set so the
        producer can stop at its next item.
        """
        token = trio.lowlevel.current_trio_token()
        send, recv = trio.open_memory_channel[outcome.Outcome[T] | None](64)
        cancelled = threading.Event()

        def put(item: outcome.Outcome[T] | None) -> None:
            try:
                trio.from_thread.run(send.send, item, trio_token=token)
            except (trio.RunFinishedError, trio.Cancelled, trio.ClosedResourceError,
                    trio.BrokenResourceError):
                cancelled.set()

        def run() -> None:
            try:
                for item in produce(cancelled):
                    if cancelled.is_set():
                        break
                    put(outcome.Value(item))
            except BaseException as e:  # delivered to the consumer, never swallowed
                put(outcome.Error(e))
            put(None)

        self._queue.put((run, lambda _result: None))
        try:
            async with recv:
                while True:
                    item = await recv.receive()
                    if item is None:
                        return
                    yield item.unwrap()
        finally:
            cancelled.set()

    def close(self) -> None:
        self._queue.put(_STOP)

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)
