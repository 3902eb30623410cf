"""Chunking at speaker-turn boundaries: properties over generated transcripts, plus examples."""

from __future__ import annotations

import datetime as dt
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from daemon.store.chunking import (
    ChunkContext,
    ChunkDraft,
    ChunkTurn,
    chunk_turns,
    format_offset,
    grow,
    open_chunk,
    split_text,
    turn_line,
)

CTX = ChunkContext(
    date=dt.datetime(2026, 7, 28, 14, 5), kind="transcript", title="Atlas sync",
    participants=("me", "Sarah"),
)

short_texts = st.text(alphabet="abcdefghij.,!? \n", max_size=200)
# long turns, often longer than the limit, cheaply: a short text repeated
texts = short_texts | st.builds(lambda s, n: " ".join([s] * n), short_texts, st.integers(2, 30))
speakers = st.sampled_from(["me", "them", "Sarah", "Dr. Okonkwo-Whitfield"])


@st.composite
def transcripts(draw: st.DrawFn) -> list[ChunkTurn]:
    n = draw(st.integers(0, 25))
    gaps = draw(st.lists(st.floats(0, 90, allow_nan=False), min_size=n, max_size=n))
    turns, t = [], 0.0
    for i, gap in enumerate(gaps):
        t += gap
        turns.append(ChunkTurn(id=100 + i, speaker=draw(speakers), start=t, text=draw(texts)))
    return turns


limits = st.integers(min_value=40, max_value=1600)


def squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


def body_pieces(chunk: ChunkDraft) -> list[str]:
    return chunk.body.split("\n")


def turns_of(chunks: list[ChunkDraft], turns: list[ChunkTurn]) -> list[int]:
    """Turn ids in chunk order; a split turn counted once per chunk it spans."""
    by_id = {t.id: t for t in turns}
    return [tid for c in chunks for tid in range(c.first_turn_id, c.last_turn_id + 1)
            if tid in by_id]


@settings(max_examples=200)
@given(transcripts(), limits)
def test_no_turn_lost_or_duplicated_and_order_kept(turns: list[ChunkTurn], limit: int) -> None:
    chunks = chunk_turns(turns, CTX, limit)
    ids = turns_of(chunks, turns)
    deduped = [tid for i, tid in enumerate(ids) if i == 0 or ids[i - 1] != tid]
    assert deduped == [t.id for t in turns]
    # the words themselves: every turn's text is in the bodies, in order, exactly once
    lines = [line for c in chunks for line in body_pieces(c)]
    rebuilt: dict[int, str] = {}
    for c in chunks:
        for tid, line in zip(range(c.first_turn_id, c.last_turn_id + 1), body_pieces(c),
                             strict=True):
            rebuilt[tid] = rebuilt.get(tid, "") + line.split(": ", 1)[1]
    assert len(lines) >= len(turns)
    for t in turns:
        assert squash(rebuilt[t.id]) == squash(t.text)


@settings(max_examples=200)
@given(transcripts(), limits)
def test_every_chunk_within_limit_unless_one_turn_is_longer(
    turns: list[ChunkTurn], limit: int
) -> None:
    for c in chunk_turns(turns, CTX, limit):
        if c.first_turn_id != c.last_turn_id:
            assert len(c.body) <= limit
        else:
            speaker_prefix = c.body.split(": ", 1)[0] + ": "
            assert len(c.body) <= max(limit, len(speaker_prefix) + 1)


@settings(max_examples=200)
@given(transcripts(), limits)
def test_chunks_are_full_turns_unless_split(turns: list[ChunkTurn], limit: int) -> None:
    by_id = {t.id: t for t in turns}
    for c in chunk_turns(turns, CTX, limit):
        if c.first_turn_id != c.last_turn_id or len(turn_line(by_id[c.first_turn_id])) <= limit:
            expected = [turn_line(by_id[i]) for i in range(c.first_turn_id, c.last_turn_id + 1)]
            assert body_pieces(c) == expected


@settings(max_examples=200)
@given(transcripts(), limits)
def test_live_growth_equals_batch_chunking(turns: list[ChunkTurn], limit: int) -> None:
    closed: list[ChunkDraft] = []
    open_turns: list[ChunkTurn] = []
    for turn in turns:
        before = list(closed)
        growth = grow(open_turns, turn, CTX, limit)
        closed += growth.closed
        open_turns = growth.open_turns
        assert closed[: len(before)] == before  # closed chunks never change
    last = open_chunk(open_turns, CTX)
    assert closed + ([last] if last else []) == chunk_turns(turns, CTX, limit)


@given(transcripts(), limits)
def test_header_names_first_turn(turns: list[ChunkTurn], limit: int) -> None:
    by_id = {t.id: t for t in turns}
    for c in chunk_turns(turns, CTX, limit):
        first = by_id[c.first_turn_id]
        assert c.header.startswith("[2026-07-28 | transcript | Atlas sync | me, Sarah | ")
        assert c.header.endswith(f"{first.speaker} @ {format_offset(first.start)}]")
        assert c.start == first.start
        assert c.text == f"{c.header}\n{c.body}"


def test_example_packs_whole_turns() -> None:
    turns = [
        ChunkTurn(id=1, speaker="me", start=0.0, text="Shall we ship Atlas on Friday?"),
        ChunkTurn(id=2, speaker="Sarah", start=4.2, text="Friday works;\nthe migration is done."),
        ChunkTurn(id=3, speaker="me", start=65.0, text="x" * 30),
    ]
    chunks = chunk_turns(turns, CTX, limit=80)
    assert [c.text for c in chunks] == [
        "[2026-07-28 | transcript | Atlas sync | me, Sarah | me @ 00:00]\n"
        "me: Shall we ship Atlas on Friday?\nSarah: Friday works; the migration is done.",
        "[2026-07-28 | transcript | Atlas sync | me, Sarah | me @ 01:05]\nme: " + "x" * 30,
    ]
    assert [(c.first_turn_id, c.last_turn_id) for c in chunks] == [(1, 2), (3, 3)]


def test_long_turn_splits_at_sentences() -> None:
    text = " ".join(f"Sentence number {i} is here." for i in range(200))
    turns = [ChunkTurn(id=7, speaker="them", start=3725.0, text=text)]
    chunks = chunk_turns(turns, CTX)
    assert len(chunks) > 1
    for c in chunks:
        assert len(c.body) <= 1400
        assert c.body.startswith("them: Sentence number ")
        assert c.body.endswith("is here.")
        assert c.header.endswith("| them @ 1:02:05]")


def test_split_text_cuts_words_only_when_one_is_longer() -> None:
    assert split_text("alpha beta gamma", 11) == ["alpha beta", "gamma"]
    assert split_text("abcdefghij", 4) == ["abcd", "efgh", "ij"]
    assert split_text("one.\ntwo three", 9) == ["one.", "two three"]
    assert split_text("   ", 5) == []


def test_format_offset() -> None:
    assert format_offset(0) == "00:00"
    assert format_offset(62.9) == "01:02"
    assert format_offset(3599) == "59:59"
    assert format_offset(3600) == "1:00:00"
    assert format_offset(-3) == "00:00"


def test_empty_inputs() -> None:
    assert chunk_turns([], CTX) == []
    assert open_chunk([], CTX) is None
