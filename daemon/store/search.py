"""Fusion search over one profile's store.

Four searches run concurrently, each on a worker thread with its own read connection:
full-text (FTS5 BM25, header 2x) and vector search over chunks, and the same over assertions.
Vector search over chunks is two legs: transcript chunks ranked by their best-matching turn
(each turn is embedded on its own — a 1,400-character chunk embedded whole dilutes its turns),
archives and documents by their whole text. The query is embedded once, beside the full-text
legs. The legs are fused by weighted Reciprocal Rank Fusion (:mod:`daemon.store.fusion`); when
the query asks about time, a bounded additive bonus for items that fit it follows
(:mod:`daemon.store.recency`); then the caps pick ``k`` items out of the over-fetched ranking —
at most 2 of 5 from one session, at most 2 of 5 session archives, the items they held back
filling the free slots in rank order when no alternative is left — and cross-links fold an
assertion and its anchor chunk into one result that shows both.

What a search may see is the scope rule (:mod:`daemon.store.scope`): the current Space plus
profile-wide memory, assertions current or as of a time, memories about the person only when
approved and consented to. Fused scores are not calibrated and are never thresholded: they are
returned only with ``explain``, beside each leg's rank and raw score.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Literal

import apsw
import msgspec

from daemon.errors import NotFound
from daemon.store import fusion, recency, sql
from daemon.store.fusion import Fused, ItemFacts, ItemKey, LegHit
from daemon.store.records import Assertion, Chunk, ChunkKind, Hit, Session, TurnHead
from daemon.store.rerank import RerankOptions, rerank
from daemon.store.scope import Scope
from daemon.store.store import Store
from daemon.store.vectors import Vectors
from daemon.store.writes import assertion_body

if TYPE_CHECKING:
    from daemon.config import Settings
    from daemon.llm.rerank import Reranker

LegName = Literal[
    "fts_chunks", "vector_turns", "vector_chunks", "fts_assertions", "vector_assertions"
]
LEGS: tuple[LegName, ...] = (
    "fts_chunks",  # BM25 over chunks, header 2x
    "vector_turns",  # transcript chunks by their best-matching turn's vector
    "vector_chunks",  # archives and documents by their whole text's vector
    "fts_assertions",
    "vector_assertions",
)
# A transcript chunk's whole-text vector adds nothing its turns' vectors do not (on long chats
# it cost recall at every weight tried), so only archives and documents are searched that way.
WHOLE_TEXT_KINDS: tuple[ChunkKind, ...] = ("session", "document")


# Measured on long chats (docs/benchmarks/search.md): with equal weights the vector leg pulls
# BM25 down, so full text counts twice; and RRF's k=60 flattens the top ranks that decide a
# top 5, so k=10.
LEG_WEIGHTS: dict[str, float] = {
    "fts_chunks": 2.0,
    "vector_turns": 1.0,
    "vector_chunks": 1.0,
    "fts_assertions": 2.0,
    "vector_assertions": 1.0,
}
RRF_K = 10
MAX_DEPTH = 3200  # rows per leg when the caps starve the result (see search)


class SearchOptions(msgspec.Struct, frozen=True, kw_only=True):
    """How the search fuses and caps (the defaults are the measured ones)."""

    legs: tuple[LegName, ...] = LEGS
    weights: Mapping[str, float] = msgspec.field(default_factory=lambda: dict(LEG_WEIGHTS))
    rrf_k: int = RRF_K
    depth: int = 50  # rows fetched per leg first: the caps need alternatives to fall back on
    per_session: int = 2  # of k=5, scaled to other k
    archives: int = 2  # of k=5, scaled to other k
    # the largest recency bonus, in first places of a weight-1 leg (1 / (rrf_k + 1)): enough
    # to reorder close items, never to lift an item one leg barely ranked over the others
    recency: float = 1.0
    rerank: RerankOptions = msgspec.field(default_factory=RerankOptions)  # with a reranker

    @classmethod
    def from_settings(cls, settings: Settings) -> SearchOptions:
        """The options the user's settings choose (the caps); the rest as measured."""
        return cls(per_session=settings.per_session_cap, archives=settings.archive_cap)


