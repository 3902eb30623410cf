"""Fusion search on real database files with the scripted embedder: caps under adversarial
input, cross-links, the recency rule, explanation, and scope (three Spaces, two profiles)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
import trio
from storekit import T0, Clock, CountingEmbedder, open_store, recorded_session, turns

from daemon.store.records import NewAssertion
from daemon.store.scope import Scope
from daemon.store.search import DEFAULT_OPTIONS, search
from daemon.store.store import Store

DAY = 86_400.0

FILLER = [
    "The weather in the mountains was cold and the trail was icy all morning.",
    "My sister adopted a grey cat from the shelter last spring.",
    "We watched a documentary about deep sea creatures and their lights.",
    "The bakery on the corner started selling sourdough on weekends.",
    "I repainted the kitchen cabinets a pale shade of green.",
    "The train to the coast was delayed by almost two hours.",
    "Our neighbours planted tomatoes, basil and a row of sunflowers.",
    "The library extended its opening hours for the exam season.",
    "He learned to juggle three oranges during the long holiday.",
    "The museum opened a new wing for modern sculpture.",
]


def filler(store: Store, space_id: int | None, sessions: int = 6) -> None:
    """Unrelated sessions, so BM25 has a corpus to weigh terms against."""
    for i in range(sessions):
        texts = [f"{FILLER[(i + j) % len(FILLER)]} (note {i}-{j})" for j in range(8)]
        recorded_session(store, texts, space_id=space_id, title=f"chat {i}",
                         started_at=T0 - (30 + i) * DAY)


def keys(results: list) -> list[tuple[str, int]]:  # type: ignore[type-arg]
    return [(r.item, r.id) for r in results]


# -- caps ------------------------------------------------------------------------------------------


def test_one_session_with_500_matching_chunks_takes_two_of_five(tmp_path: Path) -> None:
    store = Store(tmp_path, CountingEmbedder(), chunk_limit=120, clock=Clock())
    space = store.create_space("Work")
    flood = [f"The invoice for the harbour project, item {i}, is overdue again." for i in range(500)]
    flooded = recorded_session(store, flood, space_id=space.id, title="long meeting")
    others = [
        recorded_session(store, [f"Reminder {i}: ask about the harbour."],
                         space_id=space.id, title=f"call {i}")
        for i in range(4)
    ]
    filler(store, space.id)
    assert len(store.chunks(session_id=flooded)) == 500

    results = search(store, "harbour invoice overdue", scope=Scope(space_id=space.id), k=5)

    sessions = Counter(r.session_id for r in results)
    assert len(results) == 5
    assert sessions[flooded] == 2
    assert set(sessions) - {flooded} <= set(others)


def test_ten_archives_matching_best_take_at_most_two_of_five(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    space = store.create_space("Project")
    sessions = [
        recorded_session(store, [f"Budget review number {i}: we talked about the roadmap."],
                         space_id=space.id, title=f"review {i}", started_at=T0 - i * DAY)
        for i in range(10)
    ]
    for i, session_id in enumerate(sessions):
        store.put_archive(session_id, f"Topic: quarterly budget roadmap {i}. Decided: budget "
                                      "roadmap approved; the budget roadmap is final.")
    documents = [
        recorded_session(store, [f"The roadmap draft {i} lists the budget line by line."],
                         space_id=space.id, title=f"notes {i}")
        for i in range(4)
    ]
    filler(store, space.id)

    results = search(store, "budget roadmap", scope=Scope(space_id=space.id), k=5)

    kinds = Counter(r.kind for r in results)
    assert len(results) == 5
    assert kinds["session"] == 2
    assert {r.session_id for r in results if r.kind == "transcript"} <= set(sessions + documents)


def test_a_space_with_one_kept_session_returns_k_results_its_archive_among_them(
    tmp_path: Path,
) -> None:
    store = Store(tmp_path, CountingEmbedder(), chunk_limit=120, clock=Clock())
    space = store.create_space("Atlas")
    lines = [f"The Atlas launch moves to {day}: the vendor needs {n} more weeks for the launch."
             for n, day in enumerate(["March", "April", "May", "June", "July", "August"], 2)]
    kept = recorded_session(store, lines, space_id=space.id, title="Atlas weekly")
    store.put_archive(kept, "Topic: the Atlas launch date. Decided: the launch moves to August "
                            "because the vendor needs more weeks.")
    assert len(store.chunks(session_id=kept)) >= 5

    for k in (5, 3):
        results = search(store, "when is the Atlas launch", scope=Scope(space_id=space.id), k=k)

        assert len(results) == k  # the per-session cap (2 of 5) makes room, it never shrinks
        assert {r.session_id for r in results} == {kept}
        assert "session" in [r.kind for r in results]  # its archive


# -- cross-links -----------------------------------------------------------------------------------


def test_a_chunk_lists_its_assertions_and_an_assertion_brings_its_anchor(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    space = store.create_space("Team")
    session_id = recorded_session(
        store,
        ["We compared Postgres and SQLite for the mobile app.",
         "SQLite wins: no server on the phone."],
        space_id=space.id, title="database choice")
    filler(store, space.id)
    anchor = store.chunks(session_id=session_id)[0]
    decision = store.add_assertion(NewAssertion(
        kind="decision", text="Use SQLite for the mobile app", chosen="SQLite",
        alternatives=("Postgres",), reasoning="no server on the phone", source="extracted",
        space_id=space.id, session_id=session_id, anchor_chunk_id=anchor.id))
    scope = Scope(space_id=space.id)

    results = search(store, "SQLite Postgres mobile app", scope=scope, k=5)

    linked = [r for r in results if r.key in {("chunk", anchor.id), ("assertion", decision.id)}]
    assert len(linked) == 1, "an assertion and its anchor chunk share one slot"
    found = linked[0]
    if found.item == "chunk":
        assert [a.id for a in found.assertions] == [decision.id]
        assert "Chosen: SQLite" in found.assertions[0].text
    else:
        assert found.anchor is not None and found.anchor.chunk_id == anchor.id
        assert "no server on the phone" in found.anchor.text
        assert found.title == "database choice"


def test_an_assertion_hit_carries_its_anchor_chunk_text(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    space = store.create_space("Team")
    session_id = recorded_session(
        store, ["Alice will send the revised contract to the lawyers by Friday."],
        space_id=space.id, title="contract call")
    filler(store, space.id)
    anchor = store.chunks(session_id=session_id)[0]
    commitment = store.add_assertion(NewAssertion(
        kind="commitment", text="Alice sends the revised contract", owner="Alice", due="Friday",
        source="extracted", space_id=space.id, session_id=session_id, anchor_chunk_id=anchor.id))

    results = search(store, "who sends the contract", scope=Scope(space_id=space.id), k=5,
                     options=_only("fts_assertions", "vector_assertions"))

    assert keys(results)[0] == ("assertion", commitment.id)
    top = results[0]
    assert top.anchor is not None and "revised contract to the lawyers" in top.anchor.text
    assert top.speakers == ("me",) and top.turn_ids == top.anchor.turn_ids
    assert top.chars == len(top.text) + len(top.anchor.text)


# -- recency ---------------------------------------------------------------------------------------


def two_pricing_sessions(store: Store, space_id: int) -> tuple[int, int]:
    """The same words said twice, a month apart; the older one slightly more on topic."""
    old = recorded_session(
        store, ["Pricing: the pricing tiers stay at ten and twenty euros; pricing is settled."],
        space_id=space_id, title="pricing review", started_at=T0 - 30 * DAY)
    new = recorded_session(
        store, ["Pricing: the tiers stay at ten and twenty euros for now."],
        space_id=space_id, title="pricing update", started_at=T0 - 1 * DAY)
    filler(store, space_id)
    return old, new


def test_recency_reorders_only_time_sensitive_queries(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    space = store.create_space("Sales")
    old, new = two_pricing_sessions(store, space.id)
    scope = Scope(space_id=space.id)

    def order(query: str) -> list[int | None]:
        found = search(store, query, scope=scope, k=2, now=T0, explain=True)
        return [r.session_id for r in found]

    assert order("pricing tiers euros") == [old, new]
    assert order("latest pricing tiers euros") == [new, old]
    assert order("pricing tiers euros from yesterday") == [new, old]
    month_ago = search(store, "pricing tiers euros thirty days ago", scope=scope, k=2, now=T0)
    assert [r.session_id for r in month_ago] == [old, new]


def test_the_recency_bonus_is_additive_bounded_and_explained(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    space = store.create_space("Sales")
    two_pricing_sessions(store, space.id)
    scope = Scope(space_id=space.id)

    plain = search(store, "pricing tiers euros", scope=scope, k=5, now=T0, explain=True)
    timely = search(store, "latest pricing tiers euros", scope=scope, k=5, now=T0, explain=True)

    assert all(r.explain is not None and r.explain.bonus == 0.0 for r in plain)
    bonuses = [r.explain.bonus for r in timely if r.explain is not None]
    assert max(bonuses) > 0.0
    k, weights = DEFAULT_OPTIONS.rrf_k, DEFAULT_OPTIONS.weights
    assert max(bonuses) <= DEFAULT_OPTIONS.recency / (k + 1) + 1e-12
    for r in timely:
        assert r.explain is not None
        fused = sum(weights[leg] / (k + hit.rank) for leg, hit in r.explain.legs.items())
        assert r.explain.score == pytest.approx(fused + r.explain.bonus)


def test_explain_gives_each_legs_rank_and_raw_score(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    space = store.create_space("Sales")
    two_pricing_sessions(store, space.id)

    top = search(store, "pricing tiers", scope=Scope(space_id=space.id), k=1, explain=True)[0]

    assert top.explain is not None
    assert set(top.explain.legs) == {"fts_chunks", "vector_turns"}
    assert top.explain.legs["fts_chunks"].rank == 1
    assert top.explain.legs["fts_chunks"].score > 0  # bm25, reported higher-is-better
    assert -1.0 <= top.explain.legs["vector_turns"].score <= 1.0
    assert search(store, "pricing tiers", scope=Scope(space_id=space.id), k=1)[0].explain is None


# -- scope -----------------------------------------------------------------------------------------


def test_scope_never_leaks_across_spaces_or_profiles(tmp_path: Path) -> None:
    profiles = [open_store(tmp_path / "alice"), open_store(tmp_path / "bob")]
    seen: dict[tuple[int, str | None], set[str]] = {}
    for p, store in enumerate(profiles):
        spaces = {name: store.create_space(name).id for name in ("Acme", "Globex", "Initech")}
        for name, space_id in spaces.items():
            recorded_session(
                store, [f"The quarterly launch plan of {name} for profile {p}: ship in spring."],
                space_id=space_id, title=f"{name} plan")
            store.add_assertion(NewAssertion(
                kind="fact", text=f"{name} launch plan ships in spring (profile {p})",
                source="user", space_id=space_id))
            filler(store, space_id, sessions=2)
        store.add_document(_doc(tmp_path, p))  # profile-wide
        store.add_assertion(NewAssertion(
            kind="preference", text=f"Launch plans always ship in spring (profile {p}, everywhere)",
            source="user"))
        for space_name in (*spaces, None):
            scope = Scope(space_id=None if space_name is None else spaces[space_name])
            found = search(store, "quarterly launch plan ship spring", scope=scope, k=20)
            text = " ".join(r.text for r in found)
            assert f"profile {1 - p}" not in text
            mentioned = {name for name in spaces if name in text}
            assert mentioned <= ({space_name} if space_name else set())
            seen[(p, space_name)] = mentioned
            assert f"(profile {p}, everywhere)" in text
            assert f"launch handbook of profile {p}" in text
    assert seen[(0, "Acme")] == {"Acme"} and seen[(1, "Initech")] == {"Initech"}


def _doc(tmp_path: Path, profile: int) -> Path:
    path = tmp_path / f"handbook-{profile}.txt"
    path.write_text(f"The launch handbook of profile {profile}: every quarterly plan ships in "
                    "spring, after the launch review.\n")
    return path


def test_assertions_follow_as_of_and_person_memory_needs_approval_and_consent(
    tmp_path: Path,
) -> None:
    clock = Clock()
    store = open_store(tmp_path, clock=clock)
    space = store.create_space("Home")
    filler(store, space.id)
    old = store.add_assertion(NewAssertion(kind="fact", text="The boiler service is in March",
                                           source="user", space_id=space.id))
    clock.t += DAY
    new = store.supersede(old.id, NewAssertion(kind="fact", text="The boiler service is in May",
                                               source="user", space_id=space.id))
    pending = store.add_assertion(NewAssertion(
        kind="preference", text="I like the boiler serviced early", source="user",
        about_person=True, space_id=space.id))
    approved = store.add_assertion(NewAssertion(
        kind="preference", text="I want boiler reminders a week ahead", source="user",
        about_person=True, review_status="approved", space_id=space.id))
    query = "boiler service"

    def found(scope: Scope, **kw: float) -> set[int]:
        return {r.id for r in search(store, query, scope=scope, k=10, **kw) if r.item == "assertion"}  # type: ignore[arg-type]

    current = found(Scope(space_id=space.id))
    assert new.id in current and old.id not in current
    assert approved.id in current and pending.id not in current
    believed = found(Scope(space_id=space.id), as_of=T0 + DAY / 2)
    assert old.id in believed and new.id not in believed
    no_consent = found(Scope(space_id=space.id, person_memory=False))
    assert approved.id not in no_consent and new.id in no_consent


# -- turn vectors (the store's write path for the vector_turns leg) ---------------------------------


def test_each_turn_is_embedded_once_under_its_context_header(tmp_path: Path) -> None:
    embedder = CountingEmbedder()
    store = open_store(tmp_path, embedder)
    session = store.create_session(title="standup", started_at=T0, participants=["Ann", "Ben"])
    for i in range(12):  # live: one turn at a time, the open chunk growing and closing
        store.append_turns(session.id, turns(f"update number {i} " + "x" * 150,
                                             speaker=("Ann", "Ben")[i % 2], start=65.0 * i))
    store.end_session(session.id)

    stored = store.turns(session.id)
    assert store.index.count("turn") == len(stored) == 12
    assert store.index.embed_pending() == 0
    view = "[2026-07-25 | transcript | standup | Ann, Ben | Ben @ 03:15]\nBen: update number 3 "
    assert view + "x" * 150 in embedder.texts
    # a chunk's first turn alone reads exactly like its turn view: that text is embedded twice
    first_turns = {c.first_turn for c in store.chunks(session_id=session.id)}
    for turn in stored:
        text = f"{turn.speaker} @ {turn.start // 60:02.0f}:{turn.start % 60:02.0f}]\n"
        times = sum(1 for t in embedder.texts if t.endswith(turn.text) and text in t)
        assert times == (2 if turn.id in first_turns else 1), turn


def test_a_chunk_is_found_by_its_best_turn(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    space = store.create_space("Birds")
    filler(store, space.id)
    chatter = [f"{FILLER[i % len(FILLER)]} And more about that, {i}." for i in range(8)]
    session_id = recorded_session(
        store, [*chatter[:4], "The heron nest by the river has three eggs.", *chatter[4:]],
        space_id=space.id, title="walk")
    (chunk,) = store.chunks(session_id=session_id)
    scope = Scope(space_id=space.id)

    hits = store.vector_turns("heron nest river eggs", scope, limit=5)

    assert hits[0].id == chunk.id
    turn_vector = store.index.embed_query(
        f"{chunk.header.rsplit(' | ', 1)[0]} | me @ 00:20]\n"
        "me: The heron nest by the river has three eggs.")
    query_vector = store.index.embed_query("heron nest river eggs")
    assert turn_vector is not None and query_vector is not None
    assert hits[0].score == pytest.approx(float(turn_vector @ query_vector), abs=1e-5)
    assert [h.id for h in store.vector_turns("heron nest river eggs", Scope(), limit=5)] == []


def test_deleting_a_session_deletes_its_turn_vectors(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    session_id = recorded_session(store, ["one turn", "another turn", "a third"])
    assert store.index.count("turn") == 3

    deleted = store.delete_session(session_id)

    assert deleted.vectors == 3 + 1  # three turns and one chunk
    assert store.index.count("turn") == 0
    rows = store.db.read(lambda c: c.execute("SELECT count(*) FROM embeddings").fetchone())
    assert rows == (0,)


# -- misc ------------------------------------------------------------------------------------------


def test_empty_queries_and_k_find_nothing(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    space = store.create_space("Work")
    filler(store, space.id)
    scope = Scope(space_id=space.id)
    assert search(store, "", scope=scope) == []
    assert search(store, "   ", scope=scope) == []
    assert search(store, "the of and", scope=scope, k=0) == []
    assert search(store, 'what\'s "NEAR(" OR * :', scope=scope) is not None


def test_results_carry_title_date_speakers_and_refs(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    space = store.create_space("Book club")
    session = store.create_session(space_id=space.id, title="chapter one", started_at=T0,
                                   participants=["Ann", "Ben"])
    store.append_turns(session.id, [
        *turns("The lighthouse keeper hides the letter.", speaker="Ann"),
        *turns("Because the letter names his brother.", speaker="Ben", start=6.0),
    ])
    store.end_session(session.id)
    filler(store, space.id)

    top = search(store, "lighthouse keeper letter", scope=Scope(space_id=space.id), k=1)[0]

    assert (top.item, top.kind, top.title, top.date) == ("chunk", "transcript", "chapter one", T0)
    assert top.speakers == ("Ann", "Ben")
    assert len(top.turn_ids) == 2 and top.refs == ()
    assert top.text.startswith("[") and "lighthouse keeper" in top.text


async def test_a_search_through_store_run_leaves_the_event_loop_running(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    space = store.create_space("Work")
    filler(store, space.id)
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await trio.sleep(0)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(tick)
        found = await store.run(search, store, "sourdough bakery", scope=Scope(space_id=space.id),
                                k=3)
        nursery.cancel_scope.cancel()
    assert found and "sourdough" in found[0].text
    assert ticks > 0


def _only(*legs: str):  # type: ignore[no-untyped-def]
    from daemon.store.search import SearchOptions

    return SearchOptions(legs=legs)  # type: ignore[arg-type]


def test_full_text_in_a_space_whose_matches_rank_below_another_spaces_many(
    tmp_path: Path,
) -> None:
    """The full-text leg reads the best matches before the scope: when another Space holds
    every one of them, the scope's own matches still come back, in bm25 order."""
    store = open_store(tmp_path)
    busy, quiet = store.create_space("Busy").id, store.create_space("Quiet").id
    for i in range(40):  # short texts: bm25 ranks them above the quiet Space's longer ones
        recorded_session(store, [f"Heron survey {i}."] * 8, space_id=busy, title=f"busy {i}")
    mine = [recorded_session(store, [f"After lunch we walked along the canal and counted the "
                                     f"herons on the far bank, {n} in all, near the lock."],
                             space_id=quiet, title=f"quiet {n}") for n in range(3)]
    filler(store, quiet)

    scope = Scope(space_id=quiet)
    hits = store.fts_chunks("heron", scope, limit=5)
    ours = {c.id for s in mine for c in store.chunks(session_id=s)}
    assert {h.id for h in hits} <= ours and len(hits) == 3
    assert [h.score for h in hits] == sorted(h.score for h in hits)
    theirs = store.fts_chunks("heron", Scope(space_id=busy), limit=5)
    assert len(theirs) == 5 and not {h.id for h in theirs} & ours
    assert max(h.score for h in theirs) < min(h.score for h in hits)  # theirs rank first


