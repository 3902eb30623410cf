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
from typing import Annotated, Literal

import msgspec

from daemon.store.fts import STOP_WORDS

AssertionKind = Literal["decision", "fact", "commitment", "preference", "task"]
ASSERTION_KINDS: tuple[AssertionKind, ...] = (
    "decision", "fact", "commitment", "preference", "task",
)
# Per model call (a piece of the transcript). The schema caps the list too, so a small model
# cannot run on until its answer is cut off and lost (a 0.5B model did, at 1024 tokens).
MAX_ASSERTIONS = 8
MAX_ALTERNATIVES = 4


class ExtractedAssertion(msgspec.Struct, frozen=True):
    kind: AssertionKind
    text: str
    chosen: str = ""
    alternatives: Annotated[list[str], msgspec.Meta(max_length=MAX_ALTERNATIVES)] = []
    reasoning: str = ""
    owner: str = ""
    due: str = ""
    about_person: bool = False  # a standing claim about the user themself
    scope: Literal["space", "profile"] = "space"
    evidence: str = ""  # words from the transcript that support it


class Extraction(msgspec.Struct, frozen=True):
    assertions: Annotated[list[ExtractedAssertion], msgspec.Meta(max_length=MAX_ASSERTIONS)]


def extraction_prompt(title: str, transcript: str, *, memory_enabled: bool) -> list[dict[str, str]]:
    person = (
        'Also mark "about_person": true only for a lasting fact or preference about the user '
        '("me") themself — never for a decision, task or commitment — and "scope": "profile" '
        "when such a claim holds everywhere, not only in this Space."
        if memory_enabled
        else 'Set "about_person": false for every item.'
    )
    system = (
        "You extract what was established in a conversation, as typed assertions. Use only what "
        "the transcript says; never invent. Each item is one short self-contained sentence. "
        "Reply with JSON only."
    )
    user = (
        f"Conversation: {title}\n\nTranscript (speaker: words):\n{transcript}\n\n"
        'Return {"assertions": [...]} with at most '
        f"{MAX_ASSERTIONS} items, each with:\n"
        '- "kind": decision | fact | commitment | preference | task\n'
        '- "text": the assertion in one sentence\n'
        '- for a decision: "chosen", "alternatives" (the options not taken), "reasoning"\n'
        '- for a commitment or task: "owner" (who will do it) and "due" (when, if said)\n'
        '- "evidence": a few words copied from the transcript that support it\n'
        f"{person}"
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


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
