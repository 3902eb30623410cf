"""Assertion extraction and write-time reconciliation: the pure rules.

The model proposes typed assertions (decision {chosen, alternatives[], reasoning}, fact,
commitment {owner, due}, preference, task); each is anchored to the chunk that supports it —
the chunk sharing the most of its content words — and dropped when no chunk shares enough
(nothing enters anonymously). New assertions are reconciled against similar current
ones: the model rules duplicate / supersedes / separate. Person-memory candidates are
suppressed when the user has already answered the same sentence in a visible scope
(`already_known`).

Pure: the model calls and the database live in ``daemon.memory.remember``.
"""

from __future__ import annotations

import functools
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
OWED = ("commitment", "task")  # the kinds someone owes: action items
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


# -- decisions said in so many words ------------------------------------------------------------
# Shown the turns around a decision cue of a real meeting, a small model copies its prompt's
# example or the turns themselves (an acknowledgement, "Yeah. We're on our way.", worded as a
# decision; "the team" as what was chosen). What people say when they have settled
# something has a few plain forms — "we decided to …", "we agreed on …", "a consensus that …",
# "we're going with …", "we went for …", "we're gonna focus on …" (with fillers between: "so
# I'm seeing that we're gonna just basically focus on the students"), and the ones presenting
# their choice, "we want to go for a printed map" — and read off
# those, a decision is what was said: its option, why and instead of what when said, who
# settled it, nothing invented. A question, a condition or a negation ("if we decide", "we
# haven't agreed", "why we want to keep it close") settles nothing; nor does a proposal
# ("let's") unless the others take it up (below).

SETTLED_SAID = re.compile(
    r"\b(?P<who>we|i|they)(?:'ve| have)?(?: all| basically| just| now| finally)? "
    r"(?P<verb>decided|agreed|settled|chose|picked(?! up\b)|opted)"
    r"(?P<link> on| upon| to| that| for)? "
    r"(?P<what>.+)"
    r"|\bconsensus (?P<clink>that|on) (?P<cwhat>.+)"
    r"|\b(?P<going>we'?re|we are|we'?ll|we will)(?: definitely| just| basically)? go(?:ing)? "
    r"(?:in )?(?:with|for) (?P<gwhat>.+)"
    r"|\bwe(?: just| finally)? (?P<went>went|ended up going) (?:with|for) (?P<wwhat>.+)"
    r"|\bwe(?:(?:'re| are) (?:gonna|going to)|'ll| will)(?: just| basically| only| definitely)* "
    r"(?P<focus>focus on|concentrate on|aim (?:it )?at|target|stick (?:with|to)) (?P<fwhat>.+)"
    r"|\bwe(?: really| just| also)* (?:want|would like|'d like) to(?: just| also)? "
    r"(?P<want>go (?:for|with)|use|stick (?:to|with)) (?P<twhat>.+)"
    r"|\bwe(?: just| basically)? (?P<recall>stick (?:with|to)) (?P<rwhat>.+)"
    r"|\bwe(?:'re| are) (?:(?:gonna|going to) have|having) (?P<having>(?:a|an|the|two|one) .+)",
    re.I)
_UNSETTLED = re.compile(r"\b(not|never|n't|if|whether|unless|when|how|what|why|do we|should|"
                        r"could|would|might|need to|have to|going to)\b", re.I)
_OPTION_END = re.compile(r";| - |, and |, (?:yeah|okay|right)\b| but | because |,? ?'cause | cos "
                         r"| so that | so | if "
                         r"| when | as opposed to | instead of | rather than "
                         r"| which | and then "
                         r"| or | um | uh |\.", re.I)
_BECAUSE = re.compile(r"(?:\bbecause|'cause|\bcos) (?:of )?(?P<why>[^,;.]+)", re.I)
_NUMBERS = frozenset(["a", "an", "the", "zero", "one", "two", "three", "four", "five", "six",
                      "seven", "eight", "nine", "ten", *map(str, range(11))])
_INSTEAD = re.compile(r"\b(?:instead of|rather than|as opposed to) (?P<alt>[^,;.]+)", re.I)
OPTION_WORDS = 10  # more is a copy of the turn, not an option
# the verb of taking an option, before the option itself ("go with the rubber case")
_TAKING = re.compile(r"^(?:go(?:ing)? (?:with|for)|stick (?:with|to)|opt for|settle on|use|"
                     r"choose|pick|take|have) ", re.I)
_NOT_AN_OPTION = {"already", "yet", "before", "earlier", "it", "this", "that", "these",
                  "those", "they", "them",  # said before: "we decided those were the buttons"
                  "with"}  # "I agreed with him": with someone, on nothing said
_TROUBLE = re.compile(r"\b(?:issues?|problems?|trouble|difficult\w*)\b", re.I)
_POINTING = {"this", "that", "these", "those"}  # an option when they point at one named next
_LINKING = {"is", "are", "was", "were", "will", "would", "'s", "'re"}


def _without_dangling(ws: list[str]) -> list[str]:
    """``ws`` without the words a clause cut short ends in ("… of the", "… if")."""
    while ws and CUT_OFF.search(ws[-1].casefold().strip(",")):
        ws = ws[:-1]
    return ws


def _phrase(text: str, limit: int) -> str:
    """``text`` cut at the end of its clause, at most ``limit`` words, no dangling word."""
    ws = _without_dangling(_OPTION_END.split(text, maxsplit=1)[0].split()[:limit])
    return " ".join(ws).strip(" ,!")


