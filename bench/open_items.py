"""Open items carried from one meeting of a series to the next, with the real models.

    .venv/bin/python -m bench.open_items DIR MEETING.json [--space S] [--models-dir DIR]

Imports MEETING.json (BrainCue's transcript import format, e.g. a QMSum series in
bench/qmsum-dev/) into the Space ``S`` of the store in DIR (created on first use), keeps it with
the real language and embedding models — extraction, and reconciliation against what the earlier
meetings of the Space left open, which may close items — and prints what is open in the Space
afterwards (oldest first) and what this meeting closed, with the closing turn. Run it once per
meeting, in order, on the same DIR; each run is one keep (minutes on a small CPU).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import trio

from bench.common import default_models_dir, machine
from daemon.config import Settings
from daemon.errors import NotFound
from daemon.llm import LlamaEmbedder, LlamaGenerator, ModelLoad
from daemon.memory import open_items
from daemon.memory.remember import Rememberer
from daemon.models.registry import model_path
from daemon.store.store import Store
from daemon.store.transcript import import_transcript, parse_transcript


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dir", type=Path)
    parser.add_argument("meeting", type=Path)
    parser.add_argument("--space", default="Series")
    parser.add_argument("--models-dir", type=Path, default=default_models_dir())
    parser.add_argument("--model", default="qwen2.5-coder-0.5b")
    parser.add_argument("--embed-model", default="all-minilm-l6-v2")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--context", type=int, default=Settings().llm_context)
    args = parser.parse_args()

    print(f"{machine()} at start")
    generator = LlamaGenerator(ModelLoad(model_path(args.model, args.models_dir),
                                         threads=args.threads, n_ctx=args.context))
    embedder = LlamaEmbedder(model_path(args.embed_model, args.models_dir),
                             threads=args.threads, batch=32)
    settings = Settings(llm_context=args.context)
    args.dir.mkdir(parents=True, exist_ok=True)
    store = Store(args.dir, embedder)
    try:
        try:
            space = store.get_space(args.space)
        except NotFound:
            space = store.create_space(args.space, activity="project")
        transcript = parse_transcript(args.meeting.read_bytes())
        session, turns, chunks = import_transcript(store, transcript, space.name)
        print(f"{session.title}: session {session.id}, {len(turns)} turns, {chunks} chunks")
        rememberer = Rememberer(store, generator=lambda: generator, settings=lambda: settings)
        started = time.perf_counter()
        outcome = trio.run(rememberer.remember, session.id, "keep")
        print(f"kept in {time.perf_counter() - started:.0f} s: {outcome.assertions} assertions "
              f"({outcome.superseded} superseding, {outcome.closed} closing), "
              f"{outcome.duplicates} duplicates")
        for note in outcome.notes:
            print(f"note: {note}")
        for line in open_items.report_lines(store, space.id, session.id):
            print(line)
    finally:
        store.close()
        generator.close()
        embedder.close()
    print(f"{machine()} at end")


if __name__ == "__main__":
    main()
