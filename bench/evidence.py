"""How often the evidence an ask shows first holds a gold turn, over how deep it recalls and how
it weighs the passages: LoCoMo and QMSum dev questions, no language model.

    PYTHONPATH=$PWD python -m bench.evidence --locomo LOCOMO_JSON --locomo-home H1 \\
        --qmsum QMSUM_DIR --qmsum-home H2 [--depths 15 20] [--rank-costs 0.02 0.015 ...] \\
        [--word-weights 0.1 0.05 ...] [--floors 0.45 ...] [--speakers 0 0.15 ...]

``H1`` and ``H2`` are homes ``bench.qa --locomo ... --home H1`` and ``bench.qa --qmsum ...
--home H2`` imported into (their daemons stopped). For each question (LoCoMo categories 1-4;
LoCoMo category 5, things never said, whose gold turns are what the other person said; every
specific QMSum query) the ask gathers its sources as the daemon does, recalling
``ask_evidence_k`` = each depth for the evidence, and the evidence is chosen from them by each
:class:`~daemon.memory.evidence.Weights` of the grid; a question counts when a shown passage is
one of its gold turns (LoCoMo's evidence, QMSum's gold span); a question declined before the
model (what matches is another's words of themselves) is weighed as the daemon weighs it,
without the named one's weight. Printed: the daemon's figure as shipped (its depth and
weights), the figure of the sources the model reads alone (no deeper recall, the model's
weights) and the ten best of the grid, each set's share and their mean; then the choice
leaving each conversation and each series out in turn (chosen by the mean of the three sets'
shares on the rest), scored on what was left out.
"""

from __future__ import annotations

import argparse
import itertools
import json
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import msgspec

from bench.prompt_evidence import AskSources, evidence_refs
from bench.qa import NEVER_SAID, locomo_questions, qmsum_series
from daemon.config import Settings
from daemon.memory.evidence import READ, SHOWN, Weights, evidence_for, weighing


class Question(NamedTuple):
    group: str  # the conversation or the series: a fold
    space: str
    question: str
    gold: frozenset[str]


class Grid(NamedTuple):
    depth: int
    weights: Weights


def locomo(path: Path, *, never_said: bool = False) -> list[Question]:
    """LoCoMo's questions of categories 1-4, or with ``never_said`` those of category 5 (its
    gold turns: what the other person said, which the question gives the wrong one)."""
    data = json.loads(path.read_text())
    known = {t["dia_id"] for c in data for key, session in c["conversation"].items()
             if key.startswith("session_") and isinstance(session, list) for t in session}
    return [Question(c["sample_id"], c["sample_id"], " ".join(q["question"].split()),
                     frozenset(evidence_refs(q, known)))
            for c in data for q in locomo_questions(c, never_said=never_said)
            if (q["category"] == NEVER_SAID) == never_said]


def qmsum(root: Path) -> list[Question]:
    return [Question(series.name, series.name, q["query"], frozenset(q["refs"]))
            for series in qmsum_series(root, [])
            for q in json.loads((series / "queries.json").read_text())
            if q["kind"] == "specific"]


def holds(home: Path, questions: Sequence[Question], grid: Sequence[Grid]
          ) -> dict[Grid, list[bool]]:
    """For each point of ``grid``, whether each question's evidence holds a gold turn."""
    asking = AskSources(home)
    shipped = asking.settings
    found: dict[Grid, list[bool]] = {g: [] for g in grid}
    try:
        for depth in sorted({g.depth for g in grid}):
            asking.settings = msgspec.structs.replace(shipped, ask_evidence_k=depth)
            for q in questions:
                sources, forced, close, another = asking.everything(q.question, q.space)
                for point in (g for g in grid if g.depth == depth):
                    shown = evidence_for(q.question, sources, forced, close=close,
                                         weights=weighing(point.weights, another))
                    found[point].append(bool({e.ref for e in shown} & q.gold))
    finally:
        asking.close()
    return found


