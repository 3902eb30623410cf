"""The ``openai`` engine against a real OpenAI-compatible server on loopback: llama-cpp-python's
own server serving the registry's Qwen2.5-Coder 0.5B, started by the test (``llmserver``).

An ask streams through it and a keep's JSON-schema answers come from it; `status` says where
the model is and when it does not answer; each failure costs one answer, never a
conversation: a server killed in the middle of an answer, killed in the middle of a keep (the
keep waits, pending, and finishes once the server answers again), a model name the server does
not serve.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TypeVar

import msgspec
import pytest
from askkit import QUESTION, SPACE, import_kept_sessions
from llmserver import LlmServer

from clients.cli.status import language_model_lines
from daemon.config import Paths, Settings
from daemon.errors import BrainCueError, EngineUnreachable, RemoteModelMissing
from daemon.ipc.client import Client
from daemon.ipc.protocol import AnswerDone, AnswerToken, Ask, AskReply, Status, answer_topic
from daemon.ipc.testing import DaemonProcess, start_daemon
from daemon.llm.embed import LlamaEmbedder
from daemon.llm.endpoint import parse
from daemon.llm.generate import ChatMessage
from daemon.llm.remote import OpenAIGenerator
from daemon.memory.remember import Rememberer
from daemon.memory.waiting import WAITING
from daemon.store.records import NewTurn
from daemon.store.store import Store

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

LLM = "qwen2.5-coder-0.5b"
T = TypeVar("T")


@pytest.fixture
def server(installed_model: Callable[[str], Path], tmp_path: Path) -> Iterator[LlmServer]:
    started = LlmServer(installed_model(LLM), tmp_path)
    started.start()
    yield started
    started.kill()


def engine(server: LlmServer, model: str | None = None) -> OpenAIGenerator:
    return OpenAIGenerator(parse(server.url, allow_network=False),
                           server.alias if model is None else model, timeout_s=300)


class Budget(msgspec.Struct):
    project: str
    amount_euros: int


async def test_the_server_streams_an_answer_and_holds_a_json_answer_to_its_schema(
    server: LlmServer,
) -> None:
    generator = engine(server)
    asked = [ChatMessage("user", "Ben said: I will send the drawings to the supplier by "
                                 "Friday. Who will send the drawings? Answer in a few words.")]
    tokens = [t async for t in generator.stream(asked, max_tokens=24, temperature=0)]
    assert len(tokens) > 1 and "Ben" in "".join(tokens), tokens  # streamed, token by token

    budget = await generator.generate(
        [ChatMessage("user", 'Tom said: "The Orion server budget is 48,000 euros for this '
                             'year." What is the budget, and of which project?')],
        Budget, max_tokens=64, temperature=0)
    assert budget.amount_euros == 48000 and "Orion" in budget.project, budget
    assert generator.usage.calls == 2
    assert generator.usage.prompt_tokens > 20 and generator.usage.completion_tokens > 3


async def test_a_model_name_the_server_does_not_serve_is_a_typed_error_with_the_fix(
    server: LlmServer,
) -> None:
    with pytest.raises(RemoteModelMissing) as missing:
        await engine(server, "llama-9000").generate([ChatMessage("user", "Hi")], Budget)
    assert server.alias in missing.value.message  # what it does serve
    assert f"llm_remote_model {server.alias}" in (missing.value.fix or "")
    unnamed = engine(server, "")  # no name: the one it serves
    await unnamed.probe()
    assert unnamed.model == server.alias


async def test_a_server_killed_in_the_middle_of_an_answer_fails_that_answer_only(
    server: LlmServer,
) -> None:
    generator = engine(server)
    asked = [ChatMessage("user", "Count from one to one hundred in words.")]
    tokens: list[str] = []
    with pytest.raises(EngineUnreachable) as closed:
        async for token in generator.stream(asked, max_tokens=400, temperature=0):
            tokens.append(token)
            if len(tokens) == 2:
                server.kill()  # a crash: no goodbye
    assert len(tokens) >= 2
    assert "closed the connection" in closed.value.message
    with pytest.raises(EngineUnreachable) as down:  # and while it is down, said plainly
        await generator.generate([ChatMessage("user", "Hi")], Budget)
    assert "start it" in (down.value.fix or "")

    server.start()  # back: the next answer is whole
    again = [t async for t in generator.stream([ChatMessage("user", "Say hello.")],
                                               max_tokens=8, temperature=0)]
    assert again


# -- through a daemon --------------------------------------------------------------------------


@pytest.fixture
def daemon(short_home: Path, server: LlmServer,
           installed_model: Callable[[str], Path]) -> Iterator[DaemonProcess]:
    installed_model("all-minilm-l6-v2")
    config = Paths.resolve("default").config_file
    config.parent.mkdir(parents=True)
    config.write_text(f'llm_engine = "openai"\nllm_url = "{server.url}"\n'
                      f'llm_remote_model = "{server.alias}"\nembed_model = "all-minilm-l6-v2"\n'
                      "llm_threads = 2\n")
    started = start_daemon(short_home)
    yield started
    started.stop()


def ask(question: str) -> tuple[list[str], AskReply | BrainCueError]:
    """``question`` asked in ``SPACE``: the tokens streamed, then the reply or the error."""
    request = Ask(id=uuid.uuid4().hex, question=question, space=SPACE)
    tokens: list[str] = []
    outcome: list[AskReply | BrainCueError] = []

    def send() -> None:
        try:
            outcome.append(Client(timeout=900).request(request, timeout=900))
        except BrainCueError as e:
            outcome.append(e)

    with Client(timeout=60) as client, client.subscribe([answer_topic(request.id)]) as events:
        sender = threading.Thread(target=send)
        sender.start()
        while sender.is_alive() or not outcome:
            event = events.receive(5)
            if isinstance(event, AnswerToken):
                tokens.append(event.token)
            elif isinstance(event, AnswerDone) or (event is None and not sender.is_alive()):
                break
        sender.join()
    return tokens, outcome[0]


def test_an_ask_streams_through_the_server_and_status_says_when_it_is_down(
    daemon: DaemonProcess, server: LlmServer,
) -> None:
    with Client(timeout=60) as client:
        import_kept_sessions(client)
        ready = client.request(Status()).language_model
    assert ready is not None and (ready.engine, ready.state) == ("openai", "ready")
    assert ready.url == server.url and not ready.sends_to

    tokens, reply = ask(QUESTION)

    assert isinstance(reply, AskReply), reply
    assert len(tokens) > 1  # streamed from the server's events, not sent whole
    assert "48,000" in reply.answer or "48000" in reply.answer, reply.answer
    assert any(c.title == "Orion planning" for c in reply.sources)

    server.kill()
    _, failed = ask(QUESTION)
    assert isinstance(failed, BrainCueError) and failed.code == "engine_unreachable", failed
    with Client(timeout=60) as client:  # the daemon serves on: one answer lost, nothing else
        down = client.request(Status()).language_model
    assert down is not None and down.state == "unreachable"
    assert language_model_lines(down)[0] == f"language model: unreachable ({server.url})"

    server.start()
    _, answered = ask(QUESTION)
    assert isinstance(answered, AskReply), answered


# -- a keep ------------------------------------------------------------------------------------

CASE = [
    ("Anna", "Okay, let's sort out the case before we finish."),
    ("Ben", "The supplier quoted us for both plastic and rubber, and the rubber one is a bit "
            "dearer."),
    ("Carla", "People in the user test kept dropping the prototype, though."),
    ("Anna", "Right. So we decided to go with the rubber case instead of the plastic one, "
             "because it survives being dropped."),
    ("Ben", "Fine by me. I'll send the updated drawings to the supplier by Friday. The "
            "supplier portal password is tangerine-Kettle-42."),
    ("Anna", "Great, thanks everyone."),
]


class KilledAfter(OpenAIGenerator):
    """The server's engine, the server killed once ``calls`` of its model calls have returned:
    a keep whose server dies between the calls it makes. ``asked``: every prompt sent."""

    def __init__(self, server: LlmServer, calls: int) -> None:
        super().__init__(parse(server.url, allow_network=False), server.alias, timeout_s=300)
        self.server, self.calls = server, calls
        self.asked: list[list[ChatMessage]] = []

    async def generate(self, messages: Sequence[ChatMessage], output_type: type[T], *,
                       max_tokens: int = 1024, temperature: float = 0.2) -> T:
        self.asked.append(list(messages))
        answer = await super().generate(messages, output_type, max_tokens=max_tokens,
                                        temperature=temperature)
        self.calls -= 1
        if self.calls == 0:
            self.server.kill()
        return answer


async def test_a_keep_whose_server_dies_waits_pending_and_finishes_when_it_answers(
    server: LlmServer, installed_model: Callable[[str], Path], tmp_path: Path,
) -> None:
    settings = Settings(llm_engine="openai", llm_url=server.url, llm_remote_model=server.alias)
    generator = KilledAfter(server, calls=1)
    embedder = LlamaEmbedder(installed_model("all-minilm-l6-v2"), threads=2, batch=16)
    store = Store(tmp_path / "profile", embedder)
    try:
        space = store.create_space("Remote", activity="project")
        session = store.create_session(space_id=space.id, title="Remote case",
                                       participants=sorted({s for s, _ in CASE}))
        store.append_turns(session.id, [NewTurn(speaker=s, text=t, start=10.0 * i)
                                        for i, (s, t) in enumerate(CASE)])
        store.end_session(session.id)
        rememberer = Rememberer(store, generator=lambda: generator, settings=lambda: settings)

        waiting = await rememberer.remember(session.id, "keep")

        assert waiting.status == "kept" and waiting.keep_status == "pending", waiting
        state = store.keep_state(session.id)
        assert state is not None and state.status == "pending"
        assert (state.reason or "").startswith(WAITING), state.reason
        assert await rememberer.waiting()
        assert store.archive(session.id) == []  # nothing half-written

        server.start()
        assert await rememberer.finish_waiting() == 1

        done = store.keep_state(session.id)
        assert done is not None and done.status == "done", done
        stored = store.list_assertions(session_id=session.id)
        assert any(a.kind == "decision" and "rubber" in (a.chosen or a.text) for a in stored)
        assert store.archive(session.id)
        # only masked text went to the server: the password said is in no prompt
        sent = " ".join(m.content for call in generator.asked for m in call)
        assert "tangerine-Kettle-42" not in sent and "Ben" in sent
        assert not await rememberer.waiting()
    finally:
        store.close()
        embedder.close()
