"""A value said in a turn judged by its context: is the turn giving a credential?

The rules of :mod:`daemon.sensitive.spoken` need the phrasings they were written from; people
say a PIN, a door code or a password in more ways than anyone writes down ("I set the hotel safe
to 1 5 0 9", "for the church hall alarm you put in 6060"). This detector does not parse: it
finds every *value-shaped* span of a turn (digits, grouped or spelled out, letters and digits
mixed, passphrases of joined words, symbols inside a word, and a passphrase said as plain words
after its cue or as the answer to a turn that names one), describes it by its shape and the
words around it (before and after it in the turn, and the turn said before it, whoever said
it), and scores it with a linear model trained on labelled turns (:mod:`bench.secrets_train`
writes its weights to ``judge-weights.json`` beside this module, a versioned data file whose
sha256 is pinned here and checked at load). Words are taken both as themselves and by the class
they belong to (a word for a credential, for something a code opens, for a quantity, a date,
an id), so a lock nobody wrote into the training set still reads like a lock.

A word no list holds is placed by word vectors (:mod:`daemon.sensitive.vectors`, the installed
embedding model's word pieces): a compound in the classes of its last part ("mastercode" as
"code"), any other word in every class one of whose one-piece listed words is near it
("temporary" as "temp"). A secret word anywhere earlier in the turn counts too ("the
combination is left 32, right 14, left 7, so 32 14 7"), beyond the eight words read one by one.

What stays: a span is masked only when the score reaches the model's threshold. Look-alikes —
order numbers, extensions, dates, prices, versions, rooms, tickets — carry the words that say so
and a shape that says so (a year, a decimal, a time, a currency sign).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import math
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from daemon.sensitive.finding import Finding
from daemon.sensitive.spoken import named_public, says_public
from daemon.sensitive.vectors import VectorsUnavailable, WordVectors, read

Matrix = npt.NDArray[np.float32]

__all__ = ["CLASSES", "KIND", "LEXICON", "MODEL", "WEIGHTS_FILE", "Candidate", "Lexicon", "Model",
           "WeightsUnavailable", "candidates", "features", "judged", "load_model", "prepare",
           "score", "use_vectors", "words"]

KIND = "password"
log = logging.getLogger(__name__)

_DIGIT_WORD = (r"(?:zero|oh|one|two|three|four|five|six|seven|eight|nine|double|triple"
               r"|niner)")
_DIGIT_NAME = re.compile(r"(?i)\b(?:zero|one|two|three|four|five|six|seven|eight|nine|niner)\b")
_SPELLED = re.compile(rf"(?i)\b{_DIGIT_WORD}(?:[\s,-]+(?:and\s+)?{_DIGIT_WORD}){{2,}}\b")
# digits, alone or in groups separated by a space or a dash ("4 4 7 1", "31 07 22", "726-491")
_DIGITS = re.compile(r"(?<![\w.,:/$£€#+-])\d+(?:(?:\s|\s?-\s?)\d+)*(?![\w%]|[.,:/]\d)")
# a word holding digits and letters or inner symbols ("8F3K9P", "Bluebird$2023", "Cam3ra!Porch",
# "purple-kettle-94"), or three or more words joined ("correct-horse-battery")
_WORDLIKE = re.compile(r"(?<![\w@/.:$-])[A-Za-z0-9][\w!#$%&*+=@^~.-]*[\w!#$%&*+=^~]")
_JOINED = re.compile(r"[A-Za-z]{2,}(?:[-_.][A-Za-z0-9]{2,}){2,}")  # not "T_V_s"
_INNER = re.compile(r"[a-z][A-Z]|[A-Za-z0-9][!#$%&*+=^~@][A-Za-z0-9]")
_SYMBOL = re.compile(r"[A-Za-z0-9][!#$%&*+=^~@][A-Za-z0-9]")
# no values: "a 9-volt battery", "the 6-digit code", "a 3-sided box", "streets-v12"
_MEASURE = re.compile(
    r"\d{1,3}-(?:digits?|characters?|letters?|words?|volts?|watts?|amps?|days?|weeks?|months?"
    r"|years?|hours?|minutes?|seconds?|pages?|points?|steps?|person|people|seats?|doors?|beds?"
    r"|rooms?|stars?|inch(?:es)?|foot|feet|metres?|meters?|miles?|pack|piece|speed|cores?|bits?"
    r"|way|lanes?|stor(?:ey|y)|parts?|pin|plug|port|gang|track|channel|litre|liter|gallon"
    r"|[a-z]+ed)"
    # a version in lower case, a slug: "streets-v12", "api.v2"
    r"|[a-z]+(?:[-_.][a-z]+)*[-_.]v\d+(?:\.\d+)*")
# a version or a number and a word, judged with a feature of its own: "Node-v18", "2-bedroom",
# or "Tiger-v12", "42-lantern" given as a password
_COMPOUND = re.compile(r"\d{1,3}-[a-z]{3,}|[A-Za-z]+(?:[-_.][A-Za-z]+)*[-_.]v\d+(?:\.\d+)*")
# a key printed or read in groups of the same length, letters and digits ("7azg xna3 ej44 eocz",
# "4f7k-2mqa-9xze-tt3p")
_GROUPS = re.compile(r"(?<![\w-])([A-Za-z0-9]{3,6})(?:[ -][A-Za-z0-9]{3,6}){3,}(?![\w-])")
# a value dictated piece by piece: "Kestrel, then 4, then 0, then 9", "tiger underscore 88",
# "capital M, a, p, l, e", "Lighthouse, followed by 5"
_SAID_SYMBOL = (r"(?:dash|hyphen|underscore|at\s+sign|hash|exclamation\s+(?:mark|point)"
                r"|dollar\s+sign|asterisk|star|plus|ampersand|percent\s+sign)")
_SAID_SYMBOL_WORD = re.compile(rf"(?i)\b{_SAID_SYMBOL}\b")
_CASE = r"(?:(?:capital|upper\s?case|lower\s?case|small)\s+)"
_PIECE = rf"(?:{_SAID_SYMBOL}|{_CASE}?(?:[A-Za-z]+|\d+(?:\s\d)*))"
# a word of speech that goes on after a value, no piece of it ("…, then you turn the handle")
_ON = r"(?!(?:you|we|they|i|he|she|it|the|a|an|to|and|or|press|turn|hit|that|this|is)\b)"
_STEP = (rf"(?:\s*,?\s+(?:and\s+)?(?:then|followed\s+by)\s+{_ON}{_PIECE}"  # ", then 4"
         rf"|\s*,?\s+{_SAID_SYMBOL}(?:\s*,?\s+{_ON}(?!then\b|followed\b)(?:[A-Za-z]+|\d+))?"
         # " dash 62", ", underscore, Rain"
         rf"|\s*,\s*{_CASE}?[A-Za-z0-9](?!\w))")  # ", a", ", capital B"
_DICTATED = re.compile(rf"(?i)\b{_PIECE}(?:{_STEP}\b){{2,}}"
                       rf"|\b{_PIECE}\s*,?\s+(?:and\s+)?(?:then|followed\s+by)\s+{_ON}{_PIECE}\b")
_CUTS = re.compile(r"[^\s,.;:!?)\"”—]|[!#$%&*+=^~@.]\w")
# a password's own shape: words in CamelCase with digits inside or three of them ("Bramble74Kite",
# "AvaAndTom0612"), or letters of both cases with symbols inside ("Mv!7rooftop#Quay"); not a
# brand word and its number ("iPhone15", "PlayStation5", "RTX4090", "A320neo")
_PW_SHAPE = re.compile(r"(?!.*(?:Pro|Max|Plus|Mini|Ultra|Air|Lite|Note|Book)\d*$)"
                       r"(?=.*\d)(?:.*[A-Za-z]{2,}\d+[A-Z][a-z]+|.*(?:[A-Z][a-z]+){3})"
                       r"|(?=.*[A-Z])(?=.*[a-z]{3})(?=.*\d).*[A-Za-z0-9][!#$%&*+=^~@][A-Za-z0-9]")
# getting in talked of, in the turn or the one before: "get into the Pi-hole page", "when it boots"
_GETTING_IN = re.compile(
    r"(?i)\b(?:(?:get|gets|got|getting|log|logs|logging|sign|signs|signing)\s+(?:in|into|on)\b"
    r"|boots?\b|unlock|log-?in|website|site\b|page\b|portal|account|dashboard|admin|wi-?fi"
    r"|router|pass(?:word|phrase|code)?\b)")
# a product said as one: "runs on", "on my", "or newer", "the version", "the model"
_PRODUCT_SAID = re.compile(r"(?i)\b(?:versions?|runs?|running|newer|later|older|on\s+my"
                           r"|models?|editions?|upgrade|buy|bought|order)\b")
# a value said after an article names a thing ("beat the BossFight3Arena stage"), unless a
# secret word follows it ("the 4471 code"); a password is given bare ("use Bramble74Kite")
_NAMED_THING = re.compile(r"(?i)\b(?:the|a|an)\s+$")
_ONE_CHAR = re.compile(r"(?<![\w'])[A-Za-z0-9](?!\w)|\d")
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?|[?$£€#%:@/]")
def _words_of(words: str) -> frozenset[str]:
    return frozenset(words.split())


# a passphrase said as plain words ("copper lantern ninety one"): a run of two to six words with
# no word of ordinary grammar in it, in the clause after a cue or opening the answer to a turn
# that asks for one; the NATO alphabet mixed with digit names anywhere ("tango seven bravo two")
_CUE = re.compile(r"(?i)\b(?:pass\s?phrase|phrase|pass\s?word|passcode|memorable\s+word)s?\b")
_CLAUSE = re.compile(r"[^,.;:!?()\"“”—]+")
_PLAIN = re.compile(r"[A-Za-z]+(?:'[a-z]+)?|\d{1,4}\b")  # "harbour violet 6 canopy"
_SAID = _words_of("is was to as says reads")
_NAMES = re.compile(r"(?i)\s*(?:that's|that is|which is|it's|is|was|are)\b")
_NOT_A_NOUN = re.compile(r"(?:ly|ed|ing)$")  # "changed successfully", "rotated quarterly"
_GAP = re.compile(r"\s+|\s?-\s?")
_LINK = _words_of("is was are be to as it's its it now just simply still yes yeah sure ok okay"
                  " right so says reads read")
_GRAMMAR = _words_of(
    "a an the on in at of to for from with without by about into onto under over behind is are"
    " was were be been being am it it's its this that that's these those there here what which"
    " who how when where why i you he she we they me him her us them my your his our their mine"
    " yours not no yes ok okay so and or but if then than as just also still really very too"
    " same last next time need needs have has had got get do does did done will would can could"
    " should must may might don't can't won't isn't wasn't didn't doesn't let let's up down out"
    " one's all any some every each more most less only again ever never always already yet"
    " sure think know say said tell told see use used using put set write written wrote ask"
    " check try look call"
    " times characters character letters digits minimum maximum nothing something wrong right"
    " correct incorrect random long short strong weak sensitive expired old new"
    " number numbers symbol symbols special uppercase lowercase capitals reuse")
_NATO = ("alpha|alfa|bravo|charlie|delta|echo|foxtrot|golf|hotel|india|juliet|juliett|kilo|lima"
         "|mike|november|oscar|papa|quebec|romeo|sierra|tango|uniform|victor|whiskey|whisky"
         "|x-ray|xray|yankee|zulu")
_NATO_RUN = re.compile(
    rf"(?i)\b(?:{_NATO}|{_DIGIT_WORD})(?:[\s,-]+(?:{_NATO}|{_DIGIT_WORD})){{2,}}\b")
_NATO_WORD = re.compile(rf"(?i)\b(?:{_NATO})\b")
_TYPING = re.compile(r"(?i)\bcase\b|capital|one word|no spaces|spaces? between"
                     r"|type it|typed|hyphens?|dashes")
_NUMBER_WORD = re.compile(r"(?i)\b(?:zero|one|two|three|four|five|six|seven|eight|nine|niner|ten"
                          r"|eleven|twelve|thirteen|fourteen|fifteen|sixteen|seventeen|eighteen"
                          r"|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety"
                          r"|hundred)\b")

_BEFORE_WORDS = 8
_FAR = frozenset({"secret", "opens"})
_AFTER_WORDS = 6


@dataclass(frozen=True)
class Model:
    """A logistic regression over feature names, and the probability from which a span is
    masked."""

    bias: float
    weights: dict[str, float]
    threshold: float


WEIGHTS_FILE = Path(__file__).with_name("judge-weights.json")
WEIGHTS_FORMAT = ("braincue-secret-judge", 1)
# the sha256 of the shipped weights; `python -m bench.secrets_train fit --write` rewrites both
WEIGHTS_SHA256 = "ce9dbaa846030590e2f0c9b8281c0e665df4385aea45fadf3a20a27c4554e6c0"
_REFIT = "reinstall BrainCue, or refit with `python -m bench.secrets_train fit --write`"


class WeightsUnavailable(RuntimeError):
    """The judge's weights file is missing, altered or of another format: the gate cannot run
    without it, and nothing is written unmasked in its place."""


def load_model(path: Path = WEIGHTS_FILE, sha256: str = WEIGHTS_SHA256) -> Model:
    """The judge's weights, checked against their pinned sha256 and format version."""
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise WeightsUnavailable(f"the secret judge's weights are missing ({path}): "
                                 f"{_REFIT}") from error
    if hashlib.sha256(raw).hexdigest() != sha256:
        raise WeightsUnavailable(f"the secret judge's weights ({path}) are not the shipped "
                                 f"file (sha256 differs): {_REFIT}")
    data = json.loads(raw)
    if (data.get("format"), data.get("version")) != WEIGHTS_FORMAT:
        raise WeightsUnavailable(f"the secret judge's weights ({path}) are format "
                                 f"{data.get('format')} v{data.get('version')}, not "
                                 f"{WEIGHTS_FORMAT[0]} v{WEIGHTS_FORMAT[1]}: {_REFIT}")
    return Model(float(data["bias"]), {str(k): float(v) for k, v in data["weights"].items()},
                 float(data["threshold"]))


