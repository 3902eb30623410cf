"""What a model wrote must be before it is stored: the content rules, enforced deterministically.

A small model fills every field it is given — with transcript fragments, small talk, the roles
of the people present, the prompt's own wording — so nothing it writes is trusted as it comes:

- a statement (an assertion, an archive item) says what was established: a sentence of a few
  content words, not a question, not filler or small talk, not a run of more than
  :data:`COPY_WORDS` words copied from one turn, not a transcript line with its speaker's
  name (:func:`spoken_line`), not looping (:func:`is_statement`);
- a decision has a ``chosen`` option that is more than "yes" / "no", who chose ("the team")
  or a question (:func:`real_choice`, :func:`check_assertion`),
  and says it was settled: a proposal or a discussion is not a decision (:func:`proposal`);
- a commitment or a task has an owner who spoke in the session, or "me" / "them" (or, while
  "them" is not told apart by voice, a person the transcript names: :func:`named_among_them`);
- a name, a date or a number in a statement is one the transcript says: a small model copies
  them from its prompt's examples or makes them up (:func:`unsupported_specifics`);
- participants are the transcript's speakers, never the model's list (:func:`speakers`);
- no item appears in two sections, nor twice in one (near-same wording counts:
  :func:`same_item`);
- nothing of the prompt's scaffolding — piece labels, schema keys, the hints — is stored
  (:func:`scrub`).

Pure: no model, no database.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence

from daemon.store.fts import STOP_WORDS

COPY_WORDS = 12  # a statement sharing a longer run of words with one turn is a copied fragment
MIN_WORDS = 4  # "Design project", "Project Manager": a label, not a statement
MIN_ASSERTION_WORDS = 3  # "Likes morning meetings." says something; an assertion has a kind
NEAR_SAME = 0.8  # share of content words two items have in common to be one item
ME = "me"  # the user, speaking at the microphone
PLACEHOLDER_OWNERS = (ME, "them")
PLACEHOLDER_CHOICES = {"yes", "no", "maybe", "none", "n a", "true", "false", "unknown",
                       "not specified", "not mentioned", "tbd", "ok", "okay",
                       # who chose is not what was chosen
                       "the team", "team", "the group", "group", "we", "us", "everyone",
                       "everybody", "all", "the company", "the meeting"}

# what names no option: "Something something new."
VAGUE = frozenset(["something", "thing", "things", "stuff", "new", "option", "options", "idea",
                   "ideas", "one", "way", "whatever", "everything", "anything"])
_WORD = re.compile(r"[^\W_]+")
# What people say that states nothing: fillers, backchannels, greetings and pleasantries.
FILLER = frozenset([
    "um", "uh", "er", "ah", "eh", "hmm", "mm", "mhm", "hm", "huh", "wow", "oh", "yeah", "yes",
    "yep", "yup", "no", "nope", "okay", "ok", "well", "so", "like", "right", "sure", "alright",
    "cool", "great", "nice", "good", "fine", "thanks", "thank", "you", "hi", "hello", "hey",
    "bye", "goodbye", "please", "sorry", "just", "really", "actually", "basically", "kind",
    "sort", "gonna", "wanna", "mean", "know", "guess", "think",
])
SMALL_TALK = re.compile(
    r"\b(nice to meet|how are you|good (morning|afternoon|evening)|see you|have a (good|nice)|"
    r"my name is|i'?m (super )?(hyped|excited|glad|happy)|can(no|')t wait|"
    r"thank(s| you) (so much|for))\b", re.I)
# the sounds of hesitation: nothing a reader of the words needs ("I uh think" says "I think")
DISFLUENCIES = frozenset(["uh", "um", "er", "erm", "ah", "eh", "hmm", "hm", "mm"])
_DISFLUENCY = re.compile(r"(?<![\w'-])(?:" + "|".join(sorted(DISFLUENCIES)) + r")(?![\w'-]),?",
                         re.I)
_SPACE_BEFORE_PUNCT = re.compile(r"\s+(?=[.,;:?!])")
_LEFT_PUNCT = re.compile(r"[,;:]+(?=[.?!])|(?<=[.?!])\.+")  # "it, um." -> "it."
PIECE_LABEL = re.compile(r"\s*\(?\bpart \d+ of \d+( of the transcript)?\b\)?", re.I)


def words(text: str) -> list[str]:
    return _WORD.findall(unicodedata.normalize("NFKC", text).casefold())


def fluent(text: str) -> str:
    """``text`` without its sounds of hesitation (:data:`DISFLUENCIES`), spaces collapsed."""
    said = _SPACE_BEFORE_PUNCT.sub("", " ".join(_DISFLUENCY.sub("", text).split()))
    said = _LEFT_PUNCT.sub("", said)
    return said.lstrip(" .,;:?!")


def norm(text: str) -> str:
    """The form in which two names or items count as the same words."""
    return " ".join(words(text))


def content_words(text: str) -> set[str]:
    return {w for w in words(text) if len(w) >= 3 and w not in STOP_WORDS and w not in FILLER}


def speakers(names: Iterable[str]) -> list[str]:
    """The distinct speakers, in order of first appearance: an archive's participants."""
    seen: set[str] = set()
    out = []
    for name in names:
        key = norm(name)
        if key and key not in seen:
            seen.add(key)
            out.append(name.strip())
    return out