def said_decision(speaker: str, sentence: str) -> ExtractedAssertion | None:
    """The decision a sentence of ``speaker``'s states in one of the plain forms above, or
    None."""
    found = SETTLED_SAID.search(sentence)
    if found is None or sentence.rstrip().endswith("?"):
        return None
    focus = found.group("focus")
    if _UNSETTLED.search(sentence[:found.start()] + " " + (
            "" if focus or found.group("want") or found.group("having")
            else found.group(0)[:24])):
        return None
    rest = (found.group("what") or found.group("cwhat") or found.group("gwhat")
            or found.group("wwhat") or found.group("fwhat") or found.group("twhat")
            or found.group("rwhat") or found.group("having") or "")
    said = _phrase(rest, OPTION_WORDS)
    chosen = _TAKING.sub("", said)  # "the rubber case" of "go with the rubber case"
    if not chosen or not _an_option(chosen):
        return None  # "we decided that already": "that" was the option, said before
    who = speaker if (found.group("who") or "").casefold() == "i" else "The group"
    if found.group("verb"):
        text = f"{who} {found.group('verb').casefold()}{found.group('link') or ''} {said}."
    elif found.group("cwhat"):
        text = f"{who} agreed {found.group('clink').casefold()} {said}."
    elif found.group("went"):
        text = f"{who} went with {chosen}."
    elif found.group("want") or found.group("recall") or found.group("having"):
        # a team's choice as its designers present it; one kept to; one the close lists
        if MEETING_BUSINESS.search(chosen) or _TROUBLE.search(chosen):
            return None  # "we're gonna have a couple of minor finance issues"
        text = f"{who} is going with {chosen}."
    elif focus:
        text = f"{who} will {focus.casefold()} {chosen}."
    else:
        will = found.group("going").casefold() in ("we'll", "well", "we will")
        text = f"{who} {'will go' if will else 'is going'} with {chosen}."
    instead = _INSTEAD.search(rest)
    return ExtractedAssertion(
        kind="decision", text=text, chosen=chosen,
        alternatives=[_phrase(instead.group("alt"), 6)] if instead else [],
        reasoning=_reasons(rest), evidence=" ".join(sentence.split())[:160])


# An option dropped is a decision too, the dropped one its alternative: "We will omit the
# printed guide in favour of a video.", "the second stage will have to go,'cause that's the
# most expensive thing on there".
DROPPED_SAID = re.compile(
    r"\bwe(?:'ll| will|'re gonna|'re going to| are going to)(?: just| definitely| then)? "
    r"(?:omit|drop|get rid of|leave out|take out|scrap|do away with) (?P<what>.+)"
    r"|^(?:(?:so|okay|yeah|well|and|then),? )*(?P<gone>(?:the|that|this) [\w' -]+?) "
    r"(?:will|would|'ll) (?:have to|need to) go\b(?P<after>.*)", re.I)
_IN_FAVOUR = re.compile(r"\bin favou?r of (?P<chosen>[^,;.]+)", re.I)


def dropped_decision(sentence: str) -> ExtractedAssertion | None:
    """The decision to drop an option a sentence states (see above), or None: the option
    taken instead is the chosen one when said, else going without the dropped one."""
    found = DROPPED_SAID.search(sentence)
    if found is None or sentence.rstrip().endswith("?"):
        return None
    before = sentence[:found.start()]
    if _UNSETTLED.search(before) or _HEDGED.search(before):
        return None  # "maybe we'll drop the speaker": a thought
    rest = found.group("what") or found.group("after") or ""
    dropped = _phrase(found.group("gone") or _IN_FAVOUR.split(rest, maxsplit=1)[0],
                      OPTION_WORDS)
    if not dropped or not _an_option(dropped) or MEETING_BUSINESS.search(dropped):
        return None
    instead = _IN_FAVOUR.search(rest)
    chosen = _phrase(instead.group("chosen"), OPTION_WORDS) if instead else ""
    text = (f"The group will drop {dropped} in favour of {chosen}." if chosen
            else f"The group will drop {dropped}.")
    return ExtractedAssertion(
        kind="decision", text=text, chosen=chosen or f"no {_bare(dropped)}",
        alternatives=[dropped], reasoning=_reasons(rest),
        evidence=" ".join(sentence.split())[:160])


def _bare(option: str) -> str:
    """``option`` without its article ("sample sensor" of "the sample sensor")."""
    return re.sub(r"^(?:the|a|an|that|this) ", "", option, flags=re.I)


def _reasons(rest: str) -> str:
    """The reason said after a decision's option ("because …", "'cause …"), or ""."""
    why = _BECAUSE.search(rest)
    return _phrase(why.group("why"), 12) if why else ""


def _an_option(chosen: str) -> bool:
    """Whether ``chosen`` names an option: not what was said before ("that", "those"), and
    not a bare number ("a three": of what, only the question said)."""
    ws = chosen.casefold().split()
    # "this young demographic group" names one; "that concept" and "this color" point back
    said_before = ws[0] in _NOT_AN_OPTION and (
        ws[0] not in _POINTING or ws[1:2] == [] or ws[1] in _LINKING
        or len(validate.content_words(" ".join(ws[1:]))) < 2)
    return (validate.real_choice(chosen) and not said_before
            and not all(w in _NUMBERS for w in ws))


# -- a proposal the others accept ----------------------------------------------------------------
# Much of what a meeting settles is put as a proposal — "let's go for a plastic case", "shall
# we go with the curved one?", "I think we should stick with the basic buttons" — and settled
# when another speaker answers it with agreement ("yeah", "okay", "sure", "I agree") and nobody
# objects. The answer is to what its turn said last: a proposal further up a turn that goes on
# is not what the "yeah" answers. A proposal nobody answers, or answered with a question, a
# "but" or a "no", settles nothing; nor does one put as a condition or a hedge, one for what
# the meeting itself does next ("let's have a look", "let's go for the presentations": no
# option of the thing being made), or an exhortation ("let's keep supporting each other").

PROPOSED = re.compile(
    r"\b(?:let'?s|let us|shall we|(?:i think )?we should|i(?: would|'d)? (?:say|suggest) we|"
    r"why don'?t we)(?: just| all| then| definitely| probably| also)? "
    r"(?P<verb>go (?:with|for)|stick (?:with|to)|opt for|settle (?:on|for)|choose|pick|use|"
    r"make it|include|add|aim (?:at|for)|target|leave (?:out|it as)|drop)"
    r" (?!to\b)(?P<what>.+)", re.I)