MODEL = load_model()


@dataclass(frozen=True)
class Candidate:
    start: int
    end: int
    shape: str


def words(text: str) -> list[str]:
    """The words of ``text``, a possessive or "is" said on to a word taken off ("password's")."""
    found = _WORD.findall(text.lower().replace("’", "'"))
    return [w[:-2] if w.endswith("'s") and w not in _KEEP else w for w in found]


_KEEP = frozenset({"it's", "that's", "what's", "here's", "there's", "he's", "she's", "let's"})


def _cue(text: str, before: str) -> re.Match[str] | None:
    """A cue for a passphrase in ``text``; a bare "phrase" only with a word of a secret or of
    what one opens in the turn or the one before ("you open it with the same phrase", not "the
    phrase she kept using")."""
    cue = _CUE.search(text)
    if cue is None or not cue.group().lower().startswith("phrase"):
        return cue
    said = set(words(f"{before} {text}")) - {"phrase", "phrases"}
    opened = said & (CLASSES["secret"] | CLASSES["opens"])
    return cue if opened else None


def _phrases(text: str, before: str) -> Iterator[Candidate]:
    """Runs of two to six plain words that may be a passphrase: after a cue in its clause (the
    linking "is", "to" left out), in a clause after the cue's, or opening the answer to a turn
    that names one."""
    cue = _cue(text, before)
    answer = _cue(before, "") is not None
    if cue is None and not answer:
        return
    clauses = list(_CLAUSE.finditer(text))
    for i, clause in enumerate(clauses):
        spans = [(m.start() + clause.start(), m.end() + clause.start(), m.group().lower())
                 for m in _PLAIN.finditer(clause.group())]
        if cue is not None and clause.start() <= cue.start() < clause.end():
            # the words said after the cue's "is", "to", "as" ("He typed the password wrong
            # three times": none)
            tail = [k for k, s in enumerate(spans) if s[0] >= cue.end() and s[2] in _SAID]
            if not tail:
                continue
            spans = spans[tail[-1]:]
        elif ((cue is not None and clause.start() >= cue.end()) or (answer and i <= 1)
              or (cue is not None and i + 1 < len(clauses)
                  and clauses[i + 1].start() <= cue.start() < clauses[i + 1].end()
                  and _NAMES.match(clauses[i + 1].group()))):
            # after the cue, the answer, or the value before its cue ("juniper 12 otter salt,
            # that's the passphrase"); of what a note says, what it says ("the card reads …")
            read = [k for k, s in enumerate(spans) if s[2] in _SAID and k < len(spans) - 1]
            spans = spans[read[-1] + 1:] if read else spans
        else:
            continue
        while spans and spans[0][2] in _LINK:
            spans.pop(0)
        plain = [w for *_, w in spans]
        if any(_NATO_WORD.fullmatch(w) for w in plain) and not any(
                _NUMBER_WORD.fullmatch(w) for w in plain):
            continue  # a name spelled ("november oscar victor"), no passphrase
        joined = all(_GAP.fullmatch(text[a[1]:b[0]]) for a, b in itertools.pairwise(spans))
        if (2 <= len(spans) <= 6 and joined
                and not any(w in _GRAMMAR or w in CLASSES["secret"] or _NOT_A_NOUN.search(w)
                            for w in plain)
                and not _TYPING.search(text[spans[0][0]:spans[-1][1]])):
            yield Candidate(spans[0][0], spans[-1][1], "phrase")


