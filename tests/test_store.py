"""The store's verbatim layer on a real database file: Spaces, sessions, turns and their chunks,
archives, documents, full-text search."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import pytest
from storekit import T0, Clock, CountingEmbedder, open_store, recorded_session, turns

from daemon.errors import InvalidInput, NotFound
from daemon.store.chunking import ChunkContext, ChunkTurn, chunk_turns, turn_line
from daemon.store.records import NewTurn
from daemon.store.scope import Scope
from daemon.store.store import Store


@pytest.fixture
def embedder() -> CountingEmbedder:
    return CountingEmbedder()


@pytest.fixture
def store(tmp_path: Path, embedder: CountingEmbedder) -> Iterator[Store]:
    s = open_store(tmp_path / "profile", embedder)
    yield s
    s.close()


def fts_integrity(store: Store) -> None:
    """FTS5's own check that an index matches its content (raises when out of step)."""

    def check(conn: object) -> None:
        for table in ("chunks_fts", "assertions_fts"):
            conn.execute(  # type: ignore[attr-defined]
                f"INSERT INTO {table} ({table}, rank) VALUES ('integrity-check', 1)"
            )

    store.db.write(check)


# -- Spaces ---------------------------------------------------------------------------------------


def test_spaces_are_unique_by_name_ignoring_case(store: Store) -> None:
    atlas = store.create_space("Atlas", activity="project")
    assert store.get_space("atlas") == atlas == store.get_space(atlas.id)
    with pytest.raises(InvalidInput, match="already exists"):
        store.create_space("ATLAS")
    other = store.create_space("Borealis")
    with pytest.raises(InvalidInput, match="already exists"):
        store.update_space(other.id, name="atlas")
    assert [s.name for s in store.list_spaces()] == ["Atlas", "Borealis"]


def test_space_input_errors_name_the_field(store: Store) -> None:
    with pytest.raises(InvalidInput, match="activity"):
        store.create_space("X", activity="karaoke")
    with pytest.raises(InvalidInput, match="name"):
        store.create_space("   ")
    with pytest.raises(NotFound):
        store.get_space("nope")


def test_a_space_can_opt_out_of_memory(store: Store) -> None:
    space = store.create_space("Therapy", activity="personal")
    assert space.memory_enabled
    assert not store.update_space(space.id, memory_enabled=False).memory_enabled
    assert store.update_space(space.id, activity="solo").activity == "solo"


# -- sessions -------------------------------------------------------------------------------------


def test_a_session_takes_its_spaces_activity(store: Store) -> None:
    space = store.create_space("Interviews", activity="job")
    session = store.create_session(space_id=space.id, title="Round 1", participants=["me", "Li"])
    assert (session.activity, session.status, session.participants) == (
        "job",
        "live",
        ("me", "Li"),
    )
    assert store.create_session().activity == "meeting"
    with pytest.raises(NotFound):
        store.create_session(space_id=999)


def test_sessions_list_newest_first_and_filter(store: Store) -> None:
    space = store.create_space("A")
    first = store.create_session(space_id=space.id, started_at=T0)
    second = store.create_session(started_at=T0 + 60)
    store.end_session(second.id)
    assert [s.id for s in store.list_sessions()] == [second.id, first.id]
    assert [s.id for s in store.list_sessions(space_id=space.id)] == [first.id]
    assert [s.id for s in store.list_sessions(unfiled=True)] == [second.id]
    assert [s.id for s in store.list_sessions(statuses=["ended"])] == [second.id]
    assert [s.id for s in store.list_sessions(limit=1)] == [second.id]


def test_update_session(store: Store) -> None:
    session = store.create_session(title="untitled")
    updated = store.update_session(
        session.id, title="Atlas sync", participants=["me", "Sarah"], practice=True
    )
    assert (updated.title, updated.participants, updated.practice) == (
        "Atlas sync",
        ("me", "Sarah"),
        True,
    )
    with pytest.raises(InvalidInput, match="status"):
        store.update_session(session.id, status="forgotten")  # type: ignore[arg-type]


# -- turns and chunks -----------------------------------------------------------------------------


def sentence(i: int) -> str:
    return f"Point {i}: we should revisit the quarterly numbers before the board meeting."


