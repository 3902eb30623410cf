"""Remembering a session: the user's answer to "Keep this conversation?".

Only :meth:`Rememberer.remember` sends a transcript to a model, and only after the user said
*Keep it*. It files the session first — into the Space chosen, out of every Space, or where it
ran — because where a session is kept decides where its archive and memories are recalled.

- **discard** deletes the session, its turns, chunks, archive, assertions and the memory
  candidates still pending; memories the user already reviewed stay (their decision).
- **later** remembers nothing; the session stays listed as undecided (status ``later``).
- **keep** marks the session kept, then — each step gated, each failure reported, never undoing
  the keep:

  1. nothing at all without a Space (nothing is even sent to a model), for a practice session
     (a rehearsal against an AI is not something that happened), or in a Space opted out of
     memory;
  2. the archive (switch ``session_archive_enabled``): a summary in the activity's format,
     key quotes verified against the turns, rendered, passed through the sensitive-data gate,
     embedded and written as the session's ``session`` chunks, replacing an earlier archive;
  3. extraction: typed assertions about what happened (also under ``session_archive_enabled``:
     like the archive they say what the conversation *was*, live in its Space and go with it)
     and, with consent (``memory_enabled``), memories about the person as pending candidates,
     in the Space or profile-wide as the extractor says. Each is anchored to the transcript
     chunk that supports it (unanchored ones are dropped), gated, and reconciled: the same
     sentence already stored is a duplicate without asking; otherwise current assertions of
     the same Space within ``reconcile_distance`` (cosine distance) go to the model, which
     rules duplicate (not stored again: the stored one records that this session said it again,
     a *restatement*, shown in its history), supersedes (stored; the old one keeps its place in
     the history) or separate. A candidate the user was already asked about in a visible scope is
     not proposed again (``already_known``). Everything is embedded first and then written in
     one transaction; supersede links follow.

A transcript longer than :data:`WHOLE_TRANSCRIPT_CHARS` is read in excerpts for its assertions
— the few turns around each turn whose wording carries a decision or a preference (extract,
then abstract); who owes what is read off the turns that take work on, and the model is asked
to word it only when it was not said as "I will …" — and in parts of at most
:data:`ARCHIVE_PART_CHARS` for its summary (:mod:`daemon.memory.pieces`); its archive's
*Decided* and *Action items* are then the validated assertions, which is why extraction runs
before the archive (a 0.5B model asked for the decisions of a 35-minute meeting listed
proposals and role names). Every
answer passes the content rules of :mod:`daemon.memory.validate`; a piece that is cut off keeps
its complete items, one that gives nothing is asked again in halves, and only a pass whose every
piece failed fails. Keeps run one at a time: the model is one thread anyway, and
pressing *Keep* twice must see the first keep's memories. A keep of a long meeting on a small
model takes minutes, so it reports each stage's steps to a :data:`Progress` callback: the
pieces extracted (``extraction``), the pieces summarised (``archive``) and the extracted
statements reconciled (``reconciliation``).

A keep is recorded before it runs and cannot be lost: the session's keep state
(:class:`~daemon.store.records.KeepState`) is ``pending`` from the answer on, ``running``
while the model works, then ``done`` or ``failed`` with the reason. A stop or a crash leaves
it pending or running, and :meth:`Rememberer.finish_interrupted` (run when the daemon starts)
finishes it without the user asking again. A keep runs behind live capture: on the background
engine (lowest CPU priority) and, while a session is live, waiting between its model calls
(:mod:`daemon.memory.behind_live`).
"""

from __future__ import annotations

import datetime as dt
import functools
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import Any, Literal, TypeVar

import msgspec
import numpy as np
import trio

from daemon.config import Settings
from daemon.errors import BrainCueError, EngineError, EngineUnavailable, InvalidInput
from daemon.llm.generate import (
    AnswerCutOff,
    ChatMessage,
    Generator,
    output_schema,
    with_schema_instruction,
)
from daemon.memory import archive, detect, open_items, validate
from daemon.memory.behind_live import BehindLive, Quiet
from daemon.memory.detect import DetectorError
from daemon.memory.detected import worded
from daemon.memory.extract import (
    AnchorCandidate,
    Existing,
    ExtractedAssertion,
    Extraction,
    KnownMemory,
    Plan,
    Ruling,
    Undertaken,
    Undertaking,
    already_known,
    check_assertion,
    decisions_at,
    extraction_prompt,
    find_anchor,
    find_undertakings,
    group_undertakings,
    normalise,
    plan_from_ruling,
    reconcile_prompt,
    said_assertion,
    undertaking_assertion,
    undertaking_prompt,
)
from daemon.memory.pieces import (
    clip_sentences,
    merge_envelopes,
    merge_extractions,
    reading_lines,
    repeats,
    salvage_json,
    split_even,
    transcript_budget,
)
from daemon.memory.validate import FILLER, fluent, words
from daemon.memory.waiting import Watched, is_waiting, waiting_reason
from daemon.sensitive.gate import Gate, mask_lines
from daemon.store.records import (
    Assertion,
    Chunk,
    ItemClosure,
    KeepState,
    KeepStatus,
    NewAssertion,
    NewRestatement,
    Session,
    Space,
    Turn,
)
from daemon.store.scope import Scope
from daemon.store.store import Store
from daemon.store.writes import assertion_body

log = logging.getLogger(__name__)

T = TypeVar("T")
Answer = Literal["keep", "discard", "later"]
ANSWERS: tuple[Answer, ...] = ("keep", "discard", "later")
Stage = Literal["archive", "extraction", "reconciliation"]
# (stage, done, total): called when a stage starts (done 0) and after each of its steps
Progress = Callable[[Stage, int, int], None]
Steps = Callable[[int, int], None]  # (done, total) of one stage