def _grouped(text: str) -> Iterator[Candidate]:
    """Runs of four or more groups of one length, two or more of them with a digit, not all
    digits, a word of the lists at either end left out ("type 7azg xna3 ej44 eocz")."""
    for m in _GROUPS.finditer(text):
        groups = [(g.start(), g.end(), g.group()) for g in re.finditer(r"[^ -]+", m.group())]
        for _, run in itertools.groupby(groups, key=lambda g: len(g[2])):
            kept = list(run)
            while kept and _known(kept[0][2]):
                kept.pop(0)
            while kept and _known(kept[-1][2]):
                kept.pop()
            values = [g for *_, g in kept]
            if (len(values) >= 4 and sum(any(ch.isdigit() for ch in g) for g in values) >= 2
                    and not all(g.isdigit() for g in values)):
                yield Candidate(m.start() + kept[0][0], m.start() + kept[-1][1], "groups")


# a month, and a day of it, right before a year: "in August 2023", "on 7 July, 2023",
# "May 5th 2022" (an answer that resolves "last month" writes one beside any word)
_MONTH_BEFORE = re.compile(
    r"(?i)\b(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sept?(?:ember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
    r"(?:\s+\d{1,2}(?:st|nd|rd|th)?)?,?\s+$")


# a word of time right before a year: "in 2026", "since 2019", "by 2027" (an answer that
# resolves "this year" writes one in a turn's words) — not "ends in", which says a code's digits
_TIME_BEFORE = re.compile(r"(?i)(?<!\bend )(?<!\bends )(?<!\bending )(?<!\bended )"
                          r"\b(?:in|since|by|until|till|from|during|before|after|around)\s+$")


