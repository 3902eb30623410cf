"""Store ingest rate and size: turns/s through chunking + FTS (+ embedding), bytes per 1,000 turns.

    .venv/bin/python -m bench.store [--turns N] [--models-dir DIR] [--model NAME] [--threads N]

Two ways turns arrive: ``live`` appends one turn per call (one commit each, as the daemon does
while a call runs: the growing chunk is re-embedded as the store's policy says) and ``import``
appends a whole transcript in one call. Each runs without an embedder, with the scripted
embedder (the store's own cost), and with the real MiniLM GGUF when it is installed
(BRAINCUE_MODELS or --models-dir). Sizes are of the database file after close (WAL
checkpointed), per 1,000 turns; the vector index files are a cache and counted apart.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench.common import default_models_dir, machine
from bench.embed import sentences
from daemon.errors import ModelError
from daemon.llm import Embedder, LlamaEmbedder, ScriptedEmbedder
from daemon.models.registry import model_path
from daemon.store.records import NewTurn
from daemon.store.store import DB_FILE, Store


def transcript(n: int) -> list[NewTurn]:
    """Alternating speakers; a turn is one to three sentences (about 60-200 characters)."""
    pool = sentences(3 * n, seed=3)
    return [
        NewTurn(
            speaker=("me", "them")[i % 2],
            text=" ".join(pool[3 * i : 3 * i + 1 + i % 3]),
            start=4.0 * i,
            source=("mic", "loopback")[i % 2],
        )
        for i in range(n)
    ]


def run(mode: str, turns: list[NewTurn], embedder: Embedder | None) -> tuple[float, int, int]:
    """Ingest ``turns``; returns (turns per second, database bytes, index bytes)."""
    with tempfile.TemporaryDirectory(prefix="bench-store-") as tmp:
        data_dir = Path(tmp)
        store = Store(data_dir, embedder)
        session = store.create_session(title="Benchmark call", participants=["me", "them"])
        started = time.perf_counter()
        if mode == "live":
            for turn in turns:
                store.append_turns(session.id, [turn])
        else:
            store.append_turns(session.id, turns)
        store.end_session(session.id)
        elapsed = time.perf_counter() - started
        store.close()
        db_bytes = (data_dir / DB_FILE).stat().st_size
        index_bytes = sum(f.stat().st_size for f in data_dir.glob("vectors-*"))
    return len(turns) / elapsed, db_bytes, index_bytes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=2000, help="turns per run (no model)")
    parser.add_argument("--model-turns", type=int, default=600, help="turns per run with MiniLM")
    parser.add_argument("--models-dir", type=Path, default=default_models_dir())
    parser.add_argument("--model", default="all-minilm-l6-v2")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()

    embedders: list[tuple[str, Callable[[], Embedder | None], int]] = [
        ("none", lambda: None, args.turns),
        ("scripted-64", lambda: ScriptedEmbedder(64), args.turns),
    ]
    try:
        path = model_path(args.model, args.models_dir)
        embedders.append(
            (
                args.model,
                lambda: LlamaEmbedder(path, threads=args.threads, batch=32),
                args.model_turns,
            )
        )
    except ModelError as e:
        print(f"({args.model} skipped: {e})")

    print(f"{machine()} at start")
    header = (
        f"{'embedder':<18} {'mode':<7} {'turns':>6} {'turns/s':>9} {'db KB/1k turns':>15}"
        f" {'index KB':>9}"
    )
    print(header)
    print("-" * len(header))
    for name, make, count in embedders:
        turns = transcript(count)
        embedder = make()
        try:
            for mode in ("live", "import"):
                rate, db_bytes, index_bytes = run(mode, turns, embedder)
                print(
                    f"{name:<18} {mode:<7} {count:>6} {rate:>9.1f}"
                    f" {db_bytes / count * 1000 / 1024:>15.1f} {index_bytes / 1024:>9.1f}"
                )
        finally:
            if embedder is not None:
                embedder.close()
    chars = sum(len(t.text) for t in transcript(1000))
    print(f"(1,000 turns hold {chars / 1024:.1f} KB of text)")


if __name__ == "__main__":
    main()