ARCHIVE_TOKENS = 1024  # a full archive is ~500 tokens; a cut-off one keeps its complete items
ARCHIVE_PART_TOKENS = 384  # a part's short summary, its other sections and one quote
ARCHIVE_PART_CHARS = 9000  # ~2,000 tokens of speech: a 35-minute meeting in four or five parts
# a meeting read in one or two parts had a summary of two to four sentences (as few as 31
# words, against ~100 in a reference summary of any meeting): one of at least three parts has
# six or more
ARCHIVE_PARTS = 3
ARCHIVE_MIN_PART_CHARS = 1500  # ~400 tokens of speech: enough for two sentences of its own
EXTRACT_TOKENS = 640  # a call's six items of ~70 tokens, and room
UNDERTAKING_TOKENS = 80  # one sentence
MAX_UNDERTAKINGS = 8  # per session: the last ones, where a meeting settles who does what
RETRY_HALVES = 1  # a piece that gives no answer is asked again once, in two halves
MAX_DECISIONS = 12  # per session
# the detected turns worded by the model, the likeliest first: each is a call of ~500 tokens.
# Only decisions: the action head finds almost none of the action items the readers of who
# takes work on find, all of them right (docs/benchmarks/keep.md)
MAX_DETECTED = {"decision": 8}
WHOLE_TRANSCRIPT_CHARS = 2500  # a transcript this short is one excerpt, cues or not
RULING_TOKENS = 48
RECONCILE_CANDIDATES = 5  # nearest current assertions shown to the model
MAX_EXTRACTED = 48  # per session, after merging the pieces
PERSON_KINDS = ("fact", "preference")
MAX_KEEP_ATTEMPTS = 3  # a keep interrupted this often (it may crash the daemon) is given up
MAX_TEXT_CHARS = 600  # an assertion is one sentence; a small model sometimes runs on

PAUSED_WHILE_LIVE = "paused while a session is live; it goes on when the session ends"
NO_SPACE = ("no Space: nothing was summarised or remembered — pick a Space for that "
            "(`braincue keep ID --space NAME`)")


class Remembered(msgspec.Struct, kw_only=True):
    """What an answer did. Counts may be 0: ``notes`` say why, and what failed."""

    session_id: int
    answer: Answer
    status: str  # the session's status now; "discarded" once deleted
    space: str | None = None
    archived: bool = False
    assertions: int = 0  # new assertions stored (superseding ones included)
    superseded: int = 0
    closed: int = 0  # of which close an open commitment or task (done, or no longer needed)
    duplicates: int = 0
    restated: int = 0  # duplicates newly recorded as said again in this session
    candidates: int = 0  # memories about the person proposed (pending review)
    redactions: int = 0
    deleted: dict[str, int] = {}
    notes: list[str] = []
    keep_status: KeepStatus | None = None  # a keep: done or failed (None: no model was needed)
    stored: dict[str, int] = {}  # a keep: the new assertions by kind
    decisions: list[str] = []  # a keep: the text of each new decision


# -- pure helpers --------------------------------------------------------------------------------


def chat(messages: Sequence[dict[str, str]]) -> list[ChatMessage]:
    return [ChatMessage(m["role"], m["content"]) for m in messages]


def frame_chars(messages: Sequence[dict[str, str]], output_type: type[Any]) -> int:
    """The length of a prompt as the model sees it (schema instruction included)."""
    framed = with_schema_instruction(chat(messages), output_schema(output_type))
    return sum(len(m.content) for m in framed)


def standing_claim(item: ExtractedAssertion) -> ExtractedAssertion:
    """A memory about the person is a lasting fact or preference; a decision, task or
    commitment a model marks as one is about the conversation, and kept as such."""
    if item.about_person and item.kind not in PERSON_KINDS:
        return msgspec.structs.replace(item, about_person=False, scope="space")
    return item


def redact_extracted(item: ExtractedAssertion,
                     gate: Gate | None = None) -> tuple[ExtractedAssertion, int]:
    """``item`` with every secret in its text fields replaced by a marker, and how many
    (``gate``: the session's, which follows the secrets said in it)."""
    found = 0
    gate = gate or Gate()

    def clean(text: str) -> str:
        nonlocal found
        result = gate.redact(text)
        found += result.count
        return result.text

    cleaned = msgspec.structs.replace(
        item,
        text=clean(item.text),
        chosen=clean(item.chosen),
        alternatives=[clean(a) for a in item.alternatives],
        reasoning=clean(item.reasoning),
        owner=clean(item.owner),
        due=clean(item.due),
    )
    return cleaned, found


def to_new_assertion(
    item: ExtractedAssertion, anchor: Chunk, session: Session
) -> NewAssertion:
    """The row to write for an extracted item anchored on ``anchor`` (said when it was).

    Only a decision keeps chosen/alternatives/reasoning, only a commitment or task an owner and
    a due date: a small model fills fields that do not apply. A memory about the person is a
    pending candidate, in the session's Space or profile-wide as the extractor said.
    """
    decision = item.kind == "decision"
    assigned = item.kind in ("commitment", "task")
    person = item.about_person
    return NewAssertion(
        kind=item.kind,
        text=clip_sentences(item.text, MAX_TEXT_CHARS),
        source="extracted",
        space_id=None if person and item.scope == "profile" else session.space_id,
        session_id=session.id,
        anchor_chunk_id=anchor.id,
        occurred_at=anchor.occurred_at,
        chosen=(item.chosen.strip() or None) if decision else None,
        alternatives=tuple(a.strip() for a in item.alternatives if a.strip()) if decision else (),
        reasoning=(item.reasoning.strip() or None) if decision else None,
        owner=(item.owner.strip() or None) if assigned else None,
        due=(item.due.strip() or None) if assigned else None,
        about_person=person,
        review_status="pending" if person else None,
    )


def _day(timestamp: float) -> str:
    return f"{dt.datetime.fromtimestamp(timestamp):%Y-%m-%d}"


def _why(error: Exception) -> str:
    return str(error) if isinstance(error, BrainCueError) else f"{type(error).__name__}: {error}"


def _plural(n: int, word: str, words: str = "") -> str:
    return f"{n} {word if n == 1 else words or word + 's'}"


def _no_steps(done: int, total: int) -> None:
    pass


def stage_steps(progress: Progress | None, stage: Stage) -> Steps:
    """The (done, total) reporter of one stage of ``progress`` (nothing when None)."""
    if progress is None:
        return _no_steps
    return functools.partial(progress, stage)


# -- the model calls -----------------------------------------------------------------------------


