"""Whose words answer a question about a person: a question about one of two people that
memory answers only with what the other said of themselves is not answered.

"What did Priya learn at the cooking class?" — when the turns that match it are Lena's ("I
took a cooking class ... I learned to slow down"), memory does not say it of Priya, however
well the words match. A small model answers such a question from the
other person's turn anyway, and a check of its sentences against the quotes cannot tell
(the words are there): the decision is taken on the evidence, before the model writes.

Deterministic, no model: each sentence of the recalled passages is counted for the person the
question names, for the other one, or for nobody, by whose it is (:func:`_whose`), and each
turn scored, for each of the two, by the question's content words (its people's names left
out) its sentences of that person share, each word weighed by how few of the recalled
sentences share it (a word every sentence has tells nothing). Whose a sentence is: what a
speaker says of themselves ("I", "we") is theirs, what they say to the other ("you", "your")
the other's — "Congrats on your cooking show!" is not its speaker's show —, a question asked
of the other ("What are your plans?") is theirs too (what they answer follows), a sentence
that names the person is theirs, and one with no person in it ("It stands for freedom.") its
speaker's only in a turn where they speak of themselves.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from daemon.memory.extract import content_words
from daemon.memory.grounding import (
    CHAT_OF_TWO,
    FIRST_PERSON,
    SECOND_PERSON,
    Source,
    named_people,
    sentence_units,
    shares_word,
    speakers_of,
)

# How much more the other one's best turn must weigh (the weights of the question words its
# sentences of them share) than the best one of (or to, or about) the person asked about:
# chosen on the dev chats, each conversation held out in turn (docs/benchmarks/ask.md)
MARGIN = 0.25
# Words a question is built with rather than what it asks about ("How many …", "How long …",
# "What kind of …", "What activities …", "… make / take …"): shared by one person's turns as
# often as the other's, they would decide whose words answer on chance. Each is one whose
# leaving out declines fewer answerable questions of the dev chats and no fewer never-said ones
# (docs/benchmarks/ask.md).
_SCAFFOLD = content_words("activities kind long many make made making take taking gone")
_GREETING = ("hey|hi|hello|thanks|thank you|yeah|yes|wow|oh|congrats|congratulations|aw|aww"
             "|ok|okay|sure|great|good|right|sorry|bye|dear")


def said_by_another(question: str, sources: Sequence[Source], *,
                    margin: float = MARGIN) -> bool:
    """Whether ``question`` names one of the two people who speak in ``sources`` and what
    matches it best is said by the other of themselves, weighing ``margin`` (:data:`MARGIN`)
    more than anything said by, to or of the one named (see the module docstring). False
    whenever it cannot tell: no single person named, more than two speaking, nothing left of
    the question but names."""
    people = speakers_of(sources)
    speaking = {p.speaker for s in sources if s.kind != "context" for p in s.passages
                if p.speaker}
    named = named_people(question, people)
    if len(named) != 1 or len(speaking) > CHAT_OF_TWO:
        return False
    who = next(iter(named))
    about = content_words(question) - set(people) - _SCAFFOLD
    if not about:
        return False
    passages = [p for s in sources if s.kind != "context" for p in s.passages]
    said = [(p.speaker, sentence_units(p.text)) for p in passages]
    weight = _weights(about, [content_words(s) for _, turn in said for s in turn])
    best = {True: 0.0, False: 0.0}  # of the one asked about, of the other
    for speaker, turn in said:
        if not speaker:  # an item's text, said by nobody, counts for nobody
            continue
        of_self = any(FIRST_PERSON.search(s) for s in turn if not s.endswith("?"))
        shared: dict[bool, set[str]] = {True: set(), False: set()}
        for sentence in turn:
            whose = _whose(who, speaker, sentence, of_self)
            if whose is not None:
                words = content_words(sentence)
                shared[whose] |= {w for w in about if shares_word({w}, words)}
        for whose, found in shared.items():
            best[whose] = max(best[whose], sum(weight[w] for w in found))
    return best[False] - best[True] >= margin


def _weights(words: set[str], sentences: Sequence[set[str]]) -> dict[str, float]:
    """Each of ``words`` weighed by how few of ``sentences`` (their content words) share it:
    log((n + 1) / (1 + how many share it)) — 0 for a word every one of them has."""
    return {w: math.log((len(sentences) + 1)
                        / (1 + sum(1 for s in sentences if shares_word({w}, s))))
            for w in words}


def _whose(who: str, speaker: str, sentence: str, of_self: bool) -> bool | None:
    """Whether ``sentence``, said by ``speaker`` in a chat of two, is of ``who`` (True), of
    the other one (False) or of nobody (None): a question of the one it asks ("you", not
    "I"; another question of nobody); else of ``who`` when it names them (not only to
    address them: "Thanks, Omar!") or speaks of both ("I loved your painting"); else of its
    speaker when they speak of themselves ("I", "we"), of the one spoken to ("you"); else —
    no person in it — of its speaker when ``of_self`` (their turn speaks of themselves
    elsewhere), else of nobody."""
    mine = bool(FIRST_PERSON.search(sentence))
    yours = bool(SECOND_PERSON.search(sentence))
    if sentence.endswith("?"):
        return speaker != who if yours and not mine else None
    first = re.escape(who.split()[0])
    if re.search(rf"\b{first}\b", sentence, re.IGNORECASE) and not _addressed(sentence, first):
        return True
    if mine and yours:
        return True
    if mine:
        return speaker == who
    if yours:
        return speaker != who
    return speaker == who if of_self else None


def _addressed(sentence: str, name: str) -> bool:
    """Whether ``name`` (a regex) is said to its bearer ("Hey Omar", "Yeah, Priya, keep it up",
    "Good luck, Omar!") rather than of them."""
    return bool(re.search(rf"(?:^|[,!?]\s*|\b(?:{_GREETING})\s+){name}\b", sentence,
                          re.IGNORECASE)
                or re.search(rf"\b{name}\s*[,!?.]", sentence, re.IGNORECASE))
