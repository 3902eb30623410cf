"""A keep runs behind live capture: between its model calls it waits while a session is live.

The model's threads already run at the lowest CPU priority (the background engine, see
:mod:`daemon.engines`); a 2-core machine still slows down when a second heavy job shares it
(memory bandwidth, caches), so a keep does not start another model call during a call. The
call that is running finishes; the next one starts once the session has ended.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import TypeVar

from daemon.llm.generate import ChatMessage, Generator, Usage

log = logging.getLogger(__name__)

T = TypeVar("T")
# returns at once when no session is live, else when the live one has ended
Quiet = Callable[[], Awaitable[None]]


@dataclass(eq=False)
class BehindLive:
    """``inner``, each call waiting for ``quiet()`` first while ``pausing()`` holds and
    ``is_live()`` says a session is live; ``paused(True)`` is awaited when a wait starts,
    ``paused(False)`` when it ends. ``pauses`` counts the waits."""

    inner: Generator
    quiet: Quiet
    pausing: Callable[[], bool]
    _: KW_ONLY
    is_live: Callable[[], bool]
    paused: Callable[[bool], Awaitable[None]] | None = None
    model_id: str = field(init=False)
    pauses: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        self.model_id = self.inner.model_id

    @property
    def loaded(self) -> bool:
        return self.inner.loaded

    @property
    def last_used(self) -> float:
        return self.inner.last_used

    @property
    def usage(self) -> Usage:
        return self.inner.usage

    async def _wait(self) -> None:
        if self.pausing() and self.is_live():
            self.pauses += 1
            log.info("keep paused: a session is live (it goes on when the session ends)")
            if self.paused is not None:
                await self.paused(True)
            await self.quiet()
            log.info("keep goes on: no session is live")
            if self.paused is not None:
                await self.paused(False)

    async def generate(self, messages: Sequence[ChatMessage], output_type: type[T], *,
                       max_tokens: int = 1024, temperature: float = 0.2) -> T:
        await self._wait()
        return await self.inner.generate(messages, output_type, max_tokens=max_tokens,
                                         temperature=temperature)

    async def stream(self, messages: Sequence[ChatMessage], *, max_tokens: int = 512,
                     temperature: float = 0.2) -> AsyncIterator[str]:
        await self._wait()
        async for token in self.inner.stream(messages, max_tokens=max_tokens,
                                             temperature=temperature):
            yield token

    async def prefill(
        self, messages: Sequence[ChatMessage], *, stop: Callable[[], bool] | None = None
    ) -> None:
        await self._wait()
        await self.inner.prefill(messages, stop=stop)

    def unload(self) -> None:
        self.inner.unload()

    async def unload_if_idle(self) -> bool:
        return await self.inner.unload_if_idle()

    def close(self) -> None:
        self.inner.close()
