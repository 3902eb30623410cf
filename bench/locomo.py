"""Retrieval on LoCoMo: FTS-only, vector-only and the shipped fusion search side by side.

    .venv/bin/python -m bench.locomo --data PATH [--k 5 10] [--json FILE]
                                     [--models-dir DIR] [--model NAME] [--threads N]
                                     [--rerank-model NAME | --no-rerank] [--cache DIR]

Each conversation becomes its own store and Space; each LoCoMo session one kept session, dated
from ``session_N_date_time``, its turns stored with ``ref`` = ``dia_id`` and image captions
appended to the text. Every question of categories 1-4 (multi-hop, temporal, open-domain,
single-hop) is asked of three searches: the full-text leg alone, the vector leg alone (both
raw rankings, as the store returns them) and the shipped search (all legs fused, with its caps
and recency rule). A question is recalled at k when its evidence turns are inside the union of
the top-k results' turns: all of them (recall_all@k) or at least one (recall_any@k). The shipped
search is also scored at the character budget of the full-text leg (per question, results taken
in order while they fit), so a gain cannot come from returning more text. With a re-ranking model
(the default when one is installed) the shipped search re-ranks, and the same search without
re-ranking is scored beside it; recall_all@k of both is also printed per conversation, the folds
of a cross-validation over the conversations, and by how many chunks hold a question's evidence.
With ``--cache DIR`` each conversation's store is built once per embedding model and reused.

LoCoMo is licensed CC BY-NC 4.0 (Maharana et al., ACL 2024): pass its path, never copy it into
the repository. Any file of the same shape works.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import hashlib
import json
import math
import re
import shutil
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import msgspec

from bench.common import default_models_dir, machine
from bench.memo import MemoEmbedder
from daemon.engines import load_embedder
from daemon.errors import ModelNotInstalled
from daemon.llm import Embedder
from daemon.llm.rerank import CrossEncoder, Reranker
from daemon.models.registry import pick_installed
from daemon.store.fusion import ItemKey, fuse
from daemon.store.records import NewTurn
from daemon.store.scope import Scope
from daemon.store.search import DEFAULT_OPTIONS, LEG_WEIGHTS, SearchResult, search
from daemon.store.store import Store

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}

_DIA_ID = re.compile(r"D:?(\d+):(\d+)")
_DATE_FORMAT = "%I:%M %p on %d %B, %Y"  # "1:56 pm on 8 May, 2023"


class Turn(msgspec.Struct, frozen=True):
    ref: str
    speaker: str
    text: str


class Session(msgspec.Struct, frozen=True):
    number: int
    started_at: dt.datetime
    turns: tuple[Turn, ...]


class Question(msgspec.Struct, frozen=True):
    text: str
    category: int
    evidence: tuple[str, ...]


class Conversation(msgspec.Struct, frozen=True):
    sample_id: str
    speakers: tuple[str, ...]
    sessions: tuple[Session, ...]
    questions: tuple[Question, ...]


class EvidenceFixes(msgspec.Struct):
    """What was wrong with the evidence lists, and what was done about it."""

    split: int = 0  # entries holding several ids ("D8:6; D9:17", "D9:1 D4:4")
    normalised: int = 0  # ids written oddly ("D:11:26", "D30:05")
    dropped: int = 0  # ids that are malformed ("D") or name no turn
    skipped: int = 0  # questions left without evidence

    @property
    def total(self) -> int:
        return self.split + self.normalised + self.dropped


# -- reading LoCoMo --------------------------------------------------------------------------------


def load(path: Path) -> tuple[list[Conversation], EvidenceFixes]:
    """The conversations of a LoCoMo-shaped file (questions of categories 1-4 only)."""
    fixes = EvidenceFixes()
    conversations = [_conversation(sample, fixes) for sample in json.loads(path.read_text())]
    return conversations, fixes


def _conversation(sample: dict[str, Any], fixes: EvidenceFixes) -> Conversation:
    talk = sample["conversation"]
    sessions: list[Session] = []
    n = 1
    while f"session_{n}" in talk:
        turns = tuple(
            Turn(ref=t["dia_id"], speaker=t["speaker"], text=_turn_text(t))
            for t in talk[f"session_{n}"]
        )
        started = dt.datetime.strptime(talk[f"session_{n}_date_time"], _DATE_FORMAT)
        if turns:
            sessions.append(Session(number=n, started_at=started, turns=turns))
        n += 1
    known = {turn.ref for session in sessions for turn in session.turns}
    questions = []
    for qa in sample["qa"]:
        if qa.get("category") not in CATEGORIES:
            continue
        evidence = fix_evidence(qa.get("evidence") or [], known, fixes)
        if evidence:
            questions.append(Question(qa["question"], qa["category"], evidence))
        else:
            fixes.skipped += 1
    speakers = (talk["speaker_a"], talk["speaker_b"])
    return Conversation(sample["sample_id"], speakers, tuple(sessions), tuple(questions))


def _turn_text(turn: dict[str, Any]) -> str:
    caption = turn.get("blip_caption")
    return f"{turn['text']} [image: {caption}]" if caption else str(turn["text"])


def fix_evidence(entries: Iterable[str], known: set[str], fixes: EvidenceFixes) -> tuple[str, ...]:
    """Evidence ids, repaired: entries split, ids normalised, unknown ids dropped; in order,
    without repeats. ``fixes`` counts each repair."""
    found: list[str] = []
    for entry in entries:
        parts = [p for p in re.split(r"[;,\s]+", entry.strip()) if p]
        if len(parts) > 1:
            fixes.split += 1
        for part in parts:
            m = _DIA_ID.fullmatch(part)
            if m is None:
                fixes.dropped += 1
                continue
            ref = f"D{int(m[1])}:{int(m[2])}"
            if ref != part:
                fixes.normalised += 1
            if ref not in known:
                fixes.dropped += 1
            elif ref not in found:
                found.append(ref)
    return tuple(found)


# -- building a store per conversation ---------------------------------------------------------


def build_store(conversation: Conversation, data_dir: Path, embedder: Embedder) -> Scope:
    """Write ``conversation`` into a new store at ``data_dir``; the scope of its Space."""
    with Store(data_dir, embedder) as store:
        space = store.create_space(conversation.sample_id, activity="personal")
        for session in conversation.sessions:
            stored = store.create_session(
                space_id=space.id,
                title=f"Session {session.number}",
                started_at=session.started_at.astimezone().timestamp(),
                participants=conversation.speakers,
            )
            store.append_turns(
                stored.id,
                [
                    NewTurn(speaker=t.speaker, text=t.text, start=0.0, ref=t.ref)
                    for t in session.turns
                ],
            )
            store.end_session(stored.id, status="kept")
    return Scope(space_id=space.id)


def cached_store(conversation: Conversation, cache: Path, embedder: Embedder) -> tuple[Path, Scope]:
    """The store of ``conversation`` under ``cache``, one directory per conversation, its
    content and the embedding model, built unless a finished one is there (building is most of
    a run's time; searching a store leaves it as it was); its directory and the scope of its
    Space. A change to how the store chunks or embeds is not seen: empty the cache then."""
    content = hashlib.sha256(msgspec.json.encode(conversation.sessions)).hexdigest()[:12]
    name = re.sub(
        r"[^A-Za-z0-9_.-]+", "_", f"{conversation.sample_id}-{content}-{embedder.model_id}"
    )
    data_dir = cache / name
    done = data_dir / "built.json"
    if done.exists():
        return data_dir, Scope(space_id=json.loads(done.read_text())["space_id"])
    if data_dir.exists():
        shutil.rmtree(data_dir)  # a build that did not finish
    data_dir.mkdir(parents=True)
    scope = build_store(conversation, data_dir, embedder)
    done.write_text(json.dumps({"space_id": scope.space_id}) + "\n")
    return data_dir, scope


# -- scoring -----------------------------------------------------------------------------------


class Found(msgspec.Struct, frozen=True):
    """One result as the benchmark sees it: the turn refs it covers and its size."""

    refs: frozenset[str]
    chars: int


class Tally:
    """Recall and characters per system, k and category."""

    def __init__(self) -> None:
        self.hits: dict[tuple[str, str, int, int], list[bool]] = defaultdict(list)
        self.chars: dict[tuple[str, int], list[int]] = defaultdict(list)
        # recall_all by how many chunks hold a question's evidence (3 standing for 3 or more)
        self.by_places: dict[tuple[str, int, int], list[bool]] = defaultdict(list)

    def add(
        self,
        system: str,
        k: int,
        category: int,
        evidence: Sequence[str],
        top: Sequence[Found],
        places: int = 0,
    ) -> None:
        """``places``: how many chunks hold the evidence (0: not counted by places)."""
        covered = frozenset().union(*(f.refs for f in top))
        wanted = set(evidence)
        if places:
            self.by_places[(system, k, min(places, MANY_PLACES))].append(wanted <= covered)
        self.hits[(system, "all", k, category)].append(wanted <= covered)
        self.hits[(system, "any", k, category)].append(bool(wanted & covered))
        self.chars[(system, k)].append(sum(f.chars for f in top))

    def percent(self, system: str, mode: str, k: int, category: int | None = None) -> float:
        cats = CATEGORIES if category is None else (category,)
        values = [v for c in cats for v in self.hits[(system, mode, k, c)]]
        return 100.0 * sum(values) / len(values) if values else float("nan")

    def places_line(self, system: str, k: int) -> str:
        """recall_all@k of ``system`` by how many chunks hold the evidence."""
        parts = []
        for places in range(1, MANY_PLACES + 1):
            hits = self.by_places[(system, k, places)]
            what = "1 chunk" if places == 1 else f"{places} chunks"
            more = " or more" if places == MANY_PLACES else ""
            share = 100.0 * sum(hits) / len(hits) if hits else float("nan")
            parts.append(f"in {what}{more} {_pct(share)} of {len(hits)}")
        return f"{SYSTEMS[system]}, all@{k} by where the evidence lies: " + ", ".join(parts)

    def mean_chars(self, system: str, k: int) -> float:
        values = self.chars[(system, k)]
        return sum(values) / len(values) if values else float("nan")

    def count(self, category: int | None = None) -> int:
        cats = CATEGORIES if category is None else (category,)
        system, k = next(iter(self.chars))
        return sum(len(self.hits[(system, "all", k, c)]) for c in cats)

    def figures(
        self, systems: Sequence[str], ks: Sequence[int]
    ) -> dict[str, dict[str, dict[str, float]]]:
        out: dict[str, dict[str, dict[str, float]]] = {}
        for system in systems:
            out[system] = {}
            for k in ks:
                for mode in ("all", "any"):
                    per = {str(c): round(self.percent(system, mode, k, c), 2) for c in CATEGORIES}
                    per["overall"] = round(self.percent(system, mode, k), 2)
                    out[system][f"{mode}@{k}"] = per
                out[system][f"chars@{k}"] = {"overall": round(self.mean_chars(system, k), 1)}
        return out


def within_budget(results: Sequence[Found], budget: int) -> list[Found]:
    """The leading results whose characters add up to at most ``budget``."""
    taken, used = [], 0
    for found in results:
        if used + found.chars > budget:
            break
        taken.append(found)
        used += found.chars
    return taken


# Rows of the report: the legs alone, plain fusion as first designed (RRF k=60), and the shipped
# search. Raw legs are scored as the store ranks them (no caps); ``rrf`` rows fuse them with
# plain RRF (k=60, equal weights, no caps), as a reference for what the shipped search changed.
SYSTEMS = {
    "fts": "FTS5 BM25 only",
    "vector_whole": "vector only, whole chunks",
    "vector": "vector only, best turn",
    "rrf_whole": "RRF k=60 of BM25 + whole chunks",
    "rrf_turn": "RRF k=60 of BM25 + best turn",
    "fused": "fusion, not re-ranked",
    "shipped": "shipped search",
}
DEPTH = 50  # rows per leg fused by the reference RRF rows
MANY_PLACES = 3  # questions whose evidence lies in this many chunks or more are counted together


def run(
    conversations: Sequence[Conversation],
    embedder: Embedder,
    ks: Sequence[int],
    progress: Callable[[str], None] = lambda line: None,
    reranker: Reranker | None = None,
    fts_weights: Sequence[float] = (),
    cache: Path | None = None,
) -> Tally:
    """``fts_weights``: the full-text legs' fusion weight (the vector legs' is 1) of extra
    fusion rows (``fts=W``, at the smallest k, not re-ranked), for tuning by conversation.
    ``cache``: a directory keeping each conversation's store (see :func:`cached_store`)."""
    tally = Tally()
    for conversation in conversations:
        own = Tally()
        with contextlib.ExitStack() as stack:
            started = time.perf_counter()
            if cache is None:
                data_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-")))
                scope = build_store(conversation, data_dir, embedder)
            else:
                data_dir, scope = cached_store(conversation, cache, embedder)
            built = time.perf_counter() - started
            with Store(data_dir, embedder) as store:
                refs = _chunk_refs(store)
                for q in conversation.questions:
                    for counted in (tally, own):
                        _ask(store, scope, q, refs, ks, counted, reranker)
                        _weighed(store, scope, q, min(ks), counted, fts_weights)
            turns = sum(len(s.turns) for s in conversation.sessions)
            k0 = min(ks)
            progress(
                f"{conversation.sample_id}: {turns} turns, {len(conversation.questions)} questions,"
                f" store ready in {built:.0f} s; all@{k0} shipped"
                f" {_pct(own.percent('shipped', 'all', k0))}, not re-ranked"
                f" {_pct(own.percent('fused', 'all', k0))}, vectors alone"
                f" {_pct(own.percent('vector', 'all', k0))}"
                + "".join(f", fts={w:g} {_pct(own.percent(f'fts={w:g}', 'all', k0))}"
                          for w in fts_weights)
            )
    return tally


