"""The assertion layer and every deletion and scope rule, on a real database file.

The memory rules' table, as far as the store decides it: another Space, another profile,
profile-wide memory, re-scoping, consent, pending/rejected/archived, edits, expiry, model change,
Space deleted, session discarded.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from storekit import T0, Clock, CountingEmbedder, open_store, recorded_session

from daemon.errors import InvalidInput, NotFound, StoreError
from daemon.store.records import Assertion, NewAssertion, NewRestatement
from daemon.store.schema import MIGRATIONS, m006_restatements
from daemon.store.scope import Scope
from daemon.store.store import Store


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def store(tmp_path: Path, clock: Clock) -> Iterator[Store]:
    s = open_store(tmp_path / "profile", CountingEmbedder(), clock)
    yield s
    s.close()


def fact(text: str, **fields: object) -> NewAssertion:
    return NewAssertion(kind="fact", text=text, source="user", **fields)  # type: ignore[arg-type]


def extracted(store: Store, session_id: int, text: str, **fields: object) -> Assertion:
    anchor = store.chunks(session_id=session_id)[0].id
    session = store.get_session(session_id)
    return store.add_assertion(
        NewAssertion(
            kind=fields.pop("kind", "decision"),  # type: ignore[arg-type]
            text=text,
            source="extracted",
            anchor_chunk_id=anchor,
            session_id=session_id,
            space_id=fields.pop("space_id", session.space_id),  # type: ignore[arg-type]
            **fields,  # type: ignore[arg-type]
        )
    )


def recalled(store: Store, scope: Scope, words: str) -> set[int]:
    """Assertion ids any recall path returns for ``words`` (FTS, vector, current listing)."""
    found = {h.id for h in store.fts_assertions(words, scope)}
    found |= {h.id for h in store.vector_assertions(words, scope)}
    return found | {a.id for a in store.current_assertions(scope)}


def vectors_of(store: Store, kind: str, owner_ids: set[int]) -> int:
    rows = store.db.read(
        lambda c: c.execute(
            "SELECT owner_id FROM embeddings WHERE owner_kind = ?", (kind,)
        ).fetchall()
    )
    return sum(1 for (owner,) in rows if owner in owner_ids)


def fts_rows(store: Store, table: str, ids: set[int]) -> int:
    rows = store.db.read(lambda c: c.execute(f"SELECT rowid FROM {table}").fetchall())
    return sum(1 for (rowid,) in rows if rowid in ids)


# -- writing ------------------------------------------------------------------------------------


def test_nothing_enters_anonymously(store: Store) -> None:
    with pytest.raises(InvalidInput, match="anchor_chunk_id"):
        store.add_assertion(NewAssertion(kind="fact", text="x", source="extracted"))
    with pytest.raises(StoreError, match="CHECK constraint"):
        store.db.write(
            lambda c: c.execute(
                "INSERT INTO assertions (kind, text, source, occurred_at, recorded_at)"
                " VALUES ('fact', 'sneaky', 'extracted', 0, 0)"
            )
        )
    with pytest.raises(StoreError, match="CHECK constraint"):
        store.db.write(
            lambda c: c.execute(
                "INSERT INTO assertions (kind, text, source, occurred_at, recorded_at)"
                " VALUES ('fact', 'who said it?', 'rumour', 0, 0)"
            )
        )
    with pytest.raises(NotFound):
        store.add_assertion(
            NewAssertion(kind="fact", text="x", source="extracted", anchor_chunk_id=12345)
        )


def test_decision_fields_and_review_defaults(store: Store) -> None:
    decision = store.add_assertion(
        NewAssertion(
            kind="decision",
            text="We use Postgres",
            source="user",
            chosen="Postgres",
            alternatives=("MySQL", "SQLite"),
            reasoning="the team knows it",
        )
    )
    assert decision.alternatives == ("MySQL", "SQLite")
    assert decision.review_status == "approved"
    memory = store.add_assertion(fact("prefers short answers", about_person=True))
    assert memory.review_status == "pending"
    # the rejected alternative stays answerable
    assert [h.id for h in store.fts_assertions("why not sqlite", Scope())] == [decision.id]


# -- bitemporal ----------------------------------------------------------------------------------


def test_supersede_current_as_of_and_chain(store: Store, clock: Clock) -> None:
    clock.t = T0
    v1 = store.add_assertion(fact("The launch is in May", occurred_at=T0))
    clock.t = T0 + 100
    v2 = store.supersede(v1.id, fact("The launch is in June", occurred_at=T0 + 100))
    clock.t = T0 + 200
    v3 = store.supersede(v2.id, fact("The launch is in July", occurred_at=T0 + 200))

    old = store.get_assertion(v1.id)
    assert (old.invalidated_at, old.superseded_by) == (T0 + 100, v2.id)
    assert [a.id for a in store.current_assertions(Scope())] == [v3.id]
    assert [a.id for a in store.assertions_as_of(T0 - 1, Scope())] == []
    assert [a.id for a in store.assertions_as_of(T0 + 50, Scope())] == [v1.id]
    assert [a.id for a in store.assertions_as_of(T0 + 150, Scope())] == [v2.id]
    assert [a.id for a in store.assertions_as_of(T0 + 250, Scope())] == [v3.id]
    for member in (v1, v2, v3):
        assert [a.id for a in store.chain(member.id)] == [v1.id, v2.id, v3.id]
    # superseded rows are not recalled now, but are as of their time
    assert {h.id for h in store.fts_assertions("launch", Scope())} == {v3.id}
    assert {h.id for h in store.fts_assertions("launch", Scope(as_of=T0 + 50))} == {v1.id}
    assert {h.id for h in store.vector_assertions("launch", Scope())} == {v3.id}


def test_supersede_refusals_change_nothing(store: Store) -> None:
    v1 = store.add_assertion(fact("A"))
    v2 = store.supersede(v1.id, fact("B"))
    with pytest.raises(InvalidInput, match=f"superseded by {v2.id}"):
        store.supersede(v1.id, fact("C"))
    with pytest.raises(InvalidInput, match="itself"):
        store.supersede(v2.id, v2.id)
    with pytest.raises(InvalidInput, match="no longer current"):
        store.supersede(v2.id, v1.id)
    with pytest.raises(NotFound):  # the new row fails: the old one stays current
        store.supersede(v2.id, fact("D", space_id=999))
    assert [a.id for a in store.current_assertions(Scope())] == [v2.id]
    assert len(store.list_assertions(include_invalidated=True)) == 2


def test_supersede_an_existing_assertion_and_merge_chains(store: Store) -> None:
    a = store.add_assertion(fact("Ann owns billing"))
    b = store.add_assertion(fact("Bo owns invoices"))
    c = store.add_assertion(fact("Cy owns billing and invoices"))
    store.supersede(a.id, c.id)
    store.supersede(b.id, c.id)
    assert [x.id for x in store.chain(a.id)] == [a.id, b.id, c.id]


def test_invalidated_at_is_never_before_the_old_row_was_said(store: Store) -> None:
    late = store.add_assertion(fact("said late", occurred_at=T0 + 500))
    store.supersede(late.id, fact("imported from earlier", occurred_at=T0))
    assert store.get_assertion(late.id).invalidated_at == T0 + 500


# -- scope ----------------------------------------------------------------------------------------


def test_assertions_are_recalled_in_their_space_and_profile_wide_everywhere(store: Store) -> None:
    a = store.create_space("A")
    b = store.create_space("B")
    in_a = store.add_assertion(fact("osprey budget in A", space_id=a.id))
    in_b = store.add_assertion(fact("osprey budget in B", space_id=b.id))
    everywhere = store.add_assertion(fact("osprey budget profile wide"))
    assert recalled(store, Scope(space_id=a.id), "osprey budget") == {in_a.id, everywhere.id}
    assert recalled(store, Scope(space_id=b.id), "osprey budget") == {in_b.id, everywhere.id}
    assert recalled(store, Scope(), "osprey budget") == {everywhere.id}


def test_chunks_are_recalled_in_their_space_and_profile_wide_everywhere(store: Store) -> None:
    a = store.create_space("A")
    b = store.create_space("B")
    sa = recorded_session(store, ["the gannet contract"], space_id=a.id)
    sb = recorded_session(store, ["the gannet contract"], space_id=b.id)
    sn = recorded_session(store, ["the gannet contract"])

    def sessions(scope: Scope) -> set[int | None]:
        hits = store.fts_chunks("gannet", scope) + store.vector_chunks("gannet contract", scope)
        return {store.get_chunk(h.id).session_id for h in hits}

    assert sessions(Scope(space_id=a.id)) == {sa, sn}
    assert sessions(Scope(space_id=b.id)) == {sb, sn}
    assert sessions(Scope()) == {sn}


def test_person_memories_recalled_only_when_approved_unexpired_and_consented(
    store: Store, clock: Clock
) -> None:
    space = store.create_space("A")
    rows = {
        status: store.add_assertion(
            fact(
                f"prefers tea in the morning ({status})",
                about_person=True,
                space_id=space.id,
                review_status=status,
            )
        )
        for status in ("pending", "approved", "rejected", "archived")
    }
    expiring = store.add_assertion(
        fact(
            "prefers tea this week", about_person=True, review_status="approved", expires_at=T0 + 60
        )
    )
    scope = Scope(space_id=space.id)
    assert vectors_of(store, "assertion", {a.id for a in rows.values()}) == 4  # vectors exist
    assert recalled(store, scope, "prefers tea") == {rows["approved"].id, expiring.id}
    clock.t = T0 + 61
    assert recalled(store, scope, "prefers tea") == {rows["approved"].id}
    # consent revoked: silent, nothing deleted; given again: back
    assert recalled(store, Scope(space_id=space.id, person_memory=False), "prefers tea") == set()
    assert len(store.list_assertions(about_person=True)) == 5
    assert recalled(store, scope, "prefers tea") == {rows["approved"].id}


def test_review_edit_and_rescope(store: Store) -> None:
    a = store.create_space("A")
    b = store.create_space("B")
    memory = store.add_assertion(fact("likes the harbour office", about_person=True, space_id=a.id))
    assert recalled(store, Scope(space_id=a.id), "harbour office") == set()
    store.update_assertion(memory.id, review_status="approved")
    assert recalled(store, Scope(space_id=a.id), "harbour office") == {memory.id}
    # an edit re-embeds and re-indexes: recall follows the new words
    store.update_assertion(memory.id, text="likes the lighthouse office")
    assert memory.id not in {h.id for h in store.fts_assertions("harbour", Scope(space_id=a.id))}
    assert [h.id for h in store.fts_assertions("lighthouse", Scope(space_id=a.id))] == [memory.id]
    top = store.vector_assertions("lighthouse", Scope(space_id=a.id))
    assert top[0].id == memory.id and top[0].score > 0.3
    # re-scoping moves where it is recalled, both ways
    store.update_assertion(memory.id, space_id=b.id)
    assert recalled(store, Scope(space_id=a.id), "lighthouse office") == set()
    assert recalled(store, Scope(space_id=b.id), "lighthouse office") == {memory.id}
    store.update_assertion(memory.id, space_id=None)
    assert recalled(store, Scope(space_id=a.id), "lighthouse office") == {memory.id}
    with pytest.raises(InvalidInput, match="review_status"):
        store.update_assertion(memory.id, review_status="maybe")  # type: ignore[arg-type]


def test_cross_links_from_chunks_to_their_assertions(store: Store) -> None:
    session_id = recorded_session(store, ["we decide to ship on Friday"])
    decision = extracted(store, session_id, "Ship on Friday")
    chunk_id = decision.anchor_chunk_id
    assert chunk_id is not None
    assert [a.id for a in store.assertions_for_chunks([chunk_id], Scope())] == [decision.id]


# -- restatements -------------------------------------------------------------------------------


def said_again(store: Store, session_id: int, *assertions: Assertion) -> int:
    """Record that ``session_id`` said these assertions again, at its first chunk."""
    anchor = store.chunks(session_id=session_id)[0]
    return store.add_restatements(session_id, [
        NewRestatement(assertion_id=a.id, anchor_chunk_id=anchor.id,
                       occurred_at=anchor.occurred_at)
        for a in assertions
    ])


def restatement_rows(store: Store) -> list[tuple[int, int]]:
    return store.db.read(lambda c: c.execute(  # type: ignore[arg-type, return-value]
        "SELECT assertion_id, session_id FROM restatements ORDER BY id").fetchall())


def test_a_restatement_names_the_later_session_once(store: Store) -> None:
    space = store.create_space("A")
    first = recorded_session(store, ["we ship on Friday"], space_id=space.id, title="Monday")
    second = recorded_session(store, ["so, Friday it is"], space_id=space.id, title="Tuesday",
                              started_at=T0 + 86400)
    decision = extracted(store, first, "Ship on Friday")

    assert said_again(store, second, decision) == 1
    assert said_again(store, second, decision) == 0  # keeping it twice adds nothing
    assert said_again(store, first, decision) == 0  # its own session is its source, not again
    (again,) = store.restatements([decision.id])
    anchor = store.chunks(session_id=second)[0]
    assert (again.assertion_id, again.session_id, again.session_title) == (
        decision.id, second, "Tuesday")
    assert (again.anchor_chunk_id, again.occurred_at) == (anchor.id, anchor.occurred_at)
    assert restatement_rows(store) == [(decision.id, second)]
    # an assertion deleted meanwhile is skipped, a missing session is an error
    gone = extracted(store, first, "Ship on Thursday")
    store.delete_assertion(gone.id)
    assert said_again(store, second, gone) == 0
    with pytest.raises(NotFound):
        store.add_restatements(12345, [NewRestatement(assertion_id=decision.id)])


def test_a_restatement_never_links_two_spaces_or_a_memory_about_the_person(
    store: Store,
) -> None:
    a, b = store.create_space("A"), store.create_space("B")
    in_a = recorded_session(store, ["we ship on Friday"], space_id=a.id)
    in_b = recorded_session(store, ["we ship on Friday"], space_id=b.id)
    unfiled = recorded_session(store, ["we ship on Friday"])
    later_in_a = recorded_session(store, ["Friday"], space_id=a.id)
    decision = extracted(store, in_a, "Ship on Friday")
    memory = extracted(store, in_a, "likes Fridays", kind="preference", about_person=True,
                       review_status="approved")
    profile_wide = store.add_assertion(fact("Fridays are short"))

    assert said_again(store, in_b, decision) == 0
    assert said_again(store, unfiled, decision) == 0
    assert said_again(store, later_in_a, memory, profile_wide) == 0
    assert restatement_rows(store) == []

    # a session moved to another Space takes no link across Spaces with it
    assert said_again(store, later_in_a, decision) == 1
    store.file_session(later_in_a, b.id)
    assert restatement_rows(store) == [] and store.restatements([decision.id]) == []
    # nor does the assertion's own session moving away from those that said it again
    store.file_session(later_in_a, a.id)
    assert said_again(store, later_in_a, decision) == 1
    store.file_session(in_a, b.id)
    assert store.get_assertion(decision.id).space_id == b.id
    assert restatement_rows(store) == []


def test_discarding_the_later_session_removes_its_restatements_only(store: Store) -> None:
    space = store.create_space("A")
    first = recorded_session(store, ["we ship on Friday"], space_id=space.id)
    second = recorded_session(store, ["Friday it is"], space_id=space.id)
    third = recorded_session(store, ["yes, Friday"], space_id=space.id)
    decision = extracted(store, first, "Ship on Friday")
    said_again(store, second, decision)
    said_again(store, third, decision)

    deleted = store.delete_session(second)

    assert (deleted.sessions, deleted.assertions, deleted.restatements) == (1, 0, 1)
    assert store.get_assertion(decision.id).current
    assert [r.session_id for r in store.restatements([decision.id])] == [third]


def test_deleting_the_assertion_or_its_session_removes_its_restatements(store: Store) -> None:
    space = store.create_space("A")
    first = recorded_session(store, ["we ship on Friday"], space_id=space.id)
    second = recorded_session(store, ["Friday it is; Postgres too"], space_id=space.id)
    friday = extracted(store, first, "Ship on Friday")
    postgres = extracted(store, first, "Use Postgres")
    said_again(store, second, friday, postgres)

    assert store.delete_assertion(friday.id).restatements == 1
    assert restatement_rows(store) == [(postgres.id, second)]
    deleted = store.delete_session(first)  # the source goes: its assertion and the link too
    assert (deleted.assertions, deleted.restatements) == (1, 1)
    assert restatement_rows(store) == []
    store.get_session(second)  # the session that said it again stays


def test_restatements_go_with_their_space_and_with_everything(store: Store) -> None:
    a, b = store.create_space("A"), store.create_space("B")
    seconds = []
    for space in (a, b):
        first = recorded_session(store, ["we ship on Friday"], space_id=space.id)
        seconds.append(recorded_session(store, ["Friday it is"], space_id=space.id))
        said_again(store, seconds[-1], extracted(store, first, "Ship on Friday"))
    assert store.delete_space(a.id).restatements == 1
    assert [session for _, session in restatement_rows(store)] == [seconds[1]]
    assert store.delete_all().restatements == 1
    assert restatement_rows(store) == []


def test_a_profile_from_before_restatements_gains_them_on_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data_dir = tmp_path / "p"
    with monkeypatch.context() as older:
        # every other migration applied: today's code writes the rows (later migrations add
        # columns it writes), only the restatements table is missing
        before = tuple(m for m in MIGRATIONS if m is not m006_restatements)
        older.setattr("daemon.store.store.MIGRATIONS", before)
        with open_store(data_dir) as store:
            space = store.create_space("A")
            first = recorded_session(store, ["we ship on Friday"], space_id=space.id)
            second = recorded_session(store, ["Friday it is"], space_id=space.id)
            decision = extracted(store, first, "Ship on Friday")
            assert store.db.read(lambda c: c.execute(
                "SELECT count(*) FROM sqlite_master WHERE name = 'restatements'").get) == 0
    with open_store(data_dir) as store:
        assert store.get_assertion(decision.id).text == "Ship on Friday"
        assert said_again(store, second, decision) == 1
        applied = store.db.read(lambda c: [r[0] for r in c.execute(
            "SELECT name FROM migrations ORDER BY rowid")])
        assert "m006_restatements" in applied


def test_a_restatement_cannot_outlive_what_it_links(store: Store) -> None:
    """The links are foreign keys without ON DELETE: a deletion that forgot them fails."""
    space = store.create_space("A")
    first = recorded_session(store, ["we ship on Friday"], space_id=space.id)
    second = recorded_session(store, ["Friday it is"], space_id=space.id)
    decision = extracted(store, first, "Ship on Friday")
    said_again(store, second, decision)
    with pytest.raises(StoreError, match="FOREIGN KEY"):
        store.db.write(lambda c: c.execute("DELETE FROM sessions WHERE id = ?", (second,)))
    with pytest.raises(StoreError, match="FOREIGN KEY"):
        store.db.write(lambda c: c.execute("DELETE FROM assertions WHERE id = ?",
                                           (decision.id,)))


# -- deletion ------------------------------------------------------------------------------------


def test_deleting_a_session_removes_what_it_produced_but_not_reviewed_memories(
    store: Store,
) -> None:
    space = store.create_space("A")
    doomed = recorded_session(store, ["the albatross plan is risky"], space_id=space.id)
    kept = recorded_session(store, ["the cormorant plan is fine"], space_id=space.id)
    archive = store.put_archive(doomed, "Topic: albatross archive")
    decision = extracted(store, doomed, "Drop the albatross plan")
    pending = extracted(
        store, doomed, "prefers albatross detail", kind="preference", about_person=True
    )
    approved = extracted(
        store,
        doomed,
        "prefers albatross brevity",
        kind="preference",
        about_person=True,
        review_status="approved",
    )
    rejected = extracted(
        store,
        doomed,
        "prefers albatross jokes",
        kind="preference",
        about_person=True,
        review_status="rejected",
    )
    other = extracted(store, kept, "Keep the cormorant plan")
    chunk_ids = {c.id for c in store.chunks(session_id=doomed)}
    assert {c.id for c in archive} <= chunk_ids

    deleted = store.delete_session(doomed)

    assert (deleted.sessions, deleted.turns, deleted.chunks, deleted.assertions) == (
        1,
        1,
        len(chunk_ids),
        2,
    )
    with pytest.raises(NotFound):
        store.get_session(doomed)
    assert store.turns(doomed) == [] and store.chunks(session_id=doomed) == []
    remaining = {a.id for a in store.list_assertions(include_invalidated=True)}
    assert remaining == {approved.id, rejected.id, other.id}
    gone = {decision.id, pending.id}
    assert vectors_of(store, "chunk", chunk_ids) == 0
    assert vectors_of(store, "assertion", gone) == 0
    assert fts_rows(store, "assertions_fts", gone) == 0
    assert store.fts_chunks("albatross", Scope(space_id=space.id)) == []
    assert {
        h.id for h in store.vector_chunks("albatross plan risky", Scope(space_id=space.id))
    }.isdisjoint(chunk_ids)
    # the approved memory is still recalled; the other session is untouched
    assert recalled(store, Scope(space_id=space.id), "albatross") == {approved.id, other.id}
    assert len(store.turns(kept)) == 1 and store.fts_chunks("cormorant", Scope(space_id=space.id))


def test_deleting_the_correction_restores_what_it_corrected(store: Store) -> None:
    first = recorded_session(store, ["we pick Postgres"])
    second = recorded_session(store, ["actually MySQL"])
    v1 = extracted(store, first, "Use Postgres")
    store.supersede(v1.id, extracted(store, second, "Use MySQL").id)
    store.delete_session(second)
    assert store.get_assertion(v1.id).current
    assert [a.id for a in store.current_assertions(Scope())] == [v1.id]


def test_deleting_the_middle_of_a_chain_splices_it(store: Store) -> None:
    sessions = [recorded_session(store, [text]) for text in ("Postgres", "MySQL", "MariaDB")]
    v1 = extracted(store, sessions[0], "Use Postgres")
    v2 = store.supersede(v1.id, extracted(store, sessions[1], "Use MySQL").id)
    v3 = store.supersede(v2.id, extracted(store, sessions[2], "Use MariaDB").id)
    store.delete_session(sessions[1])
    spliced = store.get_assertion(v1.id)
    assert (spliced.superseded_by, spliced.current) == (v3.id, False)
    assert [a.id for a in store.chain(v1.id)] == [v1.id, v3.id]
    assert [a.id for a in store.current_assertions(Scope())] == [v3.id]


def test_deleting_a_space_removes_its_memory_and_keeps_profile_wide_memory(
    store: Store, tmp_path: Path
) -> None:
    a = store.create_space("A")
    b = store.create_space("B")
    in_a = recorded_session(store, ["the puffin deal"], space_id=a.id)
    in_b = recorded_session(store, ["the puffin deal"], space_id=b.id)
    store.put_archive(in_a, "Topic: puffin")
    doc = tmp_path / "notes.txt"
    doc.write_text("puffin notes")
    store.add_document(doc, space_id=a.id)
    scoped_memory = extracted(
        store, in_a, "likes puffins", kind="preference", about_person=True, review_status="approved"
    )
    everywhere = extracted(
        store,
        in_a,
        "likes seabirds",
        kind="preference",
        about_person=True,
        review_status="approved",
        space_id=None,
    )
    b_fact = store.add_assertion(fact("puffin fact in B", space_id=b.id))

    deleted = store.delete_space(a.id)

    assert (deleted.spaces, deleted.sessions, deleted.documents) == (1, 1, 1)
    with pytest.raises(NotFound):
        store.get_space(a.id)
    assert store.list_documents() == []
    ids = {x.id for x in store.list_assertions(include_invalidated=True)}
    assert ids == {everywhere.id, b_fact.id}
    assert scoped_memory.id not in ids
    assert recalled(store, Scope(space_id=b.id), "likes seabirds puffin") == {
        everywhere.id,
        b_fact.id,
    }
    assert {
        store.get_chunk(h.id).session_id for h in store.fts_chunks("puffin", Scope(space_id=b.id))
    } == {in_b}
    assert (
        store.db.read(
            lambda c: (
                c.execute(
                    "SELECT count(*) FROM embeddings e WHERE e.owner_kind = 'chunk'"
                    " AND e.owner_id NOT IN (SELECT id FROM chunks)"
                ).get
            )
        )
        == 0
    )


def test_delete_all_empties_the_profile(store: Store, tmp_path: Path) -> None:
    space = store.create_space("A")
    session_id = recorded_session(store, ["the shearwater"], space_id=space.id)
    extracted(store, session_id, "x")
    store.add_assertion(fact("profile fact"))
    deleted = store.delete_all()
    assert (deleted.spaces, deleted.sessions, deleted.assertions) == (1, 1, 2)
    for table in (
        "spaces",
        "sessions",
        "turns",
        "chunks",
        "documents",
        "assertions",
        "embeddings",
        "assertions_fts",
    ):
        assert store.db.read(lambda c, t=table: c.execute(f"SELECT count(*) FROM {t}").get) == 0  # type: ignore[misc]
    assert store.index.count("chunk") == store.index.count("assertion") == 0
    assert store.fts_chunks("shearwater", Scope()) == []
    store.create_space("A")  # usable again


def test_file_session_moves_its_assertions_but_not_reviewed_person_memory(store: Store) -> None:
    a = store.create_space("A")
    b = store.create_space("B")
    session_id = recorded_session(store, ["hello"], space_id=a.id)
    decision = extracted(store, session_id, "decided")
    memory = extracted(
        store, session_id, "likes x", kind="preference", about_person=True, review_status="approved"
    )
    store.file_session(session_id, b.id)
    assert store.get_assertion(decision.id).space_id == b.id
    assert store.get_assertion(memory.id).space_id == a.id


def test_deleted_words_leave_no_trace_on_disk(tmp_path: Path) -> None:
    data_dir = tmp_path / "p"
    with open_store(data_dir) as store:
        space = store.create_space("A")
        recorded_session(
            store, [f"ordinary words number {i} about lunch" for i in range(200)], space_id=space.id
        )
        doomed = recorded_session(
            store,
            ["the zanzibarword secret"] + [f"more words {i}" for i in range(50)],
            space_id=space.id,
        )
        store.put_archive(doomed, "Topic: zanzibarword archive")
        extracted(store, doomed, "zanzibarword decision")
        doc = tmp_path / "secret.txt"
        doc.write_text("the quokkaword document")
        document = store.add_document(doc, space_id=space.id)
        memory = store.add_assertion(fact("likes the platypusword cafe", about_person=True))
        store.delete_session(doomed)
        store.delete_document(document.id)
        store.update_assertion(memory.id, text="likes the corner cafe")
    for f in data_dir.iterdir():
        data = f.read_bytes()
        for word in (b"zanzibarword", b"quokkaword", b"platypusword"):
            assert word not in data, (word, f.name)
