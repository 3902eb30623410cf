"""The evidence an ask shows first, weighed by the real embedding model (all-MiniLM-L6-v2): a
turn that answers in other words than the question's is shown, a turn about something else is
not. The answer is scripted: no language model is asked for the evidence."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path

import pytest
import trio
from storekit import T0

from daemon.config import Settings
from daemon.llm.embed import LlamaEmbedder
from daemon.llm.generate import ScriptedGenerator
from daemon.memory.ask import Asker
from daemon.memory.evidence import evidence_for
from daemon.store.fusion import ItemKey
from daemon.store.records import NewTurn
from daemon.store.scope import Scope
from daemon.store.store import Store

SAID = [
    ("Caroline", "How was your weekend, Mel?"),
    ("Melanie", "Busy! I got Emma a red bicycle when she turned eight, she loves it."),
    ("Caroline", "That's lovely. My car broke down on the way to work on Monday."),
    ("Melanie", "Oh no. The weather was awful all week too."),
    ("Caroline", "We should plan the book club for next month."),
]


@pytest.fixture
def store(tmp_path: Path, installed_model: Callable[[str], Path]) -> Iterator[Store]:
    embedder = LlamaEmbedder(installed_model("all-minilm-l6-v2"), threads=2, batch=8)
    opened = Store(tmp_path / "data", embedder)
    yield opened
    opened.close()
    embedder.close()


def test_the_turn_that_answers_in_other_words_is_shown_and_the_others_are_not(
    store: Store,
) -> None:
    session = store.create_session(title="Caroline and Melanie, session 4", started_at=T0)
    store.append_turns(session.id, [NewTurn(speaker=who, text=text, start=10.0 * i)
                                    for i, (who, text) in enumerate(SAID)])
    store.end_session(session.id, ended_at=T0 + 60)

    def the_chat(question: str, scope: Scope, k: int) -> list[ItemKey]:
        return [ItemKey("chunk", c.id) for c in store.chunks(session_id=session.id)][:k]

    settings = Settings()
    generator = ScriptedGenerator(["Melanie got Emma a red bicycle [1]."])
    asker = Asker(store, generator=lambda: generator, settings=lambda: settings,
                  recall=the_chat)
    question = "What did Melanie buy for her daughter's birthday?"

    answer = trio.run(lambda: asker.ask(question))

    shown = [e.text for e in answer.evidence]
    assert any("red bicycle" in text for text in shown), shown
    assert not any("car broke down" in text or "weather" in text for text in shown), shown
    # without the model's weighing, only shared words count, and no turn shares one
    assert evidence_for(question, answer.sources) == []


def test_a_passage_recalled_deeper_is_shown_and_not_read_by_the_model(store: Store) -> None:
    chats = {}
    for day, (title, said) in enumerate([
        ("Caroline and Melanie, session 5", [
            ("Caroline", "Did you go to the beach with the kids?"),
            ("Melanie", "Not yet, the weather was awful all week."),
        ]),
        ("Caroline and Melanie, session 4", SAID),
    ]):
        session = store.create_session(title=title, started_at=T0 + day * 86_400)
        store.append_turns(session.id, [NewTurn(speaker=who, text=text, start=10.0 * i)
                                        for i, (who, text) in enumerate(said)])
        store.end_session(session.id, ended_at=T0 + day * 86_400 + 60)
        chats[title] = [ItemKey("chunk", c.id) for c in store.chunks(session_id=session.id)]

    def recalled(question: str, scope: Scope, k: int) -> list[ItemKey]:
        # the answering chat ranked second: below what the model reads at search_k 1
        return [*chats["Caroline and Melanie, session 5"],
                *chats["Caroline and Melanie, session 4"]][:k]

    generator = ScriptedGenerator(["Melanie got Emma a red bicycle [1]."] * 2)
    question = "What did Melanie buy for her daughter's birthday?"
    for deeper, shown_there in ((1, False), (2, True)):
        asker = Asker(store, generator=lambda: generator,
                      settings=partial(Settings, search_k=1, ask_evidence_k=deeper),
                      recall=recalled)

        answer = trio.run(asker.ask, question)

        shown = [e.text for e in answer.evidence]
        assert any("red bicycle" in text for text in shown) is shown_there, shown
        read = "\n".join(m.content for m in generator.calls[-1])
        assert "red bicycle" not in read  # the model reads the first search_k alone
        assert "Caroline and Melanie, session 4" not in {s.title for s in answer.sources}
