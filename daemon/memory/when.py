""""When did Lena sign up for a cooking class?" answered from Lena's own words, without a
model: what "yesterday", "last Friday", "last week" (or a past "on Friday") meant the day
they said it ("On 1 July 2023 [1]."), or, their words saying no time, that it was done by
that day ("By 2 July 2023 [1].": what the words prove, not that it was done that day; not of
a plan: "I'll play the final on Friday" says nothing done). Asked of what is to come ("When is
Omar attending a chess tournament?", "When will …", "When does … plan …"), it is read off their
plan and the time ahead it says ("I'm hoping to attend a chess tournament next month": "In
September 2023 [1]."; "I'll present it on Friday": the Friday after); a plan with no time
answers nothing.

A small model answers such a question with the session's date whatever the turn says ("I
signed up yesterday" is not the day it was said), or with a date from nowhere; the day is in
the turn and its session, and reading it is deterministic. The question must ask what one
person who speaks in what was recalled did ("When did ... / When was ... / When were ..."), or
the user ("When did I send Dana the contract?": the turns of "me"); the sentence that answers
is one of theirs (not a question they ask, not a transcript's bracketed note) that says at
least half of the question's other words. The most such words wins; of two saying as many,
one that says when, then the higher source. A month or a year the question names must be the
answer's ("When did Priya run a half marathon in August?" is not answered by a race of July).
No such sentence: the model answers, as for any question.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Sequence
from typing import NamedTuple

from daemon.memory.extract import content_words
from daemon.memory.grounding import (
    ME,
    Source,
    named_people,
    sentence_units,
    shares_word,
    speakers_of,
)
from daemon.memory.relative_time import RELATIVE, day_text, resolve

_ASKS_WHEN = re.compile(r"\s*when\s+(did|was|were|is|are|will|does|do)\s+(\w+)", re.IGNORECASE)
_AHEAD_ASKED = frozenset({"is", "are", "will", "does", "do"})  # "When is Omar attending ...?"
_NOTE = re.compile(r"\[[^\]]*\]")
_MONTH = re.compile(r"\b(?:January|February|March|April|May|June|July|August|September|October"
                    r"|November|December)\b")
_ON_WEEKDAY = re.compile(r"\bon (Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)\b",
                         re.IGNORECASE)
# the speaker's plan ("I'll play the final on Friday", "we're going to ..."), not a clause's
_AHEAD = re.compile(r"\b(?:I|we)(?:'ll| will|'m going to| am going to|'re going to| are going"
                    r" to|'m gonna| plan| am planning|'m planning|'re planning)\b", re.IGNORECASE)
_YEAR = re.compile(r"\b(?:19|20)\d\d\b")
# what a plan is said with besides "I'll" / "we're going to": "I'm attending ...", "we're
# putting on ..."
_GOING = re.compile(r"\b(?:I'm|I am|we're|we are)\s+\w+ing\b", re.IGNORECASE)
SHARE = 0.5  # of the question's words (its person's name left out) the sentence must say


class _Said(NamedTuple):
    shared: int  # how many of the question's words it says
    dated: bool  # it says when ("yesterday", "last week")
    source: Source
    when: str  # "on 1 July 2023", "by 2 July 2023"


def when_answer(question: str, sources: Sequence[Source]) -> str | None:
    """The answer to ``question`` — when the one it names did something — from the sentence
    of theirs in ``sources`` that says it (see the module docstring), citing its source:
    "On 1 July 2023 [1]."; None when the question is not such a question or no sentence
    says it."""
    asked = _ASKS_WHEN.match(question)
    if asked is None:
        return None
    ahead = asked[1].lower() in _AHEAD_ASKED
    named = {ME} if asked[2].lower() == "i" else named_people(question, speakers_of(sources))
    if len(named) != 1:
        return None
    who = next(iter(named))
    event = content_words(question) - content_words(who) - {"when"}
    if not event:
        return None
    needed = max(1, math.ceil(len(event) * SHARE))
    found: list[_Said] = []
    for source in sources:
        if source.kind != "transcript" or not source.date:
            continue
        said_on = dt.datetime.fromtimestamp(source.date).date()
        for passage in source.passages:
            if passage.speaker.casefold() != who.casefold():
                continue
            for sentence in sentence_units(_NOTE.sub(" ", passage.text)):
                if sentence.endswith("?"):
                    continue
                have = content_words(sentence)
                shared = sum(1 for word in event if shares_word({word}, have))
                if shared < needed:
                    continue
                told = _planned(sentence, said_on) if ahead else _told(sentence, said_on)
                if told is None and (ahead or _AHEAD.search(sentence)):
                    continue  # a plan with no time: nothing done by that day, nor to be
                when = told or f"by {day_text(said_on)}"
                if _agrees(question, when):
                    found.append(_Said(shared, told is not None, source, when))
    if not found:
        return None
    said = max(found, key=lambda f: (f.shared, f.dated, -f.source.n))
    return f"{said.when[0].upper()}{said.when[1:]} [{said.source.n}]."


def _told(sentence: str, said_on: dt.date) -> str | None:
    """When ``sentence``, said on ``said_on``, says it happened, resolved ("yesterday": "on 1
    July 2023"; "I won it on Friday!": the Friday before), or None when it says no time."""
    relative = RELATIVE.search(sentence)
    if relative is not None:
        return resolve(relative[0], said_on)
    weekday = _ON_WEEKDAY.search(sentence)
    if weekday is not None and not _AHEAD.search(sentence):  # not "I'll go on Friday"
        return resolve(f"last {weekday[1]}", said_on)
    return None


def _planned(sentence: str, said_on: dt.date) -> str | None:
    """When ``sentence``, said on ``said_on``, plans it to be ("I'm attending a book conference
    next month": "in September 2023"; "I'll present it on Friday" or "next Friday": the Friday
    after; "we're going tonight": that day), or None when it plans nothing or says no time
    ahead."""
    if not _AHEAD.search(sentence) and not _GOING.search(sentence):
        return None
    ahead = next((m for m in RELATIVE.finditer(sentence)  # "tomorrow", "next Friday", "tonight"
                  if m["tomorrow"] or m["today"] or (m["side"] or "").lower() == "next"
                  or (m["unit"] and m["last"].lower() != "last")), None)
    if ahead is not None:
        return resolve(ahead[0], said_on)
    weekday = _ON_WEEKDAY.search(sentence)
    if weekday is not None:  # "I'll present it on Friday": the Friday after
        return resolve(f"next {weekday[1]}", said_on)
    return None


def _agrees(question: str, when: str) -> bool:
    """Whether ``when`` is in the month and the year ``question`` names, if it names one."""
    return all(set(pattern.findall(question)) <= set(pattern.findall(when))
               for pattern in (_MONTH, _YEAR))
