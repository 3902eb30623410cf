"""Chunking a transcript at speaker-turn boundaries (pure: no I/O).

A chunk holds whole turns, one ``speaker: text`` line each, up to ``limit`` characters of body;
a turn is split only when its line alone is longer than the limit, and then at a line, sentence
or word boundary into pieces that each fill one chunk of their own. Every chunk carries a
context header ``[date | kind | title | participants | speaker @ ts]`` naming the speaker and
time of its first turn: recording metadata gives contextual retrieval for free.

Live sessions grow with :func:`grow`: the newest chunk stays open while turns fit, and a closed
chunk never changes. Folding :func:`grow` over turns gives exactly what :func:`chunk_turns` gives.

A chunk's body is what search and ask hand out (to other programs too, through MCP): a secret
said in its turns is masked there (:func:`daemon.sensitive.gate.mask_lines`), while the turns
keep the words as said.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence

import msgspec

from daemon.sensitive.gate import Gate, mask_lines

DEFAULT_LIMIT = 1400

_SENTENCE_END = re.compile(r"[.!?…][\"'”’)\]]*\s")
_WHITESPACE = re.compile(r"\s+")


class ChunkTurn(msgspec.Struct, frozen=True):
    """A stored turn, as much of it as chunking needs."""

    id: int
    speaker: str
    start: float
    text: str
    before: str = ""  # the turn said just before, read with this one by the sensitive-data gate


class ChunkContext(msgspec.Struct, frozen=True):
    """What the header says about the session every chunk comes from."""

    date: dt.date  # the session's start (a datetime is fine: only its date is shown)
    kind: str  # transcript, session, document
    title: str
    participants: tuple[str, ...] = ()


class ChunkDraft(msgspec.Struct, frozen=True):
    """A chunk ready to store: ``text`` is what is embedded, header and body are indexed apart."""

    header: str
    body: str
    first_turn_id: int
    last_turn_id: int
    start: float  # seconds from the session start of the first turn

    @property
    def text(self) -> str:
        return f"{self.header}\n{self.body}"


class Growth(msgspec.Struct, frozen=True):
    """The result of one live turn: chunks closed for good, and the turns of the open chunk."""

    closed: list[ChunkDraft]
    open_turns: list[ChunkTurn]


def chunk_turns(
    turns: Sequence[ChunkTurn], ctx: ChunkContext, limit: int = DEFAULT_LIMIT
) -> list[ChunkDraft]:
    """All chunks of a finished sequence of turns, in order."""
    chunks: list[ChunkDraft] = []
    group: list[ChunkTurn] = []
    size = 0
    for turn in turns:
        line = turn_line(turn)
        if group and size + 1 + len(line) <= limit:
            group.append(turn)
            size += 1 + len(line)
            continue
        if group:
            chunks.append(_draft(group, ctx))
            group, size = [], 0
        if len(line) <= limit:
            group, size = [turn], len(line)
        else:
            chunks.extend(_split_turn(turn, ctx, limit))
    if group:
        chunks.append(_draft(group, ctx))
    return chunks


def grow(
    open_turns: Sequence[ChunkTurn],
    new: ChunkTurn,
    ctx: ChunkContext,
    limit: int = DEFAULT_LIMIT,
) -> Growth:
    """Add a live turn to the open chunk, closing it first when the turn does not fit."""
    if open_turns and body_length([*open_turns, new]) <= limit:
        return Growth(closed=[], open_turns=[*open_turns, new])
    closed = [_draft(open_turns, ctx)] if open_turns else []
    if len(turn_line(new)) <= limit:
        return Growth(closed=closed, open_turns=[new])
    return Growth(closed=closed + _split_turn(new, ctx, limit), open_turns=[])


def open_chunk(open_turns: Sequence[ChunkTurn], ctx: ChunkContext) -> ChunkDraft | None:
    """The open chunk as it stands (stored so a live session is searchable), or None if empty."""
    return _draft(open_turns, ctx) if open_turns else None


def turn_line(turn: ChunkTurn) -> str:
    """One body line; whitespace is collapsed so every line is one line."""
    return f"{_one_line(turn.speaker)}: {_one_line(turn.text)}"


def body_length(turns: Sequence[ChunkTurn]) -> int:
    return sum(len(turn_line(t)) for t in turns) + max(0, len(turns) - 1)


def header(ctx: ChunkContext, speaker: str, start: float) -> str:
    fields = (
        f"{ctx.date:%Y-%m-%d}",
        ctx.kind,
        _one_line(ctx.title),
        ", ".join(_one_line(p) for p in ctx.participants),
        f"{_one_line(speaker)} @ {format_offset(start)}",
    )
    return "[" + " | ".join(fields) + "]"


def format_offset(seconds: float) -> str:
    """``mm:ss`` under an hour, ``h:mm:ss`` from there on."""
    total = max(0, int(seconds))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes:02d}:{secs:02d}"


def split_text(text: str, limit: int) -> list[str]:
    """Cut ``text`` into pieces of at most ``limit`` characters.

    Each cut is at the last line break, else sentence end, else space in the second half of the
    window (so pieces are not needlessly small); a word longer than the limit is cut hard. The
    whitespace at a cut is dropped, nothing else.
    """
    limit = max(1, limit)
    pieces: list[str] = []
    rest = text.strip()
    while len(rest) > limit:
        cut = _cut_point(rest, limit)
        pieces.append(rest[:cut].rstrip())
        rest = rest[cut:].lstrip()
    if rest:
        pieces.append(rest)
    return pieces


def _cut_point(text: str, limit: int) -> int:
    window = text[: limit + 1]  # a boundary right after the limit still yields a full piece
    half = limit // 2
    newline = window.rfind("\n", half)
    if newline > 0:
        return newline
    sentence_ends = [m.end() - 1 for m in _SENTENCE_END.finditer(window) if m.end() - 1 >= half]
    if sentence_ends:
        return sentence_ends[-1]
    space = max(window.rfind(" ", half), window.rfind("\t", half))
    return space if space > 0 else limit


def _split_turn(turn: ChunkTurn, ctx: ChunkContext, limit: int) -> list[ChunkDraft]:
    prefix = f"{_one_line(turn.speaker)}: "
    head = header(ctx, turn.speaker, turn.start)
    gate = Gate.of([turn.text], turn.before)
    return [
        ChunkDraft(
            header=head,
            body=prefix + gate.redact(piece).text,
            first_turn_id=turn.id,
            last_turn_id=turn.id,
            start=turn.start,
        )
        # a speaker name longer than the limit still keeps its (empty) turn
        for piece in split_text(_one_line(turn.text), limit - len(prefix)) or [""]
    ]


def _draft(turns: Sequence[ChunkTurn], ctx: ChunkContext) -> ChunkDraft:
    first = turns[0]
    return ChunkDraft(
        header=header(ctx, first.speaker, first.start),
        body="\n".join(mask_lines([turn_line(t) for t in turns], turns[0].before)),
        first_turn_id=first.id,
        last_turn_id=turns[-1].id,
        start=first.start,
    )


def _one_line(text: str) -> str:
    return _WHITESPACE.sub(" ", text).strip()
