"""The language model's process killed in the middle of an answer while a live session is fed
through PulseAudio null sinks: the ask gets an error reply, no live turn is lost, the receipt
names no gap, and ``status`` shows the restart (real small models: whisper tiny.en,
Qwen2.5-Coder 0.5B, MiniLM)."""

from __future__ import annotations

import os
import shutil
import signal
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from askkit import LLM, Asking, foreground, foreground_pid, import_kept_sessions
from test_live_e2e import Events, turn_events, wait_for

from daemon.audio.testing import ME_SINK, THEM_SINK, PulseServer, speak
from daemon.errors import BrainCueError
from daemon.ipc.client import Client
from daemon.ipc.protocol import (
    TOPIC_STATUS,
    TOPIC_TURNS,
    AnswerToken,
    Start,
    Status,
    Stop,
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


@pytest.fixture
def daemon(pulse: PulseServer, installed_model: Callable[[str], Path],
           monkeypatch: pytest.MonkeyPatch) -> Iterator[DaemonProcess]:
    for name in ("whisper-tiny.en", LLM, "all-minilm-l6-v2"):
        installed_model(name)
    home = short_home()
    monkeypatch.setenv("BRAINCUE_HOME", str(home))
    monkeypatch.setenv("BRAINCUE_CAPTURE", "on")
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(pulse.runtime_dir))
    (home / "config").mkdir()
    (home / "config" / "config.toml").write_text(
        f'asr_model = "whisper-tiny.en"\nllm_model = "{LLM}"\n'
        'embed_model = "all-minilm-l6-v2"\nllm_threads = 2\n'
        # the call must not end by itself while the answer is slow on a busy machine
        "auto_end_silence_min = 60\n")
    process = start_daemon(home)
    try:
        yield process
    finally:
        process.stop(signal.SIGTERM)
        shutil.rmtree(home, ignore_errors=True)


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
    # every live turn is there, in order, and the receipt names nothing lost to the crash
    assert stopped.session_id == started.session_id and stopped.turns == 3
    assert [e.speaker for e in events.of(TurnEvent)] == ["me", "Them 1", "me"]
    assert stopped.receipt is not None
    assert all(g.cause == "capture starting" for g in stopped.receipt.gaps), stopped.receipt
    status = client.request(Status())
    process = foreground(status)
    assert (process.deaths, process.last_death) == (1, f"killed by {sig.name}")
    assert status.live is not None and status.live.dropped_blocks == 0
    assert "Traceback" not in daemon.log()