def share(hits: Sequence[bool]) -> float:
    return 100 * sum(hits) / len(hits) if hits else 0.0


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--locomo", type=Path, required=True)
    parser.add_argument("--locomo-home", type=Path, required=True)
    parser.add_argument("--qmsum", type=Path, required=True)
    parser.add_argument("--qmsum-home", type=Path, required=True)
    parser.add_argument("--depths", type=int, nargs="+", default=[15, 20])
    parser.add_argument("--rank-costs", type=float, nargs="+", default=[0.02, 0.015, 0.01])
    parser.add_argument("--word-weights", type=float, nargs="+", default=[0.1, 0.05])
    parser.add_argument("--floors", type=float, nargs="+", default=[0.45])
    parser.add_argument("--speakers", type=float, nargs="+", default=[0.0, 0.1, 0.15, 0.2, 0.3],
                        help="what a passage said by one the question names weighs more")
    args = parser.parse_args(argv)
    shipped = Grid(Settings().ask_evidence_k, SHOWN)
    alone = Grid(Settings().search_k, READ)  # no deeper recall: what the model may read
    grid = [shipped, alone, *(Grid(d, Weights(w, r, f, p)) for d, r, w, f, p in itertools.product(
        args.depths, args.rank_costs, args.word_weights, args.floors, args.speakers))]
    grid = list(dict.fromkeys(grid))
    sets = {"LoCoMo": locomo(args.locomo), "QMSum": qmsum(args.qmsum),
            "never said": locomo(args.locomo, never_said=True)}
    homes = {"LoCoMo": args.locomo_home, "QMSum": args.qmsum_home,
             "never said": args.locomo_home}
    found = {name: holds(homes[name], qs, grid) for name, qs in sets.items()}

    def mean(point: Grid, left_out: str = "") -> float:
        return sum(share([h for q, h in zip(sets[name], found[name][point], strict=True)
                          if q.group != left_out]) for name in sets) / len(sets)

    print(f"{len(sets['LoCoMo'])} LoCoMo questions (categories 1-4), {len(sets['QMSum'])} "
          f"QMSum queries, {len(sets['never said'])} LoCoMo questions of things never said: "
          "the evidence holds a gold turn")
    print("| depth | word | rank cost | floor | speaker | LoCoMo | QMSum | never said | mean |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    best = sorted(grid, key=mean, reverse=True)[:10]
    for point in [shipped, alone, *(p for p in best if p not in (shipped, alone))]:
        w = point.weights
        tag = {shipped: " (shipped)", alone: " (the model's sources)"}.get(point, "")
        print(f"| {point.depth}{tag} | {w.word} | {w.rank_cost} | {w.min_closeness} | "
              f"{w.speaker} | {share(found['LoCoMo'][point]):.1f}% | "
              f"{share(found['QMSum'][point]):.1f}% | "
              f"{share(found['never said'][point]):.1f}% | {mean(point):.1f}% |")
    print("\nEach fold left out, the grid's best on the rest:")
    for name, questions in sets.items():
        held: list[bool] = []
        for group in dict.fromkeys(q.group for q in questions):
            chosen = max(grid, key=lambda p: mean(p, group))
            picked = _in(group, questions, found[name][chosen])
            held += picked
            print(f"  {name} {group}: depth {chosen.depth}, {_weights(chosen.weights)}: "
                  f"{share(picked):.1f}% (shipped "
                  f"{share(_in(group, questions, found[name][shipped])):.1f}%, the model's "
                  f"sources {share(_in(group, questions, found[name][alone])):.1f}%)")
        print(f"  {name} pooled over its folds: {share(held):.1f}%")


def _in(group: str, questions: Sequence[Question], hits: Sequence[bool]) -> list[bool]:
    return [h for q, h in zip(questions, hits, strict=True) if q.group == group]


def _weights(w: Weights) -> str:
    return (f"word {w.word}, rank cost {w.rank_cost}, floor {w.min_closeness}, speaker "
            f"{w.speaker}")


if __name__ == "__main__":
    main()
