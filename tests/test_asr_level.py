"""Leveling, the silence judgement, the encoder context and the thread count: pure helpers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from daemon.asr.engine import (
    FULL_CONTEXT,
    Segment,
    WhisperTranscriber,
    Word,
    audio_context,
    is_silent,
    looks_looped,
    within,
)
from daemon.asr.level import (
    MAX_GAIN_DB,
    TARGET_DB,
    is_quiet,
    level,
    level_warning,
    speech_level_db,
)
from daemon.asr.threads import ThreadChooser, read_busy_ticks, read_own_ticks, threads_for
from daemon.audio.format import SAMPLE_RATE


def speech(seconds: float, amplitude: float, floor: float = 0.0, seed: int = 0) -> np.ndarray:
    """Syllable-like bursts (4 Hz, with pauses) over an optional noise floor."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * SAMPLE_RATE)) / SAMPLE_RATE
    envelope = np.clip(np.sin(2 * np.pi * 2 * t), 0, None)
    voice = amplitude * envelope * np.sin(2 * np.pi * 220 * t)
    return (voice + rng.normal(0, floor, len(t)) if floor else voice).astype(np.float32)


def noise(seconds: float, rms: float) -> np.ndarray:
    return np.random.default_rng(1).normal(0, rms, int(seconds * SAMPLE_RATE)).astype(np.float32)


def db(amplitude: float) -> float:
    return 20 * float(np.log10(amplitude))


@pytest.mark.parametrize("amplitude", [0.3, 0.003, 0.0003])  # -10, -50, -70 dBFS peaks
def test_speech_at_any_level_is_not_silence(amplitude: float) -> None:
    audio = speech(3, amplitude, floor=amplitude / 300)
    assert not is_silent(audio)


@pytest.mark.parametrize(
    "audio",
    [np.zeros(5 * SAMPLE_RATE, np.float32), noise(5, 0.003), noise(5, 0.0003),
     speech(3, 5e-5)],  # zeros, steady low noise, speech under the dither
    ids=["digital silence", "low noise", "very low noise", "below dither"],
)
def test_silence_and_steady_low_noise_are_silent(audio: np.ndarray) -> None:
    assert is_silent(audio)


def test_leveling_brings_quiet_speech_to_the_target_and_leaves_loud_speech_alone() -> None:
    quiet = speech(3, 0.002)
    leveled = level(quiet)
    assert speech_level_db(leveled) == pytest.approx(TARGET_DB, abs=0.5)
    loud = speech(3, 0.5)
    assert level(loud) is loud
    assert speech_level_db(level(speech(3, 1e-5))) - speech_level_db(speech(3, 1e-5)) == \
        pytest.approx(MAX_GAIN_DB, abs=0.1)


def test_leveling_never_clips() -> None:
    # a quiet voice with one loud click: the click's peak bounds the gain
    audio = speech(3, 0.002)
    audio[100] = 0.5
    assert float(np.max(np.abs(level(audio)))) <= 0.9 + 1e-6


def test_the_user_is_told_about_quiet_and_silent_audio_only() -> None:
    assert level_warning(speech(3, 0.3), "x.wav") is None
    quiet = speech(3, 0.001)
    assert is_quiet(quiet)
    warning = level_warning(quiet, "x.wav")
    assert warning is not None and "x.wav is very quiet" in warning and "amplified" in warning
    silent = level_warning(np.zeros(SAMPLE_RATE, np.float32), "x.wav")
    assert silent == "x.wav is silent: no speech to transcribe"
    assert not is_quiet(np.zeros(SAMPLE_RATE, np.float32))


def test_the_encoder_context_covers_the_audio_with_a_margin() -> None:
    assert audio_context(0) == 500  # never under 10 s: shorter, whisper drops first words
    assert audio_context(SAMPLE_RATE * 4) == 500
    assert audio_context(SAMPLE_RATE * 8) == 400 + 128
    assert audio_context(SAMPLE_RATE * 10 + 1) == 501 + 128
    assert audio_context(SAMPLE_RATE * 28) == 0  # no smaller than the full window
    assert audio_context(SAMPLE_RATE * 60) == 0
    assert audio_context(SAMPLE_RATE * 27) < FULL_CONTEXT


