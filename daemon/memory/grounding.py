"""Grounded answers: the pure rules of ``ask`` (no model, no database, no sockets).

- **Framing**. An answer is framed by the activity it is asked in: ``interview``
  for the job family, where the model answers as the candidate, on their behalf; otherwise
  ``conversation``: the same shared rules (speakable, cited, never fabricated), a different
  role, and nobody is assessing the user, so never sell, never perform credentials, never pitch
  their background unless the question asks. The best-matching story is force-included in the
  sources in the interview family only: in a client call it would displace an actual document
  and invite the model to narrate the user's achievements.
- **Sources** are numbered [1], [2]... in the prompt. Each holds passages (a transcript chunk's
  turns, with their speakers; an archive's or a document's text; an assertion; a memory) in
  which quotes are looked up. Every source reaches the model, focused on the passages that
  bear on the question, within a fixed budget: prompt length is what the first token waits for.
- **Nothing relevant.** Fused scores are uncalibrated and never thresholded. Instead, the
  recalled material is relevant when at least one source shares a content word (stop words
  dropped, crudely stemmed) with the question — the same evidence a full-text leg would need —
  or is the interview's force-included story. When nothing is relevant the model is not asked
  at all: the answer says plainly that nothing was found. When something is, the model is still
  told to say it does not know if the sources do not answer.
- **The check before the final text is sent.** Citations of a source number that does not
  exist are dropped. Every quoted span ("…" or “…”) must be found, case- and
  whitespace-normalised, inside one passage of the source it cites (of any source, when it
  cites none); one that is not is marked ``[unverified]`` in the text and in its citation,
  never passed off. A verified quote's speaker is read off the matched passage, not the model.
  A sentence left uncited that a source supports (at least half of its content words, two at
  least: the anchoring rule of extraction) is given that source's number; small models often
  leave citations out. A sentence no source supports stays uncited.
- **The question heard from "them".** With no question typed while a session is live, the
  question is the last one somebody other than the user asked: a sentence ending with "?" or
  starting with a question word.
"""

from __future__ import annotations

import datetime as dt
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Collection, Sequence
from typing import Literal

import msgspec

from daemon.llm.generate import ChatMessage
from daemon.memory.archive import normalise
from daemon.memory.extract import content_words
from daemon.memory.validate import same_item

Framing = Literal["interview", "conversation"]
SourceKind = Literal["transcript", "archive", "document", "assertion", "memory", "context"]

INTERVIEW_FAMILY = frozenset({"job"})
ME = "me"
UNVERIFIED = "[unverified]"
MAX_SOURCE_CHARS = 700  # the matched turns with their neighbours, or an archive's best lines
MIN_SOURCE_CHARS = 300
MAX_PROMPT_SOURCE_CHARS = 500  # ~125 tokens: prompt time is most of the first token's wait
#                                (the setting ask_source_chars)
MATCHED_TURNS = 2  # of a transcript source: the turns that share most words with the question
NEIGHBOURS = 1  # turns either side of a matched one, for who said what in reply
MAX_TURN_CHARS = 360  # a matched turn longer than this is cut around its matching words
CONTEXT_TURNS = 12  # the live conversation: the latest turns, in steps of this many (see
#                     context_window), so the prompt's opening grows and stays cached
MAX_CONTEXT_TURN_CHARS = 240
MAX_CITED_QUOTE_CHARS = 240
MIN_PREFIX = 4
CHAT_OF_TWO = 2  # speakers: "you" said by one is said to the other


class Passage(msgspec.Struct, frozen=True):
    """A unit a quote must lie inside: one turn (with its speaker) or one text."""

    text: str
    speaker: str = ""
    ref: str = ""  # the turn's external ref, where it has one (an imported transcript's)
    start: float | None = None  # the turn's time, in seconds from its session's start


class Item(msgspec.Struct, frozen=True, kw_only=True):
    """A structured item a source stands for: a decision (what was chosen over what, why), a
    commitment or task (who owes it, by when, its status), a fact."""

    kind: str
    text: str
    chosen: str | None = None
    alternatives: tuple[str, ...] = ()
    reasoning: str | None = None
    owner: str | None = None
    due: str | None = None
    status: str = ""  # open | done | dropped for a commitment or task


class Source(msgspec.Struct, frozen=True, kw_only=True):
    """One numbered source of an answer."""

    n: int
    kind: SourceKind
    title: str  # the session's or document's title
    passages: tuple[Passage, ...]
    date: float = 0.0  # unix time: the session's start, the document's date, when it was said
    session_id: int | None = None
    document_id: int | None = None
    chunk_id: int | None = None
    label: str = ""  # what it is, in the prompt: "decision", "memory about you", ...
    item: Item | None = None  # the structured item it stands for (an assertion's)

    def text(self, me: str = ME) -> str:
        """The passages, one a line, each turn after its speaker (the user's called ``me``)."""
        return "\n".join(
            f"{me if _is_me(p.speaker) else p.speaker}: {p.text}" if p.speaker else p.text
            for p in self.passages
        )


class Cited(msgspec.Struct, frozen=True, kw_only=True):
    """A source the final answer cites, with the quote that stands for it."""

    source: Source
    quote: str
    speaker: str
    verified: bool


class Checked(msgspec.Struct, frozen=True):
    """The final answer: its text after the check, and the sources it cites, by number."""

    text: str
    citations: list[Cited]
    unverified: int = 0  # quotes marked
    dropped: int = 0  # citations of sources that do not exist
    attributed: int = 0  # citations added to sentences a source supports


# -- framing -------------------------------------------------------------------------------------


def framing_for(activity: str) -> Framing:
    """``interview`` for the job family, ``conversation`` for every other activity."""
    return "interview" if activity in INTERVIEW_FAMILY else "conversation"


def includes_story(framing: Framing) -> bool:
    """Whether the best-matching story is force-included: in the interview family only."""
    return framing == "interview"


_STORY = re.compile(r"\b(stor(?:y|ies)|star)\b", re.IGNORECASE)


def story_like(title: str, filename: str = "") -> bool:
    """A document of stories to tell (a STAR story bank): named so in its title or file name."""
    return bool(_STORY.search(title) or _STORY.search(re.sub(r"[_.-]+", " ", filename)))


_SHARED_RULES = """\
Rules:
- Use only the numbered sources below. They are the user's own recorded conversations, \
documents and memories.
- After each statement, cite the source it comes from by its number in square brackets, \
like [1].
- To quote someone, copy their words exactly from a source, inside double quotes, and cite it.
- Never invent facts, names, numbers or quotes. If the sources do not answer the question, \
say plainly that you do not know.
- Keep it short and speakable: two to four plain sentences, no lists, no headings."""

_ROLES: dict[Framing, str] = {
    "interview": (
        "You are the candidate in a job interview, answering the interviewer's question on the "
        "candidate's behalf, in the first person, as they would say it aloud while the "
        "interviewer listens. Ground the answer in the candidate's own experience from the "
        "sources; when a story fits the question, tell it briefly: the situation, what you "
        "did, the result."
    ),
    "conversation": (
        "You are the user's memory of their own conversations. Answer for the user, plainly, "
        "the way a colleague who was there would remind them. Nobody is assessing them here, "
        "so never sell, never perform credentials, and never pitch their background unless "
        "the question asks."
    ),
}


