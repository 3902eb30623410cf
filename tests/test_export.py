"""Exports: exact Markdown, SubRip and WebVTT text, and JSON that imports back unchanged."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Iterator

import msgspec
import pytest

from daemon.errors import InvalidInput
from daemon.store.export import render, srt_time, vtt_time
from daemon.store.records import Session, Turn
from daemon.store.transcript import TurnIn, parse_transcript

STARTED = dt.datetime(2026, 7, 28, 14, 5, tzinfo=dt.UTC)

SESSION = Session(
    id=1, space_id=None, activity="meeting", title="Atlas sync",
    started_at=STARTED.timestamp(), ended_at=None, status="ended", practice=False,
    participants=("me", "Sarah"),
)


def turn(seq: int, speaker: str, start: float, end: float, text: str,
         ref: str | None = None) -> Turn:
    return Turn(id=10 + seq, session_id=1, seq=seq, speaker=speaker, source="import",
                start=start, end=end, text=text, ref=ref)


TURNS = [
    turn(0, "me", 0.0, 2.5, "Shall we ship\non Friday?", ref="utt-1"),
    turn(1, "Sarah", 2.5, 2.5, "Yes <if> the tests & docs pass --> then ship."),  # no end
    turn(2, "me", 3723.0, 3723.0, "Great, thanks everyone."),  # no end, last
]


def test_srt() -> None:
    assert render("srt", SESSION, TURNS) == (
        "1\n00:00:00,000 --> 00:00:02,500\nme: Shall we ship on Friday?\n"
        "\n"
        "2\n00:00:02,500 --> 01:02:03,000\n"
        "Sarah: Yes <if> the tests & docs pass -> then ship.\n"
        "\n"
        "3\n01:02:03,000 --> 01:02:04,200\nme: Great, thanks everyone.\n"
    )


def test_vtt() -> None:
    assert render("vtt", SESSION, TURNS) == (
        "WEBVTT\n"
        "\n"
        "00:00:00.000 --> 00:00:02.500\n<v me>Shall we ship on Friday?\n"
        "\n"
        "00:00:02.500 --> 01:02:03.000\n"
        "<v Sarah>Yes &lt;if&gt; the tests &amp; docs pass --&gt; then ship.\n"
        "\n"
        "01:02:03.000 --> 01:02:04.200\n<v me>Great, thanks everyone.\n"
    )


@pytest.fixture
def utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The machine's time zone set to UTC, so local times are predictable."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_markdown(utc: None) -> None:
    assert render("md", SESSION, TURNS) == (
        "# Atlas sync\n"
        "\n"
        "2026-07-28 14:05 · meeting · me, Sarah\n"
        "\n"
        "**me** [00:00]: Shall we ship on Friday?\n"
        "\n"
        "**Sarah** [00:02]: Yes <if> the tests & docs pass --> then ship.\n"
        "\n"
        "**me** [1:02:03]: Great, thanks everyone.\n"
    )


def test_json_imports_back() -> None:
    text = render("json", SESSION, TURNS)
    tr = parse_transcript(text.encode())
    assert tr.title == "Atlas sync"
    assert tr.started_at == STARTED
    assert tr.activity == "meeting"
    assert tr.participants == ("me", "Sarah")
    assert tr.turns == (
        TurnIn(speaker="me", text="Shall we ship\non Friday?", t=0.0, end=2.5, ref="utt-1"),
        TurnIn(speaker="Sarah", text=TURNS[1].text, t=2.5, end=2.5),
        TurnIn(speaker="me", text="Great, thanks everyone.", t=3723.0, end=3723.0),
    )
    assert '"ref": null' not in text


@pytest.mark.parametrize(("seconds", "srt", "vtt"), [
    (0, "00:00:00,000", "00:00:00.000"),
    (62.5, "00:01:02,500", "00:01:02.500"),
    (3599.9995, "01:00:00,000", "01:00:00.000"),  # rounds to the millisecond, carries
    (36000 + 1.001, "10:00:01,001", "10:00:01.001"),
    (-1, "00:00:00,000", "00:00:00.000"),
])
def test_timestamps(seconds: float, srt: str, vtt: str) -> None:
    assert srt_time(seconds) == srt
    assert vtt_time(seconds) == vtt


def test_empty_session() -> None:
    assert render("vtt", SESSION, []) == "WEBVTT\n"
    assert render("srt", SESSION, []) == ""


def test_markdown_without_title_or_participants(utc: None) -> None:
    bare = msgspec.structs.replace(SESSION, title="", participants=())
    assert render("md", bare, []) == "# Untitled session\n\n2026-07-28 14:05 · meeting\n"


def test_unknown_format() -> None:
    with pytest.raises(InvalidInput, match="docx"):
        render("docx", SESSION, TURNS)
