"""The sensitive-data gate: nothing a model wrote is stored before this has run over it, and
nothing said leaves the store without it.

A summary can repeat a credential someone read aloud, and unlike a transcript an archive or a
memory is retrievable. Detected spans are replaced by a marker naming the kind,
and counted so the user is told.

Detectors, each precise by construction rather than by a guess:
- a secret scanner's vendor token formats and entropy check (:mod:`daemon.sensitive.scanner`),
  plus the few prefixed formats its list lacks, and bearer tokens;
- PEM private-key blocks, whole;
- a secret said aloud (:mod:`daemon.sensitive.spoken`): after a cue, in a login, as the answer
  to the turn before, spelled out or grouped;
- card numbers (13–19 digits, Luhn-valid), IBANs (mod-97 valid), national ids (US SSN, UK NI);
- other long tokens labelled by a secret word right before them.

A detector sees one turn and the turn said before it (``before``): an answer is a secret only
after its question.
"""

from __future__ import annotations

import functools
import itertools
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from daemon.sensitive.finding import Finding
from daemon.sensitive.judge import judged
from daemon.sensitive.scanner import high_entropy, looks_random, vendor_tokens
from daemon.sensitive.spoken import spoken

__all__ = ["MARKER", "Finding", "Gate", "Redacted", "clear_cache", "find_sensitive", "mask_lines",
           "redact"]

MARKER = "[redacted {kind}]"
_MARKER = re.compile(r"\[redacted [a-z ]+\]")


@dataclass(frozen=True)
class Redacted:
    text: str
    findings: tuple[Finding, ...] = field(default=())

    @property
    def count(self) -> int:
        return len(self.findings)

    def kinds(self) -> dict[str, int]:
        return dict(Counter(f.kind for f in self.findings))


# prefixed formats the scanner's list lacks, or takes in one length only
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
      | \d{8,10}:AA[0-9A-Za-z_-]{30,35}                   # Telegram bots (any documented length)
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
_CARD = re.compile(r"(?<![\d-])(?:\d[ -]?){12,18}\d(?![\d-])")
_IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}\b")
_SSN = re.compile(r"\b(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}\b")
_UK_NI = re.compile(r"\b(?![DFIQUV])[A-Z](?![DFIOQUV])[A-Z] ?\d{2} ?\d{2} ?\d{2} ?[A-D]\b")
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


def _prefixed(text: str) -> Iterator[Finding]:
    yield from vendor_tokens(text)
    for m in _PREFIXED.finditer(text):
        yield Finding("token", m.start(), m.end())
    for m in _BEARER.finditer(text):
        yield Finding("token", m.start(1), m.end(1))


def _private_keys(text: str) -> Iterator[Finding]:
    for m in _PRIVATE_KEY.finditer(text):
        yield Finding("private key", m.start(), m.end())


# a number named as a product's or a parcel's, not a card's: "the barcode on the box is …"
_NUMBERED_BEFORE = re.compile(r"(?i)\b(?:barcode|ean|upc|gtin|isbn|imei|serial|tracking"
                              r"|order|invoice)\b[^.\n]{0,24}$")


def _cards(text: str) -> Iterator[Finding]:
    for m in _CARD.finditer(text):
        digits = re.sub(r"\D", "", m.group())
        if (13 <= len(digits) <= 19 and luhn_valid(digits) and len(set(digits)) > 1
                and (len(digits) > 13 or digits[0] == "4")  # 13 digits: an old Visa, or an EAN
                and not _NUMBERED_BEFORE.search(text[:m.start()])):
            yield Finding("card number", m.start(), m.end())


def _ibans(text: str) -> Iterator[Finding]:
    for m in _IBAN.finditer(text):
        if iban_valid(m.group()):
            yield Finding("iban", m.start(), m.end())


def _national_ids(text: str) -> Iterator[Finding]:
    for pattern in (_SSN, _UK_NI):
        for m in pattern.finditer(text):
            yield Finding("national id", m.start(), m.end())


# a random-looking value said to be public, or a digest of something: "the host key
# fingerprint is SHA256:…", "the peer's public key is …", "the checksum is …"
_PUBLIC_BEFORE = re.compile(r"(?i)\b(?:public|fingerprint|thumbprint|checksum|digest|hash"
                            r"|sha-?\d+|md5|ssh-(?:rsa|ed25519|dss)|ecdsa-sha2)\b[^.\n]{0,40}$")
_PRIVATE_BEFORE = re.compile(r"(?i)\b(?:private|secret)\b[^.\n]{0,24}$")


def _high_entropy(text: str) -> Iterator[Finding]:
    for start, end, random in high_entropy(text):
        said = text[:start]
        labelled = bool(_SECRET_BEFORE.search(said))
        public = _PUBLIC_BEFORE.search(said) and not _PRIVATE_BEFORE.search(said)
        if labelled or (random and not public):
            yield Finding("secret", start, end)


DETECTORS: tuple[Callable[[str, str], Iterator[Finding]], ...] = (
    lambda text, _: _private_keys(text),
    lambda text, _: _prefixed(text),
    spoken,
    lambda text, _: _cards(text),
    lambda text, _: _ibans(text),
    lambda text, _: _national_ids(text),
    lambda text, _: _high_entropy(text),
    judged,
)


