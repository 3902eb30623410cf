"""Text generation: the :class:`Generator` protocol, llama.cpp and scripted implementations.

``generate`` returns a typed value: the model's output is constrained by the JSON schema of the
requested msgspec type and decoded into it. ``stream`` yields free text token by token and stops
the model at the next token when the consumer stops iterating. ``prefill`` reads the opening
that later streamed prompts share (fixed instructions, a live conversation so far) ahead of
time: llama.cpp reuses its evaluated state for a common token prefix between consecutive
calls, and the state of that opening is saved and restored when other work (a ``generate``)
used the model in between, so a question costs only its own tokens and its sources.
"""

from __future__ import annotations

import functools
import json
import logging
import re
import threading
import time
import weakref
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator, Sequence
from contextlib import aclosing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar, cast

import msgspec
import trio

from daemon.errors import EngineError, ModelNotInstalled
from daemon.llm.backend import gpu_layers
from daemon.worker import WorkerThread

T = TypeVar("T")
log = logging.getLogger(__name__)


class ChatMessage(msgspec.Struct):
    role: str  # "system", "user" or "assistant"
    content: str


class Usage(msgspec.Struct):
    """What a generator was asked so far: requests answered, the tokens it read (where its
    engine counts them) and the tokens it wrote."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


class Generator(Protocol):
    model_id: str

    @property
    def usage(self) -> Usage: ...

    @property
    def loaded(self) -> bool: ...

    @property
    def last_used(self) -> float: ...

    async def generate(
        self,
        messages: Sequence[ChatMessage],
        output_type: type[T],
        *,
        max_tokens: int = 1024,
        temperature: float = 0.2,
    ) -> T: ...

    def stream(
        self,
        messages: Sequence[ChatMessage],
        *,
        max_tokens: int = 512,
        temperature: float = 0.2,
    ) -> AsyncIterator[str]: ...

    def unload(self) -> None: ...

    async def unload_if_idle(self) -> bool: ...

    async def prefill(
        self, messages: Sequence[ChatMessage], *, stop: Callable[[], bool] | None = None
    ) -> None:
        """Read ``messages`` — what later ``stream`` prompts begin with, the last one left
        open — ahead of time and keep the model's state for them, so that such a stream only
        reads the rest, even when other work used the model in between. ``stop``, asked
        between batches of :data:`PREFILL_BATCH` tokens, ends the reading early once it
        holds; what was read stays, so reading the same messages again goes on from there
        (unless other work used the model meanwhile)."""
        ...

    def close(self) -> None: ...


# -- pure helpers ------------------------------------------------------------------------------


def output_schema(output_type: type[Any]) -> dict[str, Any]:
    """The JSON schema of ``output_type`` with every ``$ref`` inlined.

    llama-cpp-python's schema-to-grammar conversion ignores ``$defs``, so a referenced struct
    would be generated as an unconstrained value.
    """
    schema = msgspec.json.schema(output_type)
    defs: dict[str, Any] = schema.pop("$defs", {})

    def inline(node: Any, expanding: frozenset[str]) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str):
                name = ref.removeprefix("#/$defs/")
                if name in expanding:
                    raise TypeError(f"recursive type {name} cannot be a generated output")
                return inline(defs[name], expanding | {name})
            return {key: inline(value, expanding) for key, value in node.items()}
        if isinstance(node, list):
            return [inline(value, expanding) for value in node]
        return node

    inlined: dict[str, Any] = inline(schema, frozenset())
    return inlined


def with_schema_instruction(
    messages: Sequence[ChatMessage], schema: dict[str, Any]
) -> list[ChatMessage]:
    """Tell the model the schema too: the grammar alone makes a small model fill fields blindly.

    The schema goes at the end of the last message, so that requests about the same text (a
    transcript first, then what to do with it) share their prompt's beginning, whose evaluated
    state llama.cpp reuses from one call to the next.
    """
    # without the spaces after "," and ":" (a quarter of the schema's tokens, read every call)
    instruction = ("Reply with JSON only, matching this JSON schema: "
                   + json.dumps(schema, separators=(",", ":")))
    if not messages:
        return [ChatMessage("user", instruction)]
    last = messages[-1]
    return [*messages[:-1], ChatMessage(last.role, f"{last.content}\n\n{instruction}")]


class AnswerCutOff(EngineError):
    """The model's answer reached ``max_tokens`` before it was complete; ``partial`` is what it
    wrote (a caller may salvage the complete items in it)."""

    def __init__(self, max_tokens: int, partial: str) -> None:
        super().__init__(f"the model's answer was cut off after {max_tokens} tokens",
                         fix="allow more tokens or ask for less")
        self.partial = partial


def decode_output(raw: str | bytes, output_type: type[T]) -> T:
    """Decode a model's JSON answer into ``output_type``; anything else is an EngineError."""
    try:
        return msgspec.json.decode(raw, type=output_type)
    except (msgspec.DecodeError, msgspec.ValidationError) as e:
        name = getattr(output_type, "__name__", str(output_type))
        raise EngineError(f"the model's answer is not a valid {name}: {e}") from e