def test_a_results_turns_are_its_chunks_turns_in_order(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    space = store.create_space("Work")
    session = store.create_session(space_id=space.id, title="standup", started_at=T0)
    said = [("Ann", "The pallet scanner needs a new battery."),
            ("Ben", "I ordered two last week."), ("Ann", "Then the scanner is fine.")]
    for i, (speaker, text) in enumerate(said):
        store.append_turns(session.id, turns(text, speaker=speaker, start=5.0 * i))
    store.end_session(session.id)
    filler(store, space.id)

    found = search(store, "pallet scanner battery", scope=Scope(space_id=space.id), k=3)
    transcript = [r for r in found if r.kind == "transcript"]
    assert transcript
    for result in transcript:
        turns_of = store.turns_of_chunk(result.id)
        assert result.turn_ids == tuple(t.id for t in turns_of)
        assert result.speakers == tuple(dict.fromkeys(t.speaker for t in turns_of))
    assert store.turn_heads([r.id for r in found if r.kind != "transcript"]) == {}


def test_a_query_is_embedded_once_for_its_search_and_its_closeness(tmp_path: Path) -> None:
    embedder = CountingEmbedder()
    store = Store(tmp_path, embedder, clock=Clock())
    space = store.create_space("Work")
    filler(store, space.id)
    turn_ids = [t.id for s in store.list_sessions() for t in store.turns(s.id)]
    embedder.texts.clear()

    found = search(store, "sourdough bakery", scope=Scope(space_id=space.id), k=3)
    close = store.closeness("sourdough bakery", [("turn", i) for i in turn_ids])

    assert found and embedder.texts == ["sourdough bakery"]
    best = max(close, key=lambda owner: close[owner])
    assert "sourdough" in store.get_turns([best[1]])[0].text
    store.closeness("the trail was icy", [("turn", turn_ids[0])])
    assert embedder.texts == ["sourdough bakery", "the trail was icy"]
    # another model never reuses a vector of the one before
    embedder.model_id = "scripted-other"
    store.closeness("sourdough bakery", [("turn", turn_ids[0])])
    assert embedder.texts[-1] == "sourdough bakery"