# what a meeting does next, not an option of what it is about ("let's have a look", "let's go
# for the presentations", "we should finish our talk first")
MEETING_BUSINESS = re.compile(r"\b(look|presentations?|meeting|agenda|minutes|break|lunch|talk|"
                              r"discussion|questions?|time|turn|desktop|folder|file|e-?mail|"
                              r"slides?)\b", re.I)
_OPINION_END = re.compile(r",?\s*\b(?:i think|i guess|i suppose|i mean)$", re.I)
_HEDGED = re.compile(r"\b(maybe|perhaps|possibly|probably)\b", re.I)
_BACKCHANNEL = frozenset(["mm", "hmm", "mhm", "hm", "uh", "huh", "um", "oh"])  # "Mm-hmm."
AGREES = re.compile(r"^(?:yeah|yes|yep|yup|okay|ok|sure|fine|agreed|alright|all right|good|"
                    r"great|cool|definitely|absolutely|exactly|true|fair enough|sounds good|"
                    r"good idea|i agree|that'?s fine|perfect|excellent)\b", re.I)
OBJECTS = re.compile(r"\?|n't\b|\b(?:no|not|nope|but|instead|rather|although|though|unless|"
                     r"what about|how about|or)\b", re.I)
ACCEPT_TURNS = 3  # the turns after a proposal in which the others answer it


def _substantive(text: str) -> bool:
    """Whether a turn says more than a backchannel ("Mm-hmm.", "Uh-huh."), which answers
    nothing."""
    return any(w not in _BACKCHANNEL for w in re.findall(r"[^\W\d_]+", text.casefold()))


def accepted(turns: Sequence[tuple[str, str]], index: int) -> bool:
    """Whether the proposal in turn ``index`` is accepted: before its speaker goes on (a
    "yeah" while someone presents is a backchannel, not an answer) and within
    :data:`ACCEPT_TURNS` turns, the first thing another speaker says agrees, and nothing
    another speaker says objects."""
    proposer = turns[index][0]
    answers = []
    for speaker, text in turns[index + 1:index + 1 + ACCEPT_TURNS]:
        if speaker == proposer:
            break
        if _substantive(text):
            answers.append(_SPEECH_FILLER.sub("", " ".join(text.split())).strip())
    return bool(answers) and bool(AGREES.match(answers[0])) and not any(
        OBJECTS.search(a) for a in answers)


def proposed_decision(turns: Sequence[tuple[str, str]], index: int,
                      sentence: str) -> ExtractedAssertion | None:
    """The decision a proposal in a sentence of turn ``index`` settles when the others accept
    it (see above), or None."""
    found = PROPOSED.search(sentence)
    if found is None:
        return None
    before = sentence[:found.start()]
    if _UNSETTLED.search(before) or _HEDGED.search(before):
        return None  # "if we go for …, let's …": a condition; "maybe we should": a thought
    if sentence.rstrip().endswith("?") and not re.search(r"\bshall we\b", sentence, re.I):
        return None  # "should we go for …?" asks; "shall we go for …?" proposes
    chosen = _phrase(found.group("what").rstrip("?"), OPTION_WORDS)
    if (not _an_option(chosen) or MEETING_BUSINESS.search(chosen)
            or not accepted(turns, index)):
        return None
    verb = found.group("verb").casefold()
    instead = _INSTEAD.search(found.group("what"))
    return ExtractedAssertion(
        kind="decision", text=f"The group agreed to {verb} {chosen}.", chosen=chosen,
        alternatives=[_phrase(instead.group("alt"), 6)] if instead else [],
        reasoning=_reasons(found.group("what")), evidence=" ".join(sentence.split())[:160])


# -- a summing-up that goes on -------------------------------------------------------------------
# A meeting's close sums up what was settled in one breath that the others' "Right." and "Yep."
# cut into turns ("So we've basically worked out that we're going with the smaller hall, the
# later date" — "Right." — "and a caterer from town, paid in advance" — "and the tickets are
# also printed. We're having a band outside and then a quiz inside."). The turns of the same
# speaker that go on with "and …" after a decision said
# in so many words are items of the same list: each part of them is a decision too.

SUMMED_TURNS = 8  # how far on the summing-up may go on
_GOES_ON = re.compile(r"^(?:and|plus|also)\b", re.I)
_LIST_PARTS = re.compile(r",? and then |,? and (?=(?:we|it|the|a|an)\b)|; |, (?=we\b)", re.I)
_PART_LEAD = re.compile(r"^(?:(?:and|plus|also|then|so|on the (?:inside|outside)|"
                        r"we(?:'re| are) (?:having|incorporating|using|adding|including|"
                        r"putting in)|we(?:'ve| have) got|it(?:'s| is) (?:gonna|going to) "
                        r"(?:be|have|be in)|be in|be|sort of|kind of)\b,? ?)+",
                        re.I)
_LOOKS = re.compile(r"^it(?:'s| is) (?:gonna|going to) look (?:sort of |kind of )?(?P<look>.+)",
                    re.I)
# a part that points back or tells of someone ("That's our overall concept", "you can use it
# just plain") is no option
_DEICTIC = re.compile(r"^(?:that|this|it|there|you|we|i|they|he|she)(?:'s| is| was)?\b", re.I)
_STATES = re.compile(r"\b(?:is|are|will be)\b", re.I)


def _interjection(text: str) -> bool:
    """Whether a turn only interjects (a backchannel or a word or two: "Right.", "Yep.")."""
    return not _substantive(text) or len(text.split()) <= 3


def summed_up(turns: Sequence[tuple[str, str]],
              index: int) -> list[tuple[int, ExtractedAssertion]]:
    """The decisions a summing-up that starts in turn ``index`` goes on to list in its
    speaker's next turns (see above), each with its turn's index."""
    speaker = turns[index][0]
    found = []
    for i in range(index + 1, min(len(turns), index + 1 + SUMMED_TURNS)):
        who, text = turns[i]
        if who != speaker:
            if _interjection(text):
                continue
            break
        sentences = spoken_clauses(text, casefold=False)
        if not sentences or not _GOES_ON.match(sentences[0]):
            break
        for sentence in sentences:
            if sentence.rstrip().endswith("?"):
                continue
            for part in _LIST_PARTS.split(sentence.rstrip(" .,")):
                item = _listed(part, sentence)
                if item is not None:
                    found.append((i, item))
    return found


