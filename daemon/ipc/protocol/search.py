"""Search over everything stored, with an optional account of how each hit was ranked."""

from __future__ import annotations

import msgspec

from daemon.ipc.protocol.base import Reply, Request

__all__ = [
    "Search", "SearchAnchor", "SearchExplain", "SearchHit", "SearchLeg", "SearchLinked",
    "SearchReply"
]


class SearchLeg(msgspec.Struct, frozen=True):
    """How one search leg ranked a result: its rank (1 is best) and raw score, higher better
    (cosine similarity, or BM25 negated)."""

    rank: int
    score: float


class SearchExplain(msgspec.Struct, frozen=True):
    score: float  # the fused score, bonus included: an order, never a threshold
    bonus: float  # the recency bonus in it (0 unless the query asked about time)
    legs: dict[str, SearchLeg]  # fts_chunks, vector_chunks, fts_assertions, vector_assertions


class SearchAnchor(msgspec.Struct, frozen=True):
    """The chunk an assertion was extracted from, shown with it."""

    chunk_id: int
    text: str
    turn_ids: list[int] = []
    refs: list[str] = []


class SearchLinked(msgspec.Struct, frozen=True):
    """An assertion extracted from a chunk that was found, shown with it."""

    id: int
    kind: str
    text: str


class SearchHit(msgspec.Struct, frozen=True, kw_only=True):
    """One thing found: a chunk (``item`` chunk: transcript, session archive, document) or an
    assertion (``item`` assertion: decision, fact, commitment, preference, task)."""

    item: str
    id: int
    kind: str
    text: str  # a chunk's header and body, or the assertion's statement
    title: str  # the session's or document's title ("" when it has none)
    date: float  # unix time it occurred
    speakers: list[str] = []  # in order of first appearance
    session_id: int | None = None
    document_id: int | None = None
    turn_ids: list[int] = []  # the turns it covers (an assertion: its anchor's)
    refs: list[str] = []  # their external refs, where they have one
    anchor: SearchAnchor | None = None
    assertions: list[SearchLinked] = []
    explain: SearchExplain | None = None  # only when asked for


class SearchReply(Reply):
    results: list[SearchHit]  # best first


class Search(Request[SearchReply]):
    """Fusion search (full text and vectors, over chunks and assertions) in one scope: the
    Space's memory and profile-wide memory; without ``space``, profile-wide memory only."""

    query: str
    k: int | None = None  # results wanted; None: the search_k setting
    space: str | None = None
    as_of: float | None = None  # unix time: what was believed then, nothing said later
    explain: bool = False  # each result's fused score and its legs' ranks and raw scores