def _ask(
    store: Store,
    scope: Scope,
    q: Question,
    refs: dict[int, Found],
    ks: Sequence[int],
    tally: Tally,
    reranker: Reranker | None,
) -> None:
    depth = max(DEPTH, *ks)
    legs = {
        "fts": [(ItemKey("chunk", h.id), -h.score) for h in store.fts_chunks(q.text, scope, depth)],
        "vector_whole": [
            (ItemKey("chunk", h.id), h.score) for h in store.vector_chunks(q.text, scope, depth)
        ],
        "vector": [
            (ItemKey("chunk", h.id), h.score) for h in store.vector_turns(q.text, scope, depth)
        ],
    }
    ranked = {name: [key.id for key, _ in hits] for name, hits in legs.items()}
    ranked["rrf_whole"] = [f.key.id for f in fuse({n: legs[n] for n in ("fts", "vector_whole")})]
    ranked["rrf_turn"] = [f.key.id for f in fuse({n: legs[n] for n in ("fts", "vector")})]
    for system, ids in ranked.items():
        for k in ks:
            tally.add(system, k, q.category, q.evidence, [refs[i] for i in ids[:k]])
    wanted = set(q.evidence)
    places = sum(1 for found in refs.values() if found.refs & wanted)
    for k in ks:
        fused = [_found(r) for r in search(store, q.text, scope=scope, k=k)]
        tally.add("fused", k, q.category, q.evidence, fused, places)
        shipped = (
            fused
            if reranker is None
            else [_found(r) for r in search(store, q.text, scope=scope, k=k, reranker=reranker)]
        )
        tally.add("shipped", k, q.category, q.evidence, shipped, places)
        if k == min(ks):
            fts_chars = sum(refs[i].chars for i in ranked["fts"][:k])
            budget = within_budget(shipped, fts_chars)
            tally.add("shipped_budget", k, q.category, q.evidence, budget)


