"""What a secret scanner finds: vendor token formats and high-entropy strings.

The vendor formats are detect-secrets' own plugins (every regular-expression detector it ships:
AWS, GitHub, GitLab, Slack, Stripe, OpenAI, Discord, Telegram, SendGrid, Twilio, PyPI, JWTs,
private-key headers, credentials in URLs, ...), so the list is kept by the people who maintain a
scanner, not by us. Left out: its public-IP detector (an address said in a meeting is not a
credential) and its keyword detector (code assignments such as ``password = "..."``; the spoken
cues are :mod:`daemon.sensitive.spoken`). The entropy check is detect-secrets' Shannon entropy
over its base64 alphabet, on unquoted tokens of 20 characters or more.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
from detect_secrets.plugins.base import RegexBasedDetector
from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString

from daemon.sensitive.finding import Finding

_NOT_CREDENTIALS = {"Public IP (ipv4)"}
_EDGE = " \t\n=:\"'"  # the delimiters some of the library's patterns include in their match
_MIN_GROUP = 8  # a capture group shorter than this is a prefix ("ghp"), not the secret


def _vendor_patterns() -> tuple[re.Pattern[str], ...]:
    patterns: list[re.Pattern[str]] = []
    plugins: dict[str, type] = get_mapping_from_secret_type_to_class()
    for secret_type, plugin in sorted(plugins.items()):
        if secret_type in _NOT_CREDENTIALS or not issubclass(plugin, RegexBasedDetector):
            continue
        # a class attribute in every plugin (the base declares it as an abstract property)
        denylist: Iterable[re.Pattern[str]] = getattr(plugin, "denylist")  # noqa: B009
        patterns.extend(denylist)
    return tuple(patterns)


VENDOR_PATTERNS = _vendor_patterns()


# every vendor format is a run of 11 or more characters without a space (the shortest, an
# Artifactory key, is 11), a URL with credentials, or a key header: a turn with none of these
# skips the patterns (most turns, at a tenth of the time)
_MAYBE_VENDOR = re.compile(r"\S{11}|://|BEGIN|PuTTY")
_TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_+/=.-")


def vendor_tokens(text: str) -> Iterator[Finding]:
    """Every match of a scanner's vendor formats; the secret itself where a pattern captures it
    after a label (``aws ... key ... "VALUE"``), else the whole token the match is part of (a
    JWT pattern that stops after two of its three parts must not leave the signature)."""
    if not _MAYBE_VENDOR.search(text):
        return
    for pattern in VENDOR_PATTERNS:
        for m in pattern.finditer(text):
            start, end = m.span()
            groups = [m.span(i) for i in range(1, (pattern.groups or 0) + 1)
                      if m.span(i)[1] - m.span(i)[0] >= _MIN_GROUP]
            if groups:
                start, end = max(groups, key=lambda span: span[1] - span[0])
            else:
                while end < len(text) and text[end] in _TOKEN_CHARS:
                    end += 1
                end = len(text[:end].rstrip("."))
            while start < end and text[start] in _EDGE:
                start += 1
            while end > start and text[end - 1] in _EDGE:
                end -= 1
            if end > start:
                yield Finding("token", start, end)


_BASE64 = Base64HighEntropyString()
# a token ends at a space, or at a full stop that ends the sentence
# (dots and dollar signs inside it too: "sl.BjK2…", "dp.st.prd.Xk2L…", "access_token$production$…")
_TOKEN = re.compile(
    r"(?<![\w/.@$-])[A-Za-z0-9+/_=-](?:[A-Za-z0-9+/_=.$-]*[A-Za-z0-9+/_=-])?(?![\w/@$-]|\.[\w/@-])")
_MIN_TOKEN = 20
_HEX_ID = re.compile(r"[0-9a-fA-F-]+")


# the scanner's own limit (4.5) is for long quoted strings in code: a 20-character token
# cannot reach it (log2(20) = 4.32), so the spoken-token limit is lower
_ENTROPY_LIMIT = 4.0


def looks_random(token: str) -> bool:
    """Letters and digits mixed, near-random by the scanner's entropy. Hexadecimal ids (commit
    hashes, UUIDs, checksums) are ids, not secrets, unless something labels them one."""
    has_digit = any(c.isdigit() for c in token)
    has_upper = any(c.isupper() for c in token)
    has_lower = any(c.islower() for c in token)
    if not (has_digit and (has_upper or has_lower)) or _HEX_ID.fullmatch(token):
        return False
    if not (has_upper and has_lower) and len(token) < 32:
        return False
    return bool(_BASE64.calculate_shannon_entropy(token) >= _ENTROPY_LIMIT)


def high_entropy(text: str) -> Iterator[tuple[int, int, bool]]:
    """Every long token, with whether it looks random (the caller decides on labelled ones)."""
    for m in _TOKEN.finditer(text):
        if m.end() - m.start() >= _MIN_TOKEN:
            yield m.start(), m.end(), looks_random(m.group())