def find_sensitive(text: str, before: str = "") -> list[Finding]:
    """Non-overlapping findings in text order; an earlier detector wins an overlap, unless a
    later one's span holds the earlier ones whole.
    ``before`` is the turn said just before ``text`` (context only: nothing in it is found)."""
    return list(_find(text, before))


def clear_cache() -> None:
    """Forget the turns read (for measuring the detectors from cold)."""
    _find.cache_clear()


@functools.lru_cache(maxsize=4096)
def _find(text: str, before: str) -> tuple[Finding, ...]:
    """Cached: a live turn re-masks the open chunk it grows, whose other turns were read.
    A marker already in the text ("[redacted token]", copied by a model from a masked source)
    is no value to find."""
    markers = [Finding("", m.start(), m.end()) for m in _MARKER.finditer(text)]
    taken: list[Finding] = list(markers)
    for detector in DETECTORS:
        for f in detector(text, before):
            inside = [t for t in taken if f.start < t.end and t.start < f.end]
            if not inside:
                taken.append(f)
            elif all(t.kind and f.start <= t.start and t.end <= f.end for t in inside) and any(
                    t.end - t.start < f.end - f.start for t in inside):
                # a longer span over the part an earlier detector found: the passphrase
                # "copper lantern ninety one", not its first word
                taken = [t for t in taken if t not in inside] + [f]
    found = sorted((f for f in taken if f.kind), key=lambda f: f.start)
    return tuple(_with_siblings(text, found))


_LISTED = r"(?:\s*,|,?\s+and|,?\s+or)\s+"
_RUN = re.compile(r"[A-Za-z]+|\d+|[^A-Za-z\d]+")


def _with_siblings(text: str, found: list[Finding]) -> Iterator[Finding]:
    """``found``, and after each value with a digit the values of its form listed after it
    ("backup codes 3381-9042, 7716-2250 and 5094-1187": the last two with the first)."""
    end = -1
    for i, f in enumerate(found):
        if f.start < end:
            continue
        yield f
        end = f.end
        value = text[f.start:f.end]
        if not any(c.isdigit() for c in value):
            continue
        form = "".join(rf"[A-Za-z]{{{len(r)}}}" if r.isalpha() else rf"\d{{{len(r)}}}"
                       if r.isdigit() else re.escape(r) for r in _RUN.findall(value))
        sibling = re.compile(rf"{_LISTED}({form})(?![\w-])")
        nxt = found[i + 1].start if i + 1 < len(found) else len(text)
        while (m := sibling.match(text, end)) is not None and m.end(1) <= nxt:
            yield Finding(f.kind, m.start(1), m.end(1))
            end = m.end(1)


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
    wanted += [p for p in parts if (len(p) >= 6 and looks_random(p))
               or (len(p) >= 8 and any(c.isdigit() for c in p))]
    return [re.compile(rf"(?i)(?<![A-Za-z0-9]){_spelled(w)}(?![A-Za-z0-9])")
            for w in dict.fromkeys(wanted)]


def secrets_in(texts: Iterable[str], before: str = "") -> list[Secret]:
    """The secret values the detectors find in ``texts`` (consecutive source turns, ``before``
    the one said before the first), each once."""
    return _secrets(_findings(texts, before))


def _findings(texts: Iterable[str], before: str) -> list[tuple[str, list[Finding]]]:
    found = []
    for text in texts:
        found.append((text, find_sensitive(text, before)))
        before = text
    return found


def _secrets(found: Iterable[tuple[str, list[Finding]]]) -> list[Secret]:
    secrets: dict[str, Secret] = {}
    for text, findings in found:
        for f in findings:
            value = text[f.start : f.end].strip("\"'")
            secrets.setdefault(value.lower(), Secret(f.kind, value))
    return list(secrets.values())


class Gate:
    """The gate for what is written from one source: the detectors, plus the secret values
    found in that source however they are phrased (see above)."""

    def __init__(self, secrets: Iterable[Secret] = ()) -> None:
        self.secrets = tuple(secrets)
        self._patterns = [(s.kind, p) for s in self.secrets for p in _patterns(s)]

    @classmethod
    def of(cls, source_texts: Iterable[str], before: str = "") -> Gate:
        return cls(secrets_in(source_texts, before))

    def find(self, text: str, found: list[Finding] | None = None) -> list[Finding]:
        """The findings in ``text``: the detectors' (``found``, when already run on it), plus
        every secret value of this gate's source however it is phrased."""
        taken = list(find_sensitive(text) if found is None else found)
        blocked = [*taken, *(Finding("", m.start(), m.end()) for m in _MARKER.finditer(text))]
        for kind, pattern in self._patterns:
            for m in pattern.finditer(text):
                if not any(m.start() < t.end and t.start < m.end() for t in blocked):
                    taken.append(Finding(kind, m.start(), m.end()))
                    blocked.append(taken[-1])
        return sorted(taken, key=lambda f: f.start)

    def holds_secret(self, text: str) -> bool:
        return bool(self.find(text))

    def redact(self, text: str) -> Redacted:
        return _replace(text, self.find(text))


def mask_lines(texts: Sequence[str], before: str = "") -> list[str]:
    """``texts`` (consecutive turns of one passage; ``before`` the turn said just before the
    first) as retrieval shows them: every secret found in any of them masked in all of them."""
    found = _findings(texts, before)
    gate = Gate(_secrets(found))
    return [_replace(text, gate.find(text, findings)).text for text, findings in found]
