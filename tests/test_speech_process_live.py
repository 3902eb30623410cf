"""The speech model's process killed (SIGKILL, SIGSEGV) while it transcribes an utterance of a
live session fed through PulseAudio null sinks: capture never stops, the utterance is
transcribed again by the restarted process, or, when that one dies too, listed as not
transcribed in the session's receipt with its times; ``status`` shows the restarts; with
``asr_process = false`` whisper runs in the daemon (real whisper tiny.en)."""

from __future__ import annotations

import os
import re
import signal
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from test_live_e2e import Events, capturing, turn_events, wait_for
from test_model_process_live import SAID, live_daemon

from clients.cli.status import status_lines
from daemon.audio.testing import PulseServer, speak
from daemon.ipc.client import Client
from daemon.ipc.protocol import (
    TOPIC_STATUS,
    TOPIC_TURNS,
    ModelProcessInfo,
    Start,
    Status,
    StatusEvent,
    Stop,
    StopReply,
    TurnEvent,
)
from daemon.ipc.testing import DaemonProcess

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


@pytest.fixture
def daemon(pulse: PulseServer, installed_model: Callable[[str], Path],
           monkeypatch: pytest.MonkeyPatch) -> Iterator[DaemonProcess]:
    yield from live_daemon(pulse, installed_model, monkeypatch, "llm_read_ahead = false")


@pytest.fixture
def in_process_daemon(pulse: PulseServer, installed_model: Callable[[str], Path],
                      monkeypatch: pytest.MonkeyPatch) -> Iterator[DaemonProcess]:
    yield from live_daemon(pulse, installed_model, monkeypatch, "llm_read_ahead = false",
                           "asr_process = false")


def speech_process(client: Client) -> ModelProcessInfo | None:
    found = [p for p in client.request(Status()).model_processes if p.role == "asr"]
    return found[0] if found else None


def speech_pid(client: Client) -> int | None:
    return None if (p := speech_process(client)) is None else p.pid


def transcribing(client: Client) -> bool | None:
    """Whether an utterance waits for the speech model or is being transcribed."""
    live = client.request(Status()).live
    return True if live is not None and live.utterances_queued else None


def kill_mid_utterance(client: Client, pulse: PulseServer, wav: Path, sig: signal.Signals,
                       deaths: int) -> list[int]:
    """Play ``wav`` into the other side's sink while the speech process is stopped, and once
    its utterance is handed to the process, kill it with ``sig``; then kill each process
    started again for it, ``deaths`` processes in all. The pids killed."""
    first = wait_for("the speech model's process", lambda: speech_pid(client), 60)
    os.kill(first, signal.SIGSTOP)  # the utterance is certainly in flight when it dies
    speaker = threading.Thread(target=pulse.play, args=(SAID[1][0], wav))
    speaker.start()
    wait_for("the utterance handed to the speech model", lambda: transcribing(client), 120)
    killed = [first]
    os.kill(first, sig)
    os.kill(first, signal.SIGCONT)  # a stopped process takes no signal but SIGKILL
    while len(killed) < deaths:  # the next one dies as soon as it is started
        pid = wait_for("a new speech process",
                       lambda: p if (p := speech_pid(client)) not in (None, *killed) else None,
                       60)
        os.kill(pid, sig)
        killed.append(pid)
    speaker.join()
    return killed


def said_with_a_crash(pulse: PulseServer, tmp_path: Path, sig: signal.Signals,
                      deaths: int) -> tuple[StopReply, Events, Client]:
    wavs = [speak(text, voice, tmp_path / f"said{i}.wav")
            for i, (_, voice, text) in enumerate(SAID)]
    client = Client(timeout=120)
    events = Events([TOPIC_TURNS, TOPIC_STATUS])
    try:
        wait_for("capture on both sources", lambda: capturing(client))
        started = client.request(Start(title="call"))
        pulse.play(SAID[0][0], wavs[0])
        wait_for("the first turn", lambda: turn_events(events, 1), 120)
        kill_mid_utterance(client, pulse, wavs[1], sig, deaths)
        pulse.play(SAID[2][0], wavs[2])
        wait_for("the last turn", lambda: turn_events(events, 4 - deaths), 120)
        assert capturing(client), "capture stopped"
        stopped = client.request(Stop())
    finally:
        events.close()
    assert stopped.session_id == started.session_id
    return stopped, events, client


