"""FTS5 query building, run against a real apsw FTS5 table like the store's."""

from __future__ import annotations

from collections.abc import Iterator

import apsw
import pytest

from daemon.store.fts import COLUMN_WEIGHTS, MAX_TERMS, match_query, query_terms

FILLER = [
    "we talked about the weather and the traffic on the way in",
    "lunch options near the office were discussed at length",
    "the printer on floor three is broken again",
    "someone asked whether the kitchen has oat milk",
]

ROWS = [
    ("[2026-07-01 | transcript | Atlas sync | me, Sarah | me @ 00:00]",
     "me: we decided to ship Atlas on Friday after the migration"),
    ("[2026-07-02 | transcript | Pricing | me, Omar | Omar @ 01:10]",
     "Omar: the offer was 40k per year, payable quarterly"),
    ("[2026-07-03 | document | Résumé | | ]", "Experience: café chain, naïve Bayes classifier"),
    ("[2026-07-04 | transcript | Standup | me | me @ 00:05]",
     "me: ticket ABC-123 is blocked on the NEAR-term release"),
    ("[2026-07-05 | transcript | Kubernetes | me | me @ 00:05]",
     "me: the kubernetes cluster upgrade failed twice"),
    ("[2026-07-06 | transcript | Tokyo | me | me @ 00:05]", "me: 東京 office opens in spring"),
] + [
    (f"[2026-06-{i % 28 + 1:02d} | transcript | Chat {i} | me, them | them @ 00:{i % 60:02d}]",
     f"them: {FILLER[i % len(FILLER)]} ({i})")
    for i in range(60)
]


@pytest.fixture
def db() -> Iterator[apsw.Connection]:
    conn = apsw.Connection(":memory:")
    conn.execute("CREATE VIRTUAL TABLE chunks_fts USING fts5(header, body, "
                 "tokenize='porter unicode61')")
    conn.executemany("INSERT INTO chunks_fts (header, body) VALUES (?, ?)", ROWS)
    yield conn
    conn.close()


def search(conn: apsw.Connection, text: str) -> list[str]:
    query = match_query(text)
    if query is None:
        return []
    return [body for (body,) in conn.execute(
        "SELECT body FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY bm25(chunks_fts, ?, ?)",
        (query, *COLUMN_WEIGHTS),
    )]


HOSTILE = [
    "", " ", "\"", "\"\"", "what's \"AI\"?", "header: Atlas", "body:ship", "(Atlas",
    "Atlas)", "((", "AND", "OR", "NOT", "NEAR", "NEAR(ship Atlas)", "ship AND", "OR Atlas",
    "NOT Atlas", "a AND b OR c NOT d", "*", "ship*", "*ship", "^Atlas", "^", "-", "-Atlas",
    "Atlas -Friday", "--", "+", "{header}: ship", "🚀", "ship 🚀 Atlas", "🙂🙂", "'", "''",
    "\\", "%", "ship;DROP TABLE chunks_fts", "\x00", "a", "I", "the of and", "x" * 5000,
    "abc-123", "c++", "C#", "e.g.", "http://example.com/a?b=c", "col:umn:s", "[brackets]",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_text_never_raises(db: apsw.Connection, text: str) -> None:
    search(db, text)


@pytest.mark.parametrize(("text", "expected"), [
    ("Atlas", "ship Atlas"),
    ("When do we ship?", "ship Atlas"),
    ("what was the \"offer\"?", "offer was 40k"),
    ("ticket abc-123", "ABC-123"),
    ("NEAR-term", "NEAR-term"),
    ("kube", "kubernetes cluster"),  # prefix expansion
    ("upgrades failing", "upgrade failed"),  # porter stemming
    ("cafe", "café chain"),  # diacritics folded both ways
    ("naïve", "naïve Bayes"),
    ("東京", "東京 office"),
    ("Omar: offer", "offer was 40k"),
    ("(migration)", "ship Atlas"),
    ("🚀 Friday", "ship Atlas"),
])
def test_a_word_finds_the_row_holding_it(db: apsw.Connection, text: str, expected: str) -> None:
    results = search(db, text)
    assert results, f"nothing found for {text!r}"
    assert expected in results[0]


def test_header_words_are_searched_and_weighted(db: apsw.Connection) -> None:
    # "Pricing" is only in one header; it must rank first even though other rows share terms
    assert "offer was 40k" in search(db, "pricing offer")[0]


def test_terms() -> None:
    assert query_terms("What's the \"AI\" plan, Sarah?") == ["ai", "plan", "sarah"]
    assert query_terms("NOT a NEAR b OR c") == ["near"]
    assert query_terms("ship ship SHIP") == ["ship"]
    assert query_terms("猫") == ["猫"]  # a one-character word in a script without spaces
    assert query_terms("foo_bar") == ["foo", "bar"]
    assert query_terms("nai\u0308ve") == ["naïve"]
    assert len(query_terms(" ".join(f"w{i}" for i in range(100)))) == MAX_TERMS


def test_query_text() -> None:
    assert match_query("ship Atlas") == '"ship"* OR "atlas"*'
    assert match_query("") is None
    assert match_query("the of and 🚀 ?!") is None
