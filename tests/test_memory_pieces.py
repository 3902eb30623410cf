"""Fitting transcripts into a small context and merging the answers (pure)."""

from __future__ import annotations

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from daemon.memory.archive import MAX_SUMMARY_CHARS, ArchiveEnvelope
from daemon.memory.extract import ExtractedAssertion, Extraction
from daemon.memory.pieces import (
    MIN_PIECE_CHARS,
    clip_sentences,
    complete_sentences,
    interleave,
    merge_envelopes,
    merge_extractions,
    reading_lines,
    salvage_json,
    split_even,
    split_pieces,
    transcript_budget,
    transcript_lines,
)


def test_lines_collapse_whitespace_and_skip_empty_turns() -> None:
    assert transcript_lines([("me", " hello \n there "), ("them", "  "), ("them", "ok")]) == [
        "me: hello there", "them: ok",
    ]


def test_the_model_reads_a_run_of_one_speaker_as_one_line_without_hesitations() -> None:
    assert reading_lines([("A", "Um, so uh we start."), ("A", "Uh, the agenda."),
                          ("B", "Hmm."), ("B", "Yes, um, fine."), ("A", "umbrella, uh-huh")]) == [
        "A: so we start. the agenda.", "B: Yes, fine.", "A: umbrella, uh-huh"]


def test_budget_leaves_room_for_the_frame_and_the_answer() -> None:
    roomy = transcript_budget(4096, 768, frame_chars=2000)
    assert transcript_budget(4096, 1024, frame_chars=2000) < roomy
    assert transcript_budget(4096, 768, frame_chars=4000) < roomy
    # at ~3.2 characters a token, 4096 - 768 - 864 tokens leave about 7.8k characters
    assert 7000 < roomy < 8500
    assert transcript_budget(1024, 1024, frame_chars=2000) == MIN_PIECE_CHARS


def test_pieces_are_cut_between_turns() -> None:
    lines = [f"me: line {i} " + "x" * 40 for i in range(10)]
    pieces = split_pieces(lines, 200)
    assert all(len(p) <= 200 for p in pieces)
    assert "\n".join(pieces).split("\n") == lines


def test_a_turn_longer_than_a_piece_is_cut_at_spaces() -> None:
    long = "them: " + " ".join(f"word{i}" for i in range(100))
    pieces = split_pieces(["me: hi", long], 120)
    assert all(len(p) <= 120 for p in pieces)
    assert " ".join(" ".join(pieces).split()) == " ".join(f"me: hi {long}".split())


@given(st.lists(st.text(alphabet="ab \n", min_size=0, max_size=80), max_size=30),
       st.integers(min_value=5, max_value=150))
def test_pieces_fit_and_lose_nothing_but_whitespace(lines: list[str], budget: int) -> None:
    lines = transcript_lines(("s", line) for line in lines)
    pieces = split_pieces(lines, budget)
    assert all(0 < len(p) <= budget for p in pieces)
    assert "".join("".join(pieces).split()) == "".join("".join(lines).split())
    if all(len(word) <= budget for word in " ".join(lines).split()):
        assert " ".join(pieces).split() == " ".join(lines).split()  # no word is cut


def test_even_pieces_leave_no_scrap_at_the_end() -> None:
    lines = [f"me: line {i} " + "x" * 40 for i in range(10)]
    assert [p.count("\n") + 1 for p in split_pieces(lines, 200)] == [3, 3, 3, 1]
    even = split_even(lines, 200)
    assert len(even) == 4 and all(p.count("\n") + 1 in (2, 3) for p in even)
    assert "\n".join(even).split("\n") == lines


def test_a_transcript_long_enough_is_read_in_at_least_so_many_pieces() -> None:
    lines = [f"me: line {i} " + "x" * 40 for i in range(10)]  # 500 characters
    assert len(split_even(lines, 9000, at_least=3, min_chars=150)) == 3
    assert len(split_even(lines, 9000, at_least=3, min_chars=200)) == 2  # two of 250
    assert len(split_even(lines, 9000, at_least=3, min_chars=600)) == 1


@given(st.lists(st.text(alphabet="ab \n", min_size=0, max_size=80), max_size=30),
       st.integers(min_value=5, max_value=150), st.integers(min_value=1, max_value=6))
def test_even_pieces_fit_and_lose_nothing(lines: list[str], budget: int, at_least: int) -> None:
    lines = transcript_lines(("s", line) for line in lines)
    pieces = split_even(lines, budget, at_least=at_least, min_chars=20)
    assert all(0 < len(p) <= budget for p in pieces)
    assert len(pieces) <= max(len(split_pieces(lines, budget)), at_least)
    assert "".join("".join(pieces).split()) == "".join("".join(lines).split())


