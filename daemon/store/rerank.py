"""Re-ranking the fused top of a search by a cross-encoder.

Fusion orders items by the ranks the legs gave them, not by how well each answers the query.
The first ``depth`` fused items are read again, each as one short passage beside the query, by
a cross-encoder (:mod:`daemon.llm.rerank`); its order is blended with the fused order by
reciprocal ranks (``fused_weight / (k + fused rank) + 1 / (k + model rank)``), and the items
below the depth keep their place after them.

A transcript chunk is 1,400 characters of a conversation, most of it beside the point, and the
model reads a few hundred tokens at most in the time a search has: its passage is its
``PASSAGE_TURNS`` turns closest to the query (the cosine of each turn's stored vector with the
query's), in the order they were said. Archives and documents are read from their start,
assertions as their statement; the model's tokenizer cuts what is too long.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import msgspec
import numpy as np

from daemon.store.fusion import Fused, ItemKey
from daemon.store.store import Store
from daemon.store.vectors import Vectors
from daemon.store.writes import assertion_body

if TYPE_CHECKING:
    from daemon.llm.rerank import Reranker

PASSAGE_TURNS = 2


class RerankOptions(msgspec.Struct, frozen=True, kw_only=True):
    """How deep the model reads and how its order is blended (the defaults are measured)."""

    depth: int = 8
    fused_weight: float = 1.0
    k: int = 10


def rerank(
    store: Store,
    reranker: Reranker,
    query: str,
    vector: Vectors | None,
    fused: Sequence[Fused],
    options: RerankOptions,
) -> list[Fused]:
    """``fused`` with its first ``options.depth`` items in the blended order (scores kept)."""
    top = list(fused[: options.depth])
    if len(top) < 2:
        return list(fused)
    texts = passages(store, query, vector, [f.key for f in top])
    logits = reranker.score(query, [texts[f.key] for f in top])
    by_model = sorted(range(len(top)), key=lambda i: -logits[i])
    model_rank = {i: rank for rank, i in enumerate(by_model, start=1)}
    blended = {
        i: options.fused_weight / (options.k + i + 1) + 1.0 / (options.k + model_rank[i])
        for i in range(len(top))
    }
    order = sorted(range(len(top)), key=lambda i: (-blended[i], i))
    return [top[i] for i in order] + list(fused[options.depth :])


def passages(
    store: Store, query: str, vector: Vectors | None, keys: Sequence[ItemKey]
) -> dict[ItemKey, str]:
    """The text the model reads for each item (see the module's docstring)."""
    chunk_ids = [key.id for key in keys if key.kind == "chunk"]
    assertion_ids = [key.id for key in keys if key.kind == "assertion"]
    found: dict[ItemKey, str] = {
        ItemKey("assertion", a.id): assertion_body(a) for a in store.get_assertions(assertion_ids)
    }
    for chunk in store.get_chunks(chunk_ids):
        turns = store.turns_of_chunk(chunk.id) if chunk.kind == "transcript" else []
        lines = [f"{t.speaker}: {t.text}" for t in turns]
        if len(lines) > PASSAGE_TURNS and vector is not None:
            vectors = store.turn_vectors([t.id for t in turns])
            closeness = [
                float(vectors[t.id] @ vector) if t.id in vectors else -1.0 for t in turns
            ]
            best = sorted(np.argsort(closeness)[::-1][:PASSAGE_TURNS].tolist())
            lines = [lines[i] for i in best]
        found[ItemKey("chunk", chunk.id)] = "\n".join(lines) if lines else chunk.text
    return {key: found.get(key, "") for key in keys}  # "": deleted since it was found