def copied_run(text: str, turns: Sequence[str], limit: int = COPY_WORDS) -> bool:
    """Whether ``text`` shares a run of more than ``limit`` consecutive words with one turn
    (an "uh" in the turn does not break the run)."""
    mine = words(fluent(text))
    n = limit + 1
    if len(mine) < n:
        return False
    grams = {tuple(mine[i:i + n]) for i in range(len(mine) - n + 1)}
    for turn in turns:
        theirs = words(fluent(turn))
        if any(tuple(theirs[i:i + n]) in grams for i in range(len(theirs) - n + 1)):
            return True
    return False


def looping(text: str) -> bool:
    """A model that ran on repeating itself: a three-word run said three times or more, or
    fewer than a third distinct words in a long text."""
    ws = words(text)
    if len(ws) >= 12 and len(set(ws)) < len(ws) / 3:
        return True
    counts: dict[tuple[str, ...], int] = {}
    for i in range(len(ws) - 2):
        gram = tuple(ws[i:i + 3])
        counts[gram] = counts.get(gram, 0) + 1
        if counts[gram] >= 3:
            return True
    return False


PROMPT_PHRASES = ("json schema", "copied exactly", "word for word", "one turn per line",
                  "an empty list if nothing fits", "about_person", "key_quotes", "key quotes",
                  "action_items")


def scaffolding(vocabulary: Iterable[str]) -> re.Pattern[str]:
    """A pattern matching prompt wording (schema keys, hints, :data:`PROMPT_PHRASES`) in a
    model's answer."""
    alternatives = sorted({re.escape(v) for v in [*vocabulary, *PROMPT_PHRASES] if v},
                          key=len, reverse=True)
    return re.compile(r"\b(" + "|".join(alternatives) + r")\b" if alternatives else r"(?!x)x",
                      re.I)


def scrub(text: str) -> str:
    """``text`` without piece labels ("part 2 of 3 of the transcript"), whitespace collapsed."""
    return " ".join(PIECE_LABEL.sub("", text).split())


def is_statement(text: str, turns: Sequence[str] = (),
                 prompt_words: re.Pattern[str] | None = None, *, questions: bool = False,
                 min_words: int = MIN_WORDS, names: Sequence[str] = ()) -> bool:
    """Whether ``text`` states something established (see the module's rules); with
    ``questions``, an open question counts too (an archive's "Still open")."""
    ws = words(text)
    if len(ws) < min_words or len(content_words(text)) < 2:
        return False
    if (text.rstrip().endswith("?") and not questions) or SMALL_TALK.search(text):
        return False
    if sum(w in FILLER for w in ws) > len(ws) / 2:
        return False
    if prompt_words is not None and prompt_words.search(text):
        return False
    if spoken_line(text, names):
        return False
    if turns and unsupported_specifics(text, turns, names):
        return False
    return not (looping(text) or copied_run(text, turns))


_SENTENCE_START = re.compile(r"(?:^|[.!?;:]\s+|\n)\W*$")
_CAPITALISED = re.compile(r"\b[A-Z][^\W_]*(?:['’][^\W_]+)?")
_DIGITS = re.compile(r"\d+")
_UNITS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
          "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen",
          "eighteen", "nineteen")
