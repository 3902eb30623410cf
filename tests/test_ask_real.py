"""Ask with the real small LLM (Qwen2.5-Coder 0.5B) and embedder, over the protocol of a real
daemon: the answer is only in one of the kept sessions, and the answer cites it; on a real
meeting (QMSum dev), the answer cites a turn of the question's gold span."""

from __future__ import annotations

import json
import logging
import re
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from askkit import FACT_TITLE, LLM, SPACE, import_kept_sessions
from storekit import T0, open_store

from daemon.config import Settings
from daemon.ipc.client import Client
from daemon.ipc.protocol import (
    AddSpace,
    AnswerDone,
    AnswerToken,
    Ask,
    AskReply,
    ImportTranscript,
    SettingsSet,
    answer_topic,
)
from daemon.ipc.testing import DaemonProcess, start_daemon
from daemon.llm.generate import LlamaGenerator, ModelLoad
from daemon.memory.ask import Asker
from daemon.memory.grounding import echoes_question
from daemon.store.fusion import ItemKey
from daemon.store.records import NewTurn


@pytest.fixture
def daemon(short_home: Path,
           installed_model: Callable[[str], Path]) -> Iterator[DaemonProcess]:
    installed_model(LLM)  # fails, never skips, when it is missing
    installed_model("all-minilm-l6-v2")
    started = start_daemon(short_home)
    yield started
    started.stop()


def ask_streaming(request: Ask) -> tuple[list[str], AskReply]:
    tokens: list[str] = []
    replies: list[AskReply] = []
    with Client(timeout=60) as client, client.subscribe([answer_topic(request.id)]) as events:
        sender = threading.Thread(
            target=lambda: replies.append(Client(timeout=900).request(request, timeout=900)))
        sender.start()
        while True:
            event = events.receive(900)
            assert event is not None, "no answer event within 15 minutes"
            if isinstance(event, AnswerToken):
                tokens.append(event.token)
            elif isinstance(event, AnswerDone):
                break
        sender.join()
    return tokens, replies[0]


@pytest.mark.slow
def test_the_real_model_answers_from_the_one_session_that_holds_the_fact(
    daemon: DaemonProcess,
) -> None:
    with Client(timeout=60) as client:
        import_kept_sessions(client)
        client.request(SettingsSet(key="llm_model", value=LLM))

    tokens, reply = ask_streaming(Ask(id=uuid.uuid4().hex, question="What is the Orion server "
                                      "budget?", space=SPACE))

    assert len(tokens) > 1  # streamed, not sent whole
    assert not reply.nothing_found and not reply.cancelled
    assert "48,000" in reply.answer or "48000" in reply.answer
    cited = {c.title for c in reply.sources}
    assert FACT_TITLE in cited, (reply.answer, reply.sources)
    fact = next(c for c in reply.sources if c.title == FACT_TITLE)
    assert fact.verified and fact.speaker == "Tom"
    assert "48,000 euros" in fact.quote


@pytest.mark.slow
def test_the_real_model_answers_a_qmsum_question_citing_a_turn_of_the_gold_span(
    daemon: DaemonProcess, test_data: Path,
) -> None:
    meeting = test_data / "meetings" / "ES2006a.json"
    queries = json.loads(meeting.with_name("ES2006a-queries.json").read_text())
    query = next(q for q in queries if q["query"].startswith("What are the target price"))
    turns = {t["ref"]: t for t in json.loads(meeting.read_text())["turns"]}
    gold = [turns[ref] for ref in query["refs"]]
    with Client(timeout=60) as client:
        client.request(AddSpace(name="Remote", activity="project"))
        client.request(ImportTranscript(content=meeting.read_bytes(), space="Remote"),
                       timeout=900)
        client.request(SettingsSet(key="llm_model", value=LLM))

    _, reply = ask_streaming(Ask(id=uuid.uuid4().hex, question=query["query"], space="Remote"))

    assert not reply.nothing_found and reply.sources, reply
    assert not echoes_question(reply.answer, query["query"]), reply.answer

    def in_span(quote: str) -> bool:
        words = " ".join(quote.rstrip("…").split()).casefold()
        return any(words in " ".join(t["text"].split()).casefold() for t in gold)

    assert any(c.verified and in_span(c.quote) for c in reply.sources), (
        reply.answer, [(c.n, c.speaker, c.quote) for c in reply.sources])


@pytest.mark.slow
async def test_their_question_read_ahead_leaves_the_real_model_only_the_answer_to_write(
    tmp_path: Path, installed_model: Callable[[str], Path], caplog: pytest.LogCaptureFixture,
) -> None:
    """The hotkey's case on the real 0.5B: "them" asks during a call, the question is read
    ahead (its sources, the whole prompt), and the hotkey's answer reads nothing but the
    answer's opening before it writes — and still answers from the source."""
    store = open_store(tmp_path / "data")
    past = store.create_session(title=FACT_TITLE, started_at=T0)
    store.append_turns(past.id, [
        NewTurn(speaker="Tom", text="The Orion server budget is 48,000 euros for this year.",
                start=0),
        NewTurn(speaker="me", text="Fine, I will tell finance.", start=6)])
    store.end_session(past.id, ended_at=T0 + 60)
    (chunk,) = store.chunks(session_id=past.id)
    live = store.create_session(title="Orion call", started_at=T0 + 86400)
    store.append_turns(live.id, [
        NewTurn(speaker="them", text="Good morning. What is the Orion server budget?", start=0)])
    generator = LlamaGenerator(ModelLoad(installed_model(LLM), threads=2, n_ctx=4096))
    asker = Asker(store, generator=lambda: generator, settings=Settings,
                  recall=lambda question, scope, k: [ItemKey("chunk", chunk.id)],
                  live_session=lambda: live.id)
    try:
        assert await asker.read_question_ahead(live.id)
        with caplog.at_level(logging.INFO, logger="daemon.llm.generate"):
            answer = await asker.ask(None)
    finally:
        generator.close()
        store.close()

    (read,) = [r.getMessage() for r in caplog.records if "answer prompt of" in r.getMessage()]
    found = re.search(r"of (\d+) tokens, (\d+) of them read before", read)
    assert found is not None, read
    total, before = int(found[1]), int(found[2])
    assert total > 150 and total - before <= 8  # the answer's opening ("<|im_start|>assistant")
    assert answer.question == "What is the Orion server budget?"
    assert re.search(r"48[,.\s]?000", answer.text) and answer.citations, answer.text