def _listed(part: str, sentence: str) -> ExtractedAssertion | None:
    """The decision one part of a summing-up's list states, or None."""
    looks = _LOOKS.match(re.sub(r"^(?:and|plus|also) ", "", part.strip(), flags=re.I))
    option = (f"a {_phrase(looks.group('look'), OPTION_WORDS - 2)} look" if looks
              else _phrase(_PART_LEAD.sub("", part.strip()), OPTION_WORDS))
    if (not option or _DEICTIC.match(option) or not _an_option(option)
            or (MEETING_BUSINESS.search(option) and not looks) or _UNSETTLED.search(option)):
        return None
    states = _STATES.search(option)
    text = (f"The group settled that {option}." if states
            else f"The group is going with {option}.")
    chosen = _PART_LEAD.sub("", option[states.end():].strip()) if states else option
    if not chosen or not _an_option(chosen):
        return None
    return ExtractedAssertion(kind="decision", text=text, chosen=chosen,
                              evidence=" ".join(sentence.split())[:160])


def decisions_at(turns: Sequence[tuple[str, str]]) -> list[tuple[int, ExtractedAssertion]]:
    """Every decision the turns (speaker, text) state, or propose and the others accept, with
    the index of the turn that states it, in transcript order. ``turns`` are all of them: the
    "Yeah." that accepts a proposal is one."""
    found = []
    for i, (speaker, text) in enumerate(turns):
        sentences = spoken_clauses(text, casefold=False)
        for n, sentence in enumerate(sentences, 1):
            item = said_decision(speaker, sentence) or dropped_decision(sentence)
            if item is not None:
                found.append((i, item))
                if item.text.startswith("The group") and n == len(sentences):
                    found += summed_up(turns, i)  # a proposal is no summing-up
            elif n == len(sentences):  # what the next speaker answers
                # (a requirement put and agreed — "it has to be robust" — is not read as a
                # decision: of seven read off the dev meetings none was one the group settled:
                # "it should be a good in your hand", "it has to be made in the buttons")
                item = proposed_decision(turns, i, sentence)
                if item is not None:
                    found.append((i, item))
    return sorted(found, key=lambda x: x[0])


def find_decisions(turns: Sequence[tuple[str, str]]) -> list[ExtractedAssertion]:
    """Every decision the turns (speaker, text) state, or propose and the others accept, in
    transcript order."""
    return [item for _, item in decisions_at(turns)]


# -- undertakings: commitments and tasks, read from the turn that takes them on -----------------
# Who owes what is read off the transcript, not asked of the model: a 0.5B model names the
# wrong person, and turns a past remark ("we released a TFT thing I saw") into a task. A turn
# takes something on when a speaker says they will do a piece of work ("I will investigate",
# "the look and feel is also my task") — the owner is the speaker — or gives one to someone:
# to a participant it names ("the industrial designer will work on ..."), or to "you" when the
# next speaker accepts it ("And you will look into the technical design" — "yeah, also my
# task"), or asks "can you ..." and is told "I will". "You can / you should ..." is how people
# describe things and give advice ("you can zap", "you should put more time in the design"),
# not an assignment; a question, a clause under "what" or "if" ("I dunno what I'm going to
# design"), a negation or anything in the past takes nothing on, and neither does what is done
# in the meeting itself ("I'll show you", "I'll save it": no piece of work is named).

# Work that is done after the meeting by its nature; and verbs that name it only when the
# sentence says it is for later ("I'll make notes and put them in the project folder", not
# "I'll make an example", "I'm gonna write down here").
WORK = (r"((?P<work>investigate|look (into|up)|have a look|research|find out|send|e-?mail|mail|"
        r"forward|prepare|draft|work (on|out)|contact|call|phone|think (about|of)|"
        r"come up with|study|update|organi[sz]e|arrange|figure out|sort out|take care of|"
        r"compile|collect|gather|summari[sz]e|order|book|schedule|review|follow up|explore)|"
        r"(?P<weak>check|write|design|bring|ask|present|search|read|handle|fix|test|talk to|"
        r"make|put|try))")
LATER = re.compile(r"\b(next (meeting|time|week)|after (the|this) meeting|afterwards|later|"
                   r"tomorrow|tonight|by (monday|tuesday|wednesday|thursday|friday|the)|folder|"
                   r"project documents?|e-?mail|when i'?m (done|back)|before)\b")
_GAP = r"(?:[\w'-]+ ){0,3}?"  # "I'll just quickly send": a few words between
SELF_UNDERTAKING = re.compile(
    r"(?<!what )(?<!how )(?<!if )(?<!whether )(?<!when )\b(i'?ll|i will|i shall|i'?m going to|"
    r"i am going to|i'?m gonna|i'?ll have to)( also)? " + _GAP + WORK + r"\b"
    r"|(?<!not )\b(is|are|'s|be) (also |now )?my (task|job|responsibility)\b"
    r"(?! to (explain|present|tell|talk|show|give|point))"
    r"|\bmy (task|job) (is|will be)\b"
    r"|\bi('ll| will)( be)? (responsible|in charge) for\b")  # not "I am ...": a role
# Any piece of work the speaker dates ("I'll rotate the deploy bot token by Friday"): a deadline
# says it is work to do after the meeting whatever its verb ("I'll be there by Friday" is not).
DATED_SELF_UNDERTAKING = re.compile(
    r"(?<!what )(?<!how )(?<!if )(?<!whether )(?<!when )\b(i'?ll|i will|i shall|i'?m going to|"
    r"i am going to|i'?m gonna)( also)? (?!be\b)[\w'-]+\b[^.?!]*?\b(by|before) (the )?"
    r"(monday|tuesday|wednesday|thursday|friday|saturday|sunday|tomorrow|tonight|"
    r"next (week|meeting)|the next meeting|end of (the )?(day|week|month))\b", re.I)