def readable(turns: list[Turn], settings: Settings) -> list[Turn]:
    """The turns as the model reads them: as said for the embedded engine (in a process of the
    daemon's own), every secret said masked in all of them for a model served elsewhere
    (``llm_engine`` other than embedded): only masked text leaves the daemon."""
    if settings.llm_engine == "embedded":
        return turns
    masked = mask_lines([t.text for t in turns])
    return [t if text == t.text else msgspec.structs.replace(t, text=text)
            for t, text in zip(turns, masked, strict=True)]


def spoken(turns: Sequence[Turn]) -> list[Turn]:
    """The turns that say something: "Mm-hmm." and "Okay." carry nothing a model needs, and
    leaving them out makes a long meeting's prompt a fifth shorter."""
    return [t for t in turns if not all(w in FILLER for w in words(t.text))]


def _has_items(value: Any) -> bool:
    """Whether a salvaged answer holds an item of some list (a bare topic is not worth it)."""
    if isinstance(value, dict):
        return any(_has_items(v) for v in value.values())
    return isinstance(value, list) and bool(value)


async def _plan(generator: Generator, new: NewAssertion,
                similar: Sequence[Existing]) -> Plan | None:
    """What to write for ``new`` given the ``similar`` statements, as the model rules; None when
    the model failed (the statement is then stored as separate)."""
    try:
        ruling = await generator.generate(chat(reconcile_prompt(new.text, new.kind, similar)),
                                          Ruling, max_tokens=RULING_TOKENS)
    except BrainCueError as e:
        log.warning("reconciliation failed, stored as separate: %s", e)
        return None
    return plan_from_ruling(ruling, similar, new.kind, new.text)


def _earlier_similar(facts: Sequence[tuple[NewAssertion, int]], accepted: Sequence[int],
                     vectors: Any, i: int, nearest: float) -> list[Existing]:
    """The statements of this same keep accepted before statement ``i`` and within
    ``nearest`` of it: not stored yet, so shown with negative ids (``-(index + 1)``)."""
    return [Existing(-(j + 1), facts[j][0].kind, facts[j][0].text,
                     _day(facts[j][0].occurred_at or 0.0))
            for j in accepted if float(vectors[i] @ vectors[j]) >= nearest]


def _replace_earlier(i: int, earlier: int, accepted: list[int],
                     replaces: dict[int, int]) -> None:
    """Statement ``i`` replaces the ``earlier`` statement of this keep, and whatever stored
    row that one superseded."""
    accepted.remove(earlier)
    if earlier in replaces:
        replaces[i] = replaces.pop(earlier)


def _inserted(facts: Sequence[tuple[NewAssertion, int]], accepted: Sequence[int],
              replaces: dict[int, int]) -> tuple[list[tuple[NewAssertion, int]],
                                                 list[tuple[int, int]]]:
    """The statements to insert, in order, and the (index among them, stored id) links."""
    position = {index: n for n, index in enumerate(accepted)}
    return ([facts[i] for i in accepted], [(position[i], old) for i, old in replaces.items()])


async def answer_pieces(generator: Generator, pieces: Sequence[Sequence[str]],
                        ask: Callable[[Sequence[str]], list[dict[str, str]]],
                        output_type: type[Any], salvage_type: type[T], max_tokens: int,
                        steps: Steps = _no_steps,
                        ) -> tuple[list[tuple[Sequence[str], T]], list[str]]:
    """The answers about each piece (a piece is a list of lines; ``ask`` makes its prompt), as
    ``salvage_type`` beside the lines they answer, and why the pieces that gave none failed.
    A piece whose answer is cut off keeps its complete items (:func:`salvage_json`); one that
    is cut off with nothing to keep or invalid is asked again in two halves; only what still
    fails is lost, never the rest."""
    answers: list[tuple[Sequence[str], T]] = []
    failures: list[str] = []

    async def answer(lines: Sequence[str], halves: int) -> None:
        try:
            value = await generator.generate(chat(ask(lines)), output_type,
                                             max_tokens=max_tokens)
            answers.append((lines, msgspec.convert(msgspec.to_builtins(value), salvage_type)))
            return
        except AnswerCutOff as e:
            for candidate in salvage_json(e.partial):
                try:
                    salvaged = msgspec.json.decode(candidate, type=salvage_type)
                except (msgspec.DecodeError, msgspec.ValidationError):
                    continue
                if _has_items(msgspec.to_builtins(salvaged)):
                    log.info("kept the complete items of an answer cut off at %s tokens",
                             max_tokens)
                    answers.append((lines, salvaged))
                    return
                break  # shorter candidates hold even less
            error: BrainCueError = e
        except EngineError as e:
            error = e
        if halves and len(lines) > 1:
            middle = len(lines) // 2
            await answer(lines[:middle], halves - 1)
            await answer(lines[middle:], halves - 1)
            return
        log.warning("a piece of %d lines gave no answer: %s", len(lines), error)
        failures.append(_why(error))

    steps(0, len(pieces))
    for i, piece in enumerate(pieces):
        await answer(piece, RETRY_HALVES)
        steps(i + 1, len(pieces))
    return answers, failures


def said_decisions(turns: Sequence[Turn]) -> list[tuple[Turn, ExtractedAssertion]]:
    """The decisions a long transcript's keep takes from the words said (:func:`decisions_at`:
    no model), each with the turn that states it; at most ``MAX_DECISIONS``, before
    validation. All the turns: the "Yeah." that accepts a proposal is one."""
    found = decisions_at([(t.speaker, t.text) for t in turns])[:MAX_DECISIONS]
    return [(turns[i], item) for i, item in found]


def checked_decisions(turns: Sequence[Turn]) -> list[tuple[Turn, ExtractedAssertion]]:
    """The decisions of a long transcript as its keep stores them (:func:`said_decisions`,
    each said once and validated by :func:`check_assertion`, which keeps one that only
    reports a proposal as a fact), each with the turn that states it."""
    people = validate.speakers(t.speaker for t in turns)
    texts = [t.text for t in turns]
    said: list[ExtractedAssertion] = []
    kept: list[tuple[Turn, ExtractedAssertion]] = []
    for turn, item in said_decisions(turns):
        if repeats(item, said):
            continue
        said.append(item)
        checked = check_assertion(item, people, texts)
        if checked is not None:
            kept.append((turn, checked))
    return kept


