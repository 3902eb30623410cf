"""bench/meetings.py's pure scoring: ROUGE, decision coverage, the hygiene counts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.meetings import (
    StoredAssertion,
    archive_sections,
    decided_text,
    decision_coverage,
    decision_queries,
    decisions_report,
    gold_report,
    hygiene,
    keep_decisions,
    keyword_in,
    label_item,
    load,
    owner_matches,
    rouge,
    score_gold,
)
from daemon.memory.archive import FORMATS, NO_DECISION
from daemon.memory.validate import copied_run

ARCHIVE = """Topic: remote control design
Summary: The team chose a curved case. Part 1 of 3 of the transcript.
Who: Project Manager, Marketing, ES2006a
Decided:
- The remote will have a curved rubber case.
- Project Manager
Action items:
- The remote will have a curved rubber case.
- Marketing will post the survey on Friday.
In their own words:
- Marketing: "a curved one"
"""
SPEAKERS = ["Project Manager", "Marketing"]
TURNS = ["Okay so we go for the curved case then because the users in the survey said they "
         "want something that fits in the hand nicely.", "Mm-hmm."]


def test_archive_sections_reads_the_rendered_archive() -> None:
    who, sections = archive_sections(ARCHIVE)
    assert who == ["Project Manager", "Marketing", "ES2006a"]
    assert sections == {
        "Decided": ["The remote will have a curved rubber case.", "Project Manager"],
        "Action items": ["The remote will have a curved rubber case.",
                         "Marketing will post the survey on Friday."],
    }


def test_hygiene_counts_every_rule() -> None:
    stored = [
        StoredAssertion("decision", "They went with the curved case."),  # no chosen
        StoredAssertion("decision", "The case is curved.", chosen="curved case"),
        StoredAssertion("task", "Send the survey.", owner="Bob"),  # not a speaker
        StoredAssertion("commitment", "Marketing sends the survey.", owner="marketing"),
        StoredAssertion("commitment", "Call the vendor.", owner="me"),
        StoredAssertion("fact", "so we go for the curved case then because the users in the "
                                "survey said they want it"),  # 13+ words copied
    ]
    counts = hygiene(ARCHIVE, stored, SPEAKERS, TURNS)
    assert counts == {
        "repeated_items": 1, "label_items": 1, "foreign_participants": 1,
        "decisions_without_chosen": 1, "owners_not_participants": 1, "verbatim_copies": 1,
        "scaffolding": 1,
    }
    clean = "Topic: design\nWho: Marketing\nDecided:\n- The case will be curved and rubber."
    assert set(hygiene(clean, stored[1:2], SPEAKERS, TURNS).values()) == {0}


@pytest.mark.parametrize(("item", "is_label"), [
    ("Project Manager", True), ("Design project", True), ("User Interface.", True),
    ("Marketing will investigate.", False),  # the commitment as said: a statement
    ("The group decided.", False),
])
def test_a_label_is_a_few_words_without_a_verb(item: str, is_label: bool) -> None:
    assert label_item(item) is is_label


def test_scaffolding_catches_schema_keys_and_hints() -> None:
    hint = FORMATS["meeting"].sections[0].hint
    text = f"Topic: x\nDecided:\n- action_items are listed\n- {hint}"
    assert hygiene(text, [], [], [])["scaffolding"] == 2


def test_a_copy_is_more_than_twelve_words_of_one_turn() -> None:
    twelve = "we go for the curved case then because the users in the"
    assert not copied_run(twelve, TURNS)
    assert copied_run(twelve + " survey", TURNS)
    assert not copied_run("in the hand nicely. Mm-hmm. okay so we go for the curved case", TURNS)


def test_rouge_uses_stemming_and_is_symmetric_in_f() -> None:
    same = rouge("The teams decided on curved cases.", "the team decides on a curved case")
    assert same["rouge1"]["r"] > 80  # teams/team, decided/decides, cases/case match when stemmed
    assert rouge("", "anything")["rouge1"]["f"] == 0.0


def test_decision_coverage_reads_decided_and_decision_assertions() -> None:
    queries = [
        {"meeting": "M1", "kind": "general", "query": "Summarize the whole meeting.",
         "answer": "x"},
        {"meeting": "M1", "kind": "specific", "query": "What did the group decide about the case?",
         "answer": "A curved rubber case."},
        {"meeting": "M1", "kind": "specific", "query": "What did Marketing propose?",
         "answer": "A survey."},
        {"meeting": "M2", "kind": "specific", "query": "What was agreed on buttons?",
         "answer": "Few buttons."},
    ]
    answers = decision_queries(queries, "M1")
    assert answers == ["A curved rubber case."]
    text = decided_text(ARCHIVE, [StoredAssertion("decision", "Rubber it is.", chosen="rubber"),
                                  StoredAssertion("fact", "Buttons are few.")])
    assert "Buttons" not in text and "rubber" in text
    coverage = decision_coverage(text, answers)
    assert coverage is not None and coverage == 100.0
    assert decision_coverage(text, []) is None


def series(tmp_path: Path, said: list[tuple[str, str]]) -> Path:
    """A QMSum-shaped directory of one series with one meeting ``said`` (speaker, text)."""
    (tmp_path / "XS01").mkdir()
    filler = "we looked at the drawings of the case and the budget for it again today"
    turns = [{"speaker": s, "text": t, "t": float(i), "ref": f"XS01a:{i}"}
             for i, (s, t) in enumerate([("Marketing", filler)] * 40 + said)]
    (tmp_path / "XS01" / "XS01a.json").write_text(json.dumps(
        {"title": "XS01a", "started_at": "2026-01-01T10:00:00Z", "activity": "project",
         "turns": turns}))
    (tmp_path / "XS01" / "queries.json").write_text(json.dumps([
        {"meeting": "XS01a", "kind": "general", "query": "Summarise", "answer": "A case."},
        {"meeting": "XS01a", "kind": "specific", "query": "What did they decide on the case?",
         "answer": "They decided to use a rubber case because it is soft."}]))
    return tmp_path


def test_decisions_only_keeps_what_the_keep_would_and_scores_it(tmp_path: Path) -> None:
    data = series(tmp_path, [("Project Manager", "So we decided to use a rubber case because "
                                                 "it is soft."),
                             ("Marketing", "If we decide on a yellow case we need paint.")])
    (result,) = [keep_decisions(m) for m in load(data)]
    assert [(d.ref, d.speaker, d.text, d.reasoning) for d in result.decisions] == [
        ("XS01a:40", "Project Manager", "The group decided to use a rubber case.", "it is soft")]
    assert result.decided == ["The group decided to use a rubber case."]
    assert result.coverage is not None and result.coverage > 50
    report = decisions_report([result])
    assert report[-1].startswith("mean decision coverage")
    assert "XS01a:40 Project Manager" in report[1]


def test_decisions_only_of_a_meeting_with_none_covers_nothing(tmp_path: Path) -> None:
    data = series(tmp_path, [("Marketing", "Have we decided on the case?")])
    (result,) = [keep_decisions(m) for m in load(data)]
    assert result.decisions == [] and result.coverage == 0.0
    assert result.decided == [NO_DECISION]  # said plainly


GOLD = {
    "decisions": [
        {"decision": "Use the advanced chip", "chosen": "advanced chip",
         "keywords": ["advanced", "chip"], "rejected": ["simple chip"],
         "reason": "LCD only works with it"},
        {"decision": "Push-buttons outside", "chosen": "push-buttons",
         "keywords": ["push", "buttons"], "rejected": [], "reason": "frequent functions"},
        {"decision": "Include the speaker", "keywords": ["speaker"], "rejected": [],
         "reason": ""},
    ],
    "borderline_decisions": [{"decision": "Sell at 25 euros", "keywords": ["25", "euro"]}],
    "actions": [
        {"owner": "Industrial Designer and User Interface", "task": "Build the prototype",
         "keywords": ["prototype"]},
        {"owner": "All", "task": "Put presentations in the folder",
         "keywords": ["presentations"]},
        {"owner": "Marketing", "task": "Work on product evaluation", "keywords": ["evaluation"]},
    ],
}


def test_gold_matching_counts_recall_precision_and_what_a_match_stores() -> None:
    stored = [
        StoredAssertion("decision", "The group is going with the advanced chip.",
                        chosen="the advanced chip", alternatives=("the simple chip",)),
        StoredAssertion("decision", "The group agreed on the advanced chip.",
                        chosen="advanced chip"),  # a repeat: right, no more recall
        StoredAssertion("decision", "The group agreed to have push-button controls.",
                        chosen="push-button controls", reasoning="they are used most"),
        StoredAssertion("decision", "The group decided to sell it at 25 euros.",
                        chosen="25 euros"),  # borderline: neither way
        StoredAssertion("decision", "The group decided to use wood.", chosen="wood"),
        StoredAssertion("commitment", "User Interface will build the prototype.",
                        owner="User Interface"),
        StoredAssertion("task", "Project Manager will do the evaluation.",
                        owner="Project Manager"),  # not the gold owner
        StoredAssertion("task", "The group will put presentations in the folder.",
                        owner="the group"),
    ]
    s = score_gold(stored, GOLD)
    assert (s.decisions_found, s.decisions_gold) == (2, 3)
    assert (s.decisions_right, s.decisions_stored, s.borderline) == (3, 4, 1)
    assert (s.alternative_stored, s.with_alternative) == (1, 1)
    assert (s.reason_stored, s.with_reason) == (1, 2)
    assert (s.actions_found, s.actions_gold, s.actions_right, s.actions_stored) == (2, 3, 2, 3)
    assert [m.gold for m in s.items] == [0, 0, 1, -2, -1, 0, -1, 1]
    assert [m.repeat for m in s.items][:2] == [False, True]
    assert s.missed == ["decision: Include the speaker",
                        "action: Marketing: Work on product evaluation"]
    report = gold_report([("ES2006c", s)])
    assert report[0].startswith("ES2006c    decisions R  67% (2/3) P  75% (3/4, 1 borderline)")
    assert "    REP  decision: The group agreed on the advanced chip." in report
    assert "    no   decision: The group decided to use wood." in report
    assert report[-1].startswith("total")


@pytest.mark.parametrize(("keyword", "text", "found"), [
    ("buttons", "push-button controls", True),
    ("colours", "bright colour scheme", True),
    ("lcd", "an LCD screen", True),
    ("battery", "two batteries", True),
    ("wood", "a rubber case", False),
])
def test_a_keyword_matches_by_stem_as_a_substring(keyword: str, text: str, found: bool) -> None:
    assert keyword_in(keyword, text) is found


@pytest.mark.parametrize(("owner", "gold", "found"), [
    ("User Interface", "Industrial Designer and User Interface", True),
    ("Marketing", "Industrial Designer and User Interface", False),
    ("the group", "All", True),
    ("Marketing", "All", True),  # everyone's: each of them owes it
    ("", "Marketing", False),
    ("the group", "Marketing", False),
])
def test_an_action_owner_is_the_gold_one_or_one_of_them(owner: str, gold: str,
                                                        found: bool) -> None:
    assert owner_matches(owner, gold) is found
