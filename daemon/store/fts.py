"""FTS5 query text from what a user typed (pure: no I/O).

User text is never handed to MATCH as is: ``what's "AI"?`` or ``NEAR(`` is FTS5 syntax. Words are
taken out (letters and digits of any script, as the ``unicode61`` tokenizer sees them), stop words
and one-letter fragments are dropped, and each remaining term is quoted with prefix expansion and
the terms joined with OR — recall first; bm25 and the fusion ranking put the best rows on top.
"""

from __future__ import annotations

import re
import unicodedata

HEADER_WEIGHT = 2.0
BODY_WEIGHT = 1.0
# bm25(table, *COLUMN_WEIGHTS) for tables whose columns are (header, body)
COLUMN_WEIGHTS: tuple[float, float] = (HEADER_WEIGHT, BODY_WEIGHT)

# a long pasted question gains little from its 40th word and costs a term lookup each
MAX_TERMS = 32

# letters and digits; underscore and everything else separates, as in unicode61
_WORD = re.compile(r"[^\W_]+")

_ENGLISH_STOP_WORDS = """
    a about above after again against all am an and any are aren as at be because been before
    being below between both but by can cannot could couldn did didn do does doesn doing don down
    during each few for from further had hadn has hasn have haven having he her here hers herself
    him himself his how if in into is isn it its itself just let ll me more most mustn my myself
    no nor not now of off on once only or other ought our ours ourselves out over own re same
    shan she should shouldn so some such than that the their theirs them themselves then there
    these they this those through to too under until up ve very was wasn we were weren what when
    where which while who whom why will with won would wouldn you your yours yourself yourselves
"""
STOP_WORDS = frozenset(_ENGLISH_STOP_WORDS.split())


def query_terms(text: str) -> list[str]:
    """The search terms of ``text``: lowercased, without stop words, fragments or repeats."""
    terms: list[str] = []
    # NFC first: a decomposed accent is a separate mark that would split the word in two
    for word in _WORD.findall(unicodedata.normalize("NFC", text).lower()):
        if word in STOP_WORDS or (len(word) < 2 and word.isascii()) or word in terms:
            continue
        terms.append(word)
    return terms[:MAX_TERMS]


def match_query(text: str) -> str | None:
    """An FTS5 MATCH expression for ``text``, or None when no search term is left."""
    terms = query_terms(text)
    if not terms:
        return None
    return " OR ".join(_quote(t) + "*" for t in terms)


def _quote(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'
