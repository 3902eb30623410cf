"""Fitting a transcript into a small model's context, and putting the answers back together.

The local model's context (``llm_context``, 16,384 tokens by default: a 35-minute meeting in
one piece) is shared by the instructions, the JSON schema, the transcript and the answer. A
transcript that does not fit is cut at turn boundaries into pieces that do (a single turn
longer than a piece is cut at word boundaries); each piece is summarised on its own, and the
answers are merged here without another model call:

- archives: the first topic, the piece summaries in order (clipped at a sentence boundary),
  participants and section items from every piece (taken in turns, piece by piece, so the caps
  of :func:`~daemon.memory.archive.take_sections` keep the early items of *every* piece rather
  than all items of the first), key quotes likewise;
- extractions: the assertions of every piece, the same (or near-same) statement only once.

A piece whose answer is cut off is salvaged (:func:`salvage_json`: its complete items kept).

Nothing is dropped for length: a three-hour meeting is simply more pieces (and more time).
Token counts are estimated from characters (English speech runs about 4.2 characters per token
with the Qwen tokenizer, dense numbers about 3.4; the estimates stay below both).

Pure: no model, no database.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_left
from collections.abc import Iterable, Sequence
from itertools import accumulate, zip_longest
from typing import Any, TypeVar

import msgspec

from daemon.memory.archive import MAX_SUMMARY_CHARS, ArchiveEnvelope
from daemon.memory.extract import ExtractedAssertion, Extraction
from daemon.memory.validate import fluent, same_item, unique_items

T = TypeVar("T")

TRANSCRIPT_CHARS_PER_TOKEN = 3.2  # speech; measured 4.2 on conversation, 3.4 on numbers
FRAME_CHARS_PER_TOKEN = 2.5  # instructions and JSON schema: punctuation-heavy
TEMPLATE_TOKENS = 64  # the chat template's own tokens, per message and overall
MIN_PIECE_CHARS = 600


def transcript_lines(turns: Iterable[tuple[str, str]]) -> list[str]:
    """``speaker: words`` per (speaker, text) turn, whitespace collapsed, empty turns left out."""
    lines = []
    for speaker, text in turns:
        words = " ".join(text.split())
        if words:
            lines.append(f"{speaker}: {words}")
    return lines


def reading_lines(turns: Iterable[tuple[str, str]]) -> list[str]:
    """What the model reads of a transcript: a line per run of one speaker's turns, without the
    sounds of hesitation ("uh", "um"), which carry nothing a summary needs and are ~4% of a
    meeting's tokens (the speaker labels of a run's other turns another ~3%)."""
    runs: list[tuple[str, str]] = []
    for speaker, text in turns:
        said = fluent(text)
        if not said:
            continue
        if runs and runs[-1][0] == speaker:
            runs[-1] = (speaker, f"{runs[-1][1]} {said}")
        else:
            runs.append((speaker, said))
    return transcript_lines(runs)


def transcript_budget(context_tokens: int, answer_tokens: int, frame_chars: int) -> int:
    """How many characters of transcript fit beside a prompt frame of ``frame_chars`` characters
    (instructions and schema) and an answer of ``answer_tokens`` tokens."""
    frame_tokens = math.ceil(frame_chars / FRAME_CHARS_PER_TOKEN) + TEMPLATE_TOKENS
    spare = context_tokens - answer_tokens - frame_tokens
    return max(MIN_PIECE_CHARS, int(spare * TRANSCRIPT_CHARS_PER_TOKEN))


def split_pieces(lines: Sequence[str], budget: int) -> list[str]:
    """The transcript as pieces of at most ``budget`` characters, cut between lines; a line
    longer than a piece is cut at spaces (or anywhere, for a word longer than a piece)."""
    budget = max(1, budget)
    pieces: list[str] = []
    current: list[str] = []
    size = 0
    for line in lines:
        for part in _cut(line, budget):
            extra = len(part) + (1 if current else 0)
            if current and size + extra > budget:
                pieces.append("\n".join(current))
                current, size, extra = [], 0, len(part)
            current.append(part)
            size += extra
    if current:
        pieces.append("\n".join(current))
    return pieces


def split_even(lines: Sequence[str], budget: int, *, at_least: int = 1,
               min_chars: int = MIN_PIECE_CHARS) -> list[str]:
    """Like :func:`split_pieces`, in as many pieces as that needs — or ``at_least``, if the
    transcript gives each of them ``min_chars`` — of sizes as even as cutting between lines
    allows: filled in turn, the last piece is a scrap (36 characters of a meeting, summarised
    on their own)."""
    parts = [part for line in lines for part in _cut(line, max(1, budget))]
    filled = split_pieces(parts, budget)
    ends = list(accumulate(len(part) + 1 for part in parts))
    total = ends[-1] if ends else 0
    count = max(len(filled), min(at_least, total // max(1, min_chars)))
    if count <= 1:
        return filled
    cuts = sorted({_nearest(ends, total * k / count) for k in range(1, count)} - {0, len(parts)})
    pieces = ["\n".join(parts[a:b]) for a, b in zip([0, *cuts], [*cuts, len(parts)], strict=True)]
    return pieces if all(len(piece) <= budget for piece in pieces) else filled


def _nearest(ends: Sequence[int], position: float) -> int:
    """How many parts end nearest to ``position`` (``ends``: where each part ends)."""
    after = bisect_left(ends, position)
    if after == len(ends) or (after > 0 and position - ends[after - 1] <= ends[after] - position):
        return after
    return after + 1


def _cut(line: str, budget: int) -> list[str]:
    parts = []
    while len(line) > budget:
        at = line.rfind(" ", 0, budget + 1)
        at = budget if at <= 0 else at
        parts.append(line[:at].rstrip())
        line = line[at:].lstrip()
    if line:
        parts.append(line)
    return parts


def interleave(lists: Iterable[Sequence[T]]) -> list[T]:
    """The first item of every list, then the second of every list, and so on."""
    return [item for row in zip_longest(*lists) for item in row if item is not None]


def _unique_text(items: Iterable[Any]) -> list[str]:
    """The strings of ``items``, each (near-)same item once."""
    return unique_items(i for i in items if isinstance(i, str) and i.strip())


_SENTENCE_END = re.compile(r"[.!?…](?=\s|$)")


def clip_sentences(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, at a sentence end when there is one."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    head = text[:limit]
    ends = [m.end() for m in _SENTENCE_END.finditer(head)]
    if ends:
        return head[: ends[-1]]
    return head.rsplit(" ", 1)[0] if " " in head else head


def complete_sentences(text: str) -> str:
    """``text`` up to its last finished sentence: a summary that reached its length bound
    (or was cut off) ends in half a sentence ("… as well as"), which the next piece's summary
    would run on from. Text with no finished sentence at all is kept as it is."""
    text = " ".join(text.split())
    ends = [m.end() for m in _SENTENCE_END.finditer(text)]
    return text[: ends[-1]] if ends else text


def merge_envelopes(envelopes: Sequence[ArchiveEnvelope]) -> ArchiveEnvelope:
    """One archive answer from the answers about each piece, in transcript order; each
    piece's summary ends at its last finished sentence."""
    envelopes = [msgspec.structs.replace(e, summary=complete_sentences(e.summary))
                 for e in envelopes]
    if len(envelopes) == 1:
        return envelopes[0]
    keys: list[str] = []
    for envelope in envelopes:
        keys += [k for k in envelope.sections if k not in keys]
    sections = {
        key: _unique_text(interleave(_as_list(e.sections.get(key)) for e in envelopes))
        for key in keys
    }
    return ArchiveEnvelope(
        topic=next((e.topic for e in envelopes if e.topic.strip()), ""),
        summary=clip_sentences(
            " ".join(e.summary.strip() for e in envelopes if e.summary.strip()),
            MAX_SUMMARY_CHARS,
        ),
        participants=_unique_text(p for e in envelopes for p in e.participants),
        sections=sections,
        key_quotes=_unique_text(interleave(e.key_quotes for e in envelopes)),
    )


