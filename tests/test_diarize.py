"""Diarisation logic on a scripted voice encoder: turns inside an utterance, session voices in
order of first speech, one speaker as an honest answer, named voices recognised."""

from __future__ import annotations

import itertools

import numpy as np

from daemon.asr.engine import Segment
from daemon.audio.format import SAMPLE_RATE
from daemon.voices.diarize import (
    DiarizeConfig,
    NamedVoice,
    SessionVoices,
    window_starts,
)
from daemon.voices.encoder import HOP, PARTIAL_FRAMES
from daemon.voices.service import label_segments, split_by_voice

RATE = SAMPLE_RATE
# each "voice" is a tone; the scripted encoder hears which tone fills most of a window
TONES = {"ann": 300.0, "bob": 700.0, "cy": 1100.0}
rng = np.random.default_rng(7)
VOICEPRINTS = {name: v / np.linalg.norm(v) for name, v in
               ((n, rng.normal(size=256).astype(np.float32)) for n in TONES)}


class ToneEncoder:
    """Embeds a window as the voiceprint of its loudest tone, mixed in proportion."""

    def __init__(self, tones: dict[str, float] = TONES) -> None:
        self.tones = tones

    def embed_windows(self, audio: np.ndarray, starts: list[int]) -> np.ndarray:
        out = []
        for start in starts:
            window = audio[start * HOP : (start + PARTIAL_FRAMES) * HOP]
            window = np.pad(window, (0, PARTIAL_FRAMES * HOP - len(window)))
            spectrum = np.abs(np.fft.rfft(window))
            freqs = np.fft.rfftfreq(len(window), 1 / RATE)
            mix = sum(spectrum[np.argmin(np.abs(freqs - f))] * VOICEPRINTS[n]
                      for n, f in zip(VOICEPRINTS, self.tones.values(), strict=False))
            out.append(mix / np.linalg.norm(mix))
        return np.asarray(out, np.float32)


def speech(*parts: tuple[str, float]) -> np.ndarray:
    return np.concatenate([
        0.1 * np.sin(2 * np.pi * TONES[who] * np.arange(int(s * RATE)) / RATE)
        for who, s in parts
    ]).astype(np.float32)


def test_windows_cover_the_utterance_and_a_short_one_is_one_window() -> None:
    assert window_starts(RATE, 0.4) == [0]
    starts = window_starts(10 * RATE, 0.4)
    assert starts[0] == 0 and starts[-1] == 10 * RATE // HOP - PARTIAL_FRAMES
    assert all(b - a <= 40 for a, b in itertools.pairwise(starts))


def test_a_change_of_voice_inside_one_utterance_splits_it() -> None:
    voices = SessionVoices(DiarizeConfig())
    pieces = voices.label_utterance(ToneEncoder(), speech(("ann", 4.0), ("bob", 4.0)))
    assert [p.label for p in pieces] == ["Them 1", "Them 2"]
    assert abs(pieces[0].end - 4.0) < 0.5 and pieces[1].end == 8.0


def test_one_voice_is_one_speaker_however_long() -> None:
    voices = SessionVoices(DiarizeConfig())
    for _ in range(3):
        pieces = voices.label_utterance(ToneEncoder(), speech(("cy", 6.0)))
        assert [p.label for p in pieces] == ["Them 1"]
    assert len(voices.voices) == 1


def test_voices_are_numbered_in_order_of_first_speech_across_utterances() -> None:
    voices = SessionVoices(DiarizeConfig())
    heard = [voices.label_utterance(ToneEncoder(), speech((who, 3.0)))[0].label
             for who in ("bob", "ann", "bob", "cy", "ann")]
    assert heard == ["Them 1", "Them 2", "Them 1", "Them 3", "Them 2"]


def test_a_named_voice_is_recognised_and_keeps_its_session_label() -> None:
    sarah = NamedVoice(4, "Sarah", VOICEPRINTS["bob"])
    voices = SessionVoices(DiarizeConfig(), [sarah])
    first = voices.label_utterance(ToneEncoder(), speech(("ann", 3.0)))[0]
    second = voices.label_utterance(ToneEncoder(), speech(("bob", 3.0)))[0]
    assert (first.label, first.voice_id) == ("Them 1", None)
    assert (second.label, second.voice, second.voice_id) == ("Sarah", "Them 2", 4)
    voices.use_named([])  # forgotten
    assert voices.voices[1].label == "Them 2"


def test_segments_go_to_the_voice_that_spoke_most_of_them() -> None:
    voices = SessionVoices(DiarizeConfig())
    pieces = voices.label_utterance(ToneEncoder(), speech(("ann", 4.0), ("bob", 4.0)))
    segments = [Segment(0.0, 2.0, "Shall we"), Segment(2.0, 3.8, " ship it?"),
                Segment(4.1, 7.9, "Yes, on Friday.")]
    said = split_by_voice(pieces, segments)
    assert [(s.speaker, s.text) for s in said] == [
        ("Them 1", "Shall we ship it?"), ("Them 2", "Yes, on Friday.")]
    assert said[1].start == 4.1 and said[1].voice == "Them 2"


def test_a_burst_too_short_to_tell_joins_the_nearest_voice_instead_of_starting_one() -> None:
    voices = SessionVoices(DiarizeConfig())
    voices.label_utterance(ToneEncoder(), speech(("ann", 4.0)))
    burst = voices.label_utterance(ToneEncoder(), speech(("bob", 0.8)))
    assert [p.label for p in burst] == ["Them 1"] and len(voices.voices) == 1
    longer = voices.label_utterance(ToneEncoder(), speech(("bob", 2.0)))
    assert [p.label for p in longer] == ["Them 2"]


def test_a_segment_whisper_timed_past_the_utterance_ends_with_it() -> None:
    voices = SessionVoices(DiarizeConfig())
    said = label_segments(voices, ToneEncoder(), speech(("ann", 2.0)),
                          [Segment(0.0, 2.6, "Years.")])
    assert [(s.start, s.end) for s in said] == [(0.0, 2.0)]
