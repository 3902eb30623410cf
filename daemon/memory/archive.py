"""Archive formats: one structured summary per kept session, shaped by its activity.

The format of an activity generates both the JSON schema the summariser is
constrained to and the prompt that asks for it, so the keys asked for and the keys kept cannot
drift apart. :func:`take_sections` is the real validator: it keeps only the format's keys, in
the format's order, each capped; anything else the model wrote is dropped. Key quotes are kept
only when they are (case- and whitespace-normalised) inside one real turn, and their speaker
is read off that turn, never off the model.

Participants are the transcript's speakers, never the model's list; every section item must
be a statement (:mod:`daemon.memory.validate`), appears in one section only, and nothing of
the prompt's scaffolding is kept.

Pure: no model, no database.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

import msgspec

from daemon.memory import validate

MAX_QUOTES = 4
MAX_ITEMS = 6
MAX_ITEM_CHARS = 240
MAX_SUMMARY_CHARS = 1800  # a long meeting's parts, two or three sentences each
MAX_PARTICIPANTS = 12
# Bounds of the strings the model writes, in the schema (a looping model stops there); a merged
# summary of several pieces is clipped to MAX_SUMMARY_CHARS.
MAX_TOPIC_CHARS = 80
PIECE_SUMMARY_CHARS = 700
PART_SUMMARY_CHARS = 400
MAX_QUOTE_CHARS = 200
PART_QUOTES = 1  # per part of a long transcript: its parts' quotes together make the archive's
QUOTE_MIN_WORDS = 4  # "Mm-hmm." is verbatim, and worth nothing


@dataclass(frozen=True)
class Section:
    key: str  # the JSON key the model fills
    title: str  # how the rendered archive names it
    hint: str  # what belongs in it, for the prompt
    cap: int = MAX_ITEMS
    # the assertion kinds that state this section's items when a transcript is too long for
    # the model to find them in one reading (it lists proposals and role names instead)
    kinds: tuple[str, ...] = ()


@dataclass(frozen=True)
class ArchiveFormat:
    activity: str
    sections: tuple[Section, ...]

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(s.key for s in self.sections)


def _s(key: str, title: str, hint: str, cap: int = MAX_ITEMS,
       kinds: tuple[str, ...] = ()) -> Section:
    return Section(key, title, hint, cap, kinds)


_DECIDED = _s("decided", "Decided", "what the group settled on, each as a full sentence",
              kinds=("decision",))
_ACTIONS = _s("action_items", "Action items", "each as a full sentence naming who will do what",
              kinds=("commitment", "task"))
_OPEN = _s("still_open", "Still open", "questions raised and not settled")

FORMATS: dict[str, ArchiveFormat] = {
    "meeting": ArchiveFormat("meeting", (_DECIDED, _ACTIONS, _OPEN)),
    "custom": ArchiveFormat("custom", (_DECIDED, _ACTIONS, _OPEN)),
    "project": ArchiveFormat(
        "project",
        (_DECIDED, _ACTIONS, _OPEN,
         _s("changed_since_last_time", "Changed since last time",
            "what is different from before: plans, dates, scope, people")),
    ),
    "job": ArchiveFormat(
        "job",
        (_s("they_asked", "They asked", "the questions the interviewers asked"),
         _s("you_said", "You said", "what the candidate claimed or answered, briefly"),
         _s("they_emphasised", "They emphasised", "what the interviewers stressed or probed"),
         _s("next_steps", "Next steps", "what happens next in the process")),
    ),
    "subject": ArchiveFormat(
        "subject",
        (_s("covered", "Covered", "topics and ideas that were covered"),
         _s("did_not_land", "Did not land", "what stayed unclear or was misunderstood"),
         _s("still_unresolved", "Still unresolved", "open questions about the subject"),
         _s("to_review", "To review", "what to go over again")),
    ),
    "personal": ArchiveFormat(
        "personal",
        (_DECIDED, _ACTIONS, _OPEN,
         _s("dates_and_amounts", "Dates and amounts", "dates, prices and amounts mentioned")),
    ),
    "game": ArchiveFormat(
        "game",
        (_s("what_happened", "What happened", "the events of the session"),
         _s("chose", "Chose", "choices that were made"),
         _s("unfinished", "Unfinished", "what was left to do")),
    ),
    "solo": ArchiveFormat(
        "solo",
        (_s("worked_out", "Worked out", "what was figured out"),
         _s("to_do", "To do", "what remains to be done"),
         _OPEN),
    ),
}


def format_for(activity: str) -> ArchiveFormat:
    """The format of an activity; unknown activities use the meeting format."""
    return FORMATS.get(activity, FORMATS["meeting"])


class Quote(msgspec.Struct, frozen=True):
    text: str
    speaker: str
    turn_id: int


class Archive(msgspec.Struct, frozen=True):
    """What is kept of one session, after validation."""

    activity: str
    topic: str
    summary: str
    participants: list[str]
    sections: dict[str, list[str]]
    quotes: list[Quote]


class ArchiveEnvelope(msgspec.Struct, frozen=True):
    """The shape every format shares; ``sections`` is a record the format then filters."""

    topic: str = ""
    summary: str = ""
    participants: list[str] = []
    sections: dict[str, Any] = {}
    key_quotes: list[str] = []


def _at_most(n: int, chars: int = MAX_ITEM_CHARS) -> Any:
    return Annotated[list[Annotated[str, msgspec.Meta(max_length=chars)]],
                     msgspec.Meta(max_length=n)]


def _text(chars: int) -> Any:
    return Annotated[str, msgspec.Meta(max_length=chars)]


def asked_sections(fmt: ArchiveFormat, *, stated: bool = False,
                   part: bool = False) -> tuple[Section, ...]:
    """The sections the model writes: all of them for a transcript read whole; with the
    assertions stated (``stated``), those they do not state for a transcript read whole and
    none for a ``part`` of a long one. Asked about parts of real meetings, the 0.5B
    filled every section with what reads wrong: role names and proposals as decisions,
    "What were the key quotes?" and "Discussing initial ideas at all here?" as still open,
    "Marketing looks at me." as changed since last time (which a part cannot know)."""
    if not stated:
        return fmt.sections
    return () if part else tuple(s for s in fmt.sections if not s.kinds)


def output_type(fmt: ArchiveFormat, *, stated: bool = False,
                part: bool = False) -> type[msgspec.Struct]:
    """The msgspec type the summariser fills for ``fmt`` — without the sections the
    assertions state when ``stated``; for a ``part`` of a long transcript a shorter summary and
    one quote: its JSON schema constrains decoding, string lengths and list sizes included, so
    a small model that loops stops early. There is no participants field: they are the
    transcript's speakers."""
    name = f"{fmt.activity.title()}{'Stated' if stated else ''}{'Part' if part else ''}"
    sections = msgspec.defstruct(
        f"{name}Sections",
        [(s.key, _at_most(s.cap)) for s in asked_sections(fmt, stated=stated, part=part)]
    )
    return msgspec.defstruct(
        f"{name}Archive",
        [("topic", _text(MAX_TOPIC_CHARS)),
         ("summary", _text(PART_SUMMARY_CHARS if part else PIECE_SUMMARY_CHARS)),
         ("sections", sections),
         ("key_quotes", _at_most(PART_QUOTES if part else MAX_QUOTES, MAX_QUOTE_CHARS))],
    )


