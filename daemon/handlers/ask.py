"""Handlers for asking: Ask (streamed), AskCancel, and ListAssertions (what is believed now).

An Ask streams its answer as AnswerToken events on ``answer_topic(id)``, then AnswerDone, then
replies with the checked answer and its sources. It stops early on AskCancel, or when the
client that subscribed to its topic goes away (its last subscriber unsubscribes or
disconnects): nobody would read the rest.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager
from functools import partial

import trio

from daemon.config import Settings
from daemon.errors import BrainCueError, InvalidInput, ModelNotInstalled, NotFound
from daemon.handlers.context import Context
from daemon.handlers.wire import ask_reply, assertion_infos, evidence_infos
from daemon.ipc.dispatch import Handlers, Publish
from daemon.ipc.protocol import (
    AnswerDone,
    AnswerEvidence,
    AnswerToken,
    Ask,
    AskCancel,
    AskReply,
    AssertionInfo,
    AssertionsReply,
    ListAssertions,
    Ok,
    answer_topic,
)
from daemon.memory.ask import Asker, search_recall
from daemon.memory.evidence import Evidence
from daemon.store.scope import Scope
from daemon.store.store import Store

WatchSubscribers = Callable[[str], AbstractContextManager[trio.Event]]
READ_AHEAD_S = 0.5  # how often a live session is looked at for turns the model has not read
log = logging.getLogger(__name__)


async def register(daemon: Context) -> None:
    """The daemon part: answers from the daemon's store, search and language model."""

    def live_session() -> int | None:
        live = daemon.live
        return None if live is None or live.session is None else live.session.id

    asker = Asker(daemon.store, generator=daemon.engines.generator,
                  settings=lambda: daemon.settings,
                  recall=search_recall(daemon.store, lambda: daemon.settings,
                                       daemon.engines.reranker),
                  live_session=live_session)
    register_ask(daemon.handlers, daemon.store, asker, lambda: daemon.settings,
                 daemon.watch_subscribers)
    def live_to_read() -> int | None:
        return live_session() if daemon.settings.llm_read_ahead else None

    def hearing() -> bool:
        return daemon.live is not None and daemon.live.hearing()

    async def session_begins() -> None:
        if daemon.live is not None:
            await daemon.live.wait_for_session()

    daemon.nursery.start_soon(partial(read_live_context_ahead, asker, live_to_read, hearing,
                                      questions=lambda: daemon.settings.llm_read_question_ahead,
                                      session_begins=session_begins))


async def read_live_context_ahead(
    asker: Asker,
    live_session: Callable[[], int | None],
    hearing: Callable[[], bool] = lambda: False,
    period: float = READ_AHEAD_S,
    questions: Callable[[], bool] = lambda: True,
    session_begins: Callable[[], Awaitable[None]] | None = None,
) -> None:
    """While a session is live, have the model read the conversation as it grows (the model
    stays loaded meanwhile): a question asked during the call then costs only its own tokens
    and its sources, not the instructions and the whole conversation again. When "them" just
    asked a question (and ``questions()`` holds), the model reads its whole prompt instead —
    the conversation, the sources recalled for it and the question
    (``Asker.read_question_ahead``) —, so the hotkey's answer to it starts with the model's
    first word.

    It reads in the pauses (``hearing`` false: nobody speaking, nothing waiting for
    transcription), and stops reading when someone speaks again (it goes on in the next pause):
    on two cores the model's threads would otherwise take the cores the next turn's
    transcription needs. Between sessions it waits for one (``session_begins``), looking at
    nothing."""
    read: tuple[int, int] | None = None  # (session, turns) read last
    while True:
        if session_begins is not None and live_session() is None:
            await session_begins()
        await trio.sleep(period)
        if hearing():
            continue
        session = live_session()
        if session is None:
            read = None
            continue
        turns = len(await asker.store.run(asker.store.turns, session))
        if read == (session, turns):
            continue
        try:
            if not (questions() and await asker.read_question_ahead(session, stop=hearing)):
                await asker.read_ahead(session, stop=hearing)
        except ModelNotInstalled:
            pass  # no language model: nothing to read ahead with
        except BrainCueError as e:
            log.warning("reading the live conversation ahead failed: %s", e)
        # stopped by speech: read on in the next pause
        read = None if hearing() else (session, turns)


def register_ask(
    handlers: Handlers,
    store: Store,
    asker: Asker,
    settings: Callable[[], Settings],
    watch_subscribers: WatchSubscribers,
) -> None:
    streaming: dict[str, trio.Event] = {}  # request id -> set to stop its answer

    async def ask(request: Ask, publish: Publish) -> AskReply:
        if request.id in streaming:
            raise InvalidInput(f"an answer to request {request.id!r} is already streaming",
                               fix="give each Ask its own request id")
        stop = streaming[request.id] = trio.Event()

        def send(token: str) -> None:
            publish(AnswerToken(request_id=request.id, token=token))

        def show(evidence: list[Evidence]) -> None:
            publish(AnswerEvidence(request_id=request.id, evidence=evidence_infos(evidence)))

        try:
            with watch_subscribers(answer_topic(request.id)) as left:
                async with trio.open_nursery() as nursery:

                    async def stop_when_nobody_listens() -> None:
                        await left.wait()
                        stop.set()

                    nursery.start_soon(stop_when_nobody_listens)
                    answer = await asker.ask(request.question, request.space, request.session,
                                             on_token=send, stop=stop, on_evidence=show)
                    nursery.cancel_scope.cancel()
        finally:
            del streaming[request.id]
        publish(AnswerDone(request_id=request.id, cancelled=answer.cancelled))
        return ask_reply(answer)

    async def cancel(request: AskCancel) -> Ok:
        stop = streaming.get(request.request_id)
        if stop is None:
            raise NotFound(f"no answer to request {request.request_id!r} is streaming",
                           fix="it may have finished already")
        stop.set()
        return Ok()

    async def list_assertions(request: ListAssertions) -> AssertionsReply:
        def read() -> list[AssertionInfo]:
            space_id = store.space_id(request.space)
            scope = Scope(space_id=space_id, person_memory=settings().memory_enabled)
            kinds = set(request.kinds)
            found = [a for a in store.current_assertions(scope) if not kinds or a.kind in kinds]
            return assertion_infos(store, found)

        return AssertionsReply(assertions=await store.run(read))

    handlers.add_streaming(Ask, ask)
    handlers.add(AskCancel, cancel)
    handlers.add(ListAssertions, list_assertions)
