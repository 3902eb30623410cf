"""The pure parts of fusion search: RRF, caps, cross-link folding, time focus and closeness."""

from __future__ import annotations

import datetime as dt

import pytest

from daemon.store.fusion import ItemFacts, ItemKey, add_bonus, fill, fuse, scaled_cap, select
from daemon.store.recency import DAY, TimeFocus, Window, closeness, time_focus


def chunk(i: int) -> ItemKey:
    return ItemKey("chunk", i)


def assertion(i: int) -> ItemKey:
    return ItemKey("assertion", i)


# -- RRF -------------------------------------------------------------------------------------------


def test_rrf_matches_a_hand_computed_example() -> None:
    x, y, z = chunk(1), chunk(2), chunk(3)
    legs = {"a": [(x, 9.0), (y, 8.0), (z, 7.0)], "b": [(z, 0.9), (x, 0.8)]}

    fused = fuse(legs, k=60)

    assert [f.key for f in fused] == [x, z, y]
    assert [f.score for f in fused] == pytest.approx([1 / 61 + 1 / 62, 1 / 63 + 1 / 61, 1 / 62])
    assert [round(f.score, 5) for f in fused] == [0.03252, 0.03227, 0.01613]
    assert fused[0].legs["a"].rank == 1 and fused[0].legs["b"].rank == 2
    assert fused[0].legs["b"].score == 0.8  # the raw score is kept for explanation
    assert "b" not in fused[2].legs


def test_weighted_rrf_matches_a_hand_computed_example() -> None:
    x, y, z = chunk(1), chunk(2), chunk(3)
    legs = {"a": [(x, 9.0), (y, 8.0), (z, 7.0)], "b": [(z, 0.9), (y, 0.8)]}

    fused = fuse(legs, k=60, weights={"a": 2.0})

    assert [f.key for f in fused] == [y, z, x]
    assert [f.score for f in fused] == pytest.approx([2 / 62 + 1 / 62, 2 / 63 + 1 / 61, 2 / 61])
    assert [round(f.score, 5) for f in fused] == [0.04839, 0.04814, 0.03279]


def test_rrf_counts_an_item_repeated_in_a_leg_once_at_its_best_rank() -> None:
    x, y = chunk(1), chunk(2)
    fused = fuse({"a": [(x, 3.0), (x, 2.0), (y, 1.0)]}, k=60)
    assert [(f.key, f.legs["a"].rank) for f in fused] == [(x, 1), (y, 2)]
    assert fused[0].score == pytest.approx(1 / 61)


def test_rrf_ties_break_on_the_best_rank_then_the_key() -> None:
    a, b, c = chunk(1), chunk(2), chunk(3)
    # b is first in leg q, c first in leg p: equal scores, equal best ranks -> by key
    fused = fuse({"p": [(c, 1.0), (a, 1.0)], "q": [(b, 1.0)]}, k=60)
    assert [f.key for f in fused] == [b, c, a]


def test_empty_legs_fuse_to_nothing() -> None:
    assert fuse({"a": [], "b": []}) == []


def test_a_bonus_reorders_and_is_reported() -> None:
    x, y = chunk(1), chunk(2)
    fused = fuse({"a": [(x, 2.0), (y, 1.0)]}, k=60)
    boosted = add_bonus(fused, {y: 0.001})
    assert [f.key for f in boosted] == [y, x]
    assert boosted[0].bonus == 0.001
    assert boosted[0].score == pytest.approx(1 / 62 + 0.001)
    assert boosted[1].bonus == 0.0


# -- caps and cross-links --------------------------------------------------------------------------


def test_one_session_with_500_matching_chunks_gets_two_of_five_slots() -> None:
    flood = [(chunk(i), 1.0) for i in range(500)]
    others = [(chunk(1000 + i), 1.0) for i in range(5)]
    ranked = fuse({"fts": flood + others})
    facts = {key: ItemFacts(group="session:1") for key, _ in flood}
    facts |= {key: ItemFacts(group=f"session:{key.id}") for key, _ in others}

    top = select(ranked, facts, 5, per_group=2)

    assert [f.key for f in top] == [chunk(0), chunk(1), chunk(1000), chunk(1001), chunk(1002)]


