"""The sensitive-data gate: nothing a model wrote is stored before this has run over it.

A summary can repeat a credential someone read aloud, and unlike a transcript an archive or a
memory is retrievable. Detected spans are replaced by a marker naming the kind,
and counted so the user is told.

Detectors, each precise by construction rather than by a guess:
- tokens with a known prefix (cloud, VCS, chat, payment and AI providers), JWTs, bearer tokens;
- PEM private-key blocks;
- a spoken secret: "the password is …", "my PIN is …", "passcode: …";
- card numbers (13–19 digits, Luhn-valid), IBANs (mod-97 valid), national ids (US SSN, UK NI);
- other high-entropy strings (letters and digits mixed, long, near-random), excluding
  hexadecimal ids such as commit hashes and UUIDs unless a secret word stands right before them.
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field

MARKER = "[redacted {kind}]"


@dataclass(frozen=True)
class Finding:
    kind: str
    start: int
    end: int


@dataclass(frozen=True)
class Redacted:
    text: str
    findings: tuple[Finding, ...] = field(default=())

    @property
    def count(self) -> int:
        return len(self.findings)

    def kinds(self) -> dict[str, int]:
        return dict(Counter(f.kind for f in self.findings))


_PREFIXED = re.compile(
    r"""(?<![A-Za-z0-9])(?:
        (?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}            # AWS access key ids
      | gh[pousr]_[A-Za-z0-9]{30,}                        # GitHub tokens
      | github_pat_[A-Za-z0-9_]{40,}
      | glpat-[A-Za-z0-9_-]{20,}                          # GitLab
      | xox[abposr]-[A-Za-z0-9-]{10,}                     # Slack
      | (?:sk|pk|rk)_(?:live|test)_[A-Za-z0-9]{16,}       # Stripe
      | sk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}              # OpenAI, Anthropic
      | AIza[0-9A-Za-z_-]{35}                             # Google API keys
      | ya29\.[0-9A-Za-z_-]{20,}                          # Google OAuth
      | npm_[A-Za-z0-9]{36}                               # npm
      | SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}        # SendGrid
      | hf_[A-Za-z0-9]{30,}                               # Hugging Face
      | eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}   # JWT
    )""",
    re.VERBOSE,
)
_BEARER = re.compile(r"(?i)\b(?:bearer|authorization:?)\s+([A-Za-z0-9._~+/=-]{16,})")
_PRIVATE_KEY = re.compile(
    r"-----BEGIN (?:[A-Z]+ )*PRIVATE KEY-----.*?(?:-----END (?:[A-Z]+ )*PRIVATE KEY-----|\Z)",
    re.DOTALL,
)
_SECRET_WORDS = (
    r"(?:password|passwd|passphrase|pass\s?code|pin(?:\s?code)?|secret|api\s?key"
    r"|access\s?key|token|security\s?code|cvv|cvc)"
)
_SPOKEN = re.compile(
    rf"""(?ix)\b{_SECRET_WORDS}\b
        (?:\s+(?:for|to|of|on)\s+[\w.@-]+(?:\s+[\w.@-]+)?)?      # "password for the vpn"
        \s*(?:is|was|will\s+be|=|:|reads|it's)\s*(?:now\s+)?
        (?P<value>"[^"\n]{{1,80}}"|'[^'\n]{{1,80}}'|[^\s,;"']+)""",
)
_CARD = re.compile(r"(?<![\d-])(?:\d[ -]?){12,18}\d(?![\d-])")
_IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}\b")
_SSN = re.compile(r"\b(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}\b")
_UK_NI = re.compile(r"\b(?![DFIQUV])[A-Z](?![DFIOQUV])[A-Z] ?\d{2} ?\d{2} ?\d{2} ?[A-D]\b")
_TOKEN = re.compile(r"(?<![\w/.@-])[A-Za-z0-9+/_=-]{20,}(?![\w/.@-])")
_HEX = re.compile(r"[0-9a-fA-F-]+")
_SECRET_BEFORE = re.compile(rf"(?i)\b{_SECRET_WORDS}\b[^.\n]{{0,24}}$")

