"""The utterance segmenter and the phantom-text filter, on synthetic signals."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from daemon.audio import vad
from daemon.audio.format import SAMPLE_RATE
from daemon.audio.silero import CHUNK, SileroModel
from daemon.audio.vad import Segmenter, VadConfig, is_degenerate, is_phantom


def tone(seconds: float, amplitude: float = 0.1, freq: float = 220.0) -> np.ndarray:
    t = np.arange(int(seconds * SAMPLE_RATE)) / SAMPLE_RATE
    # amplitude-modulated like syllables, never fully silent inside
    envelope = 0.6 + 0.4 * np.sin(2 * np.pi * 4 * t)
    return (amplitude * envelope * np.sin(2 * np.pi * freq * t)).astype(np.float32)


def silence(seconds: float) -> np.ndarray:
    return np.zeros(int(seconds * SAMPLE_RATE), dtype=np.float32)


def noise(seconds: float, rms: float, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.normal(0, rms, int(seconds * SAMPLE_RATE)).astype(np.float32)


def segment(signal: np.ndarray, config: VadConfig | None = None, block: int = 1600) -> list[Any]:
    seg = Segmenter(config)
    out = []
    for i in range(0, len(signal), block):
        out += seg.feed(signal[i : i + block])
    return out + seg.flush()


def test_two_utterances_separated_by_silence() -> None:
    signal = np.concatenate([silence(1), tone(2), silence(1.5), tone(1), silence(1)])
    utterances = segment(signal)
    assert len(utterances) == 2
    first, second = utterances
    assert first.start == pytest.approx(1.0, abs=0.25)
    assert first.end == pytest.approx(3.0, abs=0.25)
    assert second.start == pytest.approx(4.5, abs=0.25)
    assert second.end == pytest.approx(5.5, abs=0.25)
    assert len(first.audio) == pytest.approx((first.end - first.start) * SAMPLE_RATE, abs=1)


def test_short_pause_does_not_split_but_long_pause_does() -> None:
    short = np.concatenate([tone(1), silence(0.3), tone(1), silence(1)])
    assert len(segment(short)) == 1
    long = np.concatenate([tone(1), silence(0.9), tone(1), silence(1)])
    assert len(segment(long)) == 2


@pytest.mark.parametrize(
    "signal",
    [silence(60), noise(60, rms=0.003), noise(60, rms=0.02, seed=1)],
    ids=["digital silence", "low noise", "steady noise"],
)
def test_silence_and_steady_noise_give_no_utterance(signal: np.ndarray) -> None:
    assert segment(signal) == []


@pytest.mark.parametrize("floor", [0.0, 5e-5], ids=["over digital silence", "over a -86 dBFS floor"])
def test_quiet_speech_is_found(floor: float) -> None:
    # a soft voice on a quiet line: -56 dBFS peaks, like the quiet FLEURS recordings
    quiet = np.concatenate([silence(2), tone(2, amplitude=0.0016), silence(2)])
    utterances = segment(quiet + noise(6, rms=floor) if floor else quiet)
    assert len(utterances) == 1
    assert utterances[0].start == pytest.approx(2.0, abs=0.3)


def test_the_onset_of_quiet_steady_noise_is_not_an_utterance() -> None:
    # the floor still remembers the silence for a few seconds; the noise is flat, not speech
    signal = np.concatenate([silence(5), noise(20, rms=0.003)])
    assert segment(signal) == []


def test_speech_over_steady_noise_is_found() -> None:
    background = noise(8, rms=0.01)
    speech = np.concatenate([silence(4), tone(2, amplitude=0.15), silence(2)])
    utterances = segment(background + speech)
    assert len(utterances) == 1
    assert utterances[0].start == pytest.approx(4.0, abs=0.3)


def test_long_speech_is_cut_at_the_maximum_at_a_quiet_point() -> None:
    parts = []
    for _ in range(12):  # 12 x 2.1 s of speech with 0.25 s dips: no pause long enough to end
        parts += [tone(2.1), tone(0.25, amplitude=0.004)]
    signal = np.concatenate([*parts, silence(1)])
    utterances = segment(signal)
    assert len(utterances) >= 2
    assert all(u.end - u.start <= VadConfig().max_utterance_s + 1e-6 for u in utterances)
    # nothing lost: the pieces are contiguous
    for a, b in itertools.pairwise(utterances):
        assert b.start == pytest.approx(a.end, abs=0.05)
    # the cut lands in a quiet dip, not in the middle of a word
    cut = utterances[0].end
    period = 2.35
    assert (cut % period) == pytest.approx(2.2, abs=0.2)


def test_a_click_is_not_an_utterance() -> None:
    signal = np.concatenate([silence(1), tone(0.08, amplitude=0.5), silence(1)])
    assert segment(signal) == []


def test_block_size_does_not_change_the_result() -> None:
    signal = np.concatenate([silence(1), tone(2), silence(1.5), tone(1), silence(1)])
    a = [(u.start, u.end) for u in segment(signal, block=1600)]
    b = [(u.start, u.end) for u in segment(signal, block=517)]
    assert a == b


# -- with a speech model ------------------------------------------------------------------------


class ScriptedSpeech:
    """A stand-in for the Silero stream: ``probability(chunk)`` for each chunk of the audio it
    is fed, as the network judges the audio it sees."""

    def __init__(self, probability: Callable[[np.ndarray], float]) -> None:
        self.probability = probability
        self.pending = np.zeros(0, dtype=np.float32)
        self.judged = 0  # chunks judged

    def _judge(self, audio: np.ndarray) -> np.ndarray:
        self.judged += len(audio) // CHUNK
        return np.asarray([self.probability(audio[i : i + CHUNK])
                           for i in range(0, len(audio) - CHUNK + 1, CHUNK)], dtype=np.float32)

    def skip(self, samples: np.ndarray) -> np.ndarray:
        audio = np.concatenate([self.pending, samples])
        skipped = len(audio) // CHUNK * CHUNK
        self.pending = audio[skipped:]
        return audio[:skipped]

    def reread(self, chunks: np.ndarray) -> np.ndarray:
        return self._judge(chunks)

    def feed(self, samples: np.ndarray) -> np.ndarray:
        audio = np.concatenate([self.pending, samples])
        judged = len(audio) // CHUNK * CHUNK
        self.pending = audio[judged:]
        return self._judge(audio[:judged])

    def tail(self) -> np.ndarray:
        if not len(self.pending):
            return np.zeros(0, dtype=np.float32)
        return self._judge(np.concatenate([self.pending, silence(1)])[:CHUNK])


def hears_the_loud_tone(otherwise: float) -> Callable[[np.ndarray], float]:
    """The model hears a voice in tone(amplitude=0.3) only, ``otherwise`` elsewhere."""
    return lambda chunk: 0.9 if float(np.sqrt(np.mean(chunk**2))) > 0.09 else otherwise


@pytest.fixture
def speech_model(monkeypatch: pytest.MonkeyPatch) -> Callable[..., VadConfig]:
    """A VadConfig whose speech model is ``ScriptedSpeech(probability)``."""

    def config(probability: Callable[[np.ndarray], float], **options: Any) -> VadConfig:
        monkeypatch.setattr(vad, "SileroStream", lambda model: ScriptedSpeech(probability))
        return VadConfig(speech_model=SileroModel({}), **options)

    return config


def test_a_soft_onset_the_model_is_slow_to_trust_stays_in_the_utterance(
    speech_model: Callable[..., VadConfig],
) -> None:
    # one sound from 1 s to 4 s; the model is sure of it only from 2.5 s: the whole of it is
    # what was said (cut at 2.5 s, whisper heard half a sentence and wrote nothing)
    config = speech_model(hears_the_loud_tone(otherwise=0.2))
    signal = np.concatenate([silence(1), tone(1.5), tone(1.5, amplitude=0.3), silence(1.5)])
    [utterance] = segment(signal, config)
    assert utterance.start == pytest.approx(1.0 - config.pre_roll_s, abs=0.05)
    assert utterance.end == pytest.approx(4.0 + config.post_roll_s, abs=0.05)


def test_a_sound_apart_from_what_the_model_hears_is_trimmed_off(
    speech_model: Callable[..., VadConfig],
) -> None:
    # a rustle, a pause too short to end the utterance but longer than join_pause_s, speech
    config = speech_model(hears_the_loud_tone(otherwise=0.05))
    assert config.join_pause_s < 0.4 < config.end_silence_s
    signal = np.concatenate([silence(1), tone(0.8), silence(0.4), tone(2, amplitude=0.3),
                             silence(1.5)])
    [utterance] = segment(signal, config)
    assert utterance.start == pytest.approx(2.2 - config.pre_roll_s, abs=0.05)
    # ... and nothing at all when the model hears no voice in the utterance
    assert segment(signal, speech_model(lambda chunk: 0.05)) == []


@pytest.mark.parametrize("model_cuts", [False, True])
def test_a_flush_leaves_the_model_in_step_with_the_audio_that_follows(
    speech_model: Callable[..., VadConfig], model_cuts: bool,
) -> None:
    # a stop or a pause flushes every source's segmenter, which goes on with the audio after
    # it: padding the model's stream with silence there put every later chunk 32 ms early,
    # and by that much more at each flush
    config = speech_model(hears_the_loud_tone(otherwise=0.0), model_cuts=model_cuts)
    # a sound the model does not hear as speech, then (after a pause) what it does
    signal = np.concatenate([silence(1), tone(1.6), silence(0.4), tone(1, amplitude=0.3),
                             silence(1.5)])
    whole = segment(signal, config)
    assert [u.start for u in whole] == pytest.approx([3.0 - config.pre_roll_s], abs=0.02)
    flushed = Segmenter(config)
    found = []
    for part in (signal[:11_000], signal[11_000:44_000], signal[44_000:]):  # in silences
        for i in range(0, len(part), 1600):
            found += flushed.feed(part[i : i + 1600])
        found += flushed.flush()
    assert [(u.start, u.end) for u in found] == [(u.start, u.end) for u in whole]


def test_the_model_sleeps_through_silence_and_wakes_for_the_first_word(
    speech_model: Callable[..., VadConfig], monkeypatch: pytest.MonkeyPatch,
) -> None:
    streams: list[ScriptedSpeech] = []

    def stream(model: SileroModel) -> ScriptedSpeech:
        streams.append(ScriptedSpeech(hears_the_loud_tone(otherwise=0.0)))
        return streams[-1]

    config = speech_model(hears_the_loud_tone(otherwise=0.0))
    monkeypatch.setattr(vad, "SileroStream", stream)
    quiet = np.concatenate([noise(60, rms=0.001), silence(30)])  # a quiet room, a silent device
    seg = Segmenter(config)
    for i in range(0, len(quiet), 1600):
        assert seg.feed(quiet[i : i + 1600]) == []
    (model,) = streams
    # of a minute and a half of quiet, only the seconds until loudness knew the room's noise
    # floor were read
    assert model.judged == seg.model_chunks
    assert model.judged * CHUNK / SAMPLE_RATE <= config.floor_window_s + 2 * config.model_wake_s
    model.judged = 0
    # the first word after it: cut with its pre-roll, as by a model that read everything
    said = np.concatenate([tone(1.5, amplitude=0.3), silence(1.5)])
    found = []
    for i in range(0, len(said), 1600):
        found += seg.feed(said[i : i + 1600])
    awake = segment(np.concatenate([quiet, said]), speech_model(
        hears_the_loud_tone(otherwise=0.0), model_sleeps=False))
    assert [(u.start, u.end) for u in found] == [(u.start, u.end) for u in awake]
    assert found[0].start == pytest.approx(90.0 - config.pre_roll_s, abs=0.05)
    # it read the utterance and the half second before it, not the minute of quiet
    assert 0 < model.judged <= (3.0 + config.model_wake_s) * SAMPLE_RATE / CHUNK + 2


@pytest.mark.parametrize(
    "text",
    ["", "  ", "you", "You.", "Thank you.", "Thanks for watching!", "[BLANK_AUDIO]", "(music)",
     "the the the the the the the the", "I'm sorry. I'm sorry. I'm sorry. I'm sorry. I'm sorry."],
)
def test_phantoms_are_recognised(text: str) -> None:
    assert is_phantom(text)


@pytest.mark.parametrize(
    "text",
    ["Alice will send the report by Friday.", "Thank you, that settles the pricing question.",
     "Yes", "We agreed on the second option, not the first one, because it is cheaper."],
)
def test_real_speech_is_kept(text: str) -> None:
    assert not is_phantom(text)


def test_degenerate_needs_enough_words() -> None:
    assert not is_degenerate("no no no")
    assert is_degenerate("no no no no no no no")
