"""The language model in a supervised process: a :class:`Generator` whose model runs in
:mod:`daemon.llm.model_process`, so that a native crash or an out-of-memory kill of the model
costs the request in flight, not the daemon (:mod:`daemon.process.supervisor`: a ``generate``,
which hands out nothing before it ends, is asked once more of a new process, so a keep goes
on). Unloading ends the process, its read-ahead state with it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from typing import TypeVar

import trio

from daemon.errors import EngineError
from daemon.llm import frames
from daemon.llm.generate import (
    ChatMessage,
    ModelLoad,
    Usage,
    decode_json_answer,
    output_schema,
    require_model_file,
)
from daemon.process.supervisor import Supervisor

T = TypeVar("T")


class SupervisedGenerator(Supervisor):
    """A :class:`daemon.llm.generate.Generator` served by a model process."""

    def __init__(
        self,
        load: ModelLoad,
        *,
        idle_unload_s: float | None = None,
        on_death: Callable[[str], None] | None = None,
    ) -> None:
        require_model_file(load.model_path)
        self.usage = Usage()
        self.load = load  # sent to the model process, which loads the model so
        super().__init__(
            "language model", load.model_path.stem,
            ["daemon.llm.model_process", str(load.model_path), "--threads", str(load.threads),
             "--n-ctx", str(load.n_ctx), "--start-ctx", str(load.start_ctx or load.n_ctx),
             "--nice", str(load.nice), "--gpu-layers", str(load.gpu_layers)],
            frames.FromWorker, idle_unload_s=idle_unload_s, on_death=on_death)

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
        reply = await self.ask_twice(request)  # nothing is handed out before it ends
        if not isinstance(reply, frames.Completed):
            raise EngineError(f"the model process answered a generate with {reply!r}")
        self.usage.calls += 1
        self.usage.prompt_tokens += reply.prompt_tokens
        self.usage.completion_tokens += reply.completion_tokens
        return decode_json_answer(reply.raw, reply.cut_off, output_type, max_tokens)

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
            self.usage.calls += 1
            try:
                while isinstance(reply := await self._reply(), frames.Token):
                    self.usage.completion_tokens += 1
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
