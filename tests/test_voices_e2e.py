"""Voices live, end to end: a real daemon, PulseAudio null sinks, three espeak-ng voices on the
loopback and one on the microphone, whisper tiny.en and the real voice model (CAM++, the
daemon's encoder when installed)."""

from __future__ import annotations

import time
from itertools import groupby
from pathlib import Path

import pytest
from test_live_e2e import Events, daemon, wait_for  # noqa: F401  (fixtures)

from daemon.audio.testing import ME_SINK, THEM_SINK, PulseServer, speak
from daemon.ipc.client import Client
from daemon.ipc.protocol import (
    TOPIC_SESSIONS,
    SessionEnded,
    ShowSession,
    Start,
    Stop,
    VoiceName,
    VoicesList,
)
from daemon.ipc.testing import DaemonProcess

pytestmark = pytest.mark.slow

PAUSE_S = 1.2
# voices the encoders tell apart (whole utterances, all four voices: cosine 0.12-0.54 between
# them and 0.69-0.88 within each with CAM++, the daemon's; 0.43-0.79 and 0.82-0.89 with GE2E)
VOICES = {"me": "en-us", "ann": "en-us+f4", "bob": "en+m7", "cy": "en+whisper"}
DIALOGUE = [
    ("me", "Thanks for joining. Let us go through the launch plan."),
    ("ann", "The website is finished and the payment page passed its tests."),
    ("bob", "Support is ready too. We trained four new people last week."),
    ("cy", "Marketing will send the newsletter on Monday morning."),
    ("ann", "Then we can launch on Tuesday, if nobody objects."),
    ("bob", "Tuesday is fine for the support team."),
    ("me", "Good, Tuesday it is."),
    ("cy", "I will update the newsletter with the new date today."),
]


@pytest.fixture(scope="module")
def wavs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    folder = tmp_path_factory.mktemp("three-voices")
    return [speak(text, VOICES[who], folder / f"{i}.wav")
            for i, (who, text) in enumerate(DIALOGUE)]


def talk(pulse: PulseServer, turns: list[tuple[str, Path]]) -> None:
    for who, wav in turns:
        pulse.play(ME_SINK if who == "me" else THEM_SINK, wav)
        time.sleep(PAUSE_S)  # the dialogue's pace; nothing waits for the daemon here


def session_runs(client: Client, session_id: int) -> list[str]:
    turns = client.request(ShowSession(session_id=session_id)).turns
    print("\n" + "\n".join(f"  {t.speaker:7} {t.source:8} {t.text}" for t in turns))
    return [speaker for speaker, _ in groupby(t.speaker for t in turns)]


def test_three_voices_on_the_loopback_are_three_speakers_and_a_name_is_recognised(
    pulse: PulseServer, daemon: DaemonProcess, wavs: list[Path],  # noqa: F811
) -> None:
    client = Client(timeout=120)
    events = Events([TOPIC_SESSIONS])
    try:
        first = client.request(Start(title="launch plan"))
        talk(pulse, [(who, wav) for (who, _), wav in zip(DIALOGUE, wavs, strict=True)])
        client.request(Stop())
        wait_for("the keep prompt", lambda: events.of(SessionEnded) or None)
        runs = session_runs(client, first.session_id)
        expected = {"me": "me", "ann": "Them 1", "bob": "Them 2", "cy": "Them 3"}
        assert runs == [expected[who] for who, _ in DIALOGUE]

        named = client.request(VoiceName(voice="Them 2", name="Bob",
                                         session_id=first.session_id))
        assert named.voice.name == "Bob" and named.voice.turns == 2
        assert session_runs(client, first.session_id).count("Bob") == 2

        second = client.request(Start(title="follow-up"))
        talk(pulse, [(who, wav) for (who, _), wav in zip(DIALOGUE, wavs, strict=True)
                     if who in ("cy", "bob")])
        client.request(Stop())
        # Bob is this session's first voice (Them 1, shown by name), the other one Them 2
        assert session_runs(client, second.session_id) == ["Bob", "Them 2", "Bob", "Them 2"]
        listed = client.request(VoicesList())
        assert [v.name for v in listed.voices] == ["Bob"] and listed.state == "on"
        assert listed.model_id == "campplus-zh-en"  # the daemon's encoder where installed
    finally:
        events.close()