def _dated(text: str, start: int, value: str) -> bool:
    """Whether ``value``, at ``start`` of ``text``, is a year said as one: after its date's
    month or a word of time. No secret, whatever is said around it."""
    before = text[max(0, start - 24):start]
    return bool(re.fullmatch(r"(?:19|20)\d\d", value)
                and (_MONTH_BEFORE.search(before) or _TIME_BEFORE.search(before)))


def _measured(text: str, start: int, end: int) -> bool:
    """Whether the span ``start``-``end`` of ``text`` is a number or a range of numbers that a
    unit follows: "hold it for 30-60 seconds", "2 hours" — a measure, as "a 9-volt battery"."""
    following = words(text[end:end + 16])[:1]
    return (bool(re.fullmatch(r"\d+(?:[.,]\d+)?(?:\s?[-–]\s?\d+(?:[.,]\d+)?)?",
                              text[start:end]))
            and bool(following) and "quantity" in _classes(following[0]))


def _known(word: str) -> bool:
    w = word.lower()
    return w in _GRAMMAR or any(w in listed for listed in CLASSES.values())


def candidates(text: str, before: str = "") -> Iterator[Candidate]:
    """Every value-shaped span of ``text``, each once, the longest where they overlap (with
    ``before``, the turn said before it, the plain-word passphrases it asks for)."""
    # a run of plain words that cuts a token ("type Mv" of "type Mv!7rooftop#Quay") no phrase
    found: list[Candidate] = [c for c in _phrases(text, before)
                              if not _CUTS.match(text[c.end:c.end + 2])]
    found.extend(_grouped(text))
    for m in _DICTATED.finditer(text):
        if _ONE_CHAR.search(m.group()) or _SAID_SYMBOL_WORD.search(m.group()):
            found.append(Candidate(m.start(), m.end(), "dictated"))
    for m in _NATO_RUN.finditer(text):
        if _NATO_WORD.search(m.group()) and _DIGIT_NAME.search(m.group()):
            found.append(Candidate(m.start(), m.end(), "nato"))
    for m in _SPELLED.finditer(text):
        if _DIGIT_NAME.search(m.group()):  # not "oh oh oh"
            found.append(Candidate(m.start(), m.end(), "spelled"))
    for m in _DIGITS.finditer(text):
        digits = sum(c.isdigit() for c in m.group())
        if digits >= 3:
            found.append(Candidate(m.start(), m.end(), "digits"))
    for m in _WORDLIKE.finditer(text):
        value = m.group().rstrip(".")
        has_digit = any(c.isdigit() for c in value)
        has_alpha = any(c.isalpha() for c in value)
        if ("://" in text[m.start():m.end() + 3] or value.count("@") or len(value) < 4
                or _MEASURE.fullmatch(value)):
            continue
        # letters only: joined words, or a symbol inside (not only capitals: identifiers
        # and brand names, "camelCaseName", "PayPal")
        if has_alpha and (has_digit or _JOINED.fullmatch(value) or _SYMBOL.search(value)):
            found.append(Candidate(m.start(), m.start() + len(value), "word"))
    found.sort(key=lambda c: (c.start, -(c.end - c.start)))
    end = -1
    for c in found:
        if c.start >= end:
            yield c
            end = c.end


