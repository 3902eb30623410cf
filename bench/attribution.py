"""Whose words they are, on LoCoMo: how often the decision before the model
(``attribution.said_by_another``) declines the questions about things never said (category 5)
and the answerable ones (categories 1-4), over the sources the ask gathers for every question.

    PYTHONPATH=$PWD python -m bench.attribution --locomo LOCOMO_JSON --home H
        [--sources FILE] [--json FILE]

``H`` holds the conversations as ``bench.qa --locomo ... --home H`` imports them (each one a
Space, each session an imported transcript); a conversation it does not hold yet is imported
first, through a daemon started on ``H`` for that, so the same ``--home`` given again costs
only the search. Every question of categories 1-5 with evidence is asked of the search as
the ask asks it (``bench.prompt_evidence.AskSources``; no language model) and the decision is
taken on its sources. ``--sources FILE`` keeps those sources: written when the file is
missing, read instead of searching when it is there (delete it when the search or the home
changes). Printed per conversation — a fold: a rule's parameters are chosen on the other
four, see ``--margins`` — never-said declined and answerable declined, then the questions
of each kind whose gold turn is said by someone other than the person the question names
(the never-said ones the rule is built for) with how many of them it declined.

``--margins 1,2,...`` chooses the margin (``attribution.MARGIN``) by leave-one-conversation-
out: for each conversation, the margin with most never-said questions declined while at most
``--most-answerable`` of the answerable ones are, on the other four, scored on it.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import msgspec

from bench.common import machine, per_space
from bench.prompt_evidence import AskSources, evidence_refs
from bench.qa import LOCOMO_CATEGORIES, NEVER_SAID, import_locomo, locomo_questions
from daemon.ipc.client import Client
from daemon.ipc.testing import start_daemon
from daemon.memory import attribution
from daemon.memory.grounding import Source, named_people, speakers_of

MOST_ANSWERABLE = 0.10  # the share of answerable questions a decision may decline


class Gathered(msgspec.Struct, kw_only=True):
    """One question with the sources the ask gathered for it."""

    space: str
    question: str
    category: int
    evidence: list[str]  # the gold turns' refs
    sources: list[Source]
    forced: list[int]


class Decided(msgspec.Struct, kw_only=True):
    space: str
    question: str
    category: str
    declined: bool
    swapped: bool  # the person the question names is not who says its gold turns


def gathered(locomo: Path, home: Path, cache: Path | None) -> list[Gathered]:
    """Every question of ``locomo`` with its sources: from ``cache`` when it exists, else
    searched in ``home`` (importing what it lacks) and written to ``cache``."""
    if cache is not None and cache.exists():
        return msgspec.json.decode(cache.read_bytes(), type=list[Gathered])
    data = json.loads(locomo.read_text())
    asking = AskSources(home)
    missing = [c for c in data if c["sample_id"] not in asking.spaces]
    if missing:
        asking.close()
        _import(home, missing)
        asking = AskSources(home)
    known = {ref for refs in speakers_by_ref(locomo).values() for ref in refs}
    try:
        rows = []
        for conversation in data:
            for q in locomo_questions(conversation, never_said=True):
                question = " ".join(q["question"].split())
                sources, forced = asking.gather(question, conversation["sample_id"])
                rows.append(Gathered(space=conversation["sample_id"], question=question,
                                     category=q["category"], sources=sources, forced=forced,
                                     evidence=sorted(evidence_refs(q, known))))
    finally:
        asking.close()
    if cache is not None:
        cache.write_bytes(msgspec.json.encode(rows))
    return rows


def _import(home: Path, conversations: list[dict[str, Any]]) -> None:
    """``conversations`` imported into ``home`` as ``bench.qa`` imports them, by a daemon."""
    os.environ.setdefault("BRAINCUE_CAPTURE", "off")  # a benchmark never listens
    daemon = start_daemon(home)
    try:
        with Client(timeout=600) as client:
            import_locomo(client, conversations, keep=False)
    finally:
        daemon.stop()


def decide(rows: Sequence[Gathered], turns: dict[str, dict[str, str]],
           decision: Callable[[str, Sequence[Source]], bool]) -> list[Decided]:
    """``decision`` taken on each question's sources (a forced source's question is never
    declined, as the ask does); ``turns``: each conversation's speaker by turn ref."""
    out = []
    for row in rows:
        people = speakers_of(row.sources)
        named = named_people(row.question, people)
        said_by = {turns[row.space].get(ref, "") for ref in row.evidence}
        out.append(Decided(space=row.space, question=row.question,
                           category=LOCOMO_CATEGORIES[row.category],
                           declined=not row.forced and decision(row.question, row.sources),
                           swapped=len(named) == 1 and bool(said_by) and not named & said_by))
    return out