_TENS = ["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]


_ORDINALS = {"one": "first", "two": "second", "three": "third", "five": "fifth",
             "eight": "eighth", "nine": "ninth", "twelve": "twelfth"}


def _number_words(n: int) -> set[str]:
    """How a speech transcript may write ``n`` (whisper and meeting transcripts often spell
    numbers out), cardinal and ordinal ("3", "three", "third")."""
    if n < 20:
        spoken = [_UNITS[n]]
    elif n < 100:
        spoken = [_TENS[n // 10 - 2], *([_UNITS[n % 10]] if n % 10 else [])]
    else:
        return {"hundred"} if n % 100 == 0 and n < 1000 else {"thousand"} if n == 1000 else set()
    last = spoken[-1]
    ordinal = _ORDINALS.get(last) or (last[:-1] + "ieth" if last.endswith("y") else last + "th")
    return {*spoken, ordinal}


def transcript_vocabulary(turns: Sequence[str], names: Sequence[str] = ()) -> set[str]:
    """Every word the transcript (and its speakers' names) contains, casefolded; spelled-out
    letters ("L_C_D_") also joined ("lcd")."""
    said = set(words(" ".join([*turns, *names])))
    said |= set(_DIGITS.findall(" ".join(turns)))  # "3rd" says 3
    for turn in turns:
        for token in turn.split():
            joined = "".join(c for c in token if c.isalnum()).casefold()
            if joined:
                said.add(joined)
    return said


def unsupported_specifics(text: str, turns: Sequence[str], names: Sequence[str] = (), *,
                          said: set[str] | None = None) -> list[str]:
    """The names, dates and numbers in ``text`` that the transcript does not contain: a
    capitalised word other than the first of a sentence, or a number (as digits or words)."""
    said = transcript_vocabulary(turns, names) if said is None else said
    missing = []
    for match in _CAPITALISED.finditer(text):
        word = match.group().casefold().replace("’", "'").split("'")[0]
        if word == "i" or _SENTENCE_START.search(text[:match.start()]):
            continue
        if word not in said:
            missing.append(match.group())
    for match in _DIGITS.finditer(text):
        digits = match.group()
        if digits not in said and not (_number_words(int(digits[:6])) & said):
            missing.append(digits)
    return missing


def named_among_them(owner: str, people: Sequence[str], turns: Sequence[str]) -> str | None:
    """``owner`` when the session's other side is the undivided "them" and the transcript names
    that person: until voices are told apart everyone on the call's audio speaks as "them"."""
    name = " ".join(owner.split())
    if not name or "them" not in {norm(p) for p in people} or len(words(name)) > 3:
        return None
    said = transcript_vocabulary(turns)
    return name if all(w in said for w in words(name)) else None


def owner_of(owner: str, people: Sequence[str]) -> str | None:
    """The speaker ``owner`` names (as that speaker is written), "me"/"them", or None."""
    key = norm(owner)
    if not key:
        return None
    for person in people:
        if norm(person) == key:
            return person
    for placeholder in PLACEHOLDER_OWNERS:
        if key == placeholder:
            return placeholder
    return None


PROPOSAL = re.compile(
    r"\b(suggest\w*|propos\w*|recommend\w*|consider\w*|discuss\w*|brainstorm\w*|explor\w*|"
    r"might|could|may|maybe|perhaps|possibly|would like|wants? to|wish\w*|thinks?|believes?|"
    r"ideas?|options?|should we|whether)\b", re.I)
SETTLED = re.compile(r"\b(decid\w*|decision|agree\w*|chose|chosen|settled|picked|selected|"
                     r"final\w*|confirmed|approved)\b", re.I)


def proposal(text: str) -> bool:
    """Whether a "decision" only reports a proposal or a discussion ("Marketing suggests a
    rubber case", "the team discussed the colours"): nothing in it says it was settled."""
    return bool(PROPOSAL.search(text)) and not SETTLED.search(text)


def real_choice(chosen: str, text: str = "") -> bool:
    """A decision's chosen option: something, not "yes", "no", a placeholder, who chose
    ("the team") or a question ("I_C_s?")."""
    key = norm(chosen)
    return (bool(key) and key not in PLACEHOLDER_CHOICES and len(key) >= 2
            and not chosen.rstrip().endswith("?") and bool(content_words(chosen) - VAGUE))


_IN_PERSON = re.compile(r"\b(i|i'm|i'd|i'll|i've|me|my|mine|you|your|yours|you're|you'll|we|"
                        r"we're|we'll|we've|we'd|our|ours)\b", re.I)


def in_person(text: str, names: Sequence[str] = ()) -> bool:
    """Whether ``text`` speaks as someone in the conversation ("I", "you", "we" — unless a
    speaker is called so): a third-person account never does, a copy of speech does."""
    called = {norm(name) for name in names}
    return any(found.casefold() not in called for found in _IN_PERSON.findall(text))


def spoken_line(text: str, names: Sequence[str]) -> bool:
    """Whether ``text`` is a line of the transcript ("Project Manager: Yeah. We're on our
    way."): it starts with a speaker's name and a colon."""
    head, colon, _ = text.partition(":")
    return bool(colon) and norm(head) in {norm(n) for n in names}


def same_item(a: str, b: str) -> bool:
    """Two items that say the same: the same words, or nearly all content words shared."""
    if norm(a) == norm(b):
        return True
    wa, wb = content_words(a), content_words(b)
    if not wa or not wb:
        return False
    return len(wa & wb) / min(len(wa), len(wb)) >= NEAR_SAME and \
        len(wa & wb) / max(len(wa), len(wb)) >= NEAR_SAME - 0.2


def unique_items(items: Iterable[str], taken: list[str] | None = None) -> list[str]:
    """``items`` without (near-)duplicates of each other or of ``taken`` (which the kept ones
    join, so that a later section cannot repeat an earlier one)."""
    taken = [] if taken is None else taken
    kept = []
    for item in items:
        if any(same_item(item, t) for t in taken):
            continue
        taken.append(item)
        kept.append(item)
    return kept