DEFAULT_OPTIONS = SearchOptions()


class LinkedAssertion(msgspec.Struct, frozen=True):
    """An assertion extracted from a chunk that was found (a cross-link)."""

    id: int
    kind: str
    text: str


class Anchor(msgspec.Struct, frozen=True):
    """The chunk an assertion was extracted from, shown with it (a cross-link)."""

    chunk_id: int
    text: str
    turn_ids: tuple[int, ...] = ()
    refs: tuple[str, ...] = ()


class Explanation(msgspec.Struct, frozen=True):
    score: float  # fused score including the bonus: an order, never a threshold
    bonus: float  # the recency bonus in it (0 unless the query asked about time)
    legs: dict[str, LegHit]  # each leg that found it: rank and raw score (bm25 or cosine)


class SearchResult(msgspec.Struct, frozen=True, kw_only=True):
    """One thing found: a chunk (transcript, session archive, document) or an assertion."""

    item: fusion.ItemKind
    id: int
    kind: str  # transcript | session | document, or the assertion's kind
    text: str  # the chunk's header and body, or the assertion's statement
    title: str  # the session's or document's title ("" when it has none)
    date: float  # when it occurred, seconds since the epoch
    speakers: tuple[str, ...] = ()  # in order of first appearance
    session_id: int | None = None
    document_id: int | None = None
    turn_ids: tuple[int, ...] = ()  # the turns it covers (an assertion: its anchor's)
    refs: tuple[str, ...] = ()  # their external refs, where they have one
    anchor: Anchor | None = None
    assertions: tuple[LinkedAssertion, ...] = ()
    explain: Explanation | None = None

    @property
    def key(self) -> ItemKey:
        return ItemKey(self.item, self.id)

    @property
    def chars(self) -> int:
        """How much text the result hands on, its cross-links included."""
        linked = sum(len(a.text) for a in self.assertions)
        return len(self.text) + (len(self.anchor.text) if self.anchor else 0) + linked


def search(
    store: Store,
    query: str,
    *,
    scope: Scope,
    k: int = 5,
    as_of: float | None = None,
    explain: bool = False,
    options: SearchOptions = DEFAULT_OPTIONS,
    now: float | None = None,
    reranker: Reranker | None = None,
) -> list[SearchResult]:
    """The ``k`` best results for ``query`` within ``scope``, best first (blocking).

    With a ``reranker`` the top of the fused ranking is re-ordered by it
    (:mod:`daemon.store.rerank`) before the caps choose.

    ``as_of`` (seconds since the epoch) replaces ``scope.as_of``: assertions as believed then,
    and nothing that occurred later. ``now`` is the moment relative dates ("yesterday") are read
    against; it defaults to ``as_of``, else the clock.
    """
    if as_of is not None:
        scope = msgspec.structs.replace(scope, as_of=as_of)
    if k <= 0 or not query.strip():
        return []
    depth = options.depth
    legs, vector = _run_legs(store, query, scope, options.legs, depth, None)
    while True:
        fused, facts = _rank(store, query, scope, legs, options, now)
        if reranker is not None:
            fused = rerank(store, reranker, query, vector, fused, options.rerank)
        chosen = fusion.select(
            fused,
            facts,
            k,
            per_group=fusion.scaled_cap(options.per_session, k),
            archives=fusion.scaled_cap(options.archives, k),
        )
        # the caps can starve the result when one session fills every leg's page (a flood of
        # matching chunks): then look deeper, so freed slots go to real alternatives; when
        # there are none, the capped items fill the free slots
        starved = len(chosen) < k and any(len(ranked) >= depth for ranked in legs.values())
        if not starved or depth >= MAX_DEPTH:
            return _results(store, fusion.fill(fused, facts, chosen, k), scope, explain)
        depth = min(MAX_DEPTH, depth * 4)
        legs, vector = _run_legs(store, query, scope, options.legs, depth, vector)