def test_interleave_takes_turns() -> None:
    assert interleave([[1, 2, 3], [4], [5, 6]]) == [1, 4, 5, 2, 6, 3]


def test_clip_sentences_cuts_at_a_sentence_end() -> None:
    assert clip_sentences("One. Two is longer. Three.", 20) == "One. Two is longer."
    assert clip_sentences("no sentence end here at all", 12) == "no sentence"
    assert clip_sentences("short", 12) == "short"


def test_merged_archive_keeps_every_piece_in_order() -> None:
    first = ArchiveEnvelope(topic="", summary="Part one happened.", participants=["Ann"],
                            sections={"decided": ["A", "B"], "still_open": ["Q1"]},
                            key_quotes=["q1", "q2"])
    second = ArchiveEnvelope(topic="Budget", summary="Part two happened.",
                             participants=["ann", "Bob"],
                             sections={"decided": ["C", "a"], "action_items": "call Bob"},
                             key_quotes=["q3"])
    merged = merge_envelopes([first, second])
    assert merged.topic == "Budget"
    assert merged.summary == "Part one happened. Part two happened."
    assert merged.participants == ["Ann", "Bob"]
    assert merged.sections == {"decided": ["A", "C", "B"], "still_open": ["Q1"],
                               "action_items": ["call Bob"]}
    assert merged.key_quotes == ["q1", "q3", "q2"]


def test_a_piece_summary_cut_mid_sentence_ends_at_its_last_finished_one() -> None:
    # the 0.5B's part summary reached its schema bound: "… as well as" ran on into the next
    first = ArchiveEnvelope(summary="They chose rubber. The key quotes included the use of "
                                    "rubber and soft materials, as well as")
    second = ArchiveEnvelope(summary="Marketing presented the trends")
    assert merge_envelopes([first, second]).summary == (
        "They chose rubber. Marketing presented the trends")  # nothing finished: kept whole
    assert merge_envelopes([first]).summary == "They chose rubber."
    assert complete_sentences("Done? Yes! And") == "Done? Yes!"


def test_merged_summary_is_capped_at_a_sentence() -> None:
    pieces = [ArchiveEnvelope(summary=f"Sentence number {i} is about this much text. " * 5)
              for i in range(10)]
    summary = merge_envelopes(pieces).summary
    assert len(summary) <= MAX_SUMMARY_CHARS and summary.endswith(".")


def test_merged_extractions_keep_each_sentence_once() -> None:
    def fact(text: str) -> ExtractedAssertion:
        return ExtractedAssertion(kind="fact", text=text)

    merged = merge_extractions([Extraction([fact("The sky is blue."), fact("B.")]),
                                Extraction([fact("the  sky is BLUE"), fact("C.")])])
    assert [a.text for a in merged] == ["The sky is blue.", "B.", "C."]


def test_near_same_items_of_different_pieces_are_merged_once() -> None:
    first = ArchiveEnvelope(sections={"decided": ["The team chose a rubber case for the remote."]})
    second = ArchiveEnvelope(sections={"decided": ["The team chose the rubber case for the remote",
                                                   "The remote gets a yellow colour scheme."]})
    merged = merge_envelopes([first, second])
    assert merged.sections["decided"] == ["The team chose a rubber case for the remote.",
                                          "The remote gets a yellow colour scheme."]

    def decision(text: str) -> ExtractedAssertion:
        return ExtractedAssertion(kind="decision", text=text, chosen="rubber")

    items = merge_extractions([
        Extraction([decision("The team decided on a rubber case for the remote.")]),
        Extraction([decision("The team decided on the rubber case for the remote"),
                    ExtractedAssertion(kind="fact", text="The team decided on a rubber case "
                                                         "for the remote.")]),
    ])
    assert [(a.kind, a.text) for a in items] == [
        ("decision", "The team decided on a rubber case for the remote."),
        ("fact", "The team decided on a rubber case for the remote.")]  # another kind


def test_a_cut_off_answer_keeps_its_complete_items() -> None:
    partial = ('{"assertions": [{"kind": "fact", "text": "A, b"}, {"kind": "fact", "text": '
               '"The price is {25} euros."}, {"kind": "decision", "text": "We go wi')
    candidates = salvage_json(partial)
    assert all(msgspec.json.decode(c) is not None for c in candidates)  # all complete JSON

    def first_valid() -> Extraction:  # what answer_pieces keeps: the longest that validates
        for candidate in candidates:
            try:
                return msgspec.json.decode(candidate, type=Extraction)
            except msgspec.ValidationError:
                continue
        raise AssertionError("nothing salvaged")

    assert [a.text for a in first_valid().assertions] == ["A, b", "The price is {25} euros."]
    assert salvage_json('{"topic": "x", "summary": "half a sen') == ['{"topic": "x"}']
    assert salvage_json("") == []
