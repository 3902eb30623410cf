"""The models a daemon runs for everyone: the embedder and the generator.

The embedder is small and every write and search needs it, so it loads when the daemon opens
its store; without an installed embedding model the daemon runs anyway (text and full-text
search work, vectors follow once a model is installed and the daemon restarts). The generator
is big and only some requests need it: it is created on first use, loads its model then, and
is unloaded after ``idle_unload_min`` without use by :func:`unload_idle_engines`. The speech
model belongs to live capture (``daemon.live``), which loads it on its first utterance and
unloads it likewise.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import trio

from daemon.config import DEFAULT_PROFILE, Settings
from daemon.errors import BrainCueError, EngineError, EngineUnreachable, ModelError
from daemon.llm.backend import gguf_layers, gpu_backend, offloaded
from daemon.llm.credentials import api_key
from daemon.llm.embed import Embedder, LlamaEmbedder
from daemon.llm.endpoint import parse as parse_endpoint
from daemon.llm.generate import Generator, LlamaGenerator, ModelLoad
from daemon.llm.onnx_embed import OnnxEmbedder
from daemon.llm.remote import OpenAIGenerator
from daemon.llm.rerank import CrossEncoder, Reranker
from daemon.llm.supervised import SupervisedGenerator
from daemon.models.own import all_entries
from daemon.models.registry import Entry, pick_installed, resolve_model
from daemon.process.supervisor import ModelProcess, unload_check_interval

log = logging.getLogger(__name__)

# keeps run behind everything else: the lowest priority a user can give (nice 19, a weight of
# 15 against 1024 for a normal thread), so live transcription gets the cores whenever it needs
BACKGROUND_NICE = 19
Priority = Literal["foreground", "background"]
# tokens the foreground model (asks, and reading a live call ahead) starts with: its prompts are
# the latest 12-23 turns of the call cut at 240 characters, ~500-740 characters of sources and
# the question (1,600 tokens for 23 full English turns, 740 characters of sources and a long
# question, then the answer's 128); the context grows, up to ``llm_context``, for a prompt that
# does not fit. 4,096 instead of 16,384: ~145 MB less held while a call is live. Keeps start
# with the whole ``llm_context`` (their pieces are sized by it).
ASK_START_CONTEXT = 4096


@dataclass(frozen=True)
class LanguageModel:
    """The language model for `status`: its ``engine`` ("embedded", "openai"), ``model``,
    ``state`` ("loaded", "loads on first use", "not installed"; a server's: "ready",
    "unreachable", "failing", "refused") and why (``detail``); a server's ``url`` and, when it
    is off this machine, the host conversation text goes to (``sends_to``); the embedded
    model's llama.cpp ``backend`` and its layers on the GPU (``gpu_layers`` of ``layers``)."""

    engine: str
    model: str
    state: str
    detail: str = ""
    url: str = ""
    sends_to: str = ""
    backend: str = ""
    gpu_layers: int = 0
    layers: int = 0


def load_embedder(entry: Entry, models_dir: Path, *, threads: int, batch: int) -> Embedder:
    """The installed embedding model ``entry``, run by llama.cpp (GGUF) or onnxruntime."""
    path = models_dir / entry.filename
    if entry.format == "onnx-zip":
        return OnnxEmbedder(path, threads=threads, batch=batch, query_prefix=entry.query_prefix)
    return LlamaEmbedder(path, threads=threads, batch=batch, query_prefix=entry.query_prefix)