def _weighed(
    store: Store, scope: Scope, q: Question, k: int, tally: Tally, fts_weights: Sequence[float]
) -> None:
    for w in fts_weights:
        weights = {leg: w if leg.startswith("fts") else 1.0 for leg in LEG_WEIGHTS}
        options = msgspec.structs.replace(DEFAULT_OPTIONS, weights=weights)
        found = [_found(r) for r in search(store, q.text, scope=scope, k=k, options=options)]
        tally.add(f"fts={w:g}", k, q.category, q.evidence, found)


def _chunk_refs(store: Store) -> dict[int, Found]:
    """Every chunk's refs and size, for the raw legs (which return chunk ids only)."""
    found: dict[int, Found] = {}
    for session in store.list_sessions():
        for chunk in store.chunks(session_id=session.id):
            turns = store.turns_of_chunk(chunk.id)
            found[chunk.id] = Found(frozenset(t.ref for t in turns if t.ref), len(chunk.text))
    return found


def _found(result: SearchResult) -> Found:
    return Found(frozenset(result.refs), result.chars)


# -- report ------------------------------------------------------------------------------------


def report(tally: Tally, ks: Sequence[int], fixes: EvidenceFixes) -> str:
    lines = [
        f"questions: {tally.count()} of categories 1-4 ("
        + ", ".join(f"{c} {name}: {tally.count(c)}" for c, name in CATEGORIES.items())
        + ")",
        f"evidence fixed: {fixes.total} ({fixes.split} entries split, {fixes.normalised} ids"
        f" normalised, {fixes.dropped} dropped); {fixes.skipped} questions skipped (no evidence)",
        "",
    ]
    k0 = min(ks)
    head = ["search"] + [f"{m}@{k}" for k in ks for m in ("all", "any")] + [f"chars@{k0}"]
    head += [f"all@{k0} cat {c}" for c in CATEGORIES]
    rows = []
    for system, name in SYSTEMS.items():
        row = [name] + [_pct(tally.percent(system, m, k)) for k in ks for m in ("all", "any")]
        row.append(f"{tally.mean_chars(system, k0):,.0f}")
        row += [_pct(tally.percent(system, "all", k0, c)) for c in CATEGORIES]
        rows.append(row)
    budget = ["shipped, at FTS's characters"] + [
        _pct(tally.percent("shipped_budget", m, k0)) if k == k0 else ""
        for k in ks
        for m in ("all", "any")
    ]
    budget.append(f"{tally.mean_chars('shipped_budget', k0):,.0f}")
    budget += [_pct(tally.percent("shipped_budget", "all", k0, c)) for c in CATEGORIES]
    rows.append(budget)
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "|".join("---" for _ in head) + "|")
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    lines += ["", *(tally.places_line(system, k0) for system in ("fused", "shipped"))]
    return "\n".join(lines)


