"""Fusion search with the real MiniLM model: a turn is found by its meaning, not its words."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from storekit import T0, Clock

from daemon.llm import LlamaEmbedder
from daemon.store.records import NewTurn
from daemon.store.scope import Scope
from daemon.store.search import search
from daemon.store.store import Store

DAY = 86_400.0

SMALL_TALK = [
    "Morning! Did you get some coffee before this?",
    "Yes, the machine on the third floor works again.",
    "Great. The projector in room four is still broken though.",
    "Facilities said they would look at it next week.",
    "Fine, we can use the screen in the corner meanwhile.",
    "Shall we start with the roadmap then?",
    "Sure, the roadmap slides are in the shared folder.",
    "I moved the hiring section to the end of the deck.",
]


@pytest.fixture(scope="module")
def minilm(installed_model: Callable[[str], Path]) -> Iterator[LlamaEmbedder]:
    embedder = LlamaEmbedder(installed_model("all-minilm-l6-v2"), threads=2, batch=16)
    yield embedder
    embedder.close()


@pytest.mark.slow
def test_a_paraphrase_finds_the_one_turn_that_means_it(
    tmp_path: Path, minilm: LlamaEmbedder
) -> None:
    store = Store(tmp_path, minilm, clock=Clock())
    space = store.create_space("Team")
    sessions = []
    for day, key_turn in enumerate([
        "Our biggest customer is threatening to leave because invoices keep arriving late.",
        "The new office dog chewed through two laptop chargers yesterday.",
        "Marta is moving to Lisbon and will work remotely from March.",
    ]):
        session = store.create_session(space_id=space.id, title=f"weekly {day}",
                                       started_at=T0 - (10 - day) * DAY, participants=["me", "them"])
        texts = [*SMALL_TALK[:4], key_turn, *SMALL_TALK[4:]]
        store.append_turns(session.id, [
            NewTurn(speaker=("me", "them")[i % 2], text=t, start=20.0 * i)
            for i, t in enumerate(texts)])
        store.end_session(session.id)
        sessions.append(session.id)
    scope = Scope(space_id=space.id)

    # no word in common with the turn it is after
    top = search(store, "which client might we lose over billing delays?", scope=scope, k=3,
                 explain=True)

    assert top[0].session_id == sessions[0]
    assert top[0].explain is not None and top[0].explain.legs["vector_turns"].rank == 1
    found = store.vector_turns("relocating abroad", scope, limit=3)
    assert found[0].id == store.chunks(session_id=sessions[2])[0].id
    store.close()