# word classes: what a feature generalises by (a lock nobody wrote into the training set)
CLASSES: dict[str, frozenset[str]] = {
    "secret": _words_of(
        "password passwords passcode passphrase pin pins pincode code codes combination combo"
        " key keys token tokens secret secrets credential credentials login logins pw pwd otp"
        " cvv cvc passkey passwd unlock verification security auth 2fa mfa mastercode temporary"
        " temp phrase string community seed psk preshared"),
    "opens": _words_of(
        "safe lock locks padlock lockbox door doors gate keypad alarm locker lockers garage vault"
        " entry access wifi router network account app portal phone tablet laptop screen"
        " console admin server box shed storage front back side main building house"
        " apartment flat office car bike system device panel card bank banking voicemail"
        " wallet profile user username sign log open opens disarm arm vpn deadbolt sim bios kiosk"
        " ssh telnet rdp authenticate authenticates"),
    "set": _words_of(
        "set changed change reset put punch punched enter entered type typed key keyed tap"
        " press use using with is it's its was to now"),
    "private": _words_of(
        "share shared don't never nobody private memorise memorize remember know secret"
        " safe confidential keep forget only"),
    "quantity": _words_of(
        "dollars dollar euros euro pounds pound cents percent km miles mile kg pounds lbs"
        " minutes minute hours hour days day weeks week months month years year people"
        " users times seconds bucks grand k million billion thousand hundred items pages"
        " steps calls tickets votes points degrees gb mb tb ms"),
    "when": _words_of(
        "january february march april may june july august september october november"
        " december jan feb mar apr jun jul aug sep sept oct nov dec monday tuesday wednesday"
        " thursday friday saturday sunday today tomorrow yesterday am pm o'clock at on by"
        " until since before after noon midnight morning evening night date born birthday"
        " deadline due"),
    "id": _words_of(
        "order ticket room extension ext version release invoice flight seat table floor"
        " page chapter step line item sku model serial tracking parcel package reference ref"
        " case claim policy number no # call dial fax bus route train platform zip postcode"
        " area invoice bill price cost costs total budget rev build patch issue bug pr jira"
        " incident batch lot unit suite apt street road avenue highway exit gate"
        " confirmation booking reservation account membership member customer employee id"
        " student badge plate license licence isbn part catalog catalogue product store"
        " branch sort routing swift iban phone mobile cell tel error status promo coupon"
        " discount voucher gift commit hash uuid sha checksum tenant project domain host"
        " bucket region cluster repo tag article kb"),
    # a correction: the value said after it is the one meant ("5 2 8, no wait, it's 5 8 2")
    "correct": _words_of("wait sorry mean actually correction scratch rather oops instead"
                         " hang"),
    # what says a value is public or names a thing, not a secret: a fingerprint, a fault, a rule
    "public": _words_of(
        "public publicly fingerprint fingerprints digest checksum checksums sha256 sha1 md5"
        " barcode serial ean upc mac vin error errors fault faults warning status policy rule"
        " rules jam firmware version model tracking keyserver published means"),
}
# a word can be in more than one class ("gate", "account", "safe"): each class is a feature