def heard(said: str, text: str) -> bool:
    """Whether ``text`` holds most words of ``said`` (whisper tiny.en mishears a word or two
    of espeak's voices, differently with the threads it is given)."""
    words = set(re.findall(r"[a-z]+", said.lower()))
    return len(words & set(re.findall(r"[a-z]+", text.lower()))) >= len(words) / 2


def restarted(client: Client, deaths: int, sig: signal.Signals) -> None:
    status = client.request(Status())
    assert status.live is not None and status.live.dropped_blocks == 0
    process = speech_process(client)
    assert process is not None and (process.deaths, process.last_death) == (
        deaths, f"killed by {sig.name}")
    assert (f"asr (live) pid {process.pid}, restarted {deaths} time"
            f"{'s' if deaths > 1 else ''} (last: killed by {sig.name})"
            in "\n".join(status_lines(status)))


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGSEGV], ids=["SIGKILL", "SIGSEGV"])
def test_the_speech_process_killed_mid_utterance_loses_no_live_turn(
        pulse: PulseServer, daemon: DaemonProcess, tmp_path: Path, sig: signal.Signals) -> None:
    stopped, events, client = said_with_a_crash(pulse, tmp_path, sig, deaths=1)

    # the utterance it was transcribing was transcribed by the restarted process
    turns = events.of(TurnEvent)
    assert [t.speaker for t in turns] == ["me", "Them 1", "me"] and stopped.turns == 3
    assert all(heard(said, t.text) for (_, _, said), t in zip(SAID, turns, strict=True)), turns
    assert stopped.receipt is not None
    assert all(g.cause == "capture starting" for g in stopped.receipt.gaps), stopped.receipt
    restarted(client, 1, sig)
    told = [e.message for e in events.of(StatusEvent)]
    assert any(f"the speech model was killed by {sig.name}" in m for m in told), told
    log = daemon.log()
    assert "asking again after its process died" in log and "Traceback" not in log


def test_an_utterance_whose_speech_process_dies_twice_is_listed_in_the_receipt(
        pulse: PulseServer, daemon: DaemonProcess, tmp_path: Path) -> None:
    stopped, events, client = said_with_a_crash(pulse, tmp_path, signal.SIGKILL, deaths=2)

    first, last = events.of(TurnEvent)  # what was said before and after was heard
    assert (first.speaker, last.speaker) == ("me", "me") and stopped.turns == 2
    assert heard(SAID[0][2], first.text) and heard(SAID[2][2], last.text), (first, last)
    assert stopped.receipt is not None
    (lost,) = [g for g in stopped.receipt.gaps if g.cause != "capture starting"]
    assert (lost.source, lost.cause) == ("loopback", "not transcribed"), lost
    assert "speech model's process was killed by SIGKILL" in lost.detail, lost
    # its times: the other side's sentence, between the two turns heard
    assert first.end <= lost.start < lost.end <= last.start
    assert 2.0 < lost.end - lost.start < 10.0, lost
    assert "heard but not transcribed" in stopped.receipt.text, stopped.receipt.text
    restarted(client, 2, signal.SIGKILL)
    assert "Traceback" not in daemon.log()


def test_with_asr_process_off_whisper_runs_in_the_daemon(
        pulse: PulseServer, in_process_daemon: DaemonProcess, tmp_path: Path) -> None:
    wav = speak(SAID[0][2], SAID[0][1], tmp_path / "said.wav")
    client = Client(timeout=120)
    events = Events([TOPIC_TURNS])
    try:
        wait_for("capture on both sources", lambda: capturing(client))
        client.request(Start(title="call"))
        pulse.play(SAID[0][0], wav)
        (turn,) = wait_for("the turn", lambda: turn_events(events, 1), 120)
        client.request(Stop())
    finally:
        events.close()
    assert heard(SAID[0][2], turn.text), turn
    status = client.request(Status())
    assert "asr:whisper-tiny.en" in status.models_loaded
    assert [p.role for p in status.model_processes if p.role == "asr"] == []
    assert "speech model whisper-tiny.en: process" not in in_process_daemon.log()