# what a meeting's close hands out ("you're going to look at the components concept", "you will
# focus on the component concept"); said of oneself it is as often what one does in the meeting
# ("I'll look at show this board")
HANDED_OUT = r"(be )?look(ing)? at|(be )?focus(ed|ing)? on"
# ... and said as what "you" are doing from now on ("basically you're looking at the
# budget," — "Alright."): the hand-out in the present, only as the others accept it
HANDED_OUT_NOW = (r"(?<!what )(?<!if )(?<!when )(?<!where )you('re| are) (also |now )?"
                  r"(?=(looking at|focusing on) )")  # not "what you're looking at here is"
YOU_UNDERTAKING = re.compile(
    r"\b(you'?ll|you will|you('re| are) going to|(it'?s|is) your (task|job)( to)?|"
    r"your (task|job) is( to)?)( also)? " + _GAP + "(" + WORK + "|" + HANDED_OUT + r")\b"
    r"|\b" + HANDED_OUT_NOW)
REQUEST = re.compile(r"^((so|and|but|well|okay|then|[\w]+,) )?(can|could|would) you( mind)? "
                     + _GAP + WORK + r"\b")
ACCEPTANCE = re.compile(r"\b(yes|yeah|yep|okay|ok|sure|alright|right|fine|will do|no problem|"
                        r"i will|i'?ll|my task|of course)\b")
AGREEMENT = re.compile(r"\b(sure|will do|no problem|i will|i'?ll|of course)\b")
_SPEECH_FILLER = re.compile(r"\b(uh|um|er|erm|hmm|mm|ah)\b[,.]?\s*", re.I)
_SENTENCES = re.compile(r"(?<=[.!?])\s+")
DUE = re.compile(
    r"\b(by|before|until|on|for) (the )?(monday|tuesday|wednesday|thursday|friday|saturday|"
    r"sunday|tomorrow|tonight|next (week|meeting|time)|the next meeting|end of (the )?"
    r"(day|week|month))\b|\b(tomorrow|next week|(for|at|before) the next meeting)\b", re.I)
CUT_OFF = re.compile(r"\b(if|and|or|but|to|the|a|an|of|for|that|with|at|on|in|whether|so)$")
UNDERTAKING_TURN_AFTER = 2  # how far on the acceptance of a "you will ..." may come
EXCERPT_BEFORE = 2  # turns shown to the model before an undertaking it words
EXCERPT_LINE_CHARS = 320
GROUP_TURNS = 4  # undertakings of one owner this close are one piece of work


@dataclass(frozen=True)
class Undertaking:
    """A turn that takes a piece of work on: whose it is, and whether another speaker gave it
    (a task) or the owner took it on (a commitment)."""

    index: int  # of the turn
    owner: str  # the speaker, as written
    assigned: bool
    due: str = ""
    said: str = ""  # the work in the words said, when they say "I will …" / "you will …"


_STUTTER = re.compile(r"\b([\w']+(?: [\w']+){0,2})(?: \1\b)+", re.I)  # "to make to make"


def spoken_clauses(text: str, *, casefold: bool = True) -> list[str]:
    """``text`` lowercased (unless not ``casefold``) in sentences, fillers ("uh", "um") and
    stutters of up to three words ("I'll I'll", "to make to make") out."""
    plain = _SPEECH_FILLER.sub("", text.replace("’", "'"))
    plain = plain.casefold() if casefold else plain
    plain = _STUTTER.sub(r"\1", " ".join(plain.split()))
    return [s for s in _SENTENCES.split(plain) if s]


# "I will look into the costs" — the work in the speaker's words, told of its owner: what was
# said needs no model to restate it (a 0.5B model wrote "Marketing will ask a Teletubby front
# to investigate" for "… a Teletubby front. … I will investigate.").
_SAID_WORK = re.compile(
    r"\b(?:(?P<i>i'?ll|i will|i shall|i'?m going to|i am going to|i'?m gonna)|you'?ll|you will|"
    r"you(?:'re| are) going to|(?P<now>you(?:'re| are))(?= (?:also |now )?(?:looking at|"
    r"focusing on) ))(?: also| just| then| now)? (?P<work>.+)$", re.I)
_CLAUSE_END = re.compile(r",|;| - | but | because | so that | so | if | when | and then | or ",
                         re.I)
_FIRST_PERSON = ("i", "my", "me", "myself", "mine")
_THIRD_PERSON = {"my": "their", "me": "them", "myself": "themselves", "mine": "theirs",
                 "your": "their", "you": "them", "yourself": "themselves", "i": "they"}
# a longer run of a turn's words is a copy, not a statement (validate.COPY_WORDS); at 10, "ask
# the supplier for a quote on the longer case by Tuesday" went to the 0.5B model, which worded
# it from the turns before ("Ben will make them bigger, but the case gets longer.")
SAID_WORK_WORDS = validate.COPY_WORDS
_NAMES_WORK = re.compile(r"(?:(?:just|quickly|also|then|now|probably|maybe|definitely|actually|"
                         r"first|go and|try and|try to) )*" + WORK + r"\b", re.I)
_HANDS_OUT = re.compile(r"(?:you'?ll|you will|you(?:'re| are) going to)\b.*\b(?:" + HANDED_OUT
                        + r")\b", re.I)


def said_work(sentence: str, *, mine: bool = False, given: bool | None = None) -> str:
    """The work a sentence of an undertaking names after its "I will" / "you will" (only
    "you …" when ``given``, only "I …" when ``given`` is False; the first that names work),
    in the third person ("look into the costs of the case"), or, when ``mine`` (the user's
    own), with the user's "my" kept; "" when it names none so plainly or at more than
    :data:`SAID_WORK_WORDS` words. "so you're you'll be getting the details …, but
    basically you're looking at the budget," hands out the second."""
    plain = sentence.rstrip(".!")
    start = 0
    while (found := _SAID_WORK.search(plain, start)) is not None:
        start = found.start() + 1
        if given is None or given is not bool(found.group("i")):
            work = _work_of(found, sentence, mine)
            if work:
                return work
    return ""