# -- the legs --------------------------------------------------------------------------------------

# Worker threads for the legs; each keeps its own read connection per database (db.Database).
_POOL = ThreadPoolExecutor(max_workers=4, thread_name_prefix="braincue-search")

Ranked = list[tuple[ItemKey, float]]


def _run_legs(
    store: Store,
    query: str,
    scope: Scope,
    wanted: Sequence[LegName],
    depth: int,
    vector: Vectors | None,
) -> tuple[dict[str, Ranked], Vectors | None]:
    """Every wanted leg's ranking of up to ``depth`` rows, best first, as (key, raw score with
    higher better); and the query's vector (embedded here unless given)."""
    futures: dict[str, Future[list[Hit]]] = {}

    def start(leg: LegName, fn: Callable[[], list[Hit]]) -> None:
        if leg in wanted:
            futures[leg] = _POOL.submit(fn)

    start("fts_chunks", lambda: store.fts_chunks(query, scope, depth))
    start("fts_assertions", lambda: store.fts_assertions(query, scope, depth))
    if vector is None and any(leg.startswith("vector_") for leg in wanted):
        vector = store.index.embed_query(query)  # on the embedder's thread, beside the FTS legs
    if vector is not None:
        query_vector = vector
        start("vector_turns", lambda: store.vector_turns(query_vector, scope, depth))
        start(
            "vector_chunks",
            lambda: store.vector_chunks(query_vector, scope, depth, kinds=WHOLE_TEXT_KINDS),
        )
        start("vector_assertions", lambda: store.vector_assertions(query_vector, scope, depth))
    ranked: dict[str, Ranked] = {}
    for leg, future in futures.items():
        item: fusion.ItemKind = "assertion" if leg.endswith("_assertions") else "chunk"
        # bm25 is better when more negative; every leg is reported higher-is-better
        sign = -1.0 if leg.startswith("fts_") else 1.0
        ranked[leg] = [(ItemKey(item, hit.id), sign * hit.score) for hit in future.result()]
    return ranked, vector


# -- from rankings to results --------------------------------------------------------------------


class _Candidate(msgspec.Struct, frozen=True):
    """What fusion and the caps need of an item before it is chosen (one cheap query)."""

    facts: ItemFacts
    date: float


class _Rows(msgspec.Struct):
    """The chosen items in full, with their cross-links."""

    chunks: dict[int, Chunk]
    assertions: dict[int, Assertion]
    linked: dict[int, list[Assertion]]  # chunk id -> its in-scope assertions
    heads: dict[int, list[TurnHead]]  # transcript chunk id -> who said its turns


def _rank(
    store: Store,
    query: str,
    scope: Scope,
    legs: dict[str, Ranked],
    options: SearchOptions,
    now: float | None,
) -> tuple[list[Fused], dict[ItemKey, ItemFacts]]:
    """The fused ranking of the items that still exist (recency applied), and their facts."""
    fused = fusion.fuse(legs, k=options.rrf_k, weights=options.weights)
    candidates = _candidates(store, fused)
    fused = [f for f in fused if f.key in candidates]  # deleted since a leg found it
    fused = _with_recency(query, fused, candidates, scope, options, now)
    return fused, {key: c.facts for key, c in candidates.items()}


def _results(
    store: Store, chosen: Sequence[Fused], scope: Scope, explain: bool
) -> list[SearchResult]:
    rows = _load(store, chosen, scope)
    sessions: dict[int, Session | None] = {}
    return [_result(store, f, rows, sessions, explain) for f in chosen if _exists(f.key, rows)]


