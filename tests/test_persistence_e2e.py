"""Does memory actually persist? (the memory rules of docs/architecture.md)

The real pipeline — remember (file, archive, extract, anchor, gate, reconcile, write), review,
recall — against a real database file, with only the model providers scripted. Each test pins
one edge where "it works" quietly stops being true.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pytest
from storekit import T0, Clock, CountingEmbedder

from daemon.config import Paths, Settings
from daemon.errors import EngineError, ModelNotInstalled
from daemon.llm.embed import ScriptedEmbedder
from daemon.llm.generate import ChatMessage, Generator, ScriptedGenerator
from daemon.memory import person
from daemon.memory.remember import Remembered, Rememberer
from daemon.store.records import Assertion, NewTurn
from daemon.store.scope import Scope
from daemon.store.store import Store
from daemon.store.vectors import from_blob
from daemon.store.writes import assertion_body

ATLAS = [
    ("them", "Let's settle the Atlas launch. We decided to launch Atlas on March 3rd, "
             "not in February."),
    ("me", "Good. I prefer concise written updates over long status calls."),
    ("Priya", "Priya will send the revised budget by Friday."),  # an owner must have spoken
]

DECISION = {
    "kind": "decision", "text": "Atlas launches on March 3rd.", "chosen": "March 3rd",
    "alternatives": ["February"], "evidence": "launch Atlas on March 3rd",
}
COMMITMENT = {
    "kind": "commitment", "text": "Priya will send the revised budget by Friday.",
    "owner": "Priya", "due": "Friday", "evidence": "Priya will send the revised budget",
}
PREFERENCE = {
    "kind": "preference", "text": "Prefers concise written updates over long status calls.",
    "about_person": True, "scope": "space", "evidence": "I prefer concise written updates",
}


def archive_answer(**fields: Any) -> dict[str, Any]:
    answer: dict[str, Any] = {
        "topic": "Atlas launch",
        "summary": "The team set the Atlas launch date and the budget follow-up.",
        "participants": ["me", "them"],
        "sections": {"decided": ["Launch Atlas on March 3rd"],
                     "action_items": ["Priya sends the revised budget by Friday"],
                     "still_open": []},
        "key_quotes": ["we decided to launch Atlas on March 3rd"],
    }
    answer.update(fields)
    return answer


@dataclass
class Script:
    """What the scripted model answers, by the kind of prompt it is given."""

    archive: Any = field(default_factory=archive_answer)
    assertions: Any = field(default_factory=lambda: [DECISION, COMMITMENT, PREFERENCE])
    rulings: list[Any] = field(default_factory=list)

    def __call__(self, messages: Sequence[ChatMessage]) -> object:
        prompt = messages[-1].content
        if '"key_quotes"' in prompt:
            return self.archive
        if '{"assertions"' in prompt:
            if isinstance(self.assertions, BaseException):
                return self.assertions
            return {"assertions": self.assertions}
        if prompt.startswith("Existing:"):
            return self.rulings.pop(0)
        raise AssertionError(f"unexpected prompt: {prompt[:80]}")


class World:
    """One profile: a store on a real database file, scripted models, the rememberer."""

    def __init__(self, data_dir: Path, clock: Clock, embedder: ScriptedEmbedder | None = None):
        self.clock = clock
        self.embedder = embedder or CountingEmbedder()
        self.store = Store(data_dir, self.embedder, clock=clock)
        self.script = Script()
        self.generator = ScriptedGenerator(self.script)
        self.settings = Settings(memory_enabled=True, reconcile_distance=0.5)
        self.generator_missing = False
        self.rememberer = Rememberer(self.store, generator=self._generator,
                                     settings=lambda: self.settings)

    def _generator(self) -> Generator:
        if self.generator_missing:
            raise ModelNotInstalled("no language model is installed",
                                    fix="install one with `braincue models install`")
        return self.generator

    def space(self, name: str, **kwargs: Any) -> int:
        return self.store.create_space(name, **kwargs).id

    def session(self, turns: Sequence[tuple[str, str]] = ATLAS, *, space_id: int | None,
                practice: bool = False, title: str = "Atlas sync") -> int:
        session = self.store.create_session(space_id=space_id, title=title, practice=practice,
                                            started_at=self.clock.t)
        self.store.append_turns(session.id, [
            NewTurn(speaker=speaker, text=text, start=5.0 * i)
            for i, (speaker, text) in enumerate(turns)
        ])
        self.store.end_session(session.id, ended_at=self.clock.t + 60)
        self.clock.t += 3600
        return session.id

    async def keep(self, session_id: int, **kwargs: Any) -> Remembered:
        return await self.rememberer.remember(session_id, "keep", **kwargs)

    def memories(self, **kwargs: Any) -> list[Assertion]:
        return person.list_memories(self.store, **kwargs)

    def recall(self, query: str, space_id: int | None) -> list[str]:
        found = person.recall_memories(self.store, query, space_id,
                                       consent=self.settings.memory_enabled)
        return [m.text for m in found]

    def archive_visible(self, words: str, space_id: int | None) -> bool:
        scope = Scope(space_id=space_id)
        ids = {h.id for h in self.store.fts_chunks(words, scope)}
        ids |= {h.id for h in self.store.vector_chunks(words, scope)}
        return any(c.kind == "session" for c in self.store.get_chunks(sorted(ids)))

    def assertions_visible(self, words: str, space_id: int | None) -> list[str]:
        return [a.text for a in self.store.current_assertions(Scope(space_id=space_id))
                if not a.about_person and words.lower() in a.text.lower()]


@pytest.fixture
def clock() -> Clock:
    return Clock(T0)


@pytest.fixture
def world(tmp_path: Path, clock: Clock) -> Iterator[World]:
    w = World(tmp_path / "profile", clock)
    yield w
    w.store.close()


PREFERS = "concise written updates"


async def kept_and_approved(world: World, space_id: int, **kwargs: Any) -> Assertion:
    """Keep an Atlas session in ``space_id`` and approve the memory it proposed."""
    outcome = await world.keep(world.session(space_id=space_id), **kwargs)
    assert outcome.candidates == 1, outcome
    (memory,) = world.memories(status="pending")
    return person.set_status(world.store, memory.id, "approved")


# -- keep: what is written ---------------------------------------------------------------------


async def test_keep_writes_the_archive_assertions_and_a_pending_candidate(world: World) -> None:
    atlas = world.space("Atlas")
    session_id = world.session(space_id=atlas)
    outcome = await world.keep(session_id)

    assert outcome.status == "kept" and outcome.space == "Atlas"
    assert (outcome.archived, outcome.assertions, outcome.candidates) == (True, 2, 1)
    assert outcome.notes == []
    assert world.store.get_session(session_id).status == "kept"
    (archive,) = world.store.archive(session_id)
    assert archive.space_id == atlas
    assert "Decided:\n- Atlas launches on March 3rd." in archive.body  # as stored
    decision = next(a for a in world.store.list_assertions(session_id=session_id)
                    if a.kind == "decision")
    assert decision.source == "extracted" and decision.space_id == atlas
    assert (decision.chosen, decision.alternatives) == ("March 3rd", ("February",))
    anchor = world.store.get_chunk(decision.anchor_chunk_id or 0)
    assert anchor.session_id == session_id and anchor.kind == "transcript"
    commitment = next(a for a in world.store.list_assertions(session_id=session_id)
                      if a.kind == "commitment")
    assert (commitment.owner, commitment.due, commitment.chosen) == ("Priya", "Friday", None)
    (candidate,) = world.memories()
    assert (candidate.review_status, candidate.space_id) == ("pending", atlas)
    assert world.recall(PREFERS, atlas) == []  # pending: not recalled before review


async def test_key_quotes_are_verbatim_and_attributed_from_the_turn(world: World) -> None:
    world.script.archive = archive_answer(key_quotes=[
        "We decided to launch Atlas on March 3rd, not in February.",  # exact
        "We have decided to launch Atlas in March",  # smoothed: dropped
        "me: Priya will send the revised budget by Friday.",  # model names the wrong speaker
    ])
    session_id = world.session(space_id=world.space("Atlas"))
    await world.keep(session_id)
    body = world.store.archive(session_id)[0].body
    quotes = body.split("In their own words:\n")[1].splitlines()
    assert quotes == [
        '- them: "We decided to launch Atlas on March 3rd, not in February."',
        '- Priya: "Priya will send the revised budget by Friday."',
    ]


async def test_an_unanchored_assertion_is_dropped(world: World) -> None:
    world.script.assertions = [DECISION, {"kind": "fact",
                                          "text": "The office moves to a bigger building.",
                                          "evidence": "we move to a bigger building"}]
    outcome = await world.keep(world.session(space_id=world.space("Atlas")))
    assert outcome.assertions == 1
    assert "1 extracted statement dropped" in outcome.notes[0]
    assert world.assertions_visible("building", None) == []


async def test_keeping_again_replaces_the_archive(world: World) -> None:
    session_id = world.session(space_id=world.space("Atlas"))
    await world.keep(session_id)
    world.script.archive = archive_answer(topic="Atlas launch, revisited")
    again = await world.keep(session_id)
    (archive,) = world.store.archive(session_id)
    assert archive.body.startswith("Topic: Atlas launch, revisited")
    assert again.archived and again.assertions == 0 and again.duplicates == 2


async def test_the_sensitive_gate_redacts_what_the_model_wrote(world: World) -> None:
    turns = [*ATLAS, ("them", "For the staging server the password is Tr0ub4dor&3, "
                              "keep it to yourself.")]
    world.script.archive = archive_answer(
        summary="They set the Atlas date; the staging password is Tr0ub4dor&3.")
    world.script.assertions = [DECISION, {
        "kind": "fact", "text": "The staging server password is Tr0ub4dor&3.",
        "evidence": "staging server the password is",
    }]
    session_id = world.session(turns, space_id=world.space("Atlas"))
    outcome = await world.keep(session_id)

    assert outcome.redactions == 2
    archive = world.store.archive(session_id)[0].body
    assert "Tr0ub4dor" not in archive and "[redacted password]" in archive
    # a statement whose point was the password is dropped, not kept as "[redacted password]"
    texts = [a.text for a in world.store.list_assertions(session_id=session_id)]
    assert len(texts) == 1 and not any("Tr0ub4dor" in t or "redacted" in t for t in texts)
    assert any("held a credential" in note for note in outcome.notes)
    # the verbatim layer is the user's own record and stays as it was said
    assert "Tr0ub4dor&3" in world.store.turns(session_id)[-1].text


async def test_the_gate_follows_a_secret_the_model_paraphrased(world: World) -> None:
    """A known leak: the model drops the word "password" and keeps the value."""
    said = ("The user is deploy and the password is Tangerine-Walrus-4417, and the API key "
            "is sk-live-9f8a7b6c5d4e3f2a1b0c.")
    world.script.archive = archive_answer(
        summary="Vendor will use deploy / tangerine walrus 4417 for staging; key ends "
                "9f8a7b6c5d4e3f2a1b0c.")
    world.script.assertions = [DECISION, {
        "kind": "fact", "text": "Vendor will use deploy and Tangerine-Walrus-4417 for the "
                                "staging database", "evidence": "the password is"},
        {"kind": "decision", "text": "The staging user is deploy", "chosen": "deploy",
         "evidence": "The user is deploy", "reasoning": "T-A-N-G-E-R-I-N-E Walrus 4417 is shared"}]
    session_id = world.session([*ATLAS, ("me", said)], space_id=world.space("Atlas"))
    outcome = await world.keep(session_id)

    stored = world.store.archive(session_id)[0].body + " ".join(
        f"{a.text} {a.reasoning or ''} {' '.join(a.alternatives)}"
        for a in world.store.list_assertions(session_id=session_id, include_invalidated=True))
    for leaked in ("Tangerine", "TANGERINE", "4417", "9f8a7b6c5d4e3f2a1b0c"):
        assert leaked.lower() not in stored.lower(), (leaked, stored)
    texts = [a.text for a in world.store.list_assertions(session_id=session_id)]
    assert "The staging user is deploy" in texts, outcome.notes  # a side field redacted, kept
    assert not any("Vendor will use" in t for t in texts)
    assert outcome.redactions >= 3, outcome


# -- keep: when nothing is kept --------------------------------------------------------------


async def test_no_space_keeps_nothing_and_sends_nothing_to_a_model(world: World) -> None:
    session_id = world.session(space_id=None)
    outcome = await world.keep(session_id)
    assert outcome.status == "kept" and outcome.space is None
    assert (outcome.archived, outcome.assertions, outcome.candidates) == (False, 0, 0)
    assert "pick a Space" in outcome.notes[0]
    assert world.generator.calls == []
    assert world.store.archive(session_id) == []
    assert world.store.list_assertions() == []


async def test_no_space_chosen_at_the_end_files_it_out_of_its_space(world: World) -> None:
    session_id = world.session(space_id=world.space("Atlas"))
    outcome = await world.keep(session_id, space_id=None)
    assert outcome.space is None and not outcome.archived
    assert world.store.get_session(session_id).space_id is None
    assert world.generator.calls == []


async def test_what_is_remembered_is_not_filed_out_of_every_space(world: World) -> None:
    from daemon.errors import InvalidInput

    atlas, beta = world.space("Atlas"), world.space("Beta")
    session_id = world.session(space_id=atlas)
    await world.keep(session_id)
    with pytest.raises(InvalidInput, match="would be recalled everywhere"):
        await world.keep(session_id, space_id=None)
    assert world.store.get_session(session_id).space_id == atlas
    # into another Space it may go, and everything it left goes with it
    moved = await world.rememberer.remember(session_id, "later", space_id=beta)
    assert moved.space == "Beta"
    assert world.store.archive(session_id)[0].space_id == beta
    assert {a.space_id for a in world.store.list_assertions(about_person=False)} == {beta}


async def test_a_space_chosen_at_the_end_counts_as_much_as_at_the_start(world: World) -> None:
    atlas = world.space("Atlas")
    session_id = world.session(space_id=None)
    outcome = await world.keep(session_id, space_id=atlas)
    assert outcome.archived and outcome.space == "Atlas"
    assert world.store.archive(session_id)[0].space_id == atlas
    assert {a.space_id for a in world.store.list_assertions(session_id=session_id)} == {atlas}


async def test_practice_is_never_archived(world: World) -> None:
    session_id = world.session(space_id=world.space("Interviews", activity="job"),
                               practice=True)
    outcome = await world.keep(session_id)
    assert outcome.status == "kept" and not outcome.archived
    assert "practice" in outcome.notes[0]
    assert world.generator.calls == [] and world.store.archive(session_id) == []


async def test_a_space_opted_out_is_neither_archived_nor_extracted(world: World) -> None:
    private = world.space("Private", memory_enabled=False)
    session_id = world.session(space_id=private)
    outcome = await world.keep(session_id)
    assert (outcome.archived, outcome.assertions, outcome.candidates) == (False, 0, 0)
    assert "set to be forgotten" in outcome.notes[0]
    assert world.generator.calls == []
    assert world.store.archive(session_id) == [] and world.store.list_assertions() == []


async def test_the_two_switches_are_independent(world: World) -> None:
    atlas = world.space("Atlas")
    world.settings = Settings(session_archive_enabled=False, memory_enabled=True)
    off = await world.keep(world.session(space_id=atlas))
    assert (off.archived, off.assertions, off.candidates) == (False, 0, 1)
    assert any("archiving is off" in n for n in off.notes)

    world.settings = Settings(session_archive_enabled=True, memory_enabled=False)
    on = await world.keep(world.session(space_id=atlas))
    assert (on.archived, on.assertions, on.candidates) == (True, 2, 0)
    assert any("memory is off" in n for n in on.notes)
    # without consent the extractor is told not to mark anything about the person, and an
    # item it marks anyway is not stored in any form
    (asked,) = [c[-1].content for c in world.generator.calls[-2:] if '{"assertions"' in
                c[-1].content]  # this keep's extraction (its archive is asked after it)
    assert '"about_person": false for every item' in asked
    assert len(world.memories()) == 1


async def test_later_remembers_nothing_and_lists_the_session_as_undecided(world: World) -> None:
    session_id = world.session(space_id=world.space("Atlas"))
    outcome = await world.rememberer.remember(session_id, "later")
    assert outcome.status == "later" and not outcome.archived
    assert world.generator.calls == []
    assert [s.id for s in world.store.list_sessions(statuses=["later"])] == [session_id]


async def test_a_live_session_cannot_be_answered(world: World) -> None:
    from daemon.errors import InvalidInput

    live = world.store.create_session(space_id=None, title="now")
    with pytest.raises(InvalidInput, match="still live"):
        await world.keep(live.id)


# -- the same fact is not proposed twice ---------------------------------------------------------


async def test_the_same_fact_is_not_proposed_twice_across_sessions(world: World) -> None:
    atlas = world.space("Atlas")
    first = await world.keep(world.session(space_id=atlas))
    assert first.candidates == 1
    (memory,) = world.memories()
    person.set_status(world.store, memory.id, "rejected")  # any answer counts, even no

    second = await world.keep(world.session(space_id=atlas))
    assert second.candidates == 0
    assert any("already asked about" in n for n in second.notes)
    assert len(world.memories()) == 1


async def test_pressing_keep_twice_proposes_nothing_new(world: World) -> None:
    session_id = world.session(space_id=world.space("Atlas"))
    await world.keep(session_id)
    again = await world.keep(session_id)
    assert (again.candidates, again.assertions, again.duplicates) == (0, 0, 2)
    assert again.restated == 0  # its own statements: not said *again* anywhere
    assert len(world.memories()) == 1
    assert len(world.store.list_assertions(about_person=False)) == 2
    assert restatements(world) == []


async def test_a_memory_of_another_space_does_not_shadow_a_candidate(world: World) -> None:
    await world.keep(world.session(space_id=world.space("Atlas")))
    beta = world.space("Beta")
    outcome = await world.keep(world.session(space_id=beta))
    assert outcome.candidates == 1
    assert {m.space_id for m in world.memories()} == {world.store.get_space("Atlas").id, beta}


async def test_a_profile_wide_memory_shadows_a_candidate_in_every_space(world: World) -> None:
    world.script.assertions = [{**PREFERENCE, "scope": "profile"}]
    await world.keep(world.session(space_id=world.space("Atlas")))
    world.script.assertions = [PREFERENCE]
    outcome = await world.keep(world.session(space_id=world.space("Beta")))
    assert outcome.candidates == 0


# -- reconciliation ------------------------------------------------------------------------------


APRIL = {**DECISION, "text": "Atlas launches on April 10th.", "chosen": "April 10th",
         "alternatives": ["March 3rd"], "evidence": "launch Atlas on April 10th"}
MOVED = [("them", "Change of plan: we launch Atlas on April 10th instead.")]


async def test_a_changed_decision_supersedes_and_keeps_its_history(world: World) -> None:
    atlas = world.space("Atlas")
    await world.keep(world.session(space_id=atlas))
    (old,) = [a for a in world.store.list_assertions() if a.kind == "decision"]

    world.script.assertions = [APRIL]
    world.script.rulings = [{"verdict": "supersedes", "existing": 1}]
    outcome = await world.keep(world.session(MOVED, space_id=atlas))
    assert (outcome.assertions, outcome.superseded) == (1, 1)

    current = [a.text for a in world.store.current_assertions(Scope(space_id=atlas),
                                                              kind="decision")]
    assert current == ["Atlas launches on April 10th."]
    chain = world.store.chain(old.id)
    assert [a.text for a in chain] == ["Atlas launches on March 3rd.",
                                       "Atlas launches on April 10th."]
    assert chain[0].superseded_by == chain[1].id
    # what was believed before the change is still there
    before = world.store.assertions_as_of(T0 + 60, Scope(space_id=atlas), kind="decision")
    assert [a.text for a in before] == ["Atlas launches on March 3rd."]
    # the model was shown the similar current assertion, numbered
    assert "1. [decision, said" in world.generator.calls[-1][-1].content


async def test_a_duplicate_ruling_stores_nothing(world: World) -> None:
    atlas = world.space("Atlas")
    await world.keep(world.session(space_id=atlas))
    world.script.assertions = [{**DECISION, "text": "Atlas goes live on March 3rd."}]
    world.script.rulings = [{"verdict": "duplicate", "existing": 1}]
    second = world.session(space_id=atlas, title="Atlas follow-up")
    outcome = await world.keep(second)
    assert (outcome.assertions, outcome.duplicates, outcome.restated) == (0, 1, 1)
    (decision,) = [a for a in world.store.list_assertions() if a.kind == "decision"]
    assert decision.text == "Atlas launches on March 3rd."
    # the statement is not stored again, but where it was said again is
    (again,) = world.store.restatements([decision.id])
    assert (again.session_id, again.session_title) == (second, "Atlas follow-up")
    anchor = world.store.get_chunk(again.anchor_chunk_id or 0)
    assert anchor.session_id == second and again.occurred_at == anchor.occurred_at


async def test_separate_statements_are_both_kept(world: World) -> None:
    atlas = world.space("Atlas")
    await world.keep(world.session(space_id=atlas))
    world.script.assertions = [APRIL]
    world.script.rulings = [{"verdict": "separate", "existing": 0}]
    outcome = await world.keep(world.session(MOVED, space_id=atlas))
    assert (outcome.assertions, outcome.superseded) == (1, 0)
    assert len(world.store.current_assertions(Scope(space_id=atlas), kind="decision")) == 2


async def test_reconciliation_stays_within_the_space(world: World) -> None:
    await world.keep(world.session(space_id=world.space("Atlas")))
    world.script.assertions = [APRIL]
    outcome = await world.keep(world.session(MOVED, space_id=world.space("Beta")))
    assert (outcome.assertions, outcome.superseded) == (1, 0)
    assert not world.script.rulings and "Existing:" not in world.generator.calls[-1][-1].content


async def test_the_same_words_in_another_space_are_not_a_restatement(world: World) -> None:
    await world.keep(world.session(space_id=world.space("Atlas")))
    outcome = await world.keep(world.session(space_id=world.space("Beta")))
    assert (outcome.assertions, outcome.duplicates, outcome.restated) == (2, 0, 0)
    assert restatements(world) == []


# -- restatements: the same decision said again in a later session --------------------------------


def restatements(world: World) -> list[tuple[str, int]]:
    """Every restatement as (the assertion's text, the session that said it again)."""
    ids = [a.id for a in world.store.list_assertions(include_invalidated=True)]
    texts = {a.id: a.text for a in world.store.get_assertions(ids)}
    return sorted((texts[r.assertion_id], r.session_id) for r in world.store.restatements(ids))


async def test_a_decision_said_again_is_one_assertion_with_a_restatement(world: World) -> None:
    atlas = world.space("Atlas")
    first = world.session(space_id=atlas)
    await world.keep(first)
    second = world.session(space_id=atlas, title="Atlas check-in")

    outcome = await world.keep(second)
    assert (outcome.assertions, outcome.duplicates, outcome.restated) == (0, 2, 2)
    stored = world.store.list_assertions(about_person=False)
    assert sorted(a.text for a in stored) == sorted([COMMITMENT["text"], DECISION["text"]])  # type: ignore[type-var]
    assert {a.session_id for a in stored} == {first}
    assert restatements(world) == sorted([(DECISION["text"], second),
                                          (COMMITMENT["text"], second)])

    # keeping the later session again records nothing twice
    again = await world.keep(second)
    assert (again.duplicates, again.restated) == (2, 0)
    assert len(restatements(world)) == 2

    # discarding it takes its restatements and leaves the assertions
    discarded = await world.rememberer.remember(second, "discard")
    assert discarded.deleted["restatements"] == 2
    assert restatements(world) == []
    assert {a.text for a in world.store.list_assertions(about_person=False)} == {
        DECISION["text"], COMMITMENT["text"]}

    # deleting the assertion takes its restatements
    third = world.session(space_id=atlas, title="Atlas retro")
    await world.keep(third)
    decision = next(a for a in world.store.list_assertions() if a.kind == "decision")
    assert restatements(world) == sorted([(DECISION["text"], third), (COMMITMENT["text"], third)])
    assert world.store.delete_assertion(decision.id).restatements == 1
    assert restatements(world) == [(COMMITMENT["text"], third)]


# -- the memory rules, row by row ---------------------------------------------------------------


async def test_another_space_sees_neither_the_archive_nor_the_memory(world: World) -> None:
    atlas, beta = world.space("Atlas"), world.space("Beta")
    await kept_and_approved(world, atlas)
    assert world.recall(PREFERS, atlas) == [PREFERENCE["text"]]
    assert world.archive_visible("Atlas launch", atlas)
    assert world.recall(PREFERS, beta) == []
    assert not world.archive_visible("Atlas launch", beta)
    assert world.assertions_visible("Atlas", beta) == []
    assert world.recall(PREFERS, None) == [] and not world.archive_visible("Atlas launch", None)


async def test_another_profile_sees_nothing(world: World, clock: Clock) -> None:
    atlas = world.space("Atlas")
    await kept_and_approved(world, atlas)
    other = Store.open(Paths.resolve("other"), CountingEmbedder())
    try:
        assert other.list_spaces() == [] and other.list_assertions() == []
        assert other.fts_chunks("Atlas launch", Scope()) == []
        assert person.recall_memories(other, PREFERS, None, consent=True) == []
    finally:
        other.close()


async def test_a_profile_wide_memory_reaches_every_space(world: World) -> None:
    world.script.assertions = [{**PREFERENCE, "scope": "profile"}]
    atlas, beta = world.space("Atlas"), world.space("Beta")
    memory = await kept_and_approved(world, atlas)
    assert memory.space_id is None
    for space_id in (atlas, beta, None):
        assert world.recall(PREFERS, space_id) == [PREFERENCE["text"]]
    # while the archive stays in its Space
    assert not world.archive_visible("Atlas launch", beta)


async def test_rescoping_moves_where_a_memory_is_recalled_both_ways(world: World) -> None:
    atlas, beta = world.space("Atlas"), world.space("Beta")
    memory = await kept_and_approved(world, atlas)

    person.rescope(world.store, memory.id, None)
    assert world.recall(PREFERS, beta) == [PREFERENCE["text"]]
    assert world.recall(PREFERS, None) == [PREFERENCE["text"]]

    person.rescope(world.store, memory.id, beta)
    assert world.recall(PREFERS, beta) == [PREFERENCE["text"]]
    assert world.recall(PREFERS, atlas) == [] and world.recall(PREFERS, None) == []

    person.rescope(world.store, memory.id, atlas)
    assert world.recall(PREFERS, atlas) == [PREFERENCE["text"]]
    assert world.recall(PREFERS, beta) == []


async def test_revoking_consent_silences_recall_and_deletes_nothing(world: World) -> None:
    atlas = world.space("Atlas")
    memory = await kept_and_approved(world, atlas)
    world.settings = Settings(memory_enabled=False)
    assert world.recall(PREFERS, atlas) == []
    assert world.store.get_assertion(memory.id).review_status == "approved"
    # consent gates memories about the person only: what happened is still recalled
    assert world.assertions_visible("Atlas", atlas) == ["Atlas launches on March 3rd."]
    world.settings = Settings(memory_enabled=True)
    assert world.recall(PREFERS, atlas) == [PREFERENCE["text"]]


def stored_vector(world: World, assertion_id: int) -> np.ndarray:
    """The assertion's vector of the current model, as the database file holds it."""
    row: Any = world.store.db.read(lambda conn: conn.execute(
        "SELECT vector, dims FROM embeddings WHERE owner_kind = 'assertion' AND owner_id = ?"
        " AND model_id = ?", (assertion_id, world.embedder.model_id)).fetchone())
    assert row is not None, f"assertion {assertion_id} has no vector"
    return from_blob(row[0], row[1])


async def test_pending_rejected_and_archived_are_never_recalled(world: World) -> None:
    atlas = world.space("Atlas")
    await world.keep(world.session(space_id=atlas))
    (memory,) = world.memories()
    # a pending row carrying a vector of the current model, as every candidate does
    assert stored_vector(world, memory.id).shape == (world.embedder.dimensions,)
    for status in ("pending", "rejected", "archived"):
        person.set_status(world.store, memory.id, status)  # type: ignore[arg-type]
        assert world.recall(PREFERS, atlas) == [], status
        assert memory.id not in {h.id for h in world.store.vector_assertions(
            PREFERS, Scope(space_id=atlas))}
        assert memory.id not in {h.id for h in world.store.fts_assertions(
            PREFERS, Scope(space_id=atlas))}
    person.set_status(world.store, memory.id, "approved")
    assert world.recall(PREFERS, atlas) == [PREFERENCE["text"]]


async def test_edited_content_re_embeds_so_recall_follows_the_new_words(world: World) -> None:
    atlas = world.space("Atlas")
    memory = await kept_and_approved(world, atlas)
    edited = person.edit(world.store, memory.id, "Prefers  Portuguese for meeting notes.")
    assert edited.text == "Prefers Portuguese for meeting notes."
    assert world.recall("Portuguese meeting notes", atlas) == [edited.text]
    stored = stored_vector(world, memory.id)
    expected = world.embedder.embed_sync([assertion_body(edited)])[0]
    assert float(stored @ expected) == pytest.approx(1.0, abs=1e-5)


async def test_an_expired_memory_drops_out_of_recall(world: World, clock: Clock) -> None:
    atlas = world.space("Atlas")
    memory = await kept_and_approved(world, atlas)
    person.set_expiry(world.store, memory.id, clock.t + 60)
    assert world.recall(PREFERS, atlas) == [PREFERENCE["text"]]
    clock.t += 61
    assert world.recall(PREFERS, atlas) == []
    person.set_expiry(world.store, memory.id, None)
    assert world.recall(PREFERS, atlas) == [PREFERENCE["text"]]


async def test_an_embedding_model_change_drops_memories_until_re_embedded(
    world: World, tmp_path: Path, clock: Clock
) -> None:
    atlas = world.space("Atlas")
    await kept_and_approved(world, atlas)
    world.store.close()
    changed = World(tmp_path / "profile", clock, CountingEmbedder(model_id="another-model"))
    try:
        assert changed.recall(PREFERS, atlas) == []  # no mis-ranking with a stale vector
        changed.store.index.embed_pending()
        assert changed.recall(PREFERS, atlas) == [PREFERENCE["text"]]
    finally:
        changed.store.close()
        world.store = Store(tmp_path / "profile", world.embedder, clock=clock)


async def test_a_stored_vector_still_matches_its_own_text(
    world: World, tmp_path: Path, clock: Clock
) -> None:
    atlas = world.space("Atlas")
    memory = await kept_and_approved(world, atlas)
    world.store.close()  # the vector comes back from the database file, not from memory
    world.store = Store(tmp_path / "profile", world.embedder, clock=clock)
    stored = stored_vector(world, memory.id)
    assert stored.dtype == np.float32
    fresh = world.embedder.embed_sync([assertion_body(memory)])[0]
    assert np.array_equal(stored, fresh)
    assert world.recall(PREFERS, atlas) == [PREFERENCE["text"]]


async def test_deleting_a_space_takes_its_memory_and_spares_profile_wide_ones(
    world: World,
) -> None:
    atlas, beta = world.space("Atlas"), world.space("Beta")
    world.script.assertions = [
        PREFERENCE,
        {**PREFERENCE, "text": "Prefers to be called Sam.", "scope": "profile",
         "evidence": "prefer concise written updates"},
    ]
    await world.keep(world.session([*ATLAS, ("me", "And call me Sam, please.")], space_id=atlas))
    for memory in world.memories():
        person.set_status(world.store, memory.id, "approved")
    world.store.delete_space(atlas)
    assert [m.text for m in world.memories()] == ["Prefers to be called Sam."]
    assert world.recall("called Sam", beta) == ["Prefers to be called Sam."]
    assert PREFERENCE["text"] not in world.recall(PREFERS, beta)


async def test_discarding_deletes_the_archive_and_pending_candidates_only(
    world: World,
) -> None:
    atlas = world.space("Atlas")
    approved = await kept_and_approved(world, atlas)
    world.script.assertions = [{**PREFERENCE, "text": "Likes morning meetings.",
                                "evidence": "I prefer concise written updates"}]
    # the decision said again in so many words, read without the model
    world.script.rulings = [{"verdict": "duplicate", "existing": 1}]
    session_id = world.session(space_id=atlas)
    await world.keep(session_id)
    pending = next(m for m in world.memories() if m.review_status == "pending")

    outcome = await world.rememberer.remember(session_id, "discard")
    assert outcome.status == "discarded" and outcome.deleted["sessions"] == 1
    assert world.store.archive(session_id) == []
    assert pending.id not in {m.id for m in world.memories()}
    assert world.recall(PREFERS, atlas) == [approved.text]

    # discarding the session an approved memory came from spares it too
    first = approved.session_id or 0
    outcome = await world.rememberer.remember(first, "discard")
    assert "1 memory you already reviewed from it stay" in outcome.notes[0]
    assert world.store.get_assertion(approved.id).review_status == "approved"
    assert world.recall(PREFERS, atlas) == [approved.text]
    assert not world.archive_visible("Atlas launch", atlas)


async def test_a_failing_embedder_means_recall_returns_nothing(world: World) -> None:
    atlas = world.space("Atlas")
    await kept_and_approved(world, atlas)
    assert isinstance(world.embedder, CountingEmbedder)
    world.embedder.failing = True
    assert world.recall(PREFERS, atlas) == []


async def test_extraction_failing_still_lets_the_archive_through(world: World) -> None:
    world.script.assertions = EngineError("the model's answer is not a valid Extraction")
    session_id = world.session(space_id=world.space("Atlas"))
    outcome = await world.keep(session_id)
    assert outcome.status == "kept" and outcome.archived
    assert (outcome.assertions, outcome.candidates) == (0, 0)
    assert outcome.notes == ["extraction failed: the model's answer is not a valid Extraction"]
    assert world.store.get_session(session_id).status == "kept"
    assert len(world.store.archive(session_id)) == 1


async def test_a_failing_summariser_still_lets_extraction_through(world: World) -> None:
    world.script.archive = EngineError("the model's answer was cut off after 768 tokens")
    session_id = world.session(space_id=world.space("Atlas"))
    outcome = await world.keep(session_id)
    assert not outcome.archived and (outcome.assertions, outcome.candidates) == (2, 1)
    assert outcome.notes[0].startswith("the archive failed: the model's answer was cut off")


async def test_an_embedding_failure_leaves_nothing_half_indexed(world: World) -> None:
    session_id = world.session(space_id=world.space("Atlas"))
    assert isinstance(world.embedder, CountingEmbedder)
    world.embedder.failing = True
    outcome = await world.keep(session_id)
    assert outcome.status == "kept"
    assert not outcome.archived and outcome.assertions == 0
    assert [n.split(":")[0] for n in outcome.notes] == ["the archive failed", "extraction failed"]
    assert world.store.archive(session_id) == [] and world.store.list_assertions() == []
    assert world.store.get_session(session_id).status == "kept"


async def test_no_language_model_keeps_the_session_and_says_so(world: World) -> None:
    world.generator_missing = True
    session_id = world.session(space_id=world.space("Atlas"))
    outcome = await world.keep(session_id)
    assert outcome.status == "kept" and not outcome.archived
    assert "no language model is installed" in outcome.notes[0]
    assert world.store.get_session(session_id).status == "kept"


def long_session(world: World) -> int:
    """A 120-turn meeting in Space Atlas, too long for one model call at a 2,048-token
    context, whose extraction (a decision cue every ten turns) finds one fact."""
    world.settings = Settings(memory_enabled=True, reconcile_distance=0.5, llm_context=2048)
    turns = [("them" if i % 2 else "me", f"Point {i}: the Atlas rollout step {i} needs a "
              "review of the staging checklist and the budget owner signs it off."
              + (" We agreed to check it by Friday." if i % 10 == 5 else ""))
             for i in range(120)]
    world.script.assertions = [{  # about excerpts: its evidence is the excerpt's marked turn
        "excerpt": 1, "kind": "fact",
        "text": "Atlas rollout needs the staging checklist reviewed.",
    }]
    return world.session(turns, space_id=world.space("Atlas"))


async def test_a_long_transcript_is_summarised_in_pieces(world: World) -> None:
    session_id = long_session(world)
    outcome = await world.keep(session_id)
    archive_calls = [c for c in world.generator.calls if '"key_quotes"' in c[-1].content]
    assert len(archive_calls) > 1
    assert "part 1 of" not in archive_calls[0][-1].content  # a label a model copies
    # every turn was shown to the summariser exactly once
    shown = "\n".join(c[-1].content for c in archive_calls)
    assert all(shown.count(f"Point {i}:") == 1 for i in range(120))
    assert outcome.archived and outcome.assertions == 1
    assert len(world.store.archive(session_id)) == 1


async def test_a_long_meetings_archive_lists_the_decisions_its_extraction_found(
        world: World) -> None:
    session_id = long_session(world)  # "We agreed to check it by Friday." every ten turns
    # the model's own Decided (role names, proposals) is not asked for, and not kept
    world.script.archive = archive_answer(sections={"decided": ["Project Manager"],
                                                    "action_items": [], "still_open": []})
    outcome = await world.keep(session_id)
    assert outcome.archived and outcome.decisions == ["The group agreed to check it by Friday."]
    (chunk,) = world.store.archive(session_id)
    decided = chunk.body.split("Decided:\n")[1].split("\n")[0]
    assert decided == "- The group agreed to check it by Friday."
    assert "Project Manager\n" not in chunk.body
    assert not any('{"assertions"' in c[-1].content for c in world.generator.calls)


def test_remembered_maps_onto_the_protocol_reply() -> None:
    from daemon.ipc.protocol import RememberReply

    fields = {f.name for f in msgspec.structs.fields(Remembered)}
    assert fields == {f.name for f in msgspec.structs.fields(RememberReply)} - {"id"}


async def test_only_a_fact_or_preference_can_be_a_memory_about_the_person(world: World) -> None:
    world.script.assertions = [{**DECISION, "about_person": True, "scope": "profile"}]
    outcome = await world.keep(world.session(space_id=world.space("Atlas")))
    assert (outcome.assertions, outcome.candidates) == (1, 0)
    (decision,) = world.store.list_assertions()
    assert not decision.about_person and decision.review_status == "approved"