# a word no list holds is placed in a class when one of its listed words is this near (cosine);
# chosen by cross-validation with the words of the left-out part taken off the lists
NEAR = 0.4
_PLACED = ("secret", "opens", "id")  # the classes a word can be placed in by its vector
# what any talk is made of sits near "phrase" but is no secret word ("a few more words")
_NEVER_PLACED = frozenset({"word", "words", "sentence", "sentences", "wording"})


class Lexicon:
    """The classes a word is in: those whose list holds it; else, with word vectors, for a
    compound the classes of its last part ("mastercode": code), for any other word every class
    one of whose listed one-piece words is ``NEAR`` or nearer to it (only ``_PLACED`` classes)."""

    def __init__(self, classes: dict[str, frozenset[str]],
                 vectors: WordVectors | None = None) -> None:
        self.classes = classes
        self.vectors = vectors
        self._cache: dict[str, tuple[str, ...]] = {}
        self._listed: dict[str, Matrix] = {}
        if vectors is not None:
            for name in _PLACED:
                # anchors: the listed words that are one piece ("code", "lock"); a compound's
                # mean ("deadbolt") sits near each of its parts ("dead")
                rows = [v for w in sorted(classes[name])
                        if (v := vectors.vector(w)) is not None and vectors.head(w) is None]
                self._listed[name] = np.stack(rows)

    def of(self, word: str) -> tuple[str, ...]:
        found = self._cache.get(word)
        if found is None:
            found = tuple(name for name, listed in self.classes.items() if word in listed)
            if (not found and word.isalpha() and len(word) >= 4
                    and word not in _NEVER_PLACED):
                found = self._nearest(word)
            self._cache[word] = found
        return found

    def _nearest(self, word: str) -> tuple[str, ...]:
        if self.vectors is None:
            return ()
        head = self.vectors.head(word)  # a compound is what its last part is: "mastercode"
        if head is not None:
            by_head = tuple(name for name in _PLACED if head in self.classes[name])
            if by_head:
                return by_head
        v = self.vectors.vector(word)
        if v is None:
            return ()
        return tuple(name for name, rows in self._listed.items()
                     if float((rows @ v).max()) >= NEAR)


LEXICON = Lexicon(CLASSES)
_vectors_file: Path | None = None  # to be read on first need
_vectors_source: Path | None = None  # the file asked for last
_loading = threading.Lock()


def use_vectors(path: Path | None) -> None:
    """Place unlisted words with the word vectors of the embedding model at ``path`` (read when
    a word first needs them); None: the lists alone. The file asked for already: nothing done."""
    global LEXICON, _vectors_file, _vectors_source
    with _loading:
        if path == _vectors_source:
            return
        _vectors_file = _vectors_source = path
        LEXICON = Lexicon(CLASSES)


def _lexicon() -> Lexicon:
    """The lexicon in use, its vectors read on first need (every thread waits for them, so no
    turn is judged half without). A missing or unreadable file falls back to the lists alone
    with one warning: the gate runs on every turn stored and must not stop storing, and the
    lists and rules still catch all but the words the vectors would have placed."""
    global LEXICON, _vectors_file
    if _vectors_file is not None:
        with _loading:
            if _vectors_file is not None:
                path, _vectors_file = _vectors_file, None
                try:
                    LEXICON = Lexicon(CLASSES, read(path))
                except VectorsUnavailable as e:
                    log.warning("sensitive-data judge without word vectors (the word lists "
                                "alone): %s", e)
    return LEXICON