def schema(fmt: ArchiveFormat) -> dict[str, Any]:
    return msgspec.json.schema(output_type(fmt))


NO_DECISION = "No decision was recorded in this conversation."


def stated_sections(fmt: ArchiveFormat,
                    statements: Sequence[tuple[str, str]]) -> dict[str, list[str]]:
    """The items of the sections that assertions state, from (kind, text) pairs in order; the
    section of decisions says plainly when none was found."""
    stated = {s.key: [text for kind, text in statements if kind in s.kinds]
              for s in fmt.sections if s.kinds}
    for s in fmt.sections:
        if "decision" in s.kinds and not stated[s.key]:
            stated[s.key] = [NO_DECISION]
    return stated


SYSTEM = ("You read the transcript of a conversation and write about it so that it can be found "
          "and trusted later. Use only what the transcript says; never invent names, numbers or "
          "events. Reply with JSON only.")


def transcript_message(title: str, activity: str, speakers: Sequence[str],
                       transcript: str) -> str:
    """The start of every request about one transcript: the same text, so that llama.cpp
    reuses what it evaluated for the archive when the next request comes."""
    return (f"Conversation: {title or 'untitled'}\nActivity: {activity}\n"
            f"Speakers: {', '.join(speakers)}\n\n"
            f"Transcript (one turn per line, speaker: words):\n{transcript}\n\n")


