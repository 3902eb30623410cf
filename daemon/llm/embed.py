"""Sentence embeddings: the :class:`Embedder` protocol, llama.cpp and scripted implementations.

Rows are float32 and L2-normalised, so a dot product is the cosine. ``model_id`` names the exact
model file: vectors from different ids never mix (the store rebuilds its index on a change).

Embedding thousands of turns or a long document takes minutes on a small CPU. Whoever waits for
it can count the texts embedded on its behalf: an :class:`EmbedProgress` passed to ``embed`` /
``embed_sync`` (and down from the store calls that embed) is told of each call and each batch.
"""

from __future__ import annotations

import hashlib
import re
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import trio

from daemon.errors import EngineError, ModelNotInstalled
from daemon.worker import WorkerThread

_CONTEXT_TOKENS = 512  # BERT-style embedding models have 512 positions


class Embedder(Protocol):
    model_id: str
    dimensions: int
    query_prefix: str  # put before a search query (the model's instruction), "" for none

    async def embed(
        self, texts: Sequence[str], progress: EmbedProgress | None = None
    ) -> np.ndarray: ...

    def embed_sync(
        self, texts: Sequence[str], progress: EmbedProgress | None = None
    ) -> np.ndarray: ...

    def close(self) -> None: ...


class EmbedProgress:
    """Texts embedded for one piece of work: ``report(done, total)`` when an embedding call starts
    (its texts added to ``total``) and after each batch. It runs on the thread that embeds,
    under a lock, so reports arrive in order.

    ``total`` is what the calls so far asked for, or more when whoever counts knows better
    (:meth:`expect_at_least`, e.g. the turns of a transcript about to be stored), so that a bar
    does not show a first small call as the whole work.
    """

    def __init__(self, report: Callable[[int, int], None]) -> None:
        self._report = report
        self._lock = threading.Lock()
        self._asked = 0
        self._floor = 0
        self.done = 0

    @property
    def total(self) -> int:
        return max(self._asked, self._floor)

    def expect_at_least(self, texts: int) -> None:
        """At least ``texts`` will be embedded in all (reported with the next call)."""
        with self._lock:
            self._floor = max(self._floor, texts)

    def expect(self, texts: int) -> None:
        if texts > 0:
            with self._lock:
                self._asked += texts
                self._report(self.done, self.total)

    def embedded(self, texts: int) -> None:
        if texts > 0:
            with self._lock:
                self.done = min(self._asked, self.done + texts)
                self._report(self.done, self.total)