def prepare() -> None:
    """Read the word vectors now, if they are still to be read: the first turn judged would
    wait for them (about 3 s of a core, in the transaction that stores it)."""
    _lexicon()


def _classes(word: str) -> tuple[str, ...]:
    return _lexicon().of(word)


def _shape(value: str, shape: str, text: str, start: int, end: int) -> list[str]:
    digits = sum(c.isdigit() for c in value)
    letters = sum(c.isalpha() for c in value)
    groups = len(re.findall(r"\d+", value))
    out = [f"shape:{shape}"]
    if shape == "spelled":
        n = len(re.findall(rf"(?i){_DIGIT_WORD}", value))
        out.append(f"spelled:{min(n, 9)}")
    elif shape == "digits":
        out.append(f"digits:{min(digits, 12)}")
        out.append("groups:1" if groups == 1 else
                   "groups:singles" if groups == digits else f"groups:{min(groups, 4)}")
        if groups == 1 and re.fullmatch(r"(?:19|20)\d\d", value):
            out.append("year")
        if groups == 1 and value.startswith("0"):
            out.append("leading-zero")
        if re.fullmatch(r"(\d)\1+", value.replace(" ", "").replace("-", "")):
            out.append("repeated")
    elif shape == "groups":
        parts = re.split(r"[ -]", value)
        out.append(f"groups:{min(len(parts), 8)}")
        out.append(f"group-len:{len(parts[0])}")
        out.append("caps" if value.upper() == value else "lower" if value.lower() == value
                   else "mixed-case")
    elif shape == "dictated":
        out.append(f"singles:{min(len(_ONE_CHAR.findall(value)), 6)}")
        if re.search(r"(?i)\b(?:then|followed)\b", value):
            out.append("then")
        if _SAID_SYMBOL_WORD.search(value):
            out.append("said-symbol")
        if re.search(_CASE, value, re.IGNORECASE):
            out.append("said-case")
    elif shape in ("phrase", "nato"):
        n_words = len(value.split())
        out.append(f"words:{min(n_words, 6)}")
        numbers = len(_NUMBER_WORD.findall(value))
        out.append("number-words" if numbers else "no-number-words")
        if numbers == n_words:
            out.append("all-number-words")
        if _NATO_WORD.search(value):
            out.append("nato-word")
        if any(c.isdigit() for c in value):
            out.append("digit-word")
        if all(w[0].isupper() for w in value.split()):
            out.append("capitalised")
        if _TYPING.search(text[end:]):
            out.append("typing")
    else:
        out += _token_shape(value, digits, letters)
    return out + _around(text, start, end)


def _token_shape(value: str, digits: int, letters: int) -> list[str]:
    out = [f"len:{min(len(value) // 4, 6)}"]
    if digits and letters:
        out.append("mixed")
    if _INNER.search(value):
        out.append("inner-symbol" if re.search(r"[!#$%&*+=^~@]", value) else "inner-case")
    if re.fullmatch(r"[A-Z0-9-]+", value):
        out.append("caps")
    if re.fullmatch(r"[A-Z]{1,4}-?\d+", value):
        out.append("prefix-id")
    if _JOINED.fullmatch(value):
        out.append("joined")
    if re.fullmatch(r"[0-9a-f-]{8,}|[0-9A-F-]{8,}", value):
        out.append("hex")
    if "." in value:
        out.append("dotted")
    if re.fullmatch(r"[A-Za-z]+\d{1,4}", value):
        out.append("word-number")
    if _PW_SHAPE.match(value):
        out.append("pw-shape")
    if _COMPOUND.fullmatch(value):  # "9-volt", "streets-v12", or "Tiger-v12" as a password
        out.append("compound")
        if re.search(r"[A-Z]", value):
            out.append("compound-capital")
    parts = value.split("-")
    if (len(parts) >= 3 and sum(p.isalpha() and len(p) >= 3 for p in parts) >= 2
            and any(c.isdigit() for c in value)):
        out.append("word-combo")  # "mk7-hollow-vane", "Harbor-Ink-3306"
        if (any(re.fullmatch(r"[A-Z][a-z]{2,}", p) for p in parts)
                and any(re.fullmatch(r"[a-z]{3,}", p) for p in parts)):
            out.append("combo-mixed-case")  # "bramble-Yard-12": a password's shape
    return out


def _around(text: str, start: int, end: int) -> list[str]:
    out: list[str] = []
    before = text[max(0, start - 2):start]
    after = text[end:end + 3]
    if re.search(r"[$£€]", before):
        out.append("currency")
    if re.match(r"\s?%", after):
        out.append("percent")
    if re.match(r"\s?(?:am|pm|a\.m|p\.m)\b", after.lower()):
        out.append("clock")
    if re.search(r"#\s?$", before):
        out.append("hash-before")
    if re.search(r"[\"'“]\s?$", before):
        out.append("quoted")
    return out