def prompt(fmt: ArchiveFormat, title: str, transcript: str, speakers: Sequence[str] = (), *,
           stated: bool = False, part: bool = False) -> list[dict[str, str]]:
    """Chat messages asking for the archive of ``transcript`` in ``fmt`` (without the
    sections the assertions state when ``stated``: :func:`stated_sections`) — or, when it is
    a ``part`` of a long one, a short account of that part."""
    # Hints are phrased so that a small model copying one verbatim writes nothing useful
    # rather than a plausible item (a 0.5B model echoed "(at most 8 short items)" as one).
    asked = asked_sections(fmt, stated=stated, part=part)
    lines = "\n".join(f'- "{s.key}": {s.hint}' for s in asked)
    cap = max((s.cap for s in asked), default=MAX_ITEMS)
    quotes = PART_QUOTES if part else MAX_QUOTES
    summary = (
        "two or three sentences in the third person: what was presented, discussed or "
        "settled in this stretch, by whom" if part else
        "four to six sentences in the third person: what the conversation was about, what "
        "each speaker presented, proposed or asked, and what came of it")
    user = transcript_message(title, fmt.activity, speakers, transcript) + (
        "Write the archive of this conversation:\n"
        '- "topic": a few words naming what it was about\n'
        f'- "summary": {summary}\n'
        + (f'- "sections": an object with exactly these keys, each a list of at most {cap} '
           f"sentences in your own words (an empty list if nothing fits):\n{lines}\n"
           if asked else '- "sections": {}\n')
        + f'- "key_quotes": up to {quotes} memorable sentences copied exactly from the '
        "transcript (without the speaker's name)"
    )
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


PART_WORDS = ("in this stretch", "this stretch")  # the part summary's hint


def prompt_words(fmt: ArchiveFormat) -> Any:
    """What of the archive prompt must never come back as content: keys and hints."""
    return validate.scaffolding(
        [s.key for s in fmt.sections if "_" in s.key] + [s.hint for s in fmt.sections]
        + list(PART_WORDS))


