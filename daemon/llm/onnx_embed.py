"""Sentence embeddings from an ONNX BERT encoder (e.g. bge-small-en-v1.5, int8): the first
token's (CLS) last hidden state, L2-normalised, one text at a time and unpadded (see
:mod:`daemon.llm.onnx`), so a text's vector never depends on the texts beside it.

A query may be embedded with an instruction before it (``query_prefix``; BGE's retrieval
models take "Represent this sentence for searching relevant passages: "), stored texts never.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from daemon.errors import EngineError
from daemon.llm.embed import EmbedProgress, ThreadedEmbedder, normalize_rows
from daemon.llm.onnx import MAX_TOKENS, bert_inputs, load_bundle


class OnnxEmbedder(ThreadedEmbedder):
    """An ONNX embedding bundle run by onnxruntime on its own thread; loaded at construction
    (it is small and always needed). Texts longer than 512 tokens are truncated."""

    def __init__(self, model_path: Path, *, threads: int, batch: int,
                 query_prefix: str = "") -> None:
        super().__init__(model_path, batch=batch, query_prefix=query_prefix)
        try:
            self._session, self._tokenizer = self._worker.call_sync(
                lambda: load_bundle(model_path, threads=threads, max_tokens=MAX_TOKENS,
                                    what="embedding model"))
            self.dimensions: int = self._worker.call_sync(lambda: len(self._vector("")))
        except EngineError:
            self._worker.close()
            raise

    def _vector(self, text: str) -> Any:
        hidden = self._session.run(None, bert_inputs(self._tokenizer.encode(text)))[0]
        return hidden[0, 0]

    def _embed(self, texts: Sequence[str], progress: EmbedProgress | None) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        if progress is not None:
            progress.expect(len(texts))
        rows: list[Any] = []
        try:
            for start in range(0, len(texts), self.batch):
                rows += [self._vector(t) for t in texts[start : start + self.batch]]
                if progress is not None:
                    progress.embedded(min(self.batch, len(texts) - start))
        except Exception as e:  # onnxruntime raises its own types
            raise EngineError(f"embedding failed: {e}") from e
        return normalize_rows(np.stack(rows))

    def close(self) -> None:
        def free() -> None:
            self._session = self._tokenizer = None

        self._worker.call_sync(free)
        self._worker.close()