def _work_of(found: re.Match[str], sentence: str, mine: bool) -> str:
    """The work one "I will …" / "you will …" of :func:`said_work` names, or ""."""
    work = _CLAUSE_END.split(found.group("work"), maxsplit=1)[0].strip()
    # "I'll presume he'll work out …" is not what they will do; dated work is, whatever its verb
    if not (_NAMES_WORK.match(work) or DATED_SELF_UNDERTAKING.search(sentence)
            or ((found.group("now") or _HANDS_OUT.match(found.group()))
                and re.match(HANDED_OUT, work, re.I))):
        return ""
    if found.group("now"):
        work = f"be {work}"  # "you're looking at …": "… will be looking at …"
    ws = _without_dangling(work.split())  # no commas: _CLAUSE_END cut at the first
    if not 1 <= len(ws) <= SAID_WORK_WORDS or _points_back(work.split()):
        return ""
    keep = _FIRST_PERSON if mine else ()
    return " ".join(w if w.casefold() in keep else _THIRD_PERSON.get(w.casefold(), w)
                    for w in ws)


_BACK = frozenset(["it", "them"])
_DEMONSTRATIVE = frozenset(["that", "this", "these", "those"])
_AFTER_OBJECT = frozenset(["to", "for", "in", "into", "on", "at", "with", "by", "after", "and",
                           "before", "out", "up", "over"])


def _points_back(ws: Sequence[str]) -> bool:
    """Whether the work said (its words, as said) names its object only by pointing back to
    what was said before ("send them to you after the meeting", "look into that"): the words
    say no piece of work a note-taker could write."""
    head = [w.casefold().strip(",") for w in ws[:3]]
    return any(w in _BACK or (w in _DEMONSTRATIVE and (
        i + 1 == len(head) == len(ws) or (i + 1 < len(ws) and ws[i + 1].casefold() in
                                           _AFTER_OBJECT))) for i, w in enumerate(head))


def _named(sentence: str, people: Sequence[str], but: str) -> str | None:
    """The participant (other than ``but``) a sentence names, when it names exactly one."""
    named = [p for p in people if validate.norm(p) != validate.norm(but)
             and validate.norm(p) not in validate.PLACEHOLDER_OWNERS
             and re.search(r"\b" + re.escape(validate.norm(p)) + r"\b", validate.norm(sentence))]
    return named[0] if len(named) == 1 else None


def find_undertakings(turns: Sequence[tuple[str, str]],
                      people: Sequence[str]) -> list[Undertaking]:
    """The turns (speaker, text) that take a piece of work on, with its owner read from the
    turn (see above), in transcript order."""
    found = []
    for i, (speaker, text) in enumerate(turns):
        given = given_to_named(text, people, speaker)
        if given:  # "the Marketing Expert is going to work on product evaluation"
            due = DUE.search(text)
            found += [Undertaking(i, owner, True, due.group() if due else "", work)
                      for owner, work in given]
            continue
        for sentence in spoken_clauses(text):
            if CUT_OFF.search(sentence):  # "and I'll have a look if" — interrupted
                continue
            owner: str | None = None
            assigned = False
            if sentence.endswith("?"):
                if _work(REQUEST, sentence):  # "can you send ...?" — "sure, I will"
                    owner, assigned = _accepted_by(turns, i, AGREEMENT), True
            elif _work(SELF_UNDERTAKING, sentence) or DATED_SELF_UNDERTAKING.search(sentence):
                owner = speaker
            elif _work(YOU_UNDERTAKING, sentence):
                owner = _named(sentence, people, speaker) or _accepted_by(turns, i, ACCEPTANCE)
                assigned = True
            if owner is not None:
                due = DUE.search(text)
                said = next((w for c in spoken_clauses(text, casefold=False)
                             if c.casefold() == sentence
                             and (w := said_work(c, mine=owner == validate.ME,
                                                 given=assigned))),
                            "")
                found.append(Undertaking(i, owner, assigned, due.group() if due else "", said))
                break
    return found


# Work given to a participant by name, in the third person, as a meeting's close hands it out
# ("the Designer over here is gonna work on the layout, … the Writer will work on the copy
# and the Sales Lead is going to work on the launch plan"): each named owner and the work
# said after the name.
_GIVEN_MODAL = (r"(?:\w+ ){0,3}?(?:will|is going to|is gonna|'s going to|'s gonna|'ll|"
                r"should|has to) (?:also |then |now )?")
_GIVEN_END = re.compile(r",|;| - | but | because | so that | so | if | when | or |\.|"
                        r" and (?=(?:the|a|an|i|we|you|he|she|they|then|also|as)\b)", re.I)


# what a close gives a named participant to work on from now ("the S_L_ Dana will be
# focused on the launch plan", the name spelled out as a transcript writes it); not "will
# look at", said as often of what one does next in the meeting
_GIVEN_FOCUS = re.compile(r"be (?:focus(?:ed|ing) on|looking at) ", re.I)
_SPELLED = r"[^\W\d_]_"  # a letter as a transcript spells it out: "U_" of "U_I_D_"


def _name_said(person: str) -> str:
    """A pattern of how a turn names a participant: their name, or for a name of more than one
    word its initials spelled out, with a letter more or not ("U_I_" or "U_I_D_" for "User
    Interface" — the user interface designer)."""
    words = person.split()
    name = r"\s+".join(map(re.escape, words))
    if len(words) < 2:
        return name
    return f"(?:{name}|{''.join(re.escape(w[0]) + '_' for w in words)}(?:{_SPELLED})?)"