def kept_undertakings(pairs: Sequence[tuple[str, str]],
                      people: Sequence[str]) -> list[list[Undertaking]]:
    """The undertakings a keep words, grouped by owner (:func:`group_undertakings`) from all
    the turns (speaker, text): the last ``MAX_UNDERTAKINGS`` groups, where a meeting settles
    who does what."""
    return group_undertakings(find_undertakings(pairs, people))[-MAX_UNDERTAKINGS:]


def read_whole(turns: Sequence[Turn]) -> bool:
    """Whether a transcript is short enough for the model to read at once for everything; a
    longer one is read in parts for its summary and in excerpts for its assertions."""
    return sum(len(t.text) for t in spoken(turns)) <= WHOLE_TRANSCRIPT_CHARS


async def summarise(generator: Generator, context: int, session: Session,
                    turns: Sequence[Turn], *,
                    statements: Sequence[tuple[str, str]] | None = None,
                    steps: Steps = _no_steps) -> archive.Archive:
    """The validated archive of a session, in pieces when the transcript does not fit the
    model's ``context`` tokens, each piece a step. With ``statements`` (kind, text: what the
    extraction established), the sections those kinds state are those
    (:func:`archive.stated_sections`) and the model summarises parts of at most
    ``ARCHIVE_PART_CHARS``: asked about a 35-minute meeting at once, a 0.5B model wrote one
    sentence and listed proposals as decisions, and it reads a short context faster. A piece
    that fails is left out; only when every piece fails does it raise."""
    fmt = archive.format_for(session.activity)
    stated = statements is not None
    people = validate.speakers(t.speaker for t in turns)
    lines = reading_lines((t.speaker, t.text) for t in spoken(turns))
    budget = transcript_budget(
        context, ARCHIVE_TOKENS,
        frame_chars(archive.prompt(fmt, session.title, "", people, stated=stated),
                    archive.output_type(fmt, stated=stated)))
    if stated:  # in parts of even size, at least a few: each part is two or three sentences
        split = split_even(lines, min(budget, ARCHIVE_PART_CHARS), at_least=ARCHIVE_PARTS,
                           min_chars=ARCHIVE_MIN_PART_CHARS)
    else:
        split = split_even(lines, budget)
    pieces = [piece.split("\n") for piece in split]
    part = len(pieces) > 1
    answer_type = archive.output_type(fmt, stated=stated, part=part)

    def ask(piece: Sequence[str]) -> list[dict[str, str]]:
        return archive.prompt(fmt, session.title, "\n".join(piece), people, stated=stated,
                              part=part)

    answered, failures = await answer_pieces(
        generator, pieces, ask, answer_type, archive.ArchiveEnvelope,
        ARCHIVE_PART_TOKENS if part else ARCHIVE_TOKENS, steps)
    envelopes = [envelope for _, envelope in answered]
    if not envelopes:
        raise EngineError(failures[0] if failures else "no answer")
    return archive.build_archive(
        fmt, merge_envelopes(envelopes),
        # checked against the words the model read: a quote without the "uh" is still one
        [archive.TranscriptTurn(t.id, t.speaker, fluent(t.text)) for t in turns],
        None if statements is None else archive.stated_sections(fmt, statements),
    )


async def extract(generator: Generator, context: int, session: Session, turns: Sequence[Turn],
                  *, memories: bool, steps: Steps = _no_steps,
                  detected: Mapping[str, Sequence[int]] | None = None,
                  ) -> list[ExtractedAssertion]:
    """What a session established. A short transcript is read whole by the model. In a longer
    one nothing is asked of the model that the words said already state: the decisions said in
    so many words (:func:`find_decisions`: "we decided to …", "a consensus that …"), and what
    someone takes on or is given (:func:`find_undertakings`) — its owner, whether it is a
    commitment or a task, and the work when said as "I will …" / "you will …"; the model is
    asked to word only the others, one call each (shown the turns around a decision cue, the
    0.5B copied its prompt's example or the turns, and took past remarks for tasks). The
    statements are merged, validated (:func:`check_assertion`) and each kept once. Memories
    about the person only when ``memories``. Each model call is a step. Raises only when every
    call failed.

    ``detected`` (head -> indices into ``turns``: what the turn detector found, see
    :mod:`daemon.memory.detect`) adds the decisions and action items the model words from those
    turns (:mod:`daemon.memory.detected`), each checked against them."""
    said = spoken(turns)
    pairs = [(t.speaker, t.text) for t in said]
    people = validate.speakers(t.speaker for t in turns)
    whole = read_whole(turns)  # short: its own context
    extractions: list[Extraction] = []
    failures: list[str] = []
    # the words said first, at every length: what a short meeting says in so many words is
    # stored as said, and the model's reading of it adds only what they do not state
    found = checked_decisions(turns)
    # all the turns: the "Right." or "Yeah." that takes on what a "you" is given is one
    owed = [(t.speaker, t.text) for t in turns]
    undertakings = kept_undertakings(owed, people)
    if whole and pairs:
        answered, failures = await answer_pieces(
            generator, [reading_lines(pairs)], lambda lines: extraction_prompt(
                session.title, ["\n".join(lines)], memory_enabled=memories, speakers=people),
            Extraction, Extraction, EXTRACT_TOKENS, steps)
        extractions = [e for _, e in answered]
    records = sum(len(v) for v in detected.values()) if detected else 0
    total = len(undertakings) + records
    if total or not whole:  # a whole reading has counted its one call
        steps(0, total)
    recorded: list[ExtractedAssertion] = []
    if detected:
        recorded, record_failures = await worded(
            generator, owed, {h: list(v) for h, v in detected.items()}, people)
        failures += record_failures
        steps(records, total)
    taken: list[ExtractedAssertion] = []
    for n, group in enumerate(undertakings, 1):
        cue = group[0]
        plain = said_assertion(group, owed)
        if plain is not None:  # said in so many words: no model needed
            taken.append(plain)
            steps(n, total)
            continue
        try:
            answer = await generator.generate(
                chat(undertaking_prompt(owed, group)),
                Undertaken, max_tokens=UNDERTAKING_TOKENS)
        except BrainCueError as e:
            log.warning("an undertaking of %s gave no answer: %s", cue.owner, e)
            failures.append(_why(e))
        else:
            item = undertaking_assertion(answer, group, owed)
            if item is None:
                log.info("a task of %s not kept: not what was said: %r", cue.owner, answer.text)
            else:
                taken.append(item)
        steps(records + n, total)
    if failures and whole and not extractions:
        raise EngineError(failures[0])
    texts = [t.text for t in turns]
    merged = merge_extractions([Extraction(recorded), Extraction(taken), *extractions])
    checked = [i for i in (check_assertion(i, people, texts) for i in merged) if i is not None]
    decisions, checked = completed_decisions(found, checked, turns)
    checked = [i for i in checked if not repeats(i, decisions)]
    return [standing_claim(i) for i in [*decisions, *checked]][:MAX_EXTRACTED]


