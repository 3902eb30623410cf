"""The transcript import format, validated (pure: bytes in, structs out), and its import
into a store.

::

    {
      "title": "Atlas sync",
      "started_at": "2026-07-28T14:05:00+02:00",
      "activity": "meeting",
      "participants": ["me", "Sarah"],
      "turns": [{"speaker": "me", "text": "Shall we ship?", "t": 0.0, "ref": "utt-1"}, ...]
    }

``t`` is seconds from ``started_at``; ``end`` (seconds, optional) may follow it, as in what
``braincue export --format json`` writes, so an export imports back unchanged. ``started_at`` is
ISO 8601 with a time; with an offset (``Z``, ``+02:00``) it is that instant, without one it is
the local time of this machine. ``activity`` defaults to ``meeting``; ``participants`` default to
the speakers in order of first appearance. Unknown fields are ignored (other tools add their
own); the types of known fields are strict, and every error names the field's path.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import TYPE_CHECKING

import msgspec

from daemon.errors import InvalidInput
from daemon.store.records import ACTIVITIES, NewTurn, Session, Turn

if TYPE_CHECKING:
    from daemon.llm.embed import EmbedProgress
    from daemon.store.store import Store


class TurnIn(msgspec.Struct, frozen=True):
    speaker: str
    text: str
    t: float
    ref: str | None = None
    end: float | None = None


class TranscriptIn(msgspec.Struct, frozen=True):
    title: str
    started_at: dt.datetime  # always timezone-aware once parsed
    turns: tuple[TurnIn, ...]
    activity: str = "meeting"
    participants: tuple[str, ...] = ()


_FIXES = {
    "title": 'give the transcript a non-empty "title" string',
    "started_at": 'write "started_at" as ISO 8601 with a time, e.g. "2026-07-28T14:05:00+02:00"',
    "activity": f'"activity" is one of: {", ".join(ACTIVITIES)}',
    "participants": '"participants" is a list of name strings',
    "turns": '"turns" is a list of {"speaker", "text", "t"} objects',
    "speaker": 'every turn needs a non-empty "speaker" string',
    "text": 'every turn needs a non-empty "text" string',
    "t": '"t" is the turn\'s start in seconds from started_at: a number >= 0, never decreasing',
    "ref": '"ref" (optional) is an external id string',
    "end": '"end" (optional) is the turn\'s end in seconds from started_at, not before "t"',
}
_GENERIC_FIX = "see `braincue import-transcript --help` for the format"
_PATH = re.compile(r" - at `(\$[^`]*)`$")
_MISSING = re.compile(r"missing required field `([^`]+)`")


def parse_transcript(data: bytes) -> TranscriptIn:
    """Decode and validate a transcript; raises :class:`InvalidInput` naming the field path."""
    try:
        raw = msgspec.json.decode(data, type=TranscriptIn)
    except msgspec.ValidationError as e:
        raise _invalid(str(e)) from e
    except msgspec.DecodeError as e:
        raise InvalidInput(f"transcript is not valid JSON: {e}",
                           fix="check the file is the JSON transcript format") from e
    return _validated(raw)


def _validated(tr: TranscriptIn) -> TranscriptIn:
    def fail(path: str, problem: str) -> InvalidInput:
        return _invalid(f"{problem} - at `{path}`")

    if not tr.title.strip():
        raise fail("$.title", "title is empty")
    if tr.activity not in ACTIVITIES:
        raise fail("$.activity", f"unknown activity {tr.activity!r}")
    if not tr.turns:
        raise fail("$.turns", "no turns")
    for i, name in enumerate(tr.participants):
        if not name.strip():
            raise fail(f"$.participants[{i}]", "participant name is empty")
    previous = 0.0
    for i, turn in enumerate(tr.turns):
        at = f"$.turns[{i}]"
        if not turn.speaker.strip():
            raise fail(f"{at}.speaker", "speaker is empty")
        if not turn.text.strip():
            raise fail(f"{at}.text", "text is empty")
        if not turn.t >= 0 or turn.t == float("inf"):  # also rejects NaN
            raise fail(f"{at}.t", f"t is {turn.t}")
        if turn.t < previous:
            raise fail(f"{at}.t", f"t goes back in time ({turn.t} after {previous})")
        if turn.end is not None and not turn.t <= turn.end < float("inf"):
            raise fail(f"{at}.end", f"end {turn.end} is before t {turn.t}")
        previous = turn.t
    started_at = tr.started_at if tr.started_at.tzinfo else tr.started_at.astimezone()
    participants = tr.participants or tuple(dict.fromkeys(t.speaker.strip() for t in tr.turns))
    return msgspec.structs.replace(
        tr, title=tr.title.strip(), started_at=started_at, participants=participants
    )


def _invalid(detail: str) -> InvalidInput:
    """InvalidInput from a msgspec-style message ``problem - at `$.path```, with the fix."""
    field = ""
    if match := _PATH.search(detail):
        field = re.sub(r"\[\d+\]", "", match.group(1)).rsplit(".", 1)[-1]
    if match := _MISSING.search(detail):
        field = match.group(1)
    return InvalidInput(f"invalid transcript: {detail}", fix=_FIXES.get(field, _GENERIC_FIX))


def parse_named_transcript(content: bytes, filename: str) -> TranscriptIn:
    """:func:`parse_transcript`, its errors naming the file too when there is a name."""
    try:
        return parse_transcript(content)
    except InvalidInput as e:
        if not filename:
            raise
        raise InvalidInput(f"{filename}: {e.message}", fix=e.fix) from None


def import_transcript(
    store: Store, transcript: TranscriptIn, space: str | None,
    progress: EmbedProgress | None = None,
) -> tuple[Session, list[Turn], int]:
    """An ended session made from ``transcript``: (session, turns, chunks). Nothing is left
    behind when a step fails. ``progress`` counts what is embedded."""
    session = store.create_session(
        space_id=store.space_id(space),
        activity=transcript.activity,
        title=transcript.title,
        started_at=transcript.started_at.timestamp(),
        participants=transcript.participants,
    )
    try:
        turns = store.append_turns(session.id, [
            NewTurn(speaker=t.speaker, text=t.text, start=t.t, end=t.end, ref=t.ref,
                    source="import")
            for t in transcript.turns
        ], progress=progress)
        last = max(t.t if t.end is None else t.end for t in transcript.turns)
        session = store.end_session(session.id, ended_at=session.started_at + last,
                                    progress=progress)
    except BaseException:
        store.delete_session(session.id)
        raise
    return session, turns, len(store.chunks(session_id=session.id))
