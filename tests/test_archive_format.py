"""Archive formats: schema and prompt generated from the format, sections validated, quotes
kept only verbatim and attributed from the transcript."""

from __future__ import annotations

import msgspec
import pytest

from daemon.memory.archive import (
    FORMATS,
    MAX_QUOTES,
    ArchiveEnvelope,
    TranscriptTurn,
    build_archive,
    format_for,
    prompt,
    render,
    schema,
    take_sections,
    verify_quotes,
)

TURNS = [
    TranscriptTurn(1, "Alice", "I think we should ship the beta on Friday, not Monday."),
    TranscriptTurn(2, "Bob", "Fine by me. I'll send the revised report to the client by Thursday."),
    TranscriptTurn(3, "Alice", "And   the price stays at forty euros per seat."),
]


@pytest.mark.parametrize("activity", sorted(FORMATS))
def test_schema_and_prompt_come_from_the_format(activity: str) -> None:
    fmt = FORMATS[activity]
    section_schema = schema(fmt)
    defs = section_schema["$defs"]
    sections = next(v for k, v in defs.items() if k.endswith("Sections"))
    assert list(sections["properties"]) == list(fmt.keys)
    text = prompt(fmt, "Weekly sync", "Alice: hi")[1]["content"]
    for key in fmt.keys:
        assert f'"{key}"' in text
    other_keys = {k for f in FORMATS.values() for k in f.keys} - set(fmt.keys)
    for key in other_keys:
        assert f'"{key}"' not in text


def test_the_table_of_seed_000() -> None:
    titles = {a: [s.title for s in f.sections] for a, f in FORMATS.items()}
    assert titles["meeting"] == titles["custom"] == ["Decided", "Action items", "Still open"]
    assert titles["project"] == ["Decided", "Action items", "Still open", "Changed since last time"]
    assert titles["job"] == ["They asked", "You said", "They emphasised", "Next steps"]
    assert titles["subject"] == ["Covered", "Did not land", "Still unresolved", "To review"]
    assert titles["personal"] == ["Decided", "Action items", "Still open", "Dates and amounts"]
    assert titles["game"] == ["What happened", "Chose", "Unfinished"]
    assert titles["solo"] == ["Worked out", "To do", "Still open"]
    assert format_for("unheard-of") is FORMATS["meeting"]


def test_take_sections_keeps_only_the_format_keys_in_order_and_capped() -> None:
    fmt = FORMATS["job"]
    raw = {
        "action_items": ["should not survive in an interview"],
        "next_steps": ["A second round is planned for next week."],
        "they_asked": [f"How would you scale service {name} to more users?"
                       for name in ("alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta")],
        "you_said": "a single string becomes a list",
        "they_emphasised": [1, None, "  testing   under load  matters most "],
    }
    kept = take_sections(fmt, raw)
    assert list(kept) == ["they_asked", "you_said", "they_emphasised", "next_steps"]
    assert "action_items" not in kept
    assert len(kept["they_asked"]) == fmt.sections[0].cap
    assert kept["you_said"] == ["a single string becomes a list"]
    assert kept["they_emphasised"] == ["testing under load matters most"]


def test_items_are_statements_each_in_one_section_and_without_scaffolding() -> None:
    fmt = FORMATS["project"]
    turns = ["So we go for the rubber case then because the users in the survey said they "
             "want something soft in the hand.", "I'll send the survey results by Friday.",
             "It was thirty euros; now it is twenty five."]
    raw = {
        "decided": ["Project Manager", "User Interface", "Design project",  # labels
                    "The team chose a rubber case for the remote.",
                    "Mm-hmm, yeah, okay, right, so.",  # filler
                    "we go for the rubber case then because the users in the survey said they",
                    "what the group settled on, each as a full sentence",  # the hint
                    "The team chose the rubber case for the remote"],  # near-same
        "action_items": ["The team chose a rubber case for the remote.",  # already decided
                         "Marketing will send the survey results by Friday."],
        "still_open": ["Nice to meet you all, I'm so excited to start."],  # small talk
        "changed_since_last_time": ["The price went from 30 to 25 euros (part 2 of 3)."],
    }
    assert take_sections(fmt, raw, turns) == {
        "decided": ["The team chose a rubber case for the remote."],
        "action_items": ["Marketing will send the survey results by Friday."],
        "still_open": [],
        "changed_since_last_time": ["The price went from 30 to 25 euros."],
    }


def test_participants_are_the_speakers_not_the_model() -> None:
    envelope = ArchiveEnvelope(participants=["ES2006a", "User Interface Designer", "Alice"])
    archive = build_archive(FORMATS["meeting"], envelope, TURNS)
    assert archive.participants == ["Alice", "Bob"]


def test_a_smoothed_quote_is_dropped_and_exact_ones_are_kept() -> None:
    quotes = verify_quotes(
        [
            "we should ship the beta on Friday",  # exact (case-insensitive)
            "We should ship the beta this Friday",  # smoothed: not in any turn
            '"the price stays at forty euros per seat."',  # whitespace differs, quoted
            "ship the beta on Friday, not Monday. Fine by me.",  # spans two turns
        ],
        TURNS,
    )
    assert [q.text for q in quotes] == [
        "we should ship the beta on Friday",
        "the price stays at forty euros per seat.",
    ]


def test_a_quote_is_attributed_to_the_turn_speaker_not_the_model() -> None:
    # The model thinks Alice said it; the transcript says Bob did.
    quotes = verify_quotes(["Alice: I'll send the revised report", "I'll send the revised report"], TURNS)
    assert len(quotes) == 1
    assert quotes[0].speaker == "Bob"
    assert quotes[0].turn_id == 2


def test_at_most_six_quotes() -> None:
    turns = [TranscriptTurn(i, "me", f"line number {i} is here") for i in range(10)]
    quotes = verify_quotes([f"line number {i} is here" for i in range(10)], turns)
    assert len(quotes) == MAX_QUOTES


def test_build_and_render() -> None:
    fmt = FORMATS["meeting"]
    raw = msgspec.json.encode({
        "topic": "Beta launch",
        "summary": "They agreed to ship on Friday.",
        "participants": ["Alice", "Bob"],
        "sections": {"decided": ["Ship the beta on Friday"], "they_asked": ["dropped"]},
        "key_quotes": ["ship the beta on Friday, not Monday", "invented line"],
        "extra": "ignored",
    })
    envelope = msgspec.json.decode(raw, type=ArchiveEnvelope)
    archive = build_archive(fmt, envelope, TURNS)
    assert archive.sections == {"decided": ["Ship the beta on Friday"], "action_items": [], "still_open": []}
    text = render(archive)
    assert text.splitlines() == [
        "Topic: Beta launch",
        "Summary: They agreed to ship on Friday.",
        "Who: Alice, Bob",
        "Decided:",
        "- Ship the beta on Friday",
        "In their own words:",
        '- Alice: "ship the beta on Friday, not Monday"',
    ]
