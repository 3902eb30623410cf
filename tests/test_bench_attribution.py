"""bench.attribution: the decision before the model taken on each LoCoMo question's sources,
tallied per conversation, and its margin chosen leaving each conversation out in turn."""

from __future__ import annotations

import msgspec

from bench.attribution import Gathered, choose, decide, shares, table
from daemon.memory.grounding import Passage, Source

TURNS = {"conv-a": {"D1:1": "Melanie", "D1:2": "Caroline"},
         "conv-b": {"D1:1": "Melanie", "D1:2": "Caroline"}}


def gathered(space: str, question: str, category: int, evidence: str) -> Gathered:
    race = Source(n=1, kind="transcript", title="Caroline and Melanie, session 1", passages=(
        Passage("I ran a charity race for mental health last Saturday.", "Melanie", "D1:1"),
        Passage("I went to an LGBTQ support group yesterday.", "Caroline", "D1:2")))
    return Gathered(space=space, question=question, category=category, evidence=[evidence],
                    sources=[race], forced=[])


ROWS = [gathered(space, question, category, evidence)
        for space in ("conv-a", "conv-b")
        for question, category, evidence in (
            ("What charity race did Caroline run?", 5, "D1:1"),
            ("What charity race did Melanie run?", 4, "D1:1"),
            ("What support group did Caroline go to?", 4, "D1:2"))]


def test_each_question_is_decided_on_its_sources_and_tallied_by_kind() -> None:
    decided = decide(ROWS, TURNS, lambda question, sources: "Caroline" in question)
    assert [r.declined for r in decided[:3]] == [True, False, True]
    assert [r.swapped for r in decided[:3]] == [True, False, False]
    assert shares(decided) == ((2, 2), (2, 4))
    assert "| conv-a | 100.0% (1/1) | 50.0% (1/2) | 100.0% (1/1) | 0.0% (0/0) |" in table(decided)
    forced = msgspec.structs.replace(ROWS[0], forced=[1])  # as the ask: never declined
    assert not decide([forced], TURNS, lambda question, sources: True)[0].declined


def test_the_margin_is_chosen_on_the_other_conversations() -> None:
    # a margin of 0.5 declines the never-said question and no answerable one; 9 declines none
    folds = choose(ROWS, TURNS, [9.0, 0.5], most_answerable=0.10)
    assert "| conv-a | 0.5 | 100.0% (1/1) | 0.0% (0/2) |" in folds
    assert "| conv-b | 0.5 | 100.0% (1/1) | 0.0% (0/2) |" in folds
