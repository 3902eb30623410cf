"""Fusing ranked lists into one result list, then capping it (pure: no I/O).

Each search leg ranks items by its own raw score (BM25, cosine). :func:`fuse` combines the legs
by weighted Reciprocal Rank Fusion: an item earns ``weight / (k + rank)`` from every leg that
ranks it, so agreement across legs beats one leg's enthusiasm. The fused score orders items and
nothing else — it is not calibrated, so no caller may threshold on it. Each item keeps its rank
and raw score per leg for explanation.

:func:`select` then walks the fused order and takes the first ``k`` items that respect the caps:
at most ``per_group`` items from one session (one long meeting must not crowd out everything
else), at most ``archives`` session-archive chunks (archives accumulate and would otherwise
push out the source material), and no item twice through a cross-link (an assertion and the
chunk it was extracted from show each other). Callers over-fetch, so a slot freed by a cap goes
to the next real alternative rather than shrinking the result; and where no alternative is left
(a Space with one kept session), :func:`fill` gives the free slots to the items the caps held
back, in rank order, after the capped ones: a cap makes room, it never shrinks a result.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Literal, NamedTuple

import msgspec

RRF_K = 60

ItemKind = Literal["chunk", "assertion"]


class ItemKey(NamedTuple):
    """A searchable row: a chunk or an assertion, by id."""

    kind: ItemKind
    id: int


class LegHit(msgspec.Struct, frozen=True):
    rank: int  # 1-based, within the leg
    score: float  # the leg's raw score, higher is better (cosine, or BM25 negated)


class Fused(msgspec.Struct, frozen=True):
    key: ItemKey
    score: float  # fused score plus bonus: an order, never a threshold
    legs: dict[str, LegHit]
    bonus: float = 0.0


class ItemFacts(msgspec.Struct, frozen=True):
    """What the caps and cross-links need to know about a candidate."""

    group: str | None = None  # the session (or document) it belongs to; None is never capped
    archive: bool = False  # a kept session's archive chunk (chunk kind "session")
    links: tuple[ItemKey, ...] = ()  # cross-linked items shown with it: anchor chunk / assertions


def fuse(
    legs: Mapping[str, Sequence[tuple[ItemKey, float]]],
    *,
    k: int = RRF_K,
    weights: Mapping[str, float] | None = None,
) -> list[Fused]:
    """Weighted RRF of ranked legs (each best first, as ``(key, raw score)``), best first.

    A leg missing from ``weights`` weighs 1. An item listed twice in one leg counts at its best
    rank. Ties are broken by the best rank any leg gave, then by key, so the order is stable.
    """
    scores: dict[ItemKey, float] = {}
    hits: dict[ItemKey, dict[str, LegHit]] = {}
    for leg, ranked in legs.items():
        weight = 1.0 if weights is None else weights.get(leg, 1.0)
        rank = 0
        for key, raw in ranked:
            item_hits = hits.setdefault(key, {})
            if leg in item_hits:
                continue
            rank += 1
            item_hits[leg] = LegHit(rank=rank, score=raw)
            scores[key] = scores.get(key, 0.0) + weight / (k + rank)
    return sorted(
        (Fused(key=key, score=scores[key], legs=hits[key]) for key in scores),
        key=_order,
    )


def add_bonus(ranked: Iterable[Fused], bonus: Mapping[ItemKey, float]) -> list[Fused]:
    """Add a bonus to some items' scores and re-sort; items without one keep their score."""
    return sorted(
        (
            msgspec.structs.replace(f, score=f.score + b, bonus=f.bonus + b)
            if (b := bonus.get(f.key, 0.0))
            else f
            for f in ranked
        ),
        key=_order,
    )


def select(
    ranked: Sequence[Fused],
    facts: Mapping[ItemKey, ItemFacts],
    k: int,
    *,
    per_group: int = 2,
    archives: int = 2,
) -> list[Fused]:
    """The first ``k`` items of ``ranked`` that keep within the caps, in order.

    An item cross-linked to one already taken is skipped: it is shown with that one.
    """
    taken: list[Fused] = []
    shown: set[ItemKey] = set()
    per_group_count: Counter[str] = Counter()
    archive_count = 0
    for item in ranked:
        if len(taken) >= k:
            break
        fact = facts.get(item.key, _NO_FACTS)
        if item.key in shown:
            continue
        if fact.group is not None and per_group_count[fact.group] >= per_group:
            continue
        if fact.archive and archive_count >= archives:
            continue
        taken.append(item)
        shown.add(item.key)
        shown.update(fact.links)
        if fact.group is not None:
            per_group_count[fact.group] += 1
        archive_count += fact.archive
    return taken


def fill(
    ranked: Sequence[Fused],
    facts: Mapping[ItemKey, ItemFacts],
    taken: Sequence[Fused],
    k: int,
) -> list[Fused]:
    """``taken`` (what :func:`select` chose) topped up to ``k`` items with the ones its caps
    left out, in the order of ``ranked``; an item cross-linked to one already shown is still
    skipped."""
    result = list(taken)
    shown = {item.key for item in taken}
    for item in taken:
        shown.update(facts.get(item.key, _NO_FACTS).links)
    for item in ranked:
        if len(result) >= k:
            break
        if item.key in shown:
            continue
        result.append(item)
        shown.add(item.key)
        shown.update(facts.get(item.key, _NO_FACTS).links)
    return result


def scaled_cap(cap_at_5: int, k: int) -> int:
    """A cap stated for k=5 ("2 of 5") kept as the same share of another k, at least 1."""
    return max(1, round(cap_at_5 * k / 5))


_NO_FACTS = ItemFacts()


def _order(item: Fused) -> tuple[float, int, ItemKey]:
    best_rank = min((hit.rank for hit in item.legs.values()), default=1 << 30)
    return (-item.score, best_rank, item.key)
