"""The live handlers without sockets: Start, Stop and ImportAudio through ``dispatch`` on the
rig of test_live (scripted transcriber, real store, mock clock), and every live event as the
subscribers see it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import trio.testing
from test_live import T0, WORDS, _write, dialogue, running, silence, tone

from daemon.handlers.live import register_live
from daemon.handlers.wire import live_event, live_status
from daemon.ipc import protocol
from daemon.ipc.dispatch import Handlers, dispatch
from daemon.ipc.protocol import (
    CarriedForward,
    Event,
    ImportAudio,
    ImportAudioReply,
    ImportProgress,
    SessionEnded,
    SessionStarted,
    Start,
    StartReply,
    StatusEvent,
    Stop,
    StopReply,
    TurnEvent,
)
from daemon.store.records import NewAssertion
from daemon.store.store import Store


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path / "data")


async def answer(handlers: Handlers, request: protocol.Request[Any],
                 published: list[Event] | None = None) -> protocol.Reply:
    sent = published if published is not None else []
    return protocol.decode_reply(await dispatch(handlers, protocol.encode(request), sent.append))


async def test_a_start_and_a_stop_answer_in_wire_types_and_their_events_convert(
    autojump_clock: trio.testing.MockClock, store: Store
) -> None:
    space = store.create_space("Atlas")
    earlier = store.create_session(space_id=space.id, title="kick-off", started_at=T0 - 86400)
    task = store.add_assertion(NewAssertion(
        kind="task", text="Send the deck to Ben", source="user", owner="me",
        space_id=space.id, session_id=earlier.id, occurred_at=T0 - 86000))
    async with running(store) as rig:
        handlers = Handlers()
        register_live(handlers, rig.live)
        started = await answer(handlers, Start(id="s", space="Atlas", title="weekly"))
        assert isinstance(started, StartReply)
        assert (started.id, started.space, started.title, started.activity) == (
            "s", "Atlas", "weekly", "meeting")
        assert started.carried_message == "1 open from last time"
        assert [(i.id, i.text, i.space, i.session_title) for i in started.carried] == [
            (task.id, "Send the deck to Ben", "Atlas", "kick-off")]
        await rig.play(*dialogue(("mic", 220), ("loopback", 330)))
        stopped = await answer(handlers, Stop(id="t"))
    assert isinstance(stopped, StopReply)
    assert (stopped.id, stopped.session_id, stopped.turns, stopped.space) == (
        "t", started.session_id, 2, "Atlas")

    events = [live_event(e) for e in rig.events]
    assert [type(e) for e in events] == [
        SessionStarted, CarriedForward, TurnEvent, TurnEvent, SessionEnded]
    began, carried, *said, ended = events
    assert isinstance(began, SessionStarted) and (began.session_id, began.space) == (
        started.session_id, "Atlas")
    assert isinstance(carried, CarriedForward) and carried.items == started.carried
    assert carried.message == started.carried_message
    turns = store.turns(started.session_id)
    assert said == [TurnEvent(session_id=t.session_id, turn_id=t.id, speaker=t.speaker,
                              source=t.source, start=t.start, end=t.end, text=t.text)
                    for t in turns]
    assert isinstance(ended, SessionEnded)
    assert (ended.session_id, ended.gist, ended.speakers) == (
        stopped.session_id, stopped.gist, ["me", "them"])
    assert ended.duration_s == stopped.duration_s


async def test_an_import_publishes_progress_for_its_request(
    autojump_clock: trio.testing.MockClock, store: Store, tmp_path: Path
) -> None:
    path = _write(tmp_path / "memo.wav", np.concatenate([silence(1), tone(2, 220), silence(1)]))
    published: list[Event] = []
    async with running(store) as rig:
        handlers = Handlers()
        register_live(handlers, rig.live)
        reply = await answer(handlers, ImportAudio(id="r1", path=str(path)), published)
        refused = await answer(handlers, ImportAudio(id="r2", path="memo.wav"), published)
    assert isinstance(reply, ImportAudioReply)
    assert (reply.id, reply.turns, reply.warnings) == ("r1", 1, [])
    assert [t.text for t in store.turns(reply.session_id)] == [WORDS[220]]
    progress = [e for e in published if isinstance(e, ImportProgress)]
    assert progress and all(p.request_id == "r1" for p in progress)
    assert (progress[-1].done_s, progress[-1].turns) == (reply.duration_s, 1)
    assert isinstance(refused, protocol.Error) and "not absolute" in refused.message
    [ended] = [live_event(e) for e in rig.events]
    assert isinstance(ended, SessionEnded) and ended.session_id == reply.session_id


async def test_a_pause_is_told_as_a_status_event(
    autojump_clock: trio.testing.MockClock, store: Store
) -> None:
    async with running(store) as rig:
        await rig.live.pause(True)
        status = rig.live.status()
    assert [live_event(e) for e in rig.events] == [
        StatusEvent(capture="paused", message="listening paused")]
    wire = live_status(status)
    assert {name: s.state for name, s in wire.sources.items()} == {
        "mic": "paused", "loopback": "paused"}
    assert (wire.session_id, wire.asr_model, wire.utterances_queued) == (None, "scripted", 0)