# How the user's own turns are labelled for the model: as the one it answers for.
USER_LABELS: dict[Framing, str] = {"interview": "Me (the candidate)", "conversation": "You"}

# What a question asks for decides how long its answer is (:func:`question_kind`):
# - an **account** of an exchange (a summary; what was discussed, presented, decided,
#   concluded): several people said it, and four or five sentences are what it takes;
# - a **fact** (who, when, where, which, how many / long / often / much / old, and "what" asked
#   of a thing rather than of what someone thought or said), whatever exchange it names;
# - **other** (why, how, what someone thought, felt, said or proposed).
# A fact is answered in one short sentence, other in two or three: with the closest turns to
# read and a copied heading taken out (:func:`unlabelled`), one sentence scored higher on
# the dev chats than two or three on each of two samples of 200 questions (by 1.4 and 0.2 F1) and
# declined as many never-said ones or more (docs/benchmarks/ask.md). An account's sentences are
# not asked to be short: asked for "three or four short sentences", the 0.5B wrote hardly
# more than before (a median 30 words against 27; without "short", 40; the gold's are 64).
# Asked for "four or five" rather than "three or four", it wrote hardly longer (a median 45
# words against 44 given a meeting's gold span) but better: ROUGE-1 28.4 against 27.7, higher in
# each of the five series (docs/benchmarks/ask.md).
QuestionKind = Literal["account", "fact", "other"]

# Repeated last, right before the answer: a small model follows the instruction it read last.
# Each as long as the others, and none with an example to copy: the 0.5B writes the words of
# an instruction into its answer (docs/benchmarks/ask.md).
ANSWER_FORMATS: dict[QuestionKind, str] = {
    "account": "Answer in four or five sentences, citing the sources as [1].",
    "fact": "Answer in one short sentence, citing the source as [1].",
    "other": "Answer in two or three short sentences, citing the sources as [1].",
}

_ACCOUNT = re.compile(
    r"\b(?:summar\w*|discuss\w*|talk(?:s|ed|ing)?\s+about|decid\w*|decisions?|conclu\w*"
    r"|present(?:s|ed|ing|ations?)|opinions?|perspectives?|mainly\s+about)\b", re.IGNORECASE)
_FACT_OPENERS = frozenset({"who", "whom", "whose", "when", "where", "which"})
_HOW_FACTS = frozenset({"many", "much", "long", "often", "old", "far"})
_AUXILIARIES = frozenset({"is", "are", "was", "were", "be", "been", "do", "does", "did", "has",
                          "have", "had", "will", "would", "can", "could", "should", "may",
                          "might", "must"})
# "what" asked of what someone thought, felt, said or did about something is not a fact
_VIEW = re.compile(
    r"\b(?:think|thinks|thought|feel|feels|felt|say|says|said|tell|tells|told|describ\w*"
    r"|explain\w*|mention\w*|propos\w*|suggest\w*|recommend\w*|agree\w*|disagree\w*"
    r"|learn\w*|handl\w*)\b", re.IGNORECASE)


def question_kind(question: str) -> QuestionKind:
    """What ``question`` asks for (see :data:`ANSWER_FORMATS`), from its words alone: a fact
    when it opens with who / when / where / which / how many (long, often, much, old, far);
    else an account when it names an exchange (summarise, discuss, talk about, present,
    decide, conclude, opinion, "mainly about"); else a fact when it opens with "what" and a
    thing ("What city did Omar suggest?") or asks "what" of a thing, not of what someone
    thought, felt, said or proposed ("What is Lena's favourite book?", not "What did Tom say
    about the budget?"); else other (why, how, what someone thought)."""
    words = [w for w in re.findall(r"[^\W\d_]+(?:'[^\W\d_]+)?",
                                   question.lower().replace("’", "'")) if w not in _FILLERS]
    first, second = [*words, "", ""][:2]
    if first in _FACT_OPENERS or (first == "how" and second in _HOW_FACTS):
        return "fact"
    if _ACCOUNT.search(question):
        return "account"
    if first in ("what's", "whats") or (first == "what" and second in _AUXILIARIES):
        return "other" if _VIEW.search(question) else "fact"
    return "fact" if first == "what" and second else "other"  # "What city did Omar suggest?"


def answer_format(question: str) -> str:
    """The last instruction, on the answer's length, for ``question``: by its kind."""
    return ANSWER_FORMATS[question_kind(question)]


def system_prompt(framing: Framing) -> str:
    return f"{_ROLES[framing]}\n\n{_SHARED_RULES}"


def build_prompt(
    framing: Framing,
    question: str,
    sources: Sequence[Source],
    budget: int = MAX_PROMPT_SOURCE_CHARS,
    keep: Collection[int] = (),
    *,
    fitted: bool = False,
) -> list[ChatMessage]:
    """The chat messages that ask the model for a cited answer (the recalled sources fitted to
    ``budget`` characters, the ones numbered in ``keep`` whatever it, :func:`fit_sources`;
    ``fitted``: the sources are what the model reads already, chosen within the budget).

    The sources go into the system message and the user's message is the question alone: with
    the sources in the user's message, the small model lists them back instead of answering.
    The conversation going on now (a ``context`` source) opens them, as it is, before the
    recalled sources: the instructions and it are the same for every question asked while it
    grows (:func:`prompt_prefix`), so the model's state for them can be kept and only the
    recalled sources and the question cost time when one is asked."""
    context = [s for s in sources if s.kind == "context"]
    recalled = [s for s in sources if s.kind != "context"]
    read = recalled if fitted else fit_sources(recalled, question, budget, keep)
    blocks = [_block(s, framing) for s in read]
    system = (prompt_prefix(framing, context[0] if context else None)[0].content
              + "Sources:\n\n" + "\n\n".join(blocks))
    return [ChatMessage("system", system),
            ChatMessage("user", f"{question}\n\n{answer_format(question)}")]


def prompt_prefix(framing: Framing, context: Source | None = None) -> list[ChatMessage]:
    """What every prompt of ``build_prompt`` begins with for this framing and conversation: the
    instructions and the conversation so far (the message is left open: sources follow)."""
    opening = "" if context is None else f"{_block(context, framing)}\n\n"
    return [ChatMessage("system", f"{system_prompt(framing)}\n\n{opening}")]


def _block(source: Source, framing: Framing) -> str:
    when = f"{_day(source.date)} · " if source.date else ""
    label = f" ({source.label})" if source.label else ""
    return f"[{source.n}] {when}{source.title}{label}\n{source.text(me=USER_LABELS[framing])}"


