"""Embedding throughput: texts per second at batch 1 and batch 32, and the process's CPU time
per text (what a loaded host does not inflate).

    .venv/bin/python -m bench.embed [--models-dir DIR] [--model NAME] [--threads N]

Texts: short sentences (about 12 words) and chunk-sized passages (about 1,400 characters, what
the store embeds). Model load time is excluded.
"""

from __future__ import annotations

import argparse
import random
import time
from pathlib import Path

from bench.common import default_models_dir, machine
from daemon.engines import load_embedder
from daemon.models.registry import pick_installed

SUBJECTS = ["Alice", "Bob", "The team", "Our client", "The manager", "Priya", "The vendor"]
VERBS = ["will send", "reviewed", "postponed", "approved", "asked about", "rewrote", "booked"]
OBJECTS = ["the quarterly budget", "the launch plan", "the contract draft", "the meeting room",
           "the server migration", "the hiring process", "the release notes", "the price list"]
WHEN = ["by Friday", "last week", "on Monday morning", "before the workshop", "in March",
        "after lunch", "next quarter"]


def sentences(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    return [f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)} "
            f"{rng.choice(WHEN)} because {rng.choice(OBJECTS)} changed." for _ in range(n)]


def passages(n: int, chars: int = 1400) -> list[str]:
    pool = sentences(n * 40, seed=11)
    result = []
    for i in range(n):
        text, j = "", i * 40
        while len(text) < chars:
            text += pool[j] + " "
            j += 1
        result.append(text.strip())
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models-dir", type=Path, default=default_models_dir(),
                        help="models directory (default: BRAINCUE_MODELS or the user's)")
    parser.add_argument("--model", default="all-minilm-l6-v2")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--count", type=int, default=256, help="sentences per measurement")
    args = parser.parse_args()

    entry = pick_installed("embed", args.models_dir, args.model)
    workloads = {"sentence": sentences(args.count), "passage": passages(max(8, args.count // 8))}
    print(f"{machine()} at start; {args.model}, {args.threads} threads")
    header = (f"{'texts':<9} {'chars':>6} {'batch':>6} {'count':>6} {'texts/s':>8}"
              f" {'CPU ms/text':>12}")
    print(header)
    print("-" * len(header))
    for batch in (1, 32):
        embedder = load_embedder(entry, args.models_dir, threads=args.threads, batch=batch)
        embedder.embed_sync(["warm up"])
        for kind, texts in workloads.items():
            started, cpu = time.perf_counter(), time.process_time()
            embedder.embed_sync(texts)
            rate = len(texts) / (time.perf_counter() - started)
            cpu_ms = 1000 * (time.process_time() - cpu) / len(texts)
            chars = sum(map(len, texts)) // len(texts)
            print(f"{kind:<9} {chars:>6} {batch:>6} {len(texts):>6} {rate:>8.1f}"
                  f" {cpu_ms:>12.1f}", flush=True)
        embedder.close()
    print(f"{machine()} at end")


if __name__ == "__main__":
    main()
