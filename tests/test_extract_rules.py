"""Pure rules of extraction: anchoring, already-known suppression, reconciliation plans."""

from __future__ import annotations

import pytest

from daemon.memory.extract import (
    AnchorCandidate,
    Existing,
    ExtractedAssertion,
    KnownMemory,
    Plan,
    Ruling,
    already_known,
    check_assertion,
    find_anchor,
    find_undertakings,
    given_to_named,
    group_undertakings,
    names_no_work,
    plan_from_ruling,
    said_assertion,
    said_work,
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


def test_a_commitment_is_not_the_duplicate_or_update_of_other_work() -> None:
    sent = Existing(4, "commitment", "Ben will send the updated drawings to the supplier by "
                    "Friday.", "2026-11-01", open=True)
    quote = "Ben will ask the supplier for a quote on the longer case by Tuesday."
    for verdict in ("duplicate", "supersedes"):
        assert plan_from_ruling(Ruling(verdict, 1), [sent], "commitment", quote) == Plan("insert")
    # the same work said again, or moved to another day, is what the model says it is
    again = "Ben will send the updated drawings to the supplier by Monday."
    assert plan_from_ruling(Ruling("duplicate", 1), [sent], "commitment", again) == Plan(
        "skip", 4)
    assert plan_from_ruling(Ruling("supersedes", 1), [sent], "commitment", again) == Plan(
        "supersede", 4)
    # the owner's name is not the work (ES2006a, then ES2006b of one series)
    looking = Existing(5, "task", "Industrial Designer will be looking at the working design.",
                       "2026-11-01", open=True)
    components = "Industrial Designer will look at the components concept."
    assert plan_from_ruling(Ruling("duplicate", 1), [looking], "task", components) == Plan(
        "insert")
    # closing it is judged by the model alone: "I sent them" shares little of the wording
    assert plan_from_ruling(Ruling("done", 1), [sent], "fact", "Ben sent them.") == Plan(
        "supersede", 4, closes="done")


@pytest.mark.parametrize(("text", "owner", "vague"), [
    # read off real meetings (ES2006b, ES2006d): nothing a note-taker would write
    ("Industrial Designer will find out.", "Industrial Designer", True),
    ("Project Manager will try and do that for the next meeting as well.", "Project Manager",
     True),
    ("Project Manager will have a look at it.", "Project Manager", True),
    # the work is named
    ("Project Manager will put the minutes in that project documents folder.",
     "Project Manager", False),
    ("User Interface will design technical functions of the remote control.", "User Interface",
     False),
    ("Marketing will find out what the users want in a remote.", "Marketing", False),
])
def test_an_action_item_names_a_piece_of_work(text: str, owner: str, vague: bool) -> None:
    assert names_no_work(text, owner) is vague
    item = ExtractedAssertion(kind="commitment", text=text, owner=owner)
    checked = check_assertion(item, [owner, "Marketing"], ["a turn of the meeting"])
    assert (checked is None) is vague


ROLES = ["Project Manager", "Industrial Designer", "User Interface", "Marketing"]


def test_work_given_to_a_participant_by_name_is_read_off_the_turn() -> None:
    # ES2006c, the meeting's close: each owner named by role, the work said after the name
    said = ("which I'll presume he'll work out what that means. Um the User Interface Designer "
            "will work on the user interface design and the Marketing Expert is going to work "
            "on product evaluation. And as well as that, the two designers are going to work "
            "together on our prototype.")
    assert given_to_named(said, ROLES, "Project Manager") == [
        ("User Interface", "work on the user interface design"),
        ("Marketing", "work on product evaluation")]
    assert given_to_named("Okay, so now we've got thirty minutes before our next meeting. In the "
                          "meantime, the Industrial Designer over here is gonna work on the "
                          "look and feel design,", ROLES, "Project Manager") == [
        ("Industrial Designer", "work on the look and feel design")]
    (found,) = [u for u in find_undertakings([("Project Manager", said)], ROLES)
                if u.owner == "Marketing"]
    assert (found.assigned, found.said) == (True, "work on product evaluation")


def test_a_participant_is_named_by_their_initials_as_spelled_out() -> None:
    # IS1006b's close: "the U_I_D_ Mark" is the user interface designer
    said = "uh of course the U_I_D_ Mark will be uh focused on the user interface concept"
    assert given_to_named(said, ROLES, "Project Manager") == [
        ("User Interface", "be focused on the user interface concept")]
    # initials that are no participant's (TS3009b), and "will look at": what one does next in
    # the meeting as often as work for later
    assert given_to_named("Your L_C_D_ screen is going to go.", ROLES, "Project Manager") == []
    assert given_to_named("The U_I_ will look at the buttons now.", ROLES,
                          "Project Manager") == []


@pytest.mark.parametrize("said", [
    "Will the Marketing Expert work on product evaluation?",  # a question
    "The Industrial Designer will present the components.",  # in the meeting, not after it
    "Marketing will have a look at it.",  # names no piece of work
    "I think Marketing said the users want a big button.",  # nothing given
])
def test_nothing_is_given_to_a_named_participant(said: str) -> None:
    assert given_to_named(said, ROLES, "Project Manager") == []


def test_a_speaker_gives_themself_nothing_in_the_third_person() -> None:
    assert given_to_named("Marketing will work on product evaluation.", ROLES,
                          "Marketing") == []


@pytest.mark.parametrize(("said", "taken"), [
    ("I'll rotate the deploy bot token by Friday.", True),  # any verb, given a deadline
    ("And I'm going to migrate the billing tables before the next meeting.", True),
    ("I'll be in Berlin by Friday.", False),  # where they will be, not work
    ("I'll rotate the deploy bot token.", False),  # no deadline, and not a listed verb
    ("Why don't I rotate it by Friday?", False),  # a question
])
def test_work_the_speaker_dates_is_theirs_whatever_its_verb(said: str, taken: bool) -> None:
    found = find_undertakings([("me", "Sounds good."), ("Dana", said)], ["me", "Dana"])
    assert [(u.owner, bool(u.due)) for u in found] == ([("Dana", True)] if taken else [])
    if taken:  # stated as said, without the model
        assert said_work(said).startswith(("rotate the deploy bot token", "migrate the billing"))


def test_the_users_own_commitment_is_stated_in_the_first_person() -> None:
    turns = [("Dana", "Can we have the figures?"),
             ("me", "I'll send my notes on the figures by Friday.")]
    (group,) = group_undertakings(find_undertakings(turns, ["Dana", "me"]))
    item = said_assertion(group, turns)
    assert item is not None
    assert (item.text, item.owner, item.due) == (
        "I will send my notes on the figures by Friday.", "me", "by Friday")
    turns = [("Dana", "I'll send my notes on the figures by Friday.")]
    (group,) = group_undertakings(find_undertakings(turns, ["Dana", "me"]))
    item = said_assertion(group, turns)
    assert item is not None and item.text == "Dana will send their notes on the figures by Friday."