def normalize_rows(vectors: np.ndarray) -> np.ndarray:
    """Scale each row to unit length (zero rows stay zero) as contiguous float32."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return np.ascontiguousarray(vectors / np.maximum(norms, np.float32(1e-12)))


def file_model_id(model_path: Path) -> str:
    """``<file stem>:<first 12 hex digits of the file's sha256>``."""
    digest = hashlib.sha256()
    with model_path.open("rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    return f"{model_path.stem}:{digest.hexdigest()[:12]}"


class ThreadedEmbedder(ABC):
    """An embedder whose model file runs on its own worker thread, one call at a time; ``batch``
    texts per call into the model (or per progress report)."""

    def __init__(self, model_path: Path, *, batch: int, query_prefix: str) -> None:
        if not model_path.is_file():
            raise ModelNotInstalled(
                f"embedding model file {model_path} not found",
                fix="install one with `braincue models install`",
            )
        self.model_path = model_path
        self.batch = max(1, batch)
        self.query_prefix = query_prefix
        self.model_id = file_model_id(model_path)
        self._worker = WorkerThread(f"embed-{model_path.stem}")

    @abstractmethod
    def _embed(self, texts: Sequence[str], progress: EmbedProgress | None) -> np.ndarray:
        """The texts' rows, on the worker thread."""

    async def embed(
        self, texts: Sequence[str], progress: EmbedProgress | None = None
    ) -> np.ndarray:
        texts = list(texts)
        return await self._worker.call(lambda: self._embed(texts, progress))

    def embed_sync(
        self, texts: Sequence[str], progress: EmbedProgress | None = None
    ) -> np.ndarray:
        texts = list(texts)
        return self._worker.call_sync(lambda: self._embed(texts, progress))


class LlamaEmbedder(ThreadedEmbedder):
    """A GGUF embedding model (e.g. all-MiniLM-L6-v2) run by llama.cpp on its own thread.

    The model is small and always needed, so it loads at construction (which also tells
    ``dimensions``). Texts longer than the model's context are truncated, not refused.
    """

    def __init__(self, model_path: Path, *, threads: int, batch: int,
                 query_prefix: str = "") -> None:
        super().__init__(model_path, batch=batch, query_prefix=query_prefix)
        try:
            self._llm: Any = self._worker.call_sync(lambda: self._load(threads))
        except EngineError:
            self._worker.close()
            raise
        self.dimensions: int = self._llm.n_embd()

    def _load(self, threads: int) -> Any:
        from llama_cpp import Llama

        try:
            return Llama(
                str(self.model_path),
                embedding=True,
                n_ctx=_CONTEXT_TOKENS,
                n_batch=_CONTEXT_TOKENS,  # one sequence must fit a batch: truncation cuts here
                n_ubatch=_CONTEXT_TOKENS,
                n_threads=threads,
                verbose=False,
            )
        except ValueError as e:
            raise EngineError(
                f"cannot load embedding model {self.model_path.name}: {e}",
                fix="the file may be damaged; reinstall it with `braincue models install`",
            ) from e

    def _embed(self, texts: Sequence[str], progress: EmbedProgress | None) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        rows: list[list[float]] = []
        if progress is not None:
            progress.expect(len(texts))
        try:
            for start in range(0, len(texts), self.batch):
                chunk = list(texts[start : start + self.batch])
                rows.extend(self._llm.embed(chunk, normalize=False, truncate=True))
                if progress is not None:
                    progress.embedded(len(chunk))
        except (ValueError, RuntimeError) as e:
            raise EngineError(f"embedding failed: {e}") from e
        return normalize_rows(np.array(rows, dtype=np.float32))

    def close(self) -> None:
        def free() -> None:
            if self._llm is not None:
                self._llm.close()
                self._llm = None

        self._worker.call_sync(free)
        self._worker.close()


_WORD = re.compile(r"\w+")


class ScriptedEmbedder:
    """A deterministic embedder without a model, for tests.

    A hashed bag of lowercased words plus (weaker) character trigrams: texts that share words
    are closer. ``model_id`` can be changed to simulate a model change.
    """

    batch = 8  # texts per progress report
    query_prefix = ""

    def __init__(self, dimensions: int = 64, *, model_id: str | None = None) -> None:
        self.dimensions = dimensions
        self.model_id = model_id or f"scripted-bow-{dimensions}"

    def _bucket(self, feature: str) -> tuple[int, float]:
        h = int.from_bytes(hashlib.blake2b(feature.encode(), digest_size=8).digest(), "little")
        return h % self.dimensions, 1.0 if (h >> 63) & 1 else -1.0

    def _vector(self, text: str) -> np.ndarray:
        vector = np.zeros(self.dimensions, dtype=np.float32)
        words = _WORD.findall(text.lower())
        features = [(w, 1.0) for w in words]
        features += [(f"#{w[i:i + 3]}", 0.25) for w in words for i in range(len(w) - 2)]
        for feature, weight in features or [("", 1.0)]:  # an empty text still gets a unit row
            index, sign = self._bucket(feature)
            vector[index] += sign * weight
        return vector

    def embed_sync(
        self, texts: Sequence[str], progress: EmbedProgress | None = None
    ) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        if progress is None:
            return normalize_rows(np.stack([self._vector(t) for t in texts]))
        progress.expect(len(texts))
        rows = []
        for start in range(0, len(texts), self.batch):  # in batches, like a real model
            rows += [self._vector(t) for t in texts[start : start + self.batch]]
            progress.embedded(min(self.batch, len(texts) - start))
        return normalize_rows(np.stack(rows))

    async def embed(
        self, texts: Sequence[str], progress: EmbedProgress | None = None
    ) -> np.ndarray:
        await trio.lowlevel.checkpoint()
        return self.embed_sync(texts, progress)

    def close(self) -> None:
        pass
