"""The language model's process killed in the middle of an answer, and in the middle of a keep,
while a live session is fed through PulseAudio null sinks: the ask gets an error reply, the
keep is finished by the restarted process, no live turn is lost, the receipt names no gap, and
``status`` shows the restart (real small models: whisper tiny.en, Qwen2.5-Coder 0.5B,
MiniLM)."""

from __future__ import annotations

import os
import shutil
import signal
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from askkit import LLM, Asking, foreground_pid, import_kept_sessions, transcript
from test_live_e2e import Events, turn_events, wait_for

from clients.cli.status import status_lines
from daemon.audio.testing import ME_SINK, THEM_SINK, PulseServer, speak
from daemon.errors import BrainCueError
from daemon.ipc.client import Client
from daemon.ipc.protocol import (
    TOPIC_STATUS,
    TOPIC_TURNS,
    AddSpace,
    AnswerToken,
    ImportTranscript,
    ModelProcessInfo,
    Remember,
    RememberReply,
    ShowSession,
    Start,
    StartReply,
    Status,
    Stop,
    StopReply,
    TurnEvent,
    answer_topic,
)
from daemon.ipc.testing import DaemonProcess, short_home, start_daemon

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

SAID = [
    (ME_SINK, "en-us", "Good morning, thanks for joining the call about the budget."),
    (THEM_SINK, "en-gb+f3", "Happy to help. We finished the new website yesterday."),
    (ME_SINK, "en-us", "I will ask Maria to test the payment page tomorrow."),
]


# a short project meeting to keep: a decision and a commitment, said plainly
MEETING = [
    ("them", "Let's settle the Atlas launch. We decided to launch Atlas on March 3rd, "
             "not in February."),
    ("me", "Good. Then the press release goes out the same morning."),
    ("them", "Priya will send the revised budget by Friday."),
]


def live_daemon(pulse: PulseServer, installed_model: Callable[[str], Path],
                monkeypatch: pytest.MonkeyPatch, *config: str) -> Iterator[DaemonProcess]:
    """A capturing daemon on the real small models, with the lines ``config`` added."""
    for name in ("whisper-tiny.en", LLM, "all-minilm-l6-v2"):
        installed_model(name)
    home = short_home()
    monkeypatch.setenv("BRAINCUE_HOME", str(home))
    monkeypatch.setenv("BRAINCUE_CAPTURE", "on")
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(pulse.runtime_dir))
    (home / "config").mkdir()
    (home / "config" / "config.toml").write_text("\n".join([
        'asr_model = "whisper-tiny.en"', f'llm_model = "{LLM}"',
        'embed_model = "all-minilm-l6-v2"', "llm_threads = 2",
        # the call must not end by itself while the model is slow on a busy machine
        "auto_end_silence_min = 60", *config]) + "\n")
    process = start_daemon(home)
    try:
        yield process
    finally:
        process.stop(signal.SIGTERM)
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture
def daemon(pulse: PulseServer, installed_model: Callable[[str], Path],
           monkeypatch: pytest.MonkeyPatch) -> Iterator[DaemonProcess]:
    yield from live_daemon(pulse, installed_model, monkeypatch)


@pytest.fixture
def keeping_daemon(pulse: PulseServer, installed_model: Callable[[str], Path],
                   monkeypatch: pytest.MonkeyPatch) -> Iterator[DaemonProcess]:
    """A daemon whose keeps run their model through a live call (not paused until it ends)."""
    yield from live_daemon(pulse, installed_model, monkeypatch, "keep_pauses_while_live = false")


def background_pid(client: Client) -> int | None:
    """The pid of the keeps' language-model process (None: not running, or none made yet)."""
    found = [p.pid for p in client.request(Status()).model_processes
             if p.priority == "background"]
    return found[0] if found else None


