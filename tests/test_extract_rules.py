"""Pure rules of extraction: anchoring, already-known suppression, reconciliation plans."""

from __future__ import annotations

from daemon.memory.extract import (
    AnchorCandidate,
    Existing,
    ExtractedAssertion,
    KnownMemory,
    Ruling,
    already_known,
    find_anchor,
    plan_from_ruling,
)

CHUNKS = [
    AnchorCandidate(10, "Alice: Let's talk about the office move. Bob: The lease ends in March."),
    AnchorCandidate(11, "Bob: We decided on Postgres instead of MySQL because of the JSON support."),
    AnchorCandidate(12, "Alice: I'll send the revised budget to finance by Friday."),
]


def test_anchor_is_the_chunk_sharing_the_most_content_words() -> None:
    decision = ExtractedAssertion(kind="decision", text="The team chose Postgres over MySQL.",
                                  chosen="Postgres", alternatives=["MySQL"])
    assert find_anchor(decision, CHUNKS) == 11
    task = ExtractedAssertion(kind="task", text="Alice sends the revised budget to finance", owner="Alice", due="Friday")
    assert find_anchor(task, CHUNKS) == 12


def test_an_assertion_no_chunk_supports_is_unanchored() -> None:
    invented = ExtractedAssertion(kind="fact", text="The company was founded in Lisbon in 1998.")
    assert find_anchor(invented, CHUNKS) is None
    one_word = ExtractedAssertion(kind="fact", text="Friday deadline for the marketing launch campaign")
    assert find_anchor(one_word, CHUNKS) is None  # shares only "friday"


def test_already_known_follows_the_recall_scope_rule() -> None:
    space_a, space_b = 1, 2
    known = [
        KnownMemory("Prefers concise answers.", None),  # profile-wide
        KnownMemory("Works on the Atlas project", space_a),
    ]
    # any phrasing normalisation: case, punctuation, whitespace
    assert already_known("prefers   CONCISE answers", space_b, known)
    assert already_known("Works on the Atlas project.", space_a, known)
    # another Space's memory shadows nothing
    assert not already_known("Works on the Atlas project.", space_b, known)
    # a different phrasing is not a duplicate (this is not a similarity filter)
    assert not already_known("Likes short answers", space_a, known)


def test_rulings_become_plans() -> None:
    existing = [Existing(7, "decision", "Ship on Monday", "2026-11-01"), Existing(9, "fact", "x", "2026-11-02")]
    assert plan_from_ruling(Ruling("duplicate", 2), existing).action == "skip"
    assert plan_from_ruling(Ruling("duplicate", 2), existing).target == 9
    assert plan_from_ruling(Ruling("supersedes", 1), existing).target == 7
    assert plan_from_ruling(Ruling("supersedes", 1), existing).action == "supersede"
    assert plan_from_ruling(Ruling("separate", 0), existing).action == "insert"
    # a ruling naming a row that does not exist is not trusted
    assert plan_from_ruling(Ruling("duplicate", 5), existing).action == "insert"