def test_turns_are_stored_in_order_with_their_fields(store: Store) -> None:
    session = store.create_session()
    stored = store.append_turns(
        session.id,
        [
            NewTurn(speaker="me", text="Hello", start=0.0, end=1.5, source="mic"),
            NewTurn(speaker="them", text="Hi", start=2.0, source="loopback", ref="u2"),
        ],
    )
    assert store.turns(session.id) == stored
    assert [(t.seq, t.speaker, t.source, t.end, t.ref) for t in stored] == [
        (1, "me", "mic", 1.5, None),
        (2, "them", "loopback", 2.0, "u2"),
    ]


def test_turn_input_errors_name_the_field(store: Store) -> None:
    session = store.create_session()
    with pytest.raises(InvalidInput, match=r"turns\[1\]\.text"):
        store.append_turns(session.id, turns("fine", "  "))
    with pytest.raises(InvalidInput, match=r"turns\[0\]\.end"):
        store.append_turns(session.id, [NewTurn(speaker="me", text="x", start=5, end=1)])
    with pytest.raises(InvalidInput, match=r"turns\[0\]\.start"):
        store.append_turns(session.id, [NewTurn(speaker="me", text="x", start=float("nan"))])
    assert store.turns(session.id) == []


def test_the_newest_chunk_grows_and_closed_chunks_never_change(store: Store) -> None:
    session = store.create_session(title="Board prep")
    closed_seen: dict[int, tuple[str, str]] = {}
    for i in range(80):
        store.append_turns(session.id, turns(sentence(i), start=5.0 * i))
        chunks = store.chunks(session_id=session.id)
        assert [c.closed for c in chunks] == [True] * (len(chunks) - 1) + [False]
        for c in chunks:
            if c.closed:
                assert closed_seen.setdefault(c.id, (c.header, c.body)) == (c.header, c.body)
    assert len(closed_seen) >= 3
    assert all(len(c.body) <= 1400 for c in store.chunks(session_id=session.id))

    ended = store.end_session(session.id)
    assert ended.status == "ended" and ended.ended_at is not None
    assert all(c.closed for c in store.chunks(session_id=session.id))
    with pytest.raises(InvalidInput, match="live session"):
        store.append_turns(session.id, turns("too late"))


def test_live_chunks_equal_chunking_the_whole_transcript_at_once(store: Store) -> None:
    texts = [sentence(i) * (1 + i % 4) for i in range(60)] + ["word " * 400]  # one turn too long
    live = store.create_session(title="t", started_at=T0)
    for i, text in enumerate(texts):
        store.append_turns(live.id, turns(text, start=5.0 * i))
    store.end_session(live.id)
    batch = store.create_session(title="t", started_at=T0)
    store.append_turns(batch.id, turns(*texts))
    store.end_session(batch.id)

    def shape(session_id: int) -> list[tuple[str, str]]:
        return [(c.header, c.body) for c in store.chunks(session_id=session_id)]

    stored = store.turns(live.id)
    ctx = ChunkContext(date=dt.datetime.fromtimestamp(T0), kind="transcript", title="t")
    expected = chunk_turns([ChunkTurn(t.id, t.speaker, t.start, t.text) for t in stored], ctx)
    assert shape(live.id) == shape(batch.id) == [(d.header, d.body) for d in expected]
    # every turn is covered, in order, by the chunks' turn ranges
    covered = [t.id for c in store.chunks(session_id=live.id) for t in store.turns_of_chunk(c.id)]
    assert sorted(set(covered)) == [t.id for t in stored]


def test_chunk_turns_and_occurred_at(store: Store) -> None:
    session = store.create_session(started_at=T0)
    store.append_turns(session.id, turns("alpha", "beta", start=30.0))
    (chunk,) = store.chunks(session_id=session.id)
    assert [t.text for t in store.turns_of_chunk(chunk.id)] == ["alpha", "beta"]
    assert chunk.occurred_at == T0 + 30.0
    assert chunk.body == "\n".join(
        turn_line(ChunkTurn(0, "me", 0, text)) for text in ("alpha", "beta")
    )


def test_a_live_turn_is_searchable_at_once(store: Store) -> None:
    session = store.create_session()
    store.append_turns(session.id, turns("the flamingo budget is approved"))
    hits = store.fts_chunks("flamingo", Scope())
    assert [h.id for h in hits] == [store.chunks(session_id=session.id)[0].id]
    fts_integrity(store)


