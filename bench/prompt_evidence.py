"""Which LoCoMo evidence turns reach the model's prompt: the real search and the ask's sources,
fitted to the budget as the prompt holds them (pure but for the search: no language model).

    PYTHONPATH=$PWD python -m bench.prompt_evidence --locomo LOCOMO_JSON \\
        --home H [--sample 200] [--offset 0] [--seed 7] [--json FILE]

``H`` is a home ``bench.qa --locomo ... --home H`` imported into (the daemon stopped): the same
conversations, Spaces and sampled questions (the same seed and slice). For each question the
ask gathers its sources as the daemon does (``Asker._gather`` with the daemon's recall: the
fusion search, k = ``search_k``) and fits them to the question's budget as its prompt does
(:meth:`AskSources.read`); an evidence turn is in the prompt when a passage of a fitted source
is that turn (its ref). Printed per category: the mean over the questions of the share of
each one's evidence turns in the prompt (docs/benchmarks/ask.md), the share of all
their evidence turns, the share of questions with all / any of theirs there; and the time the
sources took (the search included).

It measures the code ``daemon`` is imported from: another checkout's with that checkout first
on the path (``cd /tmp && PYTHONPATH=OTHER:THIS python -m bench.prompt_evidence ...``; ``bench``
has no ``__init__``, so this module is found here and the daemon there).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.common import default_models_dir, percentile
from bench.qa import LOCOMO_CATEGORIES, locomo_questions, sample
from daemon.config import Config
from daemon.engines import Engines
from daemon.memory import grounding
from daemon.memory.ask import Asker, decided_before_model, model_reads, source_budget
from daemon.memory.evidence import Close
from daemon.memory.grounding import Source
from daemon.store.fusion import ItemKey
from daemon.store.scope import Scope
from daemon.store.search import SearchOptions, search
from daemon.store.store import Store


class AskSources:
    """The sources the ask gathers for a question asked in a Space of the home ``home`` (its
    daemon stopped), as the daemon gathers them (``Asker._gather`` with the daemon's recall:
    the fusion search, k = ``search_k``); no language model."""

    def __init__(self, home: Path) -> None:
        os.environ["BRAINCUE_HOME"] = str(home)
        os.environ.setdefault("BRAINCUE_MODELS", str(default_models_dir()))
        config = Config.load()
        self.settings = settings = config.settings
        embedder = Engines(lambda: settings, config.paths.models_dir).open_embedder()
        self.store = store = Store.open(config.paths, embedder,
                                        encrypt=settings.encrypt_database)

        def recall(question: str, scope: Scope, k: int) -> list[ItemKey]:
            found = search(store, question, scope=scope, k=k,
                           options=SearchOptions.from_settings(settings))
            return [r.key for r in found]

        def no_model() -> Any:
            raise AssertionError("no model is asked")

        self._asker = Asker(store, generator=no_model, settings=lambda: settings, recall=recall)
        self.spaces = {s.name: s.id for s in store.list_spaces()}

    def gather(self, question: str, space: str) -> tuple[list[Source], list[int]]:
        """The numbered sources of ``question`` asked in ``space`` the model may read (those
        recalled deeper for the evidence alone left out), and the forced ones' numbers."""
        scope = Scope(space_id=self.spaces[space], person_memory=self.settings.memory_enabled)
        gathered = self._asker._gather(question, scope, "conversation", self.settings, None, [])
        return gathered.readable(), gathered.forced

    def everything(self, question: str, space: str
                   ) -> tuple[list[Source], list[int], dict[int, list[Close]], bool]:
        """All the sources of ``question`` asked in ``space``, the evidence's too (those
        recalled deeper), the forced ones' numbers, the closeness of each one's turns, and
        whether what matches is another's words of themselves (declined before the model)."""
        scope = Scope(space_id=self.spaces[space], person_memory=self.settings.memory_enabled)
        gathered = self._asker._gather(question, scope, "conversation", self.settings, None, [])
        sources, forced = gathered.sources, gathered.forced
        another, _ = decided_before_model(question, gathered.readable(), forced)
        return sources, forced, self._asker._close(question, sources), another

    def read(self, question: str, sources: list[Source], forced: list[int]) -> list[Source]:
        """What the model reads of ``sources`` (:func:`daemon.memory.ask.model_reads`, with the
        turns weighed as the daemon weighs them), the conversation going on left out."""
        close = self._asker._close(question, sources)
        read = model_reads(question, sources, close, source_budget(self.settings, question),
                           forced)
        return [s for s in read if s.kind != "context"]

    def close(self) -> None:
        self.store.close()


