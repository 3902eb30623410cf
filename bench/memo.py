"""An embedder that remembers what it embedded (benchmarks only)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from daemon.llm import Embedder
from daemon.llm.embed import EmbedProgress


class MemoEmbedder:
    """Wraps an embedder and embeds each distinct text once: a benchmark asks the same query
    of several searches, or wants search latency without the query's embedding."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.dimensions = inner.dimensions
        self.query_prefix = inner.query_prefix
        self._seen: dict[str, npt.NDArray[np.float32]] = {}

    def embed_sync(
        self, texts: Sequence[str], progress: EmbedProgress | None = None
    ) -> npt.NDArray[np.float32]:
        missing = [t for t in dict.fromkeys(texts) if t not in self._seen]
        if missing:
            self._seen.update(zip(missing, self.inner.embed_sync(missing, progress),
                                  strict=True))
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        return np.stack([self._seen[t] for t in texts])

    async def embed(
        self, texts: Sequence[str], progress: EmbedProgress | None = None
    ) -> npt.NDArray[np.float32]:
        return self.embed_sync(texts, progress)

    def close(self) -> None:
        self.inner.close()