class Engines:
    """The daemon's shared models. ``embedder``/``generator`` given here are used instead of
    the configured ones (tests pass scripted models).

    The language model runs in two engines on the same file: the foreground one for what the
    user waits for (ask), the background one for keeps, whose thread and llama.cpp's threads
    run at the lowest CPU priority (``BACKGROUND_NICE``) so that live capture always comes
    first. The weights are mapped from the file, so the two share them in memory; only their
    caches are separate. With ``llm_process`` (the default) each runs in a process of its own
    (:mod:`daemon.llm.supervised`): its death fails the request in flight, is handed to
    ``on_model_death`` and is counted in :meth:`model_processes`.
    """

    def __init__(
        self,
        settings: Callable[[], Settings],
        models_dir: Path,
        *,
        embedder: Embedder | None = None,
        generator: Generator | None = None,
        reranker: Reranker | None = None,
        profile: str = DEFAULT_PROFILE,
        config_dir: Path | None = None,
    ) -> None:
        self._settings = settings
        self._profile = profile  # whose API key a language-model server is sent
        self._config_dir = config_dir  # where the user's own models are named (None: none)
        self.models_dir = models_dir
        self.embedder = embedder
        self._given_reranker = reranker
        # the model setting it was made for, and the model (None: it failed to load)
        self._reranker: tuple[str, Reranker | None] | None = None
        self._reranker_lock = threading.Lock()
        self._given = generator
        self._generators: dict[Priority, Generator] = {}
        self._generators_made_with: tuple[object, ...] | None = None
        # told when a language model's process dies (the daemon publishes a status event)
        self.on_model_death: Callable[[Priority, str], None] | None = None

    def open_embedder(self) -> Embedder | None:
        """Load the configured embedding model (blocking: call it on a thread); None, with a
        log line saying what still works, when there is none to load."""
        if self.embedder is not None:
            return self.embedder
        settings = self._settings()
        try:
            entry = pick_installed("embed", self.models_dir, settings.embed_model)
            self.embedder = load_embedder(
                entry, self.models_dir, threads=settings.llm_threads, batch=settings.embed_batch
            )
        except (ModelError, EngineError) as e:
            log.warning("no vectors: %s. Text is stored and found by its words; vectors are "
                        "added once an embedding model is installed and the daemon restarts", e)
            return None
        log.info("embedding model %s (%d dimensions)", self.embedder.model_id,
                 self.embedder.dimensions)
        return self.embedder

    def reranker(self) -> Reranker | None:
        """The search re-ranker (blocking: loads it on first use), or None when the setting
        turns it off or no model loads: then one log line says why and search keeps its fused
        order (the model is tried again only once its setting changes)."""
        settings = self._settings()
        if not settings.search_rerank:
            return None
        if self._given_reranker is not None:
            return self._given_reranker
        with self._reranker_lock:
            if self._reranker is not None and self._reranker[0] == settings.rerank_model:
                return self._reranker[1]
            made: CrossEncoder | None = None
            try:
                path = resolve_model("rerank", settings.rerank_model, self.models_dir)
                made = CrossEncoder(path, threads=settings.llm_threads)
                made.load()
                log.info("re-ranking model %s", made.model_id)
            except (ModelError, EngineError) as e:
                log.warning("search without re-ranking: %s", e)
                made = None
            if self._reranker is not None and self._reranker[1] is not None:
                self._reranker[1].close()
            self._reranker = (settings.rerank_model, made)
            return made

    def generator(self) -> Generator:
        """The language model for what the user waits for, created on first use (it loads its
        weights on its first call); raises ModelNotInstalled naming the fix when none is
        installed."""
        return self._generator("foreground")

    def background_generator(self) -> Generator:
        """The language model for keeps: like :meth:`generator`, at the lowest CPU priority."""
        return self._generator("background")

    def _generator(self, priority: Priority) -> Generator:
        if self._given is not None:
            return self._given
        made = self._generators.get(priority)
        if made is None:
            settings = self._settings()
            if settings.llm_engine == "openai":  # one client serves both priorities
                made = next((g for g in self._generators.values()
                             if isinstance(g, OpenAIGenerator)), None) or self._remote(settings)
                self._generators[priority] = made
                self._generators_made_with = _generator_settings(settings)
                return made
            path = resolve_model("llm", settings.llm_model, self.models_dir,
                                 all_entries(self._config_dir))
            nice = BACKGROUND_NICE if priority == "background" else 0
            start_ctx = ASK_START_CONTEXT if priority == "foreground" else None
            load = ModelLoad(path, threads=settings.llm_threads, n_ctx=settings.llm_context,
                             start_ctx=start_ctx, nice=nice, gpu_layers=settings.llm_gpu_layers)
            if settings.llm_process:
                made = SupervisedGenerator(
                    load, idle_unload_s=settings.idle_unload_s,
                    on_death=lambda cause: self._model_died(priority, cause))
            else:
                made = LlamaGenerator(load, idle_unload_s=settings.idle_unload_s)
            self._generators[priority] = made
            self._generators_made_with = _generator_settings(settings)
            log.info("language model %s ready for the %s (loads on first use)", made.model_id,
                     priority)
        return made

    def _remote(self, settings: Settings) -> OpenAIGenerator:
        """The ``openai`` engine (ConfigError, NetworkRefused: ``llm_url`` is not usable)."""
        endpoint = parse_endpoint(settings.llm_url, allow_network=settings.llm_allow_network)
        made = OpenAIGenerator(endpoint, settings.llm_remote_model,
                               api_key=api_key(self._profile), timeout_s=settings.llm_timeout_s)
        if endpoint.off_machine:
            log.warning("language model at %s: conversation text goes to that host "
                        "(llm_allow_network is on)", endpoint.host)
        log.info("language model: the server at %s (model %s)", endpoint.host, made.model_id)
        return made

    async def language_model(self) -> LanguageModel:
        """The language model as `status` shows it; a server is asked whether it answers."""
        settings = self._settings()
        if self._given is not None:
            return LanguageModel("embedded", self._given.model_id,
                                 "loaded" if self._given.loaded else "loads on first use")
        if settings.llm_engine == "openai":
            return await self._remote_state(settings)
        try:
            path = resolve_model("llm", settings.llm_model, self.models_dir,
                                 all_entries(self._config_dir))
        except ModelError as e:
            return LanguageModel("embedded", settings.llm_model, "not installed", str(e))
        # (read once each, on a thread: the file's header, llama.cpp's library)
        layers, backend = await trio.to_thread.run_sync(lambda: (gguf_layers(path),
                                                                 gpu_backend()))
        gpu = 0 if backend is None else offloaded(settings.llm_gpu_layers, layers)
        loaded = any(g.loaded for g in self._generators.values())
        return LanguageModel("embedded", path.stem, "loaded" if loaded else "loads on first use",
                             backend=backend or "CPU", gpu_layers=gpu, layers=layers or 0)

    async def _remote_state(self, settings: Settings) -> LanguageModel:
        try:
            made = self._generator("foreground")
        except BrainCueError as e:
            return LanguageModel("openai", settings.llm_remote_model, "refused", str(e),
                                 url=settings.llm_url)
        assert isinstance(made, OpenAIGenerator)
        sends_to = made.endpoint.host if made.endpoint.off_machine else ""
        try:
            await made.probe()
        except EngineUnreachable as e:
            return LanguageModel("openai", made.model_id, "unreachable", str(e),
                                 url=made.endpoint.url, sends_to=sends_to)
        except BrainCueError as e:
            return LanguageModel("openai", made.model_id, "failing", str(e),
                                 url=made.endpoint.url, sends_to=sends_to)
        return LanguageModel("openai", made.model_id, "ready", url=made.endpoint.url,
                             sends_to=sends_to)

    async def language_model_answers(self) -> bool:
        """Whether the language model would answer now (a server: asked; embedded: always)."""
        return (await self.language_model()).state not in ("unreachable", "failing", "refused")

    def _model_died(self, priority: Priority, cause: str) -> None:
        if self.on_model_death is not None:
            self.on_model_death(priority, cause)

    def model_processes(self) -> list[ModelProcess]:
        """The language models that run in processes of their own."""
        return [made.describe("llm", priority) for priority, made in self._generators.items()
                if isinstance(made, SupervisedGenerator)]

    async def settings_changed(self, settings: Settings) -> None:
        """A new language model, thread count or context applies from the next request: the
        current models leave memory once their running work is done (a request still holding
        one finishes on it)."""
        if self._generators_made_with == _generator_settings(settings):
            for made in self._generators.values():
                if isinstance(made, LlamaGenerator | SupervisedGenerator):
                    made.idle_unload_s = settings.idle_unload_s
            return
        retired = list(dict.fromkeys(self._generators.values()))
        self._generators.clear()
        self._generators_made_with = None
        for made in retired:
            log.info("language model %s set aside: the settings changed", made.model_id)
            await trio.to_thread.run_sync(made.unload)

    def _all_generators(self) -> list[Generator]:
        return [self._given] if self._given is not None else list(self._generators.values())

    def loaded(self) -> list[str]:
        """The models in memory now, as ``role:model id`` (each once)."""
        found = []
        if self.embedder is not None:
            found.append(f"embed:{self.embedder.model_id}")
        for made in self._all_generators():
            if made.loaded and f"llm:{made.model_id}" not in found:
                found.append(f"llm:{made.model_id}")
        return found

    async def unload_idle(self) -> None:
        for made in self._all_generators():
            if await made.unload_if_idle():
                log.info("language model %s unloaded after %g min unused",
                         made.model_id, self._settings().idle_unload_min)

    def close(self) -> None:
        """Free every model (blocking: waits for running work)."""
        reranker = self._reranker[1] if self._reranker is not None else self._given_reranker
        for engine in (*self._all_generators(), self.embedder, reranker):
            if engine is not None:
                engine.close()
        self._given = self.embedder = self._given_reranker = self._reranker = None
        self._generators.clear()


def _generator_settings(settings: Settings) -> tuple[object, ...]:
    return (settings.llm_model, settings.llm_threads, settings.llm_context, settings.llm_process,
            settings.llm_engine, settings.llm_url, settings.llm_remote_model,
            settings.llm_allow_network, settings.llm_timeout_s, settings.llm_gpu_layers)


async def unload_idle_engines(engines: Engines, settings: Callable[[], Settings]) -> None:
    """Unload the generator once it has been idle for ``idle_unload_min``; runs until
    cancelled."""
    while True:
        await trio.sleep(unload_check_interval(settings().idle_unload_s))
        await engines.unload_idle()
