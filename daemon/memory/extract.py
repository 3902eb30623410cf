"""Assertion extraction and write-time reconciliation: the pure rules.

The model proposes typed assertions (decision {chosen, alternatives[], reasoning}, fact,
commitment {owner, due}, preference, task); each is anchored to the chunk that supports it —
the chunk sharing the most of its content words — and dropped when no chunk shares enough
(seed 002: nothing enters anonymously). New assertions are reconciled against similar current
ones: the model rules duplicate / supersedes / separate. Person-memory candidates are
suppressed when the user has already answered the same sentence in a visible scope
(`already_known`, seed 000 §14).

Pure: the model calls and the database live in ``daemon.memory.remember``.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import msgspec

from daemon.memory import validate
from daemon.store.fts import STOP_WORDS

AssertionKind = Literal["decision", "fact", "commitment", "preference", "task"]
ASSERTION_KINDS: tuple[AssertionKind, ...] = (
    "decision", "fact", "commitment", "preference", "task",
)
# Per model call (a piece of the transcript). The schema caps the list too, so a small model
# cannot run on until its answer is cut off and lost (a 0.5B model did, at 1024 tokens).
MAX_ASSERTIONS = 8
MAX_ALTERNATIVES = 4


def _text(chars: int) -> Any:
    return Annotated[str, msgspec.Meta(max_length=chars)]


class ExtractedAssertion(msgspec.Struct, frozen=True):
    # string bounds are in the schema: a looping model stops at them
    kind: AssertionKind
    text: _text(240)  # type: ignore[valid-type]
    chosen: _text(120) = ""  # type: ignore[valid-type]
    alternatives: Annotated[list[_text(120)],  # type: ignore[valid-type]
                            msgspec.Meta(max_length=MAX_ALTERNATIVES)] = []
    reasoning: _text(240) = ""  # type: ignore[valid-type]
    owner: _text(60) = ""  # type: ignore[valid-type]
    due: _text(60) = ""  # type: ignore[valid-type]
    about_person: bool = False  # a standing claim about the user themself
    scope: Literal["space", "profile"] = "space"
    evidence: _text(160) = ""  # type: ignore[valid-type]  # words from the transcript


class Extraction(msgspec.Struct, frozen=True):
    assertions: Annotated[list[ExtractedAssertion], msgspec.Meta(max_length=MAX_ASSERTIONS)]


# -- extract, then abstract -----------------------------------------------------------------
# A small model asked for "the decisions" of a long transcript copies fragments and small talk.
# So the turns that carry a decision or a commitment are found first, by their wording, and the
# model is asked to state each one from the few turns around it.

DECISION_CUE = re.compile(
    r"\b(decid\w*|decision|agree\w*|settled?|go(ing)? (for|with)|stick (to|with)|"
    r"let'?s (go|use|do|have|keep|make|say|stick|put|take)|we('ll| will| should| can) (go|use|"
    r"have|keep|make|do|take|stick|put)|(we|i) (chose|choose|picked)|conclu\w*|so it'?s|"
    r"final(ly)?|the (best|only) option|instead|change of plan)\b", re.I)
COMMITMENT_CUE = re.compile(
    r"\b(i'?ll|i will|i'?m going to|i can (send|do|look|check|prepare|make|write|draw|mail)|"
    r"(will|going to|should|has to|have to|needs? to) (send|prepare|look|check|do|email|mail|make|"
    r"work|present|bring|write|draw|find|research|design|think)|by (monday|tuesday|wednesday|"
    r"thursday|friday|tomorrow|next week)|next meeting|action item|your (task|job|homework))\b",
    re.I)
PREFERENCE_CUE = re.compile(r"\bi (really )?(prefer|like|love|hate|don'?t like|always|never)\b",
                            re.I)
CUE_MIN_WORDS = 6
EXCERPT_BEFORE = 2  # turns of context before the turn that carries the cue
EXCERPT_AFTER = 1
EXCERPT_LINE_CHARS = 320


def cue_score(text: str) -> int:
    """How strongly a turn's wording says something was decided, undertaken or preferred."""
    if len(validate.words(text)) < CUE_MIN_WORDS:
        return 0
    return (2 * len(DECISION_CUE.findall(text)) + 2 * len(COMMITMENT_CUE.findall(text))
            + len(PREFERENCE_CUE.findall(text)))


def find_cues(texts: Sequence[str], limit: int) -> list[int]:
    """The indexes of at most ``limit`` turns that carry a decision or a commitment, strongest
    first among them, returned in transcript order; two cues closer than an excerpt are one."""
    scored = sorted(((cue_score(t), i) for i, t in enumerate(texts)),
                    key=lambda si: (-si[0], si[1]))
    chosen: list[int] = []
    for score, i in scored:
        if score == 0 or len(chosen) == limit:
            break
        if all(abs(i - j) > EXCERPT_BEFORE for j in chosen):
            chosen.append(i)
    return sorted(chosen)


