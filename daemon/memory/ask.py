"""Asking the memory: recall, then a grounded answer, streamed, checked before it is final.

``Asker.ask(question, space, session)``:

1. The grounding session is ``session`` or, by default, the live one. Without a question, the
   question is the last one heard from "them" in it (``grounding.last_question``).
2. Scope: the Space asked for, else the grounding session's Space, else none (profile-wide
   memory only). The framing comes from the grounding session's activity, else the Space's:
   ``interview`` for the job family, ``conversation`` otherwise.
3. Sources, numbered in this order: the grounding session's latest turns (the conversation
   going on; the prompt opens with it, so its model state can stay cached while it grows),
   what recall found (the fusion search with its per-session
   and archive caps; an assertion comes with its anchor chunk's turns, a transcript chunk with
   its assertions), in the interview family the best-matching story chunk when recall missed
   it, the approved memories about the person in scope (with consent), and last what a
   deeper recall (``ask_evidence_k`` items) adds, which only the evidence shows: the model
   reads from the others. A transcript source holds the turns that match the question with
   their neighbours (``grounding.compact_turns``), not its whole chunk.
4. When nothing relevant was recalled (``grounding.relevant``: no shared content word, never a
   score threshold) the answer says so and no model is asked; when the question asks about
   one of two people and what matches it is the other's words of themselves
   (``attribution.said_by_another``), it says nothing in memory says it, no model asked
   either; when it asks when that person did something and a sentence of theirs says it
   (``when.when_answer``), the answer is the day, read off it and its session's date. Otherwise
   the model answers from the sources, token by token to ``on_token``, until done or ``stop``
   is set.
5. The whole text is checked (``grounding.check_answer``) before it is returned: the result is
   the final answer, quotes verified or marked, citations mapped to their sources. An answer
   that only restates the question (``grounding.echoes_question``) is replaced by the
   passages that match it, quoted and cited (``grounding.passages_answer``).

During a call the model reads ahead: the conversation as it grows (``read_ahead``) and, when
"them" just asked a question, everything its answer is made from (``read_question_ahead``:
the sources recalled for it, the whole prompt), so that the hotkey's answer to it costs only
the writing. An ask waits for a reading in progress (it may be of its own question) and uses
what was read when its question, Space and session are the ones read for.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import AsyncGenerator, Callable, Collection, Mapping, Sequence
from contextlib import aclosing
from typing import NamedTuple, cast

import msgspec
import trio

from daemon.config import Settings
from daemon.errors import EngineError, InvalidInput, NotFound
from daemon.llm.generate import ChatMessage, Generator
from daemon.llm.rerank import Reranker
from daemon.memory import attribution, grounding, open_items, relative_time, when
from daemon.memory.evidence import (
    SHOWN,
    Close,
    Evidence,
    closest_sources,
    evidence_for,
    item_of,
    weighing,
)
from daemon.memory.grounding import Cited, Framing, Passage, Said, Source
from daemon.memory.person import recall_memories
from daemon.sensitive.gate import Gate, mask_lines
from daemon.store.fusion import ItemKey
from daemon.store.records import Assertion, Chunk, Document, Session, Space, Turn
from daemon.store.scope import Scope
from daemon.store.search import SearchOptions, search
from daemon.store.store import Store
from daemon.store.writes import assertion_body

log = logging.getLogger(__name__)

# The fusion search as ask uses it: (question, scope, k) -> the items found, best first, with
# the caps applied (blocking: runs on a thread).
Recall = Callable[[str, Scope, int], Sequence[ItemKey]]
# More sources for a kind of question, beside what recall found (blocking, on a thread): e.g.
# the open items of the Space for "what's still open?". (question, scope) -> sources, each
# numbered later; none for a question it does not answer.
SourceHook = Callable[[str, Scope], Sequence[Source]]

MEMORY_K = 3  # memories about the person, beside what was recalled
STORY_OVERFETCH = 4  # how much deeper than k a story is looked for in the ranking
QUESTION_AHEAD_TURNS = 3  # "them"'s question is read ahead while among the latest turns


class Answer(msgspec.Struct, kw_only=True):
    question: str
    text: str  # the final, checked answer (or, cancelled, what came until then)
    citations: list[Cited]
    sources: list[Source]  # every source the model was given, by number
    framing: Framing
    space: str | None = None
    evidence: list[Evidence] = []  # what memory holds for the question, shown first
    nothing_found: bool = False
    declined: bool = False  # nothing a source supports was left: the answer says so
    cancelled: bool = False
    unverified: int = 0  # quotes marked as not found verbatim


class _Gathered(NamedTuple):
    """The numbered sources of an answer: all recalled (``sources``), the numbers of those read
    whatever the budget (``forced``) and of those recalled deeper, only shown as evidence
    (``shown``: the model does not read them)."""

    sources: list[Source]
    forced: list[int]
    shown: Sequence[int] = ()

    def readable(self) -> list[Source]:
        """The sources the model may read: all but those only shown."""
        return [s for s in self.sources if s.n not in self.shown]


class _Plan(msgspec.Struct, kw_only=True):
    """What an answer is made from before the model writes it: its sources (in ``answer``: what
    was recalled), what of them the model reads (``read``: what its answer is checked against
    and cites), whether any is relevant, and the prompt (``opening``: what it shares with
    every question asked in the same conversation)."""

    answer: Answer
    read: list[Source]
    session_id: int | None  # the grounding session
    turns: int  # how many turns it had
    relevant: bool
    another: bool  # what matches is someone else's of themselves, not the one asked about
    stated: bool  # the sources are the items a question over items selected: stated, no model
    dated: str | None  # when the one asked about did it, read off their words: no model
    opening: list[ChatMessage]
    messages: list[ChatMessage]

    def fits(self, question: str, space: str | None, session_id: int | None) -> bool:
        """Whether it answers ``question`` asked in ``space`` (None: the session's)."""
        return (question, session_id) == (self.answer.question, self.session_id) \
            and space in (None, self.answer.space)


class Asker:
    """Answers questions from one profile's store (see the module docstring).

    ``generator`` returns the language model (it raises ModelNotInstalled when there is
    none); ``live_session`` the id of the live session, if any; ``recall`` is the search;
    ``source_hooks`` add sources for kinds of question recall does not answer well alone.
    """

    def __init__(
        self,
        store: Store,
        *,
        generator: Callable[[], Generator],
        settings: Callable[[], Settings],
        recall: Recall,
        live_session: Callable[[], int | None] = lambda: None,
        source_hooks: Sequence[SourceHook] = (),
    ) -> None:
        self.store = store
        self._source_hooks = tuple(source_hooks)
        self._generator = generator
        self._settings = settings
        self._recall = recall
        self._live_session = live_session
        self._ahead: _Plan | None = None  # the answer to "them"'s last question, prepared
        self._reading = trio.Lock()  # held by every ask and every reading ahead

    async def ask(
        self,
        question: str | None,
        space: str | None = None,
        session: int | None = None,
        *,
        on_token: Callable[[str], None] = lambda token: None,
        stop: trio.Event | None = None,
        on_evidence: Callable[[list[Evidence]], None] = lambda evidence: None,
    ) -> Answer:
        # a question being read ahead is read to the end first: it may be this one
        async with self._reading:
            return await self._ask(question, space, session, on_token, stop, on_evidence)

    async def _ask(self, question: str | None, space: str | None, session: int | None,
                   on_token: Callable[[str], None], stop: trio.Event | None,
                   on_evidence: Callable[[list[Evidence]], None]) -> Answer:
        stop = trio.Event() if stop is None else stop
        grounding_id = session if session is not None else self._live_session()
        current = None if grounding_id is None else await self.store.run(
            lambda: self.store.get_session(grounding_id))
        turns = [] if current is None else await self.store.run(self.store.turns, current.id)
        asked = _question(question, current, turns)
        ahead = self._ahead
        plan = ahead if ahead is not None and ahead.fits(asked, space, grounding_id) else None
        if plan is None:
            plan = await self._plan(asked, space, current, turns)
        answer = plan.answer
        on_evidence(answer.evidence)  # what memory holds, before any word of the model's
        if not plan.relevant:
            text = grounding.dont_know(answer.space)
            on_token(text)
            return msgspec.structs.replace(answer, text=text, nothing_found=True, declined=True)
        if plan.another:
            text = grounding.nothing_says(asked)
            on_token(text)
            return msgspec.structs.replace(answer, text=text, declined=True)
        if stop.is_set():
            return msgspec.structs.replace(answer, cancelled=True)
        if plan.stated or plan.dated is not None:  # stated, not paraphrased: no model
            text = grounding.items_answer(answer.sources) if plan.dated is None else plan.dated
            on_token(text)
            checked = grounding.check_answer(text, answer.sources, asked)
            return msgspec.structs.replace(answer, text=checked.text,
                                           citations=checked.citations)
        generator = self._generator()
        if plan is not ahead:  # (a question read ahead is in the model's state already)
            await _read_ahead(generator, plan.opening)
        raw, cut = await _stream(generator, plan.messages, on_token, stop,
                                 self._settings().ask_answer_tokens)
        if cut:  # stopped at the length limit: the unfinished sentence is not an answer
            raw = grounding.whole_sentences(raw)
        # what came before a stop is checked too: it is shown as the answer so far
        answer = msgspec.structs.replace(answer, sources=plan.read)
        checked, dropped = check_written(raw, plan.read, asked,
                                         grounding.speakers_of(plan.answer.sources).values())
        declined = not stop.is_set() and (
            not checked.text.strip() or grounding.echoes_question(checked.text, asked))
        if declined:  # nothing supported is left, or only the question restated
            checked = grounding.Checked(text=grounding.nothing_says(asked), citations=[])
        log.info("answer checked: %d sentence(s) no cited source supports dropped, %d quote(s) "
                 "marked unverified, %d citation(s) of no source dropped%s", dropped,
                 checked.unverified, checked.dropped, "; declined" if declined else "")
        return await self.store.run(gated, self.store, msgspec.structs.replace(
            answer, text=checked.text, citations=checked.citations,
            unverified=checked.unverified, cancelled=stop.is_set(), declined=declined))

    async def _plan(self, asked: str, space: str | None, current: Session | None,
                    turns: Sequence[Turn]) -> _Plan:
        """Everything an answer to ``asked`` is made from but the model's writing."""
        where = await self._space(space, current)
        activity = current.activity if current is not None else (where.activity if where else "")
        framing = grounding.framing_for(activity)
        settings = self._settings()
        scope = Scope(space_id=None if where is None else where.id,
                      person_memory=settings.memory_enabled)
        gathered = await self.store.run(
            lambda: self._gather(asked, scope, framing, settings, current, turns))
        everything, forced, sources = gathered.sources, gathered.forced, gathered.readable()
        close = await self.store.run(lambda: self._close(asked, everything))
        budget = source_budget(settings, asked)
        read = model_reads(asked, sources, close, budget, forced)
        another, dated = decided_before_model(asked, sources, forced)
        answer = Answer(question=asked, text="", citations=[], sources=sources, framing=framing,
                        space=None if where is None else where.name,
                        evidence=evidence_for(asked, everything, forced, close=close,
                                              weights=weighing(SHOWN, another)))
        context = next((s for s in sources if s.kind == "context"), None)
        return _Plan(answer=answer, read=read, session_id=None if current is None else current.id,
                     turns=len(turns),
                     relevant=grounding.relevant(asked, sources, always=forced),
                     another=another,
                     stated=bool(forced) and all(s.item is not None for s in sources
                                                 if s.n in forced),
                     dated=dated,
                     opening=grounding.prompt_prefix(framing, context),
                     messages=grounding.build_prompt(framing, asked, read, budget, forced,
                                                       fitted=True))

    async def read_question_ahead(
        self, session_id: int, *, stop: Callable[[], bool] | None = None
    ) -> bool:
        """When "them" asked a question among the latest turns of session ``session_id`` (the
        hotkey's question), prepare its answer — recall its sources and have the model read
        the whole prompt, until ``stop`` holds — so that asking it costs only the model's
        writing; returns whether there was such a question. The prompt opens with the
        conversation so far, so this also reads the conversation ahead (:meth:`read_ahead`).
        Called again, it goes on reading where a stop left it."""
        current = await self.store.run(lambda: self.store.get_session(session_id))
        turns = await self.store.run(lambda: self.store.turns(current.id))
        heard = grounding.last_question(
            [Said(t.speaker, t.text) for t in turns[-QUESTION_AHEAD_TURNS:]])
        if heard is None:
            return False
        async with self._reading:  # (an ask waits, then uses it)
            plan = self._ahead
            if plan is None or not plan.fits(heard.text, None, session_id) \
                    or plan.turns != len(turns):
                plan = self._ahead = await self._plan(heard.text, None, current, turns)
            # an answer that needs no model: a typed question the opening
            needs_model = plan.relevant and not plan.another
            await _read_ahead(self._generator(), plan.messages if needs_model else plan.opening,
                              stop)
        return True

    async def read_ahead(self, session_id: int, *, stop: Callable[[], bool] | None = None
                         ) -> int:
        """Have the model read what every question asked in session ``session_id`` now would
        begin with — the instructions and the conversation so far, until ``stop`` holds — so
        that a question costs only its own tokens and its sources; returns how many turns that
        was. Keeps the model loaded (it is used), which is the point while a session is
        live."""
        current = await self.store.run(lambda: self.store.get_session(session_id))
        turns = await self.store.run(lambda: self.store.turns(current.id))
        where = await self._space(None, current)
        framing = grounding.framing_for(current.activity or (where.activity if where else ""))
        context = None if not turns else msgspec.structs.replace(
            _context(current, turns, live=current.status == "live"), n=1)
        async with self._reading:  # never between an ask's reading and its writing
            await _read_ahead(self._generator(), grounding.prompt_prefix(framing, context), stop)
        return len(turns)

    async def _space(self, name: str | None, current: Session | None) -> Space | None:
        if name is not None:
            return await self.store.run(lambda: self.store.get_space(name))
        if current is not None and current.space_id is not None:
            space_id = current.space_id
            return await self.store.run(lambda: self.store.get_space(space_id))
        return None

    # -- sources (blocking: on a thread) -------------------------------------------------------

    def _gather(
        self,
        question: str,
        scope: Scope,
        framing: Framing,
        settings: Settings,
        current: Session | None,
        turns: Sequence[Turn],
    ) -> _Gathered:
        """The numbered sources of an answer, the numbers of the forced ones and of those only
        shown as evidence."""
        # a question over items ("what did Sarah commit to this month?", "what's still
        # open?") is answered from every matching assertion, each a forced source
        selected = open_items.question_sources(self.store, question, scope,
                                               dt.datetime.now().astimezone())
        if selected is not None:
            return _Gathered(selected, [s.n for s in selected])
        k = settings.search_k
        keys = list(self._recall(question, scope, k))
        # recalled deeper for the evidence alone, numbered after all the model may read
        deeper = [] if settings.ask_evidence_k <= k else [
            key for key in self._recall(question, scope, settings.ask_evidence_k)
            if key not in keys]
        forced: list[ItemKey] = []
        if grounding.includes_story(framing):
            story = self._story(question, scope, k, keys)
            forced = [] if story is None else [story]
        drafts: list[Source] = []
        if current is not None and turns:  # first: the prompt opens with it (build_prompt)
            drafts.append(_context(current, turns, live=current.status == "live"))
        seen_assertions: set[int] = set()
        for key in [*keys, *forced]:
            draft = self._source_of(key, question, scope, seen_assertions)
            if draft is not None:
                drafts.append(draft)
        for hook in self._source_hooks:
            drafts += hook(question, scope)
        memories = recall_memories(self.store, question, scope.space_id, MEMORY_K,
                                   consent=settings.memory_enabled)
        drafts += [_memory(m) for m in memories if m.id not in seen_assertions]
        read = len(drafts)
        for key in deeper:
            draft = self._source_of(key, question, scope, seen_assertions)
            if draft is not None:
                drafts.append(draft)
        sources = [msgspec.structs.replace(d, n=i) for i, d in enumerate(drafts, 1)]
        forced_n = [s.n for s in sources
                    if forced and s.kind == "document" and s.chunk_id == forced[0].id]
        return _Gathered(sources, forced_n, [s.n for s in sources[read:]])

    def _close(self, question: str, sources: Sequence[Source]) -> dict[int, list[Close]]:
        """What each source may show as evidence, with its closeness in meaning to the
        question: every turn of a transcript chunk (a statement's: of the chunk it was said
        in) by the turn's own vector; an archive's or a document part's text by its chunk's.
        Empty without an embedder; a source without a vector (a memory) is left out."""
        turns = {s.n: self.store.turns_of_chunk(s.chunk_id) for s in sources
                 if s.kind in ("transcript", "assertion") and s.chunk_id is not None}
        whole = {s.n: s.chunk_id for s in sources
                 if s.kind in ("archive", "document") and s.chunk_id is not None}
        closeness = self.store.closeness(question, [
            *(("turn", t.id) for ts in turns.values() for t in ts),
            *(("chunk", chunk_id) for chunk_id in whole.values())])
        if not closeness:
            return {}
        close = {n: [Close(p, closeness.get(("turn", t.id), 0.0))
                     for p, t in zip(_passages(ts), ts, strict=True)]
                 for n, ts in turns.items()}
        for s in sources:
            if s.n in whole:
                close[s.n] = [Close(p, closeness.get(("chunk", whole[s.n]), 0.0))
                              for p in s.passages]
        return close

    def _story(
        self, question: str, scope: Scope, k: int, found: Sequence[ItemKey]
    ) -> ItemKey | None:
        """The best-matching chunk of a story document in scope, unless recall found one: the
        first one in a deeper ranking, else the one sharing most words with the question."""
        stories = {d.id for d in self._documents_in(scope) if grounding.story_like(d.title,
                                                                                   d.filename)}
        if not stories:
            return None
        story_chunks = {c.id: c for d in stories for c in self.store.chunks(document_id=d)}
        if any(key.kind == "chunk" and key.id in story_chunks for key in found):
            return None
        for key in self._recall(question, scope, k * STORY_OVERFETCH):
            if key.kind == "chunk" and key.id in story_chunks:
                return key
        best = grounding.pick_story(question, [(c.id, c.body) for c in story_chunks.values()])
        return None if best is None else ItemKey("chunk", best)

    def _documents_in(self, scope: Scope) -> list[Document]:
        documents = self.store.list_documents(profile_wide=True)
        if scope.space_id is not None:
            documents += self.store.list_documents(space_id=scope.space_id)
        return documents

    def _source_of(
        self, key: ItemKey, question: str, scope: Scope, seen: set[int]
    ) -> Source | None:
        """A recalled item as a source (n is set later); None when it is gone meanwhile."""
        if key.kind == "assertion":
            found = self.store.get_assertions([key.id])
            if not found or found[0].id in seen:
                return None
            seen.add(found[0].id)
            return self._assertion_source(found[0], question)
        chunks = self.store.get_chunks([key.id])
        if not chunks:
            return None
        chunk = chunks[0]
        if chunk.kind == "document":
            if chunk.document_id is None:
                return None
            document = self.store.get_document(chunk.document_id)
            return Source(n=0, kind="document", title=document.title, date=chunk.occurred_at,
                          document_id=document.id, chunk_id=chunk.id, label="document",
                          passages=(Passage(chunk.body),))
        session = self._session(chunk.session_id)
        title, date = _titled(session, chunk)
        if chunk.kind == "session":
            return Source(n=0, kind="archive", title=title, date=date, session_id=chunk.session_id,
                          chunk_id=chunk.id, label="summary of the conversation",
                          passages=(Passage(chunk.body),))
        linked = [a for a in self.store.assertions_for_chunks([chunk.id], scope)
                  if a.id not in seen]
        seen.update(a.id for a in linked)
        turns = _passages(self.store.turns_of_chunk(chunk.id))
        passages = [*grounding.compact_turns(turns, question),
                    *(Passage(f"{a.kind}: {assertion_body(a)}") for a in linked)]
        return Source(n=0, kind="transcript", title=title, date=date, session_id=chunk.session_id,
                      chunk_id=chunk.id, label="transcript", passages=tuple(passages))

    def _assertion_source(self, assertion: Assertion, question: str) -> Source:
        if assertion.about_person:
            return _memory(assertion)
        session = self._session(assertion.session_id)
        evidence: list[Turn] = []
        if assertion.anchor_chunk_id is not None:
            evidence = self.store.turns_of_chunk(assertion.anchor_chunk_id)
        passages = [Passage(assertion_body(assertion)),
                    *grounding.compact_turns(_passages(evidence), question)]
        return Source(n=0, kind="assertion", label=assertion.kind,
                      title=session.title if session is not None and session.title else "noted",
                      date=assertion.occurred_at, session_id=assertion.session_id,
                      chunk_id=assertion.anchor_chunk_id, passages=tuple(passages),
                      item=item_of(assertion))

    def _session(self, session_id: int | None) -> Session | None:
        if session_id is None:
            return None
        try:
            return self.store.get_session(session_id)
        except NotFound:  # deleted since it was found
            return None


def _question(question: str | None, current: Session | None, turns: Sequence[Turn]) -> str:
    asked = " ".join((question or "").split())
    if asked:
        return asked
    if current is None:
        raise InvalidInput("no question, and no session is live to take one from",
                           fix="ask a question, e.g. `braincue ask \"what did we decide?\"`")
    heard = grounding.last_question([Said(t.speaker, t.text) for t in turns])
    if heard is None:
        raise InvalidInput(f"nobody but you has asked a question in session {current.id} yet",
                           fix="ask one yourself, e.g. `braincue ask \"what did we decide?\"`")
    return heard.text


def search_recall(
    store: Store,
    settings: Callable[[], Settings],
    reranker: Callable[[], Reranker | None] = lambda: None,
) -> Recall:
    """The recall of ``Asker``: the fusion search over ``store`` with the current settings
    (re-ranked by what ``reranker`` gives, when it gives one)."""

    def recall(question: str, scope: Scope, k: int) -> list[ItemKey]:
        options = SearchOptions.from_settings(settings())
        return [found.key for found in search(store, question, scope=scope, k=k,
                                              options=options, reranker=reranker())]

    return recall


def gated(store: Store, answer: Answer) -> Answer:
    """``answer`` with every secret said in its sources' sessions redacted, however the model
    phrased it (the one call on the answer side of the sensitive-data gate; a blocking read).
    The sources themselves are masked already (chunk bodies, ``Store.turns_of_chunk``), so the
    streamed tokens carry a secret only if the model was handed one some other way."""
    sessions = {s.session_id for s in answer.sources if s.session_id is not None}
    said = [t.text for session_id in sorted(sessions) for t in store.turns(session_id)]
    gate = Gate.of([*said, answer.question]).redact(answer.text)
    return answer if not gate.count else msgspec.structs.replace(answer, text=gate.text)


def check_written(raw: str, sources: Sequence[Source], asked: str,
                  speaking: Collection[str] = ()) -> tuple[grounding.Checked, int]:
    """The model's answer checked: what it copied of the prompt's layout taken out
    (``grounding.unlabelled``), each sentence uncited that a source supports cited, the
    other one of a chat of two taken out of a sentence about both when the question asks of
    one (``grounding.one_asked_of``), each that no source it cites supports dropped (and
    counted; ``speaking``: the names of all who speak in what was recalled,
    ``grounding.keep_supported``), a turn's words in the first person given to their speaker
    (``grounding.voiced``), relative times resolved against the day of the source it cites,
    quotes verified."""
    answer = grounding.attribute(grounding.unlabelled(raw, sources), sources)[0]
    answer = grounding.one_asked_of(answer, asked, sources)
    supported, dropped = grounding.keep_supported(answer, sources, asked, speaking)
    said = grounding.voiced(supported, sources)
    return grounding.check_answer(_resolved(said, sources), sources, asked), dropped


def _resolved(text: str, sources: Sequence[Source]) -> str:
    """``text`` with the relative times of each sentence ("yesterday") resolved against the
    day its first cited dated source was said on."""
    dates = {s.n: s.date for s in sources if s.date}
    pieces = []
    for piece in grounding.sentences(text):
        day = next((dates[n] for n in grounding.cited_numbers(piece) if n in dates), None)
        pieces.append(piece if day is None else
                      relative_time.resolve(piece, dt.datetime.fromtimestamp(day).date()))
    return "".join(pieces)


def decided_before_model(asked: str, sources: Sequence[Source], forced: Collection[int]
                         ) -> tuple[bool, str | None]:
    """What is decided of ``asked`` before any model writes, from the ``sources`` it may read
    (``forced``: the numbers of those a question over items selected, stated as they are):
    whether what matches is another's words of themselves (``attribution.said_by_another``:
    declined), and else the answer read off the named one's words (``when.when_answer``)."""
    another = not forced and attribution.said_by_another(asked, sources)
    return another, None if forced or another else when.when_answer(asked, sources)


def model_reads(question: str, sources: Sequence[Source], close: Mapping[int, Sequence[Close]],
                budget: int, forced: Collection[int]) -> list[Source]:
    """What the model reads of ``sources`` for ``question`` within ``budget`` characters, and
    what its answer is checked against: with the turns weighed (``close``, see
    :meth:`Asker._close`), those that answer best, as the evidence shows them
    (``evidence.closest_sources``); else each recalled source focused on the question
    (``grounding.fit_sources``), after the conversation going on. A source numbered in
    ``forced`` is read whatever the budget."""
    if close:
        return closest_sources(question, sources, close, budget, forced)
    recalled = [s for s in sources if s.kind != "context"]
    return [*(s for s in sources if s.kind == "context"),
            *grounding.fit_sources(recalled, question, budget, forced)]


def source_budget(settings: Settings, question: str) -> int:
    """How many characters of recalled text the model reads for ``question``: more for an
    account of an exchange, told in more sentences (``grounding.question_kind``)."""
    if grounding.question_kind(question) == "account":
        return settings.ask_account_source_chars
    return settings.ask_source_chars


def _titled(session: Session | None, chunk: Chunk) -> tuple[str, float]:
    if session is None:
        return "a deleted session", chunk.occurred_at
    return session.title or f"session {session.id}", session.started_at


def _memory(assertion: Assertion) -> Source:
    return Source(n=0, kind="memory", title="about you", label="memory about you",
                  date=assertion.occurred_at, passages=(Passage(assertion_body(assertion)),))


def _context(session: Session, turns: Sequence[Turn], *, live: bool) -> Source:
    """The conversation going on (or the grounding session's latest turns), as the model reads
    it whatever the question: each turn cut at the same length, so it stays a cached prefix.
    A secret said in them is masked, as in everything recall hands out: the model cannot
    stream what it never read (the checked answer is gated again, ``daemon.handlers.ask``)."""
    start = grounding.context_window(len(turns))
    recent = turns[start:]
    texts = mask_lines([t.text for t in recent], turns[start - 1].text if start else "")
    return Source(n=0, kind="context", title=session.title or f"session {session.id}",
                  label="the conversation now" if live else "its latest turns",
                  date=session.started_at, session_id=session.id,
                  passages=tuple(Passage(_clipped(text), t.speaker, t.ref or "")
                                 for t, text in zip(recent, texts, strict=True)))


def _passages(turns: Sequence[Turn]) -> list[Passage]:
    return [Passage(t.text, t.speaker, t.ref or "", t.start) for t in turns]


def _clipped(text: str) -> str:
    limit = grounding.MAX_CONTEXT_TURN_CHARS
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


async def _read_ahead(generator: Generator, messages: Sequence[ChatMessage],
                      stop: Callable[[], bool] | None = None) -> None:
    """Prefill ``messages`` (until ``stop`` holds); a model that cannot only makes the answer
    slower, never fail it."""
    try:
        await generator.prefill(messages, stop=stop)
    except EngineError as e:
        log.warning("could not read the prompt's opening ahead: %s", e)


async def _stream(
    generator: Generator,
    messages: Sequence[ChatMessage],
    on_token: Callable[[str], None],
    stop: trio.Event,
    max_tokens: int,
) -> tuple[str, bool]:
    """The model's answer, each token handed to ``on_token``, and whether it was cut at
    ``max_tokens``; stops early once ``stop`` is set (leaving the iteration stops the model at
    its next token)."""
    pieces: list[str] = []
    async with trio.open_nursery() as nursery:

        async def stop_when_asked() -> None:
            await stop.wait()
            nursery.cancel_scope.cancel()

        nursery.start_soon(stop_when_asked)
        # an async generator, though typed as an iterator: closing it stops the model
        tokens = cast(AsyncGenerator[str, None],
                      generator.stream(messages, max_tokens=max_tokens))
        async with aclosing(tokens):
            async for token in tokens:
                pieces.append(token)
                on_token(token)
                if stop.is_set():
                    break
        nursery.cancel_scope.cancel()
    return "".join(pieces), len(pieces) >= max_tokens
