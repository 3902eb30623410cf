"""Ask over the protocol, in-process: tokens streamed to the asking client, the checked reply
with its citations, AskCancel, a client that goes away, ListAssertions."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import trio
from storekit import T0, open_store

from daemon.config import Paths, Settings
from daemon.errors import InvalidInput, IpcError, NotFound
from daemon.handlers.ask import register_ask
from daemon.ipc.client import Client
from daemon.ipc.dispatch import Handlers
from daemon.ipc.protocol import (
    AnswerDone,
    AnswerEvidence,
    AnswerToken,
    Ask,
    AskCancel,
    AskReply,
    Event,
    ListAssertions,
    Ok,
    answer_topic,
)
from daemon.ipc.server import IpcServer, serve_ipc
from daemon.llm.generate import ChatMessage, ScriptedGenerator
from daemon.memory.ask import Asker
from daemon.store.fusion import ItemKey
from daemon.store.records import NewAssertion, NewTurn, Session
from daemon.store.scope import Scope
from daemon.store.store import Store

ANSWER = 'They said "we will ship the Atlas beta on Friday" [1].'


class BlockingGenerator(ScriptedGenerator):
    """Streams its first token, then waits for ever (until the answer is stopped)."""

    def __init__(self) -> None:
        super().__init__([])
        self.closed = trio.Event()

    async def stream(self, messages: Sequence[ChatMessage], *, max_tokens: int = 512,
                     temperature: float = 0.2) -> AsyncIterator[str]:
        self.calls.append(list(messages))
        try:
            yield "Thinking "
            await trio.sleep_forever()
        finally:
            self.closed.set()


@pytest.fixture
def paths(short_home: Path) -> Paths:
    return Paths.resolve("default")


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = open_store(tmp_path / "data")
    space = opened.create_space("Atlas")
    session = opened.create_session(space_id=space.id, title="Atlas launch review",
                                    started_at=T0)
    opened.append_turns(session.id, [
        NewTurn(speaker="them", text="We will ship the Atlas beta on Friday, no later.", start=0),
        NewTurn(speaker="me", text="I will tell the support team by Thursday.", start=5),
    ])
    opened.end_session(session.id, ended_at=T0 + 60)
    yield opened
    opened.close()


def transcript_recall(store: Store) -> Callable[[str, Scope, int], list[ItemKey]]:
    def recall(question: str, scope: Scope, k: int) -> list[ItemKey]:
        return [ItemKey("chunk", h.id) for h in store.fts_chunks(question, scope, k)]

    return recall


@asynccontextmanager
async def serving(paths: Paths, store: Store, generator: ScriptedGenerator,
                  settings: Settings | None = None) -> AsyncIterator[IpcServer]:
    handlers = Handlers()
    now = settings or Settings()
    asker = Asker(store, generator=lambda: generator, settings=lambda: now,
                  recall=transcript_recall(store))
    server_box: list[IpcServer] = []

    def watch(topic: str) -> Any:
        return server_box[0].watch_subscribers(topic)

    register_ask(handlers, store, asker, lambda: now, watch)
    async with trio.open_nursery() as nursery:
        server: IpcServer = await nursery.start(partial(serve_ipc, paths, handlers))
        server_box.append(server)
        yield server
        nursery.cancel_scope.cancel()


def request_once(paths: Paths, request: Ask) -> AskReply:
    with Client(paths, timeout=10) as client:
        return client.request(request)


async def in_thread(fn: Any, *args: Any, **kwargs: Any) -> Any:
    return await trio.to_thread.run_sync(partial(fn, *args, **kwargs))


async def test_the_answer_streams_to_the_asking_client_then_the_checked_reply(
    paths: Paths, store: Store
) -> None:
    generator = ScriptedGenerator([ANSWER])
    async with serving(paths, store, generator):
        client = Client(paths, timeout=10)
        request = Ask(id="ask-1", question="When does the Atlas beta ship?", space="Atlas")
        with await in_thread(client.subscribe, [answer_topic("ask-1")]) as answer:
            reply: AskReply = await in_thread(client.request, request)
            events: list[Event] = []
            while not events or not isinstance(events[-1], AnswerDone):
                events.append(await in_thread(answer.receive, 10.0))
        client.close()

    # what memory holds comes first, before any token of the model's
    assert isinstance(events[0], AnswerEvidence) and events[0].evidence == reply.evidence
    (shown,) = reply.evidence
    assert (shown.n, shown.title, shown.date, shown.speaker, shown.start, shown.kind) == (
        1, "Atlas launch review", T0, "them", 0.0, "transcript")
    assert shown.text == "We will ship the Atlas beta on Friday, no later."
    assert "".join(e.token for e in events if isinstance(e, AnswerToken)) == ANSWER
    assert events[-1] == AnswerDone(request_id="ask-1")
    assert reply.answer == ANSWER and reply.question == "When does the Atlas beta ship?"
    assert not reply.nothing_found and not reply.cancelled
    (source,) = reply.sources
    assert (source.n, source.title, source.date, source.speaker, source.verified) == (
        1, "Atlas launch review", T0, "them", True)
    assert source.quote == "we will ship the Atlas beta on Friday"
    assert source.kind == "transcript" and source.session_id is not None


async def test_nothing_found_is_said_plainly_over_the_protocol(paths: Paths, store: Store) -> None:
    async with serving(paths, store, ScriptedGenerator([])):
        client = Client(paths, timeout=10)
        reply = await in_thread(client.request, Ask(question="Who won the chess match?",
                                                     space="Atlas"))
        client.close()
    assert reply.nothing_found and reply.sources == []
    assert reply.answer.startswith("I don't know")


async def test_ask_cancel_stops_the_answer_and_the_model(paths: Paths, store: Store) -> None:
    generator = BlockingGenerator()
    async with serving(paths, store, generator):
        client = Client(paths, timeout=10)
        request = Ask(id="ask-2", question="When does the Atlas beta ship?", space="Atlas")
        replies: list[AskReply] = []

        async def send() -> None:
            replies.append(await in_thread(request_once, paths, request))

        with await in_thread(client.subscribe, [answer_topic("ask-2")]) as answer:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(send)
                shown = await in_thread(answer.receive, 10.0)
                assert isinstance(shown, AnswerEvidence) and shown.evidence  # before the model
                first = await in_thread(answer.receive, 10.0)
                assert first == AnswerToken(request_id="ask-2", token="Thinking ")
                assert type(await in_thread(client.request, AskCancel(request_id="ask-2"))) is Ok
                done = await in_thread(answer.receive, 10.0)
        with pytest.raises(NotFound, match="ask-2"):  # finished: nothing left to cancel
            await in_thread(client.request, AskCancel(request_id="ask-2"))
        client.close()

    assert done == AnswerDone(request_id="ask-2", cancelled=True)
    (reply,) = replies
    assert reply.cancelled and reply.answer == ""  # checked: no source supports "Thinking"
    assert generator.closed.is_set()


async def test_an_answer_stops_when_its_client_goes_away(paths: Paths, store: Store) -> None:
    generator = BlockingGenerator()
    async with serving(paths, store, generator):
        listener = Client(paths, timeout=10)
        request = Ask(id="ask-3", question="When does the Atlas beta ship?", space="Atlas")
        subscription = await in_thread(listener.subscribe, [answer_topic("ask-3")])
        replies: list[AskReply] = []

        async def send() -> None:
            replies.append(await in_thread(request_once, paths, request))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(send)
            assert isinstance(await in_thread(subscription.receive, 10.0), AnswerEvidence)
            assert isinstance(await in_thread(subscription.receive, 10.0), AnswerToken)
            subscription.close()  # the asking client is gone: its subscription disconnects
        listener.close()

    (reply,) = replies
    assert reply.cancelled
    assert generator.closed.is_set()


async def test_an_ask_nobody_subscribed_to_runs_to_the_end(paths: Paths, store: Store) -> None:
    async with serving(paths, store, ScriptedGenerator([ANSWER])):
        client = Client(paths, timeout=10)
        reply = await in_thread(client.request, Ask(question="When does the Atlas beta ship?",
                                                     space="Atlas"))
        client.close()
    assert reply.answer == ANSWER and not reply.cancelled


async def test_no_question_and_nothing_live_is_a_typed_error(paths: Paths, store: Store) -> None:
    async with serving(paths, store, ScriptedGenerator([])):
        client = Client(paths, timeout=10)
        with pytest.raises(InvalidInput, match="no session is live"):
            await in_thread(client.request, Ask())
        with pytest.raises(NotFound, match="Mars"):
            await in_thread(client.request, Ask(question="anything?", space="Mars"))
        client.close()


async def test_list_assertions_gives_what_is_believed_now_by_kind_and_space(
    paths: Paths, store: Store
) -> None:
    atlas = store.get_space("Atlas")
    other = store.create_space("Borealis")
    task = store.add_assertion(NewAssertion(kind="task", text="Tell support about the beta.",
                                            owner="me", due="Thursday", source="user",
                                            space_id=atlas.id))
    old = store.add_assertion(NewAssertion(kind="commitment", text="Ship Atlas on Monday.",
                                           source="user", space_id=atlas.id))
    new = store.supersede(old.id, NewAssertion(kind="commitment", text="Ship Atlas on Friday.",
                                               source="user", space_id=atlas.id))
    decision = store.add_assertion(NewAssertion(kind="decision", text="Beta before GA.",
                                                chosen="beta first", alternatives=("GA first",),
                                                source="user"))  # profile-wide
    store.add_assertion(NewAssertion(kind="task", text="Borealis budget.", source="user",
                                      space_id=other.id))
    store.add_assertion(NewAssertion(kind="fact", text="Atlas has 12 customers.", source="user",
                                     space_id=atlas.id))

    async with serving(paths, store, ScriptedGenerator([])):
        client = Client(paths, timeout=10)
        open_items = await in_thread(client.request, ListAssertions(
            space="Atlas", kinds=["commitment", "task"]))
        decisions = await in_thread(client.request, ListAssertions(space="Atlas",
                                                                   kinds=["decision"]))
        everything = await in_thread(client.request, ListAssertions(space="Atlas"))
        profile_wide = await in_thread(client.request, ListAssertions(kinds=["task"]))
        with pytest.raises(IpcError, match="rumour"):  # an unknown kind: refused, bad_request
            await in_thread(client.request, ListAssertions(kinds=["rumour"]))  # type: ignore[list-item]
        client.close()

    assert sorted(a.id for a in open_items.assertions) == sorted([task.id, new.id])
    assert [(a.id, a.chosen, a.alternatives) for a in decisions.assertions] == [
        (decision.id, "beta first", ["GA first"])]
    assert len(everything.assertions) == 4
    assert profile_wide.assertions == []


async def test_the_shell_streams_the_answer_and_ctrl_c_cancels_it(
    paths: Paths, store: Store
) -> None:
    from clients.cli.ask import stream_answer

    async with serving(paths, store, ScriptedGenerator([ANSWER])):
        shown: list[str] = []
        reply = await in_thread(stream_answer, "default", Ask(
            id="cli-1", question="When does the Atlas beta ship?", space="Atlas"), shown.append)
        assert "".join(shown) == ANSWER and reply.answer == ANSWER

    generator = BlockingGenerator()
    async with serving(paths, store, generator):

        def interrupt(token: str) -> None:
            raise KeyboardInterrupt

        with pytest.raises(KeyboardInterrupt):
            await in_thread(stream_answer, "default", Ask(
                id="cli-2", question="When does the Atlas beta ship?", space="Atlas"), interrupt)
        with trio.fail_after(10):
            await generator.closed.wait()  # the answer was cancelled, the model left


class Calls:
    """Counts the calls a background loop makes (from any thread) and lets a test wait for
    more of them."""

    def __init__(self) -> None:
        self.count = 0
        self._changed = trio.Condition()
        self._token = trio.lowlevel.current_trio_token()

    def seen(self) -> None:
        self.count += 1
        self._token.run_sync_soon(lambda: trio.lowlevel.spawn_system_task(self._notify))

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    async def after(self, n: int) -> None:
        with trio.fail_after(30):
            async with self._changed:
                target = self.count + n
                while self.count < target:
                    await self._changed.wait()


def live_call(tmp_path: Path) -> tuple[Store, Session, ScriptedGenerator, Asker]:
    """A store with a live session of one turn, and an asker on a scripted model."""
    store = open_store(tmp_path / "data")
    live = store.create_session(title="Atlas call", started_at=T0)
    store.append_turns(live.id, [NewTurn(speaker="them", text="Shall we start?", start=0)])
    generator = ScriptedGenerator([])
    asker = Asker(store, generator=lambda: generator, settings=Settings,
                  recall=lambda question, scope, k: [])
    return store, live, generator, asker


async def test_a_live_conversation_is_read_ahead_as_it_grows_and_only_then(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    from daemon.handlers.ask import read_live_context_ahead

    store, live, generator, asker = live_call(tmp_path)
    looks = Calls()  # how often the loop looked at the live session
    turns = store.turns

    def counted(session_id: int) -> list[Any]:
        looks.seen()
        return turns(session_id)

    after_looks = looks.after

    current: list[int | None] = [live.id]
    async with trio.open_nursery() as nursery:
        monkeypatch.setattr(store, "turns", counted)
        nursery.start_soon(partial(read_live_context_ahead, asker, lambda: current[0],
                                   period=0.001))
        await after_looks(4)
        assert len(generator.prefills) == 1  # read once; nothing new since
        assert "Shall we start?" in generator.prefills[0][0].content

        store.append_turns(live.id, [NewTurn(speaker="me", text="Yes, the budget first.",
                                             start=4)])
        await after_looks(4)
        assert len(generator.prefills) == 2
        assert "Yes, the budget first." in generator.prefills[1][0].content
        nursery.cancel_scope.cancel()
    store.close()


async def test_the_live_conversation_is_read_ahead_only_in_a_pause_of_the_speech(
    tmp_path: Path,
) -> None:
    """While someone speaks or a turn waits for transcription, the model's threads stay off
    the cores the transcriber needs: the read-ahead waits for a pause."""
    from daemon.handlers.ask import read_live_context_ahead

    store, live, generator, asker = live_call(tmp_path)
    speaking = True
    asks = Calls()  # how often the loop asked whether speech is being heard

    def hearing() -> bool:
        asks.seen()
        return speaking

    after_asks = asks.after

    async with trio.open_nursery() as nursery:
        nursery.start_soon(partial(read_live_context_ahead, asker, lambda: live.id, hearing,
                                   period=0.001))
        await after_asks(5)
        assert generator.prefills == []  # speech all along: nothing read
        speaking = False
        await after_asks(2)  # the first found a pause; the second came after its read
        assert len(generator.prefills) == 1
        assert "Shall we start?" in generator.prefills[0][0].content
        nursery.cancel_scope.cancel()
    store.close()


async def test_a_question_they_just_asked_is_read_ahead_with_its_sources(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The hotkey's case: "them" asks, and in the pause that follows the model reads the whole
    prompt of the answer — the conversation, what recall found, the question."""
    from daemon.handlers.ask import read_live_context_ahead

    store = open_store(tmp_path / "data")
    past = store.create_session(title="Atlas planning", started_at=T0)
    store.append_turns(past.id, [NewTurn(speaker="them", text="The Atlas budget is 40,000 euros.",
                                         start=0)])
    store.end_session(past.id, ended_at=T0 + 60)
    (chunk,) = store.chunks(session_id=past.id)
    live = store.create_session(title="Atlas call", started_at=T0 + 3600)
    store.append_turns(live.id, [NewTurn(speaker="them", text="Good morning.", start=0)])
    generator = ScriptedGenerator([])
    asker = Asker(store, generator=lambda: generator, settings=Settings,
                  recall=lambda question, scope, k: [ItemKey("chunk", chunk.id)])
    looks = Calls()
    turns = store.turns

    def counted(session_id: int) -> list[Any]:
        looks.seen()
        return turns(session_id)

    async with trio.open_nursery() as nursery:
        monkeypatch.setattr(store, "turns", counted)
        nursery.start_soon(partial(read_live_context_ahead, asker, lambda: live.id,
                                   period=0.001))
        await looks.after(4)
        assert [m.role for m in generator.prefills[-1]] == ["system"]  # no question: the opening

        store.append_turns(live.id, [NewTurn(speaker="them", text="What is the Atlas budget?",
                                             start=4)])
        await looks.after(6)
        ahead = generator.prefills[-1]
        assert [m.role for m in ahead] == ["system", "user"]
        assert "What is the Atlas budget?" in ahead[1].content
        assert "40,000 euros" in ahead[0].content
        nursery.cancel_scope.cancel()
    store.close()


async def test_a_reading_ahead_stopped_by_speech_goes_on_in_the_next_pause(
    tmp_path: Path,
) -> None:
    """Speech that starts while the model reads ahead stops the reading (the transcriber
    needs the cores); the next pause reads on, though no turn was added meanwhile."""
    from daemon.handlers.ask import read_live_context_ahead

    store, live, generator, asker = live_call(tmp_path)
    # the loop's look for a pause, the reading's look for speech, the loop's look afterwards:
    # speech starts as the first reading begins and is over by the next look
    heard = iter([False, True, True, False, False, False])
    asks = Calls()

    def hearing() -> bool:
        asks.seen()
        return next(heard, False)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(partial(read_live_context_ahead, asker, lambda: live.id, hearing,
                                   period=0.001))
        await asks.after(6)
        assert generator.stopped_prefills == 1
        assert len(generator.prefills) == 1  # read on, though nothing new was said
        assert "Shall we start?" in generator.prefills[0][0].content
        nursery.cancel_scope.cancel()
    store.close()