def _clean_items(value: Any, cap: int) -> list[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        return []
    items = [" ".join(str(v).split())[:MAX_ITEM_CHARS] for v in value if isinstance(v, str)]
    return [i for i in items if i][:cap]


SETTLED_KEYS = ("decided", "chose")  # sections of what was settled: no proposals


def take_sections(fmt: ArchiveFormat, raw: Mapping[str, Any], turns: Sequence[str] = (),
                  names: Sequence[str] = (), stated: Collection[str] = ()) -> dict[str, list[str]]:
    """Keep the format's keys only, in its order, each a capped list of clean statements; an
    item already in an earlier section (or near-same) is not repeated, and what was settled
    holds no proposal (:func:`~daemon.memory.validate.proposal`). The ``stated`` sections hold
    assertions, which may be as short as one ("Marketing will investigate.")."""
    words = prompt_words(fmt)
    taken: list[str] = []
    sections = {}
    for s in fmt.sections:
        items = [validate.scrub(i) for i in _clean_items(raw.get(s.key), MAX_ITEMS * 2)]
        least = validate.MIN_ASSERTION_WORDS if s.key in stated else validate.MIN_WORDS
        statements = [i for i in items
                      if validate.is_statement(i, turns, words, questions=True, names=names,
                                               min_words=least)
                      and not (s.key in SETTLED_KEYS and validate.proposal(i))]
        sections[s.key] = validate.unique_items(statements, taken)[: s.cap]
    return sections


@dataclass(frozen=True)
class TranscriptTurn:
    id: int
    speaker: str
    text: str


def normalise(text: str) -> str:
    """Case- and whitespace-insensitive form used to match quotes against turns."""
    return " ".join(text.casefold().split())


_EDGE_PUNCT = re.compile(r"^[\s\"'“”‘’«»]+|[\s\"'“”‘’«»]+$")


def verify_quotes(candidates: Sequence[str], turns: Sequence[TranscriptTurn]) -> list[Quote]:
    """Keep a candidate only if it lies inside one turn; its speaker comes from that turn."""
    normalised_turns = [(t, normalise(t.text)) for t in turns]
    speakers = {normalise(t.speaker) for t in turns}
    kept: list[Quote] = []
    seen: set[str] = set()
    for candidate in candidates:
        text = _EDGE_PUNCT.sub("", candidate)
        label, colon, words = text.partition(":")
        if colon and normalise(label) in speakers and words.strip():
            # a model that writes "Alice: ..." names a speaker; the turn decides who it was
            text = _EDGE_PUNCT.sub("", words)
        needle = normalise(text)
        if len(needle.split()) < QUOTE_MIN_WORDS or needle in seen:
            continue
        for turn, haystack in normalised_turns:
            if needle in haystack:
                kept.append(Quote(text=" ".join(text.split()), speaker=turn.speaker,
                                  turn_id=turn.id))
                seen.add(needle)
                break
        if len(kept) == MAX_QUOTES:
            break
    return kept


def build_archive(
    fmt: ArchiveFormat, envelope: ArchiveEnvelope, turns: Sequence[TranscriptTurn],
    stated: Mapping[str, list[str]] | None = None,
) -> Archive:
    """Validate what the summariser returned into an :class:`Archive`; the sections in
    ``stated`` (:func:`stated_sections`) are those items, not the model's."""
    if stated is not None:
        envelope = msgspec.structs.replace(envelope, sections={**envelope.sections, **stated})
    words = prompt_words(fmt)
    topic = validate.scrub(envelope.topic)[:200]
    texts = [t.text for t in turns]
    names = validate.speakers(t.speaker for t in turns)
    return Archive(
        activity=fmt.activity,
        topic="" if words.search(topic) else topic,
        summary=clean_summary(envelope.summary, words, texts, names)[:MAX_SUMMARY_CHARS],
        participants=names[:MAX_PARTICIPANTS],
        sections=take_sections(fmt, envelope.sections, texts, names, stated or ()),
        quotes=verify_quotes(envelope.key_quotes, turns),
    )


_SENTENCE = re.compile(r"(?<=[.!?])\s+")
# a sentence about the account or the request rather than the conversation
ABOUT_THE_ACCOUNT = re.compile(r"\b(?:the|this|a) (?:topic|summary|transcript|excerpt|prompt)\b"
                               r"|\bsummar(?:y|ies|ised|ized)\b", re.I)


def clean_summary(summary: str, words: Any = None, turns: Sequence[str] = (),
                  names: Sequence[str] = ()) -> str:
    """The summary without piece labels, prompt wording, and sentences that loop, repeat,
    name what the transcript does not say, or are speech (copied from a turn, or in the first
    or second person) rather than an account of it."""
    said = validate.transcript_vocabulary(turns, names) if turns else None
    kept: list[str] = []
    for sentence in _SENTENCE.split(validate.scrub(summary)):
        if len(validate.words(sentence)) < 3 or validate.looping(sentence):  # "Maybe not."
            continue
        if said is not None and validate.unsupported_specifics(sentence, turns, said=said):
            continue
        if words is not None and words.search(sentence):
            continue
        if ABOUT_THE_ACCOUNT.search(sentence):
            continue  # "The topic was about …", "The summary provided was: …"
        if names and (validate.spoken_line(sentence, names) or not validate.content_words(
                sentence) - validate.content_words(" ".join(names))):
            continue  # "Marketing: um and everything else …"; "Project Manager, Marketing"
        if turns and (validate.copied_run(sentence, turns)
                      or validate.in_person(sentence, names)):
            continue  # "I like to show you the agenda for the meeting": speech, not an account
        if any(validate.same_item(sentence, k) for k in kept):
            continue
        kept.append(sentence)
    return " ".join(kept)


def render(archive: Archive, fmt: ArchiveFormat | None = None) -> str:
    """The archive as the text that is indexed (a `session` chunk body)."""
    fmt = fmt or format_for(archive.activity)
    out = [f"Topic: {archive.topic}" if archive.topic else "Topic: (none)"]
    if archive.summary:
        out.append(f"Summary: {archive.summary}")
    if archive.participants:
        out.append(f"Who: {', '.join(archive.participants)}")
    for section in fmt.sections:
        items = archive.sections.get(section.key) or []
        if items:
            out.append(f"{section.title}:")
            out += [f"- {item}" for item in items]
    if archive.quotes:
        out.append("In their own words:")
        out += [f'- {q.speaker}: "{q.text}"' for q in archive.quotes]
    return "\n".join(out)