def completed_decisions(
    found: Sequence[tuple[Turn, ExtractedAssertion]], read: Sequence[ExtractedAssertion],
    turns: Sequence[Turn],
) -> tuple[list[ExtractedAssertion], list[ExtractedAssertion]]:
    """The decisions said in so many words (``found``, each with its turn), each worded by
    the model's reading (``read``, validated) where that states a decision best supported by
    the same turn and sharing a word of its option: the model's text and option, the option
    not taken and the reason as said where said, else the model's. Returns them and the rest
    of ``read``. A meeting's "We decided to launch Atlas on March 3rd, not in February." is
    one decision, not the readers' and the model's two."""
    rest = list(read)
    decisions: list[ExtractedAssertion] = []
    for turn, said in found:
        same = next((i for i in rest if i.kind == "decision"
                     and open_items.evidence_turn(f"{i.text} {i.chosen} {i.evidence}",
                                                  turns) is turn
                     and validate.content_words(i.chosen) & validate.content_words(said.chosen)),
                    None)
        if same is None:
            decisions.append(said)
            continue
        rest.remove(same)
        decisions.append(msgspec.structs.replace(
            same, alternatives=said.alternatives or same.alternatives,
            reasoning=said.reasoning or same.reasoning))
    return decisions, rest


# -- the service ---------------------------------------------------------------------------------