def _candidates(store: Store, fused: Sequence[Fused]) -> dict[ItemKey, _Candidate]:
    """Group, archive flag, cross-links and date of every candidate that still exists.

    Cross-links among candidates are all folding needs: an assertion outside the candidates
    cannot be chosen, so it cannot be shown twice.
    """
    chunk_ids = sql.json_ids(f.key.id for f in fused if f.key.kind == "chunk")
    assertion_ids = sql.json_ids(f.key.id for f in fused if f.key.kind == "assertion")

    def read(conn: apsw.Connection) -> tuple[list[Any], list[Any]]:
        chunks = sql.rows(
            conn,
            "SELECT id, kind, session_id, document_id, occurred_at FROM chunks"
            " WHERE id IN (SELECT value FROM json_each(?))",
            (chunk_ids,),
        )
        assertions = sql.rows(
            conn,
            "SELECT a.id, a.session_id, a.occurred_at, c.id, c.session_id, c.document_id"
            " FROM assertions a LEFT JOIN chunks c ON c.id = a.anchor_chunk_id"
            " WHERE a.id IN (SELECT value FROM json_each(?))",
            (assertion_ids,),
        )
        return chunks, assertions

    chunk_rows, assertion_rows = store.db.read(read)
    anchored: dict[int, list[ItemKey]] = {}
    for assertion_id, _, _, anchor_id, _, _ in assertion_rows:
        if anchor_id is not None:
            anchored.setdefault(anchor_id, []).append(ItemKey("assertion", assertion_id))
    found: dict[ItemKey, _Candidate] = {}
    for chunk_id, kind, session_id, document_id, occurred_at in chunk_rows:
        facts = ItemFacts(
            group=_group(session_id, document_id),
            archive=kind == "session",
            links=tuple(anchored.get(chunk_id, ())),
        )
        found[ItemKey("chunk", chunk_id)] = _Candidate(facts, occurred_at)
    for assertion_id, session_id, occurred_at, anchor_id, anchor_session, anchor_doc in (
        assertion_rows
    ):
        if anchor_id is None:  # not extracted, or its anchor was deleted: its own session
            facts = ItemFacts(group=_group(session_id, None))
        else:  # one meeting's assertions share its cap with its chunks
            facts = ItemFacts(
                group=_group(anchor_session, anchor_doc), links=(ItemKey("chunk", anchor_id),)
            )
        found[ItemKey("assertion", assertion_id)] = _Candidate(facts, occurred_at)
    return found


def _group(session_id: int | None, document_id: int | None) -> str | None:
    if session_id is not None:
        return f"session:{session_id}"
    if document_id is not None:
        return f"document:{document_id}"
    return None


def _load(store: Store, chosen: Sequence[Fused], scope: Scope) -> _Rows:
    assertion_ids = [f.key.id for f in chosen if f.key.kind == "assertion"]
    assertions = {a.id: a for a in store.get_assertions(assertion_ids)}
    chunk_ids = [f.key.id for f in chosen if f.key.kind == "chunk"]
    anchors = [a.anchor_chunk_id for a in assertions.values() if a.anchor_chunk_id is not None]
    chunks = {c.id: c for c in store.get_chunks([*chunk_ids, *anchors])}
    linked: dict[int, list[Assertion]] = {}
    for a in store.assertions_for_chunks(chunk_ids, scope):
        if a.anchor_chunk_id is not None:
            linked.setdefault(a.anchor_chunk_id, []).append(a)
    heads = store.turn_heads([c.id for c in chunks.values() if c.kind == "transcript"])
    return _Rows(chunks=chunks, assertions=assertions, linked=linked, heads=heads)


def _exists(key: ItemKey, rows: _Rows) -> bool:
    return key.id in (rows.chunks if key.kind == "chunk" else rows.assertions)