def decode_json_answer(raw: str, cut_off: bool, output_type: type[T], max_tokens: int) -> T:
    """A constrained answer as ``output_type``; AnswerCutOff when ``max_tokens`` cut it off."""
    if cut_off:
        raise AnswerCutOff(max_tokens, raw)
    return decode_output(raw, output_type)


def split_tokens(text: str) -> list[str]:
    """Words with their trailing whitespace: how the scripted generator streams a text."""
    return re.findall(r"\s*\S+\s*", text) or ([text] if text else [])


# -- llama.cpp ---------------------------------------------------------------------------------

PREFILL_BATCH = 64  # tokens read between two looks at a prefill's ``stop`` (~0.5 s here)
CLOSE_BATCH = 512  # without a ``stop``: between two looks at whether the engine is closing
REPEAT_PENALTY = 1.1  # over the last 64 tokens: a small model's answer otherwise loops
GRAMMAR_CANDIDATES = 128  # the likeliest tokens the JSON grammar is checked against


def fast_grammar_llama(model_path: str, **kwargs: Any) -> Any:
    """A ``llama_cpp.Llama`` whose grammar checks only the likeliest tokens.

    llama.cpp checks a grammar against every token of the vocabulary before top-k (152k for
    Qwen, ~40% of the time of a constrained answer). Here the candidates are first cut to the
    :data:`GRAMMAR_CANDIDATES` likeliest plus every single-character token and the end tokens,
    so some candidate is always grammatical (JSON can always go on with one character). A
    greedy answer is the one the full check gives whenever one of the likeliest tokens is
    grammatical; a sampled one differs only by the probability mass of the tokens left out.
    """
    import ctypes

    import numpy as np
    from llama_cpp import Llama
    from llama_cpp import _internals as internals
    from llama_cpp import llama_cpp as C

    class FastGrammarLlama(Llama):  # type: ignore[misc]
        def __init__(self, *args: Any, **kw: Any) -> None:
            super().__init__(*args, **kw)
            always = {self.token_eos()}
            for text, special in ([(chr(c), False) for c in range(32, 127)]
                                  + [("\n", False), ("\t", False), ("<|im_end|>", True)]):
                tokens = self.tokenize(text.encode(), add_bos=False, special=special)
                if len(tokens) == 1:
                    always.add(tokens[0])
            self._always = np.array(sorted(t for t in always if t >= 0), dtype=np.intp)

        def _init_sampler(self, **kw: Any) -> Any:  # type: ignore[override]
            grammar = kw.get("grammar")
            temp = kw.get("temp", 0.8)
            if grammar is None or kw.get("logits_processor") or kw.get("mirostat_mode") \
                    or temp < 0.0:
                return super()._init_sampler(**kw)
            always = self._always

            def prune(cur_p: Any) -> None:
                array = cur_p.contents
                n = array.size
                if n <= GRAMMAR_CANDIDATES + len(always):
                    return
                data = np.ctypeslib.as_array(
                    (C.llama_token_data * n).from_address(ctypes.addressof(array.data.contents)))
                logits = data["logit"]
                top = np.argpartition(logits, n - GRAMMAR_CANDIDATES)[n - GRAMMAR_CANDIDATES:]
                keep = data[np.union1d(top, always[always < n])].copy()
                data[: len(keep)] = keep
                array.size = len(keep)
                array.sorted = False

            sampler = internals.LlamaSampler()  # type: ignore[no-untyped-call]
            sampler.add_custom(prune)
            sampler.add_penalties(
                n_vocab=self._n_vocab, penalty_last_n=self.last_n_tokens_size,
                penalty_repeat=kw.get("repeat_penalty", 1.0),
                penalty_freq=kw.get("frequency_penalty", 0.0),
                penalty_present=kw.get("presence_penalty", 0.0),
            )
            sampler.add_grammar(self._model, grammar)
            if temp == 0.0:
                sampler.add_greedy()  # type: ignore[no-untyped-call]
                return sampler
            sampler.add_top_k(kw.get("top_k", 40))
            sampler.add_typical(kw.get("typical_p", 1.0), 1)
            sampler.add_top_p(kw.get("top_p", 0.95), 1)
            sampler.add_min_p(kw.get("min_p", 0.05), 1)
            sampler.add_temp(temp)
            sampler.add_dist(self._seed)
            return sampler

    return FastGrammarLlama(model_path, **kwargs)