@dataclass(eq=False)
class Rememberer:
    """Answers "Keep this conversation?" for one profile's store.

    ``generator()`` returns the language model, raising a BrainCueError (e.g.
    ModelNotInstalled) when there is none; it is called only when a model is needed.
    ``settings()`` is read on every answer, so changed switches apply at once. ``quiet()``
    returns once no session is live and ``is_live()`` says whether one is: a keep waits on it
    between its model calls (None: a rememberer without live capture never waits).
    """

    store: Store
    _: KW_ONLY
    generator: Callable[[], Generator]
    settings: Callable[[], Settings]
    quiet: Quiet | None = None
    is_live: Callable[[], bool] = lambda: False
    _lock: trio.Lock = field(default_factory=trio.Lock, init=False, repr=False)

    async def remember(
        self,
        session_id: int,
        answer: Answer,
        space_id: int | msgspec.UnsetType | None = msgspec.UNSET,
        *,
        progress: Progress | None = None,
    ) -> Remembered:
        """Apply the user's answer. ``space_id``: the Space to file the session into first
        (None: out of every Space; unset: where it ran). A keep reports the steps of the
        stages it runs to ``progress``."""
        if answer not in ANSWERS:
            raise InvalidInput(f"answer: unknown value {answer!r}", fix="keep, discard or later")
        async with self._lock:
            session = await self.store.run(self.store.get_session, session_id)
            if session.status == "live":
                raise InvalidInput(f"session {session_id} is still live",
                                   fix="end it first with `braincue stop`")
            if answer == "discard":
                return await self._discard(session)
            if not isinstance(space_id, msgspec.UnsetType) and space_id != session.space_id:
                if space_id is None:
                    await self._refuse_unfiling_what_is_remembered(session)
                session = await self.store.run(self.store.file_session, session_id, space_id)
            space = (None if session.space_id is None
                     else await self.store.run(self.store.get_space, session.space_id))
            status: Literal["kept", "later"] = "later" if answer == "later" else "kept"
            if answer == "keep":  # first: a crash after the status is written still finishes it
                await self.store.run(self.store.set_keep_state, session_id, "pending")
            # the answer is recorded before any model runs: a failure below never undoes it
            session = await self.store.run(self.store.update_session, session_id, status=status)
            outcome = Remembered(session_id=session_id, answer=answer, status=status,
                                 space=None if space is None else space.name)
            if answer == "later":
                outcome.notes.append("nothing was remembered: the session stays undecided "
                                     "(keep or discard it later)")
            else:
                await self._tracked_keep(session, space, outcome, progress)
            return outcome

    async def finish_interrupted(self) -> None:
        """Finish the keeps that a stop or a crash interrupted (pending or running when the
        daemon starts), one at a time, the oldest first. A keep whose assertions were already
        written when it stopped is only marked done."""
        unfinished = await self.store.run(self.store.keep_states, statuses=("pending", "running"))
        for state in unfinished:
            if state.attempts >= MAX_KEEP_ATTEMPTS and not is_waiting(state.reason):
                log.warning("the keep of session %d was interrupted %d times: given up",
                            state.session_id, state.attempts)
                await self.store.run(self.store.set_keep_state, state.session_id, "failed",
                               f"interrupted {state.attempts} times (the daemon stopped or "
                               "crashed each time)")
                continue
            if await self.store.run(self._wrote_assertions_since, state):
                log.info("the keep of session %d had written everything before it stopped",
                         state.session_id)
                await self.store.run(self.store.set_keep_state, state.session_id, "done")
                continue
            log.info("finishing the keep of session %d, interrupted when %s", state.session_id,
                     state.status)
            try:
                outcome = await self.remember(state.session_id, "keep")
            except BrainCueError as e:  # e.g. the session is gone
                log.warning("could not finish the keep of session %d: %s", state.session_id, e)
                continue
            log.info("keep of session %d finished: %s", state.session_id,
                     outcome.keep_status or "nothing to do")

    async def finish_waiting(self) -> int:
        """Run again the keeps that wait for the language model (:mod:`daemon.memory.waiting`),
        the oldest first, until one has to wait again; returns how many finished."""
        finished = 0
        waiting = await self.store.run(self.store.keep_states, statuses=("pending",))
        for state in waiting:
            now = await self.store.run(self.store.keep_state, state.session_id)
            if now is None or now.status != "pending" or not is_waiting(now.reason):
                continue  # finished or asked again meanwhile, or not waiting for the model
            log.info("the language model answers: the keep of session %d goes on",
                     state.session_id)
            try:
                outcome = await self.remember(state.session_id, "keep")
            except BrainCueError as e:  # e.g. the session is gone
                log.warning("could not finish the keep of session %d: %s", state.session_id, e)
                continue
            if outcome.keep_status == "pending":
                break  # the engine went away again
            finished += 1
        return finished

    async def waiting(self) -> bool:
        """Whether a keep waits for the language model."""
        states = await self.store.run(self.store.keep_states, statuses=("pending",))
        return any(is_waiting(s.reason) for s in states)

    def _wrote_assertions_since(self, state: KeepState) -> bool:
        return state.status == "running" and any(
            a.source == "extracted" and a.recorded_at >= state.since
            for a in self.store.list_assertions(session_id=state.session_id,
                                                include_invalidated=True))

    async def _tracked_keep(self, session: Session, space: Space | None, out: Remembered,
                            progress: Progress | None) -> None:
        """:meth:`_keep`, its state recorded (a cancelled keep stays pending or running, to be
        finished at the next start) and what it stored summed up in ``out``."""
        before = {a.id for a in await self.store.run(self.store.list_assertions,
                                               session_id=session.id, include_invalidated=True)}
        try:
            status, reason = await self._keep(session, space, out, progress)
        except EngineUnavailable as e:  # nothing lost: it goes on once the engine answers
            status, reason = "pending", waiting_reason(e)
            out.notes.append(f"the summary and extraction wait for the language model: {e}")
        except Exception as e:
            await self.store.run(self.store.set_keep_state, session.id, "failed", _why(e))
            raise
        await self.store.run(self.store.set_keep_state, session.id, status, reason)
        out.keep_status = status
        stored = await self.store.run(self.store.list_assertions, session_id=session.id,
                                about_person=False)
        new = sorted((a for a in stored if a.id not in before), key=lambda a: a.id)
        for a in new:
            out.stored[a.kind] = out.stored.get(a.kind, 0) + 1
        out.decisions = [a.text for a in new if a.kind == "decision"]

    async def _refuse_unfiling_what_is_remembered(self, session: Session) -> None:
        """Out of every Space, an archive and assertions would be recalled everywhere — the
        leak that "no Space, nothing kept" exists to prevent."""
        archived = await self.store.run(self.store.archive, session.id)
        extracted = await self.store.run(self.store.list_assertions, session_id=session.id,
                                   about_person=False)
        if archived or extracted:
            raise InvalidInput(
                f"session {session.id} is already remembered in its Space; out of every Space "
                "its archive and assertions would be recalled everywhere",
                fix=f"discard it to forget it (`braincue discard {session.id}`), or file it "
                    "into another Space with --space",
            )

    async def _discard(self, session: Session) -> Remembered:
        reviewed = await self.store.run(
            self.store.list_assertions, session_id=session.id, about_person=True,
            statuses=["approved", "rejected", "archived"], include_invalidated=True,
        )
        deleted = await self.store.run(self.store.delete_session, session.id)
        counts = {k: v for k, v in msgspec.structs.asdict(deleted).items() if v}
        outcome = Remembered(session_id=session.id, answer="discard", status="discarded",
                             deleted=counts)
        if reviewed:
            outcome.notes.append(f"{_plural(len(reviewed), 'memory', 'memories')} you already "
                                 "reviewed from it stay (see `braincue memory list`)")
        return outcome

    async def _keep(self, session: Session, space: Space | None, out: Remembered,
                    progress: Progress | None) -> tuple[KeepStatus | None, str | None]:
        """Run the passes the switches ask for; where the keep ends up and why it failed (no
        status: nothing needed the model)."""
        settings = self.settings()
        if space is None:
            out.notes.append(NO_SPACE)
            return None, None
        if not space.memory_enabled:
            out.notes.append(f"the Space {space.name} is set to be forgotten: nothing was "
                             "summarised or extracted")
            return None, None
        if session.practice:
            out.notes.append("a practice session is never archived: nothing was summarised or "
                             "extracted")
            return None, None
        archive_on = settings.session_archive_enabled
        memory_on = settings.memory_enabled
        if not archive_on:
            out.notes.append("archiving is off (session_archive_enabled): no summary or "
                             "assertions were written")
        if not memory_on:
            out.notes.append("memory is off (memory_enabled): no memories about you were "
                             "proposed")
        if not (archive_on or memory_on):
            return None, None
        turns = await self.store.run(self.store.turns, session.id)
        if not turns:
            out.notes.append("nothing was said: there is nothing to summarise")
            return None, None
        try:
            model = self.generator()
        except BrainCueError as e:
            out.notes.append(f"nothing was summarised or extracted: {e}")
            return "failed", f"no language model: {e}"
        await self.store.run(self.store.set_keep_state, session.id, "running")
        generator = Watched(self._behind_live(model, session.id))  # a failing engine: waits
        failed = []
        context = settings.llm_context
        # what the model writes is checked for the secrets said in the session, however it
        # phrases them: one gate for the archive, assertions and candidates
        gate = Gate.of(t.text for t in turns)
        turns = readable(turns, settings)
        # the assertions first: in a long transcript they state the archive's decisions and
        # action items (:func:`summarise`)
        items: list[ExtractedAssertion] | None = None
        # a short transcript is read whole by the model; a meeting's are found by the detector
        detected = (await self._detect(turns, out)
                    if settings.keep_detector and archive_on and not read_whole(turns) else None)
        try:
            items = await extract(generator, context, session, turns, memories=memory_on,
                                  steps=stage_steps(progress, "extraction"), detected=detected)
        except Exception as e:
            _log_unexpected(e)
            failed.append(f"extraction failed: {_why(e)}")
            out.notes.append(failed[-1])
        generator.check()
        if archive_on:
            # what was decided and who owes what are the validated assertions at every
            # length (a 0.5B model writing them for a seven-turn meeting credited a
            # commitment to "the group"); the model's own only when extraction failed
            statements = (None if items is None and read_whole(turns) else
                          [(i.kind, i.text) for i in items or [] if not i.about_person])
            try:
                await self._archive(generator, context, session, turns, statements, out,
                                    stage_steps(progress, "archive"), gate)
            except Exception as e:  # a failure to summarise never breaks the keep
                _log_unexpected(e)
                failed.append(f"the archive failed: {_why(e)}")
                out.notes.append(failed[-1])
        generator.check()
        if items is not None:
            try:
                await self._store_extracted(generator, session, items, out, progress, gate,
                                            assertions=archive_on, memories=memory_on)
            except Exception as e:
                _log_unexpected(e)
                failed.append(f"extraction failed: {_why(e)}")
                out.notes.append(failed[-1])
        return ("failed", "; ".join(failed)) if failed else ("done", None)

    async def _detect(self, turns: Sequence[Turn], out: Remembered
                      ) -> dict[str, list[int]] | None:
        """The turns where the detector finds a decision settled or an action item made, or
        None when it cannot run: its file missing or altered (a note says so), no embedding
        model or another one than it was trained with (logged; the decisions and action items
        said in so many words are still read off the turns)."""
        try:
            detector = detect.shipped()
        except DetectorError as e:
            log.warning("decisions and action items not detected: %s", e)
            out.notes.append(f"decisions and action items were not detected: {e}")
            return None
        embedder = self.store.embedder
        if embedder is None or embedder.model_id != detector.embed_model:
            log.warning("decisions and action items not detected: the turn detector reads the "
                        "vectors of %s, not of %s", detector.embed_model,
                        embedder.model_id if embedder else "no embedding model")
            return None
        at, texts = detect.to_embed([t.text for t in turns])
        vectors = detect.placed(len(turns), at, await embedder.embed(texts) if at else
                                np.zeros((0, embedder.dimensions)), embedder.dimensions)
        found = detector.detected([detect.Turn(t.speaker, t.text) for t in turns], vectors)
        return {head: found[head][:most] for head, most in MAX_DETECTED.items()}

    def _behind_live(self, generator: Generator, session_id: int) -> Generator:
        if self.quiet is None:
            return generator

        async def paused(waiting: bool) -> None:
            await self.store.run(self.store.note_keep, session_id,
                           PAUSED_WHILE_LIVE if waiting else None)

        return BehindLive(generator, self.quiet,
                          lambda: self.settings().keep_pauses_while_live, is_live=self.is_live,
                          paused=paused)

    # -- archive -------------------------------------------------------------------------------

    async def _archive(self, generator: Generator, context: int, session: Session,
                       turns: Sequence[Turn], statements: Sequence[tuple[str, str]] | None,
                       out: Remembered, steps: Steps, gate: Gate) -> None:
        fmt = archive.format_for(session.activity)
        built = await summarise(generator, context, session, turns, statements=statements,
                                steps=steps)
        if not (built.topic or built.summary or any(built.sections.values()) or built.quotes):
            out.notes.append("the archive came back empty: nothing was archived")
            return
        gated = gate.redact(archive.render(built, fmt))
        await self.store.run(self.store.put_archive, session.id, gated.text)
        out.archived = True
        out.redactions += gated.count

    # -- assertions and memory candidates --------------------------------------------------------

    async def _store_extracted(self, generator: Generator, session: Session,
                               items: Sequence[ExtractedAssertion], out: Remembered,
                               progress: Progress | None, gate: Gate, *, assertions: bool,
                               memories: bool) -> None:
        chunks = await self.store.run(self.store.chunks, session_id=session.id, kind="transcript")
        anchors = [AnchorCandidate(c.id, c.body) for c in chunks]
        by_id = {c.id: c for c in chunks}
        facts: list[tuple[NewAssertion, int]] = []
        people: list[tuple[NewAssertion, int]] = []
        unanchored = 0
        credentials = 0
        for item in items:
            # without consent no claim about the person is stored, not even as a plain fact
            if (item.about_person and not memories) or (not item.about_person and not assertions):
                continue
            anchor = find_anchor(item, anchors)
            if anchor is None:
                unanchored += 1
                continue
            if gate.holds_secret(item.text):  # its point was the secret: "[redacted]" says nothing
                credentials += 1
                continue
            cleaned, found = redact_extracted(item, gate)
            new = to_new_assertion(cleaned, by_id[anchor], session)
            (people if new.about_person else facts).append((new, found))
        if unanchored:
            out.notes.append(f"{_plural(unanchored, 'extracted statement')} dropped: nothing "
                             "in the transcript supports them")
        if credentials:
            out.redactions += credentials
            out.notes.append(f"{_plural(credentials, 'extracted statement')} dropped: "
                             f"{'it' if credentials == 1 else 'they'} held a credential said "
                             "in the session")

        candidates = await self._unasked(people, session.space_id, out)
        inserts, links, restated, closures = await self._reconcile(
            generator, facts, session, out, stage_steps(progress, "reconciliation"))
        written = await self.store.run(self.store.add_assertions,
                                 [new for new, _ in inserts + candidates])
        out.assertions = len(inserts)
        out.candidates = len(candidates)
        out.redactions += sum(found for _, found in inserts + candidates)
        for index, old_id in links:
            closure = closures.get(old_id)
            try:
                await self.store.run(self.store.supersede, old_id, written[index].id,
                                     closure=closure)
                out.superseded += 1
                out.closed += closure is not None
            except BrainCueError as e:  # e.g. superseded meanwhile: both stay current
                out.notes.append(f"assertion {written[index].id} kept beside {old_id}: {e}")
        try:
            out.restated = await self.store.run(self.store.add_restatements, session.id, restated)
        except BrainCueError as e:  # what was stored stays; only the links are missing
            out.notes.append(f"could not record {_plural(len(restated), 'statement')} as said "
                             f"again here: {e}")

    async def _unasked(
        self, people: list[tuple[NewAssertion, int]], space_id: int | None, out: Remembered
    ) -> list[tuple[NewAssertion, int]]:
        """The candidates the user has not been asked about yet in a visible scope."""
        if not people:
            return []
        asked = await self.store.run(self.store.list_assertions, about_person=True,
                               include_invalidated=True)
        known = [KnownMemory(a.text, a.space_id) for a in asked]
        fresh = []
        for new, found in people:
            if already_known(new.text, space_id, known):
                continue
            known.append(KnownMemory(new.text, new.space_id))
            fresh.append((new, found))
        if len(fresh) < len(people):
            out.notes.append(f"{_plural(len(people) - len(fresh), 'memory', 'memories')} you "
                             "were already asked about not proposed again")
        return fresh

    async def _reconcile(
        self,
        generator: Generator,
        facts: list[tuple[NewAssertion, int]],
        session: Session,
        out: Remembered,
        steps: Steps,
    ) -> tuple[list[tuple[NewAssertion, int]], list[tuple[int, int]], list[NewRestatement],
               dict[int, ItemClosure]]:
        """Which new assertions to insert, (index among them, old id) supersede links, the
        stored assertions this session said again (duplicates), and the open items the links
        close (by old id: a statement that closes one is written as its closed version); each
        statement checked is a step."""
        if not facts:
            return [], [], [], {}
        steps(0, len(facts))
        scope = Scope(space_id=session.space_id, person_memory=False)
        stored_text = await self._stored_texts(scope)
        vectors = await self._embedded(facts)
        nearest = 1.0 - self.settings().reconcile_distance
        accepted: list[int] = []  # indexes into facts, in order
        replaces: dict[int, int] = {}  # index into facts -> the stored id it supersedes
        restated: dict[int, NewRestatement] = {}  # by stored id: the first time it was said
        closures: dict[int, ItemClosure] = {}  # by the open item's id
        shown: dict[int, Assertion] = {}  # the stored assertions shown to the model, by id
        failed = 0

        def said_again(stored_id: int, new: NewAssertion) -> None:
            out.duplicates += 1
            restated.setdefault(stored_id, NewRestatement(
                assertion_id=stored_id, anchor_chunk_id=new.anchor_chunk_id,
                occurred_at=new.occurred_at))

        for i, (new, _) in enumerate(facts):
            if i:
                steps(i, len(facts))  # the statements before this one are settled
            same = stored_text.get(normalise(new.text))
            if same is not None:
                said_again(same, new)
                continue
            similar: list[Existing] = []
            if vectors is not None:
                close = await self._close_to(vectors[i], scope, nearest)
                shown.update((a.id, a) for a, _ in close)
                similar += [Existing(a.id, a.kind, a.text, _day(a.occurred_at), open=is_open)
                            for a, is_open in close
                            if a.space_id == scope.space_id and a.id not in replaces.values()]
                similar += _earlier_similar(facts, accepted, vectors, i, nearest)
            if not similar:
                accepted.append(i)
                continue
            plan = await _plan(generator, new, similar)
            if plan is None:  # the model failed: stored as separate
                failed += 1
                accepted.append(i)
                continue
            if plan.action == "skip":
                log.info("duplicate of assertion %s: %r", plan.target, new.text)
                if plan.target is not None and plan.target > 0:
                    said_again(plan.target, new)
                else:  # an earlier statement of this same keep: said once here
                    out.duplicates += 1
                continue
            accepted.append(i)
            if plan.action == "supersede" and plan.target is not None:
                if plan.target < 0:  # replaces an earlier statement of this keep
                    _replace_earlier(i, -plan.target - 1, accepted, replaces)
                else:
                    replaces[i] = plan.target
                    if plan.closes is not None:
                        facts[i] = (open_items.closing_version(new, shown[plan.target]),
                                    facts[i][1])
                        closures[plan.target] = await self._closure(new, plan.closes)
        steps(len(facts), len(facts))
        if failed:
            out.notes.append(f"reconciliation failed for {_plural(failed, 'assertion')}: "
                             "stored as separate")
        inserted, links = _inserted(facts, accepted, replaces)
        return inserted, links, list(restated.values()), closures

    async def _embedded(self, facts: Sequence[tuple[NewAssertion, int]]) -> Any | None:
        """The vectors of the statements, as they would be stored; None without a model."""
        embedder = self.store.embedder
        if embedder is None:
            return None
        return await embedder.embed([assertion_body(new) for new, _ in facts])

    async def _stored_texts(self, scope: Scope) -> dict[str, int]:
        """The assertions believed now in the Space of ``scope``, by their normalised text (the
        same sentence stored twice: the oldest)."""
        current = await self.store.run(self.store.current_assertions, scope)
        stored_text: dict[str, int] = {}
        for a in reversed(current):
            if a.space_id == scope.space_id:
                stored_text.setdefault(normalise(a.text), a.id)
        return stored_text

    async def _close_to(self, vector: Any, scope: Scope,
                        nearest: float) -> list[tuple[Assertion, bool]]:
        """The stored assertions within ``nearest`` of ``vector`` (an open item by a little
        more), each with whether it is an open item."""
        hits = await self.store.run(self.store.vector_assertions, vector, scope,
                                    RECONCILE_CANDIDATES)
        found = await self.store.run(self.store.get_assertions, [h.id for h in hits])
        still_open = await self.store.run(open_items.open_ids, self.store, found)
        score = {h.id: h.score for h in hits}
        return [(a, a.id in still_open) for a in found if score[a.id] >= nearest - (
            open_items.CLOSING_SLACK if a.id in still_open else 0.0)]

    async def _closure(self, statement: NewAssertion,
                       status: Literal["done", "dropped"]) -> ItemClosure:
        """The closure a statement makes, with the turn of its chunk that said it."""
        turns = ([] if statement.anchor_chunk_id is None
                 else await self.store.run(self.store.turns_of_chunk, statement.anchor_chunk_id))
        said = open_items.evidence_turn(statement.text, turns)
        return ItemClosure(status=status, evidence_turn_id=None if said is None else said.id)


def _log_unexpected(error: Exception) -> None:
    if not isinstance(error, BrainCueError):
        log.error("remembering failed unexpectedly", exc_info=error)
