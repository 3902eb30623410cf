"""What memory holds for a question, shown before any answer is written (no model).

``evidence_for(question, sources)`` turns an answer's numbered sources into what the user reads
first: each structured item that bears on the question (a decision with what was chosen over
what and why, a commitment or task with its owner, due date and status) and the best verbatim
passages, each cut deterministically to the sentences that share most words with the question
(:data:`MAX_EVIDENCE_CHARS` at most), with its source (title, date, speaker, time) and the
source's number, which the answer cites. A passage that shares no content word with the
question is not evidence; the conversation going on now is not shown (the user is in it).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import msgspec

from daemon.memory.extract import content_words
from daemon.memory.grounding import (
    Item,
    Passage,
    Source,
    focus_passages,
    sentence_units,
    shares_word,
)
from daemon.store.records import Assertion

MAX_EVIDENCE_CHARS = 240
PASSAGES_PER_SOURCE = 3
MAX_EVIDENCE = 10


class Evidence(msgspec.Struct, frozen=True, kw_only=True):
    """One thing memory holds for a question: a verbatim passage or a structured item."""

    n: int  # the number of its source, as the answer cites it
    kind: str  # the source's kind: transcript | archive | document | assertion | memory
    title: str
    text: str  # verbatim, cut to the sentences that answer (MAX_EVIDENCE_CHARS at most)
    date: float = 0.0
    speaker: str = ""
    start: float | None = None  # seconds from its session's start
    ref: str = ""  # the turn's external ref, where it has one
    item: Item | None = None
    session_id: int | None = None
    chunk_id: int | None = None
    document_id: int | None = None


def item_of(assertion: Assertion, status: str = "") -> Item:
    """The structured item an assertion is (``status``: a commitment's or task's)."""
    return Item(kind=assertion.kind, text=assertion.text, chosen=assertion.chosen,
                alternatives=assertion.alternatives, reasoning=assertion.reasoning,
                owner=assertion.owner, due=assertion.due, status=status)


def evidence_for(question: str, sources: Sequence[Source], always: Collection[int] = (),
                 limit: int = MAX_EVIDENCE) -> list[Evidence]:
    """The evidence for ``question`` in ``sources``, in their order (see the module
    docstring): at most ``limit`` pieces, and every item of the sources numbered in
    ``always`` (the items a question over items selected) whatever it shares."""
    wanted = content_words(question)
    found: list[Evidence] = []
    for source in sources:
        if source.kind == "context":
            continue
        if source.item is not None and (source.n in always
                                        or _shared(wanted, source.item.text, source.title)):
            found.append(_piece(source, Passage(source.item.text), wanted, source.item))
        # a name shared is no evidence alone (most turns of a chat name someone), but of two
        # passages that say as much, the one said by whom the question names comes first
        names = {w for p in source.passages for w in content_words(p.speaker)}
        about = wanted - names
        scored = [(_shared(about, p.text), _shared(wanted & names, p.speaker), -i, p)
                  for i, p in enumerate(source.passages)
                  if source.item is None or p.text != _body_of(source)]
        best = sorted((s for s in scored if s[0]), key=lambda s: s[:3], reverse=True)
        kept = sorted(best[:PASSAGES_PER_SOURCE], key=lambda s: -s[2])
        found += [_piece(source, p, wanted) for _, _, _, p in kept]
    return found[:max(limit, len(always))]


def cut(text: str, wanted: set[str], limit: int = MAX_EVIDENCE_CHARS) -> str:
    """``text`` cut to the run of its sentences around the one sharing most of ``wanted``
    that fits ``limit`` characters (a sentence alone too long is cut, ending with "…")."""
    line = " ".join(text.split())
    if len(line) <= limit:
        return line
    units = [Passage(s) for s in sentence_units(line)]
    kept = focus_passages(units, wanted, limit)
    return " ".join(p.text for p in kept)[:limit]


def _shared(wanted: set[str], text: str, title: str = "") -> int:
    have = content_words(f"{title} {text}")
    return sum(1 for w in wanted if shares_word({w}, have))


def _body_of(source: Source) -> str:
    return source.passages[0].text if source.passages else ""


def _piece(source: Source, passage: Passage, wanted: set[str], item: Item | None = None
           ) -> Evidence:
    return Evidence(n=source.n, kind=source.kind, title=source.title,
                    text=cut(passage.text, wanted), date=source.date, speaker=passage.speaker,
                    start=passage.start, ref=passage.ref, item=item,
                    session_id=source.session_id, chunk_id=source.chunk_id,
                    document_id=source.document_id)