def _with_recency(
    query: str,
    fused: list[Fused],
    candidates: Mapping[ItemKey, _Candidate],
    scope: Scope,
    options: SearchOptions,
    now: float | None,
) -> list[Fused]:
    """Add the bounded recency bonus when the query asks about time; otherwise unchanged."""
    at = now if now is not None else scope.as_of if scope.as_of is not None else time.time()
    focus = recency.time_focus(query, dt.datetime.fromtimestamp(at).astimezone())
    if focus is None or not fused or options.recency <= 0:
        return fused
    bound = options.recency / (options.rrf_k + 1)
    dates = {f.key: candidates[f.key].date for f in fused}
    newest = max(dates.values())
    bonus = {key: bound * recency.closeness(when, focus, newest) for key, when in dates.items()}
    return fusion.add_bonus(fused, bonus)


def _result(
    store: Store,
    found: Fused,
    rows: _Rows,
    sessions: dict[int, Session | None],
    explain: bool,
) -> SearchResult:
    why = (
        Explanation(score=found.score, bonus=found.bonus, legs=dict(found.legs))
        if explain
        else None
    )
    if found.key.kind == "chunk":
        chunk = rows.chunks[found.key.id]
        return msgspec.structs.replace(
            _chunk_result(store, chunk, rows, sessions),
            assertions=tuple(
                LinkedAssertion(id=a.id, kind=a.kind, text=assertion_body(a))
                for a in rows.linked.get(chunk.id, ())
            ),
            explain=why,
        )
    assertion = rows.assertions[found.key.id]
    anchor_chunk = rows.chunks.get(assertion.anchor_chunk_id or -1)
    result = SearchResult(
        item="assertion",
        id=assertion.id,
        kind=assertion.kind,
        text=assertion_body(assertion),
        title="",
        date=assertion.occurred_at,
        session_id=assertion.session_id,
        explain=why,
    )
    if anchor_chunk is not None:
        shown = _chunk_result(store, anchor_chunk, rows, sessions)
        anchor = Anchor(
            chunk_id=anchor_chunk.id, text=shown.text, turn_ids=shown.turn_ids, refs=shown.refs
        )
        return msgspec.structs.replace(
            result,
            title=shown.title,
            speakers=shown.speakers,
            turn_ids=shown.turn_ids,
            refs=shown.refs,
            anchor=anchor,
        )
    if assertion.session_id is not None:
        session = _session(store, assertion.session_id, sessions)
        return msgspec.structs.replace(result, title=session.title if session else "")
    return result


def _chunk_result(
    store: Store, chunk: Chunk, rows: _Rows, sessions: dict[int, Session | None]
) -> SearchResult:
    title = ""
    speakers: tuple[str, ...] = ()
    turn_ids: tuple[int, ...] = ()
    refs: tuple[str, ...] = ()
    if chunk.session_id is not None:
        session = _session(store, chunk.session_id, sessions)
        title = session.title if session is not None else ""
        if chunk.kind == "transcript":
            turns = rows.heads.get(chunk.id, [])
            speakers = tuple(dict.fromkeys(t.speaker for t in turns))
            turn_ids = tuple(t.id for t in turns)
            refs = tuple(t.ref for t in turns if t.ref)
        elif session is not None:
            speakers = session.participants
    elif chunk.document_id is not None:
        try:
            title = store.get_document(chunk.document_id).title
        except NotFound:  # removed since it was found
            title = ""
    return SearchResult(
        item="chunk",
        id=chunk.id,
        kind=chunk.kind,
        text=chunk.text,
        title=title,
        date=chunk.occurred_at,
        speakers=speakers,
        session_id=chunk.session_id,
        document_id=chunk.document_id,
        turn_ids=turn_ids,
        refs=refs,
    )


def _session(store: Store, session_id: int, cache: dict[int, Session | None]) -> Session | None:
    if session_id not in cache:
        try:
            cache[session_id] = store.get_session(session_id)
        except NotFound:
            cache[session_id] = None
    return cache[session_id]
