"""A keep waits for its language model instead of failing when the engine cannot answer.

A server that is down, timed out, closed in the middle of an answer or serves no model of the
configured name (:class:`~daemon.errors.EngineUnavailable`) costs a keep nothing: the first
such failure is remembered by :class:`Watched`, every later model call of the keep fails at
once without asking the engine again, and the keep goes back to ``pending`` with
:data:`WAITING` in its reason; it is run again once the engine answers
(:meth:`daemon.memory.remember.Rememberer.finish_waiting`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from daemon.errors import EngineUnavailable
from daemon.llm.generate import ChatMessage, Generator, Usage

T = TypeVar("T")
WAITING = "waiting for the language model"  # the reason of a keep that waits for its engine


def waiting_reason(error: EngineUnavailable) -> str:
    return f"{WAITING}: {error.message}; it goes on when the model answers"


def is_waiting(reason: str | None) -> bool:
    return reason is not None and reason.startswith(WAITING)


@dataclass(eq=False)
class Watched:
    """``inner``, remembering the first :class:`EngineUnavailable` it raised (``failure``) and
    raising it again at once for every later call."""

    inner: Generator
    failure: EngineUnavailable | None = field(default=None, init=False)
    model_id: str = field(init=False)

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

    def check(self) -> None:
        """Raise the engine's failure, if there was one."""
        if self.failure is not None:
            raise self.failure

    async def generate(self, messages: Sequence[ChatMessage], output_type: type[T], *,
                       max_tokens: int = 1024, temperature: float = 0.2) -> T:
        self.check()
        try:
            return await self.inner.generate(messages, output_type, max_tokens=max_tokens,
                                             temperature=temperature)
        except EngineUnavailable as e:
            self.failure = e
            raise

    async def stream(self, messages: Sequence[ChatMessage], *, max_tokens: int = 512,
                     temperature: float = 0.2) -> AsyncIterator[str]:
        self.check()
        try:
            async for token in self.inner.stream(messages, max_tokens=max_tokens,
                                                 temperature=temperature):
                yield token
        except EngineUnavailable as e:
            self.failure = e
            raise

    async def prefill(
        self, messages: Sequence[ChatMessage], *, stop: Callable[[], bool] | None = None
    ) -> None:
        self.check()
        await self.inner.prefill(messages, stop=stop)

    def unload(self) -> None:
        self.inner.unload()

    async def unload_if_idle(self) -> bool:
        return await self.inner.unload_if_idle()

    def close(self) -> None:
        self.inner.close()