def given_to_named(text: str, people: Sequence[str], speaker: str) -> list[tuple[str, str]]:
    """(owner, work in the words said) for each piece of work a turn of ``speaker``'s gives a
    participant it names ("the Marketing Expert is going to work on product evaluation"), when
    the work names a piece of work (:data:`WORK`, the weaker verbs only when said for later)."""
    given: list[tuple[int, str, str]] = []  # (where in the turn, owner, work): said order
    for n, sentence in enumerate(spoken_clauses(text, casefold=False)):
        if sentence.rstrip().endswith("?"):
            continue
        for person in people:
            if validate.norm(person) in (validate.norm(speaker), *validate.PLACEHOLDER_OWNERS):
                continue
            given_to = (r"\b(?:the )?" + _name_said(person) + r"\b " + _GIVEN_MODAL
                        + r"(?P<work>.+)")
            for found in re.finditer(given_to, sentence, re.I):
                work = _GIVEN_END.split(found.group("work"), maxsplit=1)[0]
                ws = _without_dangling(work.split())
                said = " ".join(_THIRD_PERSON.get(w.casefold(), w) for w in ws)
                named = _NAMES_WORK.match(said)
                if ((_GIVEN_FOCUS.match(said)
                     or (named and (named.group("work") or LATER.search(sentence.casefold()))))
                        and 1 <= len(ws) <= SAID_WORK_WORDS and not names_no_work(said, "")):
                    given.append((n * len(text) + found.start(), person, said))
    return [(person, said) for _, person, said in sorted(given)]


def _work(pattern: re.Pattern[str], sentence: str) -> bool:
    """Whether ``sentence`` takes on a piece of work as ``pattern`` says: work done after a
    meeting, a weaker verb said with when, or "my task" saying what the task is."""
    for match in pattern.finditer(sentence):
        if match.groupdict().get("weak"):
            if LATER.search(sentence):
                return True
        elif match.groupdict().get("work") or len(
                validate.content_words(sentence) - {"task", "job", "responsibility"}) >= 2:
            return True
    return False


def _accepted_by(turns: Sequence[tuple[str, str]], index: int,
                 accepting: re.Pattern[str]) -> str | None:
    """The speaker who accepts what turn ``index`` gives "you" (their answer says
    ``accepting``), in the next turns by another."""
    giver = turns[index][0]
    for speaker, text in turns[index + 1:index + 1 + UNDERTAKING_TURN_AFTER]:
        if speaker == giver:
            continue
        said = " ".join(spoken_clauses(text))
        return speaker if accepting.search(said) and not said.endswith("?") else None
    return None


def group_undertakings(found: Sequence[Undertaking]) -> list[list[Undertaking]]:
    """Undertakings of one owner in turns close together are one piece of work, told in one
    excerpt (the assignment and its acceptance, a promise and its restatement)."""
    groups: list[list[Undertaking]] = []
    for u in found:
        last = groups[-1][-1] if groups else None
        if last is not None and last.owner == u.owner and u.index - last.index <= GROUP_TURNS:
            groups[-1].append(u)
        else:
            groups.append([u])
    return groups


class Undertaken(msgspec.Struct, frozen=True):
    text: _text(200)  # type: ignore[valid-type]


def undertaking_prompt(turns: Sequence[tuple[str, str]],
                       group: Sequence[Undertaking]) -> list[dict[str, str]]:
    """Chat messages asking the model to restate what a group of undertakings gives its owner:
    the owner is known, the model only says what the work is, from the words said (a 0.5B
    model asked to summarise an excerpt writes a generic task instead, and one shown the
    meeting's title writes the title into the task)."""
    first, last = group[0].index, group[-1].index
    owner = group[0].owner
    before = turns[max(0, first - EXCERPT_BEFORE):first]
    said = turns[first:last + 1]

    def lines(part: Sequence[tuple[str, str]]) -> str:
        return "\n".join(f"{speaker}: {_clip(text)}" for speaker, text in part)

    system = ("You turn what was said in a meeting into an action item, in the speakers' own "
              "words. Never add anything they did not say. Reply with JSON only.")
    user = (f"Just before:\n{lines(before)}\n\n"
            f"Then:\n{lines(said)}\n\nWrite the action item this gives {owner}: one sentence "
            f'that starts with "{owner} will" and says what they said {owner} will do, with '
            'the words they used. Return {"text": "..."}.')
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def _clip(text: str) -> str:
    words = " ".join(text.split())
    if len(words) > EXCERPT_LINE_CHARS:
        words = words[:EXCERPT_LINE_CHARS].rsplit(" ", 1)[0] + " ..."
    return words


GROUNDED = 0.5  # share of a stated task's content words the lines shown must contain


# a sentence about its owner says "they", not "I" or "you"
_NOT_TOLD_OF_OWNER = re.compile(r"\b(I|I'll|I'm|I've|me|my|you|your)\b")


def undertaking_assertion(answer: Undertaken, group: Sequence[Undertaking],
                          turns: Sequence[tuple[str, str]]) -> ExtractedAssertion | None:
    """The commitment (taken on) or task (given) the model's first sentence states about a
    group of undertakings, its owner and due date read from the transcript, its last turn the
    evidence; None when the sentence is not about what was said (more than half of its
    words are in none of the lines that took the work on: it made the work up), is not told of
    its owner ("I", "you": the turn copied) or tells of more than one piece of work
    ("Designer will start working on …, Writer will work on …")."""
    first = group[0]
    text = clip_sentence(validate.scrub(answer.text))
    first_person = re.match(r"(?i)i('ll| will)\b", text)
    if first_person:  # "I will investigate ..." said as the owner
        text = f"{first.owner} will{text[first_person.end():]}"
    if _NOT_TOLD_OF_OWNER.search(text) or len(re.findall(r"\bwill\b", text, re.I)) > 1:
        return None  # the turn copied ("… and then I'll take minutes"), or others' work lumped in
    # the work is in what was said when it was taken on: the lines shown before are context
    # (a sentence worded from the turns before the one that took the work on gives its owner
    # work they never took on)
    taking = turns[first.index:group[-1].index + 1]
    said = content_words(" ".join(text for _, text in taking))
    mine = content_words(text) - content_words(first.owner) - {"will"}
    if mine and len(mine & said) < GROUNDED * len(mine):
        return None
    return ExtractedAssertion(
        kind="task" if first.assigned else "commitment", text=text, owner=first.owner,
        due=next((u.due for u in group if u.due), ""),
        evidence=" ".join(turns[group[-1].index][1].split())[:160])