def restarted_once(client: Client, priority: str, sig: signal.Signals, started: StartReply,
                   stopped: StopReply, events: Events) -> ModelProcessInfo:
    """Every live turn of the call is there, in order, the receipt names nothing lost to the
    crash, and ``status`` shows the process of ``priority`` restarted once after ``sig``."""
    assert stopped.session_id == started.session_id and stopped.turns == 3
    assert [e.speaker for e in events.of(TurnEvent)] == ["me", "Them 1", "me"]
    assert stopped.receipt is not None
    assert all(g.cause == "capture starting" for g in stopped.receipt.gaps), stopped.receipt
    status = client.request(Status())
    assert status.live is not None and status.live.dropped_blocks == 0
    (process,) = [p for p in status.model_processes if p.priority == priority]
    assert (process.deaths, process.last_death) == (1, f"killed by {sig.name}")
    assert f"restarted 1 time (last: killed by {sig.name})" in "\n".join(status_lines(status))
    return process


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGSEGV], ids=["SIGKILL", "SIGSEGV"])
def test_the_model_process_killed_mid_answer_during_a_call_loses_no_live_turn(
        pulse: PulseServer, daemon: DaemonProcess, tmp_path: Path, sig: signal.Signals) -> None:
    wavs = [speak(text, voice, tmp_path / f"said{i}.wav")
            for i, (_, voice, text) in enumerate(SAID)]
    client = Client(timeout=120)
    import_kept_sessions(client)
    events = Events([TOPIC_TURNS, TOPIC_STATUS])
    asking = Asking()
    try:
        started = client.request(Start(title="call"))
        pulse.play(SAID[0][0], wavs[0])
        wait_for("the first turn", lambda: turn_events(events, 1), 120)
        with Client(timeout=60) as tokens_client, \
                tokens_client.subscribe([answer_topic(asking.request.id)]) as tokens:
            asking.start()
            while True:
                event = tokens.receive(900)
                assert event is not None, "no answer token within 15 minutes"
                if isinstance(event, AnswerToken):
                    break
            # the other side speaks while the model's process dies
            speaker = threading.Thread(target=pulse.play, args=(SAID[1][0], wavs[1]))
            speaker.start()
            killed = foreground_pid(client)
            assert killed is not None and killed != daemon.pid
            os.kill(killed, sig)
            speaker.join()
        reply = asking.join()
        pulse.play(SAID[2][0], wavs[2])
        wait_for("every turn", lambda: turn_events(events, 3), 120)
        stopped = client.request(Stop())
    finally:
        events.close()

    assert isinstance(reply, BrainCueError), reply
    assert f"killed by {sig.name}" in str(reply)
    restarted_once(client, "foreground", sig, started, stopped, events)
    assert "Traceback" not in daemon.log()


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGSEGV], ids=["SIGKILL", "SIGSEGV"])
def test_the_model_process_killed_mid_keep_during_a_call_finishes_the_keep(
        pulse: PulseServer, keeping_daemon: DaemonProcess, tmp_path: Path,
        sig: signal.Signals) -> None:
    wavs = [speak(text, voice, tmp_path / f"said{i}.wav")
            for i, (_, voice, text) in enumerate(SAID)]
    client = Client(timeout=120)
    client.request(AddSpace(name="Atlas", activity="project"))
    kept = client.request(ImportTranscript(content=transcript("Atlas sync", 0, MEETING),
                                           space="Atlas"), timeout=120).session.id
    events = Events([TOPIC_TURNS, TOPIC_STATUS])
    outcome: list[RememberReply | BrainCueError] = []

    def keep() -> None:
        try:
            outcome.append(Client(timeout=900).request(
                Remember(session_id=kept, answer="keep"), timeout=900))
        except BrainCueError as e:
            outcome.append(e)

    keeper = threading.Thread(target=keep)
    try:
        started = client.request(Start(title="call"))
        pulse.play(SAID[0][0], wavs[0])
        wait_for("the first turn", lambda: turn_events(events, 1), 120)
        keeper.start()
        # the keep's process starts for its first model call: it is killed serving it, while
        # the other side speaks
        killed = wait_for("the keep's model process", lambda: background_pid(client), 120)
        assert killed != keeping_daemon.pid
        speaker = threading.Thread(target=pulse.play, args=(SAID[1][0], wavs[1]))
        speaker.start()
        os.kill(killed, sig)
        speaker.join()
        pulse.play(SAID[2][0], wavs[2])
        wait_for("every turn", lambda: turn_events(events, 3), 120)
        keeper.join()
        stopped = client.request(Stop())
    finally:
        events.close()
        if keeper.is_alive():
            keeper.join()

    # the keep finished on the restarted process: its archive and assertions are written
    (reply,) = outcome
    assert isinstance(reply, RememberReply), reply
    assert reply.archived and reply.assertions >= 1, reply
    shown = client.request(ShowSession(session_id=kept))
    assert shown.session.keep_status == "done", shown.session
    assert shown.archive is not None and "March 3" in shown.archive, shown.archive
    assert any(a.kind == "decision" and "March 3" in a.text for a in shown.assertions), \
        shown.assertions
    background = restarted_once(client, "background", sig, started, stopped, events)
    assert background.pid not in (None, killed)
    assert "asking again after its process died" in keeping_daemon.log()
    assert "Traceback" not in keeping_daemon.log()