def excerpt(turns: Sequence[tuple[str, str]], index: int) -> str:
    """The turns around ``index``, the cue turn marked with ``>>``."""
    lines = []
    for i in range(max(0, index - EXCERPT_BEFORE), min(len(turns), index + EXCERPT_AFTER + 1)):
        speaker, text = turns[i]
        words = " ".join(text.split())
        if len(words) > EXCERPT_LINE_CHARS:
            words = words[:EXCERPT_LINE_CHARS].rsplit(" ", 1)[0] + " ..."
        lines.append(f"{'>> ' if i == index else ''}{speaker}: {words}")
    return "\n".join(lines)


# The prompt's example sentences: a small model copies them as if the meeting had said them, so
# they are scaffolding (never stored), and their specifics ("Friday") are not in any transcript.
EXAMPLES = ("The team chose a rubber case.", "Marketing will send the survey by Friday.")


def extraction_prompt(title: str, excerpts: Sequence[str], *, memory_enabled: bool,
                      speakers: Sequence[str] = ()) -> list[dict[str, str]]:
    """Chat messages asking the model to state what each excerpt establishes."""
    person = (
        'Mark "about_person": true only for a lasting fact or preference about the speaker '
        '"me" themself — never for a decision, task or commitment — and "scope": "profile" '
        "when such a claim holds everywhere, not only in this Space."
        if memory_enabled
        else 'Set "about_person": false for every item.'
    )
    system = (
        "You state what was established in a conversation, as typed assertions. Use only what "
        "the excerpts say; never invent. Reply with JSON only."
    )
    numbered = "\n\n".join(f"[{i}]\n{e}" for i, e in enumerate(excerpts, 1))
    user = (
        f"Conversation: {title or 'untitled'}\nSpeakers: {', '.join(speakers)}\n\n"
        f"Excerpts (a line marked >> is the one that matters):\n{numbered}\n\n"
        'Return {"assertions": [...]} with at most one item per excerpt, and none for an '
        "excerpt where nothing was decided, promised or preferred. Each item:\n"
        '- "kind": "decision" (the group settled on something), "commitment" (someone will do '
        'something), "task", "preference" or "fact"\n'
        '- "text": one sentence in your own words saying who decided or will do what, e.g. '
        f'"{EXAMPLES[0]}" or "{EXAMPLES[1]}"\n'
        '- for a decision: "chosen" (the option taken, a few words), "alternatives" (options '
        'not taken), "reasoning" (why, if said)\n'
        '- for a commitment or task: "owner" (the speaker who will do it, as named above) and '
        '"due" (when, if said)\n'
        '- "evidence": a few words copied from the excerpt that show it\n'
        f"{person}"
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


PROMPT_WORDS = validate.scaffolding(
    ["about_person", "json schema", "a line marked", "excerpt", "your own words",
     "the option taken", "options not taken", *(e.rstrip(".") for e in EXAMPLES)])


def check_assertion(item: ExtractedAssertion, people: Sequence[str],
                    turns: Sequence[str]) -> ExtractedAssertion | None:
    """``item`` as it may be stored, or None (:mod:`daemon.memory.validate`'s rules): a decision
    needs a real chosen option; a commitment or task whose owner did not speak is kept as a
    fact, without the owner."""
    text = validate.scrub(item.text)
    if not validate.is_statement(text, turns, PROMPT_WORDS, names=people,
                                 min_words=validate.MIN_ASSERTION_WORDS):
        return None

    def field(value: str) -> str:
        value = validate.scrub(value)
        return "" if PROMPT_WORDS.search(value) or validate.looping(value) else value

    kind = item.kind
    chosen = alternatives = reasoning = owner = due = None
    if kind == "decision":
        chosen = field(item.chosen)
        if not validate.real_choice(chosen) or validate.owner_of(chosen, people):
            return None  # "Yes", or a speaker's name: not an option that was chosen
        alternatives = validate.unique_items(
            a for a in map(field, item.alternatives)
            if validate.real_choice(a) and not validate.same_item(a, chosen))
        reasoning = field(item.reasoning)
        if len(validate.words(reasoning)) < 3 or validate.same_item(reasoning, text):
            reasoning = ""
    if kind in ("commitment", "task"):
        owner = (validate.owner_of(item.owner, people)
                 or validate.named_among_them(item.owner, people, turns))
        if owner is None:
            kind = "fact"
        else:
            due = field(item.due)
    return msgspec.structs.replace(
        item, kind=kind, text=text, chosen=chosen or "", alternatives=alternatives or [],
        reasoning=reasoning or "", owner=owner or "", due=due or "")


_WORD = re.compile(r"[^\W_]+")


def content_words(text: str) -> set[str]:
    """Lowercased words of three letters or more that are not stop words, crudely stemmed."""
    words = _WORD.findall(unicodedata.normalize("NFC", text).lower())
    return {_stem(w) for w in words if len(w) >= 3 and w not in STOP_WORDS}


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


@dataclass(frozen=True)
class AnchorCandidate:
    chunk_id: int
    text: str


def find_anchor(
    assertion: ExtractedAssertion, chunks: Sequence[AnchorCandidate], *, min_share: float = 0.5
) -> int | None:
    """The chunk that supports ``assertion``, or None when none shares enough content words.

    The assertion's own words (and its evidence) must overlap a chunk: at least half of its
    content words, and at least two of them when it has two or more.
    """
    words = content_words(" ".join([assertion.text, assertion.chosen, assertion.evidence]))
    if not words:
        return None
    needed = max(min(2, len(words)), round(len(words) * min_share))
    best: tuple[int, int] | None = None
    for chunk in chunks:
        shared = len(words & content_words(chunk.text))
        if shared >= needed and (best is None or shared > best[0]):
            best = (shared, chunk.chunk_id)
    return best[1] if best else None


def normalise(text: str) -> str:
    """The form in which two memories count as the same sentence."""
    text = unicodedata.normalize("NFKC", text).casefold()
    return " ".join(_WORD.findall(text))


@dataclass(frozen=True)
class KnownMemory:
    text: str
    space_id: int | None  # None: profile-wide


def already_known(candidate_text: str, session_space_id: int | None,
                  known: Sequence[KnownMemory]) -> bool:
    """Whether the user has already been asked about this sentence in a visible scope.

    Any status counts (rejected too). A profile-wide memory is visible everywhere; a memory of
    another Space is not visible here and shadows nothing.
    """
    needle = normalise(candidate_text)
    return any(
        normalise(m.text) == needle and (m.space_id is None or m.space_id == session_space_id)
        for m in known
    )


# -- reconciliation ------------------------------------------------------------------------------


class Ruling(msgspec.Struct, frozen=True):
    # "done" / "dropped": the new statement closes an open commitment or task (it supersedes it)
    verdict: Literal["duplicate", "supersedes", "done", "dropped", "separate"]
    existing: int = 0  # which numbered existing assertion it concerns (1-based), 0 if separate


@dataclass(frozen=True)
class Existing:
    id: int
    kind: str
    text: str
    occurred_at: str
    open: bool = False  # an open commitment or task, which the new statement may close


def reconcile_prompt(
    new_text: str, new_kind: str, existing: Sequence[Existing]
) -> list[dict[str, str]]:
    listed = "\n".join(
        f"{i}. [{'open ' if e.open else ''}{e.kind}, said {e.occurred_at}] {e.text}"
        for i, e in enumerate(existing, 1)
    )
    closing = any(e.open for e in existing)
    system = (
        "You keep a memory consistent. Compare a new statement with existing ones and rule: "
        '"duplicate" if an existing one already says the same thing; "supersedes" if the new '
        "one replaces or corrects an existing one (a changed decision, an updated date or "
        "number); "
        + ('"done" if it says an open task or commitment has been done; "dropped" if it says '
           "an open one is no longer needed; " if closing else "")
        + 'otherwise "separate". Reply with JSON only.'
    )
    verdicts = ('"duplicate" | "supersedes" | "done" | "dropped" | "separate"' if closing
                else '"duplicate" | "supersedes" | "separate"')
    user = (
        f"Existing:\n{listed}\n\nNew [{new_kind}]: {new_text}\n\n"
        f'Return {{"verdict": {verdicts}, "existing": N}} where N is '
        "the number of the existing statement concerned (0 when separate)."
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


@dataclass(frozen=True)
class Plan:
    action: Literal["insert", "skip", "supersede"]
    target: int | None = None  # the existing assertion id linked or superseded
    closes: Literal["done", "dropped"] | None = None  # supersede: the open item is closed so


def plan_from_ruling(ruling: Ruling, existing: Sequence[Existing], new_kind: str = "") -> Plan:
    """What to write for a ruling; a ruling naming no valid existing row inserts, and so does
    one that closes what is not an open item. A statement of ``new_kind`` other than a
    commitment or task that supersedes an open item closes it as done: what replaces an
    obligation and is no obligation itself says it is met (an updated commitment stays
    open)."""
    if ruling.verdict == "separate" or not 1 <= ruling.existing <= len(existing):
        return Plan("insert")
    concerned = existing[ruling.existing - 1]
    if ruling.verdict in ("done", "dropped"):
        if not concerned.open:
            return Plan("insert")
        return Plan("supersede", concerned.id, closes="done" if ruling.verdict == "done"
                    else "dropped")
    if ruling.verdict == "duplicate":
        return Plan("skip", concerned.id)
    if concerned.open and new_kind and new_kind not in ("commitment", "task"):
        return Plan("supersede", concerned.id, closes="done")
    return Plan("supersede", concerned.id)