def test_a_looping_decoder_is_recognised() -> None:
    fine = [Segment(0.0, 5.5, "The hospital has followed protocol"),
            Segment(5.5, 11.2, "for infection control of others.")]
    assert not looks_looped(fine, 11.4)
    repeated = [Segment(0.0, 7.0, "The Northern Marianas emergency management office said"),
                Segment(7.0, 10.0, "Northern Marianas emergency management office said so")]
    assert looks_looped(repeated, 10.8)
    runs_on = [*fine, Segment(11.2, 21.1, "You, it's you, it's you")]
    assert looks_looped(runs_on, 11.4)
    after_the_end = [*fine, Segment(11.4, 12.0, "Thank you.")]
    assert looks_looped(after_the_end, 11.4)
    # a fitted context's coarse timestamps end past the audio with the words right
    coarse = [Segment(0.0, 15.0, "The lease for the old office ends on the thirtieth of June")]
    assert not looks_looped(coarse, 11.9)
    assert within(coarse, 11.9) == [Segment(0.0, 11.9, coarse[0].text)]
    assert within(fine, 11.4) == fine
    # a short utterance's one segment ends where the context does, its words inside the audio
    short = Segment(0.0, 7.0, "Sounds good.", (Word(0.19, 0.5, "Sounds"),
                                               Word(1.13, 1.78, "good.")))
    assert not looks_looped([short], 1.79)
    said = "We have been told and agreed on it."
    invented = Segment(13.9, 21.0, said, tuple(Word(13.9 + i * 0.03, 13.93 + i * 0.03, w)
                                               for i, w in enumerate(said.split(" "))))
    assert looks_looped([*fine, invented], 14.1)  # seven words in the audio's last 0.2 s
    assert looks_looped([*fine, Segment(11.2, 21.1, "You, it's you, it's you",
                                        (Word(11.2, 11.4, "You,"),) * 5)], 11.4)


def test_threads_are_the_cores_left_free() -> None:
    assert threads_for(2, busy_elsewhere=0.0) == 2
    assert threads_for(2, busy_elsewhere=0.2) == 2  # capture and the event loop
    assert threads_for(2, busy_elsewhere=0.45) == 2  # the audio server, the call's app
    assert threads_for(2, busy_elsewhere=0.6) == 1
    assert threads_for(2, busy_elsewhere=1.0) == 1
    assert threads_for(2, busy_elsewhere=2.0) == 1  # never none
    assert threads_for(8, busy_elsewhere=2.5) == 6  # two cores and a half: two taken
    assert threads_for(8, busy_elsewhere=2.6) == 5
    assert threads_for(8, busy_elsewhere=0.0, cap=4) == 4


def test_the_chooser_measures_the_gap_between_calls() -> None:
    now = [0.0]
    ticks = [(0, 0)]
    chooser = ThreadChooser(cores=2, ticks=lambda: ticks[0], clock=lambda: now[0])
    # idle since it was made: both cores
    now[0], ticks[0] = 1.0, (5, 200)
    assert chooser.choose() == 2
    chooser.finished()
    # one core busy elsewhere while whisper was idle
    now[0], ticks[0] = 2.0, (5 + 100, 400)
    assert chooser.choose() == 1
    chooser.finished()
    # a gap too short to tell: the last estimate stands
    now[0], ticks[0] = 2.1, (105, 420)
    assert chooser.choose() == 1


def test_the_choosers_own_work_is_not_a_competitor(tmp_path: Path) -> None:
    now, ticks, own = [0.0], [(0, 0)], [0]
    chooser = ThreadChooser(cores=2, ticks=lambda: ticks[0], clock=lambda: now[0],
                            own=lambda: own[0])
    # most of a core busy, all of it the process choosing (telling voices apart, storing)
    now[0], ticks[0], own[0] = 2.0, (160, 400), 150
    assert chooser.choose() == 2
    chooser.finished()
    # the same load from another program
    now[0], ticks[0] = 4.0, (320, 800)
    assert chooser.choose() == 1
    stat = tmp_path / "stat"  # proc(5): the name in parentheses may hold spaces
    stat.write_text("4242 (braincue (x) y) S 1 2 3 4 5 6 7 8 9 10 123 45 0 0 20 0 9\n")
    assert read_own_ticks(stat) == 168


def test_busy_ticks_count_niced_work_and_not_waiting(tmp_path: Path) -> None:
    stat = tmp_path / "stat"
    stat.write_text("cpu  100 900 50 1000 10 0 5 0 0 0\ncpu0 1 2 3 4\n")
    assert read_busy_ticks(stat) == (1055, 2065)
    assert read_busy_ticks(tmp_path / "missing") is None


def test_the_context_is_fitted_for_english_only(tmp_path: Path) -> None:
    model = tmp_path / "whisper-base.bin"
    model.write_bytes(b"")  # loaded on first use only
    english_only = tmp_path / "whisper-tiny.en.bin"
    english_only.write_bytes(b"")

    def fitted(path: Path, language: str, setting: bool = True) -> bool:
        transcriber = WhisperTranscriber(path, language=language, fit_context=setting)
        try:
            return transcriber.fit_context
        finally:
            transcriber.close()

    assert fitted(model, "en")
    assert not fitted(model, "de")  # other languages lost accuracy fitted
    assert not fitted(model, "auto")
    assert fitted(english_only, "de")  # an English-only model hears English whatever it is told
    assert not fitted(model, "en", setting=False)