def test_ten_archives_matching_best_get_at_most_two_of_five_slots() -> None:
    archives = [(chunk(i), 1.0) for i in range(10)]
    sources = [(chunk(100 + i), 1.0) for i in range(5)]
    ranked = fuse({"vector": archives + sources})
    facts = {key: ItemFacts(group=f"session:{key.id}", archive=True) for key, _ in archives}
    facts |= {key: ItemFacts(group=f"document:{key.id}") for key, _ in sources}

    top = select(ranked, facts, 5, archives=2)

    assert [f.key for f in top] == [chunk(0), chunk(1), chunk(100), chunk(101), chunk(102)]


def test_when_no_alternative_is_left_the_capped_items_fill_the_free_slots_in_rank_order() -> None:
    ranked = fuse({"fts": [(chunk(i), 1.0) for i in range(10)]})
    facts = {chunk(i): ItemFacts(group="session:1") for i in range(10)}
    capped = select(ranked, facts, 5)
    assert [f.key for f in capped] == [chunk(0), chunk(1)]
    assert [f.key for f in fill(ranked, facts, capped, 5)] == [chunk(i) for i in range(5)]


def test_filling_keeps_the_alternatives_the_caps_made_room_for_ahead() -> None:
    ranked = fuse({"fts": [(chunk(i), 1.0) for i in range(6)] + [(chunk(100), 1.0)]})
    facts = {chunk(i): ItemFacts(group="session:1", archive=i < 3) for i in range(6)}
    facts[chunk(100)] = ItemFacts(group="session:2")
    capped = select(ranked, facts, 5)
    assert [f.key for f in capped] == [chunk(0), chunk(1), chunk(100)]
    assert [f.key for f in fill(ranked, facts, capped, 5)] == [
        chunk(0), chunk(1), chunk(100), chunk(2), chunk(3)]


def test_filling_still_shows_a_cross_linked_pair_once() -> None:
    a, anchor = assertion(1), chunk(10)
    ranked = fuse({"x": [(a, 1.0), (chunk(11), 1.0), (anchor, 1.0), (chunk(12), 1.0)]})
    facts = {
        a: ItemFacts(group="session:1", links=(anchor,)),
        anchor: ItemFacts(group="session:1", links=(a,)),
        chunk(11): ItemFacts(group="session:1"),
        chunk(12): ItemFacts(group="session:1"),
    }
    capped = select(ranked, facts, 5)
    assert [f.key for f in fill(ranked, facts, capped, 5)] == [a, chunk(11), chunk(12)]


def test_items_without_a_group_are_not_capped() -> None:
    ranked = fuse({"fts": [(assertion(i), 1.0) for i in range(10)]})
    assert len(select(ranked, {}, 5)) == 5


def test_an_assertion_and_its_anchor_chunk_take_one_slot() -> None:
    a, anchor, other = assertion(1), chunk(10), chunk(11)
    ranked = fuse({"x": [(a, 1.0), (anchor, 1.0), (other, 1.0)]})
    facts = {
        a: ItemFacts(group="session:1", links=(anchor,)),
        anchor: ItemFacts(group="session:1", links=(a,)),
        other: ItemFacts(group="session:2"),
    }
    assert [f.key for f in select(ranked, facts, 5)] == [a, other]

    ranked = fuse({"x": [(anchor, 1.0), (a, 1.0), (other, 1.0)]})
    assert [f.key for f in select(ranked, facts, 5)] == [anchor, other]


def test_a_folded_item_does_not_use_up_its_session_share() -> None:
    a, anchor = assertion(1), chunk(10)
    more = [chunk(11), chunk(12)]
    ranked = fuse({"x": [(a, 1.0), (anchor, 1.0), *[(m, 1.0) for m in more]]})
    facts = {
        a: ItemFacts(group="session:1", links=(anchor,)),
        anchor: ItemFacts(group="session:1", links=(a,)),
    } | {m: ItemFacts(group="session:1") for m in more}
    assert [f.key for f in select(ranked, facts, 5, per_group=2)] == [a, chunk(11)]


@pytest.mark.parametrize(("k", "cap"), [(1, 1), (3, 1), (5, 2), (8, 3), (10, 4), (20, 8)])
def test_caps_keep_their_share_of_k(k: int, cap: int) -> None:
    assert scaled_cap(2, k) == cap