def features(text: str, before: str, c: Candidate) -> list[str]:
    """The names of the features of candidate ``c`` in ``text`` (``before`` the turn before)."""
    value = text[c.start:c.end]
    out = _shape(value, c.shape, text, c.start, c.end)
    said_before = words(text[:c.start])
    left = said_before[-_BEFORE_WORDS:]
    # a cue further back in the turn ("the combination is left 32, right 14, left 7, so 32 14 7")
    out.extend(sorted({f"fc:{k}" for w in said_before[:-_BEFORE_WORDS] for k in _classes(w)
                       if k in _FAR}))
    right = words(text[c.end:])[:_AFTER_WORDS]
    for region, span_words in (("b", left), ("a", right)):
        for w in span_words:
            out.append(f"{region}:{w}")
            out.extend(f"{region}c:{k}" for k in _classes(w))
    if left:
        out.append(f"b1:{left[-1]}")
        out.extend(f"b1c:{k}" for k in _classes(left[-1]))
    else:
        out.append("first")
    if not right:
        out.append("last")
    if before:
        said = words(before)
        out.extend(f"p:{w}" for w in set(said))
        out.extend(f"pc:{k}" for k in {k for w in said for k in _classes(w)})
        asked = any("secret" in _classes(w) for w in said)
        if before.rstrip().endswith("?"):
            out.append("p:question")
            if not left or len(left) <= 3:
                out.append("answer-first")
                if asked:
                    out.append("answer-to-secret")
        if asked:
            out.append("after-secret")
    named_thing = _NAMED_THING.search(text[:c.start]) is not None
    if named_thing:
        out.append("named-thing")
    if "pw-shape" in out and _GETTING_IN.search(f"{before} {text}") and not named_thing:
        out.append("pw-getting-in")  # "Use Bramble74Kite" after "I can't get into the page"
    if any("secret" in _classes(w) for w in left[-3:]):
        out.append("secret-near")
    if any("correct" in _classes(w) for w in left) and any(
            o.end <= c.start for o in candidates(text[:c.start], before)):
        out.append("corrected")  # "5 2 8, no wait, it's 5 8 2"
    n_values = sum(1 for _ in candidates(text, before))
    out.append(f"values:{min(n_values, 3)}")
    return out


# a value is judged only when a word around it, or in the turn before, names a secret or what a
# secret opens: a number said with nothing of the kind near it ("It's 4417-2291.") stays; a
# password's own shape is evidence too, words joined by hyphens, of mixed case, with digits
# ("bramble-Yard-12"), given to a login nobody named
_EVIDENCE = frozenset(f"{region}c:{k}" for region in ("b", "a", "p", "f")
                      for k in ("secret", "opens")) | {"combo-mixed-case", "pw-getting-in"}


def score(names: list[str]) -> float:
    """The probability the model gives that the candidate is a credential."""
    z = MODEL.bias + sum(MODEL.weights.get(n, 0.0) for n in names)
    return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))


def judged(text: str, before: str = "") -> Iterator[Finding]:
    """The value-shaped spans of ``text`` the model judges to be credentials, or of a password's
    shape where getting in is talked of and no product is said; never one said after an
    article (a thing named: "the BossFight3Arena stage"), nor right after a code or key that is
    no secret ("tracking code", "public key"), nor first in
    the answer to a question about one ("What status code did it give?") or in a turn that
    says it is no secret ("E-204, it says paper jam"), nor a year said as one ("community work
    in August 2023", "in 2026"), nor a number a unit follows ("30-60 seconds").

    Each line of ``text`` is judged as a turn of its own, the line before it as the turn
    said before: an archive's or a document's next line is not what is said around a value
    ("Topic: Standup 2026-12-04" above "Summary: The key point …")."""
    start = 0
    for line in text.split("\n"):
        for f in _judged_line(line, before):
            yield Finding(f.kind, start + f.start, start + f.end)
        start += len(line) + 1
        before = line if line.strip() else before


def _judged_line(text: str, before: str) -> Iterator[Finding]:
    """:func:`judged` of one line."""
    for c in candidates(text, before):
        if _dated(text, c.start, text[c.start:c.end]) or _measured(text, c.start, c.end):
            continue
        names = features(text, before, c)
        by_shape = "pw-getting-in" in names and not _PRODUCT_SAID.search(
            f"{text[max(0, c.start - 24):c.start]} {text[c.end:c.end + 24]}")
        if (_EVIDENCE.intersection(names) and (score(names) >= MODEL.threshold or by_shape)
                and not ("named-thing" in names and not any(
                    "secret" in _classes(w) for w in words(text[c.end:])[:2]))
                and not named_public(text[max(0, c.start - 40):c.start])
                and not (len(words(text[:c.start])) <= 3
                         and (named_public(before) or says_public(text)))):
            yield Finding(KIND, c.start, c.end)