def require_model_file(model_path: Path) -> None:
    """ModelNotInstalled, naming the fix, unless the language model's file is there."""
    if not model_path.is_file():
        raise ModelNotInstalled(
            f"language model file {model_path} not found",
            fix="install one with `braincue models install`",
        )


@dataclass(frozen=True)
class ModelLoad:
    """How a language model is loaded: its GGUF file, the threads it runs on, its context of
    up to ``n_ctx`` tokens (first loaded with ``start_ctx`` when given), its CPU priority
    (``nice`` > 0: a background engine, its threads at a lower priority) and its layers on the
    GPU."""

    model_path: Path
    threads: int
    n_ctx: int
    start_ctx: int | None = None
    nice: int = 0
    gpu_layers: int = -1  # on the GPU, where llama.cpp has one (-1: all; ``llm_gpu_layers``)


class LlamaGenerator:
    """A GGUF instruct model run by llama.cpp on its own thread, loaded on first use as
    ``load`` says.

    Its context holds up to ``load.n_ctx`` tokens. Started with a smaller ``load.start_ctx``,
    it is loaded with that and loaded again with a larger one when a prompt and its answer do
    not fit (what it read ahead is lost then): the context's cache (~12 KB a token on the 0.5B)
    is memory held for as long as the model is loaded.
    """

    def __init__(self, load: ModelLoad, *, idle_unload_s: float | None = None) -> None:
        require_model_file(load.model_path)
        self.load = load
        self.model_id = load.model_path.stem
        self.context = min(load.n_ctx, load.start_ctx or load.n_ctx)  # what the model loads with
        self.idle_unload_s = idle_unload_s
        self._llm: Any = None
        self._prefix: _PrefixState | None = None  # what prefill read, to restore (worker only)
        # set by close(): a reading ahead in progress ends at its next batch instead of holding
        # the daemon's shutdown for as long as the whole reading takes (> 20 s under load)
        self._closing = threading.Event()
        self._last_used = time.monotonic()
        self.usage = Usage()
        # nice > 0: a background engine, its thread and llama.cpp's at a lower CPU priority
        self._worker = WorkerThread(f"llm-{self.model_id}", nice=load.nice)
        # an engine replaced while someone still used it is never closed: its thread ends
        # when it is collected
        weakref.finalize(self, self._worker.close)

    @property
    def loaded(self) -> bool:
        return self._llm is not None

    @property
    def last_used(self) -> float:
        """``time.monotonic()`` when the model last started or finished work."""
        return self._last_used

    @contextmanager
    def _working(self) -> Iterator[Any]:
        """Hand out the model, loading it if needed, and note the time of use."""
        self._last_used = time.monotonic()
        try:
            yield self._load()
        finally:
            self._last_used = time.monotonic()

    def _load(self) -> Any:
        if self._llm is None:
            try:
                self._llm = fast_grammar_llama(
                    str(self.load.model_path),
                    n_ctx=self.context,
                    n_threads=self.load.threads,
                    n_gpu_layers=gpu_layers(self.load.gpu_layers),
                    verbose=False,
                )
            except ValueError as e:
                raise EngineError(
                    f"cannot load language model {self.load.model_path.name}: {e}",
                    fix="the file may be damaged; reinstall it with `braincue models install`",
                ) from e
        return self._llm

    def _with_room(self, llm: Any, messages: Sequence[ChatMessage], answer_tokens: int) -> Any:
        """``llm``, or the model loaded again with a larger context (up to ``n_ctx``) when the
        whole prompt of ``messages`` and ``answer_tokens`` more do not fit the one it has."""
        if self.context >= self.load.n_ctx:
            return llm
        try:
            needed = len(_prompt_tokens(llm, messages, whole=True)) + answer_tokens
        except EngineError:  # no chat template to count with: the largest context
            needed = self.load.n_ctx
        if needed <= self.context:
            return llm
        grown = min(self.load.n_ctx, max(2 * self.context, -(-needed // 1024) * 1024))
        log.info("language model %s: a prompt of %d tokens with its answer: its context grows "
                 "from %d to %d tokens", self.model_id, needed, self.context, grown)
        self._free()
        self.context = grown
        return self._load()

    async def generate(
        self,
        messages: Sequence[ChatMessage],
        output_type: type[T],
        *,
        max_tokens: int = 1024,
        temperature: float = 0.2,
    ) -> T:
        schema = output_schema(output_type)
        raw, cut_off = await self.complete_json(messages, schema, max_tokens=max_tokens,
                                                temperature=temperature)
        return decode_json_answer(raw, cut_off, output_type, max_tokens)

    async def complete_json(
        self,
        messages: Sequence[ChatMessage],
        schema: dict[str, Any],
        *,
        max_tokens: int,
        temperature: float,
    ) -> tuple[str, bool]:
        """The model's raw answer constrained by ``schema``, and whether ``max_tokens`` cut it
        off: :meth:`generate` before decoding (what a model process hands back)."""
        instructed = with_schema_instruction(messages, schema)
        prompt = as_dicts(instructed)

        def complete() -> Any:
            with self._working() as llm:
                llm = self._with_room(llm, instructed, max_tokens)
                try:
                    return llm.create_chat_completion(
                        prompt,
                        response_format={"type": "json_object", "schema": schema},
                        max_tokens=max_tokens,
                        temperature=temperature,
                        repeat_penalty=REPEAT_PENALTY,
                    )
                except ValueError as e:  # e.g. the prompt does not fit the context
                    raise EngineError(f"generation failed: {e}") from e

        completion = await self._worker.call(complete)
        counted = completion.get("usage") or {}
        self.usage.calls += 1
        self.usage.prompt_tokens += int(counted.get("prompt_tokens") or 0)
        self.usage.completion_tokens += int(counted.get("completion_tokens") or 0)
        choice = completion["choices"][0]
        return choice["message"]["content"] or "", choice.get("finish_reason") == "length"

    async def stream(
        self,
        messages: Sequence[ChatMessage],
        *,
        max_tokens: int = 512,
        temperature: float = 0.2,
    ) -> AsyncIterator[str]:
        prompt = as_dicts(messages)

        def produce(cancelled: threading.Event) -> Iterator[str]:
            with self._working() as llm:
                llm = self._with_room(llm, messages, max_tokens)
                if self._prefix is not None and not _starts_with(llm, self._prefix.tokens):
                    _restore(llm, self._prefix)  # a generate read something else meanwhile
                read_before = list(llm.input_ids[: llm.n_tokens])
                began = time.perf_counter()
                chunks = llm.create_chat_completion(
                    prompt, max_tokens=max_tokens, temperature=temperature, stream=True
                )
                waited: float | None = None  # until the first chunk
                logged = False
                try:
                    for chunk in chunks:
                        if cancelled.is_set():
                            return
                        if waited is None:
                            waited = time.perf_counter() - began
                        text = chunk["choices"][0]["delta"].get("content")
                        if text:
                            yield text
                            if not logged:  # (once the first token is on its way)
                                logged = True
                                _log_prompt_read(llm, messages, read_before, waited)
                except ValueError as e:  # e.g. the prompt does not fit the context
                    raise EngineError(f"generation failed: {e}") from e
                finally:
                    chunks.close()

        # an async generator, though typed as an iterator: closing it stops the model
        tokens = cast(AsyncGenerator[str, None], self._worker.stream(produce))
        self.usage.calls += 1
        async with aclosing(tokens):
            async for token in tokens:
                self.usage.completion_tokens += 1
                yield token

    async def prefill(
        self, messages: Sequence[ChatMessage], *, stop: Callable[[], bool] | None = None
    ) -> None:
        def read() -> None:
            with self._working() as llm:
                llm = self._with_room(llm, messages, 0)
                tokens = _prompt_tokens(llm, messages)
                saved = self._prefix
                if saved is not None and tokens[: len(saved.tokens)] == saved.tokens:
                    if not _starts_with(llm, saved.tokens):
                        _restore(llm, saved)
                    if len(tokens) == len(saved.tokens):
                        return
                def halted() -> bool:
                    return self._closing.is_set() or (stop is not None and stop())

                if _evaluate(llm, tokens, halted,
                             batch=PREFILL_BATCH if stop is not None else CLOSE_BATCH):
                    self._prefix = _PrefixState(tokens, _sequence_state(llm))

        await self._worker.call(read)

    def _free(self) -> None:
        self._prefix = None
        if self._llm is not None:
            self._llm.close()
            self._llm = None

    def unload(self) -> None:
        """Free the model's memory (it loads again on the next use); waits for running work."""
        self._worker.call_sync(self._free)

    async def unload_if_idle(self) -> bool:
        """Unload once unused for ``idle_unload_s``; returns whether it did. For a periodic task."""

        def idle() -> bool:
            return (
                self.idle_unload_s is not None
                and self.loaded
                and time.monotonic() - self._last_used >= self.idle_unload_s
            )

        def free_if_idle() -> bool:  # on the worker, after any work queued before
            if not idle():
                return False
            self._free()
            return True

        return idle() and await self._worker.call(free_if_idle)

    def close(self) -> None:
        self._closing.set()
        self.unload()
        self._worker.close()


def _log_prompt_read(llm: Any, messages: Sequence[ChatMessage], read_before: Sequence[int],
                     seconds: float) -> None:
    """How much of a streamed prompt the model had read already, and how long the first token
    took: where the wait for it goes."""
    try:
        prompt = _prompt_tokens(llm, messages, whole=True)
    except EngineError:  # no chat template: llama.cpp formats it its own way
        prompt = []
    reused = 0
    for have, want in zip(read_before, prompt, strict=False):
        if have != want:
            break
        reused += 1
    log.info("answer prompt of %d tokens, %d of them read before: the first token after %.2f s",
             len(prompt), reused, seconds)


def as_dicts(messages: Sequence[ChatMessage]) -> list[dict[str, str]]:
    return [{"role": m.role, "content": m.content} for m in messages]


# -- the state of a prompt's opening (llama.cpp, on the model's thread) ------------------------

_OPEN = "\x00braincue-open\x00"  # marks where the open last message would go on


class _PrefixState(msgspec.Struct, frozen=True):
    tokens: list[int]
    state: bytes  # llama.cpp's sequence state (its KV cache) after reading ``tokens``


def _prompt_tokens(llm: Any, messages: Sequence[ChatMessage], *, whole: bool = False
                   ) -> list[int]:
    """The tokens a chat prompt beginning with ``messages`` (the last left open) starts with,
    formatted by the model's own chat template as ``create_chat_completion`` formats it;
    ``whole``: the whole prompt of ``messages``, up to where the answer begins."""
    template = llm.metadata.get("tokenizer.chat_template")
    if not template or not messages:
        raise EngineError("this language model has no chat template to read a prompt ahead with")
    eos, bos = llm.token_eos(), llm.token_bos()
    formatter = _chat_formatter(template,
                                llm._model.token_get_text(eos) if eos != -1 else "",
                                llm._model.token_get_text(bos) if bos != -1 else "")
    *done, last = as_dicts(messages)
    opened = [*done, {"role": last["role"], "content": last["content"] + ("" if whole else _OPEN)}]
    result = formatter(messages=cast(Any, opened))
    text = result.prompt if whole else result.prompt[: result.prompt.index(_OPEN)]
    tokens: list[int] = llm.tokenize(text.encode(), add_bos=not result.added_special,
                                     special=True)
    return tokens


@functools.lru_cache(maxsize=4)
def _chat_formatter(template: str, eos: str, bos: str) -> Any:
    """A chat template compiled once: compiling it took 10-25 ms, twice a question (the
    opening's check, the whole prompt's tokens), of the wait for the first token."""
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    return Jinja2ChatFormatter(template=template, eos_token=eos, bos_token=bos)


def _starts_with(llm: Any, tokens: Sequence[int]) -> bool:
    """Whether the model's evaluated tokens begin with ``tokens``."""
    n = len(tokens)
    return bool(llm.n_tokens >= n and list(llm.input_ids[:n]) == list(tokens))


def _evaluate(llm: Any, tokens: Sequence[int], stop: Callable[[], bool], batch: int) -> bool:
    """Make ``tokens`` the model's evaluated tokens, reading only what does not match already,
    in batches of ``batch`` tokens until ``stop`` holds. Returns whether all were read."""
    import llama_cpp

    common = 0
    for have, want in zip(llm.input_ids[: llm.n_tokens], tokens, strict=False):
        if have != want:
            break
        common += 1
    llama_cpp.llama_memory_seq_rm(llama_cpp.llama_get_memory(llm.ctx), -1, common, -1)
    llm.n_tokens = common
    for start in range(common, len(tokens), batch):
        if stop():
            return False
        llm.eval(tokens[start: start + batch])
    return True


def _sequence_state(llm: Any) -> bytes:
    import ctypes

    import llama_cpp

    size = llama_cpp.llama_state_seq_get_size(llm.ctx, 0)
    buffer = (ctypes.c_uint8 * size)()
    written = llama_cpp.llama_state_seq_get_data(llm.ctx, buffer, size, 0)
    return bytes(buffer)[:written]


def _restore(llm: Any, saved: _PrefixState) -> None:
    """Put back the model's state after reading ``saved.tokens`` (what was read since is gone)."""
    import ctypes

    import llama_cpp

    llama_cpp.llama_memory_seq_rm(llama_cpp.llama_get_memory(llm.ctx), -1, 0, -1)
    buffer = (ctypes.c_uint8 * len(saved.state)).from_buffer_copy(saved.state)
    if llama_cpp.llama_state_seq_set_data(llm.ctx, buffer, len(saved.state), 0) == 0:
        raise EngineError("the language model's saved prompt state could not be restored")
    llm.input_ids[: len(saved.tokens)] = saved.tokens
    llm.n_tokens = len(saved.tokens)


# -- scripted (tests) --------------------------------------------------------------------------

ScriptedResponse = str | object
ScriptedResponder = Callable[[Sequence[ChatMessage]], ScriptedResponse]


class ScriptedGenerator:
    """Answers from a script, for tests.

    Each call takes the next response (or asks ``responses(messages)``): a string is the model's
    raw output (JSON for ``generate``), any other object is encoded to JSON first, and an
    exception instance is raised. ``calls`` records the messages of every call; ``streamed``
    counts the tokens handed out by ``stream``; ``prefills`` records what was read ahead
    (a prefill whose ``stop`` holds at once reads nothing: ``stopped_prefills``).
    """

    def __init__(
        self, responses: list[ScriptedResponse] | ScriptedResponder, *, model_id: str = "scripted"
    ) -> None:
        self.model_id = model_id
        self._responses = responses
        self._next = 0
        self.calls: list[list[ChatMessage]] = []
        self.streamed = 0
        self.prefills: list[list[ChatMessage]] = []  # the messages of every prefill
        self.stopped_prefills = 0
        self.unloads = 0
        self._loaded = False
        self._last_used = time.monotonic()
        self.usage = Usage()

    @property
    def loaded(self) -> bool:
        return self._loaded

    @property
    def last_used(self) -> float:
        return self._last_used

    def _respond(self, messages: Sequence[ChatMessage]) -> str:
        self.calls.append(list(messages))
        self.usage.calls += 1
        self._loaded = True
        self._last_used = time.monotonic()
        if callable(self._responses):
            response = self._responses(messages)
        else:
            if self._next >= len(self._responses):
                raise EngineError(f"scripted generator has no response for call {self._next + 1}")
            response = self._responses[self._next]
            self._next += 1
        if isinstance(response, BaseException):
            raise response
        if isinstance(response, str):
            return response
        return msgspec.json.encode(response).decode()

    async def generate(
        self,
        messages: Sequence[ChatMessage],
        output_type: type[T],
        *,
        max_tokens: int = 1024,
        temperature: float = 0.2,
    ) -> T:
        await trio.lowlevel.checkpoint()
        return decode_output(self._respond(messages), output_type)

    async def stream(
        self,
        messages: Sequence[ChatMessage],
        *,
        max_tokens: int = 512,
        temperature: float = 0.2,
    ) -> AsyncIterator[str]:
        for token in split_tokens(self._respond(messages))[:max_tokens]:
            await trio.lowlevel.checkpoint()
            self.streamed += 1
            self.usage.completion_tokens += 1
            yield token

    async def prefill(
        self, messages: Sequence[ChatMessage], *, stop: Callable[[], bool] | None = None
    ) -> None:
        await trio.lowlevel.checkpoint()
        if stop is not None and stop():
            self.stopped_prefills += 1  # stopped before it read a word
            return
        self.prefills.append(list(messages))

    def unload(self) -> None:
        self._loaded = False
        self.unloads += 1

    async def unload_if_idle(self) -> bool:
        await trio.lowlevel.checkpoint()
        return False

    def close(self) -> None:
        self.unload()