# -- time focus --------------------------------------------------------------------------------

NOW = dt.datetime(2024, 3, 15, 10, 30, tzinfo=dt.UTC)  # a Friday


def day(y: int, m: int, d: int) -> float:
    return dt.datetime(y, m, d, tzinfo=dt.UTC).timestamp()


@pytest.mark.parametrize(
    "query",
    [
        "what did we decide about pricing?",
        "who may join the call",
        "How did Caroline feel about the support group",
        "the march to the sea",
        "Jan said the report is done",
        "",
    ],
)
def test_queries_that_do_not_ask_about_time_have_no_focus(query: str) -> None:
    assert time_focus(query, NOW) is None


@pytest.mark.parametrize(
    ("query", "start", "end"),
    [
        ("notes from yesterday", day(2024, 3, 14), day(2024, 3, 15)),
        ("what came up this morning", day(2024, 3, 15), day(2024, 3, 16)),
        ("what did we decide last week", day(2024, 3, 4), day(2024, 3, 11)),
        ("last month's numbers", day(2024, 2, 1), day(2024, 3, 1)),
        ("plans from last weekend", day(2024, 3, 9), day(2024, 3, 11)),
        ("What did Maria do on 7 July, 2023?", day(2023, 7, 7), day(2023, 7, 8)),
        ("the call on July 7th, 2023", day(2023, 7, 7), day(2023, 7, 8)),
        ("the 8th of December", day(2023, 12, 8), day(2023, 12, 9)),
        ("what happened on 2024-01-02", day(2024, 1, 2), day(2024, 1, 3)),
        ("What is Tim doing in December 2023?", day(2023, 12, 1), day(2024, 1, 1)),
        ("camping in June", day(2023, 6, 1), day(2023, 7, 1)),
        ("in March", day(2024, 3, 1), day(2024, 4, 1)),
        ("Which outdoor spot did Joanna visit in May?", day(2023, 5, 1), day(2023, 6, 1)),
        ("everything in 2022", day(2022, 1, 1), day(2023, 1, 1)),
        ("the review two days ago", day(2024, 3, 13), day(2024, 3, 14)),
        ("what did we say on Monday", day(2024, 3, 11), day(2024, 3, 12)),
        ("last Friday", day(2024, 3, 8), day(2024, 3, 9)),
    ],
)
def test_named_periods_are_read_against_now(query: str, start: float, end: float) -> None:
    focus = time_focus(query, NOW)
    assert focus is not None
    assert focus.windows == (Window(start=start, end=end),)


@pytest.mark.parametrize(
    "query",
    [
        "latest status on Atlas",
        "what did she say recently",
        "the current plan",
        "most recent offer",
    ],
)
def test_asking_for_the_newest_is_time_sensitive(query: str) -> None:
    assert time_focus(query, NOW) == TimeFocus(latest=True)


def test_a_full_date_is_not_also_read_as_its_month_or_year() -> None:
    focus = time_focus("on 3 June, 2023 and in 2022", NOW)
    assert focus is not None
    assert focus.windows == (
        Window(start=day(2023, 6, 3), end=day(2023, 6, 4)),
        Window(start=day(2022, 1, 1), end=day(2023, 1, 1)),
    )


def test_closeness_is_one_inside_a_window_and_decays_outside() -> None:
    focus = TimeFocus(windows=(Window(start=day(2024, 3, 1), end=day(2024, 3, 2)),))
    inside = closeness(day(2024, 3, 1) + 3600, focus, newest=0.0)
    next_day = closeness(day(2024, 3, 2) + 3600, focus, newest=0.0)
    next_week = closeness(day(2024, 3, 8), focus, newest=0.0)
    assert inside == 1.0
    assert 0.0 < next_week < next_day < 1.0


def test_closeness_for_latest_follows_the_newest_candidate() -> None:
    focus = TimeFocus(latest=True)
    newest = day(2024, 3, 1)
    assert closeness(newest, focus, newest) == 1.0
    assert closeness(newest - 14 * DAY, focus, newest) == pytest.approx(0.5)
    assert closeness(newest - 365 * DAY, focus, newest) < 0.001
