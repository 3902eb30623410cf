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
    hygiene,
    keep_decisions,
    label_item,
    load,
    rouge,
)
from daemon.memory.archive import FORMATS
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
    assert result.decisions == [] and result.decided == [] and result.coverage == 0.0
