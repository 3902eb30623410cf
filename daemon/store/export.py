"""A session's transcript as Markdown, JSON, SubRip or WebVTT (pure: records in, text out).

The JSON export is the import format (:mod:`daemon.store.transcript`) with each turn's ``end``,
so ``braincue import-transcript`` reads it back unchanged. Subtitles need a duration per cue: a
turn stored without one (``end == start``) lasts until the next turn starts, or about as long
as its words take to say.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Sequence
from typing import Literal

import msgspec

from daemon.errors import InvalidInput
from daemon.store.chunking import format_offset
from daemon.store.records import Session, Turn

ExportFormat = Literal["md", "json", "srt", "vtt"]
FORMATS: tuple[ExportFormat, ...] = ("md", "json", "srt", "vtt")

WORDS_PER_SECOND = 2.5  # conversational speech
MIN_CUE_SECONDS = 1.0

_WHITESPACE = re.compile(r"\s+")


def render(fmt: str, session: Session, turns: Sequence[Turn]) -> str:
    """The session in ``fmt``; turns in the order given (the store gives them in order)."""
    renderers: dict[str, Callable[[Session, Sequence[Turn]], str]] = {
        "md": to_markdown,
        "json": to_json,
        "srt": to_srt,
        "vtt": to_vtt,
    }
    if fmt not in renderers:
        raise InvalidInput(f"unknown export format {fmt!r}", fix=f"one of: {', '.join(FORMATS)}")
    return renderers[fmt](session, turns)


def started(session: Session) -> dt.datetime:
    """The session's start in this machine's time zone."""
    return dt.datetime.fromtimestamp(session.started_at, tz=dt.UTC).astimezone()


def to_markdown(session: Session, turns: Sequence[Turn]) -> str:
    facts = [f"{started(session):%Y-%m-%d %H:%M}", session.activity]
    if session.participants:
        facts.append(", ".join(session.participants))
    lines = [f"# {session.title or 'Untitled session'}", "", " · ".join(facts), ""]
    for turn in turns:
        lines += [f"**{turn.speaker}** [{format_offset(turn.start)}]: {_one_line(turn.text)}", ""]
    return "\n".join(lines)


class _JsonTurn(msgspec.Struct, omit_defaults=True):
    speaker: str
    text: str
    t: float
    end: float
    ref: str | None = None


class _JsonTranscript(msgspec.Struct):
    title: str
    started_at: str
    activity: str
    participants: tuple[str, ...]
    turns: list[_JsonTurn]


def to_json(session: Session, turns: Sequence[Turn]) -> str:
    doc = _JsonTranscript(
        title=session.title,
        started_at=started(session).isoformat(),
        activity=session.activity,
        participants=session.participants,
        turns=[_JsonTurn(speaker=t.speaker, text=t.text, t=t.start, end=t.end, ref=t.ref)
               for t in turns],
    )
    return msgspec.json.format(msgspec.json.encode(doc), indent=2).decode() + "\n"


def to_srt(session: Session, turns: Sequence[Turn]) -> str:
    cues = [
        f"{i}\n{srt_time(start)} --> {srt_time(end)}\n"
        f"{_srt_text(turn.speaker)}: {_srt_text(turn.text)}\n"
        for i, (turn, start, end) in enumerate(_timed(turns), start=1)
    ]
    return "\n".join(cues)


def to_vtt(session: Session, turns: Sequence[Turn]) -> str:
    cues = [
        f"{vtt_time(start)} --> {vtt_time(end)}\n"
        f"<v {_vtt_text(turn.speaker)}>{_vtt_text(turn.text)}\n"
        for turn, start, end in _timed(turns)
    ]
    return "\n".join(["WEBVTT\n", *cues])


def srt_time(seconds: float) -> str:
    """``HH:MM:SS,mmm``."""
    return _clock(seconds, ",")


def vtt_time(seconds: float) -> str:
    """``HH:MM:SS.mmm``."""
    return _clock(seconds, ".")


def _clock(seconds: float, mark: str) -> str:
    ms = max(0, round(seconds * 1000))
    hours, ms = divmod(ms, 3_600_000)
    minutes, ms = divmod(ms, 60_000)
    secs, ms = divmod(ms, 1000)
    return f"{hours:02d}:{minutes:02d}:{secs:02d}{mark}{ms:03d}"


def _timed(turns: Sequence[Turn]) -> list[tuple[Turn, float, float]]:
    """Each turn with a cue start and an end strictly after it."""
    timed = []
    for i, turn in enumerate(turns):
        following = turns[i + 1] if i + 1 < len(turns) else None
        end = turn.end
        if end <= turn.start:
            if following is not None and following.start > turn.start:
                end = following.start
            else:
                end = turn.start + max(MIN_CUE_SECONDS, len(turn.text.split()) / WORDS_PER_SECOND)
        timed.append((turn, turn.start, end))
    return timed


# A blank line ends a cue and "-->" marks a timing line: neither may appear in cue text.


def _srt_text(text: str) -> str:
    return _one_line(text).replace("-->", "->")


def _vtt_text(text: str) -> str:
    return _one_line(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _one_line(text: str) -> str:
    return _WHITESPACE.sub(" ", text).strip()
