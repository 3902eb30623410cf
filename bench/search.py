"""Search latency on synthetic stores: p50/p95 of the shipped search at 10k and 100k chunks.

    .venv/bin/python -m bench.search [--sizes 10000 100000] [--queries N]
                                     [--models-dir DIR] [--model NAME] [--threads N]
                                     [--rerank-model NAME]

Each store holds N chunks (one transcript turn of about 1,300 characters each, 100 per session,
all in one Space, so the scope admits every row) and N assertions, worded from a Zipf-distributed
vocabulary of 20,000 made-up words, so the full-text legs meet long and short posting lists
alike. Stored vectors are synthetic (a low-rank random mix seeded by the text, 384 dimensions,
written under the real model's id): the index's cost does not depend on what the vectors mean.
Queries are three to six words. Latency is measured twice per store: with the query embedded by
the real model (what a user waits for) and with its vector already known (the search alone);
with a re-ranking model installed, also re-ranked with the vector known. A chunk here is one
1,300-character turn, so each re-ranked passage is cut at the model's token limit: the most
the re-ranking can cost per item.
"""

from __future__ import annotations

import argparse
import itertools
import random
import statistics
import tempfile
import time
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from bench.common import default_models_dir, machine
from bench.memo import MemoEmbedder
from daemon.errors import ModelError
from daemon.llm import Embedder, LlamaEmbedder
from daemon.llm.embed import EmbedProgress, normalize_rows
from daemon.llm.rerank import CrossEncoder, Reranker
from daemon.models.registry import model_path, pick_installed
from daemon.store.records import NewAssertion, NewTurn
from daemon.store.scope import Scope
from daemon.store.search import search
from daemon.store.store import Store

DIMENSIONS = 384
LATENT = 32  # real sentence vectors are far from random: a low-rank mix is closer to them
TURNS_PER_SESSION = 100
VOCABULARY = 20_000
_SYLLABLES = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]


def vocabulary(seed: int = 5) -> list[str]:
    rng = random.Random(seed)
    words: set[str] = set()
    while len(words) < VOCABULARY:
        words.add("".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4))))
    return sorted(words)


class Text:
    """Sentences of Zipf-distributed words."""

    def __init__(self, seed: int) -> None:
        self.words = vocabulary()
        self.cumulative = list(itertools.accumulate(1.0 / (r + 1) for r in range(len(self.words))))
        self.rng = random.Random(seed)

    def words_(self, n: int) -> list[str]:
        return self.rng.choices(self.words, cum_weights=self.cumulative, k=n)

    def passage(self, chars: int) -> str:
        text = ""
        while len(text) < chars:
            text += " ".join(self.words_(12)).capitalize() + ". "
        return text.strip()

    def query(self) -> str:
        # mid-frequency words: neither stop-word common nor never seen
        pool = self.words[50:5000]
        return " ".join(self.rng.sample(pool, self.rng.randint(3, 6)))


class SyntheticEmbedder:
    """Meaningless but realistically shaped vectors, fast: a low-rank mix seeded by the text."""

    def __init__(self, model_id: str, dimensions: int = DIMENSIONS) -> None:
        self.model_id = model_id
        self.dimensions = dimensions
        self.query_prefix = ""
        self._mix = np.random.default_rng(0).standard_normal((LATENT, dimensions))

    def embed_sync(
        self, texts: Sequence[str], progress: EmbedProgress | None = None
    ) -> npt.NDArray[np.float32]:
        rows = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        for i, text in enumerate(texts):
            rng = np.random.default_rng(zlib.crc32(text.encode()))
            rows[i] = rng.standard_normal(LATENT) @ self._mix + 0.1 * rng.standard_normal(
                self.dimensions
            )
        return normalize_rows(rows)

    async def embed(
        self, texts: Sequence[str], progress: EmbedProgress | None = None
    ) -> npt.NDArray[np.float32]:
        return self.embed_sync(texts)

    def close(self) -> None:
        pass


