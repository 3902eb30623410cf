"""The records the model fills for detected turns, checked against the turns they rest on
(examples written for the check; a scripted model for the calls)."""

from __future__ import annotations

import trio

from daemon.llm.generate import ScriptedGenerator
from daemon.memory.detected import (
    ActionRecord,
    DecisionRecord,
    action_of,
    decision_of,
    worded,
)

TURNS = [
    ("Ann", "Right, the case. We had plastic, rubber and titanium on the table."),
    ("Ben", "Titanium is far too expensive for us."),
    ("Cleo", "Rubber survives being dropped, plastic cracks."),
    ("Ann", "So we go with the rubber case instead of plastic, because it survives drops."),
    ("Ben", "Yeah, agreed."),
    ("Ann", "Ben, can you send the drawings to the supplier by Friday?"),
    ("Ben", "Sure, I'll send them."),
]
PEOPLE = ["Ann", "Ben", "Cleo"]


def test_a_decision_the_turns_state_keeps_what_they_say() -> None:
    record = DecisionRecord(settled=True, decision="The group chose the rubber case.",
                            chosen="the rubber case", rejected=["plastic", "a wooden case"],
                            reason="it survives drops")
    item = decision_of(record, TURNS, 3, PEOPLE)
    assert item is not None and item.kind == "decision"
    assert item.chosen == "the rubber case"
    assert item.alternatives == ["plastic"]  # nobody said wood
    assert item.reasoning == "it survives drops"
    assert "rubber case instead of plastic" in item.evidence


def test_a_decision_nobody_said_or_none_at_all_is_dropped() -> None:
    made_up = DecisionRecord(settled=True, decision="The group chose a wooden frame.",
                             chosen="a wooden frame")
    assert decision_of(made_up, TURNS, 3, PEOPLE) is None
    assert decision_of(DecisionRecord(settled=False), TURNS, 3, PEOPLE) is None


def test_an_unsaid_reason_is_left_out() -> None:
    record = DecisionRecord(settled=True, decision="The group chose the rubber case.",
                            chosen="the rubber case", reason="customers love soft colours")
    item = decision_of(record, TURNS, 3, PEOPLE)
    assert item is not None and item.reasoning == ""


def test_an_action_item_needs_a_speaker_as_owner_and_the_task_said() -> None:
    given = ActionRecord(given=True, owner="Ben", task="send the drawings to the supplier",
                         due="Friday")
    item = action_of(given, TURNS, 5, PEOPLE)
    assert item is not None
    assert (item.kind, item.owner, item.due) == ("task", "Ben", "Friday")
    assert item.text == "Ben will send the drawings to the supplier."
    taken = action_of(given, TURNS, 6, PEOPLE)
    assert taken is not None and taken.kind == "commitment"  # said by its owner
    assert action_of(ActionRecord(given=True, owner="Dora", task="send the drawings"),
                     TURNS, 5, PEOPLE) is None  # Dora never spoke
    assert action_of(ActionRecord(given=True, owner="Ben", task="book a flight to Rome"),
                     TURNS, 5, PEOPLE) is None  # not what was said
    undated = action_of(ActionRecord(given=True, owner="Ben", task="send the drawings",
                                     due="next Monday"), TURNS, 5, PEOPLE)
    assert undated is not None and undated.due == ""


def test_records_of_one_moment_found_twice_merge() -> None:
    same = {"settled": True, "decision": "The group chose the rubber case.",
            "chosen": "the rubber case", "rejected": [], "reason": ""}
    generator = ScriptedGenerator([same, same, {"given": False}])
    kept, failures = trio.run(
        worded, generator, TURNS, {"decision": [3, 4], "action": [6]}, PEOPLE)
    assert failures == []
    assert [i.text for i in kept] == ["The group chose the rubber case."]
    assert len(generator.calls) == 3
