"""Whose words answer a question about a person: a question about one of two people that
memory answers only with what the other said of themselves is not answered.

"What did Caroline realize after her charity race?" — when the turns that match it are
Melanie's ("I ran a charity race ... I realized self-care is important"), memory does not say
it of Caroline, however well the words match. A small model answers such a question from the
other person's turn anyway, and a check of its sentences against the quotes cannot tell
(the words are there): the decision is taken on the evidence, before the model writes.

Deterministic, no model: each sentence of the recalled passages (a question asks, it says
nothing of anyone: none is counted) is scored by the question's
content words it shares (its people's names left out) and counted for the person the question
names when that person says it, names them (not only to address them: "Thanks, Tim!"), or
speaks to them ("your painting", said by the other one); else for someone else.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from daemon.memory.extract import content_words
from daemon.memory.grounding import (
    CHAT_OF_TWO,
    SECOND_PERSON,
    Source,
    named_people,
    sentence_units,
    shares_word,
    speakers_of,
)

# How many more of the question's words the best sentence of someone else must share than the
# best one of (or to, or about) the person asked about: fitted on LoCoMo dev
# (docs/benchmarks/ask.md)
MARGIN = 1
_GREETING = ("hey|hi|hello|thanks|thank you|yeah|yes|wow|oh|congrats|congratulations|aw|aww"
             "|ok|okay|sure|great|good|right|sorry|bye|dear")


def said_by_another(question: str, sources: Sequence[Source]) -> bool:
    """Whether ``question`` names one of the two people who speak in ``sources`` and what
    matches it best is said by the other of themselves, by :data:`MARGIN` words more than
    anything said by, to or of the one named (see the module docstring). False whenever it
    cannot tell: no single person named, more than two speaking, nothing left of the question
    but names."""
    people = speakers_of(sources)
    speaking = {p.speaker for s in sources if s.kind != "context" for p in s.passages
                if p.speaker}
    named = named_people(question, people)
    if len(named) != 1 or len(speaking) > CHAT_OF_TWO:
        return False
    who = next(iter(named))
    about = content_words(question) - set(people)
    if not about:
        return False
    theirs = others = 0
    for source in sources:
        if source.kind == "context":
            continue
        for passage in source.passages:
            for sentence in sentence_units(passage.text):
                if sentence.endswith("?"):  # asking says nothing of anyone
                    continue
                shared = sum(1 for w in about if shares_word({w}, content_words(sentence)))
                if _of(who, passage.speaker, sentence):
                    theirs = max(theirs, shared)
                elif passage.speaker:  # (an item's text, said by nobody, counts for nobody)
                    others = max(others, shared)
    return others - theirs >= MARGIN


def _of(who: str, speaker: str, sentence: str) -> bool:
    """Whether ``sentence``, said by ``speaker``, is by ``who``, names them (not only to
    address them), or speaks to them ("you", "your": in a chat of two, to ``who``)."""
    if speaker == who:
        return True
    first = re.escape(who.split()[0])
    if re.search(rf"\b{first}\b", sentence, re.IGNORECASE) and not _addressed(sentence, first):
        return True
    return bool(speaker) and bool(SECOND_PERSON.search(sentence))


def _addressed(sentence: str, name: str) -> bool:
    """Whether ``name`` (a regex) is said to its bearer ("Hey Tim", "Yeah, Maria, keep it up",
    "Good luck, Tim!") rather than of them."""
    return bool(re.search(rf"(?:^|[,!?]\s*|\b(?:{_GREETING})\s+){name}\b", sentence,
                          re.IGNORECASE)
                or re.search(rf"\b{name}\s*[,!?.]", sentence, re.IGNORECASE))
