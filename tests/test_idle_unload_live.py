"""The models unloaded when unused, through a real daemon: a call fed through PulseAudio null
sinks and an answer load the speech model's and the language model's processes; once both
were unused for ``idle_unload_min`` (set tiny here) their processes end and ``status`` says
since when; the next call is transcribed from its first word and the next question answered,
each starting its process again (real small models: whisper tiny.en, Qwen2.5-Coder 0.5B,
MiniLM)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from askkit import Asking, import_kept_sessions
from test_live_e2e import Events, capturing, turn_events, wait_for
from test_model_process_live import SAID, live_daemon

from clients.cli.status import status_lines
from daemon.audio.testing import PulseServer, speak
from daemon.ipc.client import Client
from daemon.ipc.protocol import (
    TOPIC_TURNS,
    AskReply,
    ModelProcessInfo,
    Start,
    Status,
    Stop,
    TurnEvent,
)
from daemon.ipc.testing import DaemonProcess

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


@pytest.fixture
def daemon(pulse: PulseServer, installed_model: Callable[[str], Path],
           monkeypatch: pytest.MonkeyPatch) -> Iterator[DaemonProcess]:
    # unused for 6 s: unloaded (looked for every second)
    yield from live_daemon(pulse, installed_model, monkeypatch, "idle_unload_min = 0.1",
                           "llm_read_ahead = false")


def processes(client: Client) -> dict[str, ModelProcessInfo]:
    return {p.role: p for p in client.request(Status()).model_processes
            if p.priority in ("foreground", "live")}


def all_unloaded(client: Client) -> dict[str, ModelProcessInfo] | None:
    found = processes(client)
    done = set(found) == {"llm", "asr"} and all(
        p.pid is None and p.unloaded_at is not None for p in found.values())
    return found if done else None


def a_call(client: Client, pulse: PulseServer, sink: str, wav: Path) -> TurnEvent:
    events = Events([TOPIC_TURNS])
    try:
        client.request(Start(title="call"))
        pulse.play(sink, wav)
        (turn,) = wait_for("the turn", lambda: turn_events(events, 1), 120)
        client.request(Stop())
    finally:
        events.close()
    return turn


def words(text: str) -> list[str]:
    return re.findall(r"[a-z]+", text.lower())


def answered() -> AskReply:
    asking = Asking()
    asking.start()
    reply = asking.join()
    assert isinstance(reply, AskReply), reply
    return reply


def test_unused_models_are_unloaded_and_the_next_call_and_question_load_them_again(
        pulse: PulseServer, daemon: DaemonProcess, tmp_path: Path) -> None:
    wavs = [speak(text, voice, tmp_path / f"said{i}.wav")
            for i, (_, voice, text) in enumerate(SAID)]
    client = Client(timeout=120)
    wait_for("capture on both sources", lambda: capturing(client))
    import_kept_sessions(client)
    first = answered()
    assert "48,000" in first.answer or "48000" in first.answer, first.answer
    loaded = {"llm": processes(client)["llm"]}  # each checked right after its use
    turn = a_call(client, pulse, SAID[0][0], wavs[0])
    assert words(turn.text)[:2] == words(SAID[0][2])[:2], turn.text
    loaded["asr"] = processes(client)["asr"]
    assert all(p.pid is not None and p.loaded_at is not None for p in loaded.values()), loaded

    # nothing used: both processes end, and status says so
    unloaded = wait_for("both models unloaded", lambda: all_unloaded(client), 120)
    for role in ("llm", "asr"):
        ended, began = unloaded[role].unloaded_at, loaded[role].loaded_at
        assert ended is not None and began is not None and ended > began
    shown = "\n".join(status_lines(client.request(Status())))
    assert "asr (live) not running (unloaded at" in shown, shown
    assert "llm (foreground) not running (unloaded at" in shown, shown
    assert "asr:" not in shown.split("models loaded: ")[1].splitlines()[0]

    # the other side's first words after it are heard, and the question is answered
    turn = a_call(client, pulse, SAID[1][0], wavs[1])
    assert words(turn.text)[:2] == words(SAID[1][2])[:2], turn.text
    reloaded = {"asr": processes(client)["asr"]}
    again = answered()
    assert "48,000" in again.answer or "48000" in again.answer, again.answer
    reloaded["llm"] = processes(client)["llm"]
    assert all(p.pid is not None and p.loaded_at is not None for p in reloaded.values())
    assert {p.pid for p in reloaded.values()}.isdisjoint({p.pid for p in loaded.values()})
    assert "Traceback" not in daemon.log()
