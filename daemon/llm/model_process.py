"""The language model's own process: a :class:`LlamaGenerator` serving the daemon over a pipe.

    python -m daemon.llm.model_process MODEL_PATH --threads N --n-ctx N [--start-ctx N]
                                      [--nice N] [--gpu-layers N]

Requests arrive on stdin and replies leave on stdout as frames (:mod:`daemon.llm.frames`,
served by :func:`daemon.process.frames.run_child`). The model loads on the first request and
its read-ahead state lives here, between requests. The process ends when stdin closes. A native
crash or an out-of-memory kill ends only this process: the daemon sees its pipe close.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from contextlib import aclosing
from pathlib import Path

import msgspec
import trio

from daemon.errors import BrainCueError
from daemon.llm import frames
from daemon.llm.generate import LlamaGenerator, ModelLoad
from daemon.process.frames import Failed, FrameReader, Serve, encode, run_child


class Server:
    """Serves one request at a time; reads Cancel and StopAnswer while one runs."""

    def __init__(self, generator: LlamaGenerator, out: trio.abc.SendStream) -> None:
        self.generator = generator
        self._out = out
        self._send_lock = trio.Lock()
        self._running: trio.CancelScope | None = None
        self._answers, self._answer_inbox = trio.open_memory_channel[bool](1)

    async def send(self, message: frames.FromWorker) -> None:
        async with self._send_lock:
            await self._out.send_all(encode(message))

    async def serve(self, requests: FrameReader) -> None:
        async with trio.open_nursery() as nursery:
            while (request := await requests.next()) is not None:
                if isinstance(request, frames.Cancel):
                    if self._running is not None:
                        self._running.cancel()
                elif isinstance(request, frames.StopAnswer):
                    await self._answers.send(request.stop)
                else:
                    nursery.start_soon(self._handle, request)
            nursery.cancel_scope.cancel()

    async def _handle(self, request: object) -> None:
        with trio.CancelScope() as scope:
            self._running = scope
            try:
                await self._run(request)
            except BrainCueError as e:
                await self.send(Failed(e.message, e.fix))
                return
            finally:
                self._running = None
        if scope.cancelled_caught:  # a cancelled stream still says it ended
            await self.send(frames.Done())

    async def _run(self, request: object) -> None:
        if isinstance(request, frames.Generate):
            before = msgspec.structs.replace(self.generator.usage)
            raw, cut_off = await self.generator.complete_json(
                request.messages, request.schema, max_tokens=request.max_tokens,
                temperature=request.temperature)
            after = self.generator.usage
            await self.send(frames.Completed(
                raw, cut_off, after.prompt_tokens - before.prompt_tokens,
                after.completion_tokens - before.completion_tokens))
        elif isinstance(request, frames.Stream):
            tokens = self.generator.stream(request.messages, max_tokens=request.max_tokens,
                                           temperature=request.temperature)
            async with aclosing(tokens):  # type: ignore[type-var]
                async for token in tokens:
                    await self.send(frames.Token(token))
            await self.send(frames.Done())
        elif isinstance(request, frames.Prefill):
            stop = self._ask_daemon() if request.stoppable else None
            await self.generator.prefill(request.messages, stop=stop)
            await self.send(frames.Done())

    def _ask_daemon(self) -> Callable[[], bool]:
        """A prefill's ``stop`` (asked on the model's thread): the daemon's answer."""
        token = trio.lowlevel.current_trio_token()

        async def ask() -> bool:
            await self.send(frames.ShouldStop())
            return await self._answer_inbox.receive()

        return lambda: trio.from_thread.run(ask, trio_token=token)


def serve(args: argparse.Namespace) -> Serve:
    generator = LlamaGenerator(ModelLoad(Path(args.model), threads=args.threads,
                                         n_ctx=args.n_ctx, start_ctx=args.start_ctx,
                                         nice=args.nice, gpu_layers=args.gpu_layers))
    return lambda requests, out: Server(generator, out).serve(requests)


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m daemon.llm.model_process")
    parser.add_argument("model")
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--n-ctx", type=int, required=True)
    parser.add_argument("--start-ctx", type=int, default=None)
    parser.add_argument("--nice", type=int, default=0)
    parser.add_argument("--gpu-layers", type=int, default=-1)
    return parser.parse_args(argv)


if __name__ == "__main__":
    run_child("model process", serve, frames.ToWorker, parse(sys.argv[1:]))