_IBAN_LENGTHS = {
    "AD": 24, "AT": 20, "BE": 16, "BG": 22, "CH": 21, "CY": 28, "CZ": 24, "DE": 22, "DK": 18,
    "EE": 20, "ES": 24, "FI": 18, "FR": 27, "GB": 22, "GR": 27, "HR": 21, "HU": 28, "IE": 22,
    "IS": 26, "IT": 27, "LI": 21, "LT": 20, "LU": 20, "LV": 21, "MC": 27, "MT": 31, "NL": 18,
    "NO": 15, "PL": 28, "PT": 25, "RO": 24, "SE": 24, "SI": 19, "SK": 24, "SM": 27,
}


def luhn_valid(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2 == 1:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def iban_valid(candidate: str) -> bool:
    iban = candidate.replace(" ", "")
    if _IBAN_LENGTHS.get(iban[:2]) != len(iban):
        return False
    rearranged = iban[4:] + iban[:4]
    number = "".join(str(int(c, 36)) for c in rearranged)
    return int(number) % 97 == 1


def shannon_entropy(text: str) -> float:
    counts = Counter(text)
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def _looks_random(token: str) -> bool:
    has_digit = any(c.isdigit() for c in token)
    has_upper = any(c.isupper() for c in token)
    has_lower = any(c.islower() for c in token)
    if not (has_digit and (has_upper or has_lower)):
        return False
    if _HEX.fullmatch(token):
        return False  # commit hashes, UUIDs, checksums: ids, not secrets (unless labelled)
    if not (has_upper and has_lower) and len(token) < 32:
        return False
    return shannon_entropy(token) >= 4.0


def _prefixed(text: str) -> Iterator[Finding]:
    for m in _PREFIXED.finditer(text):
        yield Finding("token", m.start(), m.end())
    for m in _BEARER.finditer(text):
        yield Finding("token", m.start(1), m.end(1))


def _private_keys(text: str) -> Iterator[Finding]:
    for m in _PRIVATE_KEY.finditer(text):
        yield Finding("private key", m.start(), m.end())


def _spoken(text: str) -> Iterator[Finding]:
    for m in _SPOKEN.finditer(text):
        value = m.group("value").rstrip(".!?:)")
        if not value or value.lower() in _NOT_A_VALUE:
            continue
        yield Finding("password", m.start("value"), m.start("value") + len(value))


_NOT_A_VALUE = {
    "a", "an", "the", "not", "that", "this", "it", "required", "set", "wrong", "correct",
    "expired", "missing", "changed", "reset",
}


def _cards(text: str) -> Iterator[Finding]:
    for m in _CARD.finditer(text):
        digits = re.sub(r"\D", "", m.group())
        if 13 <= len(digits) <= 19 and luhn_valid(digits) and len(set(digits)) > 1:
            yield Finding("card number", m.start(), m.end())


def _ibans(text: str) -> Iterator[Finding]:
    for m in _IBAN.finditer(text):
        if iban_valid(m.group()):
            yield Finding("iban", m.start(), m.end())


def _national_ids(text: str) -> Iterator[Finding]:
    for pattern in (_SSN, _UK_NI):
        for m in pattern.finditer(text):
            yield Finding("national id", m.start(), m.end())


def _high_entropy(text: str) -> Iterator[Finding]:
    for m in _TOKEN.finditer(text):
        token = m.group()
        labelled = bool(_SECRET_BEFORE.search(text[: m.start()]))
        if _looks_random(token) or (labelled and len(token) >= 16):
            yield Finding("secret", m.start(), m.end())


DETECTORS: tuple[Callable[[str], Iterator[Finding]], ...] = (
    _private_keys, _prefixed, _spoken, _cards, _ibans, _national_ids, _high_entropy,
)


def find_sensitive(text: str) -> list[Finding]:
    """Non-overlapping findings in text order; an earlier detector wins an overlap."""
    taken: list[Finding] = []
    for detector in DETECTORS:
        for f in detector(text):
            if not any(f.start < t.end and t.start < f.end for t in taken):
                taken.append(f)
    return sorted(taken, key=lambda f: f.start)


def redact(text: str) -> Redacted:
    """Replace every sensitive span with a marker naming its kind."""
    return _replace(text, find_sensitive(text))


def _replace(text: str, findings: Sequence[Finding]) -> Redacted:
    if not findings:
        return Redacted(text)
    parts: list[str] = []
    pos = 0
    for f in findings:
        parts += [text[pos : f.start], MARKER.format(kind=f.kind)]
        pos = f.end
    parts.append(text[pos:])
    return Redacted("".join(parts), tuple(findings))


# -- following the secret ------------------------------------------------------------------------
#
# The detectors above need a cue ("the password is …") or a recognisable shape. A model that
# summarises a transcript drops the cue ("Vendor will use deploy and Tangerine-Walrus-4417 for the
# staging database"), so what was found in the *source* turns is followed as a value into
# everything written from them: the same characters, ignoring case and any separators between
# them ("tangerine walrus 4417", "T-A-N-G-…"), and for a secret of three or more parts any two
# consecutive parts ("Tangerine-Walrus").

_SEPARATORS = r"[\s\-_.,:;/|'\"*+]*"
_PART = re.compile(r"[A-Za-z0-9]+")
MIN_VALUE_CHARS = 3  # shorter values (a two-digit "code") would match everywhere


@dataclass(frozen=True)
class Secret:
    kind: str
    value: str


def _spelled(chars: str) -> str:
    """A pattern matching ``chars`` (letters and digits) with any separators between them."""
    return _SEPARATORS.join(re.escape(c) for c in chars)


def _patterns(secret: Secret) -> list[re.Pattern[str]]:
    parts = _PART.findall(secret.value)
    if sum(map(len, parts)) < MIN_VALUE_CHARS:
        return []
    wanted = ["".join(parts)]
    if len(parts) >= 3:  # a paraphrase may keep only some of its words
        wanted += [a + b for a, b in itertools.pairwise(parts)
                   if min(len(a), len(b)) >= 3]
    # one part alone when it cannot be an ordinary word: random-looking, or long with digits
    wanted += [p for p in parts if (len(p) >= 6 and _looks_random(p))
               or (len(p) >= 8 and any(c.isdigit() for c in p))]
    return [re.compile(rf"(?i)(?<![A-Za-z0-9]){_spelled(w)}(?![A-Za-z0-9])")
            for w in dict.fromkeys(wanted)]


def secrets_in(texts: Iterable[str]) -> list[Secret]:
    """The secret values the detectors find in ``texts`` (the source turns), each once."""
    found: dict[str, Secret] = {}
    for text in texts:
        for f in find_sensitive(text):
            value = text[f.start : f.end].strip("\"'")
            found.setdefault(value.lower(), Secret(f.kind, value))
    return list(found.values())


class Gate:
    """The gate for what is written from one source: the detectors, plus the secret values
    found in that source however they are phrased (see above)."""

    def __init__(self, secrets: Iterable[Secret] = ()) -> None:
        self.secrets = tuple(secrets)
        self._patterns = [(s.kind, p) for s in self.secrets for p in _patterns(s)]

    @classmethod
    def of(cls, source_texts: Iterable[str]) -> Gate:
        return cls(secrets_in(source_texts))

    def find(self, text: str) -> list[Finding]:
        taken = find_sensitive(text)
        for kind, pattern in self._patterns:
            for m in pattern.finditer(text):
                if not any(m.start() < t.end and t.start < m.end() for t in taken):
                    taken.append(Finding(kind, m.start(), m.end()))
        return sorted(taken, key=lambda f: f.start)

    def holds_secret(self, text: str) -> bool:
        return bool(self.find(text))

    def redact(self, text: str) -> Redacted:
        return _replace(text, self.find(text))


def mask_lines(texts: Sequence[str]) -> list[str]:
    """``texts`` (the turns of one passage) as retrieval shows them: every secret found in any
    of them masked in all of them."""
    gate = Gate.of(texts)
    return [gate.redact(t).text for t in texts]
