"""Voices in the live pipeline, fast: the rig of test_live (synthetic blocks, scripted
transcriber, real store, mock clock) with a scripted voice encoder, or with none installed;
which encoder runs (CAM++ when installed, GE2E otherwise or when set) and with what thresholds."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest
import trio
from test_diarize import ToneEncoder
from test_live import WORDS, dialogue, running

from daemon.config import Settings
from daemon.live.records import Ended, StartOptions
from daemon.models.convert_resemblyzer import EXPECTED_SHAPES as GE2E_SHAPES
from daemon.models.convert_resemblyzer import write_npz
from daemon.models.registry import ENTRIES, PREFERENCE, lookup
from daemon.store.store import Store
from daemon.voices import naming, service
from daemon.voices.diarize import DiarizeConfig, WindowEmbedder
from daemon.voices.encoder import VoiceEncoder
from daemon.voices.service import Voices

# the scripted encoder hears the rig's pitches 330 and 550 as two voices
PITCHES = {"ann": 330.0, "bob": 550.0, "cy": 440.0}


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path / "data")


async def two_loopback_speakers(store: Store, settings: Settings, voices: Voices) -> list[str]:
    """The speakers of a call in which two voices take turns on the loopback, one turn each."""
    async with running(store, settings=settings, voices=voices) as rig:
        started = await rig.live.start(StartOptions())
        mic, loop = dialogue(("loopback", 330), ("loopback", 550))
        await rig.play(mic, loop)
        await rig.live.stop()
    return [t.speaker for t in store.turns(started.session_id)]


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


@pytest.mark.parametrize("model", ["campplus-zh-en", "resemblyzer"])
async def test_without_a_voice_model_transcription_goes_on_and_says_why_once(
    autojump_clock: trio.testing.MockClock, store: Store, caplog: pytest.LogCaptureFixture,
    tmp_path: Path, model: str,
) -> None:
    settings = Settings(auto_start=False)
    models = tmp_path / "models"
    models.mkdir()
    (models / lookup(model).filename).write_bytes(b"not a model")  # corrupt, and the only one
    voices = Voices(store, lambda: settings, models)
    with caplog.at_level(logging.ERROR, logger="daemon.voices.service"):
        assert await two_loopback_speakers(store, settings, voices) == ["them", "them"]
    [error] = [r.getMessage() for r in caplog.records]
    assert "\n" not in error and "corrupt" in error and f"models install {model}" in error
    assert voices.status().startswith("unavailable: the voice model")
    assert voices.model_id == ""
    store.close()


def test_a_voice_model_installed_while_the_daemon_runs_is_used_without_a_restart(
    store: Store, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    models = tmp_path / "models"
    models.mkdir()
    voices = Voices(store, lambda: Settings(auto_start=False), models)
    with caplog.at_level(logging.ERROR, logger="daemon.voices.service"):
        assert voices.encoder() is None and voices.encoder() is None
    assert len(caplog.records) == 1  # said once, not at every utterance
    assert voices.status().startswith("unavailable: ")

    write_npz(models / lookup("resemblyzer").filename,  # `braincue models install resemblyzer`
              {name: np.zeros(shape, np.float32) for name, shape in GE2E_SHAPES.items()})

    assert isinstance(voices.encoder(), VoiceEncoder)
    assert (voices.status(), voices.model_id) == ("on", "resemblyzer-ge2e")
    store.close()


@pytest.fixture
def models(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Both voice models installed: GE2E's file loads (zeros of its shapes), CAM++'s file is a
    stand-in its loader (replaced) turns into the scripted encoder."""
    folder = tmp_path / "models"
    folder.mkdir()
    write_npz(folder / lookup("resemblyzer").filename,
              {name: np.zeros(shape, np.float32) for name, shape in GE2E_SHAPES.items()})
    (folder / lookup("campplus-zh-en").filename).write_bytes(b"CAM++")
    real = service.ENCODERS["campplus-zh-en"]

    def load(path: Path) -> ToneEncoder:
        if path.read_bytes() != b"CAM++":
            real.load(path)  # the real loader's errors
        return ToneEncoder(PITCHES)

    monkeypatch.setitem(service.ENCODERS, "campplus-zh-en",
                        service.VoiceModel(load, real.model_id, real.config))
    return folder


