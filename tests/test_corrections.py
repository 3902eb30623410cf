"""The user's corrections of a kept decision, commitment or task (daemon.memory.corrections):
each is a new version or an end, never an overwrite, so what was believed before is still read
as of then. The real pipeline on a real database file with scripted models (World)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from storekit import Clock
from test_persistence_e2e import COMMITMENT, DECISION, World

from daemon.errors import InvalidInput
from daemon.memory import corrections, open_items
from daemon.store.records import Assertion
from daemon.store.scope import Scope


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    w = World(tmp_path, Clock())
    yield w
    w.store.close()


async def kept(world: World) -> tuple[int, Assertion, Assertion]:
    """Atlas with one kept session: its decision and its open commitment."""
    atlas = world.space("Atlas")
    await world.keep(world.session(space_id=atlas))
    said = world.store.list_assertions(space_id=atlas)
    decision = next(a for a in said if a.kind == "decision")
    commitment = next(a for a in said if a.kind == "commitment")
    return atlas, decision, commitment


def texts_as_of(world: World, atlas: int, at: float) -> set[str]:
    return {a.text for a in world.store.assertions_as_of(at, Scope(space_id=atlas))}


async def test_a_correction_supersedes_and_the_old_version_is_read_as_of_before(
        world: World) -> None:
    atlas, decision, commitment = await kept(world)
    before = world.clock.t
    world.clock.t += 60
    owner = corrections.correct(world.store, commitment.id, owner="Sam",
                                text="Sam will send the revised budget by Friday.")
    assert (owner.source, owner.owner, owner.due, owner.session_id, owner.anchor_chunk_id) == (
        "user", "Sam", "Friday", commitment.session_id, commitment.anchor_chunk_id)
    chosen = corrections.correct(world.store, decision.id, chosen="April 1st",
                                 alternatives=["March 3rd", " "], reasoning="")
    assert (chosen.text, chosen.chosen, chosen.alternatives, chosen.reasoning) == (
        DECISION["text"], "April 1st", ("March 3rd",), None)
    assert [a.id for a in world.store.chain(commitment.id)] == [commitment.id, owner.id]
    assert world.store.get_assertion(commitment.id).superseded_by == owner.id
    # open items follow the correction; as of before it, the extracted versions
    assert [i.assertion.owner for i in open_items.list_open(world.store, space_id=atlas)] \
        == ["Sam"]
    assert [i.assertion.owner for i in open_items.list_open(
        world.store, space_id=atlas, as_of=before)] == ["Priya"]
    assert COMMITMENT["text"] in texts_as_of(world, atlas, before)
    assert owner.text not in texts_as_of(world, atlas, before)
    assert owner.text in texts_as_of(world, atlas, world.clock.t)


async def test_delete_ends_it_now_reopen_undoes_a_close(world: World) -> None:
    atlas, decision, commitment = await kept(world)
    before = world.clock.t
    world.clock.t += 60
    gone = corrections.retract(world.store, decision.id)
    assert gone.invalidated_at == world.clock.t and gone.superseded_by is None
    assert DECISION["text"] not in texts_as_of(world, atlas, world.clock.t)
    assert DECISION["text"] in texts_as_of(world, atlas, before)
    with pytest.raises(InvalidInput, match="no longer current"):
        corrections.correct(world.store, decision.id, text="Anything.")

    closed = open_items.close_by_hand(world.store, commitment.id, "done")
    assert open_items.list_open(world.store, space_id=atlas) == []
    with pytest.raises(InvalidInput, match="no longer current"):
        corrections.reopen(world.store, commitment.id)  # the closed version is the current one
    again = corrections.reopen(world.store, closed.id)
    assert [i.assertion.id for i in open_items.list_open(world.store, space_id=atlas)] \
        == [again.id]
    assert (again.text, again.owner, again.source) == (COMMITMENT["text"], "Priya", "user")
    assert closed.session_id is None  # closed by hand: said in no session; reopened, it is
    assert (again.session_id, again.anchor_chunk_id) == (commitment.session_id,
                                                         commitment.anchor_chunk_id)


async def test_corrections_refuse_what_they_cannot_do(world: World) -> None:
    _, decision, commitment = await kept(world)
    with pytest.raises(InvalidInput, match="changes nothing"):
        corrections.correct(world.store, decision.id, text=f"  {decision.text} ")
    with pytest.raises(InvalidInput, match="needs some text"):
        corrections.correct(world.store, commitment.id, text="   ")
    with pytest.raises(InvalidInput, match="not a closed commitment"):
        corrections.reopen(world.store, commitment.id)
    memory = next(a for a in world.memories() if a.about_person)
    with pytest.raises(InvalidInput, match="memory review"):
        corrections.retract(world.store, memory.id)
    assert world.store.get_assertion(commitment.id).invalidated_at is None  # nothing changed
