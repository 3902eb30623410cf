"""Questions over a person, a kind and a period, read and answered without a model (pure).

"What did Sarah commit to this month?", "what did we decide about pricing since March?",
"what's still open?", "what do I owe them?", "what was still open after the last meeting?":
such a question names what it wants — a kind (commitments and tasks, or decisions), an owner,
a period, only what is still open, a topic — and the answer must come from *every* assertion
that matches, not from the five passages a search happens to rank first.

:func:`read_question` reads those filters (the period through :mod:`daemon.store.recency`, the
owner from the names the store knows, so nothing is guessed from capitals), and
:func:`select` applies them to the assertions in scope: deterministic, oldest first. A question
that names no item kind, or names one but no owner, period or "still open" ("what did we
decide about pricing?"), is not one of these (None): search answers it, with the transcript.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence

import msgspec

from daemon.memory.extract import content_words
from daemon.store.fts import STOP_WORDS
from daemon.store.recency import time_focus
from daemon.store.records import Assertion

ITEM_KINDS: tuple[str, ...] = ("commitment", "task")
DECISION_KINDS: tuple[str, ...] = ("decision",)

_ITEMS = re.compile(
    r"\b(commit\w*|promis\w*|owe[sd]?|owing|assign\w*|task\w*|action items?|to-?dos?|"
    r"follow[- ]ups?|deliverables?|responsib\w*|(?:will|going to|supposed to|agreed to) do|"
    r"take on|took on|signed up)\b"
)
_DECISIONS = re.compile(r"\b(decid\w*|decision\w*|agree[ds]?|agreement|chose|chosen|settled)\b")
_OPEN = re.compile(
    r"\b(still open|open items?|(?:is|are|was|were|what'?s) (?:still )?open|outstanding|"
    r"pending|unfinished|not (?:yet )?done|left to do|owe|owes|owed|carried forward|"
    r"open from last time)\b"
)
_SINCE = re.compile(r"\bsince\b")
_AFTER_LAST = re.compile(r"\bafter (?:the )?(?:last|previous) (?:meeting|session|call)\b")
_ME = re.compile(r"\b(?:i|me|my|mine|myself)\b")
# words of a question that say what it asks, not what it is about
_QUESTION_WORDS = frozenset(content_words(
    "what which who whom when did does do doing done has have had was were still open commit "
    "committed commitment commitments promise promised owe owes owed task tasks decide "
    "decided decision decisions agree agreed item items since month week year last this past "
    "today yesterday meeting session call time them they our ours about after before between "
    "outstanding pending action thing things anything everything everyone anybody "
))


class ItemQuestion(msgspec.Struct, frozen=True, kw_only=True):
    """What a question over items asks for. ``start``/``end``: the period, [start, end) in
    unix time (None: any time); ``after_last``: as things stood when the last session
    before now ended (the caller knows when that was)."""

    kinds: tuple[str, ...]
    owner: str | None = None
    open_only: bool = False
    start: float | None = None
    end: float | None = None
    after_last: bool = False
    topic: tuple[str, ...] = ()  # content words the items must share one of (e.g. "pricing")


def read_question(question: str, now: dt.datetime,
                  owners: Sequence[str] = ()) -> ItemQuestion | None:
    """The filters a question states, or None when it asks for no kind of item, or for one
    without an owner, a period or "still open".

    ``owners``: the owner names in scope; the owner asked about is the most of one of them
    the question names ("Sarah" of "Sarah Chen": a name is read only when someone is called
    so); "I"/"me" is the user when ``me`` is one of them.
    """
    kinds = asks_for(question)
    if not kinds:
        return None
    text = question.lower()
    open_only = _OPEN.search(text) is not None
    start, end = period(question, now)
    owner = _owner(text, owners)
    after_last = _AFTER_LAST.search(text) is not None
    if owner is None and start is None and not (open_only or after_last):
        return None  # "what did we decide about pricing?": search, with the transcript
    words = content_words(question)
    named = content_words(owner or "")
    topic = tuple(sorted(w for w in words if w not in _QUESTION_WORDS and w not in named
                         and not _is_period_word(w)))
    return ItemQuestion(kinds=kinds, owner=owner, open_only=open_only, start=start, end=end,
                        after_last=after_last, topic=topic)


def asks_for(question: str) -> tuple[str, ...]:
    """The kinds of assertion a question asks about: commitments and tasks (also whatever is
    "still open"), decisions, or none (a cheap test, before anything is read)."""
    text = question.lower()
    if _ITEMS.search(text) or _OPEN.search(text):
        return ITEM_KINDS
    return DECISION_KINDS if _DECISIONS.search(text) else ()


def period(text: str, now: dt.datetime) -> tuple[float | None, float | None]:
    """The period a text names, [start, end) in unix time — every period it names, "since"
    running to ``now`` — or (None, None) when it names none."""
    focus = time_focus(text, now)
    if focus is None or not focus.windows:
        return None, None
    start = min(w.start for w in focus.windows)
    end = max(w.end for w in focus.windows)
    if _SINCE.search(text.lower()):
        end = max(end, now.timestamp())
    return start, end


def _owner(text: str, owners: Sequence[str]) -> str | None:
    words = set(re.findall(r"[^\W_]+", text))
    best: str | None = None
    for owner in owners:
        named = [w for w in re.findall(r"[^\W_]+", owner.lower())
                 if w in words and w != "me" and w not in STOP_WORDS]
        if named and (best is None or len(" ".join(named)) > len(best)):
            best = " ".join(named)
    if best is None and _ME.search(text) and any(o.strip().lower() == "me" for o in owners):
        return "me"
    return best


_PERIOD_WORDS = frozenset(content_words(
    "january february march april may june july august september october november december "
    "jan feb mar apr jun jul aug sep sept oct nov dec monday tuesday wednesday thursday "
    "friday saturday sunday day days weeks months years ago recent recently latest "
))


def _is_period_word(word: str) -> bool:
    return word in _PERIOD_WORDS or word.isdigit()


def owner_matches(owner: str | None, name: str) -> bool:
    """Whether an item's owner is the person ``name`` names: every word of ``name`` is a word
    of the owner ("Sarah" is "Sarah Chen" and "sarah"), case and punctuation aside; an item
    without an owner is nobody's."""
    wanted = re.findall(r"[^\W_]+", name.casefold())
    return bool(owner and wanted) and set(wanted) <= set(re.findall(r"[^\W_]+",
                                                                    (owner or "").casefold()))