def _as_list(value: Any) -> list[Any]:
    if isinstance(value, list):
        return value
    return [value] if isinstance(value, str) else []


def merge_extractions(extractions: Sequence[Extraction]) -> list[ExtractedAssertion]:
    """Every piece's assertions in order, each (near-)same statement of a kind once."""
    merged: list[ExtractedAssertion] = []
    for extraction in extractions:
        for item in extraction.assertions:
            if not repeats(item, merged):
                merged.append(item)
    return merged


def repeats(item: ExtractedAssertion, earlier: Sequence[ExtractedAssertion]) -> bool:
    """Whether ``item`` says nothing (an empty text) or what one of ``earlier`` of its kind
    already says."""
    return not item.text.strip() or any(
        m.kind == item.kind and same_item(m.text, item.text) for m in earlier)


def salvage_json(partial: str) -> list[str]:
    """Complete JSON documents made from an answer that was cut off, the longest first: cut
    after each complete value of an array or object (the last one possibly unfinished is
    dropped) and close what is open. A looping model's good items are kept this way."""
    stack: list[str] = []
    cuts: list[tuple[int, str]] = []  # (end of the text kept, the closers it needs)
    in_string = escaped = False
    for i, ch in enumerate(partial):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
            continue
        if ch == '"':
            in_string = True
        elif ch in "[{":
            stack.append("]" if ch == "[" else "}")
        elif ch in "]}":
            if not stack:
                break
            stack.pop()
            if stack:
                cuts.append((i + 1, "".join(reversed(stack))))
        elif ch == "," and stack:
            cuts.append((i, "".join(reversed(stack))))
    return [partial[:end] + closers for end, closers in reversed(cuts)]