def evidence_refs(q: dict[str, Any], known: set[str]) -> set[str]:
    """The question's evidence turn refs, repaired as ``bench.locomo`` repairs them."""
    from bench.locomo import EvidenceFixes, fix_evidence

    return set(fix_evidence(q["evidence"], known, EvidenceFixes()))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--locomo", type=Path, required=True)
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--sample", type=int, default=200)
    parser.add_argument("--offset", type=int, default=0)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", type=Path, help="write each question's refs in the prompt")
    args = parser.parse_args(argv)
    asking = AskSources(args.home)
    data = json.loads(args.locomo.read_text())
    known = {t["dia_id"] for c in data for key, session in c["conversation"].items()
             if key.startswith("session_") and isinstance(session, list) for t in session}
    # the questions bench.qa --locomo asks for the same seed and slice, with their Space
    questions = sample([(c["sample_id"], q) for c in data for q in locomo_questions(c)], args)
    turns: dict[str, list[int]] = defaultdict(lambda: [0, 0])  # category -> [in prompt, all]
    share: dict[str, list[float]] = defaultdict(list)  # each question's share of its evidence
    whole: dict[str, list[bool]] = defaultdict(list)
    some: dict[str, list[bool]] = defaultdict(list)
    times: list[float] = []
    rows = []
    for space, q in questions:
        question = " ".join(q["question"].split())
        started = time.perf_counter()
        sources, forced = asking.gather(question, space)
        fitted = asking.read(question, sources, forced)
        times.append(time.perf_counter() - started)
        shown = {p.ref for s in fitted for p in s.passages if p.ref}
        wanted = evidence_refs(q, known)
        category = LOCOMO_CATEGORIES[q["category"]]
        for name in (category, "all"):
            turns[name][0] += len(wanted & shown)
            turns[name][1] += len(wanted)
            share[name].append(len(wanted & shown) / len(wanted))
            whole[name].append(wanted <= shown)
            some[name].append(bool(wanted & shown))
        rows.append({"question": question, "category": category, "evidence": sorted(wanted),
                     "in_prompt": sorted(wanted & shown), "prompt_refs": sorted(shown),
                     "chars": sum(len(s.text()) for s in fitted)})
    asking.close()
    print(f"{len(questions)} questions (seed {args.seed}, offset {args.offset}), the daemon from"
          f" {Path(grounding.__file__).parents[2]}")
    print("| category | n | evidence in the prompt (a question's share, mean) | evidence turns"
          " | questions with all / any |")
    print("| --- | --- | --- | --- | --- |")
    for name in [*LOCOMO_CATEGORIES.values(), "all"]:
        if whole[name]:
            got, total = turns[name]
            print(f"| {name} | {len(whole[name])} | {100 * statistics.fmean(share[name]):.1f}% | "
                  f"{100 * got / total:.1f}% ({got}/{total}) | "
                  f"{100 * statistics.fmean(whole[name]):.1f}% / "
                  f"{100 * statistics.fmean(some[name]):.1f}% |")
    print(f"sources gathered and fitted: p50 {1000 * statistics.median(times):.1f} ms, "
          f"p95 {1000 * percentile(times, 0.95):.1f} ms")
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
