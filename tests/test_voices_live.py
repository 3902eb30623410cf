"""Voices in the live pipeline, fast: the rig of test_live (synthetic blocks, scripted
transcriber, real store, mock clock) with a scripted voice encoder, or with none installed."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import trio
from test_diarize import ToneEncoder
from test_live import WORDS, dialogue, running

from daemon.config import Settings
from daemon.live.records import Ended, StartOptions
from daemon.store.store import Store
from daemon.voices.service import Voices

# the scripted encoder hears the rig's pitches 330 and 550 as two voices
PITCHES = {"ann": 330.0, "bob": 550.0, "cy": 440.0}


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path / "data")


async def test_loopback_voices_are_told_apart_and_the_mic_stays_me(
    autojump_clock: trio.testing.MockClock, store: Store
) -> None:
    settings = Settings(auto_start=False)
    voices = Voices(store, lambda: settings, Path("/nonexistent-models"),
                    encoder=ToneEncoder(PITCHES))
    async with running(store, settings=settings, voices=voices) as rig:
        started = await rig.live.start(StartOptions(title="weekly"))
        mic, loop = dialogue(("loopback", 330), ("mic", 220), ("loopback", 550),
                             ("loopback", 330), talk=2.0)
        await rig.play(mic, loop)
        await rig.live.stop()
    turns = store.turns(started.session_id)
    assert [(t.speaker, t.source, t.text) for t in turns] == [
        ("Them 1", "loopback", WORDS[330]),
        ("me", "mic", WORDS[220]),
        ("Them 2", "loopback", WORDS[550]),
        ("Them 1", "loopback", WORDS[330]),
    ]
    [ended] = rig.of(Ended)
    assert ended.speakers == ["Them 1", "me", "Them 2"]
    store.close()


async def test_without_a_voice_model_transcription_goes_on_and_says_why_once(
    autojump_clock: trio.testing.MockClock, store: Store, caplog: pytest.LogCaptureFixture,
    tmp_path: Path,
) -> None:
    settings = Settings(auto_start=False)
    models = tmp_path / "models"
    models.mkdir()
    (models / "resemblyzer-ge2e.npz").write_bytes(b"not a model")  # corrupt
    voices = Voices(store, lambda: settings, models)
    with caplog.at_level(logging.ERROR, logger="daemon.voices.service"):
        async with running(store, settings=settings, voices=voices) as rig:
            started = await rig.live.start(StartOptions())
            mic, loop = dialogue(("loopback", 330), ("loopback", 550))
            await rig.play(mic, loop)
            await rig.live.stop()
    assert [t.speaker for t in store.turns(started.session_id)] == ["them", "them"]
    [error] = [r.getMessage() for r in caplog.records]
    assert "\n" not in error and "corrupt" in error and "models install resemblyzer" in error
    assert voices.status().startswith("unavailable: the voice model")
    store.close()


def test_another_voice_model_installed_alone_is_not_loaded_as_the_voices_encoder(
    store: Store, tmp_path: Path
) -> None:
    models = tmp_path / "models"
    models.mkdir()
    (models / "campplus-zh-en.npz").write_bytes(b"CAM++ is bench.diarize's so far")
    voices = Voices(store, lambda: Settings(auto_start=False), models)
    assert voices.encoder() is None
    assert voices.status() == ("unavailable: model resemblyzer is not installed — run "
                               "`braincue models install resemblyzer`")
    store.close()


async def test_with_voices_switched_off_the_loopback_is_them_and_nothing_is_held(
    autojump_clock: trio.testing.MockClock, store: Store
) -> None:
    settings = Settings(auto_start=False, voices_enabled=False)
    voices = Voices(store, lambda: settings, Path("/nonexistent-models"),
                    encoder=ToneEncoder(PITCHES))
    async with running(store, settings=settings, voices=voices) as rig:
        started = await rig.live.start(StartOptions())
        mic, loop = dialogue(("loopback", 330), ("loopback", 550))
        await rig.play(mic, loop)
        await rig.live.stop()
    assert [t.speaker for t in store.turns(started.session_id)] == ["them", "them"]
    assert voices.heard() == [] and voices.status() == "off (voices_enabled is false)"
    store.close()