def test_growing_chunk_is_reembedded_only_after_real_growth(
    store: Store, embedder: CountingEmbedder
) -> None:
    session = store.create_session()

    def vector_rows() -> list[tuple[int, int, int]]:
        return store.db.read(
            lambda c: c.execute(  # type: ignore[arg-type, return-value]
                "SELECT id, owner_id, chars FROM embeddings WHERE owner_kind = 'chunk'"
            ).fetchall()
        )

    store.append_turns(session.id, turns("short one"))
    first = vector_rows()
    assert len(first) == 1  # a new chunk is embedded at once
    store.append_turns(session.id, turns("short two", start=5))
    assert vector_rows() == first  # grew by a few characters: not yet
    store.append_turns(session.id, turns("x" * 400, start=10))
    grown = vector_rows()
    assert len(grown) == 1 and grown[0][0] != first[0][0] and grown[0][2] > first[0][2]
    calls = len(embedder.texts)
    store.end_session(session.id)
    (chunk,) = store.chunks(session_id=session.id)
    assert len(embedder.texts) == calls  # closed unchanged since its last embedding
    assert vector_rows()[0][2] == len(chunk.text)


def test_turns_survive_an_embedding_failure_and_embed_pending_catches_up(
    store: Store, embedder: CountingEmbedder
) -> None:
    session = store.create_session()
    embedder.failing = True
    store.append_turns(session.id, turns(*(sentence(i) for i in range(40))))
    store.end_session(session.id)
    assert len(store.turns(session.id)) == 40
    assert store.index.count("chunk") == 0
    assert store.fts_chunks("quarterly", Scope())
    embedder.failing = False
    assert store.index.embed_pending() == len(store.chunks(session_id=session.id)) + 40  # + turns
    assert store.index.embed_pending() == 0
    assert store.vector_chunks("quarterly numbers board", Scope())
    assert store.vector_turns("quarterly numbers board", Scope())


def test_file_session_moves_its_chunks(store: Store) -> None:
    space = store.create_space("Atlas")
    session_id = recorded_session(store, ["the pelican roadmap"])
    assert store.fts_chunks("pelican", Scope(space_id=space.id))  # profile-wide: seen
    store.file_session(session_id, space.id)
    assert store.get_session(session_id).space_id == space.id
    assert all(c.space_id == space.id for c in store.chunks(session_id=session_id))
    assert not store.fts_chunks("pelican", Scope())  # now only inside Atlas
    assert store.fts_chunks("pelican", Scope(space_id=space.id))


# -- archives -------------------------------------------------------------------------------------


def test_archive_is_indexed_in_the_sessions_space_and_replaced_on_rearchive(store: Store) -> None:
    space = store.create_space("Atlas")
    session_id = recorded_session(store, ["we talked"], space_id=space.id, title="Sync")
    first = store.put_archive(session_id, "Topic: walrus migration\nDecided: ship Friday")
    assert [c.kind for c in first] == ["session"] and first[0].space_id == space.id
    assert first[0].header.startswith("[") and "| session | Sync" in first[0].header
    second = store.put_archive(session_id, "Topic: narwhal rollout")
    assert [c.id for c in store.archive(session_id)] == [c.id for c in second]
    assert not store.fts_chunks("walrus", Scope(space_id=space.id))
    assert store.fts_chunks("narwhal", Scope(space_id=space.id))
    assert not store.fts_chunks("narwhal", Scope())
    long_archive = store.put_archive(session_id, "word " * 700)
    assert len(long_archive) == 3 and all(len(c.body) <= 1400 for c in long_archive)
    fts_integrity(store)


def test_archive_is_refused_outside_a_space_for_practice_and_for_opted_out_spaces(
    store: Store, embedder: CountingEmbedder
) -> None:
    space = store.create_space("A")
    unfiled = recorded_session(store, ["hello"])
    practice = recorded_session(store, ["mock interview"], space_id=space.id)
    store.update_session(practice, practice=True)
    opted_out = store.create_space("Private", memory_enabled=False)
    private = recorded_session(store, ["secret"], space_id=opted_out.id)
    embedded = len(embedder.texts)
    for session_id, reason in (
        (unfiled, "no Space"),
        (practice, "practice"),
        (private, "memory is off"),
    ):
        with pytest.raises(InvalidInput, match=reason):
            store.put_archive(session_id, "Topic: anything")
        assert store.archive(session_id) == []
    assert len(embedder.texts) == embedded  # nothing was sent to a model


def test_archive_is_embedded_first(store: Store, embedder: CountingEmbedder) -> None:
    session_id = recorded_session(store, ["hello"], space_id=store.create_space("A").id)
    store.put_archive(session_id, "Topic: first")
    embedder.failing = True
    with pytest.raises(Exception, match="embedding failed"):
        store.put_archive(session_id, "Topic: second")
    assert [c.body for c in store.archive(session_id)] == ["Topic: first"]