def _reranker(models_dir: Path, name: str) -> CrossEncoder | None:
    try:
        entry = pick_installed("rerank", models_dir, name)
    except ModelNotInstalled:
        if name:
            raise
        return None
    return CrossEncoder(models_dir / entry.filename)


def _pct(value: float) -> str:
    return "–" if math.isnan(value) else f"{value:.1f}%"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="a LoCoMo-shaped JSON file")
    parser.add_argument("--k", type=int, nargs="+", default=[5, 10], help="cut-offs (default 5 10)")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument("--models-dir", type=Path, default=default_models_dir())
    parser.add_argument("--model", default="all-minilm-l6-v2", help="embedding model name")
    parser.add_argument("--threads", type=int, default=2, help="embedding threads")
    parser.add_argument("--rerank-model", default="",
                        help="re-ranking model name (default: the installed one)")
    parser.add_argument("--no-rerank", action="store_true", help="fusion without re-ranking")
    parser.add_argument("--cache", type=Path,
                        help="keep each conversation's store here and reuse it (empty it when the"
                        " store's chunking or embedding changes)")
    parser.add_argument("--fts-weights", type=float, nargs="*", default=[],
                        help="also fuse with these full-text weights (vectors 1), per conversation")
    args = parser.parse_args(argv)
    ks = sorted(set(args.k))

    conversations, fixes = load(args.data)
    entry = pick_installed("embed", args.models_dir, args.model)
    embedder = MemoEmbedder(load_embedder(entry, args.models_dir, threads=args.threads, batch=32))
    reranker = None if args.no_rerank else _reranker(args.models_dir, args.rerank_model)
    print(f"{machine()}; {args.model} ({embedder.model_id}), {args.threads} threads;"
          f" re-ranking: {reranker.model_id if reranker else 'none'}", flush=True)
    started = time.perf_counter()
    try:
        tally = run(conversations, embedder, ks, progress=lambda line: print(line, flush=True),
                    reranker=reranker, fts_weights=args.fts_weights, cache=args.cache)
    finally:
        embedder.close()
        if reranker is not None:
            reranker.close()
    print(f"done in {time.perf_counter() - started:.0f} s\n")
    print(report(tally, ks, fixes))
    if args.json is not None:
        figures = tally.figures(list(SYSTEMS), ks)
        figures |= tally.figures(["shipped_budget"], ks[:1])
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
        print(f"\nfigures written to {args.json}")


if __name__ == "__main__":
    main()