def said_assertion(group: Sequence[Undertaking],
                   turns: Sequence[tuple[str, str]]) -> ExtractedAssertion | None:
    """The commitment or task a group of undertakings states in the words said ("Marketing
    will investigate."), without the model; None when none of them says the work plainly
    (:func:`said_work`)."""
    said = next((u for u in group if u.said), None)
    if said is None:
        return None
    first = group[0]
    return ExtractedAssertion(
        kind="task" if first.assigned else "commitment",
        text=f"{'I' if first.owner == validate.ME else first.owner} will "
             f"{said.said}.", owner=first.owner,
        due=next((u.due for u in group if u.due), ""),
        evidence=" ".join(turns[said.index][1].split())[:160])


_FIRST_SENTENCE = re.compile(r"^.+?[.!?](?=\s|$)")


def clip_sentence(text: str) -> str:
    """The first sentence of ``text`` (asked for one, a small model sometimes goes on)."""
    found = _FIRST_SENTENCE.match(text)
    return found.group() if found else text


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


# what an action item says when it names no piece of work: "will find out", "will try and do
# that for the next meeting as well", "will have a look at it"
VAGUE_WORK = frozenset(["find", "out", "look", "try", "that", "this", "those", "them", "thing",
                        "things", "stuff", "something", "well", "next", "meeting", "time",
                        "sort", "check", "think", "see", "again", "later", "then", "now",
                        "right", "okay", "yeah", "sure"])


def names_no_work(text: str, owner: str) -> bool:
    """Whether an action item's words, its owner's aside, name no piece of work."""
    return not (content_words(text) - content_words(f"{owner} will")
                - content_words(" ".join(VAGUE_WORK)))


def check_assertion(item: ExtractedAssertion, people: Sequence[str],
                    turns: Sequence[str]) -> ExtractedAssertion | None:
    """``item`` as it may be stored, or None (:mod:`daemon.memory.validate`'s rules): a decision
    needs a real chosen option, and one that only reports a proposal is kept as a fact; a
    commitment or task whose owner did not speak is kept as a fact, without the owner, and one
    that names no piece of work (:func:`names_no_work`) is dropped."""
    text = validate.scrub(item.text)
    if not validate.is_statement(text, turns, PROMPT_WORDS, names=people,
                                 min_words=validate.MIN_ASSERTION_WORDS):
        return None

    def field(value: str) -> str:
        value = validate.scrub(value)
        return "" if PROMPT_WORDS.search(value) or validate.looping(value) else value

    kind = item.kind
    chosen = alternatives = reasoning = owner = due = None
    if kind == "decision" and validate.proposal(text):
        kind = "fact"  # "Marketing suggests a rubber case": true, and not settled
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
    if kind in OWED and names_no_work(text, item.owner):
        return None  # "Industrial Designer will find out.": a note-taker writes nothing
    if kind in OWED:
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
    return set(_content_words(text))


@functools.lru_cache(maxsize=4096)  # an ask weighs the same turns' words several times
def _content_words(text: str) -> frozenset[str]:
    words = _WORD.findall(unicodedata.normalize("NFC", text).lower())
    return frozenset(_stem(w) for w in words if len(w) >= 3 and w not in STOP_WORDS)


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


SAME_WORK = 0.5  # share of the shorter statement's content words two owed items must share


def other_work(new_text: str, new_kind: str, concerned: Existing) -> bool:
    """Whether a new commitment or task and a stored one name different work: the words of
    their work (after "will": the owner's name is no part of it) share fewer than
    :data:`SAME_WORK` of the shorter one's content words. The 0.5B model ruled "Ben will ask
    the supplier for a quote by Tuesday" a duplicate of "Ben will send the drawings to the
    supplier by Friday", and lost it; and "Industrial Designer will look at the components
    concept" a duplicate of the meeting before's "Industrial Designer will be looking at the
    working design"."""
    if not (new_text and new_kind in OWED and concerned.kind in OWED):
        return False
    new, old = _work_words(new_text), _work_words(concerned.text)
    return len(new & old) < SAME_WORK * min(len(new), len(old))


def _work_words(text: str) -> set[str]:
    """The content words of what an action item says is to be done (after its "will")."""
    return content_words(re.split(r"\bwill\b", text, maxsplit=1, flags=re.I)[-1])


def plan_from_ruling(ruling: Ruling, existing: Sequence[Existing], new_kind: str = "",
                     new_text: str = "") -> Plan:
    """What to write for a ruling; a ruling naming no valid existing row inserts, and so does
    one that closes what is not an open item, and one that makes a commitment or task
    (``new_text``) the duplicate or the update of one naming other work. A statement of
    ``new_kind`` other than a commitment or task that supersedes an open item closes it as
    done: what replaces an obligation and is no obligation itself says it is met (an updated
    commitment stays open)."""
    if ruling.verdict == "separate" or not 1 <= ruling.existing <= len(existing):
        return Plan("insert")
    concerned = existing[ruling.existing - 1]
    if ruling.verdict in ("done", "dropped"):
        if not concerned.open:
            return Plan("insert")
        return Plan("supersede", concerned.id, closes="done" if ruling.verdict == "done"
                    else "dropped")
    if other_work(new_text, new_kind, concerned):  # duplicate or supersedes: not the same work
        return Plan("insert")
    if ruling.verdict == "duplicate":
        return Plan("skip", concerned.id)
    if concerned.open and new_kind and new_kind not in ("commitment", "task"):
        return Plan("supersede", concerned.id, closes="done")
    return Plan("supersede", concerned.id)
