"""The transcript import format: what is accepted, and errors that name the field and the fix."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest
from storekit import TRANSCRIPT

from daemon.errors import InvalidInput
from daemon.store.transcript import TurnIn, parse_transcript


def doc(**overrides: Any) -> bytes:
    """The test transcript's title, start, activity and participants, with two turns of its
    own, then ``overrides``."""
    data: dict[str, Any] = {**TRANSCRIPT, "turns": [
        {"speaker": "me", "text": "Shall we ship?", "t": 0, "ref": "utt-1"},
        {"speaker": "Sarah", "text": "Friday.", "t": 2.5, "end": 3.25},
    ]}
    data.update(overrides)
    return json.dumps(data).encode()


def test_valid_transcript() -> None:
    tr = parse_transcript(doc())
    assert tr.title == "Atlas sync"
    assert tr.started_at == dt.datetime(2026, 7, 28, 12, 5, tzinfo=dt.UTC)
    assert tr.activity == "project"
    assert tr.participants == ("me", "Sarah")
    assert tr.turns == (
        TurnIn(speaker="me", text="Shall we ship?", t=0.0, ref="utt-1"),
        TurnIn(speaker="Sarah", text="Friday.", t=2.5, end=3.25),
    )


def test_defaults_and_unknown_fields() -> None:
    data = json.loads(doc())
    del data["activity"], data["participants"]
    data["source_app"] = "otter"  # someone else's field
    data["turns"][0]["confidence"] = 0.93
    data["turns"].append({"speaker": "me", "text": "Good.", "t": 2.5})
    tr = parse_transcript(json.dumps(data).encode())
    assert tr.activity == "meeting"
    assert tr.participants == ("me", "Sarah")  # speakers, first appearance, once each


def test_naive_datetime_is_local_time() -> None:
    tr = parse_transcript(doc(started_at="2026-07-28T14:05:00"))
    assert tr.started_at.tzinfo is not None
    assert tr.started_at == dt.datetime(2026, 7, 28, 14, 5).astimezone()


def test_zulu_and_space_separator() -> None:
    assert parse_transcript(doc(started_at="2026-07-28T12:05:00Z")).started_at == \
        parse_transcript(doc(started_at="2026-07-28 14:05:00+02:00")).started_at


def turns_with(**fields: Any) -> list[dict[str, Any]]:
    turns: list[dict[str, Any]] = [{"speaker": "me", "text": f"line {i}", "t": i}
                                   for i in range(5)]
    turns[3] = {**turns[3], **fields}
    return turns


@pytest.mark.parametrize(("data", "path", "fix_words"), [
    (doc(turns=turns_with(t="3")), "$.turns[3].t", "seconds"),
    (doc(turns=turns_with(t=-1)), "$.turns[3].t", "seconds"),
    (doc(turns=turns_with(t=0.5)), "$.turns[3].t", "never decreasing"),
    (doc(turns=turns_with(end=2)), "$.turns[3].end", "not before"),
    (doc(turns=turns_with(speaker="  ")), "$.turns[3].speaker", "speaker"),
    (doc(turns=turns_with(speaker=None)), "$.turns[3].speaker", "speaker"),
    (doc(turns=turns_with(text="")), "$.turns[3].text", "text"),
    (doc(turns=turns_with(ref=17)), "$.turns[3].ref", "external id"),
    (doc(turns=[{"speaker": "me", "text": "hi"}]), "$.turns[0]", "\"t\" is the turn's start"),
    (doc(turns=[]), "$.turns", "list of"),
    (doc(turns="hello"), "$.turns", "list of"),
    (doc(title=" "), "$.title", "title"),
    (doc(title=5), "$.title", "title"),
    (doc(started_at="2026-07-28"), "$.started_at", "ISO 8601"),
    (doc(started_at="yesterday"), "$.started_at", "ISO 8601"),
    (doc(activity="party"), "$.activity", "meeting"),
    (doc(participants="me"), "$.participants", "list of name"),
    (doc(participants=["me", ""]), "$.participants[1]", "list of name"),
])
def test_errors_name_the_field_and_the_fix(data: bytes, path: str, fix_words: str) -> None:
    with pytest.raises(InvalidInput) as err:
        parse_transcript(data)
    assert f"`{path}`" in err.value.message
    assert err.value.fix is not None and fix_words in err.value.fix


def test_missing_top_level_field() -> None:
    data = json.loads(doc())
    del data["started_at"]
    with pytest.raises(InvalidInput, match="started_at") as err:
        parse_transcript(json.dumps(data).encode())
    assert err.value.fix is not None and "ISO 8601" in err.value.fix


@pytest.mark.parametrize("data", [b"", b"{", b"\xff\xfe", b"[1, 2]", b"null"])
def test_not_a_transcript(data: bytes) -> None:
    with pytest.raises(InvalidInput, match="transcript"):
        parse_transcript(data)
