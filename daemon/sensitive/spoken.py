"""Secrets as people say them, which no scanner of code knows.

- a cue before the value: "the password is …", "PIN: …", "the token for the deploy bot is …",
  "door code's …";
- a login: "log in as USER with VALUE", "sign in as USER, using VALUE", "use VALUE to log in";
- an answer: a value given right after a question about a password, code, PIN, key or token,
  whoever asked it (the detector is given the turn before);
- the value itself spelled out or grouped: "two six zero nine, three three one five",
  "4417-2291", "Tangerine-Walrus-4417".

A weak cue ("code", "key", "combination", a login, an answer) needs a value that looks like a
credential (digits, spelled digits, letters and digits mixed, inner capitals or symbols), so
"the key is preparation", "the code is in the repo" and "what's the key takeaway?" stay as said.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from daemon.sensitive.finding import Finding

KIND = "password"

_DIGIT = r"(?:zero|oh|o|one|two|three|four|five|six|seven|eight|nine|double|triple)"
_FILLER = r"(?:(?:now|just|simply|literally|actually|basically|still|currently)\s+)"
_SPELLED = rf"{_DIGIT}(?:[\s,.-]+(?:and\s+)?{_DIGIT}){{3,}}"  # four digit words or more
# digits in groups ("4417-2291", "5 - 0 - 2 - 8"), or groups of capitals and digits as a key is
# printed ("4KJ9 MX72 QP3R")
_GROUPED = r"(?:\d+(?:\s*-\s*\d+|\s+\d+)+\b|(?=[A-Z]*\d)[A-Z0-9]{4}(?:[ -][A-Z0-9]{4}){2,}\b)"
_VALUE = (
    rf"(?P<value>\"[^\"\n]{{1,80}}\"|'[^'\n]{{1,80}}'|“[^”\n]{{1,80}}”"
    rf"|{_SPELLED}\b|{_GROUPED}|[^\s,;\"'“”]+)"
)

_STRONG = (r"(?:password|passwd|passphrase|pass\s?code|pin(?:\s?(?:code|number))?|api\s?key"
           r"|access\s?key|secret\s?key|private\s?key|auth\s?token|access\s?token|token|cvv|cvc"
           r"|security\s?(?:code|number)|credentials?|(?:wireless|wpa2?|wi-?fi|network|product"
           r"|licen[cs]e)\s+key|(?:host|participant|moderator|chair(?:person)?|attendee|leader)"
           r"\s+(?:key|code|pin|passcode))")
_CODE_KINDS = (r"(?:door|gate|alarm|access|entry|lock|safe|garage|building|keypad|locker"
               r"|verification|one[\s-]time|2fa|mfa|otp|recovery|backup|login|unlock|wifi|wi-fi"
               r"|vault|server\s?room)")
_WEAK = rf"(?:{_CODE_KINDS}\s+code|combination|code|key|secret|login|pin)"
# a lock named for its code: "the shed padlock is 4 9 1 7" (digits only, four or more)
_LOCK = r"(?:padlock|lockbox|key\s?safe|bike\s+lock|lock)"
NOT_A_CODE = re.compile(
    r"(?i)\b(?:zip|area|postal|post|country|error|status|source|dress|promo|discount|coupon"
    r"|tracking|product|colou?r|bar|qr|exit|tax|sort|airport|dial(?:ling)?|country|language"
    r"|machine|legacy|test|sample|example|reference|order|voucher|booking|ticket|event|item"
    r"|confirmation|reservation|meeting|invite|invitation|gift|class|course|seat|room|branch"
    r"|routing|swift|bic|stop|fault|sponsor|referral|affiliate|partner|offer|launch|podcast"
    # a code that classifies goods, places or parts: "the customs code", "the HS code"
    r"|customs|tariff|hs|commodity|classification|harmoni[sz]ed|duty|sku|part|model|icd|nace"
    r"|sic|naics|iata|icao)"
    r"\s+code\b"
    # a code said to be for a public thing: "the code for the colour", "the code of the part"
    r"|\bcodes?\s+(?:for|of|on)\s+(?:the\s+|that\s+|this\s+)?(?:colou?r|paint|shade|fabric"
    r"|goods|customs|tariff|airport|country|course|module|error|fault|part|product|item)s?\b"
    # a key said to be public or named by its id or fingerprint: "the peer's public key is …",
    # "the GPG key ID is …", "the host key fingerprint is …"
    r"|\bpublic\s+(?:[\w-]+\s+){0,2}keys?\b|\bkeys?\s+(?:id|fingerprint)s?\b"
)


def named_public(said: str) -> bool:
    """Whether ``said`` (what comes right before a value) names a code or key that is no secret,
    with no secret named after it ("the tracking code is", "the public GPG signing key is"; not
    "the QR code, pick manual entry and key in")."""
    named = [m.end() for m in NOT_A_CODE.finditer(said)]
    return bool(named) and not _SECRET_NAMED.search(said[named[-1]:])


# what a secret is for: "for the router", "to ops.example.org" (a dot only inside a name: a
# sentence's end is no part of it, "a pin on your purse. Is Spider-Man ...?")
_TARGET = r"(?:\s+(?:for|to|of|on|at|into|in|with|from)(?:\s+[\w@-]+(?:\.[\w@-]+)*){1,4}?)"
# between a cue and its verb: "the code they texted was", "the code, if you need it, is", "the
# code just came through, it's"
_CLAUSE = (r"(?:(?:\s+(?:they|he|she|you|we|i|it|the\s+\w+))(?:\s+\w+){1,2}?"
           r"|,[^,.?!\n]{1,30},|(?:\s+[A-Za-z]+){1,3}?(?=,\s+it))")
_VERB = (r"(?:(?:\s+(?:is|was|has\s+been|have\s+been|got|gets))?\s+(?:changed|reset|set|updated)"
         r"\s+to|\s+is\s+now|\s+is|\s+are|\s+was|\s+being"
         r"|,?\s+(?:ours|mine|yours|his|hers|theirs)(?:['’]s|\s+is)"
         r"|\s+will\s+be|\s+should\s+be|\s+reads|['’]s|\s*[:=]|,?\s+it['’]s|,?\s+it\s+is)")
_SECRET_NAMED = re.compile(rf"(?ix)\b(?:{_STRONG}|{_WEAK})\b")
_CUE = re.compile(
    rf"(?ix)\b(?P<word>{_STRONG}|{_WEAK}|{_LOCK})s?\b{_TARGET}?{_CLAUSE}?{_VERB}(?:(?<![a-z])|(?![a-z]))\s*"
    rf"{_FILLER}?"
    rf"{_VALUE}"
)
_DIRECT = re.compile(  # "wifi password BlueHeron77", "enter code 7 3 9 1 0 4"
    rf"(?ix)(?:\b(?:{_STRONG})|\b(?:enter|use|type|input|with)\s+(?:the\s+)?{_WEAK})\s+{_VALUE}")
# a verb of access: "log in", "sign on", "ssh in", "connect", "authenticate", "identify",
# "get in", "unlock"
_ACCESS = (r"(?:(?:log|sign|ssh|get|getting|got|dial|telnet|rdp)(?:ging|ged|s|ed)?[\s-]*"
           r"(?:in|on|into)\b|(?:connect|authenticat|identif|unlock|log\s+on)(?:e|es|ed|ing|y"
           r"|ies|ied|ying|s)?\b)")
_LOGIN = re.compile(
    rf"""(?ix)\b{_ACCESS}(?:\s+(?:to\s+|on\s+|in\s+)?(?:the\s+)?[\w.-]+(?:\s+[\w.-]+)?)?
        \s+(?:as|with\s+(?:the\s+)?(?:(?:user(?:name)?|account|login)\s+)?)\s*[\w.@+-]+,?
        \s+(?:with|using|and|password)\s+(?:(?:the\s+)?(?:password|passcode|pin|code)\s+)?{_VALUE}"""
)
# a verb of access and what is given to it: "identifies to NickServ with lumen-Farrow-733",
# "ssh in using Tern-Moss-58" (a value that looks like a credential, see ``logins``)
_ACCESS_WITH = re.compile(
    rf"""(?ix)\b{_ACCESS}(?:\s+(?:to|on|into|in)(?:\s+(?:the|my|our|your|its|his|her))?
        (?:\s+[\w.@-]+){{1,2}}?)?,?\s+(?:with|using)\s+(?:(?:the\s+)?(?:password|passcode
        |passphrase|pin|code|key)\s+)?{_VALUE}"""
)
_JOINED_VALUE = re.compile(r"[A-Za-z0-9][^\w\s][A-Za-z0-9]|[A-Za-z0-9]_[A-Za-z0-9]")
# a product and its version ("using Chrome-120"), no credential
_PRODUCT = re.compile(r"[A-Za-z]+-v?\d+(?:\.\d+)*")
# "we connected with Nordic-Rail-2024": met with someone, nothing given to a login
_MET_WITH = re.compile(r"(?i)connect\w*,?\s+(?:with|using)\b")
# what describes a password's rules, no value: "use 4 digits as the PIN", "two words as the
# passphrase"
_RULE_WORDS = frozenset({
    "digit", "digits", "character", "characters", "letter", "letters", "word", "words", "number",
    "numbers", "symbol", "symbols", "spaces", "name", "names", "birthday", "date"})
# a passphrase typed as its cue says: "type glacier Ferry Thistle 40 as the password"
_TYPED_AS = re.compile(
    r"""(?ix)\b(?:type|typed|types|typing|enter|entered|put\s+in|key\s+in|input|use|set)\s+
        (?P<value>(?!(?:the|a|an|your|my|our|their|his|her|its|it|that|this|same|in|what)\b)
        [A-Za-z0-9][\w!#$%&*@.-]*(?:\s+[A-Za-z0-9][\w!#$%&*@.-]*){1,5})
        \s+as\s+(?:the|your|a|my|our|its)\s+(?:new\s+|master\s+)?
        (?:password|passphrase|pass\s?code|pin|passkey)\b"""
)
_KEYED = re.compile(  # "punch 2 5 8 0 and hash": digits keyed in, said one by one
    rf"(?ix)\b(?:punch|key|tap|enter|type)(?:\s+in)?\s+"
    rf"(?P<value>{_SPELLED}\b|\d(?:\s*[ -]\s*\d){{3,}}\b)"
)
_USER_PASS = re.compile(  # "user ops@example.org, pass Gr8-Lakes-2024", "use guest and Guest#4410"
    rf"""(?ix)\b(?:user(?:name)?\s+[\w.@+-]+,?\s+(?:and\s+)?pass(?:word)?\s+
        |(?:use|using)\s+[\w.@+-]+\s+(?:and|with|/)\s+(?=\S*\d)(?=\S*[A-Za-z0-9][^\w\s][A-Za-z0-9]))
        {_VALUE}"""
)
_VARIABLE = re.compile(  # "set DATABASE_PASSWORD to Qx7Lm2Rz9Tw"
    rf"(?x)\b[A-Z0-9_]*(?:PASSWORD|PASSWD|SECRET|TOKEN|API_?KEY|PASSPHRASE)[A-Z0-9_]*"
    rf"\s*(?:to|=|:|is)\s*{_VALUE}"
)
_SLASH = re.compile(  # "admin slash Kettle-Moon-62": a user and password said as written
    rf"(?ix)\b[\w.@+-]+\s+(?:slash|/)\s+(?=\S*\d)(?=\S*[A-Za-z]){_VALUE}"
)
_USE = re.compile(
    rf"""(?ix)\b(?:use|using|type|enter|punch\s+in|key\s+in)\s+{_VALUE}
        \s+to\s+(?:log|sign|get|unlock|open|disarm)"""
)
# the value before what names it: "Zeta-Pine-5521 as the new password", "G-482913 is your
# Google verification code" (a one-time-code message read aloud)
_NAMED_AFTER = re.compile(
    rf"""(?ix)(?<![\w-]){_VALUE}\s+(?:as|is|was|will\s+be|are)\s+(?:the|your|a|my|our)\s+
        (?:[\w-]+\s+){{0,3}}?(?:{_STRONG}|{_WEAK}|otp)\b"""
)
# a question that opens with what it asks for: "Which code opens the staff room?"
_WHICH = re.compile(rf"(?ix)^\W*(?:which|what)\s+(?:(?:{_STRONG}|{_WEAK})\b"
                    r"|(?:do|should|can)\s+(?:i|we|you)\s+(?:type|enter|press|punch|key))[^?]*\?$")
# a request for a secret that is no question: "I'll need the six-digit code we just sent you"
_REQUEST = re.compile(
    rf"""(?ix)\b(?:need|needs|want|wants|give\s+me|read\s+me|tell\s+me|send\s+me|confirm|repeat
        |ask(?:s|ed|ing)?\s+for)\s+
        (?:the|your|my|our|a)\s+(?:[\w-]+\s+){{0,2}}?(?:{_STRONG}|{_WEAK})\b"""
)
# the question names what it asks for last: "And the door code?", "the PIN for the card?";
# not "Is the code ready?" or "Did the token expire?"
_QUESTION = re.compile(
    rf"(?ix)\b(?:{_STRONG}|{_WEAK}|code|combo)s?\b{_TARGET}?{_CLAUSE}?"
    r"(?:,?\s+(?:then|again|please|now|there|here|today|exactly|by\s+any\s+chance))?\s*\?\s*$"
)
_ANSWER_VALUE = re.compile(
    rf"(?ix)(?<![\w-])(?:{_SPELLED}\b|\d+(?:[ -]\d+)+\b|[^\s,;\"'“”]*\d[^\s,;\"'“”]*"
    r"|[A-Za-z]+(?:[-_!@#$%&*.][A-Za-z0-9]+)+)"
)

_NOT_A_VALUE = {
    "a", "an", "the", "not", "that", "this", "it", "its", "is", "required", "set", "wrong",
    "correct", "expired", "missing", "changed", "reset", "on", "in", "at", "for", "to", "from",
    "your", "my", "our", "their", "his", "her", "same", "usual", "still", "what", "which",
    "written", "stored", "saved", "kept", "taped", "printed", "somewhere", "there", "here",
    "being", "going", "too", "very", "really", "also", "just", "and", "or", "but", "so",
    "if", "you", "we", "they", "i", "he", "she", "no", "none", "nothing", "empty",
    "blank", "valid", "invalid", "fine", "ok", "okay", "easy", "hard", "long", "short",
    "different", "new", "old", "shared", "private", "public", "secret", "unknown", "locked",
    "case",
}
# ten digits or more, grouped: a phone number given in answer, not a code (cards are found
# by their checksum elsewhere)
_PHONE = re.compile(r"\+?\d(?:[\s-]*\d){9,}")
_DIGITS_ONLY = re.compile(rf"(?i){_SPELLED}|\d(?:[\s-]*\d){{3,}}")
_DIGIT_WORD = re.compile(rf"(?i)^{_DIGIT}$")


def credential_like(value: str) -> bool:
    """Whether a value said after a weak cue looks like a credential rather than a word."""
    v = value.strip("\"'“”")
    if re.fullmatch(rf"(?i){_SPELLED}", v):
        return True
    digits = sum(c.isdigit() for c in v)
    letters = sum(c.isalpha() for c in v)
    if digits >= 3 or (digits and letters and len(v) >= 5):
        return True
    if re.search(r"[a-z][A-Z]", v) or re.search(r"[A-Za-z0-9][-_!@#$%&*][A-Za-z0-9]", v):
        return len(v) >= 6 and not re.fullmatch(r"[a-z]+(?:-[a-z]+)?", v)
    return False


def _clean(value: str) -> str:
    return value.rstrip(".!?:)")


def _plausible(value: str) -> bool:
    v = value.strip("\"'“”")
    if re.fullmatch(r"[a-z]+(?:ed|ing)", v):  # "the access key was revoked"
        return False
    return bool(v) and v.lower() not in _NOT_A_VALUE and not _DIGIT_WORD.match(v)


def _finding(m: re.Match[str], value: str) -> Finding:
    return Finding(KIND, m.start("value"), m.start("value") + len(value))


# a code said to be for anyone: "anyone can use it for 20 percent off", "10% off your first order"
_OFFERED = re.compile(r"(?i)\b(?:anyone|everyone|anybody)\s+can\s+use\b|\b(?:percent|%)\s+off\b"
                      r"|%\s+off\b|\boff\s+your\s+(?:first|next)\b|\bat\s+checkout\b")
_NUMBER_WORDS = (r"(?:(?:twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety)(?:[\s-]+"
                 r"(?:one|two|three|four|five|six|seven|eight|nine))?|zero|one|two|three|four"
                 r"|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen"
                 r"|sixteen|seventeen|eighteen|nineteen|\d{1,3}(?!\w|\.\d))")
_TURN = (r"(?:left|right|clockwise|anti-?clockwise|counter-?clockwise)(?:\s+(?:to|past|twice\s+to"
         rf"|once\s+to|two\s+turns\s+to))?\s+{_NUMBER_WORDS}")
# a dial combination said as turns: "left to twenty-four, right to nine, left to sixty-one"
_DIAL = re.compile(
    rf"(?i)\b{_TURN}(?:(?:\s*,\s*|\s+|,?\s+(?:then|and|and\s+then)\s+){_TURN}){{2,}}")


def dials(text: str) -> Iterator[Finding]:
    """A dial combination said as three turns or more to numbers."""
    for m in _DIAL.finditer(text):
        yield Finding(KIND, m.start(), m.end())


def cued(text: str) -> Iterator[Finding]:
    """A value after a cue in the same turn (not a code said to be for anyone)."""
    offered = _OFFERED.search(text) is not None
    for m in _CUE.finditer(text):
        value = _clean(m.group("value"))
        word = m.group("word")
        if named_public(text[max(0, m.start() - 32) : m.end("word")]):
            continue
        strong = re.fullmatch(rf"(?ix){_STRONG}", word) is not None
        if offered and not strong:
            continue
        if re.fullmatch(rf"(?ix){_LOCK}", word) and not _DIGITS_ONLY.fullmatch(value):
            continue
        if _plausible(value) and (strong or credential_like(value)):
            yield _finding(m, value)
    for m in _DIRECT.finditer(text):
        value = _clean(m.group("value"))
        if _plausible(value) and credential_like(value) and len(value) >= 4:
            yield _finding(m, value)


def logins(text: str) -> Iterator[Finding]:
    for pattern in (_LOGIN, _USE, _NAMED_AFTER, _KEYED, _USER_PASS, _VARIABLE, _SLASH):
        for m in pattern.finditer(text):
            value = _clean(m.group("value"))
            if _plausible(value) and credential_like(value):
                yield _finding(m, value)
    for m in _ACCESS_WITH.finditer(text):
        # what is given to a verb of access is a credential when it is joined by a symbol
        # ("lumen-Farrow-733"); "Python311", "2 people", "Google" are no values here
        value = _clean(m.group("value"))
        if (_plausible(value) and credential_like(value) and _JOINED_VALUE.search(value)
                and any(c.isalpha() for c in value) and not _PRODUCT.fullmatch(value)
                and not _MET_WITH.match(m.group())):
            yield _finding(m, value)
    for m in _TYPED_AS.finditer(text):
        value = m.group("value")
        if not any(w.lower() in _NOT_A_VALUE or w.lower() in _RULE_WORDS
                   for w in value.split()):
            yield _finding(m, value)


def asks_for_secret(turn: str) -> bool:
    """Whether ``turn`` asks for a password, code, PIN, key or token: a question ending on it,
    or a request for it."""
    asked = (_QUESTION.search(turn.rstrip()) or _REQUEST.search(turn)
             or _WHICH.search(turn.rstrip()))
    return (asked is not None and not NOT_A_CODE.search(turn[max(0, asked.start() - 16):])
            and not _ERROR.search(turn))


_ERROR = re.compile(r"(?i)\berror\b")  # "What's the code for that error?"
# an answer that says what the value is, and it is no secret: "E-204, it says paper jam"
_NAMED_PUBLIC = re.compile(r"(?i)\b(?:error|fault|jam|warning|status|means|fingerprint"
                           r"|checksum|digest|public|barcode|serial|tracking|version|model)\b")
ANSWER_CHARS = 80  # an answer gives the value first: "Hmm, hunter2? No, Hunter2024."
ANSWER_VALUES = 2


def says_public(text: str) -> bool:
    """Whether a turn says what its value is, and it is no secret ("E-204, it says paper jam")."""
    return _NAMED_PUBLIC.search(text) is not None


# a price or a quantity given in answer ("they're 1.50 each", "£2.40 a go", "3.20 per load")
_DECIMAL = re.compile(r"\d+[.,]\d{1,2}")
_CURRENCY_BEFORE = re.compile(r"[$£€¥]\s?$")
_PRICED_AFTER = re.compile(
    r"(?i)\s*(?:each|per\b|apiece|a\s+(?:piece|go|pop|time|load|wash|cycle|month|week|day|year"
    r"|night|head|unit|pack|box)|quid|dollars?|euros?|pounds?|pence|p\b|cents?|bucks|usd|eur|gbp"
    r"|chf|sek|nok|dkk|kr|zł|yen|francs?)")


def _price(text: str, start: int, end: int) -> bool:
    """Whether the value at ``start:end`` is said as a price: a currency sign before it, a
    decimal, or a currency or "each"/"per" after it."""
    return bool(_CURRENCY_BEFORE.search(text[max(0, start - 2):start])
                or _DECIMAL.fullmatch(text[start:end])
                or _PRICED_AFTER.match(text[end:end + 12]))


def answers(text: str, before: str) -> Iterator[Finding]:
    """The first credential-like values of a turn that answers a question for a secret."""
    if not before or not asks_for_secret(before) or says_public(text):
        return
    found = 0
    for m in _ANSWER_VALUE.finditer(text[:ANSWER_CHARS]):
        value = _clean(m.group())
        if (_plausible(value) and credential_like(value) and not _PHONE.fullmatch(value)
                and not _price(text, m.start(), m.start() + len(value))):
            yield Finding(KIND, m.start(), m.start() + len(value))
            found += 1
            if found == ANSWER_VALUES:
                return


def spoken(text: str, before: str = "") -> Iterator[Finding]:
    yield from logins(text)
    yield from dials(text)
    yield from cued(text)
    yield from answers(text, before)
