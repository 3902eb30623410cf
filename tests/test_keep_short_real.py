"""Keeping short meetings with the real default language model: a decision said with the option
not taken and the reason, and commitments said as "I'll … by <day>", are stored with every
field and listed as the archive's Decided and Action items; two meetings of one series kept in
a Space leave their commitments open, each owned by the speaker who took it on."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from bench.meetings import archive_sections
from daemon.config import Settings
from daemon.llm.embed import LlamaEmbedder
from daemon.llm.generate import LlamaGenerator, ModelLoad
from daemon.memory import open_items
from daemon.memory.remember import Rememberer
from daemon.store.records import NewTurn, Space
from daemon.store.store import Store

# a few model calls over seven turns each: seconds on two idle cores; the timeout only guards
# against a hang
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

CASE = [
    ("Anna", "Okay, let's sort out the case before we finish."),
    ("Ben", "The supplier quoted us for both plastic and rubber, and the rubber one is a bit "
            "dearer."),
    ("Carla", "People in the user test kept dropping the prototype, though."),
    ("Anna", "Right. So we decided to go with the rubber case instead of the plastic one, "
             "because it survives being dropped."),
    ("Ben", "Fine by me. I'll send the updated drawings to the supplier by Friday."),
    ("Carla", "And I'll book the room for the next user test by Wednesday."),
    ("Anna", "Great, thanks everyone."),
]
BUTTONS = [
    ("Anna", "Second meeting on the remote. The drawings went out, so today it's the buttons."),
    ("Carla", "The testers found the small buttons hard to press."),
    ("Ben", "We could make them bigger, but the case gets longer."),
    ("Anna", "Then we agreed on bigger buttons, the case can be a centimetre longer."),
    ("Ben", "I'll ask the supplier for a quote on the longer case by Tuesday."),
    ("Carla", "Sure. I'll write up the test results for the team by Thursday."),
    ("Anna", "Good, see you next week."),
]


@asynccontextmanager
async def keeping(installed_model: Callable[[str], Path], tmp_path: Path, space_name: str = "Remote"
                  ) -> AsyncIterator[tuple[Store, Space, Rememberer]]:
    """A store with the project Space ``space_name`` and a Rememberer on the real small models."""
    settings = Settings()
    generator = LlamaGenerator(ModelLoad(installed_model("qwen2.5-coder-0.5b"), threads=2, n_ctx=settings.llm_context))
    embedder = LlamaEmbedder(installed_model("all-minilm-l6-v2"), threads=2, batch=16)
    store = Store(tmp_path / "profile", embedder)
    try:
        space = store.create_space(space_name, activity="project")
        yield store, space, Rememberer(store, generator=lambda: generator,
                                       settings=lambda: settings)
    finally:
        store.close()
        generator.close()
        embedder.close()


def meeting(store: Store, space: Space, title: str, turns: Sequence[tuple[str, str]]) -> int:
    session = store.create_session(space_id=space.id, title=title,
                                   participants=sorted({s for s, _ in turns}))
    store.append_turns(session.id, [NewTurn(speaker=s, text=t, start=10.0 * i)
                                    for i, (s, t) in enumerate(turns)])
    store.end_session(session.id)
    return session.id


async def test_a_short_meeting_stores_its_decision_and_dated_commitments(
    installed_model: Callable[[str], Path], tmp_path: Path
) -> None:
    async with keeping(installed_model, tmp_path) as (store, space, rememberer):
        session = meeting(store, space, "Remote case", CASE)

        outcome = await rememberer.remember(session, "keep")

        print(outcome)
        assert outcome.archived and not [n for n in outcome.notes if "failed" in n]
        stored = store.list_assertions(session_id=session)
        for a in stored:
            print(a.kind, a.text, a.chosen, a.alternatives, a.reasoning, a.owner, a.due)
        (decision,) = [a for a in stored if a.kind == "decision"]
        assert "rubber case" in (decision.chosen or "") and "plastic" not in (decision.chosen or "")
        assert decision.alternatives == ("the plastic one",)
        assert decision.reasoning == "it survives being dropped"
        commitments = sorted((a.owner, a.due, a.text) for a in stored
                             if a.kind in ("commitment", "task"))
        assert [(owner, due) for owner, due, _ in commitments] == [
            ("Ben", "by Friday"), ("Carla", "by Wednesday")]
        assert "drawings" in commitments[0][2] and "room" in commitments[1][2]
        (archive,) = store.archive(session)
        print(archive.body)
        _, sections = archive_sections(archive.body)
        assert sections["Decided"] == [decision.text]
        assert sorted(sections["Action items"]) == [text for _, _, text in commitments]


async def test_two_meetings_of_a_series_leave_their_commitments_open_with_their_owners(
    installed_model: Callable[[str], Path], tmp_path: Path
) -> None:
    async with keeping(installed_model, tmp_path) as (store, space, rememberer):
        for title, turns in (("Remote case", CASE), ("Remote buttons", BUTTONS)):
            await rememberer.remember(meeting(store, space, title, turns), "keep")

        listed = open_items.list_open(store, space_id=space.id)  # `braincue open --space`

        lines = [open_items.item_line(item) for item in listed]
        print("\n".join(lines))
        speakers = {s for s, _ in CASE + BUTTONS}
        assert {item.assertion.owner for item in listed} <= speakers
        by_title = {(item.session_title, item.assertion.owner, item.assertion.due)
                    for item in listed}
        assert by_title >= {("Remote case", "Ben", "by Friday"),
                            ("Remote case", "Carla", "by Wednesday"),
                            ("Remote buttons", "Ben", "by Tuesday"),
                            ("Remote buttons", "Carla", "by Thursday")}
