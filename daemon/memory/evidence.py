"""What memory holds for a question, shown before any answer is written (no language model).

``evidence_for(question, sources)`` turns an answer's numbered sources into what the user reads
first: each structured item that bears on the question (a decision with what was chosen over
what and why, a commitment or task with its owner, due date and status) and the best verbatim
passages, each cut deterministically to the sentences that share most words with the question
(:data:`MAX_EVIDENCE_CHARS` at most), with its source (title, date, speaker, time) and the
source's number, which the answer cites. The conversation going on now is not shown (the user
is in it).

Which passages: given how close in meaning each turn of the recalled chunks is to the question
(the cosine of their stored vectors, ``close``), the best of all of them at once, a word of the
question said counting for more and a lower source for less (:class:`Weights`; the evidence
weighs a deeper recall than the model reads, a lower source costing it less); a passage
sharing no word of the question only when it is close. Without vectors, each source's
passages that share most words, and none that shares no word.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import NamedTuple

import msgspec

from daemon.memory.extract import content_words
from daemon.memory.grounding import (
    MAX_TURN_CHARS,
    Item,
    Passage,
    Source,
    focus_passages,
    prompt_chars,
    sentence_units,
    shares_word,
)
from daemon.store.records import Assertion

MAX_EVIDENCE_CHARS = 240
PASSAGES_PER_SOURCE = 3
MAX_EVIDENCE = 10


class Weights(NamedTuple):
    """How the passages of recalled sources are weighed against each other, for
    all-MiniLM-L6-v2's cosines of a question and a stored turn (embedded under its session's
    header, so even an unrelated turn of the session is ~0.3-0.4 close): a passage scores its
    closeness, plus ``word`` for each word of the question it says, plus ``speaker`` when it
    is said by one the question names ("What did the Industrial Designer recommend ...?"),
    minus ``rank_cost`` for each place its source is below the first; one saying no word of
    the question only when at least ``min_closeness`` close."""

    word: float
    rank_cost: float
    min_closeness: float
    speaker: float = 0.0


# What the model reads (and the evidence of the same sources): the weights leaving one dev
# conversation out chooses (a floor of 0.3 shows more unrelated turns for a point more)
READ = Weights(word=0.1, rank_cost=0.05, min_closeness=0.45)
# What the evidence shows of a deeper recall (``ask_evidence_k``): a lower source costs less,
# so that a real meeting's answering turn a few items down is shown, and a turn of the one
# the question names counts more; chosen on the dev chats and meetings together, each
# conversation and meeting series held out in turn (docs/benchmarks/ask.md, "Evidence from
# deeper recall")
SHOWN = Weights(word=0.05, rank_cost=0.015, min_closeness=0.45, speaker=0.2)


def weighing(weights: Weights, another: bool) -> Weights:
    """``weights`` for the evidence of a question that what matches is another's words of
    themselves answers (``attribution.said_by_another``: declined before the model): without
    the weight of the one named, whose turns do not answer; the other's, what memory holds
    ("What did Priya learn at the cooking class?" — Lena took it), are shown."""
    return weights._replace(speaker=0.0) if another else weights


class Close(msgspec.Struct, frozen=True):
    """A passage a source may show, with its closeness in meaning to the question (the cosine
    of their vectors)."""

    passage: Passage
    closeness: float


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
                 limit: int = MAX_EVIDENCE,
                 close: Mapping[int, Sequence[Close]] | None = None,
                 weights: Weights = READ) -> list[Evidence]:
    """The evidence for ``question`` in ``sources``, in their order (see the module
    docstring): at most ``limit`` pieces, and every item of the sources numbered in
    ``always`` (the items a question over items selected) whatever it shares.

    ``close`` gives, by source number, what may be shown of each source with its closeness in
    meaning to the question (a transcript's every turn, not only those the model reads): then
    the passages are the best of all sources at once by ``weights`` (:func:`_closest`), not
    the ones sharing most words in each."""
    wanted = content_words(question)
    items = [_piece(source, Passage(source.item.text), wanted, source.item)
             for source in sources if source.item is not None and _stated(source, wanted, always)]
    if close:  # a source with nothing weighed (a memory) shows what shares most words
        unweighed = [e for source in sources if source.n not in close
                     for e in _sharing(source, wanted)]
        first = [*items, *unweighed]
        return [*first, *_closest(sources, close, wanted, limit - len(first), weights)][
            :max(limit, len(always))]
    found: list[Evidence] = []
    for source in sources:
        found += [e for e in items if e.n == source.n] + _sharing(source, wanted)
    return found[:max(limit, len(always))]


def _sharing(source: Source, wanted: set[str]) -> list[Evidence]:
    """The passages of ``source`` that share most words with the question, in said order."""
    if source.kind == "context":
        return []
    # a name shared is no evidence alone (most turns of a chat name someone), but of two
    # passages that say as much, the one said by whom the question names comes first
    names = {w for p in source.passages for w in content_words(p.speaker)}
    about = wanted - names
    scored = [(_shared(about, p.text), _shared(wanted & names, p.speaker), -i, p)
              for i, p in enumerate(source.passages)
              if source.item is None or p.text != _body_of(source)]
    best = sorted((s for s in scored if s[0]), key=lambda s: s[:3], reverse=True)
    kept = sorted(best[:PASSAGES_PER_SOURCE], key=lambda s: -s[2])
    return [_piece(source, p, wanted) for _, _, _, p in kept]


class _Scored(NamedTuple):
    score: float
    rank: int  # its source's place among the recalled ones
    i: int  # its place in its source, as said
    source: Source
    passage: Passage


def _scored(sources: Sequence[Source], close: Mapping[int, Sequence[Close]],
            wanted: set[str], weights: Weights) -> list[_Scored]:
    """Every weighed passage of ``sources``, best first, by ``weights`` (:class:`Weights`;
    a name said is not a word of the question)."""
    scored = []
    ranked = [s for s in sources if s.kind != "context"]
    for rank, source in enumerate(ranked):
        names = {w for c in close.get(source.n, ()) for w in content_words(c.passage.speaker)}
        for i, c in enumerate(close.get(source.n, ())):
            said = _shared(wanted - names, c.passage.text)
            if said or c.closeness >= weights.min_closeness:
                score = c.closeness + weights.word * said - weights.rank_cost * rank
                if weights.speaker and _named(c.passage.speaker, wanted):
                    score += weights.speaker
                scored.append(_Scored(score, rank, i, source, c.passage))
    return sorted(scored, key=lambda s: (-s.score, s.rank, s.i))


def _named(speaker: str, wanted: set[str]) -> bool:
    """Whether the question (its content words ``wanted``) names ``speaker``: every word of
    the name ("Industrial Designer", "Lena"; not the user, "me"), a word as a reader takes
    it ("the Industrial Design" names the Industrial Designer)."""
    who = content_words(speaker)
    return bool(who) and all(shares_word({w}, wanted) for w in who)


def _closest(sources: Sequence[Source], close: Mapping[int, Sequence[Close]],
             wanted: set[str], limit: int, weights: Weights) -> list[Evidence]:
    """The ``limit`` passages of all ``sources`` scored best (:func:`_scored`), in source
    order, each source's in the order said."""
    best = _scored(sources, close, wanted, weights)[:max(0, limit)]
    return [_piece(s.source, s.passage, wanted) for s in sorted(best, key=lambda s: s[1:3])]


def closest_sources(question: str, sources: Sequence[Source],
                    close: Mapping[int, Sequence[Close]], budget: int,
                    keep: Collection[int] = ()) -> list[Source]:
    """What the model reads when the passages are weighed (``close``): those scored best as
    for the evidence, best first while they fit ``budget`` characters, in their sources and
    said order. Each is cut to the run of its sentences around the one that answers, at a
    matched turn's length (longer than the evidence's: a meeting's turn cut to 240 characters
    loses what answers). Read first, and counted first: a source numbered in ``keep``, the
    conversation going on and a source not weighed, as they are; the statement of each
    structured item the evidence shows (decision, commitment, ...), before its turns. A source
    with nothing read is left out."""
    wanted = content_words(question)
    whole = {s.n for s in sources if s.kind == "context" or s.n in keep or s.n not in close}
    stated = {s.n for s in sources if s.n not in whole and _stated(s, wanted)}
    used = sum(prompt_chars(p) for s in sources if s.n in whole and s.kind != "context"
               for p in s.passages)
    used += sum(prompt_chars(s.passages[0]) for s in sources if s.n in stated)
    chosen: dict[int, list[_Scored]] = {}
    for scored in _scored(sources, close, wanted, READ):
        source = scored.source
        if source.n in whole:
            continue
        passage = msgspec.structs.replace(scored.passage,
                                          text=cut(scored.passage.text, wanted, MAX_TURN_CHARS))
        size = prompt_chars(passage) + (prompt_chars(source.passages[0]) if source.item
                                        and source.n not in {*chosen, *stated} else 0)
        if used + size > budget and (used or chosen):
            continue  # a shorter one may still fit
        chosen.setdefault(source.n, []).append(scored._replace(passage=passage))
        used += size
    read = []
    for source in sources:
        if source.n in whole:
            read.append(source)
        elif source.n in chosen or source.n in stated:
            item = source.passages[:1] if source.item is not None else ()
            said = tuple(s.passage for s in sorted(chosen.get(source.n, []), key=lambda s: s.i))
            read.append(msgspec.structs.replace(source, passages=(*item, *said)))
    return read


def _stated(source: Source, wanted: set[str], always: Collection[int] = ()) -> bool:
    """Whether the evidence shows ``source``'s structured item: one a question over items
    selected (``always``), or one that shares a word with the question."""
    return source.kind != "context" and source.item is not None and (
        source.n in always or bool(_shared(wanted, source.item.text, source.title)))


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
