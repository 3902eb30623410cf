"""Open items: commitments and tasks open until a later session of their Space says
they are done (or no longer needed) or the user closes them; carried forward to the next
session; and questions over a person and a period answered from every matching assertion.

The real pipeline (remember, reconcile, write, read) on a real database file, with scripted
models (tests/test_persistence_e2e.py's World); the question reading and the selection are
pure and tested without any model.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from storekit import T0, Clock
from test_persistence_e2e import ATLAS, COMMITMENT, DECISION, World

from daemon.config import Settings
from daemon.errors import InvalidInput
from daemon.llm.generate import ScriptedGenerator
from daemon.memory import open_items
from daemon.memory.ask import Asker
from daemon.memory.item_questions import ItemQuestion, read_question, select
from daemon.store.records import Assertion, NewAssertion
from daemon.store.scope import Scope

SENT = [("them", "Quick update: Priya sent the revised budget to everyone yesterday."),
        ("me", "Great, thanks Priya.")]
SENT_FACT = {"kind": "fact", "text": "Priya sent the revised budget.",
             "evidence": "Priya sent the revised budget"}
CANCELLED = [("them", "We no longer need the revised budget, finance approved the old one.")]
NOT_NEEDED = {"kind": "fact", "text": "The revised budget is no longer needed.",
              "evidence": "no longer need the revised budget"}


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    w = World(tmp_path, Clock())
    yield w
    w.store.close()


def open_texts(world: World, space_id: int, **kwargs: Any) -> list[str]:
    return [i.assertion.text for i in open_items.list_open(world.store, space_id=space_id,
                                                            **kwargs)]


async def kept_commitment(world: World) -> tuple[int, Assertion]:
    """Atlas with one kept session whose commitment (Priya, the budget) is open."""
    atlas = world.space("Atlas")
    await world.keep(world.session(space_id=atlas))
    (item,) = world.store.open_items(Scope(space_id=atlas))
    return atlas, item


# -- opening ---------------------------------------------------------------------------------


async def test_a_kept_commitment_is_open_with_who_what_due_and_where(world: World) -> None:
    atlas, item = await kept_commitment(world)
    assert (item.kind, item.owner, item.due) == ("commitment", "Priya", "Friday")
    (listed,) = open_items.list_open(world.store, space_id=atlas)
    assert listed.session_title == "Atlas sync"
    assert open_items.item_line(listed).startswith(
        "Priya: Priya will send the revised budget by Friday. (due Friday) · said in Atlas sync")
    # a decision is never an open item
    assert DECISION["text"] not in open_texts(world, atlas)
    assert open_texts(world, atlas, owner="priya") == [COMMITMENT["text"]]
    assert open_texts(world, atlas, owner="Tom") == []


# -- closing by what a later session says ----------------------------------------------------


async def test_a_later_session_that_says_it_is_done_closes_it_with_the_turn(
        world: World) -> None:
    atlas, item = await kept_commitment(world)
    before_closing = world.clock.t - 1  # the next session starts at clock.t
    world.script.assertions = [SENT_FACT]
    world.script.rulings = [{"verdict": "done", "existing": 1}]
    later = world.session(SENT, space_id=atlas, title="Atlas check-in")
    outcome = await world.keep(later)
    assert (outcome.assertions, outcome.superseded, outcome.closed) == (1, 1, 1)
    # the model was told the item is open and offered done / dropped
    prompt = world.generator.calls[-1]
    assert "1. [open commitment, said" in prompt[-1].content
    assert '"done" if it says an open task or commitment has been done' in prompt[0].content

    assert world.store.open_items(Scope(space_id=atlas)) == []
    chain = world.store.chain(item.id)
    assert [a.text for a in chain] == [COMMITMENT["text"], SENT_FACT["text"]]
    closed = chain[-1]
    # the closed version is the item's: its kind, owner and due date, said in the later session
    assert (closed.kind, closed.owner, closed.due, closed.session_id) == (
        "commitment", "Priya", "Friday", later)
    assert chain[0].superseded_by == closed.id and chain[0].invalidated_at is not None
    closure = world.store.item_closures([closed.id])[closed.id]
    assert closure.status == "done"
    (turn,) = world.store.get_turns([closure.evidence_turn_id or 0])
    assert (turn.session_id, turn.text) == (later, SENT[0][1])

    # before it was closed it was open: --as-of sees it, and search as of then finds it
    as_of = Scope(space_id=atlas, as_of=before_closing)
    assert [a.id for a in world.store.open_items(as_of)] == [item.id]
    assert item.id in {h.id for h in world.store.fts_assertions("revised budget", as_of)}
    assert open_texts(world, atlas, as_of=before_closing) == [COMMITMENT["text"]]
    # and no later session inherits it
    next_one = world.store.get_session(world.session(space_id=atlas, title="next"))
    assert open_items.carried_forward(world.store, next_one) is None


async def test_a_later_session_that_says_it_is_not_needed_drops_it(world: World) -> None:
    atlas, item = await kept_commitment(world)
    world.script.assertions = [NOT_NEEDED]
    world.script.rulings = [{"verdict": "dropped", "existing": 1}]
    outcome = await world.keep(world.session(CANCELLED, space_id=atlas))
    assert outcome.closed == 1
    closed = world.store.chain(item.id)[-1]
    assert world.store.item_closures([closed.id])[closed.id].status == "dropped"
    assert world.store.open_items(Scope(space_id=atlas)) == []


async def test_a_fact_that_supersedes_an_open_item_closes_it_an_update_does_not(
        world: World) -> None:
    atlas, item = await kept_commitment(world)
    moved = {**COMMITMENT, "text": "Priya will send the revised budget by Monday.",
             "due": "Monday", "evidence": "Priya will send the revised budget"}
    world.script.assertions = [moved]
    world.script.rulings = [{"verdict": "supersedes", "existing": 1}]
    later = [("them", "Priya will send the revised budget by Monday, not Friday.")]
    outcome = await world.keep(world.session(later, space_id=atlas))
    assert (outcome.superseded, outcome.closed) == (1, 0)
    (updated,) = world.store.open_items(Scope(space_id=atlas))
    assert (updated.due, world.store.chain(item.id)[-1].id) == ("Monday", updated.id)

    world.script.assertions = [SENT_FACT]
    world.script.rulings = [{"verdict": "supersedes", "existing": 1}]
    outcome = await world.keep(world.session(SENT, space_id=atlas))
    assert (outcome.superseded, outcome.closed) == (1, 1)
    closed = world.store.chain(item.id)[-1]
    assert (closed.kind, world.store.item_closures([closed.id])[closed.id].status) == (
        "commitment", "done")
    assert world.store.open_items(Scope(space_id=atlas)) == []


async def test_done_said_of_what_is_not_open_is_stored_as_separate(world: World) -> None:
    atlas = world.space("Atlas")
    world.script.assertions = [DECISION]
    await world.keep(world.session(space_id=atlas))
    world.script.assertions = [{**DECISION, "text": "Atlas launched on March 3rd as planned."}]
    world.script.rulings = [{"verdict": "done", "existing": 1}]
    outcome = await world.keep(world.session(space_id=atlas))
    assert (outcome.assertions, outcome.superseded, outcome.closed) == (1, 0, 0)
    assert "open" not in world.generator.calls[-1][-1].content.split("Existing:")[1]


async def test_a_correction_of_a_closed_item_leaves_it_closed(world: World) -> None:
    atlas, item = await kept_commitment(world)
    closed = open_items.close_by_hand(world.store, item.id, "done")
    corrected = world.store.supersede(closed.id, NewAssertion(
        kind="commitment", text="Priya sent the revised budget on Thursday.", source="user",
        space_id=atlas, owner="Priya"))
    assert world.store.item_closures([corrected.id])[corrected.id].status == "done"
    assert world.store.open_items(Scope(space_id=atlas)) == []


# -- closing by hand -------------------------------------------------------------------------


async def test_done_and_drop_by_hand_keep_the_history(world: World) -> None:
    atlas, item = await kept_commitment(world)
    world.clock.t += 600
    closed = open_items.close_by_hand(world.store, item.id, "done")
    assert (closed.source, closed.text, closed.owner, closed.occurred_at) == (
        "user", item.text, "Priya", world.clock.t)
    assert world.store.item_closures([closed.id])[closed.id].evidence_turn_id is None
    assert world.store.open_items(Scope(space_id=atlas)) == []
    assert [a.id for a in world.store.chain(item.id)] == [item.id, closed.id]
    assert [a.id for a in world.store.open_items(
        Scope(space_id=atlas, as_of=world.clock.t - 1))] == [item.id]

    with pytest.raises(InvalidInput, match="no longer current"):
        open_items.close_by_hand(world.store, item.id, "dropped")
    with pytest.raises(InvalidInput, match="already closed"):
        open_items.close_by_hand(world.store, closed.id, "dropped")
    (decision,) = world.store.current_assertions(Scope(space_id=atlas), kind="decision")
    with pytest.raises(InvalidInput, match="is a decision: only a commitment or a task"):
        open_items.close_by_hand(world.store, decision.id, "done")
    with pytest.raises(InvalidInput, match="unknown value 'finished'"):
        open_items.close_by_hand(world.store, item.id, "finished")


async def test_discarding_the_closing_session_reopens_the_item(world: World) -> None:
    atlas, item = await kept_commitment(world)
    world.script.assertions = [SENT_FACT]
    world.script.rulings = [{"verdict": "done", "existing": 1}]
    later = world.session(SENT, space_id=atlas)
    await world.keep(later)
    assert world.store.open_items(Scope(space_id=atlas)) == []
    await world.rememberer.remember(later, "discard")
    assert [a.id for a in world.store.open_items(Scope(space_id=atlas))] == [item.id]


# -- carried forward, and Space scope --------------------------------------------------------


async def test_open_items_carry_forward_within_their_space_only(world: World) -> None:
    atlas, item = await kept_commitment(world)
    beta = world.space("Beta")
    in_atlas = world.store.get_session(world.session(space_id=atlas, title="next Atlas"))
    carried = open_items.carried_forward(world.store, in_atlas)
    assert carried is not None and carried.message == "1 open from last time"
    assert [i.assertion.id for i in carried.items] == [item.id]

    in_beta = world.store.get_session(world.session(space_id=beta))
    assert open_items.carried_forward(world.store, in_beta) is None
    assert open_items.list_open(world.store, space_id=beta) == []
    assert open_items.carried_forward(world.store,
                                      world.store.get_session(world.session(space_id=None))) is None
    # the item's own session does not inherit it
    assert open_items.carried_forward(world.store,
                                      world.store.get_session(item.session_id or 0)) is None
    # nor is it closed by what another Space says
    world.script.assertions = [SENT_FACT]
    outcome = await world.keep(world.session(SENT, space_id=beta))
    assert outcome.closed == 0 and not world.script.rulings
    assert [i.assertion.id for i in open_items.list_open(world.store, space_id=atlas)] == [
        item.id]
    everywhere = open_items.list_open(world.store, all_spaces=True)
    assert [i.assertion.id for i in everywhere] == [item.id]


# -- questions over a person and a period: read without a model ------------------------------

NOW = dt.datetime(2026, 12, 15, 12, 0, tzinfo=dt.UTC)
OWNERS = ["Sarah Chen", "Tom", "Priya", "me"]


def test_the_question_says_the_owner_kind_and_period() -> None:
    asked = read_question("What did Sarah commit to this month?", NOW, OWNERS)
    assert asked == ItemQuestion(kinds=("commitment", "task"), owner="sarah",
                                 start=dt.datetime(2026, 12, 1, tzinfo=dt.UTC).timestamp(),
                                 end=NOW.timestamp())
    decided = read_question("What did we decide about pricing since March?", NOW, OWNERS)
    assert decided is not None and decided.kinds == ("decision",)
    assert decided.start == dt.datetime(2026, 3, 1, tzinfo=dt.UTC).timestamp()
    assert decided.end == NOW.timestamp() and decided.topic == ("pric",)
    still = read_question("What's still open?", NOW, OWNERS)
    assert still is not None and still.open_only and still.owner is None
    owe = read_question("What do I owe them?", NOW, OWNERS)
    assert owe is not None and (owe.owner, owe.open_only) == ("me", True)
    after = read_question("What was still open after the last meeting?", NOW, OWNERS)
    assert after is not None and after.after_last and after.open_only
    # a name nobody in scope has is no owner; a question about no item kind is not one
    nobody = read_question("What did Bob promise last week?", NOW, OWNERS)
    assert nobody is not None and nobody.owner is None and nobody.start is not None
    assert read_question("Where is the offsite?", NOW, OWNERS) is None
    assert read_question("What did Tom say about the budget?", NOW, OWNERS) is None
    # a kind alone is the everyday question search answers, with the transcript around it
    assert read_question("What did we decide about pricing?", NOW, OWNERS) is None
    assert read_question("What are the action items?", NOW, OWNERS) is None


def generated(n_sessions: int = 30) -> list[Assertion]:
    """Commitments by three owners over 30 sessions, two days apart up to NOW (some this
    month, most before), plus decisions; ids in order."""
    rows: list[Assertion] = []
    owners = ["Sarah Chen", "Tom Baker", "Priya"]
    for i in range(n_sessions):
        said = NOW.timestamp() - (n_sessions - 1 - i) * 2 * 86_400 - 3600
        for j, owner in enumerate(owners):
            rows.append(Assertion(
                id=len(rows) + 1, kind="commitment" if j != 1 or i % 2 else "task",
                text=f"{owner} will deliver part {i}-{j}.", chosen=None, alternatives=(),
                reasoning=None, owner=owner, due=None, about_person=False,
                review_status="approved", space_id=1, source="extracted", anchor_chunk_id=i,
                session_id=i + 1, occurred_at=said, recorded_at=said, invalidated_at=None,
                superseded_by=None, expires_at=None))
    return rows


def test_the_selection_is_every_match_oldest_first_and_nothing_else() -> None:
    rows = generated()
    asked = read_question("What did Sarah commit to this month?", NOW, OWNERS)
    assert asked is not None
    chosen = select(list(reversed(rows)), asked)
    month = dt.datetime(2026, 12, 1, tzinfo=dt.UTC).timestamp()
    expected = [a for a in rows if a.owner == "Sarah Chen" and a.occurred_at >= month]
    assert 5 <= len(expected) < 30 and chosen == expected  # all of hers this month, in order
    assert select(rows, msgspec_replace(asked, start=None, end=None)) == [
        a for a in rows if a.owner == "Sarah Chen"]
    # open-only keeps only the open ones; a topic nobody shares is not a filter
    opened = {expected[0].id}
    assert select(rows, msgspec_replace(asked, open_only=True), opened) == [expected[0]]
    assert select(rows, msgspec_replace(asked, topic=("zebra",))) == expected


def msgspec_replace(asked: ItemQuestion, **changes: Any) -> ItemQuestion:
    import msgspec

    return msgspec.structs.replace(asked, **changes)


# -- ... and answered from every matching assertion in scope --------------------------------


def items_asker(world: World, reply: str) -> tuple[ScriptedGenerator, Asker]:
    """An Asker whose model says ``reply`` and whose search must not be called: questions over
    open items are answered from the items."""

    def recall(question: str, scope: Scope, k: int) -> list[Any]:
        raise AssertionError("a question over items is not searched")

    answer_model = ScriptedGenerator(lambda messages: reply)
    return answer_model, Asker(world.store, generator=lambda: answer_model,
                               settings=lambda: world.settings, recall=recall)


async def test_what_did_name_commit_to_this_month_over_30_kept_sessions(world: World) -> None:
    """30 sessions kept (scripted generator) with commitments by three owners, over two
    months: the answer's sources are every one of Sarah's this month, oldest first, and none
    of the others' or of another Space."""
    world.settings = Settings(memory_enabled=False, reconcile_distance=0.0)
    world.script.rulings = [{"verdict": "separate", "existing": 0}] * 200  # open items are near
    now = dt.datetime.now().astimezone()
    month = now.replace(day=1, hour=0, minute=0, second=0, microsecond=0).timestamp()
    atlas, other = world.space("Atlas"), world.space("Other")
    people = ["Sarah Chen", "Tom Baker", "Priya Nair"]
    expected: list[str] = []
    for i in range(30):
        said_at = now.timestamp() - (29 - i) * 2.5 * 86_400 - 60
        world.clock.t = said_at
        said = [(p, f"I will finish the {p.split()[0]} report part {i} soon.")
                for p in people]
        world.script.assertions = [
            {"kind": "commitment", "text": f"{p} will finish report part {i}.", "owner": p,
             "evidence": f"{p.split()[0]} report part {i}"} for p in people]
        await world.keep(world.session(said, space_id=atlas if i % 10 else other,
                                       title=f"sync {i}"))
        # when it was said: making the session moves the clock on an hour, across the start of
        # the month when the session is said in its last hour
        if i % 10 and said_at >= month:
            expected.append(f"Sarah Chen will finish report part {i}.")
    assert expected, "some sessions fall in this month"

    answer_model, asker = items_asker(world, "Sarah committed to those [1].")
    answer = await asker.ask("What did Sarah commit to this month?", space="Atlas")
    assert [s.passages[0].text.split(" (")[0] for s in answer.sources] == expected
    assert [s.n for s in answer.sources] == list(range(1, len(expected) + 1))
    assert all(s.label == "commitment (open)" for s in answer.sources)
    assert not answer.nothing_found
    # the items answer it: each is stated with its number, and no model paraphrases them
    assert answer_model.calls == []
    assert answer.text == " ".join(
        f"{text.rstrip('.')} (owner Sarah Chen; open) [{n}]."
        for n, text in enumerate(expected, 1))
    assert [e.item.text for e in answer.evidence if e.item] == expected

    # the same selection through the filters the MCP tools send
    selected = open_items.select_items(
        world.store, ItemQuestion(kinds=("commitment", "task"), owner="Sarah",
                                  start=month, end=now.timestamp() + 1),
        Scope(space_id=atlas))
    assert [i.assertion.text for i in selected.items] == expected
    # nobody by that name: nothing, and no model is asked
    calls = len(answer_model.calls)
    none = await asker.ask("What did Sarah commit to in 2019?", space="Atlas")
    assert none.nothing_found and len(answer_model.calls) == calls


async def test_whats_still_open_is_grounded_on_the_open_items(world: World) -> None:
    _, item = await kept_commitment(world)

    _, asker = items_asker(world, "Priya owes the budget [1].")
    answer = await asker.ask("What's still open?", space="Atlas")
    (source,) = answer.sources
    assert source.label == "commitment (open)" and source.session_id == item.session_id
    assert source.passages[0].text == (f"{COMMITMENT['text']} (owner: Priya; due: Friday; open)")
    assert source.passages[1].text == ATLAS[2][1]  # the turn that said it
    assert [c.source.n for c in answer.citations] == [1]
    assert answer.text == f"{COMMITMENT['text'].rstrip('.')} (owner Priya; due Friday; open) [1]."

    open_items.close_by_hand(world.store, item.id, "done")
    closed = await asker.ask("What's still open?", space="Atlas")
    assert closed.nothing_found and closed.sources == []
    # "what did Priya commit to" still lists it, as done
    committed = await asker.ask("What did Priya commit to?", space="Atlas")
    assert [s.label for s in committed.sources] == ["commitment (done)"]
    assert T0 <= committed.sources[0].date < world.clock.t