def speakers_by_ref(locomo: Path) -> dict[str, dict[str, str]]:
    """Each conversation's speaker of each turn, by the turn's ref."""
    return {c["sample_id"]: {t["dia_id"]: t["speaker"]
                             for key, session in c["conversation"].items()
                             if key.startswith("session_") and isinstance(session, list)
                             for t in session}
            for c in json.loads(locomo.read_text())}


def shares(rows: Sequence[Decided]) -> tuple[tuple[int, int], tuple[int, int]]:
    """(declined, all) of the never-said questions and of the answerable ones."""
    never = LOCOMO_CATEGORIES[NEVER_SAID]
    adversarial = [r.declined for r in rows if r.category == never]
    answerable = [r.declined for r in rows if r.category != never]
    return (sum(adversarial), len(adversarial)), (sum(answerable), len(answerable))


def _cell(counts: tuple[int, int]) -> str:
    declined, total = counts
    return f"{100 * declined / max(total, 1):.1f}% ({declined}/{total})"


def table(rows: Sequence[Decided]) -> str:
    """Per conversation and over all: never-said declined, answerable declined, and the
    questions whose gold turn is another's than the person named (swapped) declined."""
    lines = ["| LoCoMo, sources of every question | never said (5) declined | answerable "
             "(1-4) declined | never said, person swapped | answerable, person swapped |",
             "| --- | --- | --- | --- | --- |"]
    for name, some in per_space(rows, lambda r: r.space):
        never, answerable = shares(some)
        never_swapped, answerable_swapped = shares([r for r in some if r.swapped])
        lines.append(f"| {name} | {_cell(never)} | {_cell(answerable)} | "
                     f"{_cell(never_swapped)} | {_cell(answerable_swapped)} |")
    return "\n".join(lines)


def choose(rows: Sequence[Gathered], turns: dict[str, dict[str, str]], margins: Sequence[float],
           most_answerable: float) -> str:
    """The margin chosen by leave-one-conversation-out (see the module docstring), per fold."""
    decided = {m: decide(rows, turns, partial(attribution.said_by_another, margin=m))
               for m in margins}
    spaces = sorted({r.space for r in rows})
    lines = ["| held out | margin chosen on the other four | never said declined | "
             "answerable declined |", "| --- | --- | --- | --- |"]
    for held in spaces:
        def score(m: float, held: str = held) -> tuple[bool, int]:
            (never, _), (answerable, total) = shares([r for r in decided[m]
                                                      if r.space != held])
            return answerable <= most_answerable * total, never

        best = max(margins, key=score)
        never, answerable = shares([r for r in decided[best] if r.space == held])
        lines.append(f"| {held} | {best} | {_cell(never)} | {_cell(answerable)} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--locomo", type=Path, required=True)
    parser.add_argument("--home", type=Path, required=True,
                        help="the conversations imported (a short path: sockets live inside)")
    parser.add_argument("--sources", type=Path, help="keep the gathered sources here")
    parser.add_argument("--json", type=Path, help="write each question's decision here")
    parser.add_argument("--margins", help="choose the margin among these, leave one out")
    parser.add_argument("--most-answerable", type=float, default=MOST_ANSWERABLE)
    args = parser.parse_args(argv)
    args.home.mkdir(parents=True, exist_ok=True)
    print(f"machine: {machine()}", flush=True)
    rows = gathered(args.locomo, args.home, args.sources)
    turns = speakers_by_ref(args.locomo)
    decided = decide(rows, turns, attribution.said_by_another)
    print(f"{len(rows)} questions; margin {attribution.MARGIN}\n\n{table(decided)}")
    if args.margins:
        margins = [float(m) for m in args.margins.split(",")]
        print(f"\n{choose(rows, turns, margins, args.most_answerable)}")
    if args.json is not None:
        args.json.write_bytes(msgspec.json.format(msgspec.json.encode(decided), indent=1))


if __name__ == "__main__":
    main()