def select(assertions: Sequence[Assertion], asked: ItemQuestion,
           open_ids: set[int] | None = None) -> list[Assertion]:
    """Every assertion that matches, oldest first (ties by id): of the kinds asked, of the
    owner, said within the period, sharing a topic word when the question has a topic, and —
    for an open-only question — among ``open_ids``. A topic that no candidate shares is
    dropped rather than emptying the answer: it was likely a word of the question's form."""
    def matches(a: Assertion, topic: bool) -> bool:
        return (a.kind in asked.kinds
                and (asked.owner is None or owner_matches(a.owner, asked.owner))
                and (asked.start is None or a.occurred_at >= asked.start)
                and (asked.end is None or a.occurred_at < asked.end)
                and (not asked.open_only or open_ids is None or a.id in open_ids)
                and (not topic or not asked.topic or _shares(a, asked.topic)))

    chosen = [a for a in assertions if matches(a, True)]
    if not chosen and asked.topic:
        chosen = [a for a in assertions if matches(a, False)]
    return sorted(chosen, key=lambda a: (a.occurred_at, a.id))


def _shares(a: Assertion, topic: tuple[str, ...]) -> bool:
    words = content_words(" ".join(filter(None, [a.text, a.chosen, a.reasoning, a.owner,
                                                 *a.alternatives])))
    return bool(words & set(topic))
