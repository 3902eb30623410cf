"""Cross-encoder re-ranking: how well a passage answers a query, read together.

A cross-encoder reads the query and a passage as one input and gives one relevance logit
(higher is better; uncalibrated, so it orders and is never thresholded). The model file is a
zip of the ONNX graph (``model.onnx``) and its tokenizer (``tokenizer.json``), run by
onnxruntime on the CPU. Loading is lazy (the first :meth:`CrossEncoder.score` loads it) and a
lock makes one call run at a time.

Each pair runs alone and unpadded (see :mod:`daemon.llm.onnx`): alone, a pair scores as the
reference does. The parallel work is across pairs, not inside one: ``threads`` pairs run at
once, each on one runtime thread (one session; its ``run`` is thread-safe). A pair of a hundred
tokens is too small to split well — inside one run, two threads cost about 30% more CPU than one
(each operator hands work to a sleeping thread and waits for it) — and a pair's scores are the
same either way.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Protocol

from daemon.llm.onnx import MAX_TOKENS, bert_inputs, load_bundle


class Reranker(Protocol):
    model_id: str

    def score(self, query: str, passages: Sequence[str]) -> list[float]: ...

    def close(self) -> None: ...


class CrossEncoder:
    """An ONNX cross-encoder (BERT-style: ``input_ids``, ``attention_mask``,
    ``token_type_ids`` in, ``logits[batch, 1]`` out)."""

    def __init__(self, path: Path, *, threads: int = 2, max_tokens: int = 160) -> None:
        self.path = path
        self.model_id = path.name
        self.threads = threads
        self.max_tokens = min(max_tokens, MAX_TOKENS)
        self._lock = threading.Lock()
        self._session: Any = None
        self._tokenizer: Any = None
        self._pool: ThreadPoolExecutor | None = None  # ``threads`` pairs at once

    def load(self) -> None:
        """Read the model file (raises EngineError when it is missing or not a model)."""
        with self._lock:
            self._load()

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        """The relevance logit of each passage for ``query``, in order; the pair is cut to
        ``max_tokens`` (the longer side shortened first)."""
        if not passages:
            return []
        with self._lock:
            self._load()
            if self._pool is None or len(passages) == 1:
                return [self._score(query, p) for p in passages]
            return list(self._pool.map(lambda p: self._score(query, p), passages))

    def _score(self, query: str, passage: str) -> float:
        encoded = self._tokenizer.encode(query, passage)
        return float(self._session.run(None, bert_inputs(encoded))[0][0][0])

    def close(self) -> None:
        with self._lock:
            if self._pool is not None:
                self._pool.shutdown()
            self._session = self._tokenizer = self._pool = None

    def _load(self) -> None:
        if self._session is not None:
            return
        self._session, self._tokenizer = load_bundle(
            self.path, threads=1, max_tokens=self.max_tokens, what="re-ranking model",
        )
        if self.threads > 1:
            self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="braincue-rerank")