def test_cam_plus_plus_runs_when_installed_with_its_own_thresholds_ge2e_when_set(
    store: Store, models: Path
) -> None:
    voices = Voices(store, lambda: Settings(auto_start=False), models)
    assert isinstance(voices.encoder(), ToneEncoder)
    assert (voices.model_id, voices.status()) == ("campplus-zh-en", "on")
    fitted = naming.fitted("campplus-zh-en")  # when a voice is named: the fitted data file
    assert fitted is not None and fitted.named_voice > fitted.suggest_voice
    assert (voices.config.change_below, voices.config.same_voice, voices.config.named_voice,
            voices.config.suggest_voice) == (0.4, 0.5, fitted.named_voice, fitted.suggest_voice)
    assert voices.session(1).config == voices.config  # what a session's voices run with

    ge2e = Voices(store, lambda: Settings(auto_start=False, voice_model="resemblyzer"), models)
    assert isinstance(ge2e.encoder(), VoiceEncoder)
    assert (ge2e.model_id, ge2e.config) == ("resemblyzer-ge2e", DiarizeConfig())
    store.close()


def test_a_corrupt_cam_plus_plus_is_said_in_one_line_and_ge2e_runs(
    store: Store, models: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (models / lookup("campplus-zh-en").filename).write_bytes(b"not a model")
    voices = Voices(store, lambda: Settings(auto_start=False), models)
    with caplog.at_level(logging.ERROR, logger="daemon.voices.service"):
        assert isinstance(voices.encoder(), VoiceEncoder)
        voices.encoder()
    [error] = [r.getMessage() for r in caplog.records]
    assert "\n" not in error and "campplus-zh-en" in error and "corrupt" in error
    assert (voices.model_id, voices.config) == ("resemblyzer-ge2e", DiarizeConfig())
    assert voices.status().startswith("on, by resemblyzer, not campplus-zh-en: the voice model")
    # set by name, a missing model is not replaced by another
    (models / lookup("campplus-zh-en").filename).unlink()
    wanted = Voices(store, lambda: Settings(auto_start=False, voice_model="campplus-zh-en"),
                    models)
    assert wanted.encoder() is None
    assert wanted.status() == ("unavailable: model campplus-zh-en is not installed — run "
                               "`braincue models install campplus-zh-en`")
    store.close()


def test_every_voice_model_of_the_registry_has_an_encoder_and_thresholds() -> None:
    assert sorted(service.ENCODERS) == sorted(e.name for e in ENTRIES if e.role == "voice")
    assert PREFERENCE["voice"][0] == "campplus-zh-en"


async def test_with_voices_switched_off_the_loopback_is_them_and_nothing_is_held(
    autojump_clock: trio.testing.MockClock, store: Store
) -> None:
    settings = Settings(auto_start=False, voices_enabled=False)
    voices = Voices(store, lambda: settings, Path("/nonexistent-models"),
                    encoder=ToneEncoder(PITCHES))
    assert await two_loopback_speakers(store, settings, voices) == ["them", "them"]
    assert voices.heard() == [] and voices.status() == "off (voices_enabled is false)"
    store.close()


async def test_a_call_beginning_loads_the_voice_encoder_before_anyone_on_the_loopback_speaks(
    autojump_clock: trio.testing.MockClock, store: Store, models: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    loads: list[Path] = []
    scripted = service.ENCODERS["campplus-zh-en"]

    def load(path: Path) -> WindowEmbedder:
        loads.append(path)
        return scripted.load(path)

    monkeypatch.setitem(service.ENCODERS, "campplus-zh-en",
                        service.VoiceModel(load, scripted.model_id, scripted.config))
    settings = Settings(auto_start=False)
    voices = Voices(store, lambda: settings, models)
    async with running(store, settings=settings, voices=voices, preload=True) as rig:
        mic, _ = dialogue(("mic", 220))
        await rig.play(mic)  # before a call nothing is loaded
        assert loads == []
        started = await rig.live.start(StartOptions())
        await rig.play(mic)  # only "me" speaks in the call
        assert [path.name for path in loads] == [lookup("campplus-zh-en").filename]
        mic, loop = dialogue(("loopback", 330), ("loopback", 550))
        await rig.play(mic, loop)
        await rig.live.stop()
    assert len(loads) == 1  # loaded once, used by the loopback's turns
    assert {t.speaker for t in store.turns(started.session_id)} >= {"Them 1", "Them 2"}
    store.close()