def context_window(turn_count: int, step: int = CONTEXT_TURNS) -> int:
    """Where the live conversation shown to the model starts, of ``turn_count`` turns: the
    latest ``step`` to ``2 * step - 1`` turns, the start moving in steps of ``step`` — so while
    a conversation grows, what the model read before stays the start of what it reads next."""
    return max(0, (turn_count - step) // step * step)


# Words that only acknowledge ("Yeah.", "Mm-hmm.", "Uh-huh, okay."): a turn of them alone is no
# context for anything.
_BACKCHANNEL = content_words("""
    yeah yes yep yup nope okay hmm mhm mmhmm huh uh uhhuh umm hmm mm mmm right alright sure
    cool great good fine wow well ahh ooh aha exactly indeed true totally thanks
""")


# Words of a sentence that only greets, thanks, praises or acknowledges ("Thanks, Priya!", "Wow,
# that's awesome!", "Good luck!"): with the names of who is talking, a sentence of them alone
# carries nothing a question could be answered from.
_PHATIC = _BACKCHANNEL | content_words("""
    hey hi hello bye thanks thank congrats congratulations awesome amazing cool great wow nice
    glad lol haha omg oh yay woohoo yum incredible fantastic wonderful sweet luck proud
""")


# and, in an answer, what a pasted turn says to the room ("Project Manager said: So, hello
# everyone [1].", "Marketing said: Fabulous [4].")
_TO_THE_ROOM = _PHATIC | content_words("""
    everyone everybody guys folks fabulous excellent brilliant lovely superb nah
""")


def without_phatic(turn: Passage, names: Collection[str] = ()) -> Passage:
    """``turn`` without its sentences that only greet, thank, praise or acknowledge: a
    sentence whose content words are all such words or ``names`` (the speakers' names,
    content-word form), one of them at least such a word ("Thanks, Priya!" goes, "Design."
    stays). A turn of nothing else is left whole: it is skipped as context where it is read."""
    units = [s.strip() for s in _SENTENCE.findall(turn.text) if s.strip()]
    kept = [s for s in units if not _only_phatic(content_words(s), names)]
    if not kept or len(kept) == len(units):
        return turn
    return msgspec.structs.replace(turn, text=" ".join(kept))


def sentence_units(text: str) -> list[str]:
    """``text`` cut into its sentences, each stripped (empty ones left out)."""
    return [s.strip() for s in _SENTENCE.findall(text) if s.strip()]


def _only_phatic(said: set[str], names: Collection[str],
                 phatic: set[str] = _PHATIC) -> bool:
    return bool(said & phatic) and said <= phatic | set(names)


def compact_turns(
    turns: Sequence[Passage],
    question: str,
    *,
    matched: int = MATCHED_TURNS,
    neighbours: int = NEIGHBOURS,
    limit: int = MAX_SOURCE_CHARS,
) -> tuple[Passage, ...]:
    """The turns of a transcript passage that bear on ``question``, instead of all of them.

    The ``matched`` turns sharing most content words with the question — each word weighed by
    how few of the turns share it (inverse turn frequency), and on a tie the turn said by the
    speaker the question names first (a turn shares none: not matched; when none does, the one
    saying most) — each with up to ``neighbours`` turns
    either side that say something (a turn without a content word — "Mm-hmm.", "Okay.",
    "Thanks, Priya!" — is no context and is skipped, not counted; a matched turn that asks a
    question takes one
    more turn after it instead of those before: its answer), in their order, within
    ``limit`` characters:
    the best match first, then its neighbours, then the next match. A matched turn longer than
    :data:`MAX_TURN_CHARS` is cut around its matching words. Every turn is read without its
    sentences that only greet, thank or praise (:func:`without_phatic`): in a chat most turns
    open with one ("Wow, Ravi! That's awesome!"), and the characters go to what was said.
    """
    if not turns:
        return ()
    names = {w for t in turns for w in content_words(t.speaker)}
    turns = [without_phatic(t, names) for t in turns]
    wanted = content_words(question)
    # a turn that only acknowledges or thanks ("Mm-hmm.", "Thanks, Priya!") says nothing
    words = [set() if _only_phatic(said := content_words(t.text), names) else said - _BACKCHANNEL
             for t in turns]
    hits = [{w for w in wanted if shares_word({w}, have)} for have in words]
    # a word most turns share ("remote", "design" in a meeting about a remote's design) tells
    # the turns apart less than one a few share ("battery")
    spread = Counter(w for found in hits for w in found)
    weight = {w: math.log((len(turns) + 1) / n) for w, n in spread.items()}
    shared = [sum(weight[w] for w in found) for found in hits]
    # between turns that match as well, the one said by whom the question names ("What did
    # the Marketing think of ...?")
    named = [bool(words[i]) and bool(t.speaker) and shares_word(wanted, content_words(t.speaker))
             for i, t in enumerate(turns)]
    order = sorted((i for i in range(len(turns)) if shared[i]),
                   key=lambda i: (-shared[i], -named[i], i))
    if not order:
        order = [max(range(len(turns)), key=lambda i: (len(words[i]), -i))]
    chosen: dict[int, Passage] = {}
    used = 0

    def take(i: int, passage: Passage) -> bool:
        nonlocal used
        if i in chosen:
            return True
        if used + prompt_chars(passage) > limit:
            return False
        chosen[i] = passage
        used += prompt_chars(passage)
        return True

    for i in order[:matched]:
        if not take(i, _cut_turn(turns[i], wanted)):
            break
        # a turn that asks is answered by the turns after it: they are its context
        asks = is_question(_SENTENCE.findall(turns[i].text)[-1] if turns[i].text else "")
        for step, wanted_here in ((-1, 0 if asks else neighbours), (1, neighbours + asks)):
            j, found = i + step, 0
            while 0 <= j < len(turns) and found < wanted_here:
                if words[j]:
                    found += 1
                    take(j, _cut_turn(turns[j], wanted))
                j += step
    return tuple(chosen[i] for i in sorted(chosen))


def _cut_turn(turn: Passage, wanted: set[str], limit: int = MAX_TURN_CHARS) -> Passage:
    """``turn`` cut to about ``limit`` characters around the sentence sharing most words with
    ``wanted`` (a short turn is left whole)."""
    if len(turn.text) <= limit:
        return turn
    units = [Passage(s.strip(), turn.speaker) for s in _SENTENCE.findall(turn.text) if s.strip()]
    kept = focus_passages(units, wanted, limit)
    return msgspec.structs.replace(turn, text=" ".join(p.text for p in kept))


def fit_sources(
    sources: Sequence[Source],
    question: str = "",
    budget: int = MAX_PROMPT_SOURCE_CHARS,
    keep: Collection[int] = (),
) -> list[Source]:
    """The sources as the model reads them, best first: each focused on what bears on
    ``question`` within an equal share of ``budget`` characters (at least
    :data:`MIN_SOURCE_CHARS`, at most :data:`MAX_SOURCE_CHARS`), as many as fit the budget —
    the first always, the rest while they fit (a budget too small for all of them leaves the
    last ones out rather than cutting every one to nothing) — and those numbered in ``keep``
    (an answer's forced sources: every item a question over items asked for) whatever the
    budget. The prompt's length is what a small model's first token waits for."""
    if not sources:
        return []
    share = budget // len(sources)
    limit = max(min(MIN_SOURCE_CHARS, budget), min(MAX_SOURCE_CHARS, share))
    fitted: list[Source] = []
    used = 0
    for source in sources:
        focused = focus_source(source, question, limit)
        size = sum(prompt_chars(p) for p in focused.passages)
        if fitted and source.n not in keep and used + size > budget:
            continue  # a shorter one after it may still fit
        fitted.append(focused)
        used += size
    return fitted


def focus_source(source: Source, question: str, limit: int) -> Source:
    """``source`` cut to about ``limit`` characters around the passage that shares most words
    with ``question`` (the latest turns, for the conversation going on now), in order; a
    speakerless text is cut at its lines first."""
    if len(source.text()) <= limit:
        return source
    units = [Passage(line, p.speaker, p.ref) for p in source.passages
             for line in (p.text.splitlines() if not p.speaker else [p.text]) if line.strip()]
    wanted = None if source.kind == "context" else content_words(question)
    return msgspec.structs.replace(source, passages=focus_passages(units, wanted, limit))


def focus_passages(
    units: Sequence[Passage], wanted: set[str] | None, limit: int
) -> tuple[Passage, ...]:
    """The run of ``units`` around the one sharing most of ``wanted`` (None: the last one)
    that fits ``limit`` characters; a unit alone too long is cut and ends with "…"."""
    if wanted is None:
        best = len(units) - 1
    else:
        shared = [sum(1 for w in wanted if shares_word({w}, content_words(u.text))) for u in units]
        best = max(range(len(units)), key=lambda i: (shared[i], -i))
    used = prompt_chars(units[best])
    if used > limit:
        text = units[best].text[: max(limit - len(units[best].speaker) - 3, 1)].rstrip()
        return (msgspec.structs.replace(units[best], text=text + "…"),)
    low, high = best, best + 1
    grew = True
    while grew:
        grew = False
        if high < len(units) and used + prompt_chars(units[high]) <= limit:
            used, high, grew = used + prompt_chars(units[high]), high + 1, True
        if low > 0 and used + prompt_chars(units[low - 1]) <= limit:
            used, low, grew = used + prompt_chars(units[low - 1]), low - 1, True
    return tuple(units[low:high])


def prompt_chars(passage: Passage) -> int:
    """The characters ``passage`` takes in the prompt: its speaker, its text, a line's end."""
    return len(passage.text) + (len(passage.speaker) + 2 if passage.speaker else 0) + 1


def _day(timestamp: float) -> str:
    """A source's date as it is said ("4 May 2023"): the model copies the form it reads into
    a spoken answer, and "in 2023-05-04" is not said (nor is it fewer tokens: one a digit)."""
    day = dt.datetime.fromtimestamp(timestamp)
    return f"{day.day} {_MONTHS[day.month - 1]} {day.year}"


_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December")
# a day as a heading gives it, whatever the day ("4 May 2023 · "): a model copying a heading
# may give it another source's date
_HEADING_DAY = rf"\d{{1,2}} (?:{'|'.join(_MONTHS)}) \d{{4}} · "


# -- relevance -----------------------------------------------------------------------------------


def relevant(question: str, sources: Sequence[Source], *, always: Sequence[int] = ()) -> bool:
    """Whether anything recalled bears on ``question``: a source whose title or a passage
    shares a content word with it, or one of the source numbers in ``always`` (the forced
    story). A passage that holds the question itself (the turn in which it was asked) is no
    evidence about it."""
    if any(s.n in always for s in sources):
        return True
    wanted = content_words(question)
    asked = quote_form(question)
    for source in sources:
        texts = [p.text for p in source.passages if not asked or asked not in quote_form(p.text)]
        if shares_word(wanted, content_words(" ".join([source.title, *texts]))):
            return True
    return False


def pick_story(question: str, candidates: Sequence[tuple[int, str]]) -> int | None:
    """Of story chunks ``(id, text)``, the one sharing the most content words with
    ``question`` (the first on a tie, so a bank's opening story when none matches)."""
    wanted = content_words(question)
    best: tuple[int, int] | None = None
    for chunk_id, text in candidates:
        words = content_words(text)
        shared = sum(1 for q in wanted if shares_word({q}, words))
        if best is None or shared > best[0]:
            best = (shared, chunk_id)
    return None if best is None else best[1]


def shares_word(wanted: set[str], words: set[str]) -> bool:
    """Whether a word of ``wanted`` is in ``words``, or one is a prefix of the other (four
    letters at least: "decid" and "decide", "pric" and "price" are one word to a reader)."""
    if wanted & words:
        return True
    return any(
        (w.startswith(q) or q.startswith(w)) and min(len(q), len(w)) >= MIN_PREFIX
        for q in wanted for w in words
    )


# Words that say an answer is about a discussion without saying anything of it: "the group
# discussed the battery" tells the asker nothing "what did the group discuss about the battery?"
# did not.
_REPORTING_WORDS = content_words("""
    discuss discussion talk talked mention mentioned say said group team meeting meetings
    people everyone regarding topic topics issue issues point points idea ideas thing things
""")


def echoes_question(answer: str, question: str) -> bool:
    """Whether ``answer`` only restates ``question``: it has content words and every one of
    them is the question's or a reporting word ("discussed", "the group"). Deterministic: the
    same word rule as relevance, no model. An empty answer is not an echo (it says nothing
    at all, which is reported apart)."""
    text = _CITE.sub(" ", answer).replace(UNVERIFIED, " ")
    said = content_words(text)
    if not said or set(_NUMBER.findall(text)) - set(_NUMBER.findall(question)):
        return False  # a number the question did not give is an answer ("40 points")
    asked = content_words(question) | _REPORTING_WORDS
    return all(shares_word({word}, asked) for word in said)


def passages_answer(question: str, sources: Sequence[Source], count: int = 2) -> str:
    """An answer made of the recalled passages that share most words with ``question``, quoted
    and cited (one per source, ``count`` at most): what is said instead of an answer that only
    restated the question. Deterministic; the quotes are verbatim, so the check verifies them."""
    wanted = content_words(question)
    asked = quote_form(question)
    best: list[tuple[int, int, Source, Passage]] = []
    for source in sources:
        if source.kind == "context":
            continue
        scored = [(sum(1 for w in wanted if shares_word({w}, content_words(p.text))), p)
                  for p in source.passages if asked not in quote_form(p.text)]
        if scored:
            shared, passage = max(scored, key=lambda sp: sp[0])
            if shared:
                best.append((shared, -source.n, source, passage))
    best.sort(key=lambda b: (b[0], b[1]), reverse=True)
    said = []
    for _, _, source, passage in best[:count]:
        quote = _excerpt(passage.text).rstrip("…").strip()
        who = "You" if _is_me(passage.speaker) else passage.speaker
        said.append(f'{who} said: "{quote}" [{source.n}].' if who else f'"{quote}" [{source.n}].')
    return " ".join(said) or "The sources say nothing more about this than the question does."


def dont_know(space: str | None) -> str:
    """The plain answer when nothing relevant was recalled (no model is asked)."""
    if space:
        return f"I don't know: I found nothing about this in your memory of {space}."
    return ("I don't know: I found nothing about this in your profile-wide memory (what was "
            "kept in a Space is recalled when you ask within that Space).")


# -- the question heard from "them" --------------------------------------------------------------

_QUESTION_OPENERS = """
    what what's whats how how's why when where which who who's whom whose can could would will
    do does did is are was were should shall may might have has had tell describe explain walk
    any anything
"""
_QUESTION_WORDS = frozenset(_QUESTION_OPENERS.split())
_WH = "what how why when where which who whom whose"
_WH_WORDS = frozenset(_WH.split())
# the verbs a question turns round ("When did Omar …?"): said of itself it would not read
_INVERTED = """
    do does did is are was were am can could would will should shall may might have has had
"""
_INVERTING = frozenset(_INVERTED.split())
_FILLER_WORDS = "so and but okay ok well now then alright right um uh"
_FILLERS = frozenset(_FILLER_WORDS.split())
_SENTENCE = re.compile(r"[^.!?…]+[.!?…]*")


class Said(msgspec.Struct, frozen=True):
    """A turn of the conversation, as the question finder needs it."""

    speaker: str
    text: str


def _is_me(speaker: str) -> bool:
    return speaker.casefold() == ME


def is_question(sentence: str) -> bool:
    text = sentence.strip().strip("\"'“”‘’()")
    if not text:
        return False
    if text.endswith("?"):
        return True
    words = re.findall(r"[^\W_]+(?:'[^\W_]+)?", text.lower().replace("’", "'"))
    first = next((w for w in words if w not in _FILLERS), "")
    return first in _QUESTION_WORDS


def last_question(turns: Sequence[Said], me: str = ME) -> Said | None:
    """The last question asked by someone other than ``me``: that turn's last question
    sentence (with its speaker), or None when they asked nothing."""
    for turn in reversed(turns):
        if turn.speaker.casefold() == me.casefold():
            continue
        sentences = [s.strip() for s in _SENTENCE.findall(turn.text) if s.strip()]
        for sentence in reversed(sentences):
            if is_question(sentence):
                return Said(turn.speaker, " ".join(sentence.split()))
    return None


# -- the check before the final text is sent -----------------------------------------------------

_CITE = re.compile(r"\s?\[(\d+(?:\s*,\s*\d+)*)\]")
# a transcript's note of what happened, not what was said ("[shares a photo: ...]", "[laughs]")
_NOTE = re.compile(r"\[[^\]]*\][.!]?")
_QUOTE = re.compile(r"\"([^\"\n]{1,500})\"|“([^”\n]{1,500})”")
_OPENS = "\x00"  # where a copied source heading was: its number between two of these
_SAID = re.compile(r"([^.!?\[\]]{1,60}?) said: ")  # an answer's "Marketing said: ..."
_EDGE = re.compile(r"^[\s\"'“”‘’«».,;:!?…]+|[\s\"'“”‘’«».,;:!?…]+$")


def quote_form(text: str) -> str:
    """How quotes are compared: case and whitespace normalised, typographic apostrophes plain,
    edge punctuation ignored."""
    text = unicodedata.normalize("NFKC", text).replace("’", "'").replace("‘", "'")
    return normalise(_EDGE.sub("", text))


def find_quote(quote: str, sources: Sequence[Source]) -> tuple[Source, Passage] | None:
    """The first source and passage that contain ``quote`` verbatim (normalised)."""
    needle = quote_form(quote)
    if not needle:
        return None
    for source in sources:
        for passage in source.passages:
            if needle in quote_form(passage.text):
                return source, passage
    return None


def drop_unknown_citations(text: str, known: set[int]) -> tuple[str, int]:
    """Remove citations of source numbers that do not exist; returns the text and how many."""
    dropped = 0

    def keep_known(match: re.Match[str]) -> str:
        nonlocal dropped
        numbers = [int(n) for n in re.findall(r"\d+", match[1])]
        kept = [n for n in numbers if n in known]
        dropped += len(numbers) - len(kept)
        if not kept:
            return ""
        lead = match[0][: len(match[0]) - len(match[0].lstrip())]
        return f"{lead}[{', '.join(str(n) for n in kept)}]"

    return _CITE.sub(keep_known, text), dropped


def cited_numbers(text: str) -> list[int]:
    """The source numbers cited in ``text``, in order of first citation."""
    seen: list[int] = []
    for match in _CITE.finditer(text):
        for n in re.findall(r"\d+", match[1]):
            if int(n) not in seen:
                seen.append(int(n))
    return seen


def _quote_cites(text: str, start: int, end: int) -> list[int]:
    """The sources a quote at ``text[start:end]`` cites: the citations after it up to the end
    of its sentence, else the ones earlier in its sentence."""
    after = text[end:]
    stop = _SENTENCE_END.search(after)
    following = cited_numbers(after[: stop.end() if stop else len(after)])
    if following:
        return following
    before = text[:start]
    starts = [m.end() for m in _SENTENCE_END.finditer(before)]
    return cited_numbers(before[starts[-1] if starts else 0:])


_PUNCT_BEFORE_CITE = re.compile(r"\s*[,;:]\s*(?=\[\d+(?:\s*,\s*\d+)*\])")


def check_answer(text: str, sources: Sequence[Source], question: str = "") -> Checked:
    """Check the model's answer before it is sent (see the module docstring)."""
    by_n = {s.n: s for s in sources}
    text, dropped = drop_unknown_citations(text.strip(), set(by_n))
    text = _PUNCT_BEFORE_CITE.sub(" ", text)  # "Paris, [1]": the clause it ended is gone
    quotes: dict[int, tuple[str, str, bool]] = {}  # n -> (quote, speaker, verified)
    out: list[str] = []
    unverified = 0
    last = 0
    for match in _QUOTE.finditer(text):
        quote = match[1] if match[1] is not None else match[2]
        if not quote_form(quote):
            continue
        cites = [n for n in _quote_cites(text, match.start(), match.end()) if n in by_n]
        found = find_quote(quote, [by_n[n] for n in cites] or list(sources))
        out.append(text[last:match.end()])
        last = match.end()
        if found is None:
            unverified += 1
            out.append(f" {UNVERIFIED}")
            for n in cites:  # a citation shows a verified quote of its source first
                quotes.setdefault(n, (_clean_quote(quote), "", False))
        else:
            source, passage = found
            if not quotes.get(source.n, ("", "", False))[2]:
                quotes[source.n] = (_clean_quote(quote), passage.speaker, True)
    out.append(text[last:])
    final, attributed = attribute("".join(out), sources)
    citations = []
    for n in cited_numbers(final):
        source = by_n[n]
        if n in quotes:
            quote, speaker, verified = quotes[n]
        else:
            passage = best_passage(source, " ".join([*citing(final, n), question]))
            quote, speaker, verified = _excerpt(passage.text), passage.speaker, True
        citations.append(Cited(source=source, quote=quote, speaker=speaker, verified=verified))
    return Checked(text=final, citations=citations, unverified=unverified, dropped=dropped,
                   attributed=attributed)


# A sentence ends at its punctuation, with the citations that follow it ("… euros. [1]"), or
# at a line break.
# (an initial is no end: "J. K. Rowling")
_SENTENCE_END = re.compile(
    r"(?<!\b[A-Z])[.!?…]+(?:\s*\[\d+(?:\s*,\s*\d+)*\])*(?=\s|$)|(?=\n)")
_TRAILING_PUNCT = re.compile(r"^(.*?)([.!?…]*)$", re.DOTALL)


def sentences(text: str) -> list[str]:
    """``text`` cut into sentences and the whitespace between them (joined, they are the text)."""
    pieces: list[str] = []
    start = 0
    for match in _SENTENCE_END.finditer(text):
        end = match.end()
        if end < start:
            continue
        gap = end + len(text[end:]) - len(text[end:].lstrip())
        if end > start:
            pieces.append(text[start:end])
        if gap > end:
            pieces.append(text[end:gap])
        start = max(start, gap)
    if start < len(text):
        pieces.append(text[start:])
    return pieces


def whole_sentences(text: str) -> str:
    """``text`` without the sentence it was cut off in (an answer stopped at its length
    limit); all of it when no sentence of it ended."""
    pieces = sentences(text.rstrip())
    if len(pieces) > 1 and not _SENTENCE_END.search(pieces[-1]):
        return "".join(pieces[:-1]).rstrip()
    return text


def citing(text: str, n: int) -> list[str]:
    """The sentences of ``text`` that cite source ``n``."""
    return [s for s in sentences(text) if n in cited_numbers(s)]


def supporting_source(sentence: str, sources: Sequence[Source]) -> Source | None:
    """The source with a passage holding at least half of the sentence's content words (two at
    least, when it has two): the anchoring rule of extraction. The most shared wins; the first
    source on a tie."""
    words = content_words(sentence.replace(UNVERIFIED, ""))
    if not words:
        return None
    needed = max(min(2, len(words)), round(len(words) * 0.5))
    best: tuple[int, Source] | None = None
    for source in sources:
        for passage in source.passages:
            have = content_words(passage.text)
            shared = sum(1 for word in words if shares_word({word}, have))
            if shared >= needed and (best is None or shared > best[0]):
                best = (shared, source)
    return None if best is None else best[1]


def attribute(text: str, sources: Sequence[Source]) -> tuple[str, int]:
    """Cite, in ``text``, each uncited sentence that a source supports (small models often
    leave their citations out); a sentence no source supports stays uncited. Returns the text
    and how many citations were added."""
    added = 0
    pieces = sentences(text)
    for i, piece in enumerate(pieces):
        if not piece.strip() or cited_numbers(piece):
            continue
        source = supporting_source(piece, sources)
        if source is None:
            continue
        match = _TRAILING_PUNCT.match(piece.rstrip())
        assert match is not None  # the pattern matches any text
        body, punct = match[1], match[2]
        trailing = piece[len(piece.rstrip()):]
        pieces[i] = f"{body} [{source.n}]{punct}{trailing}"
        added += 1
    return "".join(pieces), added


def voiced(text: str, sources: Sequence[Source]) -> str:
    """``text`` with each sentence that speaks in the first person (:func:`_speaks_as_i`),
    outside a quote, opened by whose words they are: a small model pastes a turn ("I gave a
    presentation [1].") and the reader cannot tell who "I" is. Whose: the speaker of the
    cited sources' passage sharing most of its words ("Project Manager said: I gave a
    presentation [1]."; the user's "You said: ..."); not repeated while the sentences before
    are theirs already."""
    by_n = {s.n: s for s in sources}
    pieces = sentences(text)
    last: str | None = None
    for i, piece in enumerate(pieces):
        if not piece.strip():
            continue
        label = _SAID.match(piece.strip())
        words = _QUOTE.sub(" ", _CITE.sub(" ", piece))
        if label is not None or not _speaks_as_i(words):
            last = label[1] if label is not None else None
            continue
        said = content_words(words)
        passages = [p for n in cited_numbers(piece) if n in by_n for p in by_n[n].passages]
        best = max(passages, key=lambda p: len(said & content_words(p.text)), default=None)
        if best is None or not best.speaker or not said & content_words(best.text):
            last = None
            continue
        who = "You" if _is_me(best.speaker) else best.speaker
        if who != last:
            indent = len(piece) - len(piece.lstrip())
            pieces[i] = f"{piece[:indent]}{who} said: {piece[indent:]}"
        last = who
    return "".join(pieces)


def one_asked_of(text: str, question: str, sources: Sequence[Source]) -> str:
    """``text`` with the other one of a chat of two (the only two who speak in ``sources``,
    neither of them the user) taken out of a sentence that opens with both ("Omar and Ravi
    joined a chess club [5].") when ``question`` asks of one ("What club did Omar join
    recently?"): a small model names both from the title of the conversation it read
    ("Omar and Ravi") and credits the other with what one did. The verb is made to
    agree ("have" -> "has"; a past tense as it is); a sentence whose verb is neither is left
    as it is, for the check."""
    people = speakers_of(sources)
    names = {p.speaker for s in sources for p in s.passages if p.speaker}
    asked = named_people(question, people)
    if len(names) != CHAT_OF_TWO or names != set(people.values()) or len(asked) != 1:
        return text
    (one,) = asked
    (other,) = names - asked
    both = re.compile(rf"(\s*)(?:{re.escape(one)} and {re.escape(other)}|{re.escape(other)} and "
                      rf"{re.escape(one)})(?:'s\b|\s+(?:both\s+)?(\w+))")
    pieces = sentences(text)
    for i, piece in enumerate(pieces):
        opening = both.match(piece)
        if opening is None:
            continue
        verb = opening[2]
        agreed = "'s" if verb is None else _agreeing(verb)
        if agreed is not None:
            joined = agreed if verb is None else f" {agreed}"
            pieces[i] = f"{opening[1]}{one}{joined}{piece[opening.end():]}"
    return "".join(pieces)


_AGREE = {"have": "has", "are": "is", "were": "was", "do": "does"}
# said of one as of two: the past ("went"), a modal ("can")
_AS_IS_WORDS = """
    went made got saw had did took found met gave wrote read began became came ran won felt kept
    left bought brought taught thought told spent sent built heard knew lost paid sold sat stood
    can could will would should might must may
"""
_AS_IS = frozenset(_AS_IS_WORDS.split())


def _agreeing(verb: str) -> str | None:
    """``verb``, said of two, said of one ("have" -> "has"; "joined" as it is), or None when
    it is not one of those (a present tense, "often", "first")."""
    word = verb.lower()
    if word in _AGREE:
        return _AGREE[word]
    past = word.endswith("ed") and not word.endswith("eed") and word.isalpha()  # not "need"
    return verb if past or word in _AS_IS else None


def _speaks_as_i(sentence: str) -> bool:
    """Whether ``sentence`` speaks in the first person from its start ("Uh we familiarised
    ourselves ...", "This is our final meeting"): a turn pasted, not an account that copied a
    word of one ("Ravi's main focus is the garden in our street")."""
    words = [w for w in re.findall(r"[\w']+", sentence) if w.casefold() not in _OPENERS]
    return bool(FIRST_PERSON.search(" ".join(words[:4])))


_OPENERS = frozenset({"uh", "um", "mm", "so", "and", "but", "well", "okay", "yeah", "then", "oh"})


def best_passage(source: Source, question: str) -> Passage:
    """The passage of ``source`` sharing the most content words with ``question`` (the first
    on a tie): what a citation shows when the answer quoted nothing from it."""
    wanted = content_words(question)
    best = max(source.passages, key=lambda p: len(wanted & content_words(p.text)),
               default=Passage(""))
    return best


def _clean_quote(quote: str) -> str:
    return " ".join(_EDGE.sub("", quote).split())


def _excerpt(text: str) -> str:
    line = " ".join(text.split())
    if len(line) <= MAX_CITED_QUOTE_CHARS:
        return line
    return line[: MAX_CITED_QUOTE_CHARS - 1].rsplit(" ", 1)[0] + "…"


# -- only what a cited source supports -----------------------------------------------------------

_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
SECOND_PERSON = re.compile(r"\b(?:you|your|yours|yourself)\b", re.IGNORECASE)
FIRST_PERSON = re.compile(r"\b(?:i|me|my|mine|myself|we|us|our|ours|ourselves)\b", re.IGNORECASE)


def keep_supported(text: str, sources: Sequence[Source], question: str = "",
                   speaking: Collection[str] = ()) -> tuple[str, int]:
    """``text`` with only its sentences that a source they cite supports
    (:func:`supports`) — or, citing one that does not, another single source does (its
    citation is corrected) —; a sentence that cites nothing, or says nothing but a greeting
    or an acknowledgement, is not given, nor one that says again what a sentence given
    said (``validate.same_item``: nearly all its content words; a quote is verified on its
    own). A name the question gives that is no one's who speaks (in ``sources`` or
    ``speaking``: everyone's who speaks in what was recalled) is its premise ("What did Nina
    take a trip to Lisbon for?"): a sentence that repeats it needs a source it cites that
    holds it. Returns the text and how many sentences were dropped."""
    by_n = {s.n: s for s in sources}
    people = speakers_of(sources)
    persons = {*people, *(w for name in speaking for w in content_words(name))}
    premise = {name for name in _names(question) if not shares_word({name}, persons)}
    kept: list[str] = []
    dropped = 0
    for piece in sentences(text):
        if not piece.strip():
            continue
        if _says_nothing(piece, people, persons):
            dropped += 1
            continue
        if not _QUOTE.search(piece) and any(
                same_item(_CITE.sub(" ", piece), _CITE.sub(" ", k)) for k in kept):
            continue  # said again ("The team also emphasized the need for ..." thrice)
        assumed = premise & _names(piece)
        cited = [by_n[n] for n in cited_numbers(piece) if n in by_n]
        if cited and supports(piece, cited, question, people) and _hold(cited, assumed):
            kept.append(piece.strip())
            continue
        # a small model often cites the source next to the one that says it, or a number no
        # source read has: the sentence is kept, its citation corrected, when one other
        # source supports it
        other = next((s for s in sources if s.kind != "context" and s not in cited
                      and supports(piece, [s], question, people) and _hold([s], assumed)),
                     None) if cited_numbers(piece) else None
        if other is None:
            dropped += 1
        else:
            kept.append(_CITE.sub("", piece).strip().rstrip(".!?") + f" [{other.n}].")
    return " ".join(kept), dropped


def _hold(sources: Sequence[Source], names: set[str]) -> bool:
    """Whether the passages of ``sources`` hold every one of ``names`` (content-word form;
    "L_C_D_" read as "LCD")."""
    held = content_words(" ".join(p.text for s in sources for p in s.passages).replace("_", ""))
    return all(shares_word({name}, held) for name in names)


def _says_nothing(sentence: str, people: dict[str, str], persons: Collection[str] = ()
                  ) -> bool:
    """Whether ``sentence`` of an answer, a speaker's label taken out ("Marketing said:"), only
    greets, thanks, acknowledges or addresses the room (anyone of ``people`` or ``persons``,
    who speak in what was read or recalled: "Lena: Hey Priya [1]!", "So, hello everyone
    [1]."), or has no word left: "Designer said: Yeah [1]." is a pasted turn that
    answers nothing ("Priya [1]." answers "who"). A question ("What's new with you [1]?")
    and a note in brackets ("[shares a photo: a playground] [1]") copied from a turn answer
    nothing either."""
    text = _CITE.sub(" ", sentence).strip()
    if text.rstrip("!. ").endswith("?") or _NOTE.fullmatch(text):
        return True
    for name in sorted(set(people.values()), key=len, reverse=True):
        text = text.replace(f"{name} said:", " ")
    said = content_words(text)
    return not said or _only_phatic(said, {*people, *persons}, _TO_THE_ROOM)


def speakers_of(sources: Sequence[Source]) -> dict[str, str]:
    """The people who speak in ``sources`` (not the user), by each word of their names in
    content-word form ("priya" -> "Priya Shah")."""
    people: dict[str, str] = {}
    for source in sources:
        for passage in source.passages:
            if passage.speaker and not _is_me(passage.speaker):
                for word in content_words(passage.speaker):
                    people.setdefault(word, passage.speaker)
    return people


def supports(sentence: str, cited: Sequence[Source], question: str = "",
             people: dict[str, str] | None = None) -> bool:
    """Whether the sources ``cited`` support ``sentence``: of its content words that the
    question did not give (nor "said", "discussed"), at least half are in them (of all its
    words, when the question gave every one); every number in it is in them or in the
    question; and when it is about a person who speaks in the sources (``people``) — the one
    the question asks about, else those it names —, what supports it is said by that person
    or of them — a passage they say, one that names them, or in a chat of two one said to
    them — not only a passage of someone else's."""
    body = _CITE.sub(" ", sentence).replace(UNVERIFIED, " ")
    words = content_words(body)
    if not words:
        return False
    people = speakers_of(cited) if people is None else people
    # whom it is about: the one person the question asks about ("How did Priya's son
    # handle the move?" answered "Lena's son was lucky" is no answer), else the people
    # it names, else those the question names ("What motivated Lena ...?" answered "It
    # made me realize ..." is a claim about Lena)
    asked_of = named_people(question, people)
    said_of = named_people(body, people)
    if len(asked_of) == 1 and said_of and not said_of & asked_of:
        return False  # another's name on what the one asked about did ("Ravi started ...")
    named = asked_of if len(asked_of) == 1 else said_of or asked_of
    # in a chat of two, what the other says to the one asked about ("you should join me on
    # the trails") is said of them
    spoken_to = len(asked_of) == 1 and len({p.speaker for s in cited for p in s.passages
                                            if p.speaker}) <= CHAT_OF_TWO
    passages = [p for s in cited for p in s.passages
                if not named or _of_person(p, named)
                or (spoken_to and p.speaker and p.speaker not in named
                    and SECOND_PERSON.search(p.text))
                or (not p.speaker and s.item is not None and _item_of(s.item, named))]
    if not passages:
        return False
    raw = " ".join([*(p.text for p in passages), *(s.title for s in cited),
                    *(_day(s.date) for s in cited if s.date)])
    have = content_words(raw)
    asked = content_words(question)
    # the words it adds to the question ("said", "discussed" add nothing)
    novel = [w for w in words if not shares_word({w}, asked | _REPORTING_WORDS)] or list(words)
    shared = sum(1 for w in novel if shares_word({w}, have))
    if shared < max(1, math.ceil(len(novel) / 2)):
        return False
    # a name is the cited sources' (said in them, or one who speaks) or the question's: "by
    # Nina Simone" is not half a sentence's words to prove
    said = content_words(" ".join([raw, *(p.text for s in cited for p in s.passages),
                                   *(p.speaker for s in cited for p in s.passages)
                                   ]).replace("_", ""))  # "L_C_D_" is the name "LCD"
    if any(not shares_word({name}, said | asked) for name in _names(body)):
        return False
    # a number the question gives is not the answer's to prove ("in December 2023")
    numbers = set(_NUMBER.findall(raw)) | spoken_numbers(raw) | set(_NUMBER.findall(question))
    return all(n in numbers for n in _NUMBER.findall(body))


_CALENDAR = content_words("""
    january february march april may june july august september october november december
    monday tuesday wednesday thursday friday saturday sunday
""")


# a capitalised word inside a sentence: a name ("then Sarah said", "a trip to Barcelona")
_CAPITALISED = re.compile(r"(?<=\S )([A-Z][\w'-]+)")


def _names(text: str) -> set[str]:
    """The names in ``text``, in content-word form: its capitalised words inside a sentence
    ("Barcelona", "Lewis"; "L_C_D_" read as "LCD"), not a month's or a day's."""
    inner = _CAPITALISED.findall(text.replace("_", ""))
    return content_words(" ".join(inner)) - _CALENDAR


def named_people(text: str, people: dict[str, str]) -> set[str]:
    """Who of ``people`` ``text`` names: every word of their name ("Project Manager"), or its
    first word capitalised inside the sentence ("then Sarah said")."""
    words = content_words(text)
    inner = {w.lower() for w in _CAPITALISED.findall(text)}
    named = set()
    for name in set(people.values()):
        parts = content_words(name)
        first = name.split()[0].lower() if name.split() else ""
        if (parts and parts <= words) or first in inner:
            named.add(name)
    return named


_UNIT_WORDS = ("zero one two three four five six seven eight nine ten eleven twelve thirteen "
               "fourteen fifteen sixteen seventeen eighteen nineteen")
_UNITS = {w: i for i, w in enumerate(_UNIT_WORDS.split())}
_TENS_WORDS = "twenty thirty forty fifty sixty seventy eighty ninety"
_TENS = {w: 10 * i for i, w in enumerate(_TENS_WORDS.split(), 2)}
_SCALES = {"hundred": 100, "thousand": 1000, "million": 1_000_000}


def spoken_numbers(text: str) -> set[str]:
    """The numbers said in words in ``text`` ("twenty five" -> "25", "twelve point five" ->
    "12.5", "fifteen million" -> "15" and "15000000"), as digits: a transcript says them so
    and an answer writes them in digits."""
    found: set[str] = set()
    words = re.findall(r"[a-z]+", text.lower().replace("-", " "))
    i = 0
    while i < len(words):
        if words[i] not in _UNITS and words[i] not in _TENS:
            i += 1
            continue
        total, part = 0, 0
        while i < len(words) and (words[i] in _UNITS or words[i] in _TENS
                                  or words[i] in _SCALES or words[i] == "and"):
            word = words[i]
            if word in _SCALES:
                found.add(str(part or 1))
                part = (part or 1) * _SCALES[word]
                if _SCALES[word] >= 1000:
                    total, part = total + part, 0
            elif word != "and":
                part += _UNITS.get(word, 0) + _TENS.get(word, 0)
            i += 1
        whole = total + part
        found.add(str(whole))
        if i + 1 < len(words) and words[i] == "point" and words[i + 1] in _UNITS:
            found.add(f"{whole}.{_UNITS[words[i + 1]]}")
            i += 2
    return found


def _of_person(passage: Passage, named: set[str]) -> bool:
    """Whether ``passage`` is said by one of ``named`` or names one of them (not only to greet
    or thank them: "Hey Omar!" says nothing of Omar)."""
    if passage.speaker in named:
        return True
    names = {w for name in named for w in content_words(name)}
    said = content_words(without_phatic(passage, names).text)
    return any(content_words(name) & said for name in named)


def _item_of(item: Item, named: set[str]) -> bool:
    owner = content_words(item.owner or "")
    return any(content_words(name) & owner for name in named)


def nothing_says(question: str) -> str:
    """The reply when no sentence of an answer is supported by a source it cites: the
    evidence shown before it is what memory holds. A question that reads as said of itself
    ("What motivated Lena …?") is said so; one that turns its verb round ("When did Omar
    …?", "Did Tom agree?") or asks something else ("Summarize …") is quoted."""
    asked = " ".join(question.split())
    bare = asked.rstrip("?").strip()
    words = [w.lower().strip(",") for w in bare.split()]
    if words and words[0] in _WH_WORDS and not _INVERTING & set(words[1:]):
        return (f"Nothing in memory says {bare[0].lower()}{bare[1:]}. "
                "The evidence above is what memory holds.")
    if not asked.endswith(("?", ".", "!")):
        asked += "?" if words and words[0] in _WH_WORDS | _INVERTING else "."
    return f"Nothing in memory answers “{asked}” The evidence above is what memory holds."


def items_answer(sources: Sequence[Source]) -> str:
    """The answer to a question over items, stated from the items themselves, one sentence
    each with its number: what it says, its owner, due date and status (a decision: what was
    chosen over what, and why)."""
    said = []
    for source in sources:
        item = source.item
        if item is None:
            continue
        facts = [f"owner {item.owner}" if item.owner else "", f"due {item.due}" if item.due
                 else "", item.status, f"chosen: {item.chosen}" if item.chosen else "",
                 "over " + ", ".join(item.alternatives) if item.alternatives else "",
                 f"because {item.reasoning}" if item.reasoning else ""]
        held = "; ".join(f for f in facts if f)
        text = item.text.strip().rstrip(".")
        said.append(f"{text}{f' ({held})' if held else ''} [{source.n}].")
    return " ".join(said)


def unlabelled(text: str, sources: Sequence[Source]) -> str:
    """``text`` without what a small model copies of the prompt's layout instead of answering:
    a source's heading ("[1] 4 March 2026 · Design meeting (transcript)", or without its
    date: "Design meeting (transcript),", or its title after a number: "[1] Design
    meeting") and a speaker's label opening a line of the
    transcript ("Marketing: we ..." becomes "Marketing said: we ..."). The number of a heading
    taken out, or one opening the answer or a line of it, opens a source as in the prompt: it
    is cited after the first sentence that follows it instead (not of the sentence before),
    and dropped where nothing follows."""
    for source in sources:
        title = re.escape(source.title)
        when = _HEADING_DAY if source.date else ""
        label = re.escape(f" ({source.label})") if source.label else ""
        # the title alone may be words of an answer ("the Atlas review decided ..."): taken
        # out only with its date or its label beside it
        headings = [f"{when}{title}(?:{label})?" if when else "",
                    f"{title}{label},?" if label else "",
                    # or right after a number, as the prompt lays it out (cut short: "[1]
                    # Ravi and Priya, session 21" ends an answer stopped at its length)
                    rf"(?<=\])\s*{title}(?:{label})?,?"]
        for heading in filter(None, headings):
            text = re.sub(rf"(?:\[(\d+)\]\s*)?{heading}",
                          lambda m: f" {_OPENS}{m[1]}{_OPENS} " if m[1] else " ", text)
    text = re.sub(r"(?:^|\n)[^\S\n]*\[(\d+)\]", rf"\n{_OPENS}\1{_OPENS}", text)
    parts = re.split(rf"\s*{_OPENS}(\d+){_OPENS}\s*", text)
    text = parts[0]
    for number, part in zip(parts[1::2], parts[2::2], strict=True):
        if not part.strip():
            continue
        first = _SENTENCE_END.search(part)
        at = first.start() if first else len(part)
        if not cited_numbers(part[:first.end() if first else len(part)]):
            part = f"{part[:at].rstrip()} [{number}]{part[at:]}"
        text = f"{text}\n{part}" if text.strip() else part
    names = sorted({p.speaker for s in sources for p in s.passages
                    if p.speaker and not _is_me(p.speaker)}, key=len, reverse=True)
    for name in names:
        text = re.sub(rf"(^|(?<=[.!?\]]\s)|(?<=\n)){re.escape(name)}:\s", f"{name} said: ",
                      text)
    return " ".join(text.split(" ")).strip()