def build(data_dir: Path, size: int, embedder: Embedder, progress: Callable[[str], None]) -> Scope:
    text = Text(seed=size)
    started = time.perf_counter()
    with Store(data_dir, embedder) as store:
        space = store.create_space("Bench")
        for first in range(0, size, TURNS_PER_SESSION):
            count = min(TURNS_PER_SESSION, size - first)
            session = store.create_session(
                space_id=space.id,
                title=" ".join(text.words_(3)),
                started_at=1.7e9 + first * 60,
                participants=("me", "them"),
            )
            store.append_turns(
                session.id,
                [
                    NewTurn(speaker=("me", "them")[i % 2], text=text.passage(1300), start=30.0 * i)
                    for i in range(count)
                ],
            )
            store.end_session(session.id, status="kept")
            chunks = store.chunks(session_id=session.id)
            store.add_assertions(
                [
                    NewAssertion(
                        kind="fact",
                        text=text.passage(120),
                        source="extracted",
                        space_id=space.id,
                        session_id=session.id,
                        anchor_chunk_id=chunk.id,
                    )
                    for chunk in chunks[:count]
                ]
            )
            if (first // TURNS_PER_SESSION) % 100 == 99:
                progress(f"  {first + count:,} chunks in {time.perf_counter() - started:.0f} s")
        chunk_count, assertion_count = store.counts()["chunks"], store.counts()["assertions"]
    progress(
        f"built {chunk_count:,} chunks and {assertion_count:,} assertions in"
        f" {time.perf_counter() - started:.0f} s"
    )
    return Scope(space_id=space.id)


def latencies(
    store: Store,
    scope: Scope,
    queries: Sequence[str],
    warmup: int = 5,
    reranker: Reranker | None = None,
    cpu: list[float] | None = None,
) -> list[float]:
    """Wall time of each search (and, into ``cpu``, the process's CPU time for it: what a
    loaded host does not inflate)."""
    for query in queries[:warmup]:
        search(store, query, scope=scope, k=5, reranker=reranker)
    timings = []
    for query in queries:
        started, used = time.perf_counter(), time.process_time()
        search(store, query, scope=scope, k=5, reranker=reranker)
        timings.append(time.perf_counter() - started)
        if cpu is not None:
            cpu.append(time.process_time() - used)
    return timings


def percentiles(timings: Sequence[float]) -> tuple[float, float]:
    cuts = statistics.quantiles(timings, n=20, method="inclusive")
    return statistics.median(timings), cuts[18]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=100, help="searches per measurement")
    parser.add_argument("--models-dir", type=Path, default=default_models_dir())
    parser.add_argument("--model", default="all-minilm-l6-v2")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rerank-model", default="", help="default: the installed one")
    args = parser.parse_args(argv)

    real: LlamaEmbedder | None = None
    try:
        real = LlamaEmbedder(
            model_path(args.model, args.models_dir), threads=args.threads, batch=32
        )
        model_id = real.model_id
    except ModelError as e:
        print(f"no real embedding model ({e}): latency without the query embedding only")
        model_id = f"synthetic-{DIMENSIONS}"
    reranker: CrossEncoder | None = None
    try:
        entry = pick_installed("rerank", args.models_dir, args.rerank_model)
        reranker = CrossEncoder(args.models_dir / entry.filename, threads=args.threads)
    except ModelError as e:
        print(f"no re-ranking model ({e}): latency without re-ranking only")
    words = Text(seed=99)
    queries = [words.query() for _ in range(args.queries)]
    print(f"{machine()} at start; {args.model}, {args.threads} threads, k=5, one Space")
    rows = []
    try:
        for size in args.sizes:
            with tempfile.TemporaryDirectory(prefix="bench-search-") as tmp:
                synthetic = SyntheticEmbedder(model_id)
                scope = build(Path(tmp), size, synthetic, print)
                if real is not None:
                    with Store(Path(tmp), real) as store:
                        p50, p95 = percentiles(latencies(store, scope, queries))
                    rows.append((size, "with the query embedding", p50, p95))
                    known: Embedder = MemoEmbedder(real)  # closed with ``real``
                    known.embed_sync(queries)
                else:
                    known = synthetic
                with Store(Path(tmp), known) as store:
                    p50, p95 = percentiles(latencies(store, scope, queries))
                    rows.append((size, "without (vector known)", p50, p95))
                    if reranker is not None:
                        timed = latencies(store, scope, queries, reranker=reranker)
                        p50, p95 = percentiles(timed)
                        rows.append((size, "re-ranked (vector known)", p50, p95))
    finally:
        if real is not None:
            real.close()
        if reranker is not None:
            reranker.close()
    print(f"\n{'chunks':>8}  {'query':<26} {'p50 ms':>8} {'p95 ms':>8}")
    for size, mode, p50, p95 in rows:
        print(f"{size:>8,}  {mode:<26} {p50 * 1e3:>8.1f} {p95 * 1e3:>8.1f}")


if __name__ == "__main__":
    main()