# -- documents ------------------------------------------------------------------------------------


def test_documents_add_list_and_remove(store: Store, tmp_path: Path) -> None:
    space = store.create_space("Job hunt", activity="job")
    path = tmp_path / "resume.md"
    path.write_text("# Experience\n\nLed the okapi platform team.\n\n# Education\n\nMSc.\n")
    doc = store.add_document(path, space_id=space.id)
    assert (doc.title, doc.media_type, doc.space_id) == ("resume", "text/markdown", space.id)
    assert doc.chunk_count == len(store.chunks(document_id=doc.id)) >= 1
    assert store.list_documents(space_id=space.id) == [doc]
    assert store.list_documents(profile_wide=True) == []
    hits = store.fts_chunks("okapi", Scope(space_id=space.id))
    assert hits and store.get_chunk(hits[0].id).document_id == doc.id
    assert not store.fts_chunks("okapi", Scope())
    assert store.vector_chunks("okapi platform team", Scope(space_id=space.id))
    with pytest.raises(InvalidInput, match="already added"):
        store.add_document(path, space_id=space.id)
    store.add_document(path, title="CV")  # the same file profile-wide is another document

    doc_chunks = {c.id for c in store.chunks(document_id=doc.id)}
    deleted = store.delete_document(doc.id)
    assert (deleted.documents, deleted.chunks, deleted.vectors) == (
        1,
        doc.chunk_count,
        doc.chunk_count,
    )
    assert store.chunks(document_id=doc.id) == []
    remaining = store.vector_chunks("okapi platform team", Scope(space_id=space.id))
    assert doc_chunks.isdisjoint(h.id for h in remaining)
    with pytest.raises(NotFound):
        store.get_document(doc.id)
    fts_integrity(store)


# -- full-text search -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "query",
    [
        "",
        "   ",
        'what\'s "AI"?',
        "title: budget",
        "(budget",
        "budget)",
        "AND",
        "budget OR NOT",
        "NEAR(budget plan)",
        "budget*",
        "*",
        '"',
        "🦩 flamingo 🦩",
        "^budget",
        "budget - plan + x",
        "the of and",
    ],
)
def test_fts_never_raises_on_user_text(store: Store, query: str) -> None:
    recorded_session(store, ["the flamingo budget plan"])
    assert isinstance(store.fts_chunks(query, Scope()), list)
    assert isinstance(store.fts_assertions(query, Scope()), list)


def test_fts_ranks_a_header_match_above_a_body_match(store: Store) -> None:
    for i in range(60):  # bm25 needs a corpus: a term in half the rows weighs nothing
        recorded_session(store, [f"filler conversation number {i} about lunch"], title=f"t{i}")
    in_body = recorded_session(store, ["the heron is mentioned in the body"], title="misc")
    in_header = recorded_session(store, ["nothing relevant was said here"], title="Heron review")
    hits = store.fts_chunks("heron", Scope())
    sessions = [store.get_chunk(h.id).session_id for h in hits]
    assert sessions == [in_header, in_body]
    assert hits[0].score < hits[1].score < 0


def test_fts_prefix_expansion_and_or_mode(store: Store) -> None:
    a = recorded_session(store, ["the migration finished"])
    b = recorded_session(store, ["budgets were cut"])
    found = {store.get_chunk(h.id).session_id for h in store.fts_chunks("migrat budget", Scope())}
    assert found == {a, b}


def test_a_second_profile_sees_nothing_of_the_first(tmp_path: Path) -> None:
    with open_store(tmp_path / "work") as work, open_store(tmp_path / "home") as home:
        recorded_session(work, ["the confidential kestrel merger"])
        assert work.fts_chunks("kestrel", Scope())
        assert home.fts_chunks("kestrel", Scope()) == []
        assert home.vector_chunks("confidential kestrel merger", Scope()) == []


def test_reopening_keeps_everything(tmp_path: Path) -> None:
    clock = Clock()
    with open_store(tmp_path / "p", clock=clock) as first:
        session_id = recorded_session(first, ["persistent ibis"])
    with open_store(tmp_path / "p", clock=clock) as again:
        assert [t.text for t in again.turns(session_id)] == ["persistent ibis"]
        assert again.fts_chunks("ibis", Scope())
        assert again.index.count("chunk") == 1
